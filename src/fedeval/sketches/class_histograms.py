"""One-vs-rest histograms of class probabilities (multiclass calibration, Algorithm 1).

For every class j, two histograms over fixed-width bins of the class-j
probability p_ij: P_j counts examples of class j, N_j examples of any other
class. A client's vector holds its 2c histograms, positives first, class by
class, bin by bin. Bins are those of :class:`~fedeval.sketches.grid.UniformGrid`
(left-closed, the one convention).

Under user-level DP each client clips each of its positive histograms to L2
norm C+ and each negative one to C− before sending (the multiclass paper's
Algorithm 1 clips on the server, which would not bound sensitivity; clipping
where the data is does). Then one client's 2c histograms, scaled by 1/C+ and
1/C−, have joint L2 norm at most √(2c): the sensitivity this sketch declares,
with noise weights C+ and C− (Lemma B.7's 2c-fold count). Clipping makes the
encoding non-linear, so clients are encoded one by one (vectorised).

Without clipping the histograms are exact integer counts: one example adds 1 to
one bin of each class's histograms (P_j for its own class, N_j for the c − 1
others), so adding or removing it has L1 = c and L2 = √c, and distributed or
central DP can release them at example level (B·c for a client of at most B
examples).

Clipped histograms are real-valued, so each client sends them in fixed point
(:mod:`~fedeval.sketches.fixed_point`): every entry rounded to a multiple of
γ = 2^-20 counts after clipping. Rounding moves an entry by at most γ/2, so a
clipped histogram of at most n_bins non-zero entries has L2 norm at most
C + γ√n_bins/2 once rounded: the declared sensitivity includes it.

References
----------
.. [1] Private federated multiclass post-hoc calibration, Algorithm 1,
   Appendices B.1 and B.3–B.5.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from fedeval.privacy.guarantee import Neighbouring, PrivacyUnit
from fedeval.privacy.sensitivity import Layout, Part, Sensitivity
from fedeval.sketches.base import Sketch
from fedeval.sketches.fixed_point import DEFAULT_BITS, rounding_note, to_units
from fedeval.sketches.grid import UniformGrid

if TYPE_CHECKING:
    from fedeval.aggregation.release import Release
    from fedeval.data import Federation

__all__ = ["OneVsRestSketch", "one_vs_rest_histograms"]

_STEP = 2.0**-DEFAULT_BITS


def one_vs_rest_histograms(
    probs: NDArray[np.float64],
    labels: NDArray[np.int64],
    grid: UniformGrid,
    weights_pos: NDArray[np.float64] | None = None,
    weights_neg: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The 2c one-vs-rest histograms (P_j, N_j) of some examples, shape (c, n_bins) each.

    ``weights_pos`` / ``weights_neg`` (shape (n, c)) multiply every count of
    a client's class-j histogram by that histogram's clipping factor.
    """
    c = probs.shape[1]
    n_bins = grid.n_bins
    key = grid.bin_index(probs.ravel()).reshape(probs.shape) + np.arange(c)[None, :] * n_bins
    positive = labels[:, None] == np.arange(c)[None, :]
    wp = positive.astype(np.float64) if weights_pos is None else weights_pos * positive
    wn = (~positive).astype(np.float64) if weights_neg is None else weights_neg * ~positive
    size = c * n_bins
    # Weighted bincount returns float64 (the stubs say int).
    pos = np.asarray(np.bincount(key.ravel(), weights=wp.ravel(), minlength=size), np.float64)
    neg = np.asarray(np.bincount(key.ravel(), weights=wn.ravel(), minlength=size), np.float64)
    return pos.reshape(c, n_bins), neg.reshape(c, n_bins)


