"""Per-group, per-class sums: the statistics of the Hosmer–Lemeshow test.

Examples are put into Q groups by their predicted probability, with group edges
0 = t_0 ≤ t_1 ≤ ... ≤ t_Q = 1 (left-closed groups, the grid convention of
:mod:`fedeval.sketches.grid`). Per group and class the sketch sums either the
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
from fedeval.sketches.grid import bin_of_edges

if TYPE_CHECKING:
    from fedeval.aggregation.release import Release

__all__ = ["GroupSumsSketch"]

_PAPER_L1 = 4.0


@dataclass(frozen=True, eq=False)
class GroupSumsSketch(Sketch):
    """Observed or expected counts per (probability group, class).

    Parameters
    ----------
    edges : ndarray, shape (Q + 1,)
        Group edges 0 = t_0 ≤ ... ≤ t_Q = 1.
    kind : {"observed", "expected"}
    """

    edges: NDArray[np.float64]
    kind: Literal["observed", "expected"] = "observed"
    name = "Hosmer-Lemeshow group sums"

    @property
    def integer(self) -> bool:  # type: ignore[override]
        return self.kind == "observed"

    @property
    def n_groups(self) -> int:
        return int(self.edges.size - 1)

    @property
    def public_inputs(self) -> tuple[str, ...]:
        return ("the number of groups",)

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
        l1 = _PAPER_L1 * b
        return Sensitivity(
            unit,
            neighbouring,
            l1,
            l1,
            (Part(f"{self.kind} counts", 2 * self.n_groups, 1.0, l1),),
            integer=self.integer,
            examples_per_unit=b,
            derivation=(
                f"one example changes at most 4 of the {2 * self.n_groups} {self.kind} sums by at "
                "most 1 (Barczewski et al. 2025, Theorem 2's bound)"
            ),
        )

    def encode(
        self,
        scores: NDArray[np.float64],
        labels: NDArray[np.int64],
        clients: NDArray[np.int64],
    ) -> NDArray[np.float64] | NDArray[np.int64]:
        q = self.n_groups
        group = bin_of_edges(self.edges, scores)
        y = np.asarray(labels, dtype=np.float64)
        if self.kind == "observed":
            cols = [np.bincount(group, 1.0 - y, minlength=q), np.bincount(group, y, minlength=q)]
            return np.rint(np.stack(cols, axis=1)).astype(np.int64).ravel()
        cols = [
            np.bincount(group, 1.0 - scores, minlength=q),
            np.bincount(group, scores, minlength=q),
        ]
        return np.stack(cols, axis=1).ravel()

    def decode(self, release: Release) -> NDArray[np.float64]:
        """The (Q, 2) table: column 0 negatives, column 1 positives."""
        return np.asarray(release.values, dtype=np.float64).reshape(self.n_groups, 2)
