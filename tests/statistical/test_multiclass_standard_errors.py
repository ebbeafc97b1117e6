"""Standard errors of the multiclass evaluation vs the spread over repeated releases (issue 17).

Fixed data (20,000 examples, 4 classes with priors 0.4/0.3/0.2/0.1, an
overconfident softmax model so the ECE bins are not all near zero), one example
per client; R = 300 independent releases (seeds 1000..1299) under
DistributedDP(ε = 1) and LocalDP(ε = 4, OUE). For every metric, the SE the
result states (mean over the first 5 releases) divided by the sample standard
deviation of the metric over the R releases must lie in [0.8, 1.25].

Why R = 300: for (near-)normal metrics the sample SD of R draws has relative
standard deviation ≈ 1/√(2(R − 1)) = 4.1%, so the interval is more than 4.8
of those from 1 on either side; the ECEs (sums of folded normals, somewhat
heavier tails) keep a margin of about 4. Each release costs a few
milliseconds on the fast path (exact in distribution); the two tests take 3–5 s, so
they are marked slow.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import fedeval as fe

pytestmark = [pytest.mark.statistical, pytest.mark.slow]

R = 300
N_SE = 5
METRICS = (
    "accuracy",
    "balanced_accuracy",
    "macro_f1",
    "weighted_f1",
    "roc_auc",
    "roc_auc_weighted",
    "ece_top_label",
    "ece_classwise",
    "log_loss",
    "brier",
)


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


@pytest.mark.parametrize("model", [fe.DistributedDP(1.0), fe.LocalDP(4.0)], ids=["distdp", "ldp"])
def test_standard_errors_match_the_spread_of_releases(model: Any) -> None:
    fed = _federation()
    values: dict[str, list[float]] = {k: [] for k in (*METRICS, "top_2")}
    ses: dict[str, list[float]] = {k: [] for k in values}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for r in range(R):
            ev = fe.evaluate_multiclass(fed, model, rng=1000 + r, ece_bins=8)
            for k in METRICS:
                values[k].append(float(ev.values[k]))
            values["top_2"].append(ev.top_k_accuracy(2))
            if r < N_SE:
                for k in METRICS:
                    ses[k].append(float(ev.standard_errors[k]))
                ses["top_2"].append(ev.top_k_accuracy_se(2))
    ratios = {k: float(np.mean(ses[k]) / np.std(values[k], ddof=1)) for k in values}
    print(type(model).__name__, {k: round(v, 3) for k, v in ratios.items()})  # shown with -s
    bad = {k: round(v, 3) for k, v in ratios.items() if not 0.8 <= v <= 1.25}
    assert not bad, f"SE / spread outside [0.8, 1.25]: {bad} (all: {ratios})"
