"""The discrete Gaussian (sampler, pmf, variance, zCDP calibration)."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from fedeval.privacy import DiscreteGaussian, zcdp_to_approx_dp


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


def test_per_entry_sampler_draws_each_entry_from_its_own_sigma(gof_pvalue) -> None:
    # The vectorised rejection sampler (one σ per entry, as label parties and weighted
    # parts need): each σ's entries follow that σ's discrete Gaussian.
    from fedeval.privacy.mechanisms.discrete_gaussian import sample_discrete_gaussian

    sigmas = np.repeat([0.6, 3.0, 40.0], 30_000)
    x = sample_discrete_gaussian(sigmas, np.random.default_rng(11))
    for s in (0.6, 3.0, 40.0):
        part = x[sigmas == s]
        assert gof_pvalue(part, DiscreteGaussian(s).pmf, int(12 * s) + 10) > 1e-4
    with pytest.raises(ValueError, match="sigma"):
        sample_discrete_gaussian(np.array([1.0, 0.0]), np.random.default_rng(0))
