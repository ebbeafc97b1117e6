"""Everything a multiclass evaluation needs, in one sketch (one-hot per part unless split).

Every example (class probabilities ``p_i`` of length c, true class ``y_i``)
adds 1 to exactly one cell of each of these parts:

=============================  =========  ==============================================
part                           cells      the cell of example i
=============================  =========  ==============================================
confusion matrix               c²         ``y_i · c + argmax_j p_ij`` (sklearn's layout:
                                          row = true class, column = prediction)
one-vs-rest class j (j < c)    2B         ``[y_i = j] · B + bin(p_ij)``: the class-j
                                          probability histogram, negatives then positives
true-class rank                c          how many classes rank above ``y_i`` (ties as in
                                          ``sklearn.metrics.top_k_accuracy_score``)
top-label confidence           2B         ``[argmax_j p_ij = y_i] · B + bin(max_j p_ij)``
log loss                       B_loss     bin of ``min(−log p_iy, L)``, ``L = −log p_min``
Brier score                    B_loss     bin of ``Σ_j (p_ij − [y_i = j])²`` on [0, 2]
=============================  =========  ==============================================

So there are c + 5 parts and the sketch is one-hot per part. Bins are those of
:class:`~fedeval.sketches.grid.UniformGrid` (left-closed, the one convention),
or, under noise, fixed public edges that cut the end bins geometrically
(:func:`top_label_edges`, :func:`probability_edges`); B and B_loss and the
probability floor ``p_min`` are public inputs.

Which parts, and their budget (issue 27)
----------------------------------------
Only the parts that the requested metrics need are released (``kinds``;
:func:`fedeval.planning.multiclass_kinds`). With one noise scale for the whole
vector (distributed DP's shares need one), part k gets its share of ε through
an integer multiplicity r_k: an example adds r_k to its cell, the noise has the
scale of L1 = Σ r_k m_k (m_k the cells of part k one example changes), and the
decoder divides by r_k (:attr:`MulticlassSketch.resolution`), so part k's
counts carry noise of scale L1/(ε r_k): the share r_k m_k / L1 of ε, listed in
the receipt. Under that layout the one-vs-rest histograms go as two parts
(``split_one_vs_rest``): the negative halves of every class (an example is a
negative of c − 1 classes, m = c − 1) and the positive halves of every class
(it is the positive of one, m = 1). One part per class gives every positive
count noise c/ε_ovr for the ε_ovr the histograms share; split in two with
equal shares, 2/ε_ovr, while the negatives' 2(c − 1)/ε_ovr is spread over c − 1
times more examples. Under local DP every client reports one part (one-hot,
no multiplicities, one part per class).

Proper scores in fixed point
----------------------------
The log loss and the Brier score are sums of per-example values clipped to a
public bound (``L = −log p_min`` for the log loss; the Brier score of one
example lies in [0, 2] without clipping). Each per-example value is sent in
fixed point with step γ = L / B_loss, in *unary* (one-hot) encoding: the
example adds 1 to the cell of its value's grid interval, and the decoder
counts every cell at its interval's midpoint. Rounding moves each value by at
most γ/2, so the mean has a deterministic bias of at most γ/2 (stated in the
result). Unary rather than binary fixed point keeps the sensitivity of the
whole vector at one cell per part: the noise can be one scale for every
coordinate (which noise shares need), and local DP can use the same frequency
oracle as for every other part. A binary fixed-point sum of B_loss levels
would instead move a coordinate by up to B_loss units and, under noise of one
scale, take B_loss / (B_loss + c + 4) of the budget.

Sensitivity
-----------
Without multiplicities and the split, one example changes one cell of each of the c + 5 parts by 1: under add/remove
of one example L1 = c + 5 and L2 = √(c + 5); replacing it moves one unit in each
part, L1 = 2(c + 5), L2 = √(2(c + 5)); a client of at most B examples multiplies
these by B (all its examples may share cells). Every client encoding every part
("whole") splits the budget evenly over the parts (each part has L1 = 1 per
example, so uniform noise of L1 = c + 5 gives each part ε/(c + 5)); clients
assigned to one part each ("assign", and local DP) give every part the full
budget and the parts come from disjoint clients. With multiplicities every
part's change is multiplied by r_k and the split negatives' by c − 1
(:meth:`MulticlassSketch.sensitivity`).

Local DP: split users, not a combined oracle
--------------------------------------------
An example's contribution is a tuple of c + 5 cells, one per part. A frequency
oracle over the combined domain would need one item per tuple, i.e.
c² · c · (2B)^c · 2B · B_loss² items (about 10^27 for c = 10, B = 64): no oracle
of that size can be sent or debiased, and the marginals this evaluation needs
would have to be summed out of it. Sending one report per part instead would
compose c + 5 local releases (ε/(c + 5) each, a variance (c + 5)² times larger
per report). So under local DP the clients are split at random across the
c + 5 parts (the release's "assign" layout): every client's examples send one
ε-LDP report (OUE by default) of their cell in their client's part, each part
is debiased and scaled by M/m_k, and the split's sampling variance is added
(:func:`fedeval.aggregation.release.finish_reports`). The variance of a part
is then that of an ε-report from a fraction 1/(c + 5) of the clients, which is
smaller than (c + 5)² times that of an ε/(c + 5)-report from all of them for
every ε of practical use.

References
----------
.. [1] Cormode & Markov (2023), §2.3: class-wise score histograms under SA,
   DistDP and LDP (the one-vs-rest parts are their two-class histograms, one
   per class).
.. [2] Private federated multiclass post-hoc calibration, Definition 3.3
   (classwise ECE) and §3 (top-label ECE).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from fedeval.privacy.guarantee import Neighbouring, PrivacyUnit
from fedeval.privacy.sensitivity import Layout, Part, Sensitivity, one_cell_per_part
from fedeval.sketches.base import Sketch
from fedeval.sketches.grid import UniformGrid, bin_of_edges
from fedeval.sketches.hierarchical_histogram import HierarchicalHistogram
from fedeval.sketches.hierarchy import HierarchySpec
from fedeval.validation import check_int_at_least

if TYPE_CHECKING:
    from fedeval.aggregation.release import Release
    from fedeval.privacy.receipt import Receipt

__all__ = [
    "PART_KINDS",
    "MulticlassCounts",
    "MulticlassSketch",
    "class_tree",
    "probability_edges",
    "softmax",
    "top_label_edges",
]

_CHUNK = 1 << 14
BRIER_BOUND = 2.0
"""Largest Brier score of one example: Σ_j (p_j − y_j)² ≤ 2 for a probability vector."""


def softmax(logits: NDArray[np.float64]) -> NDArray[np.float64]:
    """Row-wise softmax, stable for any finite logits."""
    z = logits - logits.max(axis=1, keepdims=True)
    np.exp(z, out=z)
    z /= z.sum(axis=1, keepdims=True)
    return z


def _count_true(mask: NDArray[np.bool_]) -> NDArray[Any]:
    """True entries per column of a (c, n) mask (a uint8 sum over the rows while c ≤ 255).

    numpy sums the rows of a contiguous (c, n) array elementwise, 20x faster
    than the equal uint8 product with a vector of ones (its integer matmul
    has no fast kernel): 6 against 115 µs at 10 × 2^14.
    """
    if mask.shape[0] <= 255:
        return np.asarray(mask.view(np.uint8).sum(axis=0, dtype=np.uint8))
    return np.count_nonzero(mask, axis=0)


def _first_true(is_max: NDArray[np.bool_], q: NDArray[np.float64]) -> NDArray[np.int64]:
    """Per column, the first row where ``is_max`` holds: ``argmax`` of the (c, n) scores.

    Two uint8 sums over the rows give, per column, the number of maxima and,
    where it is unique, the index of the maximum (Σ_j j·[row j is a maximum]);
    tied columns fall back to ``np.argmax``, so the first maximum wins as in
    ``np.argmax(p, axis=1)``.
    """
    c = q.shape[0]
    if c > 255:
        return np.asarray(q.argmax(axis=0), dtype=np.int64)
    hits = is_max.view(np.uint8)
    n_max = hits.sum(axis=0, dtype=np.uint8)
    pred = (hits * np.arange(c, dtype=np.uint8)[:, None]).sum(axis=0, dtype=np.uint8)
    pred = pred.astype(np.int64)
    tied = np.flatnonzero(n_max != 1)
    if tied.size:
        pred[tied] = q[:, tied].argmax(axis=0)
    return pred


PART_KINDS: tuple[str, ...] = (
    "confusion",
    "one_vs_rest",
    "rank",
    "top_label",
    "log_loss",
    "brier",
)
"""The kinds of part, in the order they appear in the vector ("one_vs_rest" is c parts)."""


def top_label_edges(ece_bins: int, sub_bins: int, *, ratio: float = 0.25) -> NDArray[np.float64]:
    """Fine edges of the top-label confidence histogram for a noisy release.

    Each of the ``ece_bins`` equal-width ECE bins is cut into ``sub_bins``
    equal parts, except the last, [1 − 1/M, 1], which is cut geometrically
    towards 1: edges ``1 − ratio^k / M`` for k = 0..sub_bins − 1, then 1.

    Why: the ECE reads a fine bin's probability sum at its midpoint, which errs
    by up to half the bin's width per example, and a good model's confidences
    pile up just below 1 (on digits, a median of 0.9999): with equal-width fine
    bins the last midpoint (e.g. 0.97 for 16 of them) moved the top-label ECE
    from 0.020 to 0.009. Geometric cuts resolve 1 − conf down to
    ratio^(K−1)/M (4·10⁻³ for M = 4, K = 4) with few cells; every cell adds
    noise to its ECE bin, so the cells are few. Public: a function of the
    public ``ece_bins`` and ``sub_bins`` only.

    Returns
    -------
    ndarray, shape (M·K + 1,)
        Increasing, from 0 to 1; every m/M is an edge.
    """
    m = check_int_at_least(ece_bins, 1, name="ece_bins")
    k = check_int_at_least(sub_bins, 1, name="sub_bins")
    if not 0.0 < ratio < 1.0:
        raise ValueError(f"ratio must lie in (0, 1), got {ratio!r}")
    coarse = np.arange(m) / m
    inner = (coarse[:-1, None] + np.arange(k)[None, :] / (k * m)).ravel()
    last = 1.0 - ratio ** np.arange(k) / m
    return np.concatenate((inner, last, [1.0])).astype(np.float64)


def probability_edges(ece_bins: int, sub_bins: int, *, ratio: float = 0.25) -> NDArray[np.float64]:
    """Fine edges of the one-vs-rest probability histograms for a noisy release.

    As :func:`top_label_edges`, with the first ECE bin [0, 1/M] also cut
    geometrically, towards 0 (edges ``ratio^k / M``): a class's probability
    piles up near 0 on the rest and near 1 on the class. Only the order of the
    bins matters for the ROC curves and the AUC, and pairs sharing a bin are
    counted ½ (Cormode–Markov Lemma 3); with equal-width bins the pairs in the
    two end bins biased the macro one-vs-rest AUC of a logistic regression on
    digits by −0.010 at 16 bins (−0.016 at 4), with these edges by −0.003
    (16 bins, M = K = 4). Public: a function of ``ece_bins`` and ``sub_bins``.

    Returns
    -------
    ndarray, shape (M·K + 1,)
        Increasing from 0 to 1; every m/M is an edge. M = 1 gives the
        geometric cut towards 1 only.
    """
    upper = top_label_edges(ece_bins, sub_bins, ratio=ratio)
    m = int(ece_bins)
    if m < 2:
        return upper
    k = int(sub_bins)
    first = np.concatenate(([0.0], ratio ** np.arange(k - 1, 0, -1) / m))
    return np.concatenate((first, upper[k:])).astype(np.float64)


@dataclass(frozen=True)
class MulticlassCounts:
    """The decoded release: every released part's (noisy, unbiased) counts and their variances.

    Shapes: ``confusion`` (c, c); ``one_vs_rest`` (c, 2, B) with axis 1 =
    (label ≠ j, label = j); ``rank`` (c,); ``top_label`` (2, T) with axis 0 =
    (wrong, correct); ``log_loss`` and ``brier`` (B_loss,). A part that was not
    released is None. ``variance`` has the length of :meth:`vector` and
    :meth:`part_variance` splits it the same way.
    """

    sketch: MulticlassSketch
    confusion: NDArray[np.float64] | None
    one_vs_rest: NDArray[np.float64] | None
    rank: NDArray[np.float64] | None
    top_label: NDArray[np.float64] | None
    log_loss: NDArray[np.float64] | None
    brier: NDArray[np.float64] | None
    variance: NDArray[np.float64]
    receipt: Receipt

    def vector(self) -> NDArray[np.float64]:
        """The released parts back in the sketch's coordinate order."""
        blocks = []
        for kind in self.sketch.kinds:
            x = np.asarray(getattr(self, kind))
            if kind == "one_vs_rest" and self.sketch.split_one_vs_rest:
                x = x.transpose(1, 0, 2)  # (2, c, B): every class's negatives, then positives
            blocks.append(x.ravel())
        return np.concatenate(blocks).astype(np.float64)

    def part_variance(self) -> MulticlassCounts:
        """The same layout holding the variances instead of the counts."""
        return self.sketch.counts_from(self.variance, self.variance, self.receipt)


