"""The privacy budget ledger: the only stateful object in fedeval.

Every release is charged here before its result is returned. A charge that
would exceed the total is refused with :class:`BudgetExceededError` and leaves
the ledger unchanged. Composition across releases is basic (sequential)
composition: ε and δ add up. Releases that compose more tightly (Gaussian rounds
under RDP) are accounted by :mod:`fedeval.privacy.accounting` first and charged
here as one entry.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from fedeval.privacy.guarantee import PrivacyUnit
from fedeval.validation import check_epsilon

__all__ = ["BudgetExceededError", "BudgetLedger", "LedgerEntry"]

# Float sums of splits such as ε/h·h can exceed ε by an ulp; allow that much.
_SLACK = 1e-9


class BudgetExceededError(ValueError):
    """A release would spend more privacy budget than remains."""


@dataclass(frozen=True)
class LedgerEntry:
    """One charged release.

    Attributes
    ----------
    label : str
        What was released (e.g. ``"hierarchy level 3 (positives+negatives)"``).
    epsilon, delta : float
    unit : str
        Privacy unit of the release.
    details : dict
        Free-form parameters a reviewer needs (noise scale, sensitivity, ...).
    """

    label: str
    epsilon: float
    delta: float
    unit: PrivacyUnit
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class BudgetLedger:
    """Tracks (ε, δ) spent against a total.

    Parameters
    ----------
    total_epsilon : float
        Total ε available, > 0 (``math.inf`` for a ledger that only records).
    total_delta : float
        Total δ available, in [0, 1).

    Examples
    --------
    >>> ledger = BudgetLedger(1.0)
    >>> ledger.charge("counts", 0.4)
    >>> ledger.remaining_epsilon
    0.6
    """

    total_epsilon: float
    total_delta: float = 0.0
    entries: list[LedgerEntry] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.total_epsilon != math.inf:
            self.total_epsilon = check_epsilon(self.total_epsilon, name="total_epsilon")
        if not 0.0 <= float(self.total_delta) < 1.0:
            raise ValueError(f"total_delta must lie in [0, 1), got {self.total_delta!r}")

    @property
    def spent_epsilon(self) -> float:
        return math.fsum(e.epsilon for e in self.entries)

    @property
    def spent_delta(self) -> float:
        return math.fsum(e.delta for e in self.entries)

    @property
    def remaining_epsilon(self) -> float:
        return max(self.total_epsilon - self.spent_epsilon, 0.0)

    @property
    def remaining_delta(self) -> float:
        return max(self.total_delta - self.spent_delta, 0.0)

    def can_afford(self, epsilon: float, delta: float = 0.0) -> bool:
        """Whether a release of (ε, δ) fits in what remains."""
        eps_ok = self.spent_epsilon + epsilon <= self.total_epsilon * (1 + _SLACK) + _SLACK
        delta_ok = self.spent_delta + delta <= self.total_delta * (1 + _SLACK) + 1e-15
        return eps_ok and delta_ok

    def charge(
        self,
        label: str,
        epsilon: float,
        delta: float = 0.0,
        *,
        unit: PrivacyUnit = "example",
        details: dict[str, Any] | None = None,
    ) -> None:
        """Record a release, or refuse it without changing the ledger.

        Raises
        ------
        BudgetExceededError
            If the release would exceed the total ε or δ.
        ValueError
            If ε < 0 or δ ∉ [0, 1).
        """
        eps = float(epsilon)
        dlt = float(delta)
        if not (math.isfinite(eps) and eps >= 0):
            raise ValueError(f"a release's epsilon must be finite and >= 0, got {epsilon!r}")
        if not 0.0 <= dlt < 1.0:
            raise ValueError(f"a release's delta must lie in [0, 1), got {delta!r}")
        if not self.can_afford(eps, dlt):
            raise BudgetExceededError(
                f"release {label!r} needs ε={eps:.4g}, δ={dlt:.3g} but only "
                f"ε={self.remaining_epsilon:.4g}, δ={self.remaining_delta:.3g} remain "
                f"of the total ε={self.total_epsilon:.4g}, δ={self.total_delta:.3g}"
            )
        self.entries.append(LedgerEntry(label, eps, dlt, unit, dict(details or {})))

    def charge_all(self, releases: list[LedgerEntry]) -> None:
        """Charge several releases atomically: all of them, or none."""
        eps = math.fsum(r.epsilon for r in releases)
        dlt = math.fsum(r.delta for r in releases)
        if not self.can_afford(eps, dlt):
            raise BudgetExceededError(
                f"{len(releases)} releases need ε={eps:.4g}, δ={dlt:.3g} but only "
                f"ε={self.remaining_epsilon:.4g}, δ={self.remaining_delta:.3g} remain"
            )
        self.entries.extend(releases)

    def summary(self) -> str:
        """A human-readable receipt: one line per release, then the totals."""
        lines = [
            f"{e.label}: ε={e.epsilon:.4g}"
            + (f", δ={e.delta:.3g}" if e.delta else "")
            + f" per {e.unit}"
            for e in self.entries
        ]
        lines.append(
            f"spent ε={self.spent_epsilon:.4g} of {self.total_epsilon:.4g}"
            + (f", δ={self.spent_delta:.3g} of {self.total_delta:.3g}" if self.total_delta else "")
        )
        return "\n".join(lines)
