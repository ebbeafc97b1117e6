"""Inverse ECDF by binary search (Barczewski et al. 2025, §4.3, Algorithm 1).

Post-processing: only evaluations of an already released ECDF are used, so any
number of quantiles costs no extra privacy. On a raw (non-monotone) release the
search still terminates and returns a point where the noisy ECDF crosses q
(the paper observes this barely affects accuracy, §6.4); on a smoothed ECDF it
returns the usual generalised inverse inf{t : F́(t) ≥ q} to within ψ.

References
----------
.. [1] J. Barczewski, A. Mawass and J. Ramon, "Differentially private empirical
   cumulative distribution functions", arXiv:2502.06651 (2025), Algorithm 1.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from fedeval.sketches.prefix_tree import DecodedECDF
from fedeval.validation import check_positive

__all__ = ["inverse_ecdf"]


def inverse_ecdf(
    ecdf: DecodedECDF,
    q: ArrayLike,
    *,
    precision: float | None = None,
    bounds: tuple[float, float] | None = None,
) -> NDArray[np.float64]:
    """Quantiles F̂⁻¹(q) by bisection with precision ψ (Algorithm 1).

    Parameters
    ----------
    ecdf : DecodedECDF or PrivateECDF
        Raw or smoothed release.
    q : array_like
        Quantile levels in [0, 1] (any shape).
    precision : float, optional
        ψ > 0: bisection stops once the bracket is at most ψ wide, so the
        answer is within ψ/2 of a crossing point. Default: the smallest grid
        spacing (finer is pointless on a step function).
    bounds : (float, float), optional
        Initial bracket [a, b]; default (τ_1, τ_N). Algorithm 1 uses [0, 1]
        for probabilities.

    Returns
    -------
    ndarray of float64, same shape as ``q``

    Raises
    ------
    ValueError
        If any q is outside [0, 1] or NaN, ψ ≤ 0, or the bounds are not a < b.

    Notes
    -----
    Privacy: post-processing of ``ecdf``; no budget is charged.

    References
    ----------
    .. [1] Barczewski, Mawass & Ramon (2025), Algorithm 1.
    """
    qs = np.asarray(q, dtype=np.float64)
    bad = ~((qs >= 0) & (qs <= 1))
    if np.any(bad):
        first = qs[bad].ravel()[0]
        raise ValueError(f"quantile levels q must lie in [0, 1], got {first!r}")
    if bounds is None:
        lo, hi = float(ecdf.grid[0]), float(ecdf.grid[-1])
    else:
        lo, hi = float(bounds[0]), float(bounds[1])
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise ValueError(f"bounds must be finite with a < b, got {bounds!r}")
    if precision is None:
        psi = float(np.min(np.diff(ecdf.grid))) if ecdf.grid.size > 1 else hi - lo
    else:
        psi = check_positive(precision, name="precision")
    n_steps = max(0, math.ceil(math.log2((hi - lo) / psi))) if hi - lo > psi else 0
    a = np.full(qs.shape, lo)
    b = np.full(qs.shape, hi)
    for _ in range(n_steps):
        m = 0.5 * (a + b)
        below = ecdf(m) < qs
        a = np.where(below, m, a)
        b = np.where(below, b, m)
    return np.asarray(0.5 * (a + b), dtype=np.float64)
