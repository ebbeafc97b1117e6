"""Per-group, per-class sums: the statistics of the Hosmer–Lemeshow test.

Examples are put into Q groups by their predicted probability, with group edges
0 = t_0 ≤ t_1 ≤ ... ≤ t_Q = 1 and right-closed groups (t_{q-1}, t_q], the first
[0, t_1] (:func:`group_of`): the convention of Hosmer and Lemeshow's deciles of
risk as R computes them, and of the "at most" ECDF whose quantiles give the
private cut points. Per group and class the sketch sums either the
observed counts (``kind="observed"``: O_{0q}, O_{1q}, integers) or the expected
counts (``kind="expected"``: E_{0q} = Σ(1 − p), E_{1q} = Σ p, real numbers).
The vector is laid out group by group, negatives then positives.

Sensitivity (replacement, one example): the example leaves one group and class
and enters another, so the observed counts change by −1 in one cell and +1 in
another (L1 = 2), the expected counts by at most p + (1 − p) = 1 out and 1 in
(L1 = 2). Barczewski et al. bound both together by "at most 8 of the 4Q sums by
at most 1" and spend 8ε′ on them; this sketch declares their bound, 4 for each
kind, so that Algorithm 2's Lap(1/ε′) per sum is reproduced exactly (and is
conservative by a factor 2).

The expected counts are real numbers; they are sent in fixed point
(:mod:`~fedeval.sketches.fixed_point`): every example contributes
u = round(p/γ) units to its group's positive cell and 1/γ − u to its negative
cell (γ = 2^-20), so its two cells still add up to exactly one example, one
example still moves the cells by at most 1 each (in units of γ: 1/γ), and the
noise is discrete Laplace on integers instead of continuous Laplace on floats
(which an adversary could attack through the low-order bits, Mironov 2012).
The rounding bias is at most γ/2 per example.

References
----------
.. [1] J. Barczewski, A. Mawass and J. Ramon, "Differentially private empirical
   cumulative distribution functions", arXiv:2502.06651 (2025), §5.2,
   Algorithm 2, Theorem 2.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
from numpy.typing import NDArray

from fedeval.privacy.guarantee import Neighbouring, PrivacyUnit
from fedeval.privacy.sensitivity import Layout, Part, Sensitivity
from fedeval.sketches.base import Sketch
from fedeval.sketches.fixed_point import DEFAULT_BITS, rounding_note, to_units

if TYPE_CHECKING:
    from fedeval.aggregation.release import Release

__all__ = ["GroupSumsSketch", "group_of"]

_PAPER_L1 = 4.0


def group_of(edges: NDArray[np.float64], p: NDArray[np.float64]) -> NDArray[np.intp]:
    """Group of every probability: q with t_{q-1} < p ≤ t_q, the first group also holding t_0.

    Values at or below t_1 go to group 0 and values above t_{Q-1} to group Q − 1.
    """
    return np.searchsorted(np.asarray(edges)[1:-1], p, side="left")


_STEP = 2.0**-DEFAULT_BITS


@dataclass(frozen=True, eq=False)
class GroupSumsSketch(Sketch):
    """Observed or expected counts per (probability group, class).

    Parameters
    ----------
    edges : ndarray, shape (Q + 1,)
        Group edges 0 = t_0 ≤ ... ≤ t_Q = 1.
    kind : {"observed", "expected"}
    fixed_point : bool, default True
        Send the expected counts in units of γ = 2^-20 (needed for noise);
        exact sums (secure aggregation) use floats.
    """

    edges: NDArray[np.float64]
    kind: Literal["observed", "expected"] = "observed"
    fixed_point: bool = True
    name = "Hosmer-Lemeshow group sums"

    @property
    def integer(self) -> bool:  # type: ignore[override]
        return self.kind == "observed" or self.fixed_point

    def exact_variant(self) -> GroupSumsSketch:
        """Exact sums need no fixed point: expected counts are sent as floats."""
        return GroupSumsSketch(self.edges, self.kind, fixed_point=False)

    @property
    def resolution(self) -> float:
        """1 for the observed counts; γ = 2^-20 for the expected counts (fixed point)."""
        return _STEP if self.kind == "expected" and self.fixed_point else 1.0

    @property
    def n_groups(self) -> int:
        return int(self.edges.size - 1)

    @property
    def public_inputs(self) -> tuple[str, ...]:
        return ("the number of groups", "the group edges")

    @property
    def parts(self) -> tuple[Part, ...]:
        return (Part(f"{self.kind} counts", 2 * self.n_groups),)

    def sensitivity(
        self,
        *,
        unit: PrivacyUnit,
        neighbouring: Neighbouring,
        examples_per_unit: int,
        layout: Layout,
    ) -> Sensitivity:
        if unit not in ("example", "client"):
            raise ValueError(f"the group sums protect examples or clients, not {unit!r}")
        b = int(examples_per_unit)
        # In units of γ: one example moves a cell by at most 1/γ units (its two
        # rounded contributions u and 1/γ − u lie in [0, 1/γ]).
        l1 = _PAPER_L1 * b / self.resolution
        derivation = (
            f"one example changes at most 4 of the {2 * self.n_groups} {self.kind} sums by at "
            "most 1 (Barczewski et al. 2025, Theorem 2's bound)"
        )
        if self.kind == "expected":
            derivation += "; " + rounding_note(_STEP, "each probability")
        return Sensitivity(
            unit,
            neighbouring,
            l1,
            l1,
            (Part(f"{self.kind} counts", 2 * self.n_groups, 1.0, l1),),
            integer=self.integer,
            examples_per_unit=b,
            derivation=derivation,
        )

    def encode(
        self,
        scores: NDArray[np.float64],
        labels: NDArray[np.int64],
        clients: NDArray[np.int64],
    ) -> NDArray[np.int64] | NDArray[np.float64]:
        q = self.n_groups
        group = group_of(self.edges, scores)
        if self.kind == "expected" and not self.fixed_point:
            exact = [
                np.bincount(group, 1.0 - scores, minlength=q),
                np.bincount(group, scores, minlength=q),
            ]
            return np.stack(exact, axis=1).ravel()
        if self.kind == "observed":
            pos = np.asarray(labels, dtype=np.int64)
            neg = 1 - pos
        else:
            # Fixed point, per example: u = round(p/γ) positive units, 1/γ − u negative.
            pos = to_units(scores, _STEP)
            neg = round(1.0 / _STEP) - pos
        cols = [np.bincount(group, neg, minlength=q), np.bincount(group, pos, minlength=q)]
        # Weighted bincount sums in float64: exact for integers below 2^53.
        return np.rint(np.stack(cols, axis=1)).astype(np.int64).ravel()

    def decode(self, release: Release) -> NDArray[np.float64]:
        """The (Q, 2) table: column 0 negatives, column 1 positives."""
        return np.asarray(release.values, dtype=np.float64).reshape(self.n_groups, 2)
