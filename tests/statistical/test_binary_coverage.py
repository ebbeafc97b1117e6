"""Coverage of the nominal 95 % delta-method intervals of the AUC and AP (issue 13).

breast_cancer (scikit-learn's 569 rows, 5-fold cross-validated logistic-regression
scores, 57 clients of ~10 rows, the setting of ``benchmarks/bench_binary_coverage.py``),
R independent releases (fixed seeds). The target of each interval
(estimate ± 1.96 SE) is the exact pooled AUC / AP of the same examples.

Tolerance: if the true coverage were c, the number of covering runs is
Binomial(R, c). The issue's band is 90-98 %; we fail only when the observed
count is incompatible with *every* c in the band at the 0.1 % level (one-sided
binomial tail each way), i.e. count < the 0.001 quantile of Binomial(R, 0.90)
or > the 0.999 quantile of Binomial(R, 0.98). With R = 1,000 that is coverage
outside [0.870, 0.991] (with R = 200 the upper limit would be 1.0 and the test
could not catch over-stated SEs). The seeds (1000..1999) are not those of the
benchmark (0..99).

Under local DP this failed (coverage 1000/1000, z SD 0.5-0.6) while the split of
clients over levels was modelled as independent per-node sampling and the floor
ignored the shrinkage (the bias allowance is √(SE² + D²) again since the
non-negative split; its docstring says why); see
:meth:`~fedeval.sketches.hierarchical_histogram.HierarchicalHistogram.joint_query_variance`
and :func:`fedeval.metrics.dense._with_bias_allowance`.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats

import fedeval as fe

pytestmark = [pytest.mark.statistical, pytest.mark.slow]

R = 1000
FIRST_SEED = 1000


def _breast_cancer() -> tuple[fe.Federation, float, float]:
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import average_precision_score, roc_auc_score
    from sklearn.model_selection import cross_val_predict
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x, y = load_breast_cancer(return_X_y=True)
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    s = cross_val_predict(model, x, y, cv=5, method="predict_proba")[:, 1]
    fed = fe.Federation.from_arrays(s, y, clients=np.arange(y.size) % 57)
    return fed, float(roc_auc_score(y, s)), float(average_precision_score(y, s))


def _band() -> tuple[int, int]:
    lo = int(stats.binom.ppf(0.001, R, 0.90))
    hi = int(stats.binom.ppf(0.999, R, 0.98))
    return lo, hi


@pytest.mark.parametrize(
    "privacy",
    [
        fe.DistributedDP(epsilon=1.0),
        fe.LocalDP(epsilon=5.0),
    ],
    ids=["distdp-eps1", "ldp-eps5"],
)
def test_breast_cancer_95pct_intervals_cover_the_exact_auc_and_ap(privacy: object) -> None:
    fed, auc, ap = _breast_cancer()
    cover_auc = cover_ap = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(FIRST_SEED, FIRST_SEED + R):
            ev = fe.evaluate(fed, privacy, rng=seed)
            sa, sp = ev.roc_auc_se, ev.average_precision_se
            assert sa > 0 and sp > 0, f"seed {seed}: SE 0 under DP"
            cover_auc += int(abs(ev.roc_auc - auc) <= 1.96 * sa)
            cover_ap += int(abs(ev.average_precision - ap) <= 1.96 * sp)
    lo, hi = _band()
    assert lo <= cover_auc <= hi, f"AUC coverage {cover_auc}/{R} outside [{lo}, {hi}]"
    assert lo <= cover_ap <= hi, f"AP coverage {cover_ap}/{R} outside [{lo}, {hi}]"
