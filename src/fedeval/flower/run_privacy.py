"""What one Flower run may release, and the one ledger it spends from.

A run evaluates several settings (privacy models) on the *same* clients, so
their guarantees compose. This module holds the two privacy decisions that
concern the run as a whole (no flwr needed):

* :func:`check_run` refuses, before anything is sent to a client, a run whose
  releases would not mean what their receipts say: distributed DP whose noise
  shares travel in plaintext (unless explicitly allowed, and never for Skellam
  shares), a DP setting without a declared bound on a client's examples,
  secure aggregation (exact sums) together with DP settings (unless explicitly
  allowed), and a DP setting under which the number of participating clients
  is not public without a declared cohort size to plan from.
* :func:`run_counts` decides whether the run may publish the numbers of
  clients it selected, used, failed and rejected (:mod:`fedeval.public_facts`
  decides per model; a run publishes them only if every setting does).
* :func:`charge_run` charges every setting's mechanism to one
  :class:`~fedeval.privacy.ledger.BudgetLedger`, atomically, before any round;
  :func:`ledger_record` states the composed total for ``flower_result.json``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fedeval.aggregation.release import charge
from fedeval.flower.plan import EvaluationPlan, with_client_bound
from fedeval.privacy.guarantee import Guarantee, Neighbouring, PrivacyUnit
from fedeval.privacy.ledger import BudgetLedger
from fedeval.privacy.mechanism_for import Mechanism
from fedeval.privacy.models import PrivacyModel, model_label, model_to_dict
from fedeval.privacy.receipt import Receipt, entry_as_dict
from fedeval.public_facts import client_count_public

__all__ = ["RunCounts", "charge_run", "check_run", "ledger_record", "run_counts", "sends_sums"]


def _probe(model: PrivacyModel, *, plaintext_shares: bool = False) -> Mechanism:
    """The model's mechanism for a small hierarchy: where its noise goes (the dispatch decides)."""
    return EvaluationPlan(
        privacy=model_to_dict(with_client_bound(model, 1)),
        height=1,
        branching=2,
        score_range=(0.0, 1.0),
        max_examples=1,
        n_shares=3,
        min_received=3,
        plaintext_shares=plaintext_shares,
    ).mechanism()


def sends_sums(model: PrivacyModel) -> bool:
    """Whether the model's setting is released from a sum of client vectors (not local DP)."""
    return _probe(model).placement != "local"


