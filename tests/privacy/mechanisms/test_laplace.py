"""Discrete Laplace: pmf, moments, sampler, guarantee."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fedeval.privacy import DiscreteLaplace


def test_discrete_laplace_closed_forms() -> None:
    # ε = ln 2, Δ1 = 1: α = 1/2, P(0) = (1-α)/(1+α) = 1/3, Var = 2α/(1-α)² = 4.
    dl = DiscreteLaplace(math.log(2.0))
    assert dl.alpha == pytest.approx(0.5, rel=1e-15)
    assert dl.pmf(0) == pytest.approx(1 / 3, rel=1e-14)
    assert dl.pmf([1, -1, 2]) == pytest.approx([1 / 6, 1 / 6, 1 / 12], rel=1e-14)
    assert dl.variance == pytest.approx(4.0, rel=1e-14)
    ks = np.arange(-200, 201)
    assert dl.pmf(ks).sum() == pytest.approx(1.0, rel=1e-14)
    assert float((ks**2 * dl.pmf(ks)).sum()) == pytest.approx(dl.variance, rel=1e-12)


def test_discrete_laplace_sensitivity_scales_alpha() -> None:
    dl = DiscreteLaplace(1.0, l1_sensitivity=3)
    assert dl.alpha == pytest.approx(math.exp(-1 / 3))
    assert dl.scale == pytest.approx(3.0)
    assert dl.logpmf(np.array([4.0])) == pytest.approx(np.log(dl.pmf(4)))


def test_discrete_laplace_sample_shape_and_dtype() -> None:
    dl = DiscreteLaplace(0.5)
    x = dl.sample((3, 4), rng=0)
    assert x.shape == (3, 4)
    assert x.dtype == np.int64
    assert np.array_equal(x, dl.sample((3, 4), rng=0))
    assert dl.sample(0, rng=0).shape == (0,)


@pytest.mark.statistical
@pytest.mark.parametrize(("epsilon", "sensitivity"), [(1.0, 1), (0.5, 2)])
def test_discrete_laplace_sampler_distribution(
    epsilon, sensitivity, gof_pvalue, moments_from_pmf, variance_tolerance
) -> None:
    dl = DiscreteLaplace(epsilon, sensitivity)
    n = 200_000
    x = dl.sample(n, rng=12345)
    window = 400 * sensitivity
    assert gof_pvalue(x, dl.pmf, window) > 1e-4
    var, mu4 = moments_from_pmf(dl.pmf, window)
    assert var == pytest.approx(dl.variance, rel=1e-10)
    assert abs(x.mean()) <= 5 * math.sqrt(dl.variance / n)
    assert abs(x.var(ddof=1) - dl.variance) <= variance_tolerance(dl.variance, mu4, n)


def test_discrete_laplace_guarantee() -> None:
    g = DiscreteLaplace(0.7, 2).guarantee(unit="client")
    assert (g.epsilon, g.delta, g.unit) == (0.7, 0.0, "client")
    assert "L1 sensitivity" in g.statement
