"""k-ary randomized response: probabilities, unbiasedness, fast vs faithful path."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from fedeval.privacy import RandomizedResponse


def test_probabilities() -> None:
    rr = RandomizedResponse(math.log(3.0), n_categories=3)
    # e^ε = 3, k = 3: p = 3/5, q = 1/5, p/q = e^ε.
    assert rr.keep_probability == pytest.approx(0.6)
    assert rr.other_probability == pytest.approx(0.2)
    assert RandomizedResponse(800.0).keep_probability == 1.0  # no overflow
    g = rr.guarantee("label")
    assert (g.epsilon, g.delta, g.unit) == (math.log(3.0), 0.0, "label")


def test_estimate_inverts_expectation() -> None:
    rr = RandomizedResponse(1.0, 4)
    true = np.array([10, 0, 30, 60])
    p, q = rr.keep_probability, rr.other_probability
    expected_obs = true * p + (true.sum() - true) * q
    # estimate is linear, so feeding it the expectation must return the truth.
    assert rr.estimate(np.round(expected_obs * 1e6).astype(np.int64)) / 1e6 == pytest.approx(
        true, abs=1e-5
    )


@pytest.mark.statistical
def test_unbiased_with_exact_variance() -> None:
    rr = RandomizedResponse(0.8, 3)
    true = np.array([50, 150, 800])
    gen = np.random.default_rng(17)
    reps = 4000
    est = np.array([rr.estimate(rr.sample_aggregate(true, gen)) for _ in range(reps)])
    var = rr.count_variance(true)
    assert np.all(np.abs(est.mean(axis=0) - true) <= 5 * np.sqrt(var / reps))
    # Sums of many Bernoullis are close to normal: Var(s²) ≈ 2σ⁴/(reps-1).
    assert np.all(np.abs(est.var(axis=0, ddof=1) - var) <= 5 * var * np.sqrt(2 / (reps - 1)))


@pytest.mark.statistical
def test_perturb_and_sample_aggregate_agree() -> None:
    rr = RandomizedResponse(1.0, 3)
    values = np.repeat([0, 1, 2], [20, 30, 50])
    true = np.bincount(values, minlength=3)
    reps = 3000
    gen = np.random.default_rng(23)
    faithful = np.stack([np.bincount(rr.perturb(values, gen), minlength=3) for _ in range(reps)])
    fast = np.stack([rr.sample_aggregate(true, gen) for _ in range(reps)])
    assert np.all(faithful.sum(axis=1) == 100) and np.all(fast.sum(axis=1) == 100)
    for j in range(3):
        lo = min(faithful[:, j].min(), fast[:, j].min())
        hi = max(faithful[:, j].max(), fast[:, j].max())
        table = np.stack(
            [
                np.bincount(faithful[:, j] - lo, minlength=hi - lo + 1),
                np.bincount(fast[:, j] - lo, minlength=hi - lo + 1),
            ]
        )
        table = table[:, table.sum(axis=0) >= 10]  # sparse outer cells break chi-square
        assert stats.chi2_contingency(table).pvalue > 1e-4


@pytest.mark.statistical
def test_perturb_keep_rate() -> None:
    rr = RandomizedResponse(2.0, 5)
    values = np.arange(200_000) % 5
    out = rr.perturb(values, rng=4)
    p = rr.keep_probability
    n = values.size
    assert abs((out == values).mean() - p) <= 5 * math.sqrt(p * (1 - p) / n)
    moved = out[out != values] - values[out != values]
    # Moves are uniform over the 4 other categories.
    counts = np.bincount(moved % 5, minlength=5)[1:]
    assert stats.chisquare(counts).pvalue > 1e-4
