"""Privacy tests: exact pmf-ratio checks (tight at ε) and empirical audits.

The empirical audit runs a count query on two neighbouring datasets (true count c
and c + 1) many times and, for a family of output events S (single outcomes and
tails), bounds log P(S | c+1)/P(S | c) (and the reverse) from below with
Clopper–Pearson intervals, Bonferroni-corrected over all events tested. A valid
ε-DP mechanism can never have a lower confidence bound above ε except with
probability ≤ the family-wise level; the audit must also have power: it must
detect a mechanism whose true ε exceeds the claim.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from scipy import stats

from fedeval.privacy import DiscreteLaplace, PolyaShares, polya_difference_epsilon

COUNT = 10
DRAWS = 200_000
MIN_MASS = 500  # events with fewer hits in either run are too noisy to use
FAMILY_LEVEL = 1e-4


def _max_log_ratio(
    logpmf: Callable[[np.ndarray], np.ndarray], sensitivity: int, window: int
) -> float:
    """sup_k sup_{1 ≤ s ≤ Δ} log P(k)/P(k+s) over |k| ≤ window."""
    ks = np.arange(-window, window + 1)
    lp = logpmf(ks)
    return max(float(np.max(lp[:-s] - lp[s:])) for s in range(1, sensitivity + 1))


@pytest.mark.privacy
@pytest.mark.parametrize(("epsilon", "sensitivity"), [(1.0, 1), (0.3, 1), (2.0, 3)])
def test_discrete_laplace_ratio_check_is_tight(epsilon, sensitivity) -> None:
    def passes_check_at(eps_claim: float, mech: DiscreteLaplace) -> bool:
        return _max_log_ratio(mech.logpmf, sensitivity, 200) <= eps_claim * (1 + 1e-12)

    mech = DiscreteLaplace(epsilon, sensitivity)
    assert _max_log_ratio(mech.logpmf, sensitivity, 200) == pytest.approx(epsilon, rel=1e-12)
    assert passes_check_at(epsilon, mech)
    assert not passes_check_at(0.99 * epsilon, mech)
    # Noise calibrated for a slightly larger ε (less noise) fails the check at ε.
    assert not passes_check_at(epsilon, DiscreteLaplace(1.01 * epsilon, sensitivity))


@pytest.mark.privacy
def test_polya_sum_ratio_check_is_tight() -> None:
    shares = PolyaShares(1.0, 100)
    assert polya_difference_epsilon(1.0, shares.alpha) == pytest.approx(1.0, rel=1e-14)
    # 99 of 100 shares: strictly above ε, so a check at ε fails.
    assert shares.epsilon_if_received(99) > 1.0 + 1e-4


def _audit_lower_bound(noise_a: np.ndarray, noise_b: np.ndarray) -> tuple[float, float]:
    """(max lower confidence bound, max point estimate) of the log probability ratio.

    Output a = COUNT + noise_a (dataset D), b = COUNT + 1 + noise_b (neighbour D').
    """
    a = COUNT + noise_a
    b = COUNT + 1 + noise_b
    n = a.size
    lo = int(min(a.min(), b.min()))
    ca = np.bincount(a - lo)
    cb = np.bincount(b - lo, minlength=ca.size)
    ca = np.pad(ca, (0, cb.size - ca.size))
    # Events: single outcomes and both tails {o <= t}, {o >= t}.
    singles = np.stack([ca, cb], axis=1)
    left = np.cumsum(singles, axis=0)
    right = np.cumsum(singles[::-1], axis=0)[::-1]
    events = np.concatenate([singles, left, right])
    # Keep events with enough hits *and* enough misses (the full sample space says nothing).
    events = events[((events >= MIN_MASS) & (events <= n - MIN_MASS)).all(axis=1)]
    n_tests = 2 * len(events)  # both directions
    level = FAMILY_LEVEL / (2 * n_tests)  # two-sided CP interval per proportion
    k1, k2 = events[:, 0], events[:, 1]
    lo1 = stats.beta.ppf(level, k1, n - k1 + 1)
    hi1 = stats.beta.ppf(1 - level, k1 + 1, n - k1)
    lo2 = stats.beta.ppf(level, k2, n - k2 + 1)
    hi2 = stats.beta.ppf(1 - level, k2 + 1, n - k2)
    lower = np.maximum(np.log(lo1 / hi2), np.log(lo2 / hi1))
    point = np.abs(np.log(k1 / k2))
    return float(lower.max()), float(point.max())


@pytest.mark.privacy
@pytest.mark.statistical
def test_empirical_audit_discrete_laplace() -> None:
    eps = 1.0
    mech = DiscreteLaplace(eps)
    gen = np.random.default_rng(8675309)
    lower, point = _audit_lower_bound(mech.sample(DRAWS, gen), mech.sample(DRAWS, gen))
    assert lower <= eps
    assert point > 0.9 * eps  # the audit is close to tight for this mechanism


@pytest.mark.privacy
@pytest.mark.statistical
def test_empirical_audit_polya_sum() -> None:
    eps = 1.0
    shares = PolyaShares(eps, 1000)
    gen = np.random.default_rng(1234)
    lower, _ = _audit_lower_bound(shares.sample_sum(DRAWS, gen), shares.sample_sum(DRAWS, gen))
    assert lower <= eps


@pytest.mark.privacy
@pytest.mark.statistical
def test_empirical_audit_detects_dropout_violation() -> None:
    # Half of the shares missing: the claimed ε = 1 no longer holds; the exact ε' does.
    shares = PolyaShares(1.0, 10)
    claimed = shares.guarantee_if_received(5).epsilon
    gen = np.random.default_rng(99)
    a = shares.sample_sum(DRAWS, gen, n_received=5)
    b = shares.sample_sum(DRAWS, gen, n_received=5)
    lower, _ = _audit_lower_bound(a, b)
    assert lower > shares.epsilon  # audit has the power to catch the violation
    assert lower <= claimed


@pytest.mark.privacy
@pytest.mark.statistical
def test_empirical_audit_detects_under_noised_mechanism() -> None:
    # Noise for ε = 1.5 while claiming ε = 1: the audit must reject the claim.
    gen = np.random.default_rng(5)
    mech = DiscreteLaplace(1.5)
    lower, _ = _audit_lower_bound(mech.sample(DRAWS, gen), mech.sample(DRAWS, gen))
    assert lower > 1.0
    assert math.isfinite(lower)
