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


def _one_sided(
    x: NDArray[np.float64], y: NDArray[np.float64], side: str
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Collapse repeated x (vertical segments) to one value: the lowest y
    ("left" limit) or the highest ("right" limit) of a monotone curve."""
    order = np.lexsort((y, x))
    xs, ys = x[order], y[order]
    if side == "left":
        keep = np.concatenate(([True], xs[1:] != xs[:-1]))
    else:
        keep = np.concatenate((xs[1:] != xs[:-1], [True]))
    return xs[keep], ys[keep]


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
    ``sklearn.metrics.auc`` integrates them); vertical segments have measure
    zero. The integral is exact: between consecutive breakpoints of either
    curve the difference is linear.
    """
    curves = []
    for x, y in ((fpr_hat, tpr_hat), (fpr, tpr)):
        xa, ya = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
        if xa.shape != ya.shape or xa.ndim != 1 or xa.size < 2:
            raise ValueError("each curve needs matching 1-D x and y arrays with >= 2 points")
        curves.append((_one_sided(xa, ya, "left"), _one_sided(xa, ya, "right")))
    grid = np.unique(np.clip(np.concatenate([fpr_hat, fpr, [0.0, 1.0]]), 0.0, 1.0))
    lo_x, hi_x = grid[:-1], grid[1:]

    def diff_at(points: NDArray[np.float64], side: int) -> NDArray[np.float64]:
        (lx, ly), (rx, ry) = curves[0][side], curves[1][side]
        return np.interp(points, lx, ly) - np.interp(points, rx, ry)

    a = diff_at(lo_x, 1)  # right limits at the left end of each interval
    b = diff_at(hi_x, 0)  # left limits at the right end
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
