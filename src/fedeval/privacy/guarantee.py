"""What a release promises: the privacy guarantee attached to every mechanism.

A guarantee states five things a privacy reviewer needs (DESIGN.md, "Semantics
that must be explicit"): ε and δ, the privacy unit (what two neighbouring
datasets differ in), the neighbouring relation (add/remove one unit, or replace
one unit's data), which inputs the release treats as public, and one sentence
naming the mechanism and its sensitivity.

"No differential privacy" has one encoding: :meth:`Guarantee.none`, whose
``epsilon`` is ``math.inf`` and ``unit`` is ``"none"``. The budget a release
*charges* is a different quantity (0 for such a release); see
:class:`~fedeval.privacy.receipt.Receipt`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Guarantee", "Neighbouring", "PrivacyUnit"]

PrivacyUnit = Literal["example", "client", "label", "none"]
Neighbouring = Literal["add_remove", "replace"]

_RELATION = {
    "add_remove": "add or remove one {unit}",
    "replace": "replace one {unit}'s data",
}


@dataclass(frozen=True)
class Guarantee:
    """A differential-privacy guarantee.

    Attributes
    ----------
    epsilon : float
        ε of (ε, δ)-DP; ``math.inf`` for no DP (secure aggregation alone).
    delta : float
        δ of (ε, δ)-DP; 0 for pure DP.
    unit : {"example", "client", "label", "none"}
        What neighbouring datasets differ in: one example, one client's whole
        contribution, or one label; "none" for no DP.
    statement : str
        One sentence a privacy reviewer can check (mechanism, sensitivity, noise).
    neighbouring : {"add_remove", "replace"}
        Neighbours differ by adding or removing one unit, or by replacing one
        unit's data (the number of units is then public).
    public : tuple of str
        The inputs the release treats as public (for example the number of
        participating clients, the score domain, the hierarchy height).
    """

    epsilon: float
    delta: float
    unit: PrivacyUnit
    statement: str
    neighbouring: Neighbouring = "add_remove"
    public: tuple[str, ...] = ()

    @classmethod
    def none(cls, statement: str, *, public: tuple[str, ...] = ()) -> Guarantee:
        """The one encoding of "no differential privacy" (ε = ∞, unit "none")."""
        return cls(math.inf, 0.0, "none", statement, "add_remove", public)

    @property
    def is_private(self) -> bool:
        """Whether this is a DP guarantee at all (False for secure aggregation alone)."""
        return self.unit != "none"

    @property
    def relation(self) -> str:
        """The neighbouring relation in words, e.g. "add or remove one example"."""
        if not self.is_private:
            return "none (no differential privacy)"
        return _RELATION[self.neighbouring].format(unit=self.unit)

    def as_dict(self) -> dict[str, Any]:
        """JSON-safe fields; ``epsilon`` is ``None`` for no DP (JSON has no ∞)."""
        return {
            "epsilon": self.epsilon if math.isfinite(self.epsilon) else None,
            "delta": self.delta,
            "unit": self.unit,
            "neighbouring": self.relation,
            "public_inputs": list(self.public),
            "statement": self.statement,
        }

    @property
    def details(self) -> str:
        """The guarantee in full: ε, δ, the neighbouring relation and the mechanism's statement."""
        if not self.is_private:
            return self.statement
        d = f", δ={self.delta:.3g}" if self.delta > 0 else ""
        return f"(ε={self.epsilon:.4g}{d})-DP, neighbours {self.relation}: {self.statement}"

    def __str__(self) -> str:
        """One line: ``(ε=1, δ=0)-DP per example (add/remove)``; :attr:`details` in full."""
        if not self.is_private:
            return "no differential privacy (exact sums)"
        relation = "add/remove" if self.neighbouring == "add_remove" else "replace"
        return f"(ε={self.epsilon:.4g}, δ={self.delta:.3g})-DP per {self.unit} ({relation})"
