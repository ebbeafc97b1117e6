"""Private ECDF release: F̂(τ_k) = F(τ_k) + (1/n) Σ_l η_{k>>l, l} (Barczewski et al. 2025, eq. 2).

:func:`private_ecdf` is the central-model release; :mod:`fedeval.ecdf.federated`
and :mod:`fedeval.ecdf.secret_sharing` produce the same object from federated
data. :class:`PrivateECDF` is what every later step (smoothing, inverse, ROC,
Hosmer–Lemeshow) consumes; those steps are post-processing and cost no privacy.

References
----------
.. [1] J. Barczewski, A. Mawass and J. Ramon, "Differentially private empirical
   cumulative distribution functions", arXiv:2502.06651 (2025), §3.1, Theorem 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from fedeval.ecdf.grid import check_grid, tree_height
from fedeval.ecdf.tree import Neighbouring, NoiseKind, TreeMechanism
from fedeval.privacy.guarantee import Guarantee
from fedeval.privacy.ledger import BudgetLedger
from fedeval.randomness import RNGLike

if TYPE_CHECKING:
    from fedeval.ecdf.smoothing import Solver

__all__ = ["PrivateECDF", "empirical_cdf", "prefix_counts", "private_ecdf"]


@dataclass(frozen=True)
class PrivateECDF:
    """A released (possibly noisy, possibly smoothed) ECDF on a public grid.

    Calling it on thresholds t returns the step-function value at the largest
    grid point τ ≤ t (0 below the first point): the fraction of values ≤ t,
    plus noise. Raw releases are *not* clipped or made monotone; use
    :meth:`smoothed` for that (a named post-processing step).

    Attributes
    ----------
    grid : ndarray of float64, shape (B,)
        Grid points where the ECDF is known (all N points, or a subset B after
        smoothing).
    counts : ndarray of float64, shape (B,)
        Released counts n·F̂(τ) (noisy prefix counts).
    total : float
        The normaliser n (public number of values under replacement
        neighbouring; the released count at τ_N under add/remove).
    indices : ndarray of int64, shape (B,)
        0-based positions of ``grid`` in the tree's grid of ``n_tree_points``.
    n_tree_points : int
        N, the size of the grid the noise tree was built on.
    epsilon : float
        ε of the release (``math.inf`` for an exact, non-private ECDF).
    noise_scale : float
        Laplace scale of every tree node (0 without noise).
    count_variance : float
        Variance of each released count before any post-processing (0 without
        noise): (L + 1) node variances, 2(L + 1)³/ε² for Theorem 1's scale.
    guarantee : Guarantee or None
        The DP guarantee (None without noise).
    post_processing : tuple of str
        Named post-processing steps applied since the release.
    """

    grid: NDArray[np.float64]
    counts: NDArray[np.float64]
    total: float
    indices: NDArray[np.int64]
    n_tree_points: int
    epsilon: float
    noise_scale: float
    count_variance: float
    guarantee: Guarantee | None
    post_processing: tuple[str, ...] = field(default_factory=tuple)

    @property
    def height(self) -> int:
        """L = ceil(log2 N) of the noise tree."""
        return tree_height(self.n_tree_points)

    @property
    def values(self) -> NDArray[np.float64]:
        """F̂ at the grid points: ``counts / total``."""
        return self.counts / self.total

    @property
    def point_variance(self) -> float:
        """Variance of each released F̂(τ) before post-processing: count_variance/n²."""
        return self.count_variance / self.total**2

    @property
    def is_monotone(self) -> bool:
        """Whether the values are non-decreasing and inside [0, 1]."""
        v = self.values
        return bool(np.all(np.diff(v) >= 0) and v[0] >= 0 and v[-1] <= 1)

    def __call__(self, thresholds: ArrayLike) -> NDArray[np.float64]:
        """F̂(t) for each threshold t (step function; 0 below the first grid point)."""
        t = np.asarray(thresholds, dtype=np.float64)
        if not np.all(np.isfinite(t)):
            raise ValueError("thresholds must be finite")
        pos = np.searchsorted(self.grid, t, side="right") - 1
        vals = self.values
        out = np.where(pos >= 0, vals[np.maximum(pos, 0)], 0.0)
        return np.asarray(out, dtype=np.float64)

    def inverse(
        self,
        q: ArrayLike,
        *,
        precision: float | None = None,
        bounds: tuple[float, float] | None = None,
    ) -> NDArray[np.float64]:
        """Quantiles by binary search (Algorithm 1); see :func:`fedeval.ecdf.inverse_ecdf`."""
        from fedeval.ecdf.inverse import inverse_ecdf

        return inverse_ecdf(self, q, precision=precision, bounds=bounds)

    def smoothed(
        self,
        norm: Literal[1, 2] = 2,
        *,
        points: ArrayLike | None = None,
        solver: Solver | None = None,
    ) -> PrivateECDF:
        """Monotone smoothing (eq. 3); see :func:`fedeval.ecdf.smooth_ecdf`."""
        from fedeval.ecdf.smoothing import smooth_ecdf

        return smooth_ecdf(self, norm=norm, points=points, solver=solver)


def prefix_counts(values: ArrayLike, grid: ArrayLike) -> NDArray[np.int64]:
    """#{x ≤ τ_k} for every grid point (the U-statistics n·F(τ_k) of §4)."""
    v = np.asarray(values, dtype=np.float64)
    g = np.asarray(grid, dtype=np.float64)
    hist = np.bincount(np.searchsorted(g, v, side="left"), minlength=g.size + 1)
    return np.cumsum(hist[: g.size]).astype(np.int64)


