"""The privacy standard errors of a paired difference and of every slice, over fixed seeds (issue 25).

One fixed data set, R independent releases (seeds 3000..). Each release's
error against the exact pooled value of the same examples, divided by its
privacy SE, is a z-score; a calibrated SE gives z-scores of SD 1.

Tolerance from the closed form: for R normal z-scores of SD σ the sample
variance s² satisfies (R − 1)s²/σ² ~ χ²(R − 1). The test fails only when s is
incompatible at the 0.1 % level (one-sided each way) with *every* σ in
[0.75, 1.15] (an SE at most a third too large or 15 % too small). The full
coverage study (fresh data per seed, ≥ 200 seeds, the total SE against the
population value) is ``benchmarks/bench_compare_coverage.py`` and
``benchmarks/bench_slices_coverage.py``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import roc_auc_score

import fedeval as fe

pytestmark = pytest.mark.statistical

R = 120
FIRST_SEED = 3000
SIGMA_BAND = (0.75, 1.15)


def _sd_is_compatible(z: np.ndarray) -> tuple[bool, float]:
    z = z[np.isfinite(z)]
    r = z.size
    s2 = float(np.var(z, ddof=1))
    lo = SIGMA_BAND[0] ** 2 * stats.chi2.ppf(0.001, r - 1) / (r - 1)
    hi = SIGMA_BAND[1] ** 2 * stats.chi2.ppf(0.999, r - 1) / (r - 1)
    return lo <= s2 <= hi, float(np.sqrt(s2))


def test_paired_difference_privacy_se_is_calibrated() -> None:
    rng = np.random.default_rng(30)
    n = 20_000
    y = (rng.random(n) < 0.4).astype(np.int64)
    z = rng.normal(1.2 * y, 1.0)
    a = 1 / (1 + np.exp(-z))
    b = 1 / (1 + np.exp(-(z + rng.normal(0, 0.45, n))))
    exact = roc_auc_score(y, a) - roc_auc_score(y, b)
    fa, fb = fe.Federation.from_arrays(a, y), fe.Federation.from_arrays(b, y)
    zs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fe.SmallDataWarning)
        for seed in range(FIRST_SEED, FIRST_SEED + R):
            cmp = fe.compare(fa, fb, fe.DistributedDP(epsilon=1.0), rng=seed)
            zs.append((cmp.roc_auc_diff - exact) / cmp.roc_auc_diff_privacy_se)
    ok, sd = _sd_is_compatible(np.array(zs))
    assert ok, f"z SD {sd:.3f} outside what σ in {SIGMA_BAND} allows"


def test_every_slices_privacy_se_is_calibrated() -> None:
    rng = np.random.default_rng(31)
    n = 30_000
    region = rng.choice(["a", "b", "c", "d"], n, p=[0.4, 0.3, 0.2, 0.1])
    y = (rng.random(n) < 0.4).astype(np.int64)
    z = rng.normal(np.where(region == "d", 0.7, 1.3) * y, 1.0)
    s = 1 / (1 + np.exp(-z))
    fed = fe.Federation.from_arrays(s, y)
    exact = {v: roc_auc_score(y[region == v], s[region == v]) for v in "abcd"}
    zs: dict[str, list[float]] = {v: [] for v in "abcd"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fe.SmallDataWarning)
        for seed in range(FIRST_SEED, FIRST_SEED + R):
            sev = fe.evaluate(
                fed, fe.DistributedDP(epsilon=1.0), slices=region, slice_values=list("abcd"),
                rng=seed,
            )  # fmt: skip
            assert sev.epsilon_spent == pytest.approx(1.0)
            for v in "abcd":
                zs[v].append((sev[v].roc_auc - exact[v]) / sev[v].roc_auc_se)
    for v in "abcd":
        ok, sd = _sd_is_compatible(np.array(zs[v]))
        assert ok, f"slice {v}: z SD {sd:.3f} outside what σ in {SIGMA_BAND} allows"
