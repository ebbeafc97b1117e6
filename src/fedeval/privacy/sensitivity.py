"""Sensitivity: what one privacy unit can change in an encoded vector.

Every sketch declares its sensitivity once (``sketch.sensitivity(...)``); the
one dispatch, :func:`fedeval.privacy.mechanism_for.mechanism_for`, calibrates the
noise to it. Nothing else restates a sensitivity.

Noise units
-----------
A sketch may ask for different noise scales on different coordinates (a budget
split between parts, or a per-client scale such as the vertical protocol's
largest rank). It does so with weights w: the noise on coordinate i is w_i times
a common noise variable, and the sensitivity is stated in noise units,

    L1 = max over neighbours Σ_i |Δ_i| / w_i,    L2 = max (Σ_i (Δ_i / w_i)²)^½.

Pure-ε mechanisms (Laplace, discrete Laplace) use ``l1`` with ``l1_weights``;
Gaussian mechanisms use ``l2`` with ``l2_weights`` (a budget split is a split
of ε for the first and of 1/σ² for the second, so the two weightings differ).
Without weights these are the usual L1 and L2 sensitivities.

Noise basis
-----------
The noise need not live on the released coordinates. The tree mechanism for
ECDFs draws one variable per tree node and releases prefix counts plus the sum
of the noise on each point's root path (Barczewski et al. 2025, eq. 2); its
sensitivity is measured in node space (Lemma 1). Such a sketch sets
``basis_size`` to the number of noise variables and maps them to its
coordinates itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from fedeval.privacy.guarantee import Neighbouring, PrivacyUnit

__all__ = ["Layout", "Part", "Sensitivity", "one_cell_per_part"]

Layout = Literal["whole", "assign"]
"""How clients report: "whole" = every client encodes every part (the budget is
split over the parts, sequential composition); "assign" = clients are split at
random into one group per part and each group encodes only its part (full
budget per part, parallel composition)."""


@dataclass(frozen=True)
class Part:
    """A named block of a sketch's coordinates with its share of the budget.

    Attributes
    ----------
    name : str
        Shown in the receipt (e.g. "level 3").
    length : int
        Number of coordinates.
    budget_share : float
        Fraction of ε this part receives when every client encodes every part;
        the shares of a sketch sum to 1.
    l1, l2 : float
        What one unit changes in this part (informational, for the receipt).
    """

    name: str
    length: int
    budget_share: float = 1.0
    l1: float = 1.0
    l2: float = 1.0


@dataclass(frozen=True)
class Sensitivity:
    """Sensitivity of a sketch to one privacy unit, in noise units.

    Attributes
    ----------
    unit : {"example", "client", "label"}
    neighbouring : {"add_remove", "replace"}
    l1, l2 : float
        Sensitivities in noise units (see the module docstring); ``inf`` when
        the encoding has no finite bound in that norm.
    parts : tuple of Part
        The blocks the budget is split over (one part when there is no split);
        shown in the receipt.
    integer : bool
        Whether encoded values are integers (so integer noise can be used).
    l1_weights, l2_weights : ndarray or None
        Per noise coordinate, for pure-ε and for Gaussian mechanisms; None
        means all 1.
    basis_size : int or None
        Number of noise variables when the noise lives in another basis than
        the released coordinates (the ECDF tree's nodes); None otherwise.
    examples_per_unit : int
        How many examples one unit may contribute (1 for an example, the
        contribution bound for a client).
    derivation : str
        One sentence: why these are the sensitivities.
    """

    unit: PrivacyUnit
    neighbouring: Neighbouring
    l1: float
    l2: float
    parts: tuple[Part, ...]
    integer: bool = True
    l1_weights: NDArray[np.float64] | None = field(default=None, repr=False)
    l2_weights: NDArray[np.float64] | None = field(default=None, repr=False)
    basis_size: int | None = None
    examples_per_unit: int = 1
    derivation: str = ""

    @property
    def uniform(self) -> bool:
        """Whether every noise coordinate has weight 1 (needed by noise split into shares)."""
        return all(w is None or bool(np.all(w == 1.0)) for w in (self.l1_weights, self.l2_weights))

    def as_dict(self) -> dict[str, Any]:
        """What the receipt records (JSON-safe: an unbounded norm is ``None``)."""
        return {
            "unit": self.unit,
            "neighbouring": self.neighbouring,
            "l1": _finite(self.l1),
            "l2": _finite(self.l2),
            "examples_per_unit": self.examples_per_unit,
            "integer": self.integer,
            "weighted": not self.uniform,
            "parts": [
                {
                    "name": p.name,
                    "length": p.length,
                    "budget_share": _finite(p.budget_share),
                    "l1": _finite(p.l1),
                    "l2": _finite(p.l2),
                }
                for p in self.parts
            ],
            "derivation": self.derivation,
        }


def one_cell_per_part(
    parts: tuple[Part, ...],
    *,
    unit: PrivacyUnit,
    neighbouring: Neighbouring,
    l1: float,
    l2: float,
    layout: Layout,
    examples_per_unit: int,
    what: str,
    noun: str,
) -> Sensitivity:
    """Sensitivity of a sketch in which one unit changes every part by (l1, l2).

    Parameters
    ----------
    parts : tuple of Part
        The sketch's parts (names and lengths; their budget shares are set here).
    l1, l2 : float
        What one unit changes in a single part.
    layout : {"whole", "assign"}
        "assign": each client reports one part, so parts are released by
        disjoint clients (parallel composition) and the sensitivity is that of
        one part, each part with the whole budget. "whole": every client
        reports every part; over k parts L1 = k·l1, L2 = √k·l2, and the budget
        is split evenly, ε/k per part.
    what, noun : str
        The derivation in words: what one unit changes, and what a part is
        called ("level", "part").
    """
    k = len(parts)
    if layout == "assign":
        return Sensitivity(
            unit,
            neighbouring,
            l1,
            l2,
            tuple(Part(p.name, p.length, 1.0, l1, l2) for p in parts),
            examples_per_unit=examples_per_unit,
            derivation=(
                f"{what}: L1 = {l1:g} in the one {noun} its client reports, {noun}s released "
                "by disjoint clients (parallel composition)"
            ),
        )
    return Sensitivity(
        unit,
        neighbouring,
        k * l1,
        math.sqrt(k) * l2,
        tuple(Part(p.name, p.length, 1.0 / k, l1, l2) for p in parts),
        examples_per_unit=examples_per_unit,
        derivation=(
            f"{what} in each of the {k} {noun}s: L1 = {k * l1:g} over the vector "
            f"({l1:g} per {noun}, an even budget split of ε/{k} per {noun})"
        ),
    )


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None
