"""Area Error between two curves, computed exactly on the piecewise curves.

References
----------
xu-cormode-2025-federated-roc-pr, Definition 4.1, eqs. (4)–(5).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["pr_area_error", "roc_area_error"]


def _limits(
    x: NDArray[np.float64], y: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Distinct x of a monotone curve with the lowest and highest y at each.

    A repeated x is a vertical segment: the curve arrives at its lowest y (the
    left limit) and leaves from its highest (the right limit).
    """
    order = np.lexsort((y, x))
    xs, ys = x[order], y[order]
    first = np.concatenate(([True], xs[1:] != xs[:-1]))
    last = np.concatenate((xs[1:] != xs[:-1], [True]))
    return xs[first], ys[first], ys[last]


def _limit_at(
    curve: tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]],
    t: NDArray[np.float64],
    side: str,
) -> NDArray[np.float64]:
    """Left (side="left") or right limit of the polyline at points t.

    Between two knots the curve is the segment from the right limit at the
    lower knot to the left limit at the upper one; beyond the ends it is flat.
    """
    xs, low, high = curve
    if xs.size == 1:
        return np.full(t.shape, low[0] if side == "left" else high[0])
    k = np.clip(np.searchsorted(xs, t, side="right") - 1, 0, xs.size - 2)
    x0, x1 = xs[k], xs[k + 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        u = np.clip((t - x0) / (x1 - x0), 0.0, 1.0)
    inner = high[k] + u * (low[k + 1] - high[k])
    on_knot = np.searchsorted(xs, t, side="left")
    on_knot_c = np.minimum(on_knot, xs.size - 1)
    hit = xs[on_knot_c] == t
    at_knot = low[on_knot_c] if side == "left" else high[on_knot_c]
    out = np.where(hit, at_knot, inner)
    out = np.where(t < xs[0], low[0], out)
    return np.asarray(np.where(t > xs[-1], high[-1], out), dtype=np.float64)


def _abs_integral_linear(
    a: NDArray[np.float64], b: NDArray[np.float64], width: NDArray[np.float64]
) -> float:
    """Σ width · ∫_0^1 |a + (b − a)u| du, exactly (sign changes included)."""
    same = a * b >= 0
    with np.errstate(divide="ignore", invalid="ignore"):
        crossing = np.where(
            np.abs(a) + np.abs(b) > 0, (a * a + b * b) / (2 * (np.abs(a) + np.abs(b))), 0.0
        )
    return float(np.sum(width * np.where(same, np.abs(a + b) / 2, crossing)))


def roc_area_error(fpr_hat: Any, tpr_hat: Any, fpr: Any, tpr: Any) -> float:
    """AE_ROC = ∫_0^1 |T(f) − T̂(f)| df for piecewise-linear ROC curves.

    Both curves are the linear interpolation of their points (as
    ``sklearn.metrics.auc`` integrates them); vertical segments (repeated FPR)
    have measure zero, and the curve leaves a vertical segment from its top.
    The integral is exact: between consecutive breakpoints of either curve the
    difference is linear. Tested against an independent dense-grid integral on
    random step curves (``tests/metrics/test_area_error.py``).
    """
    curves = []
    for x, y in ((fpr_hat, tpr_hat), (fpr, tpr)):
        xa, ya = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
        if xa.shape != ya.shape or xa.ndim != 1 or xa.size < 2:
            raise ValueError("each curve needs matching 1-D x and y arrays with >= 2 points")
        curves.append(_limits(xa, ya))
    grid = np.unique(np.clip(np.concatenate([curves[0][0], curves[1][0], [0.0, 1.0]]), 0.0, 1.0))
    lo_x, hi_x = grid[:-1], grid[1:]
    # Between consecutive breakpoints of either curve both are linear: the
    # difference runs from its right limit at the lower end to its left limit
    # at the upper end.
    a = _limit_at(curves[0], lo_x, "right") - _limit_at(curves[1], lo_x, "right")
    b = _limit_at(curves[0], hi_x, "left") - _limit_at(curves[1], hi_x, "left")
    return _abs_integral_linear(a, b, hi_x - lo_x)


def pr_area_error(precision_hat: Any, recall_hat: Any, precision: Any, recall: Any) -> float:
    """AE_PR = ∫_0^1 |P(t) − P̂(t)| dt with scikit-learn's step interpolation.

    As in average precision, precision at recall t is the precision of the
    first curve point (in decreasing-recall order) whose recall is >= t: a
    right-continuous step function, integrated exactly.
    """

    def step(p: Any, r: Any) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        pa, ra = np.asarray(p, dtype=np.float64), np.asarray(r, dtype=np.float64)
        if pa.shape != ra.shape or pa.ndim != 1:
            raise ValueError("precision and recall must be 1-D arrays of equal length")
        # Curves come in increasing-threshold order (sklearn's layout). Among
        # points of equal recall, AP's step uses the highest threshold: reverse
        # first so a stable sort puts that point first.
        pa, ra = pa[::-1], ra[::-1]
        order = np.argsort(ra, kind="stable")
        return ra[order], pa[order]

    r1, p1 = step(precision_hat, recall_hat)
    r2, p2 = step(precision, recall)
    grid = np.unique(np.clip(np.concatenate([r1, r2, [0.0, 1.0]]), 0.0, 1.0))
    mid = (grid[:-1] + grid[1:]) / 2

    def value(
        r: NDArray[np.float64], p: NDArray[np.float64], t: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        # first point (in increasing recall) with recall >= t; beyond the last, its precision
        idx = np.minimum(np.searchsorted(r, t, side="left"), r.size - 1)
        return p[idx]

    return float(np.sum(np.abs(value(r1, p1, mid) - value(r2, p2, mid)) * np.diff(grid)))
