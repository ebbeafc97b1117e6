"""Everything a multiclass evaluation needs, in one one-hot sketch.

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
:class:`~fedeval.sketches.grid.UniformGrid` (left-closed, the one convention);
B and B_loss and the probability floor ``p_min`` are public inputs.

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
One example changes one cell of each of the c + 5 parts by 1: under add/remove
of one example L1 = c + 5 and L2 = √(c + 5); replacing it moves one unit in each
part, L1 = 2(c + 5), L2 = √(2(c + 5)); a client of at most B examples multiplies
these by B (all its examples may share cells). Every client encoding every part
("whole") splits the budget evenly over the parts (each part has L1 = 1 per
example, so uniform noise of L1 = c + 5 gives each part ε/(c + 5)); clients
assigned to one part each ("assign", and local DP) give every part the full
budget and the parts come from disjoint clients.

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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from fedeval.privacy.guarantee import Neighbouring, PrivacyUnit
from fedeval.privacy.sensitivity import Layout, Part, Sensitivity, one_cell_per_part
from fedeval.sketches.base import Sketch
from fedeval.sketches.grid import UniformGrid
from fedeval.validation import check_int_at_least

if TYPE_CHECKING:
    from fedeval.aggregation.release import Release
    from fedeval.privacy.receipt import Receipt

__all__ = ["MulticlassCounts", "MulticlassSketch", "softmax"]

_CHUNK = 1 << 15
BRIER_BOUND = 2.0
"""Largest Brier score of one example: Σ_j (p_j − y_j)² ≤ 2 for a probability vector."""


def softmax(logits: NDArray[np.float64]) -> NDArray[np.float64]:
    """Row-wise softmax, stable for any finite logits."""
    z = logits - logits.max(axis=1, keepdims=True)
    np.exp(z, out=z)
    z /= z.sum(axis=1, keepdims=True)
    return z


def _count_true(mask: NDArray[np.bool_]) -> NDArray[Any]:
    """True entries per column of a (c, n) mask (a uint8 product with ones while c ≤ 255)."""
    if mask.shape[0] <= 255:
        return np.asarray(np.ones(mask.shape[0], dtype=np.uint8) @ mask.view(np.uint8))
    return np.count_nonzero(mask, axis=0)


def _first_true(is_max: NDArray[np.bool_], q: NDArray[np.float64]) -> NDArray[np.int64]:
    """Per column, the first row where ``is_max`` holds: ``argmax`` of the (c, n) scores.

    One uint8 product gives, per column, the number of maxima and the index of
    the maximum when it is unique; tied columns fall back to ``np.argmax``, so
    the first maximum wins as in ``np.argmax(p, axis=1)``.
    """
    c = q.shape[0]
    if c > 255:
        return np.asarray(q.argmax(axis=0), dtype=np.int64)
    weights = np.stack([np.ones(c), np.arange(c)]).astype(np.uint8)
    hits = weights @ is_max.view(np.uint8)
    pred = hits[1].astype(np.int64)
    tied = np.flatnonzero(hits[0] != 1)
    if tied.size:
        pred[tied] = q[:, tied].argmax(axis=0)
    return pred


@dataclass(frozen=True)
class MulticlassCounts:
    """The decoded release: every part's (noisy, unbiased) counts and their variances.

    Shapes: ``confusion`` (c, c); ``one_vs_rest`` (c, 2, B) with axis 1 =
    (label ≠ j, label = j); ``rank`` (c,); ``top_label`` (2, B) with axis 0 =
    (wrong, correct); ``log_loss`` and ``brier`` (B_loss,). Each ``*_var`` has
    the shape of its part.
    """

    sketch: MulticlassSketch
    confusion: NDArray[np.float64]
    one_vs_rest: NDArray[np.float64]
    rank: NDArray[np.float64]
    top_label: NDArray[np.float64]
    log_loss: NDArray[np.float64]
    brier: NDArray[np.float64]
    variance: NDArray[np.float64]
    receipt: Receipt

    def vector(self) -> NDArray[np.float64]:
        """The parts back in the sketch's coordinate order."""
        return np.concatenate(
            [
                self.confusion.ravel(),
                self.one_vs_rest.ravel(),
                self.rank,
                self.top_label.ravel(),
                self.log_loss,
                self.brier,
            ]
        )


