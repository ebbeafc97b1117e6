"""Monotone smoothing, eq. (3) of Barczewski et al. (2025): L1 LP and L2 QP.

Smoothing lives in :mod:`fedeval.postprocess.smoothing` (re-exported by fedeval.ecdf).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from fedeval.ecdf import empirical_cdf, private_ecdf, smooth_ecdf, smoothing_problem


def _poisson_data(n_points: int, lam: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    values = np.repeat(np.arange(n_points, dtype=float), rng.poisson(lam, n_points))
    return values, np.arange(n_points, dtype=float)


@pytest.mark.parametrize(("norm", "solver"), [(1, "highs"), (1, "clarabel"), (2, "clarabel")])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_smoothed_is_monotone_and_in_unit_interval(norm: int, solver: str, seed: int) -> None:
    values, grid = _poisson_data(300, 0.5, seed)
    raw = private_ecdf(values, grid, epsilon=0.3, rng=seed)
    assert not raw.is_monotone
    sm = smooth_ecdf(raw, norm=norm, solver=solver)  # type: ignore[arg-type]
    v = sm.values
    assert np.all(np.diff(v) >= 0)
    assert v[0] >= 0 and v[-1] <= 1
    assert sm.is_monotone
    assert sm.guarantee == raw.guarantee and sm.epsilon == raw.epsilon
    assert any("post-processing" in s for s in sm.post_processing)


def test_monotone_input_is_returned_unchanged() -> None:
    values, grid = _poisson_data(200, 3.0, 5)
    exact = empirical_cdf(values, grid)
    for norm in (1, 2):
        sm = exact.smoothed(norm)
        np.testing.assert_array_equal(sm.counts, exact.counts)
        np.testing.assert_array_equal(sm.grid, exact.grid)


def test_l1_solvers_reach_the_same_optimum() -> None:
    values, grid = _poisson_data(256, 1.0, 7)
    raw = private_ecdf(values, grid, epsilon=0.5, rng=7)
    prob, _ = smoothing_problem(raw)
    for solver in ("highs", "clarabel"):
        sm = smooth_ecdf(raw, norm=1, solver=solver)
        # Both solvers return a feasible (monotone, [0, 1]) correction of the release.
        assert sm.is_monotone
        assert np.all(np.isfinite(sm.counts - raw.counts))
    # The L1 node objective (the LP optimum, possibly attained at several ν) agrees.
    from fedeval.postprocess.smoothing import _solve_clarabel, _solve_highs_l1

    nu_h, nu_c = _solve_highs_l1(prob), _solve_clarabel(prob, 1)
    assert np.all(prob.constraints @ nu_h - prob.bounds >= -1e-6)
    assert np.all(prob.constraints @ nu_c - prob.bounds >= -1e-6)
    assert np.abs(nu_h).sum() == pytest.approx(np.abs(nu_c).sum(), rel=1e-5, abs=1e-5)


def test_l2_matches_a_generic_solver_on_a_small_problem() -> None:
    rng = np.random.default_rng(4)
    raw = private_ecdf(rng.integers(0, 8, 12).astype(float), np.arange(8.0), epsilon=0.5, rng=3)
    prob, _ = smoothing_problem(raw)
    from fedeval.postprocess.smoothing import _solve_clarabel

    nu = _solve_clarabel(prob, 2)
    g = prob.constraints.toarray()
    h = prob.bounds
    ref = minimize(
        lambda x: x @ x,
        np.zeros(prob.n_variables),
        jac=lambda x: 2 * x,
        constraints=[{"type": "ineq", "fun": lambda x: g @ x - h, "jac": lambda x: g}],
        method="SLSQP",
        options={"ftol": 1e-12, "maxiter": 500},
    )
    assert ref.success
    assert nu @ nu == pytest.approx(ref.x @ ref.x, rel=1e-5, abs=1e-6)
    assert np.all(g @ nu - h >= -1e-6)


def test_subset_of_points_and_resmoothing() -> None:
    values, grid = _poisson_data(128, 1.0, 9)
    raw = private_ecdf(values, grid, epsilon=0.5, rng=9)
    subset = np.arange(0, 128, 8)
    sm = raw.smoothed(2, points=subset)
    np.testing.assert_array_equal(sm.grid, grid[subset])
    np.testing.assert_array_equal(sm.indices, subset)
    assert sm.is_monotone
    again = sm.smoothed(1)
    np.testing.assert_array_equal(again.counts, sm.counts)


@pytest.mark.statistical
def test_l2_smoothing_reduces_error_at_moderate_epsilon() -> None:
    # Figure 2 of the paper: for ε ≥ ~0.2 the L2 error ratio is below 1 on X_pois(3).
    values, grid = _poisson_data(1024, 3.0, 12)
    exact = empirical_cdf(values, grid)
    ratios = []
    for seed in range(5):
        raw = private_ecdf(values, grid, epsilon=1.0, rng=100 + seed)
        sm = raw.smoothed(2)
        ratios.append(
            np.sum((sm.values - exact.values) ** 2) / np.sum((raw.values - exact.values) ** 2)
        )
    assert np.mean(ratios) < 1.0


def test_bad_smoothing_arguments() -> None:
    raw = private_ecdf([0.2, 0.4], [0.0, 0.5, 1.0], epsilon=1.0, rng=0)
    with pytest.raises(ValueError, match="norm"):
        smooth_ecdf(raw, norm=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="solver"):
        smooth_ecdf(raw, norm=2, solver="highs")
    with pytest.raises(ValueError, match="solver"):
        smooth_ecdf(raw, norm=1, solver="cvxopt")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="positions"):
        smooth_ecdf(raw, points=[0, 5])
    with pytest.raises(TypeError, match="integer"):
        smooth_ecdf(raw, points=[0.5])
