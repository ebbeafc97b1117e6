"""Optimal unary encoding: variance formula, unbiasedness, fast vs faithful path."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from fedeval.privacy import OptimalUnaryEncoding


def test_parameters_and_variance_formula() -> None:
    oue = OptimalUnaryEncoding(math.log(3.0), 5)
    assert oue.p == 0.5
    assert oue.q == pytest.approx(0.25)
    # 4e^ε/(e^ε-1)² = 12/4 = 3, and q(1-q)/(p-q)² = (3/16)/(1/16) = 3.
    assert oue.variance_per_report == pytest.approx(3.0)
    cv = oue.count_variance(np.array([0, 10, 0, 0, 0]), 100)
    assert cv[0] == pytest.approx(100 * oue.variance_per_report)
    assert cv[1] == pytest.approx((10 * 0.25 + 90 * 0.1875) / 0.0625)
    g = oue.guarantee()
    assert (g.epsilon, g.delta, g.unit) == (math.log(3.0), 0.0, "example")


def test_perturb_shape_and_empty_reports() -> None:
    oue = OptimalUnaryEncoding(50.0, 4)  # q ≈ 2e-22: essentially no false ones
    out = oue.perturb(np.array([0, -1, 3, -1]), rng=0)
    assert out.shape == (4, 4) and out.dtype == np.uint8
    assert set(np.unique(out)) <= {0, 1}
    assert out[1].sum() == 0 and out[3].sum() == 0
    assert out[0, 1:].sum() == 0 and out[2, :3].sum() == 0


@pytest.mark.statistical
def test_unbiased_and_empty_bin_variance() -> None:
    eps = 2.0
    oue = OptimalUnaryEncoding(eps, 6)
    true = np.array([0, 40, 0, 300, 10, 0])
    n = 1000  # 650 reports have no item
    reps = 5000
    gen = np.random.default_rng(31)
    est = np.array([oue.estimate(oue.sample_aggregate(true, n, gen), n) for _ in range(reps)])
    var = oue.count_variance(true, n)
    assert var[0] == pytest.approx(n * 4 * math.exp(eps) / (math.exp(eps) - 1) ** 2)
    assert np.all(np.abs(est.mean(axis=0) - true) <= 5 * np.sqrt(var / reps))
    # Binomial sums with n = 1000 are close to normal: Var(s²) ≈ 2σ⁴/(reps-1).
    assert np.all(np.abs(est.var(axis=0, ddof=1) - var) <= 5 * var * np.sqrt(2 / (reps - 1)))


@pytest.mark.statistical
def test_perturb_and_sample_aggregate_agree() -> None:
    oue = OptimalUnaryEncoding(1.0, 4)
    indices = np.repeat([0, 1, -1], [30, 10, 60])
    true = np.array([30, 10, 0, 0])
    n, reps = indices.size, 3000
    gen = np.random.default_rng(41)
    faithful = oue.perturb(np.tile(indices, reps), gen).reshape(reps, n, 4).sum(axis=1)
    fast = np.stack([oue.sample_aggregate(true, n, gen) for _ in range(reps)])
    for j in range(4):
        lo = int(min(faithful[:, j].min(), fast[:, j].min()))
        hi = int(max(faithful[:, j].max(), fast[:, j].max()))
        table = np.stack(
            [
                np.bincount(faithful[:, j] - lo, minlength=hi - lo + 1),
                np.bincount(fast[:, j] - lo, minlength=hi - lo + 1),
            ]
        )
        table = table[:, table.sum(axis=0) >= 10]
        assert stats.chi2_contingency(table).pvalue > 1e-4


def test_sample_aggregate_validates_counts() -> None:
    oue = OptimalUnaryEncoding(1.0, 3)
    with pytest.raises(ValueError, match="exceeds n_reports"):
        oue.sample_aggregate([5, 5, 5], 10, rng=0)
    with pytest.raises(ValueError, match="shape"):
        oue.sample_aggregate([1, 2], 10, rng=0)
    with pytest.raises(ValueError, match="indices"):
        oue.perturb([0, 3], rng=0)
