"""The privacy budget ledger: the only stateful object in fedeval.

Every release is charged here before its noise is drawn. A charge that would
exceed the total is refused with :class:`BudgetExceededError` and leaves the
ledger unchanged.

The ledger is a privacy *filter* (Rogers et al. 2016; Feldman & Zrnic 2021;
Whitehouse et al. 2023): its total (ε, δ) is fixed when it is made, and it
stays valid when each release, its parameters and its cost are chosen after
seeing the earlier releases' results. With ``composition="basic"`` (the
default of a ledger made by hand) the releases' own (ε, δ) add up. With
``composition="tight"`` (a :class:`fedeval.Context`'s) releases compose on
three tracks at once (:func:`fedeval.privacy.accounting.filter_reading`): the releases' own
(ε, δ) add up (basic composition, exact for pure releases); Gaussian-type
releases (discrete Gaussian, Skellam, user-level rounds) also compose in zCDP,
or in Rényi DP at :data:`~fedeval.privacy.accounting.RDP_ORDERS`;
``spent_epsilon`` is the best of the three. A raw ``charge(label, ε, δ)``
without a Rényi curve is read as "ε-DP except on an event of probability δ".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from fedeval.privacy.accounting import RDP_ORDERS, FilterReading, filter_reading, pure_rdp
from fedeval.privacy.guarantee import PrivacyUnit
from fedeval.validation import check_epsilon

__all__ = ["BudgetExceededError", "BudgetLedger", "Composition", "LedgerEntry", "split_bound"]

Composition = Literal["basic", "tight"]

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
    rho : float, optional
        The release is ρ-zCDP (a discrete Gaussian: ρ = Δ₂²/(2σ²)).
    rdp : tuple of float, optional
        Its Rényi DP ε(α) at :data:`~fedeval.privacy.accounting.RDP_ORDERS`
        (default: α·ρ when ``rho`` is given).
    failure_delta : float
        Of ``delta``, the probability of a failure event outside which the
        release keeps its Rényi bound (e.g. a noise share clipped in transport).

    Notes
    -----
    Without ``rho`` and ``rdp`` the entry is pure ε-DP except on an event of
    probability ``delta`` (δ = 0: pure ε-DP). With them, ``epsilon`` and
    ``delta`` are the release's own (ε, δ) guarantee, for the receipt, and the
    ledger composes the Rényi description.
    """

    label: str
    epsilon: float
    delta: float
    unit: PrivacyUnit
    details: dict[str, Any] = field(default_factory=dict)
    rho: float | None = None
    rdp: tuple[float, ...] | None = None
    failure_delta: float = 0.0

    @property
    def is_pure(self) -> bool:
        """ε-DP except on a failure event (no Rényi description)."""
        return self.rho is None and self.rdp is None

    def costs(self) -> tuple[float, np.ndarray, float]:
        """(zCDP ρ, RDP curve at RDP_ORDERS, failure δ) of this entry for the Rényi tracks."""
        if self.is_pure:
            eps = float(self.epsilon)
            return eps * eps / 2.0, pure_rdp(eps), float(self.delta)
        orders = np.asarray(RDP_ORDERS, dtype=np.float64)
        if self.rdp is not None:
            curve = np.asarray(self.rdp, dtype=np.float64)
        else:
            curve = orders * float(self.rho or 0.0)
        rho = math.inf if self.rho is None else float(self.rho)
        return rho, curve, float(self.failure_delta)


