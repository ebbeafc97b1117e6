"""End-to-end privacy audits of the ECDF releases through the public API (issue 12).

Every audit runs a public entry point many times on two neighbouring datasets
D and D′, built by the privacy unit and the neighbouring relation its guarantee
states, observes one released scalar, and bounds ε from below with the harness
of ``tests/dp_audit.py`` (pilot-chosen event, Clopper–Pearson). Honest runs
must stay at or below the claim at confidence 0.999; every kind of audit has a
power check, where the same audit of a deliberately broken mechanism must go
above the claim.

Entry points and neighbours (grid τ = (0.25, 0.75), so the tree has height
L = 1; each observation is the released count n·F̂ at the first grid point):

* ``private_ecdf``, replacement: (0.1, 0.9) vs (0.5, 0.9); add/remove:
  (0.5) vs (0.5, 0.1).
* ``federated_ecdf``, replacement (``epsilon=`` sugar): one client's 0.1
  replaced by 0.9; add/remove (``DistributedDP`` defaults): 0.2 added to the
  client holding two examples. The number of clients is public and equal.
* ``multi_server_ecdf`` (two servers), the same replacement.
* ``dp_roc_curve``: the positive example's score 0.9 replaced by 0.1; the
  observation is the positive class's released count below τ_2 (raw curve,
  ``smoothing=None``: smoothing is post-processing and 5× slower).

The ECDF releases are discrete already (Pólya shares summing to discrete
Laplace noise on integer counts), so every honest audit here passes on the
current code. A single observed count of the tree release sees only part of ε
(the noise of L + 1 nodes, each worth ε/(L + 1) under replacement), so the
honest lower bounds sit well below the claim; the add/remove release (one node
per change) is the tightest.

Power checks (the ECDF kind): the same audit with the node noise replaced by
continuous numpy Laplace of the same variance on the float counts (Mironov's
floating-point attack: lattice event, ε effectively infinite; default run), and
the add/remove audit with noise calibrated for 2ε while ε is claimed (half the
noise; slow run).

Also here: the snapshot finding of ``federated_ecdf`` (queries after the data
change must not move with the data), and the check that D and D′ get identical
guarantees, which is how "neighbours agree on the public inputs" is tested.
Under add/remove each value sits at its own client, so the number of
clients is the number of values: the receipt must not state it (it used to
say "shares from n parties"; the share noise is now described without counts).

The pieces the end-to-end audits share (:class:`Case`, :func:`broken_mechanism`,
the budgets) are in ``tests/audit_cases.py``; ``tools/audit_table.py`` runs every
case and prints the table of results.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

import fedeval as fe
from audit_cases import FAST, Case, check_guarantee, check_honest, check_power, params
from fedeval.privacy.guarantee import Neighbouring

GRID = np.array([0.25, 0.75])


def _private_ecdf(neighbouring: Neighbouring) -> Callable[[Any, np.random.Generator], Any]:
    def release(values: Any, rng: np.random.Generator) -> Any:
        return fe.ecdf.private_ecdf(values, GRID, epsilon=1.0, neighbouring=neighbouring, rng=rng)

    return release


def _first_count(ecdf: Any) -> float:
    return float(ecdf.counts[0])


def _federation(scores: list[float], clients: list[int]) -> fe.Federation:
    return fe.Federation.from_arrays(np.array(scores), np.zeros(len(scores), dtype=int), clients)


FED_D = _federation([0.1, 0.6, 0.9], [0, 0, 1])
FED_REPLACED = _federation([0.9, 0.6, 0.9], [0, 0, 1])  # client 0's 0.1 → 0.9
FED_ADDED = _federation([0.1, 0.6, 0.2, 0.9], [0, 0, 0, 1])  # 0.2 added to client 0


def _federated(privacy: Any) -> Callable[[Any, np.random.Generator], Any]:
    def release(fed: Any, rng: np.random.Generator) -> Any:
        return fe.ecdf.federated_ecdf(fed, GRID, privacy, rng=rng).query([0])

    return release


def _federated_sugar(fed: Any, rng: np.random.Generator) -> Any:
    return fe.ecdf.federated_ecdf(fed, GRID, epsilon=1.0, rng=rng).query([0])


def _multi_server(fed: Any, rng: np.random.Generator) -> Any:
    return fe.ecdf.multi_server_ecdf(fed, GRID, epsilon=1.0, n_servers=2, rng=rng).query([0])


def _roc(data: tuple[list[float], list[int]], rng: np.random.Generator) -> Any:
    scores, labels = data
    return fe.ecdf.dp_roc_curve(scores, labels, GRID, epsilon=1.0, smoothing=None, rng=rng)


def _positives_below_second_point(curve: Any) -> float:
    return float(curve.ecdf_positives.counts[0])


ECDF_CASES = [
    Case(
        "ecdf.private_ecdf (replace)",
        _private_ecdf("replace"),
        _first_count,
        np.array([0.1, 0.9]),
        np.array([0.5, 0.9]),
        claimed=1.0,
        seed=11,
    ),
    Case(
        "ecdf.private_ecdf (add_remove)",
        _private_ecdf("add_remove"),
        _first_count,
        np.array([0.5]),
        np.array([0.5, 0.1]),
        claimed=1.0,
        neighbouring="add_remove",
        seed=12,
    ),
    Case(
        "ecdf.federated_ecdf (replace)",
        _federated_sugar,
        _first_count,
        FED_D,
        FED_REPLACED,
        claimed=1.0,
        seed=13,
    ),
    Case(
        "ecdf.federated_ecdf (DistributedDP default: add_remove)",
        _federated(fe.DistributedDP(1.0)),
        _first_count,
        FED_D,
        FED_ADDED,
        claimed=1.0,
        neighbouring="add_remove",
        seed=14,
    ),
    Case(
        "ecdf.multi_server_ecdf (replace, 2 servers)",
        _multi_server,
        _first_count,
        FED_D,
        FED_REPLACED,
        claimed=1.0,
        seed=15,
    ),
    Case(
        "ecdf.dp_roc_curve (replace)",
        _roc,
        _positives_below_second_point,
        ([0.1, 0.9], [0, 1]),
        ([0.1, 0.1], [0, 1]),
        claimed=1.0,
        seed=16,
    ),
]

ECDF_POWER = [
    replace(ECDF_CASES[0], broken="continuous_laplace", seed=17, xfail_guarantee=None),
    replace(ECDF_CASES[1], broken="half_noise", seed=18, xfail_guarantee=None, fast=False),
]

CASES = ECDF_CASES + ECDF_POWER
"""Every case of this module, for ``tools/audit_table.py``."""


@pytest.mark.privacy
@pytest.mark.parametrize("case", params(ECDF_CASES, "xfail_guarantee"))
def test_guarantee_states_the_audited_relation(case: Case) -> None:
    check_guarantee(case)


@pytest.mark.privacy
@pytest.mark.parametrize("case", params([c for c in ECDF_CASES if c.fast], "xfail_audit"))
def test_ecdf_audit_fast(case: Case, record_property: Any) -> None:
    check_honest(case, FAST, record_property)


@pytest.mark.privacy
@pytest.mark.slow
@pytest.mark.parametrize("case", params(ECDF_CASES, "xfail_audit"))
def test_ecdf_audit_slow(case: Case, record_property: Any) -> None:
    check_honest(case, case.slow, record_property)


@pytest.mark.privacy
@pytest.mark.parametrize("case", params([c for c in ECDF_POWER if c.fast]))
def test_ecdf_audit_detects_a_broken_mechanism_fast(case: Case, record_property: Any) -> None:
    check_power(case, FAST, record_property)


@pytest.mark.privacy
@pytest.mark.slow
@pytest.mark.parametrize("case", params(ECDF_POWER))
def test_ecdf_audit_detects_a_broken_mechanism_slow(case: Case, record_property: Any) -> None:
    check_power(case, case.slow, record_property)


# ---------------------------------------------------------------------------------------------
# federated_ecdf: answers come from the snapshot taken at release time (issue 12, finding 6).
# ---------------------------------------------------------------------------------------------


@pytest.mark.privacy
@pytest.mark.parametrize("seed", range(20))
def test_federated_ecdf_queries_do_not_follow_a_change_of_the_data(seed: int) -> None:
    """Release, change the clients' data in place, query: the answers must not move.

    The old implementation kept the noise and recomputed the counts from the
    current data at query time, so a query after the change differed from one
    before it by exactly the change of the true count (here −2 at τ_1, 0 at
    τ_2): noise-free. From a snapshot the difference is 0, and the queries
    charge nothing (the snapshot was charged once). The federation shares the
    caller's arrays (checked below), so writing into them changes what a
    recomputation would see. Checked against the code before the fix (commit
    1eed130): the answer moved by exactly (−2, 0) for every seed.
    """
    scores = np.array([0.1, 0.6, 0.2, 0.3])
    fed = fe.Federation.from_arrays(scores, np.zeros(4, dtype=int), [0, 0, 1, 1])
    ledger = fe.BudgetLedger(1.0)
    released = fe.ecdf.federated_ecdf(fed, GRID, epsilon=1.0, rng=seed, ledger=ledger)
    before = released.query().counts.copy()
    spent = ledger.spent_epsilon

    scores[:] = 0.6  # every value moves above the first grid point, none above the second
    assert np.all(fed.scores == 0.6), "the federation should see the caller's change"

    np.testing.assert_array_equal(released.query().counts, before)
    np.testing.assert_array_equal(released.query([0]).counts, before[:1])
    np.testing.assert_array_equal(released.query([1]).counts, before[1:])
    assert ledger.spent_epsilon == spent
