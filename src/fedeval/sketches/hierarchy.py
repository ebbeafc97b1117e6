"""b-ary hierarchical histograms of scores, per class: the encoder and decoder.

Geometry
--------
The public score domain ``[lo, hi]`` is cut, at level ``k = 1..h``, into ``b^k``
equal-width nodes (Cormode–Markov §2.3 with b = 2; Xu–Cormode §3.2 with general
branching b); level k is depth k of :class:`~fedeval.sketches.tree.Tree`. Leaves
are level h. Each example falls in exactly one node per level. There is no
root node (the papers' levels start at 1); totals are sums of level 1. A flat
histogram of B bins is the special case ``height=1, branching=B``.

Encoding
--------
A client's vector holds, level by level (then class, then node), the counts of
its examples: one per level. It is linear in the examples and one-hot per level,
so the hierarchy can be released under every model:

* exact sums (secure aggregation): only the leaves are sent
  (:meth:`HierarchySketch.exact_variant`); upper levels are their sums;
* distributed DP, every client sending every level (layout "whole"): the budget
  is split evenly over the h levels, the papers' default;
* distributed DP with clients assigned to one level each (layout "assign"), and
  local DP (always assigned): parallel composition, each level gets the full
  budget and is scaled to all clients by M/m_k after the release.

Decoding gives a :class:`~fedeval.sketches.hierarchical_histogram.HierarchicalHistogram`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property, partial
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray

from fedeval.privacy.guarantee import Neighbouring, PrivacyUnit
from fedeval.privacy.sensitivity import Layout, Part, Sensitivity, one_cell_per_part
from fedeval.sketches.base import BatchEncoding, Sketch
from fedeval.sketches.grid import UniformGrid, bin_keys, chunked_bincount, count_bins
from fedeval.sketches.hierarchical_histogram import HierarchicalHistogram
from fedeval.sketches.tree import Tree, sum_children
from fedeval.validation import check_int_at_least

if TYPE_CHECKING:
    from fedeval.aggregation.release import Release

__all__ = ["HierarchySketch", "HierarchySpec", "LevelBudget", "layout_of"]

LevelBudget = Literal["split", "assign"]
"""How a distributed-DP hierarchy spends its budget over the levels: "split"
(every client reports every level, ε/h per level) or "assign" (each client one
level, full ε, parallel composition)."""

# Above this many leaves the dense per-level arrays stop being "small summaries".
_MAX_LEAVES = 1 << 24


def layout_of(level_budget: LevelBudget) -> Layout:
    """The release layout of a level-budget strategy ("split" → "whole")."""
    if level_budget not in ("split", "assign"):
        raise ValueError(f"level_budget must be 'split' or 'assign', got {level_budget!r}")
    return "whole" if level_budget == "split" else "assign"


@dataclass(frozen=True)
class HierarchySpec:
    """Shape of a hierarchy: height h, branching b, score domain, number of classes."""

    height: int
    branching: int = 2
    score_range: tuple[float, float] = (0.0, 1.0)
    n_classes: int = 2

    def __post_init__(self) -> None:
        check_int_at_least(self.height, 1, name="height")
        check_int_at_least(self.branching, 2, name="branching")
        check_int_at_least(self.n_classes, 1, name="n_classes")
        if self.branching**self.height > _MAX_LEAVES:
            raise ValueError(
                f"branching**height = {self.branching}**{self.height} leaves is too many "
                f"(limit {_MAX_LEAVES}); lower the height"
            )
        UniformGrid(1, self.score_range)  # validates the range

    @property
    def tree(self) -> Tree:
        return Tree(self.branching, self.height)

    @property
    def n_leaves(self) -> int:
        return int(self.branching**self.height)

    @cached_property
    def grid(self) -> UniformGrid:
        """The leaf grid (frozen; built once per spec: every threshold query asks for it)."""
        return UniformGrid(self.n_leaves, self.score_range)

    @property
    def leaf_width(self) -> float:
        return self.grid.width

    def level_size(self, level: int) -> int:
        """Nodes per class at ``level`` (1..h)."""
        return int(self.branching**level)

    @property
    def nodes_per_class(self) -> int:
        return sum(self.level_size(k) for k in range(1, self.height + 1))

    @property
    def vector_length(self) -> int:
        """Length of a client's all-levels vector (every class, every level)."""
        return self.n_classes * self.nodes_per_class

    def levels_from_leaves(self, leaves: NDArray[Any]) -> list[NDArray[Any]]:
        """Exact level counts, shape (C, b^k) for k = 1..h, from leaf counts (C, b^h).

        Bottom-up (each level sums the b children of the level below), so the
        cost is O(b^h), not O(h · b^h).
        """
        b = self.branching
        out = [np.asarray(leaves)]
        for _ in range(self.height - 1):
            below = out[-1]
            out.append(sum_children(below, b))
        return out[::-1]

    def _flatten_from_leaves(self, leaves: NDArray[np.int64]) -> NDArray[np.int64]:
        """``flatten(levels_from_leaves(leaves))`` written level by level into one vector."""
        c, b = self.n_classes, self.branching
        out = np.empty(self.vector_length, dtype=np.int64)
        stop = out.size
        start = stop - leaves.size
        out[start:stop] = leaves.ravel()
        for k in range(self.height - 1, 0, -1):
            below = out[start:stop].reshape(c, -1)
            stop, start = start, start - c * self.level_size(k)
            sum_children(below, b, out=out[start:stop].reshape(c, -1))
        return out

    def flatten(self, levels: list[NDArray[Any]]) -> NDArray[Any]:
        """Levels → one vector, level-major, then class, then node."""
        return np.concatenate([lv.ravel() for lv in levels])

    def unflatten(self, vector: NDArray[Any]) -> list[NDArray[Any]]:
        """Inverse of :meth:`flatten`."""
        out, start = [], 0
        for k in range(1, self.height + 1):
            size = self.n_classes * self.level_size(k)
            out.append(vector[start : start + size].reshape(self.n_classes, -1))
            start += size
        return out

    def encode_levels(
        self,
        scores: NDArray[np.float64],
        labels: NDArray[np.int64],
        level_of_example: NDArray[np.int64] | None = None,
    ) -> NDArray[np.int64]:
        """The all-levels count vector of some examples (a client's, or everyone's).

        With ``level_of_example`` (0-based: 0 is level 1) each example is
        counted only at its level; otherwise at every level.
        """
        if level_of_example is None:
            leaves = count_bins(self.grid, scores, labels, self.n_classes)[0]
            return self._flatten_from_leaves(leaves)
        return self._encode_assigned_levels(scores, labels, level_of_example)

    def _encode_assigned_levels(
        self,
        scores: NDArray[np.float64],
        labels: NDArray[np.int64],
        level_of_example: NDArray[np.int64],
    ) -> NDArray[np.int64]:
        """One bincount over the combined (level, class, node) key: O(n + vector length).

        The key of an example at level k (0-based g = k − 1) is
        ``start[g] + label · b^k + leaf // b^(h − k)``, its coordinate in the
        flattened level-major vector.
        """
        h, b, c = self.height, self.branching, self.n_classes
        sizes = np.array([self.level_size(k) for k in range(1, h + 1)], dtype=np.int64)
        start = np.concatenate(([0], np.cumsum(c * sizes)[:-1])).astype(np.int64)
        divisor = np.array([b ** (h - k) for k in range(1, h + 1)], dtype=np.int64)
        # b a power of two: the ancestor is a shift (cheaper than an integer division)
        power_of_two = b & (b - 1) == 0
        shift = np.array([(b.bit_length() - 1) * (h - k) for k in range(1, h + 1)], np.int64)
        grid = self.grid

        def keys(lo: int, hi: int, key: NDArray[np.int64], tmp: NDArray[np.int64]) -> None:
            bin_keys(grid, scores[lo:hi], out=key)
            g = level_of_example[lo:hi]
            if power_of_two:
                np.right_shift(key, shift[g], out=key)
            else:
                np.floor_divide(key, divisor[g], out=key)
            np.multiply(labels[lo:hi], sizes[g], out=tmp, casting="unsafe")
            key += tmp
            key += start[g]

        return chunked_bincount(scores.shape[0], self.vector_length, keys)


