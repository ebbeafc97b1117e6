"""Public facts: what a release may use, and publish, exactly besides its noisy output.

A differentially private release is a function of its noise and of the data;
everything else it publishes (a planned hierarchy height, a number of bins, a
count printed beside the result) must be public, or it leaks. An outside audit
found the exact number of participating clients published, and steering the
planned height, under client-level DP: 64 against 65 one-example clients gave
height 4 against 5 in every trial (ε = ∞). This module is the one place that
decides what counts are public.

Rules (DESIGN.md, "Participation"):

* **Declared facts** (:class:`Public`) are public, used as given and never
  compared with the data (a comparison would itself depend on the data).
* Without differential privacy (secure aggregation) every count is public.
* The number of participating clients is public when neighbouring datasets
  have the same clients: under replacement of one unit's data. It is *not*
  public under add/remove of a client, nor under add/remove of an example,
  because a client may hold just that example (the default without a client
  column is one example per client, where adding an example adds a client).
* The number of examples is public when the model makes it so
  (``privacy.example_count_public``: local DP, label DP, replacement of one
  example under distributed or central DP).
* Otherwise a procedure that must choose parameters from the size of the data
  releases a noisy count first, with :data:`COUNT_SHARE` of its budget, and
  plans from that (:func:`planning_size`); the receipt lists the count as a
  release of its own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from fedeval.aggregation import Path, release
from fedeval.data import Federation, Scan
from fedeval.privacy.ledger import BudgetExceededError, BudgetLedger, split_bound
from fedeval.privacy.mechanism_for import mechanism_for
from fedeval.privacy.models import PrivacyModel
from fedeval.privacy.receipt import Receipt
from fedeval.sketches.client_count import ExampleCountSketch
from fedeval.validation import check_int_at_least

__all__ = [
    "COUNT_SHARE",
    "PlanningSize",
    "Public",
    "PublicCounts",
    "client_count_public",
    "planning_size",
    "public_counts",
]

COUNT_SHARE = 0.05
"""Share of a release's ε spent on a noisy count of the examples when no size is public.

The planner needs the size only to within a factor (heights and bin counts
grow with its logarithm or a small power), so a small share suffices: at
ε = 1 the count's noise has a standard deviation of about 28 examples per
unit of sensitivity, and the rest of the budget loses 5 %."""


@dataclass(frozen=True)
class Public:
    """Facts the user declares public; results may publish them exactly.

    Parameters
    ----------
    n_clients : int, optional
        The number of participating clients (e.g. the cohort size a
        deployment announces). Used to plan and published as given.
    n_examples : int, optional
        A public number, or public bound, of examples.
    score_range : (float, float), optional
        The score domain; must equal the data's declared domain
        (``Federation(score_range=...)``), which is public by declaration too.

    Notes
    -----
    A declared fact is never checked against the data: a check would make
    the output depend on the data outside the privacy mechanism. Declaring a
    wrong value costs accuracy, not privacy.
    """

    n_clients: int | None = None
    n_examples: int | None = None
    score_range: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        if self.n_clients is not None:
            object.__setattr__(
                self, "n_clients", check_int_at_least(self.n_clients, 1, name="n_clients")
            )
        if self.n_examples is not None:
            object.__setattr__(
                self, "n_examples", check_int_at_least(self.n_examples, 1, name="n_examples")
            )
        if self.score_range is not None:
            lo, hi = (float(x) for x in self.score_range)
            if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
                raise ValueError(
                    f"score_range must be finite with low < high, got {self.score_range}"
                )
            object.__setattr__(self, "score_range", (lo, hi))

    def check_domain(self, data: Federation | Scan) -> None:
        """Raise if the declared score domain differs from the data's declared one."""
        if self.score_range is not None and tuple(data.score_range) != self.score_range:
            raise ValueError(
                f"the declared public score_range {self.score_range} differs from the data's "
                f"declared domain {tuple(data.score_range)}; declare one domain"
            )

    def as_dict(self) -> dict[str, Any]:
        return {
            "n_clients": self.n_clients,
            "n_examples": self.n_examples,
            "score_range": None if self.score_range is None else list(self.score_range),
        }


def client_count_public(privacy: PrivacyModel) -> bool:
    """Whether the number of participating clients is public under ``privacy`` (see module doc)."""
    if getattr(privacy, "regime", None) == "exact":
        return True
    return getattr(privacy, "neighbouring", "add_remove") == "replace"


@dataclass(frozen=True)
class PublicCounts:
    """The counts a release may use and publish exactly, and where each came from."""

    n_clients: int | None
    n_clients_source: str
    n_examples: int | None
    n_examples_source: str


def public_counts(
    privacy: PrivacyModel, data: Federation | Scan, public: Public | None = None
) -> PublicCounts:
    """The public number of clients and of examples under ``privacy`` (None when not public)."""
    pub = public or Public()
    if pub.n_clients is not None:
        n_clients: int | None = pub.n_clients
        c_source = "declared public by the caller (used as given, not checked)"
    elif client_count_public(privacy):
        n_clients = data.n_clients
        c_source = (
            "public: the privacy model adds no noise"
            if getattr(privacy, "regime", None) == "exact"
            else "public: neighbouring datasets have the same clients (replacement)"
        )
    else:
        n_clients = None
        c_source = (
            "not public under the privacy model (adding or removing a unit can add or remove "
            "a client); declare it with fe.Public(n_clients=...) to use it"
        )
    if pub.n_examples is not None:
        n_examples: int | None = pub.n_examples
        e_source = "declared public by the caller (used as given, not checked)"
    elif getattr(privacy, "regime", None) == "exact":
        n_examples, e_source = data.n_examples, "public: the privacy model adds no noise"
    elif bool(getattr(privacy, "example_count_public", False)):
        n_examples = data.n_examples
        e_source = "public under the privacy model (neighbouring datasets have the same number of examples)"
    else:
        n_examples = None
        e_source = (
            "not public under the privacy model; declare it with fe.Public(n_examples=...) "
            "to use it"
        )
    return PublicCounts(n_clients, c_source, n_examples, e_source)


