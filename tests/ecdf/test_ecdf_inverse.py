"""Inverse ECDF by bisection (Algorithm 1 of Barczewski et al. 2025)."""

from __future__ import annotations

import numpy as np
import pytest

from fedeval.ecdf import empirical_cdf, equal_width_grid, inverse_ecdf, private_ecdf


@pytest.mark.parametrize("psi", [1e-3, 0.05, 0.5])
def test_noiseless_inverse_within_psi_of_true_quantile(psi: float) -> None:
    rng = np.random.default_rng(0)
    values = rng.integers(0, 100, 5000).astype(float)
    grid = np.arange(100.0)
    ecdf = empirical_cdf(values, grid)
    k = np.arange(101)
    est = ecdf.inverse(k / 100, precision=psi)
    # True quantile inf{x : F(x) >= k/100}: the ceil(k n / 100)-th order statistic,
    # in exact integer arithmetic (float quantile code can round k/100 the other way).
    order = np.sort(values)
    rank = np.maximum(-((-k * values.size) // 100), 1)
    true = order[rank - 1]
    assert np.all(np.abs(est - true) <= psi / 2)


def test_noiseless_inverse_on_a_fine_grid_of_continuous_values() -> None:
    rng = np.random.default_rng(1)
    values = rng.random(3000)
    grid = equal_width_grid(0.0, 1.0, 4096)
    ecdf = empirical_cdf(values, grid)
    q = rng.random(50)
    psi = 1e-4
    est = inverse_ecdf(ecdf, q, precision=psi, bounds=(0.0, 1.0))
    # The grid quantile is the first grid point at or above the sample quantile.
    sample_q = np.quantile(values, q, method="inverted_cdf")
    grid_q = grid[np.searchsorted(grid, sample_q, side="left")]
    assert np.all(np.abs(est - grid_q) <= psi)


def test_inverse_on_smoothed_ecdf_is_monotone_in_q() -> None:
    rng = np.random.default_rng(2)
    values = rng.random(2000)
    grid = equal_width_grid(0.0, 1.0, 256)
    raw = private_ecdf(values, grid, epsilon=0.5, rng=3)
    sm = raw.smoothed(2)
    q = np.linspace(0.01, 0.99, 99)
    inv = sm.inverse(q)
    assert np.all(np.diff(inv) >= 0)
    # A private quantile is still close to the truth at this n.
    assert np.max(np.abs(inv - np.quantile(values, q))) < 0.1
    # The raw release can be inverted too (Algorithm 1 does not need monotonicity).
    assert np.all(np.isfinite(raw.inverse(q)))


def test_scalar_and_shape_are_preserved() -> None:
    ecdf = empirical_cdf([0.1, 0.5, 0.9], [0.0, 0.5, 1.0])
    assert np.shape(ecdf.inverse(0.5)) == ()
    assert ecdf.inverse(np.full((2, 3), 0.5)).shape == (2, 3)
    with pytest.raises(ValueError, match="precision"):
        ecdf.inverse(0.5, precision=0.0)
    with pytest.raises(ValueError, match="bounds"):
        ecdf.inverse(0.5, bounds=(1.0, 0.0))