@dataclass(frozen=True)
class HierarchySketch(Sketch):
    """Per-class hierarchical score histogram (see the module docstring).

    Parameters
    ----------
    spec : HierarchySpec
    leaves_only : bool
        Encode the leaves only (for exact sums; upper levels are decoded as sums).
    """

    spec: HierarchySpec
    leaves_only: bool = False
    name = "hierarchy"
    one_hot = True
    reads_clients = False

    @property
    def public_inputs(self) -> tuple[str, ...]:
        return ("the score domain", "the hierarchy's height and branching")

    @property
    def parts(self) -> tuple[Part, ...]:
        s = self.spec
        if self.leaves_only:
            return (Part("leaves", s.n_classes * s.n_leaves),)
        h = s.height
        return tuple(
            Part(f"level {k}", s.n_classes * s.level_size(k), 1.0 / h) for k in range(1, h + 1)
        )

    def sensitivity(
        self,
        *,
        unit: PrivacyUnit,
        neighbouring: Neighbouring,
        examples_per_unit: int,
        layout: Layout,
    ) -> Sensitivity:
        """One example adds 1 to one node of every level.

        Per level, add/remove of B examples changes the counts by L1 = B (all B
        in one node: L2 = B); replacing them moves B examples, L1 = 2B,
        L2 = √2·B; a changed label moves one example between the classes'
        nodes, L1 = 2, L2 = √2. Every client reporting every level adds these
        over the h levels (L1 × h, L2 × √h); a client assigned to one level
        changes one level only.
        """
        if unit == "none":
            raise ValueError("a sensitivity needs a privacy unit")
        h = self.spec.height
        b = int(examples_per_unit)
        if unit == "label":
            l1, l2, what = 2.0, math.sqrt(2.0), "a changed label moves one example between classes"
        elif neighbouring == "replace":
            l1, l2 = 2.0 * b, math.sqrt(2.0) * b
            what = f"replacing {b} example(s) moves them to other nodes"
        else:
            l1, l2 = float(b), float(b)
            what = f"adding or removing {b} example(s) changes one node by {b}"
        parts: tuple[Part, ...]
        if self.leaves_only:
            parts = (Part("leaves", self.length, 1.0, l1, l2),)
            return Sensitivity(
                unit,
                neighbouring,
                l1,
                l2,
                parts,
                examples_per_unit=b,
                derivation=f"{what} among the leaves: L1 = {l1:g}",
            )
        return one_cell_per_part(
            self.parts,
            unit=unit,
            neighbouring=neighbouring,
            l1=l1,
            l2=l2,
            layout=layout,
            examples_per_unit=b,
            what=f"{what} (height {h})",
            noun="level",
        )

    # ---------------------------------------------------------------- encode
    def batch_encoding(self) -> BatchEncoding | None:
        """Streamed: every batch counts its leaves only; the levels are summed up once.

        Exact (integer sums of the leaves), and a batch's vector is the leaves,
        about half the all-levels vector, with no per-batch summing up the tree.
        """
        if self.leaves_only:
            return None
        s = self.spec
        return BatchEncoding(
            partial(_count_leaves, s.grid, s.n_classes),
            s.n_classes * s.grid.n_bins,
            lambda leaves: s._flatten_from_leaves(leaves.reshape(s.n_classes, -1)),
        )

    def encode(
        self,
        scores: NDArray[np.float64],
        labels: NDArray[np.int64],
        clients: NDArray[np.int64],
    ) -> NDArray[np.int64]:
        s = self.spec
        if self.leaves_only:
            return count_bins(s.grid, scores, labels, s.n_classes)[0].ravel()
        return s.encode_levels(scores, labels)

    def encode_assigned(
        self,
        scores: NDArray[np.float64],
        labels: NDArray[np.int64],
        clients: NDArray[np.int64],
        part_of_example: NDArray[np.int64],
    ) -> NDArray[np.int64]:
        if self.leaves_only:
            return self.encode(scores, labels, clients)
        return self.spec.encode_levels(scores, labels, part_of_example)

    def items(
        self,
        scores: NDArray[np.float64],
        labels: NDArray[np.int64],
        part_of_example: NDArray[np.int64],
    ) -> NDArray[np.int64]:
        """Each example's (class, node) at its part's level: class · b^k + node (leaves only: k = h)."""
        s = self.spec
        b, h = s.branching, s.height
        level = np.asarray(part_of_example, dtype=np.int64) + (h if self.leaves_only else 1)
        leaf = s.grid.bin_index(scores)
        node = leaf // (b ** (h - level))
        return np.asarray(labels, dtype=np.int64) * (b**level) + node

    @property
    def n_atoms(self) -> int:
        """The (class, leaf) pairs: every level's node is an ancestor of the leaf."""
        return self.spec.n_classes * self.spec.n_leaves

    def encode_atoms(self, scores: NDArray[np.float64], labels: NDArray[Any]) -> NDArray[np.int64]:
        """Leaf counts per class, flattened class-major (index class · b^h + leaf)."""
        s = self.spec
        return count_bins(s.grid, scores, labels, s.n_classes)[0].ravel()

    def parts_from_atoms(self, atom_counts: NDArray[np.int64]) -> list[NDArray[np.int64]]:
        """Level k+1's (class, node) counts from row k's leaf counts (leaves only: row 0)."""
        s = self.spec
        rows = np.asarray(atom_counts, dtype=np.int64)
        if self.leaves_only:
            return [rows[0].copy()]
        levels = s.levels_from_leaves(rows.reshape(rows.shape[0], s.n_classes, s.n_leaves))
        return [levels[k][k].ravel() for k in range(s.height)]

    def exact_variant(self) -> HierarchySketch:
        return HierarchySketch(self.spec, leaves_only=True)

    # ---------------------------------------------------------------- decode
    def decode(self, release: Release) -> HierarchicalHistogram:
        s = self.spec
        sampling: tuple[NDArray[np.float64], ...] | None = None
        fractions: NDArray[np.float64] | None = None
        if self.leaves_only:
            leaves = np.asarray(release.values, dtype=np.float64).reshape(s.n_classes, s.n_leaves)
            leaf_var = np.asarray(release.variance, dtype=np.float64).reshape(s.n_classes, -1)
            levels = tuple(s.levels_from_leaves(leaves))
            variances = tuple(s.levels_from_leaves(leaf_var))
            exact = not np.any(leaf_var)
        else:
            levels = tuple(lv.astype(np.float64) for lv in s.unflatten(release.values))
            variances = tuple(
                np.asarray(v, dtype=np.float64) for v in s.unflatten(release.variance)
            )
            exact = False
            if release.sampling_variance is not None and release.clients_per_part is not None:
                sampling = tuple(
                    np.asarray(v, dtype=np.float64) for v in s.unflatten(release.sampling_variance)
                )
                m_k = np.asarray(release.clients_per_part, dtype=np.float64)
                fractions = m_k / max(float(m_k.sum()), 1.0)
        return HierarchicalHistogram(
            spec=s,
            levels=levels,
            node_variance=variances,
            receipt=release.receipt,
            consistent_=exact,
            _level_weights=tuple([1.0] * s.height) if exact else None,
            node_sampling_variance=sampling,
            part_fractions=fractions,
        )


def _count_leaves(
    grid: UniformGrid,
    n_classes: int,
    scores: NDArray[np.float64],
    labels: NDArray[np.int64],
    clients: NDArray[np.int64],
) -> NDArray[np.int64]:
    """A batch's leaf counts, class-major (a module function: it is pickled to Dask workers)."""
    return count_bins(grid, scores, labels, n_classes)[0].ravel()