@dataclass(frozen=True, eq=False)
class MulticlassSketch(Sketch):
    """Confusion cells, one-vs-rest histograms, ranks, confidences and losses (module docstring).

    Parameters
    ----------
    n_classes : int
        c ≥ 2.
    n_bins : int
        B: bins of [0, 1] for the one-vs-rest histograms (and the top-label
        histogram unless ``top_edges`` is given).
    loss_bins : int
        B_loss: fixed-point levels of the per-example log loss and Brier score.
    prob_floor : float
        p_min in (0, 1): the true-class probability is clipped to at least this
        before the log, so one example's log loss is at most −log p_min (public).
    logits : bool
        Scores are logits (softmax applied by every client) instead of probabilities.
    kinds : tuple of str
        The parts released, a subset of :data:`PART_KINDS` (in that order);
        all by default. A part that no requested metric needs is not sent.
    split_one_vs_rest : bool
        Lay the c one-vs-rest histograms out as two parts, the negative halves
        of every class and the positive halves of every class, instead of one
        part per class. An example is a positive of exactly one class, so the
        positive halves together change by one cell per example while the
        negative halves change by c − 1: as two parts they can get different
        shares of ε (module docstring). Not one-hot (an example touches c − 1
        cells of the negatives): only for layout "whole".
    weights : tuple of int, optional
        Integer multiplicity r_k of every part (aligned with :attr:`parts`): an
        example adds r_k to its cell(s) of part k, and the decoder divides by
        r_k (:attr:`resolution`). Under one noise scale for the whole vector
        (distributed DP's shares need one) part k then gets the share
        r_k·m_k / Σ r·m of ε, m_k the cells it changes per example. Only for
        the layout in which every client encodes every part ("whole").
    top_edges : tuple of float, optional
        Fine edges of the top-label confidence histogram
        (:func:`top_label_edges`); default the uniform grid of ``n_bins``.
    ovr_edges : tuple of float, optional
        Fine edges of the one-vs-rest probability histograms, ``n_bins + 1`` of
        them (:func:`probability_edges`); default the uniform grid.
    """

    n_classes: int
    n_bins: int
    loss_bins: int
    prob_floor: float = 1e-4
    logits: bool = False
    kinds: tuple[str, ...] = PART_KINDS
    split_one_vs_rest: bool = False
    weights: tuple[int, ...] | None = None
    top_edges: tuple[float, ...] | None = None
    ovr_edges: tuple[float, ...] | None = None
    name = "multiclass evaluation sketch"
    one_hot = True

    def __post_init__(self) -> None:
        check_int_at_least(self.n_classes, 2, name="n_classes")
        check_int_at_least(self.n_bins, 1, name="n_bins")
        check_int_at_least(self.loss_bins, 1, name="loss_bins")
        if not (0.0 < self.prob_floor < 1.0):
            raise ValueError(f"prob_floor must lie in (0, 1), got {self.prob_floor!r}")
        kinds = tuple(self.kinds)
        unknown = [k for k in kinds if k not in PART_KINDS]
        if unknown or not kinds or len(set(kinds)) != len(kinds):
            raise ValueError(
                f"kinds must be distinct names among {PART_KINDS}, at least one, got {self.kinds!r}"
            )
        object.__setattr__(self, "kinds", tuple(k for k in PART_KINDS if k in kinds))
        object.__setattr__(self, "one_hot", not self.split_one_vs_rest)
        if self.weights is not None:
            w = tuple(self.weights)
            n_parts = len(self._layout())
            if len(w) != n_parts or any(
                not isinstance(x, int | np.integer) or int(x) < 1 for x in w
            ):
                raise ValueError(
                    f"weights must be one integer >= 1 per part ({n_parts}), got {self.weights!r}"
                )
            object.__setattr__(self, "weights", tuple(int(x) for x in w))
        for name in ("top_edges", "ovr_edges"):
            edges = getattr(self, name)
            if edges is None:
                continue
            e = np.asarray(edges, dtype=np.float64)
            if e.ndim != 1 or e.size < 2 or e[0] != 0.0 or e[-1] != 1.0 or np.any(np.diff(e) <= 0):
                raise ValueError(f"{name} must increase strictly from 0 to 1")
            object.__setattr__(self, name, tuple(float(x) for x in e))
        if self.ovr_edges is not None and len(self.ovr_edges) != self.n_bins + 1:
            raise ValueError(
                f"ovr_edges must have n_bins + 1 = {self.n_bins + 1} entries, got {len(self.ovr_edges)}"
            )

    # ------------------------------------------------------------- geometry
    @property
    def grid(self) -> UniformGrid:
        return UniformGrid(self.n_bins, (0.0, 1.0))

    @property
    def ovr_grid_edges(self) -> NDArray[np.float64]:
        """Edges of the one-vs-rest probability histograms (B + 1 of them)."""
        if self.ovr_edges is None:
            return self.grid.edges
        return np.asarray(self.ovr_edges, dtype=np.float64)

    @property
    def top_grid_edges(self) -> NDArray[np.float64]:
        """Edges of the top-label confidence histogram (T + 1 of them)."""
        if self.top_edges is None:
            return self.grid.edges
        return np.asarray(self.top_edges, dtype=np.float64)

    @property
    def top_bins(self) -> int:
        """T: bins of the top-label confidence histogram."""
        return int(self.top_grid_edges.size - 1)

    @property
    def log_loss_bound(self) -> float:
        """L = −log p_min: the clipping bound of one example's log loss (public)."""
        return -math.log(self.prob_floor)

    @property
    def log_loss_grid(self) -> UniformGrid:
        return UniformGrid(self.loss_bins, (0.0, self.log_loss_bound))

    @property
    def brier_grid(self) -> UniformGrid:
        return UniformGrid(self.loss_bins, (0.0, BRIER_BOUND))

    @property
    def public_inputs(self) -> tuple[str, ...]:
        return (
            "the number of classes",
            "the parts released and their budget weights",
            "the bins of the probability histograms",
            f"the fixed-point levels of the losses and the log-loss clipping bound "
            f"−log p_min = {self.log_loss_bound:.6g}",
        )

    def has(self, kind: str) -> bool:
        """Whether the part ``kind`` is released."""
        return kind in self.kinds

    def kind_shape(self, kind: str) -> tuple[int, ...]:
        """Shape of a kind's counts in :class:`MulticlassCounts`."""
        c = self.n_classes
        return {
            "confusion": (c, c),
            "one_vs_rest": (c, 2, self.n_bins),
            "rank": (c,),
            "top_label": (2, self.top_bins),
            "log_loss": (self.loss_bins,),
            "brier": (self.loss_bins,),
        }[kind]

    def _layout(self) -> list[tuple[str, str, int, int]]:
        """(kind, part name, length, cells one example changes) of every part, in vector order."""
        cached: list[tuple[str, str, int, int]] | None = self.__dict__.get("_layout_cache")
        if cached is not None:
            return cached
        c, b = self.n_classes, self.n_bins
        names = {
            "confusion": "confusion matrix",
            "rank": "true-class rank",
            "top_label": "top-label confidence",
            "log_loss": "log loss",
            "brier": "Brier score",
        }
        out: list[tuple[str, str, int, int]] = []
        for kind in self.kinds:
            if kind != "one_vs_rest":
                out.append((kind, names[kind], int(np.prod(self.kind_shape(kind))), 1))
            elif self.split_one_vs_rest:
                out.append((kind, "one-vs-rest negatives (every class)", c * b, c - 1))
                out.append((kind, "one-vs-rest positives (every class)", c * b, 1))
            else:
                out.extend((kind, f"one-vs-rest class {j}", 2 * b, 1) for j in range(c))
        self.__dict__["_layout_cache"] = out  # frozen: a pure function of the fields, kept
        return out

    @property
    def part_kinds(self) -> tuple[str, ...]:
        """The kind of every part, in vector order."""
        return tuple(k for k, *_ in self._layout())

    @property
    def cells_per_example(self) -> NDArray[np.int64]:
        """m_k: cells of part k that one example changes (c − 1 for the split negatives, else 1)."""
        return np.array([m for *_, m in self._layout()], dtype=np.int64)

    @property
    def part_weights(self) -> NDArray[np.int64]:
        """r_k of every part, in vector order (all 1 without ``weights``)."""
        n = len(self._layout())
        return np.array(self.weights or (1,) * n, dtype=np.int64)

    @property
    def weighted(self) -> bool:
        return bool(np.any(self.part_weights != 1))

    @cached_property
    def parts(self) -> tuple[Part, ...]:
        """The released parts, in vector order (computed once: the sketch is frozen)."""
        load = self.part_weights * self.cells_per_example
        total = float(load.sum())
        return tuple(
            Part(name, length, float(x) / total)
            for (_, name, length, _), x in zip(self._layout(), load, strict=True)
        )

    @property
    def resolution(self) -> float | NDArray[np.float64]:
        """1/r_k on every coordinate of part k: the decoder's division by the multiplicity."""
        if not self.weighted:
            return 1.0
        lengths = [p.length for p in self.parts]
        return np.repeat(1.0 / self.part_weights.astype(np.float64), lengths)

    def kind_offsets(self) -> dict[str, int]:
        """Start of every released kind's block in the vector."""
        return dict(self._kind_starts)

    @cached_property
    def _kind_starts(self) -> dict[str, int]:
        """:meth:`kind_offsets`, computed once per sketch (the encoder reads it per chunk)."""
        offsets = self.part_offsets()
        out: dict[str, int] = {}
        for i, k in enumerate(self.part_kinds):
            out.setdefault(k, int(offsets[i]))
        return out

    def unflatten(self, vectors: NDArray[np.float64]) -> dict[str, NDArray[np.float64]]:
        """Vectors (R, length) → every released kind's counts with a leading replicate axis."""
        starts = self.kind_offsets()
        r = vectors.shape[0]
        out: dict[str, NDArray[np.float64]] = {}
        for kind in self.kinds:
            shape = self.kind_shape(kind)
            block = vectors[:, starts[kind] : starts[kind] + int(np.prod(shape))]
            if kind == "one_vs_rest" and self.split_one_vs_rest:
                c, _, b = shape
                out[kind] = block.reshape(r, 2, c, b).transpose(0, 2, 1, 3)
            else:
                out[kind] = block.reshape((r, *shape))
        return out

    # -------------------------------------------------------------- privacy
    def sensitivity(
        self,
        *,
        unit: PrivacyUnit,
        neighbouring: Neighbouring,
        examples_per_unit: int,
        layout: Layout,
    ) -> Sensitivity:
        """One example adds r_k to m_k cells of every released part k (module docstring).

        A changed label (unit "label") moves the example between two confusion
        cells, between the negative and positive halves of the old and the new
        class's one-vs-rest histograms, and possibly to another rank,
        confidence half and loss cell: twice the add/remove change bounds it.
        With multiplicities, add/remove of one example gives L1 = Σ r_k m_k and
        L2 = (Σ r_k² m_k)^½ under one noise scale, so part k's share of ε is
        r_k m_k / Σ r m (the receipt lists it).
        """
        if unit == "none":
            raise ValueError("a sensitivity needs a privacy unit")
        k = len(self.parts)
        b = 1 if unit == "label" else int(examples_per_unit)
        per_part = 2.0 * b if (neighbouring == "replace" or unit == "label") else float(b)
        per_part_l2 = (math.sqrt(2.0) if per_part == 2.0 * b else 1.0) * b
        what = (
            f"one example ({'replaced' if per_part == 2.0 * b else 'added or removed'}) "
            f"changes {'one cell of ' if not self.split_one_vs_rest else ''}each of the {k} parts"
            + ("" if b == 1 else f"; a client of at most {b} examples, {b} times that")
        )
        if not self.weighted and not self.split_one_vs_rest:
            return one_cell_per_part(
                self.parts,
                unit=unit,
                neighbouring=neighbouring,
                l1=per_part,
                l2=per_part_l2,
                layout=layout,
                examples_per_unit=b,
                what=what + " by 1",
                noun="part",
            )
        if layout != "whole":
            raise ValueError(
                "budget weights and the split one-vs-rest layout need every client to encode "
                "every part (layout 'whole'); with clients assigned to parts each part has the "
                "whole ε"
            )
        w = self.part_weights.astype(np.float64)
        m = self.cells_per_example.astype(np.float64)
        load = w * m
        total = float(load.sum())
        l1 = per_part * total
        l2 = per_part_l2 * math.sqrt(float(np.sum(w**2 * m)))
        return Sensitivity(
            unit,
            neighbouring,
            l1,
            l2,
            tuple(
                Part(
                    p.name,
                    p.length,
                    float(x) / total,
                    per_part * x,
                    per_part_l2 * r * math.sqrt(mm),
                )
                for p, x, r, mm in zip(self.parts, load, w, m, strict=True)
            ),
            examples_per_unit=b,
            derivation=(
                f"{what}: part k by r_k in each of its m_k cells (m_k = c − 1 = "
                f"{self.n_classes - 1} for the one-vs-rest negatives, else 1), L1 = {l1:g} over "
                f"the vector (Σ r_k m_k = {total:g}; one noise scale, so part k's share of ε is "
                f"r_k m_k/{total:g})"
            ),
        )

    # --------------------------------------------------------------- encode
    def part_offsets_by_name(self) -> dict[str, int]:
        offsets = self.part_offsets()
        return {p.name: int(offsets[i]) for i, p in enumerate(self.parts)}

    def _keys(self, scores: NDArray[np.float64], labels: NDArray[np.int64]) -> NDArray[np.int64]:
        """Every example's cell in every released part, as offsets into the vector: (n_keys, n).

        One key per part, except the one-vs-rest histograms: c keys (one per
        class) whether they are c parts or the split negatives and positives.
        Written for speed: the probabilities are transposed once to (c, n), so
        every per-class pass runs along contiguous memory and reductions over
        the classes are elementwise (numpy's reductions over short rows are
        slow); "how many classes" counts are uint8 sums over the class axis
        (exact while c ≤ 255); every row is written in place into one
        (n_keys, n) array. The benchmark target is a small multiple of one
        bincount over the probabilities.
        """
        c, b = self.n_classes, self.n_bins
        p = softmax(np.array(scores, dtype=np.float64)) if self.logits else scores
        q = np.ascontiguousarray(np.asarray(p, dtype=np.float64).T)
        y = np.asarray(labels, dtype=np.int64)
        n = y.shape[0]
        starts = self._kind_starts
        # Example i's true class in the flat (c, n) layout: one gather for p_true and
        # one scatter for the positive halves, cheaper than numpy's 2-D fancy index.
        true_cell = np.multiply(y, n)
        true_cell += np.arange(n)
        n_rows = len(self.kinds) + (c - 1 if self.has("one_vs_rest") else 0)
        keys = np.empty((n_rows, n), dtype=np.int64)
        row = 0
        need_pred = self.has("confusion") or self.has("top_label")
        conf = q.max(axis=0) if need_pred else None
        pred = _first_true(q == conf, q) if conf is not None else None
        p_true = q.reshape(-1).take(true_cell)
        # Validated probabilities lie in [0, 1] (a NaN fails both comparisons): their
        # bins (and the log-loss bins) skip the clamps for values outside (two passes over
        # the c × n array).
        unit = False
        if self.has("one_vs_rest") or self.has("top_label"):
            top_p = conf.max() if conf is not None else q.max()
            unit = bool(top_p <= 1.0 and q.min() >= 0.0)
        if self.has("confusion"):
            assert pred is not None
            np.multiply(y, c, out=keys[row])
            keys[row] += pred
            keys[row] += starts["confusion"]
            row += 1
        if self.has("one_vs_rest"):
            ovr = keys[row : row + c]
            self._bins(q, out=ovr, in_range=unit)
            if self.split_one_vs_rest:
                # negatives: class j's row of the first block; positives: of the second.
                ovr += (starts["one_vs_rest"] + b * np.arange(c))[:, None]
                ovr.reshape(-1)[true_cell] += c * b
            else:
                ovr += (starts["one_vs_rest"] + 2 * b * np.arange(c))[:, None]
                # the positive half of the true class's histogram
                ovr.reshape(-1)[true_cell] += b
            row += c
        if self.has("rank"):
            # Rank as sklearn's top_k_accuracy_score: classes with a larger probability,
            # and among equal ones those of a larger index (a reversed stable sort).
            rank = keys[row]
            np.copyto(rank, _count_true(q > p_true), casting="unsafe")
            equal = q == p_true
            # Every column holds its true class (unless p_true is NaN): more Trues
            # than such columns means some class ties with the true one.
            if np.count_nonzero(equal) > n - np.count_nonzero(np.isnan(p_true)):
                tied = np.flatnonzero(_count_true(equal) > 1)
                later = np.arange(c)[:, None] > y[None, tied]
                rank[tied] += np.count_nonzero(equal[:, tied] & later, axis=0)
            rank += starts["rank"]
            row += 1
        if self.has("top_label"):
            assert conf is not None and pred is not None
            top = keys[row]
            if self.top_edges is None:
                top[:] = self.grid.bin_index(conf)
            else:
                bin_of_edges(self.top_grid_edges, conf, out=top, in_range=unit)
            top += starts["top_label"]
            top += (pred == y) * self.top_bins  # the correct half
            row += 1
        if self.has("log_loss"):
            loss = np.minimum(-np.log(np.maximum(p_true, self.prob_floor)), self.log_loss_bound)
            # From probabilities in [0, 1] the loss lies in [0, bound] (no NaN).
            keys[row] = self.log_loss_grid.bin_index(np.maximum(loss, 0.0), in_range=unit)
            keys[row] += starts["log_loss"]
            row += 1
        if self.has("brier"):
            sq = np.einsum("ij,ij->j", q, q) - 2.0 * p_true + 1.0
            keys[row] = self.brier_grid.bin_index(np.clip(sq, 0.0, BRIER_BOUND))
            keys[row] += starts["brier"]
            row += 1
        return keys

    def _bins(
        self, p: NDArray[np.float64], *, out: NDArray[np.int64], in_range: bool = False
    ) -> NDArray[np.int64]:
        """``grid.bin_index`` of a (c, n) array into ``out``, in two passes when the grid allows it.

        With a power-of-two number of bins over [0, 1] the product p·B is exact,
        so clamping it at B − ½ before truncation sends only p = 1 to the last
        bin, as :func:`~fedeval.sketches.grid.count_bins` does; otherwise the
        grid's own (edge-snapping) rule is used. Explicit edges go through
        :func:`~fedeval.sketches.grid.bin_of_edges` (``in_range``: see there).
        """
        if self.ovr_edges is not None:
            return bin_of_edges(self.ovr_grid_edges, p, out=out, in_range=in_range)
        grid = self.grid
        if not grid._multiplication_is_exact:
            out[:] = grid.bin_index(p.ravel()).reshape(p.shape)
            return out
        f = p * float(self.n_bins)
        np.minimum(f, self.n_bins - 0.5, out=f)
        np.copyto(out, f, casting="unsafe")
        return out

    def cells(self, scores: NDArray[np.float64], labels: NDArray[np.int64]) -> NDArray[np.int64]:
        """Every cell each example adds to, as offsets into the vector: shape (n, n_keys).

        One column per part in the one-hot layout (n_keys = n_parts); with the
        split one-vs-rest layout the c one-vs-rest columns are the example's
        cell in every class's histogram (c − 1 negatives and its positive).
        """
        return self._keys(scores, labels).T

    def encode(
        self,
        scores: NDArray[np.float64],
        labels: NDArray[np.int64],
        clients: NDArray[np.int64],
    ) -> NDArray[np.int64]:
        """Σ over the examples of their cells, part k's counts times r_k (linear in the examples)."""
        n = labels.shape[0]
        total = np.zeros(self.length, dtype=np.int64)
        for start in range(0, n, _CHUNK):
            stop = min(n, start + _CHUNK)
            keys = self._keys(scores[start:stop], labels[start:stop])
            total += np.bincount(keys.ravel(), minlength=self.length)
        if self.weighted:
            lengths = [p.length for p in self.parts]
            total *= np.repeat(self.part_weights, lengths)
        return total

    def encode_assigned(
        self,
        scores: NDArray[np.float64],
        labels: NDArray[np.int64],
        clients: NDArray[np.int64],
        part_of_example: NDArray[np.int64],
    ) -> NDArray[np.int64]:
        if self.weighted or self.split_one_vs_rest:
            raise ValueError(
                "budget weights and the split one-vs-rest layout need the layout 'whole'"
            )
        offsets = self.part_offsets()
        items = self.items(scores, labels, part_of_example)
        cells = items + offsets[np.asarray(part_of_example, dtype=np.int64)]
        return np.bincount(cells, minlength=self.length).astype(np.int64)

    def items(
        self,
        scores: NDArray[np.float64],
        labels: NDArray[np.int64],
        part_of_example: NDArray[np.int64],
    ) -> NDArray[np.int64]:
        """Each example's cell within its part (one-hot layout only)."""
        if self.split_one_vs_rest:
            raise ValueError("the split one-vs-rest layout is not one-hot (see split_one_vs_rest)")
        part = np.asarray(part_of_example, dtype=np.int64)
        n = labels.shape[0]
        out = np.empty(n, dtype=np.int64)
        offsets = self.part_offsets()
        for start in range(0, n, _CHUNK):
            stop = min(n, start + _CHUNK)
            cells = self.cells(scores[start:stop], labels[start:stop])
            k = part[start:stop]
            out[start:stop] = cells[np.arange(stop - start), k] - offsets[k]
        return out

    def exact_variant(self) -> MulticlassSketch:
        """Without noise every part is exact: one part per class, no multiplicities."""
        if not (self.weighted or self.split_one_vs_rest):
            return self
        return replace(self, weights=None, split_one_vs_rest=False)

    # --------------------------------------------------------------- decode
    def decode(self, release: Release) -> MulticlassCounts:
        return self.counts_from(
            np.asarray(release.values, dtype=np.float64),
            np.asarray(release.variance, dtype=np.float64),
            release.receipt,
        )

    def counts_from(
        self,
        values: NDArray[np.float64],
        variance: NDArray[np.float64],
        receipt: Any,
    ) -> MulticlassCounts:
        """Split a vector (values and variances) into its parts (None for a part not released)."""
        parts: dict[str, NDArray[np.float64] | None] = dict.fromkeys(PART_KINDS)
        parts.update({k: v[0] for k, v in self.unflatten(values[None, :]).items()})
        return MulticlassCounts(
            sketch=self,
            confusion=parts["confusion"],
            one_vs_rest=parts["one_vs_rest"],
            rank=parts["rank"],
            top_label=parts["top_label"],
            log_loss=parts["log_loss"],
            brier=parts["brier"],
            variance=variance,
            receipt=receipt,
        )