@dataclass(frozen=True)
class PlanningSize:
    """The size a planner may use, and what it cost.

    Attributes
    ----------
    n_clients : int or None
        The public number of clients (None when not public).
    n_examples : int
        M for the planner: public, declared, the public client count (one
        example per client assumed), or the rounded noisy count.
    source : dict
        Where each came from, in words (published as ``parameters["public_inputs"]``).
    released_count : float or None
        The noisy count of examples, when one was released.
    released_count_se : float or None
        Its standard error.
    receipt : Receipt or None
        The count release's receipt, to compose with the main release's.
    remaining : privacy model
        The model for the main release: the whole budget, or all but
        :data:`COUNT_SHARE` of it when a count was released.
    """

    n_clients: int | None
    n_examples: int
    source: dict[str, str]
    released_count: float | None
    released_count_se: float | None
    receipt: Receipt | None
    remaining: PrivacyModel

    def parameters(self) -> dict[str, Any]:
        """What an evaluation publishes about its size (nothing that is not public)."""
        out: dict[str, Any] = {
            "n_clients": self.n_clients,
            "n_examples": self.n_examples if self.released_count is None else None,
            "public_inputs": dict(self.source),
        }
        if self.released_count is not None:
            out["n_examples_released"] = self.released_count
            out["n_examples_released_se"] = self.released_count_se
        return out


def planning_size(
    data: Federation | Scan,
    privacy: PrivacyModel,
    *,
    public: Public | None = None,
    needed: bool = True,
    path: Path = "fast",
    rng: np.random.Generator,
    ledger: BudgetLedger | None = None,
) -> PlanningSize:
    """The size to plan from: a public one, or a noisy count released first.

    Parameters
    ----------
    data : Federation or Scan
    privacy : privacy model
        Of the whole procedure.
    public : Public, optional
        Declared facts.
    needed : bool
        Whether the caller plans anything from the size (False when every
        parameter was given): then no count is released.
    path, rng, ledger
        For the count release, as in :func:`fedeval.aggregation.release`.

    Returns
    -------
    PlanningSize

    Raises
    ------
    BudgetExceededError
        The ledger cannot afford the count together with the rest of the
        procedure's budget (checked before the count is drawn, so a refusal
        spends nothing).

    Notes
    -----
    Privacy: a noisy count is one release of :class:`ExampleCountSketch`
    under ``privacy.scaled(COUNT_SHARE)``; the rest of the procedure gets
    ``privacy.scaled(1 - COUNT_SHARE)``. Both are pure (or the model's own
    kind), so the two compose to ``privacy``'s budget.
    """
    counts = public_counts(privacy, data, public)
    source = {"n_clients": counts.n_clients_source, "n_examples": counts.n_examples_source}
    if counts.n_examples is not None:
        return PlanningSize(counts.n_clients, counts.n_examples, source, None, None, None, privacy)
    if counts.n_clients is not None:
        source["n_examples"] += "; planned with M = the public number of clients"
        return PlanningSize(counts.n_clients, counts.n_clients, source, None, None, None, privacy)
    if not needed:
        return PlanningSize(None, 1, source, None, None, None, privacy)
    count_model = privacy.scaled(COUNT_SHARE)
    rest = privacy.scaled(1.0 - COUNT_SHARE)
    if ledger is not None:
        # The rest is charged later, possibly split over parts whose number depends on
        # the count; one pure entry of its whole ε bounds every such split on every track.
        # (Exact for pure models; for Skellam noise the later charge is checked again.)
        bound = split_bound(
            "the rest of the procedure",
            float(rest.epsilon),
            float(getattr(rest, "delta", 0.0) or 0.0),
            "example",
        )
        mech = mechanism_for(count_model, ExampleCountSketch(), n_clients=data.n_clients)
        both = [*mech.ledger_entries, bound]
        if not ledger.can_afford_all(both):
            after = ledger.reading(both)
            raise BudgetExceededError(
                f"a noisy count of the examples (to plan from) and the release it plans would "
                f"bring the spend to ε={after.epsilon:.4g}, δ={after.delta:.3g}, but the total "
                f"is ε={ledger.total_epsilon:.4g}, δ={ledger.total_delta:.3g}; nothing was "
                "released (declare a public size with fe.Public(...) to skip the count)"
            )
    rel = release(data, ExampleCountSketch(), count_model, path=path, rng=rng, ledger=ledger)
    noisy = float(rel.values[0])
    se = float(math.sqrt(max(float(rel.variance[0]), 0.0)))
    source["n_examples"] = (
        f"not public: a noisy count of the examples (ε share {COUNT_SHARE:g}) was released "
        "first and the parameters planned from it"
    )
    m = max(1, round(noisy))
    return PlanningSize(None, m, source, noisy, se, rel.receipt, rest)
