"""Releasing a hierarchical histogram under a budget: charges, refusals, contribution bounds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fedeval.data import Federation
from fedeval.privacy.ledger import BudgetExceededError, BudgetLedger
from fedeval.privacy.models import DistributedDP, LocalDP, SecureAggregation
from helpers import beta_scores, release_hierarchy

SA = SecureAggregation()


@pytest.fixture
def fed() -> Federation:
    scores, labels = beta_scores(100, 7)
    return Federation.from_arrays(scores, labels)


# ------------------------------------------------------------------ budget
@pytest.mark.parametrize(
    "privacy", [DistributedDP(1.0), DistributedDP(1.0, noise="skellam", delta=1e-6), LocalDP(1.0)]
)
def test_ledger_refuses_overspending_and_is_unchanged(
    fed: Federation, privacy: DistributedDP | LocalDP
) -> None:
    ledger = BudgetLedger(1.5, 1e-5)
    ledger.charge("earlier release", 0.75)
    before = list(ledger.entries)
    with pytest.raises(BudgetExceededError):
        release_hierarchy(fed, privacy, height=3, rng=0, ledger=ledger)
    assert ledger.entries == before
    assert ledger.spent_epsilon == 0.75


def test_split_release_charges_h_entries_of_eps_over_h(fed: Federation) -> None:
    ledger = BudgetLedger(2.0)
    hist = release_hierarchy(fed, DistributedDP(1.2), height=4, rng=0, ledger=ledger)
    assert len(hist.ledger_entries) == 4
    assert [e.epsilon for e in hist.ledger_entries] == pytest.approx([0.3] * 4)
    assert all(e.delta == 0.0 and e.unit == "example" for e in hist.ledger_entries)
    assert ledger.entries == list(hist.ledger_entries)
    assert ledger.spent_epsilon == pytest.approx(1.2)
    assert hist.guarantee.epsilon == 1.2
    # A second release no longer fits.
    with pytest.raises(BudgetExceededError):
        release_hierarchy(fed, DistributedDP(1.2), height=4, rng=1, ledger=ledger)
    assert len(ledger.entries) == 4


def test_other_releases_charge_one_entry(fed: Federation) -> None:
    assign = release_hierarchy(
        fed, DistributedDP(1.0, neighbouring="replace"), height=3, level_budget="assign", rng=0
    )
    assert [e.epsilon for e in assign.ledger_entries] == [1.0]
    skellam = release_hierarchy(
        fed, DistributedDP(1.0, noise="skellam", delta=1e-6), height=3, rng=0
    )
    assert [(e.epsilon, e.delta) for e in skellam.ledger_entries] == [(1.0, 1e-6)]
    ldp = release_hierarchy(fed, LocalDP(2.0), height=3, rng=0)
    assert [e.epsilon for e in ldp.ledger_entries] == [2.0]
    sa = release_hierarchy(fed, SA, height=3, rng=0, ledger=BudgetLedger(1e-3))
    assert sa.ledger_entries == ()


def test_client_level_release_bounds_contributions() -> None:
    scores, labels = beta_scores(600, 8)
    fed = Federation.from_arrays(scores, labels, np.arange(600) % 20)  # 30 examples each
    model = DistributedDP(1.0, unit="client", contribution_bound=5)
    hist = release_hierarchy(fed, model, height=2, rng=0)
    # 20 clients x 5 examples survive the bound; noise sd ~ sqrt(2a)/(1-a), a = e^-0.1
    total = hist.totals().sum()
    sd = math.sqrt(hist.total_variance().sum())
    assert abs(total - 100) < 6 * sd
    assert hist.ledger_entries[0].unit == "client"
    assert hist.ledger_entries[0].details["l1_sensitivity"] == 5