def class_tree(
    counts: NDArray[np.float64],
    variance: NDArray[np.float64],
    receipt: Receipt,
) -> HierarchicalHistogram:
    """One one-vs-rest histogram as a released two-class hierarchy of its bins.

    The histogram's B bins are the leaves of a b-ary tree (b^h = B, the
    smallest such b); every inner node is the sum of its leaves, so the tree
    is consistent as it stands, and a query on it weights the leaves only
    (consistency weights a_k = 0 above the leaves: a node's own estimate is
    the sum of its children). Variances are the leaves' (independent noise);
    an inner node's is their sum. This is the form the dense curves of
    :mod:`fedeval.metrics.dense` read, so the one-vs-rest histograms get the
    binary curves' Wiener shrinkage and non-negative splits unchanged.

    Parameters
    ----------
    counts, variance : ndarray, shape (2, B)
        Row 0 the rest (label ≠ j), row 1 the class (label = j); B ≥ 2.
    receipt : Receipt
        Of the release they come from (its guarantee says whether it is private).

    Returns
    -------
    HierarchicalHistogram
    """
    x = np.asarray(counts, dtype=np.float64)
    v = np.asarray(variance, dtype=np.float64)
    n = x.shape[-1]
    if n < 2:
        raise ValueError(f"a class tree needs at least 2 bins, got {n}")
    b, h = next(
        (b, h)
        for b in range(2, n + 1)
        for h in [round(math.log(n) / math.log(b))]
        if h >= 1 and b**h == n
    )
    spec = HierarchySpec(h, b, (0.0, 1.0), 2)
    return HierarchicalHistogram(
        spec=spec,
        levels=tuple(spec.levels_from_leaves(x)),
        node_variance=tuple(spec.levels_from_leaves(v)),
        receipt=receipt,
        consistent_=True,
        _level_weights=(*([0.0] * (h - 1)), 1.0),
    )
