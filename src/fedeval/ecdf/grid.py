"""Public evaluation grids τ for private ECDFs.

The grid is data-independent and public: it is fixed before any data is seen,
so choosing it costs no privacy. Barczewski et al. (2025, §3.1) give two
choices: an equal-width grid ``τ = ψℤ ∩ [low, high]`` for absolute precision ψ,
and a geometric grid ``τ = {e^{ψz} : z ∈ ℤ} ∩ [low, high]`` when the relative
error matters more.

References
----------
.. [1] J. Barczewski, A. Mawass and J. Ramon, "Differentially private empirical
   cumulative distribution functions", arXiv:2502.06651 (2025), §3.1.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fedeval.validation import check_int_at_least, check_positive

__all__ = ["check_grid", "equal_width_grid", "geometric_grid"]


def check_grid(grid: Any, *, name: str = "grid") -> NDArray[np.float64]:
    """Validate an ordered evaluation grid τ.

    Parameters
    ----------
    grid : array_like, shape (N,)
        Strictly increasing finite grid points, N ≥ 2.

    Returns
    -------
    ndarray of float64, shape (N,)

    Raises
    ------
    TypeError
        If the grid is not numeric.
    ValueError
        If it is not 1-D, has fewer than 2 points, contains NaN/inf, or is not
        strictly increasing.
    """
    arr = np.asarray(grid)
    if arr.dtype.kind not in "fiu":
        raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}")
    arr = arr.astype(np.float64, copy=False)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    if arr.size < 2:
        raise ValueError(f"{name} must have N >= 2 points, got N = {arr.size}")
    if not np.all(np.isfinite(arr)):
        bad = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise ValueError(f"{name} contains NaN or inf (first at index {bad})")
    steps = np.diff(arr)
    if np.any(steps <= 0):
        bad = int(np.flatnonzero(steps <= 0)[0])
        raise ValueError(
            f"{name} must be strictly increasing; {name}[{bad}] = {arr[bad]!r} is not below "
            f"{name}[{bad + 1}] = {arr[bad + 1]!r}"
        )
    return arr


def equal_width_grid(
    low: float, high: float, n_points: int | None = None, *, psi: float | None = None
) -> NDArray[np.float64]:
    """Equally spaced grid for absolute precision: N points, or the multiples of ψ.

    Parameters
    ----------
    low, high : float
        Public bounds of the value domain, ``low < high`` (the paper takes
        τ_1 = min and τ_N = max of the domain).
    n_points : int, optional
        N ≥ 2 points from ``low`` to ``high`` inclusive. Powers of two use the
        dyadic tree fully (L = log2 N).
    psi : float, optional
        Instead of ``n_points``: the paper's τ = {t ∈ ψℤ : low ≤ t ≤ high}.

    Returns
    -------
    ndarray of float64, shape (N,)

    Raises
    ------
    ValueError
        If both or neither of ``n_points`` and ``psi`` are given, N < 2, ψ ≤ 0,
        ``low >= high``, or the ψ-grid has fewer than 2 points.

    References
    ----------
    .. [1] Barczewski, Mawass & Ramon (2025), §3.1: τ = {t ∈ ψℤ | min ≤ t ≤ max}.
    """
    lo, hi = _check_bounds(low, high)
    if (n_points is None) == (psi is None):
        raise ValueError("give exactly one of n_points and psi")
    if n_points is not None:
        return np.linspace(lo, hi, check_int_at_least(n_points, 2, name="n_points"))
    step = check_positive(psi, name="psi")
    z_lo = math.ceil(lo / step - 1e-12)
    z_hi = math.floor(hi / step + 1e-12)
    if z_hi - z_lo + 1 < 2:
        raise ValueError(
            f"grid psi*Z on [{lo}, {hi}] with psi = {step} has fewer than 2 points; use a smaller psi"
        )
    return step * np.arange(z_lo, z_hi + 1, dtype=np.float64)


def geometric_grid(low: float, high: float, psi: float) -> NDArray[np.float64]:
    """Geometric grid {e^{ψz} : z ∈ ℤ, low ≤ e^{ψz} ≤ high} for relative precision ψ.

    Parameters
    ----------
    low, high : float
        Public bounds, ``0 < low < high``.
    psi : float
        Log-spacing ψ > 0: consecutive points differ by the factor e^ψ.

    Returns
    -------
    ndarray of float64, shape (N,)

    Raises
    ------
    ValueError
        If ``low <= 0``, ``low >= high``, ψ ≤ 0, or the grid would have fewer
        than 2 points.

    References
    ----------
    .. [1] Barczewski, Mawass & Ramon (2025), §3.1: τ = {e^{ψz} | z ∈ ℤ, min ≤ e^{ψz} ≤ max}.
    """
    lo, hi = _check_bounds(low, high)
    step = check_positive(psi, name="psi")
    if lo <= 0:
        raise ValueError(f"geometric_grid needs low > 0, got low = {low!r}")
    z_lo = math.ceil(math.log(lo) / step - 1e-12)
    z_hi = math.floor(math.log(hi) / step + 1e-12)
    if z_hi - z_lo + 1 < 2:
        raise ValueError(
            f"geometric grid on [{lo}, {hi}] with psi = {step} has fewer than 2 points; "
            "use a smaller psi"
        )
    return np.exp(step * np.arange(z_lo, z_hi + 1, dtype=np.float64))


def _check_bounds(low: Any, high: Any) -> tuple[float, float]:
    try:
        lo, hi = float(low), float(high)
    except (TypeError, ValueError):
        raise TypeError(f"low and high must be numbers, got {low!r} and {high!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo >= hi:
        raise ValueError(f"need finite low < high, got low = {low!r}, high = {high!r}")
    return lo, hi
