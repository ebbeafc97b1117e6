"""Standard errors of the multiclass evaluation vs repeated releases (issues 17 and 27).

Fixed data (20,000 examples, 4 classes with priors 0.4/0.3/0.2/0.1, an
overconfident softmax model so the ECE bins are not all near zero), one example
per client; R = 60 independent releases (seeds 1000..1059) under
DistributedDP(ε = 1) and LocalDP(ε = 4, OUE), every metric requested.

Two kinds of SE are checked against their closed forms:

* **Noise SEs** (accuracy, balanced accuracy, macro and weighted F1, top-2
  accuracy: ratios of the consistent tables, whose projections are inactive at
  this size): the stated SE (mean over the releases) over the sample standard
  deviation of the metric lies in 1 ± 4/√(2(R − 1)) = [0.63, 1.37] — the
  sample SD of R near-normal draws has relative SD 1/√(2(R − 1)).
* **SEs that carry a bias** (macro and weighted one-vs-rest AUC, top-label and
  classwise ECE, whose post-processing is biased: bootstrap bias correction
  and ties, debiased |gaps|): against the exact values of the 20,000
  examples (scikit-learn, and the ECE with the same 8 equal-width bins from
  the raw probabilities), z = (value − exact)/SE has mean square at most
  1 + 4√(2/R) = 1.73 (an SE too small to carry the bias fails; for a
  calibrated SE, mean z² ~ χ²_R/R with SD √(2/R)) and at least 0.25 (an SE at
  most twice the RMSE). The losses' SEs must be at least the spread (their
  fixed-point bias is a stated bound, not part of the SE).

Each release costs about a second (the delta method over ~450 coordinates and
the bootstrap of the AUCs), so the tests are marked slow.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest
from sklearn import metrics as skm

import fedeval as fe

pytestmark = [pytest.mark.statistical, pytest.mark.slow]

R = 60
ECE_BINS = 8
NOISE = ("accuracy", "balanced_accuracy", "macro_f1", "weighted_f1", "top_2")
BIASED = ("roc_auc", "roc_auc_weighted", "ece_top_label", "ece_classwise")
LOSSES = ("log_loss", "brier")


def _federation() -> fe.Federation:
    rng = np.random.default_rng(0)
    n, c = 20_000, 4
    y = rng.choice(c, n, p=np.array([0.4, 0.3, 0.2, 0.1]))
    logits = rng.normal(0.0, 1.0, (n, c))
    logits[np.arange(n), y] += 1.0 + 0.5 * y
    z = 1.6 * logits
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    return fe.Federation.from_arrays(p, y, kind="probabilities")


def _ece(events: np.ndarray, prob: np.ndarray) -> float:
    m = np.minimum((prob * ECE_BINS).astype(np.int64), ECE_BINS - 1)
    return float(np.abs(np.bincount(m, events - prob, ECE_BINS)).sum() / prob.size)


def _exact(fed: fe.Federation) -> dict[str, float]:
    p, y = fed.scores, fed.labels
    pred = p.argmax(axis=1)
    return {
        "roc_auc": float(skm.roc_auc_score(y, p, multi_class="ovr")),
        "roc_auc_weighted": float(skm.roc_auc_score(y, p, multi_class="ovr", average="weighted")),
        "ece_top_label": _ece((pred == y).astype(np.float64), p.max(axis=1)),
        "ece_classwise": float(
            np.mean([_ece((y == j).astype(np.float64), p[:, j]) for j in range(p.shape[1])])
        ),
    }


@pytest.mark.parametrize("model", [fe.DistributedDP(1.0), fe.LocalDP(4.0)], ids=["distdp", "ldp"])
def test_standard_errors_match_the_spread_and_carry_the_bias(model: Any) -> None:
    fed = _federation()
    exact = _exact(fed)
    keys = (*NOISE, *BIASED, *LOSSES)
    values: dict[str, list[float]] = {k: [] for k in keys}
    ses: dict[str, list[float]] = {k: [] for k in keys}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for r in range(R):
            ev = fe.evaluate_multiclass(fed, model, rng=1000 + r, ece_bins=ECE_BINS)
            for k in keys:
                if k == "top_2":
                    values[k].append(ev.top_k_accuracy(2))
                    ses[k].append(ev.top_k_accuracy_se(2))
                else:
                    values[k].append(float(ev.values[k]))
                    ses[k].append(float(ev.standard_errors[k]))
    v = {k: np.array(x) for k, x in values.items()}
    s = {k: np.array(x) for k, x in ses.items()}
    tol = 4.0 / math.sqrt(2.0 * (R - 1))
    ratio = {k: float(s[k].mean() / v[k].std(ddof=1)) for k in (*NOISE, *LOSSES)}
    z2 = {k: float(np.mean(((v[k] - exact[k]) / s[k]) ** 2)) for k in BIASED}
    print(type(model).__name__, {k: round(x, 3) for k, x in {**ratio, **z2}.items()})
    bad = {k: round(ratio[k], 3) for k in NOISE if not 1 - tol <= ratio[k] <= 1 + tol}
    bad |= {k: round(ratio[k], 3) for k in LOSSES if not ratio[k] >= 1 - tol}
    bad |= {k: round(z2[k], 3) for k in BIASED if not 0.25 <= z2[k] <= 1 + 4 * math.sqrt(2 / R)}
    assert not bad, f"outside the closed-form tolerance: {bad}"
