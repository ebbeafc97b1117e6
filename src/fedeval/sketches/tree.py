"""One b-ary tree geometry for every hierarchical sketch.

Conventions (used by the score hierarchy, the ECDF noise tree and FedBBQ's
power-of-two merge alike):

* depth 0 is the root; depth ``height`` holds the leaves; node ``j`` at depth
  ``d`` covers the leaves ``[j·s, (j+1)·s)`` with span ``s = b^(height − d)``;
* a tree may store fewer than ``b^height`` leaves (``n_points``): only nodes
  covering at least one stored leaf exist, ``((n_points − 1) // s) + 1`` of them
  at depth d;
* flattened node ids run depth by depth from the root, left to right.

The root path of a leaf is one node per depth; the minimal set of nodes whose
union is a prefix ``[0, r)`` of the leaves takes at most ``b − 1`` nodes per
depth (the base-b digits of r).

References
----------
cormode-markov-2023-federated-calibration-evaluation §2.3 (levels 1..h, b = 2);
xu-cormode-2025-federated-roc-pr §3.2 (b-ary); barczewski-2025-dp-ecdf §3.1
(the dyadic tree over N grid points, eq. 2, Lemma 1).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

if TYPE_CHECKING:
    from scipy import sparse

from fedeval.validation import check_int_at_least

__all__ = ["Tree", "binary_height", "prefix_leaf_weights", "signed_cover_size", "sum_children"]


def sum_children(below: NDArray[Any], b: int, *, out: NDArray[Any] | None = None) -> NDArray[Any]:
    """Each parent's b children added: ``out[..., j] = Σ_i below[..., j·b + i]``.

    Strided adds of the b child views (one pass each) instead of ``sum`` over a
    length-b last axis, which numpy runs as one tiny reduction per parent (25×
    slower for b = 2). Below 8 children numpy's reduction also adds left to
    right, so float sums are bit-identical; from 8 on numpy adds pairwise, so
    wider nodes use the reduction itself.
    """
    v = below.reshape(*below.shape[:-1], -1, b)
    if out is None:
        out = np.empty(v.shape[:-1], dtype=below.dtype)
    if b >= 8:
        np.sum(v, axis=-1, out=out)
        return out
    np.add(v[..., 0], v[..., 1], out=out)
    for i in range(2, b):
        out += v[..., i]
    return out


def binary_height(n_points: int) -> int:
    """L = ceil(log2 N), the height of the binary tree over N ≥ 2 points."""
    n = check_int_at_least(n_points, 2, name="n_points")
    return (n - 1).bit_length()


@dataclass(frozen=True)
class Tree:
    """A b-ary tree of a given height over ``n_points`` stored leaves (default all b^height)."""

    branching: int
    height: int
    n_points: int | None = None

    def __post_init__(self) -> None:
        check_int_at_least(self.branching, 2, name="branching")
        check_int_at_least(self.height, 0, name="height")
        if self.n_points is not None:
            n = check_int_at_least(self.n_points, 1, name="n_points")
            if n > self.branching**self.height:
                raise ValueError(f"n_points = {n} exceeds the {self.n_leaves} leaf slots")

    # --------------------------------------------------------------- sizes
    @property
    def n_leaves(self) -> int:
        """Leaf slots, b^height."""
        return int(self.branching**self.height)

    @property
    def points(self) -> int:
        """Stored leaves."""
        return self.n_leaves if self.n_points is None else int(self.n_points)

    def span(self, depth: int) -> int:
        """Leaves under one node at ``depth``."""
        return int(self.branching ** (self.height - depth))

    def width(self, depth: int) -> int:
        """Stored nodes at ``depth``."""
        return (self.points - 1) // self.span(depth) + 1

    @property
    def n_nodes(self) -> int:
        """Stored nodes at all depths 0..height."""
        return sum(self.width(d) for d in range(self.height + 1))

    def depth_offsets(self) -> NDArray[np.int64]:
        """Flattened id of the first node of every depth, shape (height + 1,)."""
        widths = [self.width(d) for d in range(self.height + 1)]
        return np.concatenate(([0], np.cumsum(widths)[:-1])).astype(np.int64)

    # ------------------------------------------------------------- ancestry
    def ancestor(self, leaves: NDArray[np.int64], depth: int) -> NDArray[np.int64]:
        """Index at ``depth`` of the node holding each leaf."""
        return np.asarray(leaves, dtype=np.int64) // self.span(depth)

    def level_sums(self, leaf_values: NDArray[Any], depth: int) -> NDArray[Any]:
        """Node totals at ``depth`` from values over all leaf slots (last axis)."""
        v = np.asarray(leaf_values)
        return v.reshape(*v.shape[:-1], self.width(depth), -1).sum(axis=-1)

    def path_ids(self, leaves: ArrayLike) -> NDArray[np.int64]:
        """Flattened ids of the root path of each leaf, shape (len(leaves), height + 1)."""
        idx = np.asarray(leaves, dtype=np.int64)
        offsets = self.depth_offsets()
        spans = np.array([self.span(d) for d in range(self.height + 1)], dtype=np.int64)
        return offsets[None, :] + idx[:, None] // spans[None, :]

    def path_matrix(self, leaves: ArrayLike) -> sparse.csr_array:
        """The 0/1 matrix A with (A η)_r = Σ of η over the root path of ``leaves[r]``."""
        from scipy import sparse  # on first use: scipy.sparse costs ~0.1 s to import

        ids = self.path_ids(leaves)
        rows = np.repeat(np.arange(ids.shape[0]), ids.shape[1])
        data = np.ones(ids.size, dtype=np.float64)
        return sparse.csr_array((data, (rows, ids.ravel())), shape=(ids.shape[0], self.n_nodes))

    def path_sums(self, node_values: NDArray[Any], leaves: ArrayLike) -> NDArray[Any]:
        """Σ of ``node_values`` (flattened ids) over each leaf's root path."""
        out: NDArray[Any] = np.asarray(node_values)[self.path_ids(leaves)].sum(axis=1)
        return out

    # -------------------------------------------------------------- queries
    def prefix_cover(self, r: NDArray[np.int64], depth: int) -> tuple[NDArray[Any], NDArray[Any]]:
        """Node range [lo, hi) at ``depth`` ≥ 1 in the minimal cover of the leaves [0, r).

        Depth 1 has no parent in a rootless hierarchy, so its range always
        starts at node 0; at deeper levels it starts at the first child of the
        parent's cover end. Summing over depths 1..height covers exactly [0, r).
        """
        hi = r // self.span(depth)
        lo = (r // self.span(depth - 1)) * self.branching if depth > 1 else np.zeros_like(r)
        return lo, hi

    def minimal_node_weights(
        self, leaf_weights: NDArray[np.float64], depths: range | None = None
    ) -> list[NDArray[np.float64]]:
        """Node weights of leaf-weighted queries answered from the fewest nodes.

        A weight vector that is constant over a node's leaves uses that node;
        choosing the highest such nodes greedily (depths 1..height by default)
        is the minimal decomposition.
        """
        out = []
        remaining = np.asarray(leaf_weights, dtype=np.float64).copy()
        for d in depths if depths is not None else range(1, self.height + 1):
            blocks = remaining.reshape(remaining.shape[0], self.width(d), -1)
            const = np.all(blocks == blocks[:, :, :1], axis=2)
            weight = np.where(const, blocks[:, :, 0], 0.0)
            out.append(weight)
            remaining = (blocks - weight[:, :, None]).reshape(remaining.shape)
        return out


def prefix_leaf_weights(
    r: NDArray[np.int64], frac: NDArray[np.float64], n_leaves: int
) -> NDArray[np.float64]:
    """Leaf weights of "count below leaf edge r, plus frac of leaf r" queries, shape (m, n_leaves)."""
    idx = np.arange(n_leaves)
    w = (idx[None, :] < r[:, None]).astype(np.float64)
    inside = r < n_leaves
    w[np.flatnonzero(inside), r[inside]] = frac[inside]
    return w


def signed_cover_size(start: int, stop: int, height: int) -> int:
    """Fewest binary-tree nodes whose ±1-weighted sum is the indicator of leaves [start, stop].

    This is ‖χ‖₀ of Barczewski et al. (2025) Lemma 1, computed exactly by
    dynamic programming over the full tree of 2^height leaves: the number of
    noise variables that must shift to explain a change of the prefix counts
    on the closed interval [start, stop] (0-based, inclusive). Theorem 1 bounds
    it by L + 1 for any interval and Theorem 3 by ⌈(L + 1)/2⌉ for suffixes
    [start, 2^L − 1]; tests check both.
    """
    n_leaves = 1 << height
    if not 0 <= start <= stop < n_leaves:
        raise ValueError(f"need 0 <= start <= stop < 2^height = {n_leaves}, got [{start}, {stop}]")

    @functools.cache
    def uniform(level: int, gap: int) -> float:
        # Cheapest way to add ``gap`` to every leaf of a subtree whose leaves all
        # need the same change: depends only on the level and the gap.
        out = math.inf
        for c in (-1, 0, 1):
            rest = gap - c
            if level == 0:
                cost = abs(c) if rest == 0 else math.inf
            else:
                cost = abs(c) + 2 * uniform(level - 1, rest)
            out = min(out, cost)
        return out

    @functools.cache
    def best(level: int, j: int, acc: int) -> float:
        lo, hi = j << level, ((j + 1) << level) - 1
        if stop < lo or start > hi:
            return uniform(level, -acc)
        if start <= lo and hi <= stop:
            return uniform(level, 1 - acc)
        out = math.inf
        for c in (-1, 0, 1):
            s = acc + c
            if abs(s) > height + 1:
                continue
            out = min(out, abs(c) + best(level - 1, 2 * j, s) + best(level - 1, 2 * j + 1, s))
        return out

    return int(best(height, 0, 0))
