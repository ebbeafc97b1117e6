"""Area Error (Xu–Cormode Def. 4.1) against an independent dense-grid integral."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_curve

from fedeval.metrics.area_error import roc_area_error

GRID = 400_000


def _tpr_on_grid(fpr: np.ndarray, tpr: np.ndarray, mids: np.ndarray) -> np.ndarray:
    """T(f) of the polyline through the points in sklearn order, segment by segment.

    Independent of the implementation: each non-vertical segment is evaluated
    on the grid midpoints strictly inside it; vertical segments have measure zero.
    """
    out = np.full(mids.shape, np.nan)
    for x0, x1, y0, y1 in zip(fpr[:-1], fpr[1:], tpr[:-1], tpr[1:], strict=True):
        if x1 > x0:
            inside = (mids > x0) & (mids < x1)
            out[inside] = y0 + (mids[inside] - x0) / (x1 - x0) * (y1 - y0)
    return out


def _dense_area_error(f1, t1, f2, t2) -> float:
    edges = np.linspace(0.0, 1.0, GRID + 1)
    mids = (edges[:-1] + edges[1:]) / 2
    d = np.abs(_tpr_on_grid(f1, t1, mids) - _tpr_on_grid(f2, t2, mids))
    # A midpoint that falls exactly on a knot is NaN: drop it (measure 1/GRID each).
    return float(np.nansum(d) / GRID)


def test_vertical_segments_pair_from_the_issue() -> None:
    # Perfect curve vs. a curve that rises only on the right half (worked example:
    # |1 - 0| on [0, 0.5] plus |1 - (2f - 1)| integrated on [0.5, 1] = 0.5 + 0.25 = 0.75).
    perfect = (np.array([0.0, 0.0, 1.0]), np.array([0.0, 1.0, 1.0]))
    diagonal = (np.array([0.0, 1.0]), np.array([0.0, 1.0]))
    assert roc_area_error(*perfect, *diagonal) == pytest.approx(0.5, abs=1e-12)
    # A staircase with one vertical jump in the middle against the diagonal:
    # points (0,0),(0.5,0),(0.5,1),(1,1): area |f| on [0,.5] + |1-f| on [.5,1] = 0.125 + 0.125.
    stair = (np.array([0.0, 0.5, 0.5, 1.0]), np.array([0.0, 0.0, 1.0, 1.0]))
    assert roc_area_error(*stair, *diagonal) == pytest.approx(0.25, abs=1e-12)
    # Two curves with vertical segments at different places: A jumps at f = 0
    # to 0.5 and rises linearly to (0.5, 1); B stays at 0 to f = 0.5, jumps to 0.5
    # and rises to (1, 1). |A - B| = 0.5 + f on [0, 0.5] (area 0.375) and 1 - f on
    # [0.5, 1] (area 0.125): 0.5 in all (worked by hand).
    a = (np.array([0.0, 0.0, 0.5, 1.0]), np.array([0.0, 0.5, 1.0, 1.0]))
    b = (np.array([0.0, 0.5, 0.5, 1.0]), np.array([0.0, 0.0, 0.5, 1.0]))
    assert roc_area_error(*a, *b) == pytest.approx(_dense_area_error(*a, *b), abs=1e-4)
    assert roc_area_error(*a, *b) == pytest.approx(0.5, abs=1e-12)


@pytest.mark.parametrize("seed", range(20))
def test_random_step_curves_match_dense_integral(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(10, 60))
    y = rng.integers(0, 2, n)
    y[:2] = (0, 1)
    s1, s2 = rng.integers(0, 6, n), rng.integers(0, 6, n)
    f1, t1, _ = roc_curve(y, s1)
    f2, t2, _ = roc_curve(y, s2)
    exact = roc_area_error(f1, t1, f2, t2)
    # Midpoint rule: exact on every grid cell except those holding a knot or a
    # crossing of the two curves, each off by at most its width 1/GRID (|T1-T2| <= 1).
    tol = 2.0 * (f1.size + f2.size) / GRID
    assert exact == pytest.approx(_dense_area_error(f1, t1, f2, t2), abs=tol)
    assert roc_area_error(f2, t2, f1, t1) == pytest.approx(exact, abs=1e-12)
