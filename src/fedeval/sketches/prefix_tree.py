"""Prefix counts on a public grid, released with tree-structured noise (Barczewski et al. 2025).

A client encodes, for every point τ_k of a public increasing grid, how many of
its examples lie at or below it (``side="at_most"``, the ECDF F(τ_k) = P(X ≤ τ_k))
or strictly below it (``side="below"``, what the ROC rule "score ≥ t" needs).
The encoding is linear in the examples.

The noise does not live on the counts: every node of the dyadic tree over the
N grid points (:class:`~fedeval.sketches.tree.Tree`, binary, height
L = ⌈log₂ N⌉) gets one independent noise variable, and the released count at
τ_k is the true count plus the sum of the noise on k's root path (eq. 2). One
example changes the count vector on an interval of points (replacement) or a
suffix (add/remove), which Lemma 1 writes as a signed sum of at most L + 1
tree nodes (Theorem 1), or ⌈(L + 1)/2⌉ for a suffix (Theorem 3): that is the
sensitivity in node space this sketch declares.

References
----------
.. [1] J. Barczewski, A. Mawass and J. Ramon, "Differentially private empirical
   cumulative distribution functions", arXiv:2502.06651 (2025): eq. (2),
   Lemma 1, Theorem 1, Theorem 3.
.. [2] T.-H. H. Chan, E. Shi and D. Song, "Private and continual release of
   statistics", ACM TISSEC 14(3) 2011 (the binary tree mechanism).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from fedeval.privacy.guarantee import Guarantee, Neighbouring, PrivacyUnit
from fedeval.privacy.receipt import Receipt
from fedeval.privacy.sensitivity import Layout, Part, Sensitivity
from fedeval.sketches.base import Sketch
from fedeval.sketches.tree import Tree, binary_height

if TYPE_CHECKING:
    from fedeval.aggregation.release import Release

__all__ = ["CountSide", "DecodedECDF", "PrefixTreeSketch", "count_at_most", "count_below"]

EXACT_ECDF = Receipt("none", Guarantee.none("the exact ECDF: not a private release"))

CountSide = Literal["at_most", "below"]


def count_at_most(values: NDArray[np.float64], points: NDArray[np.float64]) -> NDArray[np.int64]:
    """#{x ≤ τ_k} for every point (the U-statistics n·F(τ_k) of Barczewski et al. §4)."""
    pos = np.searchsorted(points, values, side="left")
    return np.cumsum(np.bincount(pos, minlength=points.size + 1)[: points.size]).astype(np.int64)


def count_below(values: NDArray[np.float64], points: NDArray[np.float64]) -> NDArray[np.int64]:
    """#{x < τ_k} for every point."""
    pos = np.searchsorted(points, values, side="right")
    return np.cumsum(np.bincount(pos, minlength=points.size + 1)[: points.size]).astype(np.int64)


@dataclass(frozen=True)
class DecodedECDF:
    """A released (possibly noisy, possibly smoothed) ECDF on a public grid.

    What :meth:`PrefixTreeSketch.decode` returns. Calling it on thresholds t
    returns the step-function value at the largest grid point τ ≤ t (0 below
    the first point): the fraction of values ≤ t, plus noise. Raw releases are
    *not* clipped or made monotone. Post-processing is not the sketch's
    business (DESIGN.md): monotone smoothing is
    :func:`fedeval.postprocess.smoothing.smooth_ecdf` and the inverse is
    :func:`fedeval.ecdf.inverse.inverse_ecdf`, both offered as methods by
    :class:`fedeval.ecdf.PrivateECDF`, the same estimate as the ``ecdf``
    layer hands it out.

    Attributes
    ----------
    grid : ndarray of float64, shape (B,)
        Grid points where the ECDF is known (all N points, or a subset B).
    counts : ndarray of float64, shape (B,)
        Released counts n·F̂(τ) (noisy prefix counts).
    total : float
        The normaliser n (public number of values under replacement
        neighbouring; the released count at τ_N under add/remove).
    indices : ndarray of int64, shape (B,)
        0-based positions of ``grid`` in the tree's grid of ``n_tree_points``.
    n_tree_points : int
        N, the size of the grid the noise tree was built on.
    count_variance : float
        Variance of each released count before any post-processing (0 without
        noise): L + 1 node variances, about 2(L + 1)³/ε² for Theorem 1's scale.
    receipt : Receipt
        Guarantee, ledger entries and mechanism of the release.
    post_processing : tuple of str
        Named post-processing steps applied since the release.
    """

    grid: NDArray[np.float64]
    counts: NDArray[np.float64]
    total: float
    indices: NDArray[np.int64]
    n_tree_points: int
    count_variance: float
    receipt: Receipt = field(default_factory=lambda: EXACT_ECDF)
    post_processing: tuple[str, ...] = field(default_factory=tuple)

    @property
    def guarantee(self) -> Guarantee:
        return self.receipt.guarantee

    @property
    def epsilon(self) -> float:
        """ε of the release (``math.inf`` for an exact, non-private ECDF)."""
        return self.guarantee.epsilon

    @property
    def noise_scale(self) -> float:
        """Scale (nodes touched / ε) of every tree node's noise; 0 without noise."""
        if not self.guarantee.is_private:
            return 0.0
        return float(self.receipt.sensitivity.get("l1", 0.0)) / self.guarantee.epsilon

    @property
    def height(self) -> int:
        """L = ceil(log2 N) of the noise tree."""
        return binary_height(self.n_tree_points)

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


