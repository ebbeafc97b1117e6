"""The budget ledger and the privacy models' parameter validation."""

from __future__ import annotations

import math

import pytest

from fedeval.privacy.ledger import BudgetExceededError, BudgetLedger, LedgerEntry
from fedeval.privacy.models import DistributedDP, LocalDP, SecureAggregation, UserLevelDP


def test_charge_accumulates_and_remaining() -> None:
    ledger = BudgetLedger(1.0, 1e-5)
    ledger.charge("a", 0.25)
    ledger.charge("b", 0.5, 4e-6, unit="client", details={"k": 1})
    assert ledger.spent_epsilon == pytest.approx(0.75)
    assert ledger.remaining_epsilon == pytest.approx(0.25)
    assert ledger.spent_delta == pytest.approx(4e-6)
    assert ledger.remaining_delta == pytest.approx(6e-6)
    assert [e.label for e in ledger.entries] == ["a", "b"]
    assert ledger.entries[1].unit == "client"
    assert ledger.entries[1].details == {"k": 1}


def test_charge_exactly_to_the_total_is_allowed() -> None:
    ledger = BudgetLedger(1.0)
    for _ in range(3):
        ledger.charge("third", 1.0 / 3.0)  # 3 * (1/3) may exceed 1 by an ulp
    assert ledger.remaining_epsilon == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(BudgetExceededError):
        ledger.charge("one more", 1e-6)


def test_refused_charge_leaves_ledger_unchanged() -> None:
    ledger = BudgetLedger(1.0, 1e-6)
    ledger.charge("first", 0.6)
    before = list(ledger.entries)
    with pytest.raises(BudgetExceededError, match="remain"):
        ledger.charge("too much", 0.5)
    with pytest.raises(BudgetExceededError):
        ledger.charge("too much delta", 0.1, 2e-6)
    assert ledger.entries == before
    assert ledger.spent_epsilon == pytest.approx(0.6)
    # BudgetExceededError is a ValueError, so callers catching ValueError see it.
    assert issubclass(BudgetExceededError, ValueError)


@pytest.mark.parametrize(
    ("epsilon", "delta"),
    [(-0.1, 0.0), (math.inf, 0.0), (math.nan, 0.0), (0.1, -1e-9), (0.1, 1.0)],
)
def test_charge_rejects_bad_values_without_change(epsilon: float, delta: float) -> None:
    ledger = BudgetLedger(1.0, 0.5)
    # Validation, not the budget check, refuses them (inf and δ = 1 would also exceed it).
    with pytest.raises(ValueError, match=r"a release's (epsilon|delta) must") as info:
        ledger.charge("bad", epsilon, delta)
    assert not isinstance(info.value, BudgetExceededError)
    assert ledger.entries == []


def test_charge_all_is_atomic() -> None:
    ledger = BudgetLedger(1.0)
    ledger.charge("first", 0.5)
    batch = [LedgerEntry(f"level {k}", 0.2, 0.0, "example") for k in range(3)]  # 0.6 > 0.5
    with pytest.raises(BudgetExceededError):
        ledger.charge_all(batch)
    assert [e.label for e in ledger.entries] == ["first"]
    ledger.charge_all(batch[:2])
    assert [e.label for e in ledger.entries] == ["first", "level 0", "level 1"]
    assert ledger.spent_epsilon == pytest.approx(0.9)


def test_summary_lists_every_entry_and_the_totals() -> None:
    ledger = BudgetLedger(2.0, 1e-5)
    ledger.charge("counts", 0.5)
    ledger.charge("rank sums", 1.0, 1e-6, unit="client")
    text = ledger.summary()
    lines = text.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("counts: ε=0.5")
    assert "rank sums" in lines[1]
    assert "δ=1e-06" in lines[1]
    assert "per client" in lines[1]
    assert "spent ε=1.5 of 2" in lines[2]


def test_infinite_ledger_only_records() -> None:
    ledger = BudgetLedger(math.inf)
    for _ in range(5):
        ledger.charge("x", 10.0)
    assert ledger.spent_epsilon == pytest.approx(50.0)


@pytest.mark.parametrize("total", [0.0, -1.0, math.nan])
def test_ledger_rejects_bad_totals(total: float) -> None:
    with pytest.raises(ValueError, match="total_epsilon"):
        BudgetLedger(total)


@pytest.mark.parametrize("total_delta", [-0.1, 1.0, 2.0])
def test_ledger_rejects_bad_total_delta(total_delta: float) -> None:
    with pytest.raises(ValueError, match="total_delta"):
        BudgetLedger(1.0, total_delta)


# --------------------------------------------------------------------- models
@pytest.mark.parametrize("epsilon", [0.0, -1.0, math.inf, math.nan])
def test_models_reject_nonpositive_or_nonfinite_epsilon(epsilon: float) -> None:
    with pytest.raises(ValueError, match="epsilon"):
        DistributedDP(epsilon)
    with pytest.raises(ValueError, match="epsilon"):
        LocalDP(epsilon)
    with pytest.raises(ValueError, match="epsilon"):
        UserLevelDP(epsilon, 1e-5)


def test_models_reject_non_numeric_epsilon() -> None:
    with pytest.raises(TypeError):
        DistributedDP("one")  # type: ignore[arg-type]