def _check_values(values: Any) -> NDArray[np.float64]:
    arr = np.asarray(values)
    if arr.dtype.kind not in "fiub":
        raise TypeError(f"values must be numeric, got dtype {arr.dtype}")
    arr = arr.astype(np.float64, copy=False)
    if arr.ndim != 1:
        raise ValueError(f"values must be 1-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError("values must contain at least one value")
    if not np.all(np.isfinite(arr)):
        bad = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise ValueError(f"values contains NaN or inf (first at index {bad})")
    return arr


def empirical_cdf(values: ArrayLike, grid: ArrayLike) -> PrivateECDF:
    """The exact (non-private) ECDF on a grid, as a :class:`PrivateECDF` with ε = ∞.

    For reference and for the ``epsilon=None`` paths of the applications. It is
    *not* a private release.

    Raises
    ------
    ValueError, TypeError
        Bad values or grid (see :func:`private_ecdf`).
    """
    v = _check_values(values)
    g = check_grid(grid)
    return PrivateECDF(
        grid=g,
        counts=prefix_counts(v, g).astype(np.float64),
        total=float(v.size),
        indices=np.arange(g.size, dtype=np.int64),
        n_tree_points=int(g.size),
        epsilon=math.inf,
        noise_scale=0.0,
        count_variance=0.0,
        guarantee=None,
    )


def private_ecdf(
    values: ArrayLike,
    grid: ArrayLike,
    *,
    epsilon: float,
    rng: RNGLike = None,
    noise: NoiseKind = "laplace",
    neighbouring: Neighbouring = "replace",
    ledger: BudgetLedger | None = None,
) -> PrivateECDF:
    """ε-DP empirical CDF on a public grid by tree-structured Laplace noise.

    Parameters
    ----------
    values : array_like, shape (n,)
        The sensitive values ϕ(x_i), one per example.
    grid : array_like, shape (N,)
        Public, strictly increasing grid τ, N ≥ 2 (see
        :func:`equal_width_grid`, :func:`geometric_grid`). It should cover the
        values' domain: values above τ_N count at no grid point.
    epsilon : float
        ε > 0 for the whole function (all N points, any number of later
        evaluations, smoothing and inversions).
    rng : int, Generator or None
        Random source.
    noise : {"laplace", "discrete"}
        Continuous Laplace as in the paper, or discrete Laplace on integer
        counts (recommended for deployment).
    neighbouring : {"replace", "add_remove"}
        "replace" (paper, n public): scale (L + 1)/ε, Theorem 1, F̂ = counts/n.
        "add_remove": scale ⌈(L + 1)/2⌉/ε (Theorem 3's constant); n is not
        public, so F̂ is normalised by the released count at τ_N
        (post-processing; values above τ_N are then excluded).
    ledger : BudgetLedger, optional
        Charged ε before the result is returned.

    Returns
    -------
    PrivateECDF

    Raises
    ------
    ValueError, TypeError
        If values are empty/non-finite, the grid is not strictly increasing or
        has N < 2 points, or ε ≤ 0.
    fedeval.privacy.ledger.BudgetExceededError
        If the ledger cannot afford ε.

    Notes
    -----
    Privacy: ε-DP per example (Theorem 1; Theorem 3 for add/remove). Expected
    squared error of every count: 2(L + 1)·scale² = 2(L + 1)³/ε² under
    replacement.

    References
    ----------
    .. [1] Barczewski, Mawass & Ramon (2025), eq. (2), Theorem 1, Theorem 3.
    """
    v = _check_values(values)
    g = check_grid(grid)
    mech = TreeMechanism(epsilon, int(g.size), noise=noise, neighbouring=neighbouring)
    guarantee = mech.guarantee("example")
    if ledger is not None:
        ledger.charge(
            "private ECDF (tree mechanism)",
            mech.epsilon,
            unit="example",
            details={"n_points": mech.n_points, "height": mech.height, "scale": mech.noise_scale},
        )
    noisy = mech.release(prefix_counts(v, g), rng)
    steps: tuple[str, ...] = ()
    if neighbouring == "replace":
        total = float(v.size)
    else:
        total = max(float(noisy[-1]), 1.0)
        steps = ("normalised by the released count at the last grid point (floored at 1)",)
    return PrivateECDF(
        grid=g,
        counts=noisy,
        total=total,
        indices=np.arange(g.size, dtype=np.int64),
        n_tree_points=int(g.size),
        epsilon=mech.epsilon,
        noise_scale=mech.noise_scale,
        count_variance=mech.point_variance,
        guarantee=guarantee,
        post_processing=steps,
    )