@dataclass(frozen=True, eq=False)
class MulticlassSketch(Sketch):
    """Confusion cells, one-vs-rest histograms, ranks, confidences and losses (module docstring).

    Parameters
    ----------
    n_classes : int
        c ≥ 2.
    n_bins : int
        B: bins of [0, 1] for the one-vs-rest and top-label histograms.
    loss_bins : int
        B_loss: fixed-point levels of the per-example log loss and Brier score.
    prob_floor : float
        p_min in (0, 1): the true-class probability is clipped to at least this
        before the log, so one example's log loss is at most −log p_min (public).
    logits : bool
        Scores are logits (softmax applied by every client) instead of probabilities.
    """

    n_classes: int
    n_bins: int
    loss_bins: int
    prob_floor: float = 1e-4
    logits: bool = False
    name = "multiclass evaluation sketch"
    one_hot = True

    def __post_init__(self) -> None:
        check_int_at_least(self.n_classes, 2, name="n_classes")
        check_int_at_least(self.n_bins, 1, name="n_bins")
        check_int_at_least(self.loss_bins, 1, name="loss_bins")
        if not (0.0 < self.prob_floor < 1.0):
            raise ValueError(f"prob_floor must lie in (0, 1), got {self.prob_floor!r}")

    # ------------------------------------------------------------- geometry
    @property
    def grid(self) -> UniformGrid:
        return UniformGrid(self.n_bins, (0.0, 1.0))

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
            "the bins of the probability histograms",
            f"the fixed-point levels of the losses and the log-loss clipping bound "
            f"−log p_min = {self.log_loss_bound:.6g}",
        )

    @property
    def parts(self) -> tuple[Part, ...]:
        c, b = self.n_classes, self.n_bins
        share = 1.0 / (c + 5)
        return (
            Part("confusion matrix", c * c, share),
            *(Part(f"one-vs-rest class {j}", 2 * b, share) for j in range(c)),
            Part("true-class rank", c, share),
            Part("top-label confidence", 2 * b, share),
            Part("log loss", self.loss_bins, share),
            Part("Brier score", self.loss_bins, share),
        )

    # -------------------------------------------------------------- privacy
    def sensitivity(
        self,
        *,
        unit: PrivacyUnit,
        neighbouring: Neighbouring,
        examples_per_unit: int,
        layout: Layout,
    ) -> Sensitivity:
        """One example adds 1 to one cell of every part (see the module docstring).

        A changed label (unit "label") moves the example between two confusion
        cells, between the negative and positive halves of the old and the new
        class's one-vs-rest histograms, and possibly to another rank,
        confidence half and loss cell: L1 = 2(c + 5) bounds it.
        """
        if unit == "none":
            raise ValueError("a sensitivity needs a privacy unit")
        k = len(self.parts)
        b = 1 if unit == "label" else int(examples_per_unit)
        per_part = 2.0 * b if (neighbouring == "replace" or unit == "label") else float(b)
        per_part_l2 = (math.sqrt(2.0) if per_part == 2.0 * b else 1.0) * b
        what = (
            f"one example ({'replaced' if per_part == 2.0 * b else 'added or removed'}) "
            f"changes one cell of each of the {k} parts by 1"
            + ("" if b == 1 else f"; a client of at most {b} examples, {b} times that")
        )
        return one_cell_per_part(
            self.parts,
            unit=unit,
            neighbouring=neighbouring,
            l1=per_part,
            l2=per_part_l2,
            layout=layout,
            examples_per_unit=b,
            what=what,
            noun="part",
        )

    # --------------------------------------------------------------- encode
    def part_offsets_by_name(self) -> dict[str, int]:
        offsets = self.part_offsets()
        return {p.name: int(offsets[i]) for i, p in enumerate(self.parts)}

    def _keys(
        self, scores: NDArray[np.float64], labels: NDArray[np.int64]
    ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Offsets into the vector: the c one-vs-rest cells (c, n) and the other five (5, n).

        The five are, in order: confusion, rank, top-label, log loss, Brier.
        Written for speed: the probabilities are transposed once to (c, n), so
        every per-class pass runs along contiguous memory and reductions over
        the classes are elementwise (numpy's reductions over short rows are
        slow); "how many classes" counts are uint8 products with a vector of
        ones (exact while c ≤ 255). The benchmark target is a small multiple of
        one bincount over the probabilities.
        """
        c, b = self.n_classes, self.n_bins
        p = softmax(np.array(scores, dtype=np.float64)) if self.logits else scores
        q = np.ascontiguousarray(np.asarray(p, dtype=np.float64).T)
        y = np.asarray(labels, dtype=np.int64)
        n = y.shape[0]
        offsets = self.part_offsets()
        cols = np.arange(n)
        conf = q.max(axis=0)
        pred = _first_true(q == conf, q)
        p_true = q[y, cols]
        ovr = self._bins(q)
        ovr += offsets[1 : c + 1, None]
        ovr[y, cols] += b  # the positive half of the true class's histogram
        other = np.empty((5, n), dtype=np.int64)
        np.multiply(y, c, out=other[0])
        other[0] += pred
        # Rank as sklearn's top_k_accuracy_score: classes with a larger probability,
        # and among equal ones those of a larger index (a reversed stable sort).
        rank = _count_true(q > p_true).astype(np.int64)
        tied = np.flatnonzero(_count_true(q == p_true) > 1)
        if tied.size:
            later = np.arange(c)[:, None] > y[None, tied]
            rank[tied] += np.count_nonzero((q[:, tied] == p_true[tied]) & later, axis=0)
        other[1] = offsets[c + 1] + rank
        other[2] = offsets[c + 2] + (pred == y) * b + self.grid.bin_index(conf)
        loss = np.minimum(-np.log(np.maximum(p_true, self.prob_floor)), self.log_loss_bound)
        other[3] = offsets[c + 3] + self.log_loss_grid.bin_index(np.maximum(loss, 0.0))
        sq = np.einsum("ij,ij->j", q, q) - 2.0 * p_true + 1.0
        other[4] = offsets[c + 4] + self.brier_grid.bin_index(np.clip(sq, 0.0, BRIER_BOUND))
        return ovr, other

    def _bins(self, p: NDArray[np.float64]) -> NDArray[np.int64]:
        """``grid.bin_index`` of an (n, c) array, in two passes when the grid allows it.

        With a power-of-two number of bins over [0, 1] the product p·B is exact,
        so clamping it at B − ½ before truncation sends only p = 1 to the last
        bin, as :func:`~fedeval.sketches.grid.count_bins` does; otherwise the
        grid's own (edge-snapping) rule is used.
        """
        grid = self.grid
        if not grid._multiplication_is_exact:
            return grid.bin_index(p.ravel()).reshape(p.shape)
        f = p * float(self.n_bins)
        np.minimum(f, self.n_bins - 0.5, out=f)
        return f.astype(np.int64)

    def cells(self, scores: NDArray[np.float64], labels: NDArray[np.int64]) -> NDArray[np.int64]:
        """Every example's cell in every part, as offsets into the vector: shape (n, c + 5)."""
        ovr, other = self._keys(scores, labels)
        return np.vstack([other[:1], ovr, other[1:]]).T

    def encode(
        self,
        scores: NDArray[np.float64],
        labels: NDArray[np.int64],
        clients: NDArray[np.int64],
    ) -> NDArray[np.int64]:
        """Σ over the examples of their one-hot cells (linear: any split of examples adds up)."""
        n = labels.shape[0]
        total = np.zeros(self.length, dtype=np.int64)
        for start in range(0, n, _CHUNK):
            stop = min(n, start + _CHUNK)
            ovr, other = self._keys(scores[start:stop], labels[start:stop])
            total += np.bincount(ovr.ravel(), minlength=self.length)
            total += np.bincount(other.ravel(), minlength=self.length)
        return total

    def encode_assigned(
        self,
        scores: NDArray[np.float64],
        labels: NDArray[np.int64],
        clients: NDArray[np.int64],
        part_of_example: NDArray[np.int64],
    ) -> NDArray[np.int64]:
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
        """Each example's cell within its part."""
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
        """Split a vector (values and variances) into its parts."""
        c, b, lb = self.n_classes, self.n_bins, self.loss_bins
        o = self.part_offsets()
        return MulticlassCounts(
            sketch=self,
            confusion=values[: o[1]].reshape(c, c),
            one_vs_rest=values[o[1] : o[c + 1]].reshape(c, 2, b),
            rank=values[o[c + 1] : o[c + 2]],
            top_label=values[o[c + 2] : o[c + 3]].reshape(2, b),
            log_loss=values[o[c + 3] : o[c + 3] + lb],
            brier=values[o[c + 4] : o[c + 4] + lb],
            variance=variance,
            receipt=receipt,
        )