def check_run(
    models: Sequence[PrivacyModel],
    *,
    max_examples: int,
    secagg: bool = True,
    allow_plaintext_shares: bool = False,
    allow_sa_with_dp: bool = False,
    total_epsilon: float | None = None,
    cohort_size: int | None = None,
    clients_per_evaluation: int = 0,
) -> None:
    """Refuse a run whose releases would not mean what their receipts say.

    Called before anything is sent to a client.

    Parameters
    ----------
    models : sequence of privacy models
        The run's settings, evaluated on the same clients.
    max_examples : int
        The declared public bound on one client's examples (0: none declared).
    secagg : bool
        Whether sums go through SecAgg+.
    allow_plaintext_shares : bool
        Run distributed DP without SecAgg+ anyway; its receipt then states the
        ε of one noise share seen alone.
    allow_sa_with_dp : bool
        Run secure aggregation (exact sums) and DP settings on the same clients
        anyway; the result then says the DP receipts do not protect against the
        exact release.
    total_epsilon : float, optional
        The run's budget; settings whose ε add up to more are refused (the
        exact charge, with the ε that holds for the transport, is made before
        the first round).
    cohort_size : int, optional
        The number of clients the operator declares public (``cohort-size``):
        the server selects that many and plans from it. Required by a DP
        setting under which the number of participating clients is not public
        (client-level add/remove, or example-level add/remove, where one added
        example can be one added client: :func:`~fedeval.public_facts.client_count_public`).
    clients_per_evaluation : int
        Nodes selected at random (0: all); with a declared cohort it must be 0
        or equal to it.

    Raises
    ------
    ValueError
        Noise shares in plaintext (not allowed, or Skellam shares); a DP setting
        without ``max-examples-per-client``; SA with DP on the same clients (not
        allowed); two settings with the same name; settings above ``total-epsilon``;
        a DP setting whose client count is not public without ``cohort-size``;
        a cohort size below 1 or different from ``clients-per-evaluation``.
    TypeError
        A model the hierarchy cannot be released under.
    """
    mechs = [_probe(m) for m in models]
    names = [model_label(m) for m in models]
    if len(set(names)) != len(names):
        raise ValueError(
            f"the run evaluates the same setting twice ({names}); give each setting once"
        )
    dp = [n for n, mech in zip(names, mechs, strict=True) if not mech.exact]
    exact = [n for n, mech in zip(names, mechs, strict=True) if mech.exact]
    if dp and int(max_examples) <= 0:
        raise ValueError(
            f"the DP setting(s) {dp} need max-examples-per-client: a public bound on one "
            "client's examples, declared by the operator (every client keeps at most that "
            "many, chosen at random). A bound taken from the clients' sizes would publish "
            "the largest size"
        )
    if dp and exact and not allow_sa_with_dp:
        raise ValueError(
            f"the run evaluates secure aggregation {exact} (exact sums, no DP) and DP "
            f"setting(s) {dp} on the same clients: the exact sums void the DP guarantees. "
            "Evaluate them in separate runs on different clients, or set "
            "allow-sa-with-dp = true to run both anyway (the result then says the DP "
            "receipts do not protect against the exact release)"
        )
    if not secagg:
        for model, name, mech in zip(models, names, mechs, strict=True):
            if mech.placement != "shares":
                continue
            _probe(model, plaintext_shares=True)  # Skellam: refused whatever is allowed
            if not allow_plaintext_shares:
                raise ValueError(
                    f"'{name}' without SecAgg+ (secagg = false): the server would see every "
                    "client's single noise share, whose guarantee is far weaker than the "
                    "target ε. Use SecAgg+ (secagg = true), or set allow-plaintext-shares = "
                    "true to run it anyway with the ε of one share on its receipt"
                )
    if total_epsilon is not None:
        nominal = math.fsum(float(m.epsilon) for m, mech in zip(models, mechs, strict=True)
                            if not mech.exact)  # fmt: skip
        if nominal > float(total_epsilon) * (1 + 1e-9):
            raise ValueError(
                f"the run's DP settings spend ε = {nominal:.4g} together, above "
                f"total-epsilon = {float(total_epsilon):.4g}"
            )
    if cohort_size is not None:
        if int(cohort_size) < 1:
            raise ValueError(f"cohort-size must be >= 1, got {cohort_size}")
        if secagg and int(cohort_size) < 3 and any(m.placement != "local" for m in mechs):
            raise ValueError(f"SecAgg+ needs a cohort of at least 3 clients, got {cohort_size}")
        if clients_per_evaluation and int(clients_per_evaluation) != int(cohort_size):
            raise ValueError(
                f"cohort-size = {cohort_size} is the number of clients the server selects; "
                f"clients-per-evaluation = {clients_per_evaluation} would select another "
                "number: set clients-per-evaluation = 0 (or equal to cohort-size)"
            )
        return
    hidden = [
        n
        for m, n, mech in zip(models, names, mechs, strict=True)
        if not mech.exact and not client_count_public(m)
    ]
    if hidden:
        raise ValueError(
            f"under {hidden} the number of participating clients is not public (adding or "
            "removing a unit can add or remove a client), so the server may neither publish "
            "it nor plan the height, the SecAgg+ parameters or the noise shares from the "
            "replies it receives. Declare cohort-size: the number of clients the server "
            "selects, public, used to plan and published as given"
        )


