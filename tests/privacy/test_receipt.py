"""The privacy receipt: what a release promised and charged (privacy/receipt.py).

A receipt goes to JSON with calibrators and reports and must come back the same
(an infinite ε or Rényi value as ``null``, since JSON has no ∞); several
releases on the same data compose by adding ε and δ, and a seeded part makes
the whole seeded.
"""

from __future__ import annotations

import json
import math

import pytest

from fedeval.privacy.guarantee import Guarantee
from fedeval.privacy.ledger import LedgerEntry
from fedeval.privacy.receipt import SCOPE_ONE_RELEASE, Receipt, compose, entry_as_dict


def dp_receipt(epsilon: float, *, randomness: str = "fresh OS entropy") -> Receipt:
    g = Guarantee(epsilon, 1e-7, "client", "a statement", "replace", ("the number of clients",))
    entries = (
        LedgerEntry("level 1", epsilon / 2, 0.0, "client", {"scale": 2.0}),
        LedgerEntry("level 2", epsilon / 2, 1e-7, "client", rho=0.1, rdp=(0.1, math.inf)),
    )
    return Receipt("distributed DP", g, entries, "Pólya shares", {"l1": 3.0}, randomness)


def test_a_receipt_survives_json() -> None:
    receipt = dp_receipt(1.0)
    text = json.dumps(receipt.as_dict(), allow_nan=False)  # strict JSON: no NaN or ∞
    back = Receipt.from_dict(json.loads(text))
    assert back == receipt
    assert back.entries[1].rdp == (0.1, math.inf)


def test_no_dp_is_epsilon_null_and_nothing_spent() -> None:
    receipt = Receipt("secure aggregation", Guarantee.none("exact sums"))
    data = receipt.as_dict()
    assert data["guarantee"]["epsilon"] is None
    assert data["epsilon_spent"] == 0.0 and data["entries"] == []
    assert Receipt.from_dict(json.loads(json.dumps(data))) == receipt
    (row,) = receipt.rows()
    assert row["release"] == "exact sums" and row["neighbouring"].startswith("none")


def test_spent_and_rows_follow_the_entries() -> None:
    receipt = dp_receipt(1.0)
    assert receipt.epsilon_spent == pytest.approx(1.0) and receipt.delta_spent == 1e-7
    rows = receipt.rows()
    assert [r["release"] for r in rows] == ["level 1", "level 2"]
    assert {r["neighbouring"] for r in rows} == {"replace one client's data"}
    assert entry_as_dict(receipt.entries[1])["rdp"] == [0.1, None]
    assert receipt.scope == SCOPE_ONE_RELEASE and not receipt.seeded


def test_composition_adds_epsilon_and_delta_and_keeps_every_entry() -> None:
    a, b = dp_receipt(1.0), dp_receipt(0.5, randomness="seeded with 3 (simulation only)")
    both = compose([a, b], "DP ROC curve")
    assert both.guarantee.epsilon == pytest.approx(1.5)
    assert both.guarantee.delta == pytest.approx(2e-7)
    assert both.entries == a.entries + b.entries
    assert both.epsilon_spent == pytest.approx(1.5)
    assert both.guarantee.statement.startswith("DP ROC curve: [1] a statement (ε=1)")
    assert both.guarantee.public == ("the number of clients",)
    assert both.seeded  # one seeded part makes the whole release known to the seed holder
    with pytest.raises(ValueError, match="at least one"):
        compose([], "nothing")


def test_composing_exact_releases_stays_exact() -> None:
    exact = Receipt("secure aggregation", Guarantee.none("exact sums"))
    out = compose([exact, exact], "two sums")
    assert not out.guarantee.is_private and out.epsilon_spent == 0.0