@dataclass(frozen=True, eq=False)
class OneVsRestSketch(Sketch):
    """2c one-vs-rest histograms of the class probabilities, clipped per client if asked.

    Parameters
    ----------
    n_classes : int
    n_bins : int
    clip : (float, float) or None
        (C+, C−): each client's positive / negative histograms are clipped to
        these L2 norms. None sends exact counts (no user-level bound).
    """

    n_classes: int
    n_bins: int
    clip: tuple[float, float] | None = None
    name = "one-vs-rest class histograms"

    @property
    def clips_clients(self) -> bool:  # type: ignore[override]
        """Clipped histograms bound a client (user-level DP); exact counts bound an example."""
        return self.clip is not None

    @property
    def linear(self) -> bool:  # type: ignore[override]
        return self.clip is None

    @property
    def resolution(self) -> float:
        """1 (counts) without clipping; γ = 2^-20 counts for clipped histograms (fixed point)."""
        return 1.0 if self.clip is None else _STEP

    @property
    def grid(self) -> UniformGrid:
        return UniformGrid(self.n_bins, (0.0, 1.0))

    @property
    def public_inputs(self) -> tuple[str, ...]:
        return ("the number of classes and bins", "the clipping norms")

    @property
    def parts(self) -> tuple[Part, ...]:
        size = self.n_classes * self.n_bins
        return (Part("positive histograms", size, 0.5), Part("negative histograms", size, 0.5))

    def sensitivity(
        self,
        *,
        unit: PrivacyUnit,
        neighbouring: Neighbouring,
        examples_per_unit: int,
        layout: Layout,
    ) -> Sensitivity:
        c = self.n_classes
        size = c * self.n_bins
        if self.clip is None:
            return self._count_sensitivity(unit, neighbouring, examples_per_unit)
        if unit != "client":
            raise ValueError(
                "clipped one-vs-rest histograms bound a client, not an example: release them "
                "under user-level DP"
            )
        c_pos, c_neg = self.clip
        # Noise weights in units of γ: C±/γ. Rounding adds at most γ√n_bins/2 to a
        # histogram's norm, i.e. a factor (1 + γ√n_bins/(2C)) on its scaled norm.
        root_bins = math.sqrt(self.n_bins)
        grow = max(1.0 + _STEP * root_bins / (2 * c_pos), 1.0 + _STEP * root_bins / (2 * c_neg))
        weights = np.concatenate([np.full(size, c_pos), np.full(size, c_neg)]) / _STEP
        # L1 (informational, in noise units): a histogram of n_bins entries with
        # L2 norm ≤ C has L1 norm ≤ √n_bins · C (Cauchy–Schwarz).
        return Sensitivity(
            "client",
            "add_remove",
            2 * c * root_bins * grow,
            math.sqrt(2 * c) * grow,
            (
                Part("positive histograms", size, 0.5, c * root_bins * c_pos, math.sqrt(c) * c_pos),
                Part("negative histograms", size, 0.5, c * root_bins * c_neg, math.sqrt(c) * c_neg),
            ),
            l1_weights=weights,
            l2_weights=weights,
            derivation=(
                f"each client clips each of its {c} positive histograms to L2 norm C+ = {c_pos:g} "
                f"and each negative one to C− = {c_neg:g}; scaled by 1/C± its {2 * c} histograms "
                f"have L2 norm ≤ √(2c) = {math.sqrt(2 * c):.4g}, times {grow:.9g} for the "
                "rounding; " + rounding_note(_STEP, "each clipped entry")
            ),
        )

    def _count_sensitivity(
        self, unit: PrivacyUnit, neighbouring: Neighbouring, examples_per_unit: int
    ) -> Sensitivity:
        """Exact counts: one example adds 1 to one bin of each of the c classes' histograms.

        For class j the example lands in P_j if it is of class j, else in N_j:
        c coordinates change by 1 (one positive, c − 1 negative). Adding or
        removing b examples: L1 = b·c, L2 = b·√c (all b in the same bins);
        replacing them: twice the L1, √2 times the L2; a changed label moves one
        example from P_y to N_y and from N_y' to P_y': L1 = 4, L2 = 2.
        """
        if unit == "none":
            raise ValueError("a sensitivity needs a privacy unit")
        c = self.n_classes
        size = c * self.n_bins
        b = int(examples_per_unit)
        if unit == "label":
            l1, l2, pos, neg = 4.0, 2.0, 2.0, 2.0
            what = "a changed label moves one example between two classes' P and N histograms"
        else:
            factor = 2.0 if neighbouring == "replace" else 1.0
            l1, l2 = factor * b * c, math.sqrt(factor) * b * math.sqrt(c)
            pos, neg = factor * b, factor * b * (c - 1)
            verb = "replacing" if neighbouring == "replace" else "adding or removing"
            what = (
                f"{verb} {b} example(s) changes one bin of each of the {c} classes' "
                "histograms by " + (f"{b}" if factor == 1 else f"{b}, twice")
            )
        return Sensitivity(
            unit,
            neighbouring,
            l1,
            l2,
            (
                Part("positive histograms", size, 0.5, pos, pos),
                Part("negative histograms", size, 0.5, neg, math.sqrt(neg * b)),
            ),
            examples_per_unit=b,
            integer=True,
            derivation=f"{what}: L1 = {l1:g}, L2 = {l2:.4g}",
        )

    def _probs(self, scores: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(scores, dtype=np.float64)

    def encode(
        self,
        scores: NDArray[np.float64],
        labels: NDArray[np.int64],
        clients: NDArray[np.int64],
    ) -> NDArray[np.int64]:
        """One client's vector (``scores`` are its class probabilities, shape (n, c))."""
        pos, neg = one_vs_rest_histograms(self._probs(scores), labels, self.grid)
        if self.clip is None:
            return np.rint(np.concatenate([pos.ravel(), neg.ravel()])).astype(np.int64)
        pos = _clip_rows(pos, self.clip[0])
        neg = _clip_rows(neg, self.clip[1])
        return to_units(np.concatenate([pos.ravel(), neg.ravel()]), _STEP)

    def encode_clients(self, fed: Federation, clients: NDArray[np.intp] | None = None) -> Any:
        """Σ of the clients' (clipped) vectors, from sparse per-(client, class) norms."""
        rows: Any = slice(None) if clients is None else fed.rows_of(clients)
        probs = self._probs(fed.scores[rows])
        labels = fed.labels[rows]
        if self.clip is None:
            pos, neg = one_vs_rest_histograms(probs, labels, self.grid)
            return np.rint(np.concatenate([pos.ravel(), neg.ravel()])).astype(np.int64)
        return self._clipped_units(probs, labels, fed.client_index[rows], fed.n_clients)

    def _clipped_units(
        self,
        probs: NDArray[np.float64],
        labels: NDArray[np.int64],
        client: NDArray[np.int64],
        n_clients: int,
    ) -> NDArray[np.int64]:
        """Σ over clients of their clipped histograms, each entry rounded per client.

        Sparse: one (client, class, bin, sign) cell per distinct key, its count
        times the client's clipping factor rounded to units, summed into the
        2·c·n_bins coordinates.
        """
        assert self.clip is not None
        c, n_bins = self.n_classes, self.n_bins
        f_pos, f_neg = self._clip_factors(probs, labels, client, n_clients)
        size = c * n_bins
        key = (client[:, None] * c + np.arange(c)[None, :]) * n_bins + self.grid.bin_index(
            probs.ravel()
        ).reshape(probs.shape)
        positive = labels[:, None] == np.arange(c)[None, :]
        out = np.zeros(2 * size, dtype=np.int64)
        for offset, mask, factors in ((0, positive, f_pos), (size, ~positive, f_neg)):
            uniq, counts = np.unique(key[mask], return_counts=True)
            cell = uniq % size  # class * n_bins + bin
            owner = uniq // size  # the client
            group = cell // n_bins  # the class
            units = to_units(counts * factors[owner, group], _STEP)
            out[offset : offset + size] += np.bincount(cell, weights=units, minlength=size).astype(
                np.int64
            )
        return out

    def _clip_factors(
        self,
        probs: NDArray[np.float64],
        labels: NDArray[np.int64],
        client: NDArray[np.int64],
        n_clients: int,
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Per-(client, class) factors min(1, C/‖h‖₂) clipping each client histogram.

        Computed sparsely from (client, class, bin) counts, so the cost is that
        of sorting n·c keys, never n_clients × c × n_bins.
        """
        assert self.clip is not None
        c, n_bins = self.n_classes, self.n_bins
        group = client[:, None] * c + np.arange(c)[None, :]
        key = group * n_bins + self.grid.bin_index(probs.ravel()).reshape(probs.shape)
        positive = labels[:, None] == np.arange(c)[None, :]
        factors = []
        for mask, clip in ((positive, self.clip[0]), (~positive, self.clip[1])):
            uniq, counts = np.unique(key[mask], return_counts=True)
            sq = np.bincount(
                uniq // n_bins, weights=counts.astype(np.float64) ** 2, minlength=n_clients * c
            )
            norms = np.sqrt(sq).reshape(n_clients, c)
            factors.append(np.minimum(1.0, clip / np.maximum(norms, 1.0)))
        return factors[0], factors[1]

    def decode(self, release: Release) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(P, N), each of shape (c, n_bins): the released (clipped, noisy) sums."""
        size = self.n_classes * self.n_bins
        v = np.asarray(release.values, dtype=np.float64)
        return v[:size].reshape(self.n_classes, -1), v[size:].reshape(self.n_classes, -1)


def _clip_rows(matrix: NDArray[np.float64], clip: float) -> NDArray[np.float64]:
    norms = np.sqrt(np.sum(np.square(matrix), axis=-1, keepdims=True))
    return np.asarray(matrix * np.minimum(1.0, clip / np.maximum(norms, np.finfo(float).tiny)))
