"""Consistency post-processing never increases range-query variance, and the
variances that ``range_counts`` reports match the empirical ones.

Setup: DistDP (Pólya, ε = 1, ε/h per level) hierarchies with h = 5 and b = 2 or
4, released R = 400 times (fast path) on one fixed federation; a fixed set of
random ranges (leaf-edge and fractional endpoints) is queried on the raw and on
the consistent tree.

Tolerance: for R draws with variance σ² and excess kurtosis κ, the sample
variance s² has Var(s²/σ²) ≈ 2/(R-1) + κ/R. Matching that to a scaled χ²_ν/ν
gives ν = 2 / (2/(R-1) + κ/R) degrees of freedom, so s²/σ² lies in
[χ²_ν(p/2)/ν, χ²_ν(1-p/2)/ν] with probability 1 - p. A range estimate is a
linear combination Σ w_i N_i of independent discrete-Laplace node noises; its
excess kurtosis Σ w_i⁴ κ4_i / (Σ w_i² κ2_i)² is at most that of one node,
κ4/κ2² = (1 + 4α + α²)/(2α), which is used as κ. p = 1e-4, Bonferroni-corrected
over the ranges.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from fedeval.data import Federation
from fedeval.privacy.models import DistributedDP, SecureAggregation
from helpers import release_hierarchy

pytestmark = pytest.mark.statistical

EPS = 1.0
HEIGHT = 5
R = 400
P_MIN = 1e-4


def _federation() -> Federation:
    gen = np.random.default_rng(77)
    labels = gen.integers(0, 2, 3000)
    scores = np.where(labels == 1, gen.beta(5, 2, 3000), gen.beta(2, 5, 3000))
    return Federation.from_arrays(scores, labels, np.arange(3000) % 100)


def _ranges(branching: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """30 leaf-edge ranges and 10 with fractional endpoints, all below the top edge."""
    n = branching**HEIGHT
    gen = np.random.default_rng(seed)
    a = gen.integers(0, n - 1, 30)
    b = a + 1 + gen.integers(0, n - 1 - a)
    lo_f = gen.uniform(0, 0.5, 10)
    hi_f = lo_f + gen.uniform(0.01, 0.45, 10)
    low = np.concatenate([a / n, lo_f])
    high = np.concatenate([b / n, hi_f])
    return low, high


def _minimal_node_count(a: int, b: int, branching: int) -> int:
    """Nodes in the canonical decomposition of leaves [a, b) (no root: level 1 has b nodes)."""
    count = 0
    for k in range(1, HEIGHT + 1):
        span = branching ** (HEIGHT - k)
        parent_span = span * branching
        for i in range(branching**k):
            inside = a <= i * span and (i + 1) * span <= b
            p = i // branching
            parent_inside = k > 1 and a <= p * parent_span and (p + 1) * parent_span <= b
            count += inside and not parent_inside
    return count


def _chi2_interval(kurtosis: float, n_tests: int) -> tuple[float, float]:
    nu = 2.0 / (2.0 / (R - 1) + kurtosis / R)
    p = P_MIN / n_tests
    return stats.chi2.ppf(p / 2, nu) / nu, stats.chi2.ppf(1 - p / 2, nu) / nu


def _repeat(branching: int, low: np.ndarray, high: np.ndarray) -> dict[str, np.ndarray]:
    fed = _federation()
    gen = np.random.default_rng(1000 + branching)
    raw_est = np.empty((R, low.size))
    cons_est = np.empty((R, low.size))
    for r in range(R):
        hist = release_hierarchy(
            fed, DistributedDP(EPS), height=HEIGHT, branching=branching, rng=gen
        )
        raw_est[r] = hist.range_counts(low, high, cls=1)[0]
        cons_est[r] = hist.consistent().range_counts(low, high, cls=1)[0]
    raw_var = hist.range_counts(low, high, cls=1)[1]
    cons_var = hist.consistent().range_counts(low, high, cls=1)[1]
    return {"raw_est": raw_est, "cons_est": cons_est, "raw_var": raw_var, "cons_var": cons_var}


class Run:
    """One set of R releases for one branching factor, shared by the tests."""

    def __init__(self, branching: int) -> None:
        self.branching = branching
        self.low, self.high = _ranges(branching, seed=branching)
        self.hist = release_hierarchy(
            _federation(), DistributedDP(EPS), height=HEIGHT, branching=branching, rng=0
        )
        self.res = _repeat(branching, self.low, self.high)


@pytest.fixture(scope="module", params=[2, 4], ids=["b2", "b4"])
def run(request: pytest.FixtureRequest) -> Run:
    return Run(request.param)


def test_raw_range_variance_is_the_minimal_node_set(run: Run) -> None:
    """Closed form: the raw variance of a leaf-edge range is v x (nodes in its
    canonical decomposition), v = 2α/(1-α)² with α = exp(-ε/h)."""
    low, high, hist, branching = run.low, run.high, run.hist, run.branching
    alpha = math.exp(-EPS / HEIGHT)
    v = 2 * alpha / (1 - alpha) ** 2
    n = branching**HEIGHT
    _, var = hist.range_counts(low[:30], high[:30], cls=1)
    expected = [
        v * _minimal_node_count(round(a * n), round(b * n), branching)
        for a, b in zip(low[:30], high[:30], strict=True)
    ]
    np.testing.assert_allclose(var, expected, rtol=1e-9)


def test_consistency_never_increases_range_variance(run: Run) -> None:
    low, res = run.low, run.res
    # exact (reported) variances: consistent <= raw for every range, and strictly
    # smaller on average (consistency pools the information of all levels)
    assert np.all(res["cons_var"] <= res["raw_var"] * (1 + 1e-9))
    assert res["cons_var"].mean() < 0.9 * res["raw_var"].mean()
    # empirical variance after consistency against the raw closed form
    alpha = math.exp(-EPS / HEIGHT)
    kurt = (1 + 4 * alpha + alpha**2) / (2 * alpha)
    _, upper = _chi2_interval(kurt, low.size)
    emp = res["cons_est"].var(axis=0, ddof=1)
    ratio = emp / res["raw_var"]
    assert np.all(ratio <= upper), (ratio.max(), upper)


def test_consistent_variance_matches_empirical(run: Run) -> None:
    low, high, res = run.low, run.high, run.res
    alpha = math.exp(-EPS / HEIGHT)
    kurt = (1 + 4 * alpha + alpha**2) / (2 * alpha)
    lower, upper = _chi2_interval(kurt, low.size)
    ratio = res["cons_est"].var(axis=0, ddof=1) / res["cons_var"]
    assert np.all((lower <= ratio) & (ratio <= upper)), (ratio.min(), ratio.max(), lower, upper)
    # unbiased: mean within 5 sd of the true range count
    fed = _federation()
    sa = release_hierarchy(fed, SecureAggregation(), height=HEIGHT, branching=run.branching)
    true = sa.range_counts(low, high, cls=1)[0]
    err = res["cons_est"].mean(axis=0) - true
    assert np.all(np.abs(err) <= 5 * np.sqrt(res["cons_var"] / R))


def test_raw_range_variance_matches_empirical(run: Run) -> None:
    low, res = run.low, run.res
    alpha = math.exp(-EPS / HEIGHT)
    kurt = (1 + 4 * alpha + alpha**2) / (2 * alpha)
    lower, upper = _chi2_interval(kurt, low.size)
    ratio = res["raw_est"].var(axis=0, ddof=1) / res["raw_var"]
    assert np.all((lower <= ratio) & (ratio <= upper)), (ratio.min(), ratio.max(), lower, upper)
