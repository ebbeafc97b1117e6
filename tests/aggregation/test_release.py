"""The release function: charged before any noise, one receipt shape, reservations, rounds."""

from __future__ import annotations

import math

import numpy as np
import pytest

import fedeval as fe
from fedeval.aggregation import Rounds, release, reserve
from fedeval.privacy.ledger import BudgetExceededError, BudgetLedger
from fedeval.sketches.hierarchy import HierarchySketch, HierarchySpec
from fedeval.sketches.scaler_updates import ScalerUpdateSketch


def _fed(n: int = 400, seed: int = 0) -> fe.Federation:
    gen = np.random.default_rng(seed)
    return fe.Federation.from_arrays(gen.random(n), gen.integers(0, 2, n), gen.integers(0, 40, n))


SKETCH = HierarchySketch(HierarchySpec(3, 2))


def test_refused_charge_draws_no_noise_and_changes_nothing() -> None:
    ledger = BudgetLedger(1.0)
    ledger.charge("earlier", 0.6)
    gen = np.random.default_rng(5)
    before = gen.bit_generator.state
    with pytest.raises(BudgetExceededError):
        release(_fed(), SKETCH, fe.DistributedDP(0.5), rng=gen, ledger=ledger)
    assert gen.bit_generator.state == before  # no draw happened
    assert [e.label for e in ledger.entries] == ["earlier"]


def test_every_release_has_one_receipt_shape() -> None:
    fed = _fed()
    for model in (
        fe.SecureAggregation(),
        fe.DistributedDP(1.0),
        fe.DistributedDP(1.0, noise="skellam", delta=1e-6),
        fe.LocalDP(2.0),
    ):
        rel = release(fed, SKETCH, model, rng=1)
        r = rel.receipt
        assert r.model == model.describe()
        assert set(r.as_dict()) >= {"model", "mechanism", "guarantee", "epsilon_spent", "entries"}
        assert set(r.guarantee.as_dict()) >= {"epsilon", "unit", "neighbouring", "public_inputs"}
        assert r.guarantee.public  # every guarantee states what it treats as public
        if model.regime == "exact":
            assert not r.guarantee.is_private and math.isinf(r.guarantee.epsilon)
            assert rel.epsilon_spent == 0.0 and r.entries == ()
            assert r.guarantee.as_dict()["epsilon"] is None  # JSON has no ∞
            np.testing.assert_array_equal(rel.variance, 0.0)
        else:
            assert rel.epsilon_spent == pytest.approx(model.epsilon)
            assert r.guarantee.unit == model.unit
            assert np.all(rel.variance > 0)


def test_reservations_charge_atomically_and_are_used_once() -> None:
    fed = _fed()
    ledger = BudgetLedger(1.0)
    other = HierarchySketch(HierarchySpec(2, 2))
    with pytest.raises(BudgetExceededError):
        reserve(
            ledger,
            [(fe.DistributedDP(0.6), SKETCH), (fe.DistributedDP(0.6), other)],
            n_clients=fed.n_clients,
        )
    assert ledger.entries == []
    tickets = reserve(
        ledger,
        [(fe.DistributedDP(0.5), SKETCH), (fe.DistributedDP(0.5), other)],
        n_clients=fed.n_clients,
    )
    assert ledger.spent_epsilon == pytest.approx(1.0)
    with pytest.raises(ValueError, match="reservation was made for"):
        release(fed, HierarchySketch(HierarchySpec(4, 2)), reservation=tickets[1])
    rel = release(fed, SKETCH, reservation=tickets[0], rng=0)
    assert rel.epsilon_spent == pytest.approx(0.5)
    with pytest.raises(ValueError, match="already used"):
        release(fed, SKETCH, reservation=tickets[0], rng=0)
    assert ledger.spent_epsilon == pytest.approx(1.0)  # no second charge