@dataclass(frozen=True)
class RunCounts:
    """Whether a run publishes the numbers of clients it observed, and why.

    Attributes
    ----------
    public : bool
        True: the numbers of nodes and of clients selected, used, failed and
        rejected, and the bytes each client sent, are published exactly.
    statement : str
        Why, in words (``facts["counts"]`` in ``flower_result.json``).
    cohort_size : int or None
        The declared cohort size (public, published as given), if any.
    """

    public: bool
    statement: str
    cohort_size: int | None = None

    def planning_size(self, n_usable: int) -> int:
        """The number of clients to plan from: the declared cohort, else the (public) count."""
        if self.cohort_size is not None:
            return self.cohort_size
        if not self.public:
            raise ValueError("the number of clients is not public and no cohort-size is declared")
        return int(n_usable)


def run_counts(models: Sequence[PrivacyModel], *, cohort_size: int | None = None) -> RunCounts:
    """Whether a run on ``models`` may publish its client counts (see :class:`RunCounts`).

    The counts are one fact about one set of clients, shared by every setting
    of the run, so they are published only when every setting treats the
    number of participating clients as public
    (:func:`~fedeval.public_facts.client_count_public`: secure aggregation,
    replacement neighbours, local DP). A declared cohort size is published as
    declared either way; it is not compared with the clients that took part.
    """
    declared = (
        f"; the run plans from cohort-size = {cohort_size}, declared public by the operator "
        "(used as given, not checked against the clients that took part)"
        if cohort_size is not None
        else ""
    )
    hidden = [model_label(m) for m in models if not client_count_public(m)]
    if not hidden:
        return RunCounts(
            True,
            "public: every setting of the run treats the number of participating clients as "
            "public (secure aggregation, or neighbours that replace a unit's data)" + declared,
            cohort_size,
        )
    return RunCounts(
        False,
        f"not public under {', '.join(repr(h) for h in hidden)}: adding or removing a unit can "
        "add or remove a client, so the numbers of nodes and of clients selected, used, "
        "failed and rejected are withheld, and so are the bytes sent per client (SecAgg+ "
        "messages grow with the number of neighbours); the server log names failed clients "
        "for the operator, without totals" + declared,
        cohort_size,
    )


def charge_run(
    mechanisms: Mapping[str, Mechanism],
    *,
    total_epsilon: float | None = None,
    total_delta: float | None = None,
) -> BudgetLedger:
    """Charge every setting of a run to one ledger, all or nothing, before any round.

    Parameters
    ----------
    mechanisms : mapping of setting name -> Mechanism
        Each setting's mechanism as it will be released (for sums:
        :func:`~fedeval.flower.decode.release_mechanism` with every share).
    total_epsilon, total_delta : float, optional
        The run's budget; without one the ledger records what is spent
        (without a δ budget it reads basic composition of the settings).

    Returns
    -------
    BudgetLedger

    Raises
    ------
    BudgetExceededError
        The settings together exceed the budget (nothing is charged).
    """
    ledger = BudgetLedger(
        math.inf if total_epsilon is None else float(total_epsilon),
        0.0 if total_delta is None else float(total_delta),
        delta_declared=total_delta is not None,
    )
    charge(ledger, list(mechanisms.values()))
    return ledger


