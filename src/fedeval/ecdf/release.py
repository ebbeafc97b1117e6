"""Private ECDF release: F̂(τ_k) = F(τ_k) + (1/n) Σ_l η_{k>>l, l} (Barczewski et al. 2025, eq. 2).

:func:`private_ecdf` releases the ECDF of values held one per client (the
central setting of the paper's §3) through the one pipeline: the
:class:`~fedeval.sketches.prefix_tree.PrefixTreeSketch` declares the tree
sensitivity and :func:`fedeval.aggregation.release` draws the tree noise under
the privacy model given. :mod:`fedeval.ecdf.federated` and
:mod:`fedeval.ecdf.secret_sharing` produce the same object from federated data.
:class:`PrivateECDF` is what every later step (smoothing, inverse, ROC,
Hosmer–Lemeshow) consumes; those steps are post-processing and cost no privacy.

References
----------
.. [1] J. Barczewski, A. Mawass and J. Ramon, "Differentially private empirical
   cumulative distribution functions", arXiv:2502.06651 (2025), §3.1, Theorem 1.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from fedeval.aggregation import Path, release
from fedeval.data import Federation
from fedeval.ecdf.grid import check_grid
from fedeval.ecdf.inverse import inverse_ecdf
from fedeval.postprocess.smoothing import Solver, smooth_ecdf
from fedeval.privacy.guarantee import Neighbouring
from fedeval.privacy.ledger import BudgetLedger
from fedeval.privacy.models import DistributedDP, PrivacyModel
from fedeval.randomness import RNGLike
from fedeval.sketches.prefix_tree import DecodedECDF, PrefixTreeSketch, count_at_most

__all__ = [
    "PrivateECDF",
    "check_values",
    "ecdf_model",
    "empirical_cdf",
    "private_ecdf",
    "public_total",
    "values_federation",
]


@dataclass(frozen=True)
class PrivateECDF(DecodedECDF):
    """A released (possibly noisy, possibly smoothed) ECDF on a public grid.

    The decoded estimate of :class:`~fedeval.sketches.prefix_tree.PrefixTreeSketch`
    (same fields: see :class:`~fedeval.sketches.prefix_tree.DecodedECDF`), with
    its post-processing steps as methods. They live here, not on the sketch's
    estimate, because DESIGN.md has the layer above the sketch call
    post-processing (:mod:`fedeval.postprocess`), never the sketch itself.
    """

    @classmethod
    def of(cls, decoded: DecodedECDF) -> PrivateECDF:
        """The same estimate, with its post-processing methods."""
        return cls(**{f.name: getattr(decoded, f.name) for f in fields(decoded)})

    def inverse(
        self,
        q: ArrayLike,
        *,
        precision: float | None = None,
        bounds: tuple[float, float] | None = None,
    ) -> NDArray[np.float64]:
        """Quantiles by binary search (Algorithm 1); see :func:`fedeval.ecdf.inverse_ecdf`."""
        return inverse_ecdf(self, q, precision=precision, bounds=bounds)

    def smoothed(
        self,
        norm: Literal[1, 2] = 2,
        *,
        points: ArrayLike | None = None,
        solver: Solver | None = None,
    ) -> PrivateECDF:
        """Monotone smoothing (eq. 3); see :func:`fedeval.ecdf.smooth_ecdf`."""
        return smooth_ecdf(self, norm=norm, points=points, solver=solver)


def check_values(values: Any) -> NDArray[np.float64]:
    """A non-empty 1-D array of finite values."""
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


def values_federation(
    values: NDArray[np.float64], grid: NDArray[np.float64], labels: Any = None
) -> Federation:
    """Values held one per client, as a federation (the paper's central setting)."""
    lo = min(float(values.min()), float(grid[0]))
    hi = max(float(values.max()), float(grid[-1]))
    if lo == hi:
        hi = lo + 1.0
    y = np.zeros(values.size, dtype=np.int64) if labels is None else labels
    return Federation.from_arrays(values, y, None, score_range=(lo, hi))


def ecdf_model(
    privacy: PrivacyModel | None, epsilon: float | None, neighbouring: Neighbouring
) -> PrivacyModel:
    """The model of an ECDF release; ``epsilon=`` is sugar for distributed discrete Laplace.

    Raises
    ------
    TypeError
        Neither or both of ``privacy`` and ``epsilon`` given.
    """
    if (privacy is None) == (epsilon is None):
        raise TypeError("give exactly one of privacy (a privacy model) and epsilon")
    if privacy is not None:
        return privacy
    assert epsilon is not None
    return DistributedDP(epsilon, neighbouring=neighbouring)


def public_total(model: PrivacyModel, n_examples: int) -> float | None:
    """The normaliser n of an ECDF release when the privacy model makes it public, else None.

    n is public without DP (secure aggregation) and under replacement of one
    *example* with every example kept (Theorem 1: neighbouring datasets have the
    same size). Under add/remove (Theorem 3), or when clients are subsampled to
    a contribution bound (client-level units), the count of the examples that
    enter the sum is private, and the release is normalised by its own noisy
    count at the last grid point instead.
    """
    return float(n_examples) if model.example_count_public else None


def empirical_cdf(values: ArrayLike, grid: ArrayLike) -> PrivateECDF:
    """The exact (non-private) ECDF on a grid, as a :class:`PrivateECDF` without noise.

    For reference and for the non-private paths of the applications. It is
    *not* a private release.

    Raises
    ------
    ValueError, TypeError
        Bad values or grid (see :func:`private_ecdf`).
    """
    v = check_values(values)
    g = check_grid(grid)
    return PrivateECDF(
        grid=g,
        counts=count_at_most(v, g).astype(np.float64),
        total=float(v.size),
        indices=np.arange(g.size, dtype=np.int64),
        n_tree_points=int(g.size),
        count_variance=0.0,
    )


def private_ecdf(
    values: ArrayLike,
    grid: ArrayLike,
    privacy: PrivacyModel | None = None,
    *,
    epsilon: float | None = None,
    neighbouring: Neighbouring = "replace",
    rng: RNGLike = None,
    path: Path = "fast",
    ledger: BudgetLedger | None = None,
) -> PrivateECDF:
    """DP empirical CDF on a public grid by tree-structured noise (Barczewski et al. §3.1).

    Parameters
    ----------
    values : array_like, shape (n,)
        The sensitive values ϕ(x_i), one per example (each held by its own client).
    grid : array_like, shape (N,)
        Public, strictly increasing grid τ, N ≥ 2 (see
        :func:`equal_width_grid`, :func:`geometric_grid`). It should cover the
        values' domain: values above τ_N count at no grid point.
    privacy : privacy model, optional
        How the release is protected, e.g. ``DistributedDP(1.0,
        neighbouring="replace")`` (discrete Laplace node noise from Pólya
        shares). Its neighbouring relation picks Theorem 1 ("replace": n
        public, scale (L + 1)/ε, F̂ = counts/n) or Theorem 3 ("add_remove":
        scale ⌈(L + 1)/2⌉/ε, F̂ normalised by the released count at τ_N;
        also whenever clients are subsampled to a contribution bound, see
        :func:`public_total`).
    epsilon : float, optional
        Sugar for ``DistributedDP(epsilon, neighbouring=neighbouring)``.
    neighbouring : {"replace", "add_remove"}
        Only with ``epsilon``.
    rng : int, Generator or None
    path : {"fast", "faithful"}
    ledger : BudgetLedger, optional
        Charged before the result is returned.

    Returns
    -------
    PrivateECDF

    Raises
    ------
    ValueError, TypeError
        If values are empty/non-finite, the grid is not strictly increasing or
        has N < 2 points, or the privacy arguments are inconsistent.
    fedeval.privacy.ledger.BudgetExceededError
        If the ledger cannot afford the release.

    Notes
    -----
    Public inputs: the grid; the number of values only under replacement of
    one example (Theorem 1; otherwise the release is normalised by its own
    noisy count); each value is simulated as its own client, so the number of
    clients is not stated anywhere in the result.

    Privacy: as the model states, per example (Theorem 1; Theorem 3 for
    add/remove); every later evaluation, smoothing and inversion is
    post-processing. Expected squared error of every count ≈ 2(L + 1)·scale²
    = 2(L + 1)³/ε² under replacement.

    References
    ----------
    .. [1] Barczewski, Mawass & Ramon (2025), eq. (2), Theorem 1, Theorem 3.
    """
    v = check_values(values)
    g = check_grid(grid)
    model = ecdf_model(privacy, epsilon, neighbouring)
    total = public_total(model, v.size)
    sketch = PrefixTreeSketch(g, "at_most", total=total)
    rel = release(values_federation(v, g), sketch, model, path=path, rng=rng, ledger=ledger)
    return PrivateECDF.of(rel.decode())
