"""Class-conditional ECDFs rebuilt from Q released quantiles.

References
----------
xu-cormode-2025-federated-roc-pr §3.1 (Figure 1) and §2.3 (PCHIP).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from fedeval.sketches.hierarchical_histogram import HierarchicalHistogram
from fedeval.validation import check_int_at_least

__all__ = ["Interpolation", "QuantileECDF", "quantile_ecdf"]

Interpolation = Literal["pchip", "linear"]


@dataclass(frozen=True)
class QuantileECDF:
    """Φ(s) ≈ Pr[S <= s] through the points (q_j, j/Q), j = 0..Q.

    Attributes
    ----------
    knots : ndarray
        Strictly increasing score knots (tied quantiles merged).
    levels : ndarray
        Φ at the knots, non-decreasing from 0 to 1. Where several quantiles
        coincide (a spike of mass at one score) the knot keeps the largest
        level, so Φ is right-continuous like an ECDF.
    interpolation : {"pchip", "linear"}
        PCHIP (Fritsch–Carlson) preserves monotonicity without overshoot.
    """

    knots: NDArray[np.float64]
    levels: NDArray[np.float64]
    interpolation: Interpolation

    def __call__(self, s: Any) -> NDArray[np.float64]:
        x = np.asarray(s, dtype=np.float64)
        if self.knots.size == 1:
            return np.where(x >= self.knots[0], 1.0, 0.0)
        if self.interpolation == "pchip":
            # on first use: scipy.interpolate imports scipy.optimize (~0.15 s)
            from scipy.interpolate import PchipInterpolator

            val = PchipInterpolator(self.knots, self.levels, extrapolate=False)(x)
        else:
            val = np.interp(x, self.knots, self.levels)
        val = np.where(x < self.knots[0], 0.0, val)
        val = np.where(x >= self.knots[-1], 1.0, val)
        return np.clip(val, 0.0, 1.0)


def quantile_ecdf(
    tree: HierarchicalHistogram,
    n_quantiles: int,
    *,
    cls: int | None,
    interpolation: Interpolation = "pchip",
) -> QuantileECDF:
    """ECDF of one class (or all examples) from Q + 1 evenly spaced quantiles.

    Parameters
    ----------
    tree : HierarchicalHistogram
    n_quantiles : int
        Q >= 1: quantiles at levels j/Q, j = 0..Q.
    cls : int or None
        Class, or None for all examples (the "combine" PR strategy).
    interpolation : {"pchip", "linear"}
    """
    q = check_int_at_least(n_quantiles, 1, name="n_quantiles")
    if interpolation not in ("pchip", "linear"):
        raise ValueError(f"interpolation must be 'pchip' or 'linear', got {interpolation!r}")
    levels = np.arange(q + 1) / q
    points = np.maximum.accumulate(tree.quantiles(levels, cls=cls))
    if np.isnan(points).any():
        raise ValueError("the class has no (estimated) examples; its ECDF is undefined")
    # Merge ties: keep the highest level at each distinct knot.
    knots, last = np.unique(points[::-1], return_index=True)
    lv = levels[::-1][last]
    lv = np.maximum.accumulate(lv)
    return QuantileECDF(knots, lv, interpolation)
