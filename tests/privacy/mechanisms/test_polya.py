"""Pólya shares: the sum of n shares is discrete Laplace; dropouts weaken ε."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import gammaln, hyp2f1

from fedeval.privacy import DiscreteLaplace, PolyaShares, polya_difference_epsilon


def _faithful_sum(shares: PolyaShares, n_draws: int, rng: np.random.Generator) -> np.ndarray:
    """Draw every client's share and add them (chunked over clients to bound memory)."""
    total = np.zeros(n_draws, dtype=np.int64)
    chunk = 100
    for start in range(0, shares.n_shares, chunk):
        k = min(chunk, shares.n_shares - start)
        total += shares.sample_share((k, n_draws), rng=rng).sum(axis=0)
    return total


@pytest.mark.statistical
@pytest.mark.parametrize(("n_shares", "n_draws"), [(50, 100_000), (1000, 20_000)])
def test_sum_of_shares_is_discrete_laplace(n_shares, n_draws, gof_pvalue) -> None:
    shares = PolyaShares(1.0, n_shares)
    total = _faithful_sum(shares, n_draws, np.random.default_rng(2024 + n_shares))
    target = DiscreteLaplace(1.0)
    assert gof_pvalue(total, target.pmf, 200) > 1e-4
    assert abs(total.mean()) <= 5 * math.sqrt(target.variance / n_draws)


@pytest.mark.statistical
def test_sample_sum_fast_path_is_discrete_laplace(gof_pvalue) -> None:
    shares = PolyaShares(0.8, 10_000, l1_sensitivity=2)
    x = shares.sample_sum(200_000, rng=99)
    assert gof_pvalue(x, shares.target.pmf, 400) > 1e-4


@pytest.mark.statistical
def test_share_variance(moments_from_pmf, variance_tolerance) -> None:
    shares = PolyaShares(1.0, 20)
    assert shares.share_variance == pytest.approx(shares.target.variance / 20)
    assert shares.variance == pytest.approx(shares.target.variance)
    n = 400_000
    x = shares.sample_share(n, rng=3)
    # Pólya(r) - Pólya(r): Var = 2rα/(1-α)²; 4th cumulant of NB(r): r α(1+4α+α²)/(1-α)⁴.
    a, r = shares.alpha, shares.shape
    var = shares.share_variance
    kappa4 = 2 * r * a * (1 + 4 * a + a * a) / (1 - a) ** 4
    mu4 = kappa4 + 3 * var**2
    assert abs(x.var(ddof=1) - var) <= variance_tolerance(var, mu4, n)


def _difference_logpmf_closed_form(k: np.ndarray, r: float, alpha: float) -> np.ndarray:
    """log P(|k|) of Pólya(r, α) - Pólya(r, α) via the Gauss hypergeometric function."""
    k = np.abs(k).astype(float)
    return (
        2 * r * np.log1p(-alpha)
        + k * np.log(alpha)
        + gammaln(k + r)
        - gammaln(r)
        - gammaln(k + 1)
        + np.log(hyp2f1(r, k + r, k + 1, alpha**2))
    )


@pytest.mark.parametrize(
    ("r", "epsilon", "sensitivity"), [(0.5, 1.0, 1), (0.1, 2.0, 1), (0.3, 1.0, 2)]
)
def test_dropout_epsilon_matches_closed_form(r, epsilon, sensitivity) -> None:
    alpha = math.exp(-epsilon / sensitivity)
    ks = np.arange(-60, 61)
    logp = _difference_logpmf_closed_form(ks, r, alpha)
    expected = max(float(np.max(logp[:-s] - logp[s:])) for s in range(1, sensitivity + 1))
    assert polya_difference_epsilon(r, alpha, sensitivity) == pytest.approx(expected, rel=1e-10)
    assert expected > epsilon


def test_guarantee_if_received() -> None:
    shares = PolyaShares(1.0, 100)
    assert shares.guarantee().epsilon == 1.0
    assert shares.guarantee_if_received(100).epsilon == pytest.approx(1.0, rel=1e-15)
    eps = [shares.guarantee_if_received(m).epsilon for m in (1, 10, 50, 90, 99)]
    assert all(e > 1.0 for e in eps)
    assert eps == sorted(eps, reverse=True)  # fewer shares, weaker guarantee
    g = shares.guarantee_if_received(50, unit="client")
    assert g.unit == "client" and g.delta == 0.0 and "only 50 of 100" in g.statement
    assert g.epsilon == pytest.approx(1.675, abs=1e-3)