def ledger_record(ledger: BudgetLedger, receipts: Mapping[str, Receipt]) -> dict[str, Any]:
    """The run's privacy account, for ``flower_result.json``.

    The settings are released from the same clients' data, so their
    guarantees compose (basic composition: ε and δ add). When their
    neighbouring relations differ (distributed DP adds or removes an example,
    local DP replaces one), the total is stated for replacing one example: an
    add/remove (ε, δ)-DP release is (2ε, (1 + e^ε)δ)-DP for a replacement,
    which is one removal and one addition (group privacy), unless its noise
    was calibrated to a replacement anyway (its receipt's sensitivity says
    ``"replace"``: distributed DP with a contribution bound covers the swap
    that subsampling causes), in which case it is (ε, δ)-DP for it. A client-level
    guarantee also holds for one example, so the total's unit is the example
    unless every setting is client-level.

    Parameters
    ----------
    ledger : BudgetLedger
        The run's ledger (:func:`charge_run`).
    receipts : mapping of setting name -> Receipt
        Every setting's receipt, as released, in run order.

    Returns
    -------
    dict
        ``settings`` (one row per DP setting), ``total`` (the composed
        guarantee, or None without DP), ``ledger`` (budget, spent and entries)
        and ``exact_release`` (None, or the warning that the DP receipts do not
        protect against exact sums released in the same run).
    """
    private = {k: r.guarantee for k, r in receipts.items() if r.guarantee.is_private}
    exact = [k for k, r in receipts.items() if not r.guarantee.is_private]
    settings = [
        {
            "setting": k,
            "epsilon": g.epsilon,
            "delta": g.delta,
            "unit": g.unit,
            "neighbouring": g.relation,
            "epsilon_charged": receipts[k].epsilon_spent,
            "delta_charged": receipts[k].delta_spent,
        }
        for k, g in private.items()
    ]
    total = _compose({k: receipts[k] for k in private}) if private else None
    warning = None
    if exact and private:
        warning = (
            f"the run also released exact sums under secure aggregation "
            f"({', '.join(repr(k) for k in exact)}) of the same clients' data: the DP "
            "guarantees and this total do not protect against that release "
            "(allow-sa-with-dp = true)"
        )
    return {
        "settings": settings,
        "total": None if total is None else total.as_dict(),
        "ledger": {
            "budget_epsilon": (
                ledger.total_epsilon if math.isfinite(ledger.total_epsilon) else None
            ),
            "budget_delta": ledger.total_delta if ledger.delta_declared else None,
            "spent_epsilon": ledger.spent_epsilon,
            "spent_delta": ledger.spent_delta,
            "entries": [entry_as_dict(e) for e in ledger.entries],
        },
        "exact_release": warning,
    }


def _compose(receipts: Mapping[str, Receipt]) -> Guarantee:
    """Basic composition of guarantees on the same data (see :func:`ledger_record`)."""
    guarantees = {k: r.guarantee for k, r in receipts.items()}
    units = {g.unit for g in guarantees.values()}
    unit: PrivacyUnit = "client" if units == {"client"} else "example"
    relations = {g.neighbouring for g in guarantees.values()}
    mixed = len(relations) > 1
    relation: Neighbouring = "replace" if mixed else next(iter(relations))
    eps: list[float] = []
    deltas: list[float] = []
    for k, g in guarantees.items():
        # A setting whose noise covers replacing its unit (the sensitivity it was
        # calibrated to says so, e.g. distributed DP with a contribution bound,
        # which covers a swap) holds as is under replacement; any other add/remove
        # setting counts twice (group privacy).
        covers_replace = receipts[k].sensitivity.get("neighbouring") == "replace"
        if mixed and g.neighbouring == "add_remove" and not covers_replace:
            eps.append(2.0 * g.epsilon)
            deltas.append((1.0 + math.exp(g.epsilon)) * g.delta)
        else:
            eps.append(g.epsilon)
            deltas.append(g.delta)
    statement = (
        f"basic composition of the run's DP settings ({', '.join(guarantees)}), all released "
        "from the same clients' data: ε and δ add"
    )
    if mixed:
        statement += (
            "; the settings' neighbours differ, so the total is stated for replacing one "
            "example, for which an add/remove (ε, δ)-DP setting counts as (2ε, (1 + e^ε)δ) "
            "unless its noise covers a replacement (its sensitivity says so)"
        )
    return Guarantee(
        math.fsum(eps),
        min(math.fsum(deltas), 1.0),
        unit,
        statement,
        relation,
        _union(g.public for g in guarantees.values()),
    )


def _union(items: Iterable[tuple[str, ...]]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(p for group in items for p in group))