def test_rounds_charge_once_before_the_first_round_and_stop_after_t() -> None:
    gen = np.random.default_rng(0)
    probs = gen.dirichlet(np.ones(3), 300)
    fed = fe.Federation.from_arrays(probs, gen.integers(0, 3, 300), gen.integers(0, 30, 300))

    def fit(w: np.ndarray, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        return w + 1.0

    sketch = ScalerUpdateSketch(fit, np.zeros(3), clip=0.5)
    ledger = BudgetLedger(2.0, 1e-4)
    rounds = Rounds(
        fed, sketch, fe.UserLevelDP(1.0, 1e-5, clip=0.5), rounds=2, sampling_rate=0.5,
        rng=1, ledger=ledger,
    )  # fmt: skip
    assert len(ledger.entries) == 1 and 0.9 < ledger.spent_epsilon <= 1.0
    for _ in range(2):
        rel = rounds.release(sketch)
        assert rel.values.shape == (3,)
    assert len(ledger.entries) == 1
    with pytest.raises(ValueError, match="rounds were used"):
        rounds.release(sketch)
    with pytest.raises(TypeError, match="UserLevelDP"):
        Rounds(fed, SKETCH, fe.UserLevelDP(1.0, 1e-5), rounds=2, sampling_rate=1.0)


def test_fewer_noise_shares_than_the_threshold_state_a_weaker_guarantee() -> None:
    fed = _fed()
    model = fe.DistributedDP(1.0, min_clients_fraction=0.5)
    mech = fe.privacy.mechanism_for(model, SKETCH, n_clients=fed.n_clients)
    assert mech.min_received == 20
    assert mech.when_received(20) is mech
    weak = mech.when_received(10)
    assert weak.guarantee.epsilon > 1.0
    assert math.fsum(e.epsilon for e in weak.ledger_entries) == pytest.approx(
        weak.guarantee.epsilon
    )


def test_a_given_away_sum_becomes_floats_in_place_and_nothing_else_does() -> None:
    """``finish_sum(owned=True)`` converts the in-process sum in its own memory; a
    sum it was not given (the Flower server's, a view of a larger array) is
    copied and left as it was. The values are those of ``astype`` either way."""
    from fedeval.aggregation.release import finish_sum
    from fedeval.privacy.mechanism_for import mechanism_for

    mech = mechanism_for(fe.SecureAggregation(), SKETCH, n_clients=10)
    gen = np.random.default_rng(3)
    summed = gen.integers(-(1 << 40), 1 << 40, SKETCH.length)
    summed[:2] = [(1 << 53) + 1, -(1 << 60) - 7]  # values that float64 rounds
    expected = summed.astype(np.float64)

    kept = summed.copy()
    r = finish_sum(SKETCH, mech, kept, 10)
    np.testing.assert_array_equal(r.values, expected)
    np.testing.assert_array_equal(kept, summed)  # not given away: untouched

    wide = np.concatenate([summed, summed])
    view = wide[: SKETCH.length]
    r = finish_sum(SKETCH, mech, view, 10, owned=True)
    np.testing.assert_array_equal(r.values, expected)
    np.testing.assert_array_equal(wide[: SKETCH.length], summed)  # a view: copied

    given = summed.copy()
    r = finish_sum(SKETCH, mech, given, 10, owned=True)
    np.testing.assert_array_equal(r.values, expected)
    assert np.shares_memory(r.values, given)  # converted where it was

    floats = expected.copy()  # a float sum given away is the values themselves
    assert finish_sum(SKETCH, mech, floats, 10, owned=True).values is floats
    as_view = summed.copy().view(np.float64)  # as sum_vectors returns a converted sum
    assert finish_sum(SKETCH, mech, as_view, 10, owned=True).values is as_view


@pytest.mark.parametrize("piece", [1, 7, 1 << 15])
def test_the_noise_and_the_float_conversion_in_one_pass_are_the_sum(
    piece: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``as_float_in_place`` (pieces that do not divide the vector, a short last
    one) is ``(vec + plus).astype(float64)``, written over ``vec``."""
    from fedeval.aggregation import paths

    monkeypatch.setattr(paths, "_FLOAT_PIECE", piece)
    gen = np.random.default_rng(piece)
    vec = gen.integers(-(1 << 62), 1 << 62, 1000)
    plus = gen.integers(-(1 << 60), 1 << 60, 1000)
    expected = (vec + plus).astype(np.float64)
    assert paths.owned_int64(vec) and not paths.owned_int64(vec[::2])
    out = paths.as_float_in_place(vec, plus=plus)
    assert out.dtype == np.float64 and np.shares_memory(out, vec)
    np.testing.assert_array_equal(out, expected)
