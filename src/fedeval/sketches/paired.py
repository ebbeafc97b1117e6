"""Two models' scores of the same examples in one sketch: both hierarchies and a pair grid.

A comparison of two classifiers on the same examples needs each model's curve
(its per-class score hierarchy) and the *pairing*: how the two models' scores
of one example move together, which is what makes a paired standard error of
their difference smaller than two independent ones (DeLong et al. 1988). One
sketch carries all three, so the comparison is one release:

* **model A's hierarchy** and **model B's hierarchy**, per class, exactly as
  :class:`~fedeval.sketches.hierarchy.HierarchySketch` encodes one model (one
  node per level for every example);
* a coarse **pair grid**: per class, a G × G histogram of (A's bin, B's bin),
  G = b^g bins per axis, each an ancestor of the hierarchies' leaves (a pair
  cell is the product of a level-g node of A and one of B).

Budget split
------------
One example adds 1 to one node of each of A's h levels and of B's h levels,
and ``pair_weight`` w to one pair cell (an integer weight: the cell is sent
in units of 1/w, :attr:`PairedHierarchySketch.resolution`). Under add/remove
of one example the L1 sensitivity is therefore 2h + w, and a noise of that
scale on every coordinate gives each level ε/(2h + w) and the pair grid
w·ε/(2h + w). The two hierarchies together keep 2h/(2h + w) of ε: each is
released about as precisely as by its own evaluation at ε/2 (what a user
would otherwise run twice), while the pairing costs the rest. The pair grid
is read only through sums over all its cells (second moments of the two
models' influence values), so a share of ε/(2h/w + 1) (15 % for h = 11,
w = 4) keeps its noise small beside those sums; see
:func:`fedeval.comparison.compare` for the defaults. With clients assigned
to parts (layout "assign", and local DP) every part is released by its own
clients with the whole ε and the weight must be 1.

Decoding gives a :class:`PairedHistograms`: two
:class:`~fedeval.sketches.hierarchical_histogram.HierarchicalHistogram` (one
per model, each usable as a full evaluation) and a :class:`PairGrid`.

References
----------
DeLong, DeLong and Clarke-Pearson, "Comparing the areas under two or more
correlated receiver operating characteristic curves: a nonparametric
approach", Biometrics 44(3), 1988 (the paired covariance the pair grid serves);
cormode-markov-2023-federated-calibration-evaluation §2.3 (the hierarchies).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from fedeval.privacy.guarantee import Neighbouring, PrivacyUnit
from fedeval.privacy.receipt import Receipt
from fedeval.privacy.sensitivity import Layout, Part, Sensitivity
from fedeval.sketches.base import Sketch
from fedeval.sketches.grid import bin_keys, chunked_bincount
from fedeval.sketches.hierarchical_histogram import HierarchicalHistogram
from fedeval.sketches.hierarchy import HierarchySketch, HierarchySpec
from fedeval.validation import check_int_at_least

if TYPE_CHECKING:
    from fedeval.aggregation.release import Release

__all__ = ["PairGrid", "PairedHierarchySketch", "PairedHistograms"]


@dataclass(frozen=True)
class PairGrid:
    """A released per-class histogram of (model A's bin, model B's bin).

    Attributes
    ----------
    counts : ndarray of float64, shape (2, G, G)
        Estimated examples of class c whose A score lies in bin i and B score in
        bin j (noisy, may be negative under DP: read it through linear sums).
    variance : ndarray of float64, shape (2, G, G)
        Variance of every cell from the known noise (and, with clients assigned
        to parts, the split's sampling).
    edges : ndarray of float64, shape (G + 1,)
        The bin edges on both axes (a level of the hierarchies' public grid).
    leaves_per_bin : int
        Hierarchy leaves in one pair bin (b^(h − g)).
    """

    counts: NDArray[np.float64]
    variance: NDArray[np.float64]
    edges: NDArray[np.float64]
    leaves_per_bin: int

    @property
    def n_bins(self) -> int:
        """G, the bins per axis."""
        return int(self.counts.shape[1])

    def cross_moment(self, x: NDArray[np.float64], y: NDArray[np.float64]) -> float:
        """Σ_c Σ_ij counts[c, i, j] · x[c, i] · y[c, j], and nothing else.

        Linear in the released counts, so unbiased under zero-mean noise: the
        one way the comparison reads the pairing.
        """
        return float(np.einsum("cij,ci,cj->", self.counts, x, y))

    def cross_moment_variance(self, x: NDArray[np.float64], y: NDArray[np.float64]) -> float:
        """Noise variance of :meth:`cross_moment` (independent cells)."""
        return float(np.einsum("cij,ci,cj->", self.variance, x**2, y**2))


@dataclass(frozen=True)
class PairedHistograms:
    """What one release of a :class:`PairedHierarchySketch` decodes to."""

    a: HierarchicalHistogram
    b: HierarchicalHistogram
    pair: PairGrid
    receipt: Receipt


def _pair_levels(spec: HierarchySpec, pair_bins: int) -> int:
    """g with b^g = pair_bins (a level of the hierarchy), or ValueError."""
    b = spec.branching
    g, size = 0, 1
    while size < pair_bins:
        size *= b
        g += 1
    if size != pair_bins or not 1 <= g <= spec.height:
        raise ValueError(
            f"pair_bins must be b**g for a level g of the hierarchy (b = {b}, levels "
            f"1..{spec.height}), got {pair_bins}"
        )
    return g


def _per_part(
    unit: PrivacyUnit, neighbouring: Neighbouring, examples_per_unit: int
) -> tuple[float, float, str]:
    """What one unit changes in one part that holds one cell per example (as the hierarchy)."""
    b = int(examples_per_unit)
    if unit == "label":
        return 2.0, math.sqrt(2.0), "a changed label moves one example between classes"
    if neighbouring == "replace":
        return 2.0 * b, math.sqrt(2.0) * b, f"replacing {b} example(s) moves them to other cells"
    return float(b), float(b), f"adding or removing {b} example(s) changes one cell by {b}"


@dataclass(frozen=True)
class PairedHierarchySketch(Sketch):
    """Both models' per-class hierarchies and a coarse pair grid (see the module docstring).

    Parameters
    ----------
    spec : HierarchySpec
        Two classes; the geometry of both models' hierarchies.
    pair_bins : int
        G, bins per axis of the pair grid: b^g for a level g of the hierarchy.
    pair_weight : int
        w >= 1, the weight of an example in its pair cell (its share of the
        budget, see the module docstring). Must be 1 when clients are
        assigned to parts.
    leaves_only : bool
        Encode the hierarchies' leaves only (exact sums; upper levels are sums).

    Notes
    -----
    ``encode`` reads scores of shape (n, 2): column 0 is model A's score of
    each example, column 1 model B's, both in ``spec.score_range``.
    """

    spec: HierarchySpec
    pair_bins: int
    pair_weight: int = 1
    leaves_only: bool = False
    name = "paired hierarchy"
    one_hot = True
    reads_clients = False

    def __post_init__(self) -> None:
        if self.spec.n_classes != 2:
            raise ValueError(f"a paired hierarchy has two classes, got {self.spec.n_classes}")
        _pair_levels(self.spec, self.pair_bins)
        check_int_at_least(self.pair_weight, 1, name="pair_weight")

    # -------------------------------------------------------------- geometry
    @property
    def public_inputs(self) -> tuple[str, ...]:
        return (
            "the score domain",
            "the hierarchies' height and branching",
            "the pair grid's bins and weight",
        )

    @property
    def model_sketch(self) -> HierarchySketch:
        """The hierarchy of one model, as a plain evaluation would release it."""
        return HierarchySketch(self.spec, leaves_only=self.leaves_only)

    @property
    def _model_length(self) -> int:
        return self.model_sketch.length

    @property
    def parts(self) -> tuple[Part, ...]:
        one = self.model_sketch.parts
        pair = Part("pairs (A, B)", 2 * self.pair_bins**2)
        return (
            *(Part(f"model A {p.name}", p.length) for p in one),
            *(Part(f"model B {p.name}", p.length) for p in one),
            pair,
        )

    @property
    def resolution(self) -> float | NDArray[np.float64]:
        if self.pair_weight == 1:
            return 1.0
        res = np.ones(self.length)
        res[2 * self._model_length :] = 1.0 / self.pair_weight
        return res

    # ---------------------------------------------------------------- privacy
    def sensitivity(
        self,
        *,
        unit: PrivacyUnit,
        neighbouring: Neighbouring,
        examples_per_unit: int,
        layout: Layout,
    ) -> Sensitivity:
        """One example changes one node per level of each model and w in one pair cell.

        Per part, one unit changes the counts by (l1, l2) as in the hierarchy
        (add/remove of B examples: B, B; replacement: 2B, √2·B; a label: 2,
        √2); the pair part by w times that. Every client reporting every part
        (layout "whole"): L1 = (k + w)·l1 and L2 = √(k + w²)·l2 over the k level
        parts and the pair grid, and each part's budget share is its L1 over
        the total. Clients assigned to parts: the parts are released by
        disjoint clients (parallel composition), L1 = l1, which needs w = 1.
        A client-level unit of B examples may spread them over several cells
        of a part; the per-part bound holds whichever cells they touch.
        """
        if unit == "none":
            raise ValueError("a sensitivity needs a privacy unit")
        l1, l2, what = _per_part(unit, neighbouring, examples_per_unit)
        w = self.pair_weight
        parts = self.parts
        k = len(parts) - 1
        if layout == "assign":
            if w != 1:
                raise ValueError(
                    "clients assigned to parts release each part with the whole budget; the "
                    f"pair grid's weight must then be 1, got {w}"
                )
            return Sensitivity(
                unit,
                neighbouring,
                l1,
                l2,
                tuple(Part(p.name, p.length, 1.0, l1, l2) for p in parts),
                examples_per_unit=int(examples_per_unit),
                derivation=(
                    f"{what}: L1 = {l1:g} in the one part its client reports ({k // 2} levels "
                    "of each model and the pair grid), parts released by disjoint clients "
                    "(parallel composition)"
                ),
            )
        total_l1 = (k + w) * l1
        total_l2 = math.sqrt(k + w * w) * l2
        shares = [1.0 / (k + w)] * k + [w / (k + w)]
        return Sensitivity(
            unit,
            neighbouring,
            total_l1,
            total_l2,
            tuple(
                Part(p.name, p.length, s, l1 * (w if i == k else 1), l2 * (w if i == k else 1))
                for i, (p, s) in enumerate(zip(parts, shares, strict=True))
            ),
            examples_per_unit=int(examples_per_unit),
            derivation=(
                f"{what} in each of the {k} level parts of the two models' hierarchies and "
                f"{w} × that in the pair grid: L1 = {total_l1:g} over the vector (an "
                f"ε/{k + w} share per level, {w}/{k + w} of ε for the pair grid)"
            ),
        )

    # ------------------------------------------------------------------ encode
    def _pair_shift(self) -> int:
        return self.spec.height - _pair_levels(self.spec, self.pair_bins)

    def _pair_counts(
        self, score_a: NDArray[np.float64], score_b: NDArray[np.float64], labels: NDArray[Any]
    ) -> NDArray[np.int64]:
        """Per class, the (A bin, B bin) counts of these examples, flattened (2·G²,)."""
        s = self.spec
        g = self.pair_bins
        per_bin = s.branching ** self._pair_shift()
        grid = s.grid

        def keys(lo: int, hi: int, key: NDArray[np.int64], tmp: NDArray[np.int64]) -> None:
            bin_keys(grid, score_a[lo:hi], out=key)
            bin_keys(grid, score_b[lo:hi], out=tmp)
            key //= per_bin
            key *= g
            tmp //= per_bin
            key += tmp
            np.multiply(labels[lo:hi], np.int64(g * g), out=tmp, casting="unsafe")
            key += tmp

        return chunked_bincount(int(score_a.shape[0]), 2 * g * g, keys)

    def _split_scores(
        self, scores: NDArray[np.float64]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        s = np.asarray(scores)
        if s.ndim != 2 or s.shape[1] != 2:
            raise ValueError(f"a paired sketch encodes scores of shape (n, 2), got {s.shape}")
        return s[:, 0], s[:, 1]

    def encode(
        self,
        scores: NDArray[np.float64],
        labels: NDArray[np.int64],
        clients: NDArray[np.int64],
    ) -> NDArray[np.int64]:
        sa, sb = self._split_scores(scores)
        one = self.model_sketch
        pair = self._pair_counts(sa, sb, labels)
        if self.pair_weight != 1:
            pair *= self.pair_weight
        return np.concatenate(
            (one.encode(sa, labels, clients), one.encode(sb, labels, clients), pair)
        )

    def encode_assigned(
        self,
        scores: NDArray[np.float64],
        labels: NDArray[np.int64],
        clients: NDArray[np.int64],
        part_of_example: NDArray[np.int64],
    ) -> NDArray[np.int64]:
        if self.leaves_only:
            return self.encode(scores, labels, clients)
        sa, sb = self._split_scores(scores)
        h = self.spec.height
        part = np.asarray(part_of_example, dtype=np.int64)
        out = np.zeros(self.length, dtype=np.int64)
        n_model = self._model_length
        for j, (col, lo) in enumerate(((sa, 0), (sb, h))):
            sel = (part >= lo) & (part < lo + h)
            if sel.any():
                out[j * n_model : (j + 1) * n_model] = self.spec.encode_levels(
                    col[sel], labels[sel], part[sel] - lo
                )
        sel = part == 2 * h
        if sel.any():
            out[2 * n_model :] = self.pair_weight * self._pair_counts(sa[sel], sb[sel], labels[sel])
        return out

    def items(
        self,
        scores: NDArray[np.float64],
        labels: NDArray[np.int64],
        part_of_example: NDArray[np.int64],
    ) -> NDArray[np.int64]:
        """Each example's cell in its part: (class, node) at a model's level, or its pair cell."""
        if self.leaves_only:
            raise NotImplementedError("the leaves-only paired sketch is for exact sums only")
        sa, sb = self._split_scores(scores)
        s = self.spec
        b, h, g = s.branching, s.height, self.pair_bins
        part = np.asarray(part_of_example, dtype=np.int64)
        y = np.asarray(labels, dtype=np.int64)
        leaf_a, leaf_b = s.grid.bin_index(sa), s.grid.bin_index(sb)
        is_b = (part >= h) & (part < 2 * h)
        level = np.where(is_b, part - h, part) + 1
        level = np.minimum(level, h)
        leaf = np.where(is_b, leaf_b, leaf_a)
        node = leaf // (b ** (h - level))
        out = y * (b**level) + node
        pair = part == 2 * h
        if pair.any():
            per_bin = b ** self._pair_shift()
            out[pair] = y[pair] * g * g + (leaf_a[pair] // per_bin) * g + leaf_b[pair] // per_bin
        return np.asarray(out, dtype=np.int64)

    def exact_variant(self) -> PairedHierarchySketch:
        return PairedHierarchySketch(self.spec, self.pair_bins, 1, leaves_only=True)

    # ------------------------------------------------------------------ decode
    def decode(self, release: Release) -> PairedHistograms:
        n_model = self._model_length
        one = self.model_sketch
        n_parts = len(one.parts)
        m_k = release.clients_per_part
        total_clients = None if m_k is None else max(float(np.sum(m_k)), 1.0)
        samp = release.sampling_variance
        trees = []
        for j in range(2):
            cut = slice(j * n_model, (j + 1) * n_model)
            part = (
                None
                if m_k is None
                else np.asarray(m_k[j * n_parts : (j + 1) * n_parts], dtype=np.int64)
            )
            sub = replace(
                release,
                sketch=one,
                values=np.asarray(release.values[cut], dtype=np.float64),
                variance=np.asarray(release.variance[cut], dtype=np.float64),
                basis_variance=None,
                covariance=None,
                clients_per_part=part,
                sampling_variance=None if samp is None else np.asarray(samp[cut]),
            )
            tree = one.decode(sub)
            if part is not None and total_clients is not None and tree.part_fractions is not None:
                # The split is over every part of the joint sketch, not this model's only.
                tree = replace(tree, part_fractions=part / total_clients)
            trees.append(tree)
        g = self.pair_bins
        rest = slice(2 * n_model, None)
        grid_edges = np.linspace(*self.spec.score_range, g + 1)
        pair = PairGrid(
            np.asarray(release.values[rest], dtype=np.float64).reshape(2, g, g),
            np.asarray(release.variance[rest], dtype=np.float64).reshape(2, g, g),
            grid_edges,
            int(self.spec.branching ** self._pair_shift()),
        )
        return PairedHistograms(trees[0], trees[1], pair, release.receipt)
