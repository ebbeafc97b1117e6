"""What a release promises: the privacy guarantee attached to every mechanism."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Guarantee", "PrivacyUnit"]

PrivacyUnit = Literal["example", "client", "label", "none"]


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
        What neighbouring datasets differ in: one example added/removed, one
        client's whole contribution, or one label changed.
    statement : str
        One sentence a privacy reviewer can check (mechanism, sensitivity, noise).
    """

    epsilon: float
    delta: float
    unit: PrivacyUnit
    statement: str

    def __str__(self) -> str:
        if self.unit == "none":
            return self.statement
        d = f", δ={self.delta:.3g}" if self.delta > 0 else ""
        return f"(ε={self.epsilon:.4g}{d})-DP per {self.unit}: {self.statement}"