@dataclass
class BudgetLedger:
    """Tracks the privacy spent by a program's releases against a total fixed in advance.

    Parameters
    ----------
    total_epsilon : float
        Total ε available, > 0 (``math.inf`` for a ledger that only records).
    total_delta : float
        Total δ available, in [0, 1). With δ = 0 only pure releases fit.
    scope : str, optional
        What the guarantee of a release charged here covers, for its receipt.
    delta_declared : bool
        Whether ``total_delta`` is a budget (default). False makes a recorder
        of δ: it admits any δ and reads basic composition of what it holds.
    composition : {"basic", "tight"}
        "basic" (default for a ledger made by hand): the releases' own (ε, δ)
        add up, so one release may use the whole δ. "tight" (what a
        :class:`fedeval.Context` uses): the three-track filter of
        :func:`~fedeval.privacy.accounting.filter_reading`, where
        Gaussian-type releases compose in zCDP or Rényi DP; its δ is shared
        between the tracks, so one Gaussian release fits only with δ to spare.

    Examples
    --------
    >>> ledger = BudgetLedger(1.0)
    >>> ledger.charge("counts", 0.4)
    >>> round(ledger.remaining_epsilon, 12)
    0.6
    """

    total_epsilon: float
    total_delta: float = 0.0
    entries: list[LedgerEntry] = field(default_factory=list)
    scope: str | None = None
    delta_declared: bool = True
    composition: Composition = "basic"

    def __post_init__(self) -> None:
        if self.scope is None:
            self.scope = (
                "charged to the caller's BudgetLedger, one privacy filter of total "
                f"ε={self.total_epsilon:.4g}"
                + (f", δ={self.total_delta:.3g}" if self.total_delta else "")
                + " over every release charged to it"
            )
        if self.composition not in ("basic", "tight"):
            raise ValueError(f"composition must be 'basic' or 'tight', got {self.composition!r}")
        if self.total_epsilon != math.inf:
            self.total_epsilon = check_epsilon(self.total_epsilon, name="total_epsilon")
        if not 0.0 <= float(self.total_delta) < 1.0:
            raise ValueError(f"total_delta must lie in [0, 1), got {self.total_delta!r}")

    # ----------------------------------------------------------------- reading
    def reading(self, extra: list[LedgerEntry] | tuple[LedgerEntry, ...] = ()) -> FilterReading:
        """What the releases so far (plus ``extra``, if charged) spend, on the best track."""
        eps = 0.0
        dlt = 0.0
        rho = 0.0
        curve = np.zeros(len(RDP_ORDERS))
        failure = 0.0
        for entry in (*self.entries, *extra):
            e_rho, e_curve, e_fail = entry.costs()
            eps += float(entry.epsilon)
            dlt += float(entry.delta)
            rho += e_rho
            curve = curve + e_curve
            failure += e_fail
        if self.composition == "basic" or not self.delta_declared:
            # Basic composition: exact for pure releases, and valid under adaptive
            # choices (Rogers et al. 2016).
            return FilterReading(eps, dlt, "pure" if dlt == 0 else "basic")
        return filter_reading(
            basic_epsilon=eps,
            basic_delta=dlt,
            rho=rho,
            rdp=curve,
            failure_delta=failure,
            delta_total=float(self.total_delta),
        )

    @property
    def spent_epsilon(self) -> float:
        """The smallest total ε that admits every release so far (see the module docstring)."""
        return self.reading().epsilon

    @property
    def spent_delta(self) -> float:
        """The δ at which :attr:`spent_epsilon` holds."""
        return self.reading().delta

    @property
    def remaining_epsilon(self) -> float:
        return max(self.total_epsilon - self.spent_epsilon, 0.0)

    @property
    def remaining_delta(self) -> float:
        return max(self.total_delta - self.spent_delta, 0.0)

    def _fits(self, reading: FilterReading) -> bool:
        eps_ok = reading.epsilon <= self.total_epsilon * (1 + _SLACK) + _SLACK
        if not self.delta_declared:
            return eps_ok
        delta_ok = reading.delta <= self.total_delta * (1 + _SLACK) + 1e-15
        return eps_ok and delta_ok

    def can_afford(self, epsilon: float, delta: float = 0.0) -> bool:
        """Whether a pure release of ε (failing with probability δ) still fits."""
        return self.can_afford_all([LedgerEntry("query", float(epsilon), float(delta), "example")])

    def can_afford_all(self, releases: list[LedgerEntry] | tuple[LedgerEntry, ...]) -> bool:
        """Whether these releases, charged together, fit in what remains."""
        return self._fits(self.reading(releases))

    # ---------------------------------------------------------------- charging
    def charge(
        self,
        label: str,
        epsilon: float,
        delta: float = 0.0,
        *,
        unit: PrivacyUnit = "example",
        details: dict[str, Any] | None = None,
    ) -> None:
        """Record a pure release of ε (failing with probability δ), or refuse it unchanged.

        Raises
        ------
        BudgetExceededError
            If the release would exceed the total.
        ValueError
            If ε < 0 or δ ∉ [0, 1).
        """
        eps = float(epsilon)
        dlt = float(delta)
        if not (math.isfinite(eps) and eps >= 0):
            raise ValueError(f"a release's epsilon must be finite and >= 0, got {epsilon!r}")
        if not 0.0 <= dlt < 1.0:
            raise ValueError(f"a release's delta must lie in [0, 1), got {delta!r}")
        self.charge_all([LedgerEntry(label, eps, dlt, unit, dict(details or {}))])

    def charge_all(self, releases: list[LedgerEntry] | tuple[LedgerEntry, ...]) -> None:
        """Charge several releases atomically: all of them, or none.

        Raises
        ------
        BudgetExceededError
            If they do not fit; the message says what they cost and what remains.
        """
        after = self.reading(releases)
        if not self._fits(after):
            gaussian = any(not e.is_pure for e in releases)
            why = (
                "; Gaussian-type releases need δ > 0 in the budget"
                if gaussian and self.total_delta == 0
                else ""
            )
            label = releases[0].label if len(releases) == 1 else f"{len(releases)} releases"
            raise BudgetExceededError(
                f"{label} would bring the spend to ε={after.epsilon:.4g}, δ={after.delta:.3g}, "
                f"but the total is ε={self.total_epsilon:.4g}, δ={self.total_delta:.3g} "
                f"(ε={self.remaining_epsilon:.4g}, δ={self.remaining_delta:.3g} remain){why}"
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
        reading = self.reading()
        lines.append(
            f"spent ε={reading.epsilon:.4g} of {self.total_epsilon:.4g}"
            + (f", δ={reading.delta:.3g} of {self.total_delta:.3g}" if self.total_delta else "")
            + (f" (composed on the {reading.track} track)" if reading.track != "pure" else "")
        )
        return "\n".join(lines)


def split_bound(label: str, epsilon: float, delta: float, unit: PrivacyUnit) -> LedgerEntry:
    """One pure entry of (ε, δ) that costs at least any split of that pure budget over parts.

    On every track of the filter a pure ε costs at least as much as the same ε
    split over parts (Σ min(ε_k, αε_k²/2) ≤ min(ε, αε²/2); Σ ε_k²/2 ≤ ε²/2),
    so checking this entry checks a release whose split is not known yet
    (e.g. a hierarchy whose height is planned from a count released first).
    """
    return LedgerEntry(label, float(epsilon), float(delta), unit)