def test_for_dropouts_calibrates_to_threshold() -> None:
    shares = PolyaShares.for_dropouts(1.0, 100, 80, 1)
    assert shares.min_received == 80
    assert shares.shape == pytest.approx(1 / 80)
    assert shares.variance == pytest.approx(shares.target.variance * 100 / 80)
    for m in (80, 90, 100):
        assert shares.guarantee_if_received(m).epsilon == pytest.approx(1.0, rel=1e-15)
    assert shares.guarantee_if_received(79).epsilon > 1.0
    assert shares.guarantee().epsilon == 1.0


@pytest.mark.statistical
def test_threshold_shares_sum_to_target(gof_pvalue) -> None:
    # 40 of the 60 calibrated shares arrive: exactly the target discrete Laplace.
    shares = PolyaShares.for_dropouts(1.0, 60, 40)
    x = shares.sample_sum(200_000, rng=5, n_received=40)
    assert gof_pvalue(x, shares.target.pmf, 200) > 1e-4


def test_invalid_received() -> None:
    shares = PolyaShares(1.0, 10)
    with pytest.raises(ValueError, match="n_received"):
        shares.guarantee_if_received(11)
    with pytest.raises(ValueError, match="n_received"):
        shares.sample_sum(3, rng=0, n_received=0)
    with pytest.raises(ValueError, match="min_received"):
        PolyaShares.for_dropouts(1.0, 10, 11)


@pytest.mark.statistical
@pytest.mark.parametrize("epsilon", [1.0 / 22, 1.0, 5.0])
def test_sample_sum_has_the_discrete_laplace_moments(
    epsilon, gof_pvalue, variance_tolerance
) -> None:
    """The fast path (now the exact sampler) keeps the law: variance share_variance·n =
    2α/(1-α)² (5 standard errors, μ4 from the cumulants), P(0) = (1-α)/(1+α), symmetry."""
    shares = PolyaShares(epsilon, 250)
    a = shares.alpha
    n = 200_000
    x = shares.sample_sum(n, rng=7)
    assert x.dtype == np.int64 and x.shape == (n,)
    assert gof_pvalue(x, shares.target.pmf, 2_000) > 1e-4
    k2 = shares.share_variance * shares.n_shares
    assert k2 == pytest.approx(2 * a / (1 - a) ** 2)
    k4 = 2 * a * (1 + 4 * a + a**2) / (1 - a) ** 4
    assert abs(x.mean()) <= 5 * math.sqrt(k2 / n)
    assert abs(x.var() - k2) <= variance_tolerance(k2, k4 + 3 * k2**2, n)
    p0 = (1 - a) / (1 + a)
    assert abs((x == 0).mean() - p0) <= 5 * math.sqrt(p0 * (1 - p0) / n)
    assert abs((x > 0).mean() - (x < 0).mean()) <= 5 * math.sqrt(1 / n)


def test_sample_sum_shapes_and_no_noise() -> None:
    shares = PolyaShares(0.5, 10)
    assert shares.sample_sum((3, 70_001), rng=0).shape == (3, 70_001)
    assert shares.sample_sum(0, rng=0).shape == (0,)
    # ε/Δ = 800: α = e^-800 underflows in float64; the exact sampler still draws 0
    # except with probability ~e^-800.
    np.testing.assert_array_equal(PolyaShares(800.0, 3).sample_sum(5, rng=0), 0)


@pytest.mark.statistical
def test_single_share_is_the_exact_discrete_laplace(two_sample_chi2_pvalue) -> None:
    """With one share (shape 1) the faithful path draws the target exactly, like the fast path."""
    shares = PolyaShares(0.7, 1)
    assert shares.shape == 1.0
    a = shares.sample_share(100_000, rng=np.random.default_rng(1))
    b = shares.sample_sum(100_000, rng=np.random.default_rng(2))
    assert two_sample_chi2_pvalue(a, b) > 1e-4


@pytest.mark.statistical
def test_sum_of_all_shares_is_discrete_laplace_when_one_over_m_times_m_is_not_one(
    gof_pvalue,
) -> None:
    """49 · (1/49) = 0.9999999999999999 in floating point: the fast path still draws the
    discrete Laplace (it drew Pólya(0.9999999999999999) differences before, ~8× slower)."""
    assert 49 * (1 / 49) != 1.0
    shares = PolyaShares(1.0, 49)
    x = shares.sample_sum(200_000, rng=3)
    assert gof_pvalue(x, shares.target.pmf, 400) > 1e-4