@dataclass(frozen=True, eq=False)
class PrefixTreeSketch(Sketch):
    """Counts at or below (or below) every grid point, with tree-structured noise.

    Parameters
    ----------
    points : ndarray, shape (N,)
        The public, strictly increasing grid τ, N ≥ 2 (may end with ``inf``).
    side : {"at_most", "below"}
    cls : int, optional
        Count only the examples of this class (class-conditional ECDFs).
    positions : ndarray of int, optional
        Release the counts at these grid positions only (default: all N). The
        noise tree is always the one over all N points.
    total : float, optional
        The public number of examples, used to normalise (replacement
        neighbouring makes it public); without it the released count at the
        last point normalises.
    """

    points: NDArray[np.float64]
    side: CountSide = "at_most"
    cls: int | None = None
    positions: NDArray[np.int64] | None = field(default=None)
    total: float | None = None
    name = "ECDF prefix tree"

    def __post_init__(self) -> None:
        if self.side not in ("at_most", "below"):
            raise ValueError(f"side must be 'at_most' or 'below', got {self.side!r}")
        if self.positions is None:
            object.__setattr__(self, "positions", np.arange(self.points.size, dtype=np.int64))

    @property
    def public_inputs(self) -> tuple[str, ...]:
        base = ("the grid",)
        return (*base, "the number of examples") if self.total is not None else base

    @property
    def tree(self) -> Tree:
        n = int(self.points.size)
        return Tree(2, binary_height(n), n_points=n)

    @property
    def released(self) -> NDArray[np.int64]:
        assert self.positions is not None
        return self.positions

    @property
    def parts(self) -> tuple[Part, ...]:
        return (Part("prefix counts", int(self.released.size)),)

    @property
    def noise_size(self) -> int:
        return self.tree.n_nodes

    def noise_to_values(self, noise: NDArray[np.floating]) -> NDArray[np.floating]:
        return self.tree.path_sums(noise, self.released)

    def noise_to_variance(self, variance: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(self.tree.path_sums(variance, self.released), dtype=np.float64)

    def at(self, positions: NDArray[np.int64]) -> PrefixTreeSketch:
        """The same sketch released at other grid positions."""
        return PrefixTreeSketch(self.points, self.side, self.cls, positions, self.total)

    def nodes_touched(self, neighbouring: Neighbouring) -> int:
        """‖χ‖₀ bound of Lemma 1: L + 1 (Theorem 1) or ⌈(L + 1)/2⌉ for a suffix (Theorem 3)."""
        full = self.tree.height + 1
        return full if neighbouring == "replace" else (full + 1) // 2

    def sensitivity(
        self,
        *,
        unit: PrivacyUnit,
        neighbouring: Neighbouring,
        examples_per_unit: int,
        layout: Layout,
    ) -> Sensitivity:
        """In node space: L + 1 nodes shift by 1 (replace), ⌈(L + 1)/2⌉ (add/remove), per example."""
        if unit not in ("example", "client"):
            raise ValueError(f"the ECDF prefix tree protects examples or clients, not {unit!r}")
        nodes = self.nodes_touched(neighbouring)
        b = int(examples_per_unit)
        thm = "Theorem 1" if neighbouring == "replace" else "Theorem 3"
        what = "an interval" if neighbouring == "replace" else "a suffix"
        return Sensitivity(
            unit,
            neighbouring,
            float(nodes * b),
            math.sqrt(nodes) * b,
            (Part("prefix counts", int(self.released.size), 1.0, float(nodes * b)),),
            basis_size=self.tree.n_nodes,
            examples_per_unit=b,
            derivation=(
                f"one example changes the counts on {what} of the N = {self.points.size} grid "
                f"points, a signed sum of at most {nodes} of the tree's nodes (Barczewski et al. "
                f"2025, Lemma 1, {thm}; height L = {self.tree.height})"
            ),
        )

    def encode(
        self,
        scores: NDArray[np.float64],
        labels: NDArray[np.int64],
        clients: NDArray[np.int64],
    ) -> NDArray[np.int64]:
        values = scores if self.cls is None else scores[labels == self.cls]
        counts = (count_at_most if self.side == "at_most" else count_below)(values, self.points)
        return counts[self.released]

    def decode(self, release: Release) -> DecodedECDF:
        counts = np.asarray(release.values, dtype=np.float64)
        steps: tuple[str, ...] = ()
        if self.total is not None:
            total = float(self.total)
        else:
            if self.released.size == 0 or int(self.released[-1]) != self.points.size - 1:
                raise ValueError(
                    "without a public total the ECDF is normalised by the released count at the "
                    "last grid point; release that point too (then select the positions wanted)"
                )
            total = max(float(counts[-1]), 1.0)
            steps = ("normalised by the released count at the last grid point (floored at 1)",)
        variance = float(np.max(release.variance)) if release.variance.size else 0.0
        return DecodedECDF(
            grid=self.points[self.released],
            counts=counts,
            total=total,
            indices=np.asarray(self.released, dtype=np.int64),
            n_tree_points=int(self.points.size),
            count_variance=variance,
            receipt=release.receipt,
            post_processing=steps,
        )
