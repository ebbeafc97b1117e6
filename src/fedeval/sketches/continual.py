"""A sketch released every period through a continual mechanism: its sensitivity over the horizon.

Every period t the clients of that period encode the per-period sketch (for
monitoring, the per-class hierarchy of :mod:`fedeval.sketches.hierarchy`)
into x_t; a continual mechanism (:mod:`fedeval.privacy.mechanisms.continual`)
then publishes, for every coordinate independently, noisy rows of R x over
the periods. :class:`PeriodicSketch` declares what one privacy unit can
change in *all* those rows together, so that the one dispatch
(:func:`fedeval.privacy.mechanism_for.mechanism_for`) calibrates the noise of
the whole horizon once and charges its budget once.

Sensitivity over the horizon. One unit moves the per-period vectors by Δ_s
(period s); the rows of coordinate j move by Σ_s R[:, s] Δ_{s,j}. With R ≥ 0
entrywise (every strategy fedeval builds), the triangle inequality gives

    ‖ΔY‖₁ ≤ c₁ Σ_s ‖Δ_s‖₁,   ‖ΔY‖₂ ≤ c₂ Σ_s ‖Δ_s‖₂,

c_p the largest column p-norm of R; both are attained when the unit's whole
change falls in one period (in the worst column). Σ_s ‖Δ_s‖_p is at most the
per-period sketch's sensitivity to the same unit *with all its examples*:

* event level (``unit="example"``): each example belongs to one period, so
  Σ_s ‖Δ_s‖ is the per-period sensitivity of one example;
* client level across periods (``unit="client"``, ``examples_per_unit=B``):
  the client's examples over the *whole horizon* number at most B (its
  contribution bound for the horizon), and the per-period sketch's
  sensitivity for B examples bounds the sum over periods, because it is
  additive over examples (B examples in one node: L1 = B per level, L2 = B
  per level, as the hierarchy declares).

So the declared sensitivity is the per-period one times (c₁, c₂). The sketch
holds the two numbers, not the strategy: sketches import nothing from the
mechanisms (DESIGN.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from fedeval.privacy.guarantee import Neighbouring, PrivacyUnit
from fedeval.privacy.sensitivity import Layout, Part, Sensitivity
from fedeval.sketches.base import Sketch

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from fedeval.aggregation.release import Release

__all__ = ["PeriodicSketch"]


@dataclass(frozen=True)
class PeriodicSketch(Sketch):
    """The per-period sketch ``period``, released over ``horizon`` periods by a linear strategy.

    Parameters
    ----------
    period : Sketch
        What the clients of one period encode (its ``encode`` is this sketch's).
    horizon : int
        T, the number of periods the budget covers.
    column_l1, column_l2 : float
        The strategy's largest column L1 and L2 norms (c₁, c₂ of the module
        docstring); integers in fixed-point units for L1.
    rows : int
        Noisy rows per coordinate over the horizon (for the receipt).
    strategy : str
        The strategy in words (for the receipt).
    """

    period: Sketch
    horizon: int
    column_l1: float
    column_l2: float
    rows: int
    strategy: str

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"{self.period.name} over {self.horizon} periods"

    @property
    def one_hot(self) -> bool:  # type: ignore[override]
        # One report per example (local DP) has no continual form here: no noise on sums.
        return False

    @property
    def reads_clients(self) -> bool:  # type: ignore[override]
        return self.period.reads_clients

    @property
    def public_inputs(self) -> tuple[str, ...]:
        return (
            *self.period.public_inputs,
            f"the horizon ({self.horizon} periods) and the continual strategy",
        )

    @property
    def parts(self) -> tuple[Part, ...]:
        return self.period.parts

    def sensitivity(
        self,
        *,
        unit: PrivacyUnit,
        neighbouring: Neighbouring,
        examples_per_unit: int,
        layout: Layout,
    ) -> Sensitivity:
        """The per-period sensitivity times the strategy's column norms (module docstring).

        Raises
        ------
        ValueError
            Layout "assign" (clients split over parts is a per-release
            sampling, not defined over periods), or what the period sketch raises.
        """
        if layout != "whole":
            raise ValueError(
                "a continual release needs every client to report every part (layout 'whole')"
            )
        base = self.period.sensitivity(
            unit=unit, neighbouring=neighbouring, examples_per_unit=examples_per_unit, layout=layout
        )
        c1, c2 = float(self.column_l1), float(self.column_l2)
        if unit == "client":
            scope = (
                f"one client's at most {examples_per_unit} example(s) over the whole horizon "
                "(its contribution bound for all periods together)"
            )
        else:
            scope = f"one {unit}, which belongs to one period"
        derivation = (
            f"per period: {base.derivation}; over {self.horizon} periods ({self.strategy}) the "
            f"change of {scope} reaches the rows through one column of the strategy at worst: "
            f"L1 ×{c1:g} = {base.l1 * c1:g}, L2 ×{c2:.6g} = {base.l2 * c2:.6g}"
        )
        parts = tuple(
            Part(
                f"{p.name}, every period",
                p.length,
                p.budget_share,
                p.l1 * c1,
                p.l2 * c2,
            )
            for p in base.parts
        )
        return replace(
            base,
            l1=base.l1 * c1 if math.isfinite(base.l1) else base.l1,
            l2=base.l2 * c2 if math.isfinite(base.l2) else base.l2,
            parts=parts,
            derivation=derivation,
        )

    # ---------------------------------------------------------------- encode
    def encode(
        self,
        scores: NDArray[np.float64],
        labels: NDArray[np.int64],
        clients: NDArray[np.int64],
    ) -> NDArray[Any]:
        """One period's vector (the mechanism places it in the rows)."""
        return self.period.encode(scores, labels, clients)

    # ---------------------------------------------------------------- decode
    def decode(self, release: Release) -> Any:
        """An estimate over some periods, released in the period sketch's coordinates."""
        return self.period.decode(release)