@pytest.mark.parametrize("delta", [0.0, 1.0, -1e-6, 1.5])
def test_models_reject_delta_outside_open_unit_interval(delta: float) -> None:
    with pytest.raises(ValueError, match="delta"):
        DistributedDP(1.0, noise="skellam", delta=delta)
    with pytest.raises(ValueError, match="delta"):
        UserLevelDP(1.0, delta)


def test_skellam_needs_delta_and_polya_refuses_it() -> None:
    with pytest.raises(ValueError, match="delta"):
        DistributedDP(1.0, noise="skellam")
    with pytest.raises(ValueError, match="delta"):
        DistributedDP(1.0, delta=1e-5)


def test_client_level_distdp_needs_contribution_bound() -> None:
    with pytest.raises(ValueError, match="contribution_bound"):
        DistributedDP(1.0, unit="client")
    with pytest.raises(ValueError, match="contribution_bound"):
        DistributedDP(1.0, unit="client", contribution_bound=0)
    model = DistributedDP(1.0, unit="client", contribution_bound=5)
    assert model.examples_per_unit == 5


@pytest.mark.parametrize(
    "kwargs",
    [
        {"noise": "gaussian"},
        {"unit": "user"},
        {"min_clients_fraction": 0.0},
        {"min_clients_fraction": 1.5},
    ],
)
def test_distdp_rejects_bad_options(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        DistributedDP(1.0, **kwargs)  # type: ignore[arg-type]


def test_other_model_options() -> None:
    with pytest.raises(ValueError, match="oracle"):
        LocalDP(1.0, oracle="hadamard")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="clip"):
        UserLevelDP(1.0, 1e-5, clip=0.0)
    with pytest.raises(ValueError, match="clip"):
        UserLevelDP(1.0, 1e-5, clip=(1.0, -1.0))
    sa = SecureAggregation()
    assert sa.epsilon == math.inf
    assert sa.unit == "none"


# ------------------------------------------------------------- the tight filter
@pytest.mark.parametrize(
    ("n_gauss", "n_pure", "delta"),
    [(1, 0, 1e-5), (12, 0, 1e-5), (52, 0, 5.2e-5), (10, 5, 1e-5), (0, 8, 1e-6), (3, 20, 1e-6)],
)
def test_tight_reading_is_never_below_the_optimal_composition(n_gauss, n_pure, delta) -> None:
    """Soundness against an independent accountant: no valid composition beats the PLD one.

    The same programs, non-adaptive, accounted by dp-accounting's privacy loss
    distributions (Gaussian releases of σ = 1/√(2ρ) at unit sensitivity, Laplace
    releases of ε): the filter's ε at the same δ can only be larger.
    """
    from dp_accounting import ComposedDpEvent, GaussianDpEvent, LaplaceDpEvent
    from dp_accounting.pld import PLDAccountant
    from scipy.optimize import brentq

    from fedeval.privacy.accounting import zcdp_to_approx_dp

    rho = brentq(lambda r: zcdp_to_approx_dp(r, 1e-6) - 1.0, 1e-6, 1.0)
    eps_pure = 0.3
    ledger = BudgetLedger(math.inf, delta, composition="tight")
    entries = [LedgerEntry(f"g{i}", 1.0, 1e-6, "example", rho=rho) for i in range(n_gauss)]
    entries += [LedgerEntry(f"p{i}", eps_pure, 0.0, "example") for i in range(n_pure)]
    ledger.charge_all(entries)
    sigma = 1.0 / math.sqrt(2.0 * rho)
    events = [GaussianDpEvent(sigma)] * n_gauss + [LaplaceDpEvent(1.0 / eps_pure)] * n_pure
    pld = PLDAccountant(value_discretization_interval=1e-4)
    pld.compose(ComposedDpEvent(events))
    optimal = pld.get_epsilon(delta)
    assert ledger.spent_epsilon >= optimal - 1e-6, (ledger.spent_epsilon, optimal)
    # ...and it is the best of its tracks, each recomputed here from its closed form:
    # basic composition (δ of its own: 0 for pure releases, else Σδ_i ≤ δ/2) and zCDP
    # with 0.45 of δ (pure releases cost ε²/2 there).
    basic = math.fsum(e.epsilon for e in entries)
    basic_ok = n_gauss * 1e-6 <= 0.5 * delta
    zcdp = zcdp_to_approx_dp(n_gauss * rho + n_pure * eps_pure**2 / 2, 0.45 * delta)
    assert ledger.spent_epsilon <= min(basic if basic_ok else math.inf, zcdp) + 1e-9


def test_tight_filter_keeps_its_delta_for_the_tracks() -> None:
    """One Gaussian release at the whole (ε, δ) does not fit the tight filter; basic does."""
    from fedeval.privacy.accounting import calibrate_noise_multiplier, gaussian_rounds_rdp

    z = calibrate_noise_multiplier(1.0, 1e-5, 20, 0.1)
    curve = tuple(float(x) for x in gaussian_rounds_rdp(z, 20, 0.1))
    entry = LedgerEntry("rounds", 1.0, 1e-5, "client", rdp=curve)
    tight = BudgetLedger(1.0, 1e-5, composition="tight")
    with pytest.raises(BudgetExceededError, match=r"Gaussian-type|total"):
        tight.charge_all([entry])
    assert tight.entries == []
    basic = BudgetLedger(1.0, 1e-5)
    basic.charge_all([entry])
    assert basic.spent_epsilon == pytest.approx(1.0)
    with pytest.raises(ValueError, match="composition"):
        BudgetLedger(1.0, composition="loose")  # type: ignore[arg-type]
