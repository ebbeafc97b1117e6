"""Named post-processing of released count tables (issue 27): closest non-negative tables.

Expected values: a brute-force constrained least squares (scipy's SLSQP on
small tables) and the defining constraints themselves.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from fedeval.postprocess.tables import (
    combine,
    project_children_to_simplex,
    project_table,
    project_to_total,
)


def _brute_force(y: np.ndarray, rows: np.ndarray, trace: float | None) -> np.ndarray:
    c = y.shape[0]
    cons = [
        {"type": "eq", "fun": lambda x, i=i: x.reshape(c, c)[i].sum() - rows[i]} for i in range(c)
    ]
    if trace is not None:
        cons.append({"type": "eq", "fun": lambda x: np.trace(x.reshape(c, c)) - trace})
    res = minimize(
        lambda x: np.sum((x - y.ravel()) ** 2),
        np.full(c * c, max(rows.mean(), 0.0) / c),
        jac=lambda x: 2 * (x - y.ravel()),
        bounds=[(0, None)] * (c * c),
        constraints=cons,
        method="SLSQP",
        options={"ftol": 1e-14, "maxiter": 500},
    )
    return np.asarray(res.x).reshape(c, c)


@pytest.mark.parametrize("seed", range(8))
def test_project_table_is_the_closest_non_negative_table_with_the_margins(seed: int) -> None:
    rng = np.random.default_rng(seed)
    c = 3 + seed % 3
    truth = rng.integers(0, 30, (c, c)).astype(float)
    y = truth + rng.normal(0, 15, (c, c))
    rows = truth.sum(axis=1) + rng.normal(0, 3, c)
    trace = float(np.clip(np.trace(truth) + rng.normal(0, 5), 0, rows.sum()))
    x = project_table(y, rows, trace)
    assert x.min() >= 0
    np.testing.assert_allclose(x.sum(axis=1), rows, atol=1e-8)
    assert np.trace(x) == pytest.approx(trace, abs=1e-8)
    ref = _brute_force(y, rows, trace)
    # Same objective (the projection onto a convex set is unique): within SLSQP's tolerance.
    assert np.sum((x - y) ** 2) <= np.sum((ref - y) ** 2) + 1e-6
    np.testing.assert_allclose(x, ref, atol=1e-4)


def test_project_table_without_trace_projects_rows_onto_their_simplices() -> None:
    y = np.array([[5.0, -2.0, 1.0], [-1.0, -1.0, 4.0], [3.0, 3.0, 3.0]])
    rows = np.array([4.0, 2.0, 0.0])
    x = project_table(y, rows)
    np.testing.assert_allclose(x, _brute_force(y, rows, None), atol=1e-5)
    assert np.all(x[2] == 0.0)


def test_project_table_keeps_a_feasible_table() -> None:
    """A non-negative table with the target margins is its own projection."""
    y = np.array([[7.0, 1.0], [2.0, 5.0]])
    np.testing.assert_allclose(project_table(y, y.sum(axis=1), np.trace(y)), y, atol=1e-10)


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 12), st.floats(-50, 200), st.integers(0, 2**16))
def test_project_to_total_is_non_negative_with_the_total(n: int, total: float, seed: int) -> None:
    x = np.random.default_rng(seed).normal(5, 20, n)
    out = project_to_total(x, np.array(total))
    assert out.min() >= 0
    assert out.sum() == pytest.approx(max(total, 0.0), abs=1e-8)
    # KKT of min ||w − x||² on the scaled simplex: w = max(x − θ, 0) for one θ.
    kept = out > 0
    if kept.any() and total > 0:
        theta = x[kept] - out[kept]
        assert np.ptp(theta) < 1e-8
        assert np.all(x[~kept] <= theta[0] + 1e-8)


def test_combine_is_the_inverse_variance_mean() -> None:
    est, var = combine(np.array([[1.0, 3.0, np.nan]]), np.array([1.0, 3.0, 2.0]))
    assert est[0] == pytest.approx((1.0 + 3.0 / 3.0) / (1.0 + 1.0 / 3.0))
    assert var[0] == pytest.approx(1.0 / (1.0 + 1.0 / 3.0))
    exact, v0 = combine(np.array([2.0, 5.0]), np.array([0.0, 1.0]))
    assert exact == 2.0 and v0 == 0.0


def test_project_to_total_reuses_the_dense_simplex_projection() -> None:
    """With the row's own total it is the dense curves' non-negative split."""
    x = np.array([[4.0, -1.0, 2.0, 0.5]])
    np.testing.assert_allclose(
        project_to_total(x, x.sum(axis=1)), project_children_to_simplex(x)[0]
    )


def _bisection_reference(y: np.ndarray, rows: np.ndarray, trace: float) -> np.ndarray:
    """The trace multiplier by plain bisection to the last bit, one table at a time."""
    c = y.shape[0]
    r = np.maximum(rows, 0.0)
    t = float(np.clip(trace, 0.0, r.sum()))
    span = 2.0 * np.abs(y).max() + r.max() + 1.0  # see project_table
    lo, hi = -span, span
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if np.trace(project_to_total(y - mid * np.eye(c), r)) > t:
            lo = mid
        else:
            hi = mid
    return project_to_total(y - 0.5 * (lo + hi) * np.eye(c), r)


@pytest.mark.parametrize("c", [2, 3, 5, 10])
def test_project_table_finds_the_trace_multiplier_of_every_table_in_a_batch(c: int) -> None:
    """The regula falsi root equals bisection run to the last bit, table by table,
    for a batch that mixes interior traces, the extremes 0 and Σr, zero rows and
    tables already feasible; the margins and the trace hold exactly."""
    rng = np.random.default_rng(c)
    m = 60
    truth = rng.integers(0, 20, (m, c, c)).astype(float)
    y = truth + rng.normal(0, 8, (m, c, c))
    rows = truth.sum(axis=-1) + rng.normal(0, 2, (m, c))
    rows[::7, 0] = 0.0  # a class with no released examples
    trace = np.trace(truth, axis1=-2, axis2=-1) + rng.normal(0, 4, m)
    trace[1], trace[2] = -3.0, 1e9  # clipped to 0 and to Σ r
    y[3], rows[3], trace[3] = truth[3], truth[3].sum(axis=1), np.trace(truth[3])
    x = project_table(y, rows, trace)
    for i in range(m):
        ref = _bisection_reference(y[i], rows[i], trace[i])
        np.testing.assert_allclose(x[i], ref, atol=1e-7 * (1.0 + rows[i].clip(0).sum()))
        assert x[i].min() >= 0.0
        np.testing.assert_allclose(x[i].sum(axis=1), rows[i].clip(0), atol=1e-8)
        t_i = float(np.clip(trace[i], 0.0, rows[i].clip(0).sum()))
        assert np.trace(x[i]) == pytest.approx(t_i, abs=1e-8 * (1.0 + t_i))
    np.testing.assert_allclose(x[3], truth[3], atol=1e-9)


def test_project_table_meets_the_trace_when_an_off_diagonal_cell_is_very_negative() -> None:
    """Bug: the bracket for the trace multiplier assumed that at μ = max|y| + max r + 1
    no row keeps mass on its diagonal. A row whose off-diagonal cell is very negative
    (−3.1 against a diagonal of 8.6, noise of a tiny release) still kept 1.06 there, so
    the root (trace 0.77) lay outside the bracket: 200 steps, then a table whose trace
    was 1.06. The optimum is checked against SLSQP."""
    y = np.array([[8.5571502, -3.11558657], [4.92307723, -5.38770338]])
    rows = np.array([5.33549137, 0.0])
    trace = 0.7712139467576424
    x = project_table(y, rows, trace)
    assert np.trace(x) == pytest.approx(trace, abs=1e-9)
    np.testing.assert_allclose(x.sum(axis=1), rows, atol=1e-9)
    assert x.min() >= 0
    ref = _brute_force(y, rows, trace)
    assert np.sum((x - y) ** 2) <= np.sum((ref - y) ** 2) + 1e-6
    # A batch of such tables: every trace is met (the old bracket missed 1 in 200 here).
    rng = np.random.default_rng(0)
    ys = np.array([[2.0, 1.0], [1.0, 1.0]]) + rng.laplace(0, 3, (400, 2, 2))
    rs = np.maximum(ys.sum(axis=-1) + rng.normal(0, 1, (400, 2)), 0.0)
    ts = np.clip(np.trace(ys, axis1=-2, axis2=-1) + rng.normal(0, 1, 400), 0, rs.sum(axis=-1))
    xs = project_table(ys, rs, ts)
    np.testing.assert_allclose(np.trace(xs, axis1=-2, axis2=-1), ts, atol=1e-8 * (1 + ts.max()))
