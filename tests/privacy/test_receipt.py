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
from fedeval.privacy.receipt import (
    GUARANTEE_LINE_WIDTH,
    SCOPE_ONE_RELEASE,
    Receipt,
    compose,
    entry_as_dict,
    short_model,
)


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


def test_the_guarantee_line_is_one_short_line_and_the_details_keep_the_paragraph() -> None:
    long_statement = "Pólya difference shares calibrated so that all of them sum... " * 12
    g = Guarantee(1.0, 0.0, "example", long_statement, "add_remove", ("the score domain",))
    part = Receipt("distributed DP (polya shares, ε=0.05 per example)", g, releases=1)
    rest = Receipt("distributed DP (polya shares, ε=0.95 per example)", g, releases=1)
    both = compose([part, rest], "binary evaluation")
    line = both.guarantee_line
    assert (
        line == "(ε=2, δ=0)-DP per example (add/remove), distributed DP (polya shares), 2 releases"
    )
    assert len(line) <= GUARANTEE_LINE_WIDTH and "\n" not in line
    assert len(both.guarantee_details) > 600 and both.guarantee_details == both.guarantee.details
    assert Receipt.from_dict(json.loads(json.dumps(both.as_dict()))).releases == 2


def test_the_guarantee_line_states_replace_delta_and_no_dp() -> None:
    line = dp_receipt(0.5).guarantee_line
    assert line.startswith("(ε=0.5, δ=1e-07)-DP per client (replace), distributed DP, 1 release")
    exact = Receipt(
        "secure aggregation (exact sums, no differential privacy)", Guarantee.none("exact sums")
    )
    assert exact.guarantee_line == "no differential privacy (secure aggregation, exact sums)"
    assert compose([exact, exact], "two").releases == 2


def test_a_long_model_name_is_cut_to_the_line_width() -> None:
    g = Guarantee(1.0, 1e-6, "client", "s", "add_remove")
    receipt = Receipt("user-level DP (Gaussian, clip=" + "9" * 200 + ", ε=1)", g)
    line = receipt.guarantee_line
    assert len(line) <= GUARANTEE_LINE_WIDTH
    assert "…" in line and line.endswith("1 release")


def test_short_model_drops_budgets_and_repeats() -> None:
    assert short_model("local DP (OUE, ε=5 per report)") == "local DP (OUE)"
    assert short_model("a (ε=1) + a (ε=2) + b") == "a + b"
    assert short_model("secure aggregation") == "secure aggregation"


def test_entry_as_dict_is_asdict_for_the_entries_of_real_releases() -> None:
    """The field-by-field form equals ``dataclasses.asdict`` (before its rdp rewrite)."""
    import dataclasses

    import numpy as np

    import fedeval as fe

    gen = np.random.default_rng(0)
    fed = fe.Federation.from_arrays(gen.random(200), gen.random(200) < 0.4)
    models = [
        fe.DistributedDP(1.0),
        fe.DistributedDP(1.0, delta=1e-6, noise="skellam"),
        fe.LocalDP(5.0),
        fe.CentralDP(1.0),
    ]
    entries = [e for m in models for e in fe.evaluate(fed, m, rng=gen).receipt.entries]
    entries.append(dp_receipt(1.0).entries[0])
    assert entries
    for e in entries:
        expected = dataclasses.asdict(e)
        got = entry_as_dict(e)
        if expected.get("rdp") is not None:
            expected["rdp"] = [x if math.isfinite(x) else None for x in expected["rdp"]]
        assert got == expected
        assert got["details"] is not e.details  # a copy: the entry is frozen
