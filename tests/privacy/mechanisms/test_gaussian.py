"""Gaussian (analytic calibration) and discrete Gaussian (sampler, pmf, variance)."""

from __future__ import annotations

import math
import time

import dp_accounting
import numpy as np
import pytest
from scipy.special import ndtr

from fedeval.privacy import DiscreteGaussian, Gaussian, zcdp_to_approx_dp


def _exact_delta(epsilon: float, sigma: float, sens: float) -> float:
    """Balle & Wang (2018), Theorem 8, evaluated directly with ndtr."""
    a = sens / (2 * sigma) - epsilon * sigma / sens
    b = -sens / (2 * sigma) - epsilon * sigma / sens
    return float(ndtr(a) - math.exp(epsilon) * ndtr(b))


@pytest.mark.parametrize(
    ("epsilon", "delta", "sens"),
    [(1.0, 1e-5, 1.0), (0.1, 1e-6, 2.5), (8.0, 1e-9, 1.0), (0.5, 0.1, 3.0)],
)
def test_analytic_calibration_matches_dp_accounting(epsilon, delta, sens) -> None:
    g = Gaussian.calibrate(epsilon, delta, sens)
    reference = dp_accounting.get_sigma_gaussian(epsilon, delta) * sens
    assert g.sigma == pytest.approx(reference, rel=1e-8)
    assert g.delta_for_epsilon(epsilon) <= delta
    assert g.delta_for_epsilon(epsilon) == pytest.approx(delta, rel=1e-8)
    assert _exact_delta(epsilon, g.sigma, sens) == pytest.approx(delta, rel=1e-6)


def test_analytic_calibration_known_value() -> None:
    # ε = 1, δ = 1e-5, Δ2 = 1: σ = 3.7306... (classical bound sqrt(2 ln(1.25/δ)) = 4.84).
    g = Gaussian.calibrate(1.0, 1e-5)
    assert g.sigma == pytest.approx(3.73063, abs=1e-5)
    assert g.sigma < math.sqrt(2 * math.log(1.25 / 1e-5))


def test_epsilon_for_delta_matches_dp_accounting() -> None:
    g = Gaussian(2.0, l2_sensitivity=0.5)
    eps = g.guarantee(delta=1e-6).epsilon
    assert eps == pytest.approx(dp_accounting.get_epsilon_gaussian(4.0, 1e-6), rel=1e-8)
    assert Gaussian.calibrate(eps, 1e-6, 0.5).sigma == pytest.approx(2.0, rel=1e-8)
    stored = Gaussian.calibrate(1.0, 1e-5).guarantee("client")
    assert stored.epsilon == pytest.approx(1.0, rel=1e-9) and stored.unit == "client"
    with pytest.raises(ValueError, match="delta"):
        Gaussian(1.0).guarantee()


@pytest.mark.statistical
def test_gaussian_sample_moments() -> None:
    g = Gaussian(3.0)
    n = 200_000
    x = g.sample(n, rng=1)
    assert abs(x.mean()) <= 5 * math.sqrt(9.0 / n)
    assert abs(x.var(ddof=1) - 9.0) <= 5 * math.sqrt(2 * 81.0 / n)


@pytest.mark.parametrize("sigma", [0.3, 1.0, 3.0, 15.0])
def test_discrete_gaussian_pmf_and_variance(sigma) -> None:
    dg = DiscreteGaussian(sigma)
    kmax = int(60 * sigma) + 5
    ks = np.arange(-kmax, kmax + 1)
    w = np.exp(-(ks.astype(float) ** 2) / (2 * sigma**2))
    brute_var = float((ks**2 * w).sum() / w.sum())
    assert dg.pmf(ks).sum() == pytest.approx(1.0, rel=1e-12)
    assert dg.pmf(ks) == pytest.approx(w / w.sum(), rel=1e-10)
    assert dg.variance == pytest.approx(brute_var, rel=1e-12)
    assert dg.variance <= sigma**2


@pytest.mark.statistical
@pytest.mark.parametrize("sigma", [0.7, 4.0])
def test_discrete_gaussian_sampler(sigma, gof_pvalue, moments_from_pmf, variance_tolerance) -> None:
    dg = DiscreteGaussian(sigma)
    n = 1_000_000
    start = time.perf_counter()
    x = dg.sample(n, rng=2020)
    elapsed = time.perf_counter() - start
    assert x.shape == (n,) and x.dtype == np.int64
    assert elapsed < 5.0  # typically ~0.2 s; a generous bound against accidental O(n²)
    window = int(40 * sigma) + 5
    assert gof_pvalue(x, dg.pmf, window) > 1e-4
    var, mu4 = moments_from_pmf(dg.pmf, window)
    assert var == pytest.approx(dg.variance, rel=1e-10)
    assert abs(x.mean()) <= 5 * math.sqrt(var / n)
    assert abs(x.var(ddof=1) - var) <= variance_tolerance(var, mu4, n)


def test_discrete_gaussian_guarantee_and_calibration() -> None:
    dg = DiscreteGaussian(4.0, l2_sensitivity=2.0)
    assert dg.rho == pytest.approx(4.0 / 32.0)
    g = dg.guarantee(delta=1e-5)
    assert g.epsilon == pytest.approx(zcdp_to_approx_dp(0.125, 1e-5))
    assert g.delta == 1e-5
    cal = DiscreteGaussian.calibrate(1.0, 1e-5, 2.0)
    assert cal.guarantee().epsilon <= 1.0
    assert cal.guarantee().epsilon == pytest.approx(1.0, rel=1e-6)
    assert DiscreteGaussian(cal.sigma * 0.999, 2.0).guarantee(delta=1e-5).epsilon > 1.0
