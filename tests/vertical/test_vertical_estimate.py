"""fedeval.vertical.auc (estimate.py): the exact protocol, results, reproducibility, bad input."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score

import fedeval as fe
import fedeval.vertical as fv
from fedeval.privacy.mechanisms.randomized_response import flip_probability
from fedeval.privacy.receipt import Receipt
from fedeval.vertical.estimate import release_rank_sums
from helpers import VERTICAL_COMBOS, vertical_data

LAPLACE = fe.LabelDP(1.0)
GAUSSIAN = fe.LabelDP(1.0, noise="gaussian", delta=1e-6)
RR = fe.LabelDP(1.0, noise="rr")


def _model(noise: str, epsilon: float = 1.0) -> fe.LabelDP:
    delta = 1e-6 if noise == "gaussian" else None
    return fe.LabelDP(epsilon, noise=noise, delta=delta)  # type: ignore[arg-type]


# --- no noise: the exact AUC ----------------------------------------------------------


def test_no_noise_is_the_correctly_rounded_exact_auc():
    # Mann-Whitney by pair counting in exact rationals (ties 1/2); eq. (1) on mid-ranks
    # is computed from exact half-integer sums and one division, so it matches bit for bit.
    from fractions import Fraction

    for seed in range(5):
        s, y, ids = vertical_data(seed, m=150)
        pos, neg = s[y == 1], s[y == 0]
        wins = sum(Fraction(int(a > b) * 2 + int(a == b), 2) for a in pos for b in neg)
        exact = float(wins / (pos.size * neg.size))
        assert fv.auc(s, y, ids).roc_auc == exact
        assert fv.auc(s, y, np.zeros(s.size, int)).roc_auc == exact


@settings(max_examples=60, deadline=None)
@given(
    m=st.integers(2, 60),
    n_clients=st.integers(1, 60),
    decimals=st.integers(0, 2),
    seed=st.integers(0, 2**32 - 1),
)
def test_no_noise_invariant_to_client_split(m, n_clients, decimals, seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, m)
    y[0], y[-1] = 0, 1
    s = np.round(rng.normal(size=m), decimals)
    ids = rng.integers(0, n_clients, m) * 3 - 5
    exact = roc_auc_score(y, s)
    assert fv.auc(s, y, ids).roc_auc == pytest.approx(exact, abs=1e-12)
    assert fv.auc(s, y, np.arange(m)).roc_auc == pytest.approx(exact, abs=1e-12)
    assert fv.auc(s, y, np.zeros(m, int)).roc_auc == pytest.approx(exact, abs=1e-12)


@pytest.mark.parametrize(("noise", "rank_sensitivity", "allocation"), VERTICAL_COMBOS[1:])
@pytest.mark.parametrize("path", ["fast", "faithful"])
def test_release_pipeline_converges_as_noise_vanishes(noise, rank_sensitivity, allocation, path):
    # Exercises the orthogonal decomposition r = mean*1 + v' and its reassembly.
    s, y, ids = vertical_data(3, m=600)
    proto = fv.rank_protocol(s, ids)
    sketch = proto.sketch(allocation=allocation, rank_sensitivity=rank_sensitivity)
    rel = release_rank_sums(proto, y, _model(noise, 1e9), sketch, path=path, rng=0)
    released = rel.decode()
    exact = fv.local_statistics(proto, y)
    k = proto.n_clients
    sd = np.sqrt(rel.variance)
    weight = proto.mean_rank if sketch.centred else np.zeros(k)
    # 10 noise standard deviations of localSum'_k = weight_k·localP'_k + X'_k (the analytic
    # Gaussian's σ shrinks only like 1/√ε).
    tol = 10 * float((sd[k:] + weight * sd[:k]).max())
    assert 0 < tol < 1.0
    # Plus the fixed-point rounding of the sums: at most γ/2 per positive example.
    bias = sketch.step / 2 * exact.local_pos
    np.testing.assert_allclose(released.local_sum, exact.local_sum, rtol=0, atol=tol + bias.max())
    np.testing.assert_allclose(released.local_pos, exact.local_pos, rtol=0, atol=tol)
    auc = fv.auc_from_rank_sum(released.local_sum.sum(), released.local_pos.sum(), s.size)
    assert auc == pytest.approx(roc_auc_score(y, s), abs=1e-5)


def test_rr_with_negligible_flip_probability_is_exact():
    s, y, ids = vertical_data(4)
    res = fv.auc(s, y, ids, fe.LabelDP(60.0, noise="rr"), rng=0)  # ρ ≈ 1e-26
    assert res.roc_auc == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    assert res.released_n_pos == pytest.approx(y.sum(), abs=1e-9)


# --- results, reproducibility ----------------------------------------------------------


def test_result_fields_and_guarantee():
    s, y, ids = vertical_data(9)
    res = fv.auc(s, y, ids, epsilon=2.0, allocation="adaptive", rng=3)
    assert isinstance(res, fv.VerticalAUC)
    assert float(res) == res.roc_auc
    assert res.allocation == "adaptive" and res.alpha is None and res.beta is None
    assert res.epsilon_spent == 2.0 and res.guarantee.delta == 0.0
    assert isinstance(res.receipt, Receipt) and res.receipt.epsilon_spent == 2.0
    assert res.n_examples == s.size and res.n_clients == np.unique(ids).size
    assert res.client_beta is not None and res.client_beta.shape == (res.n_clients,)
    assert res.guarantee.unit == "label" and res.guarantee.epsilon == 2.0
    assert res.roc_auc_se > 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.roc_auc = 0.0  # type: ignore[misc]
    # epsilon= is sugar for LabelDP(epsilon): the same release, the same estimate.
    same = fv.auc(s, y, ids, fe.LabelDP(2.0), allocation="adaptive", rng=3)
    assert same.roc_auc == res.roc_auc and same.receipt.as_dict() == res.receipt.as_dict()
    rr = fv.auc(s, y, ids, fe.LabelDP(2.0, noise="rr"), rng=3)
    assert rr.guarantee.unit == "label" and rr.epsilon_spent == 2.0 and rr.roc_auc_se > 0
    gau = fv.auc(s, y, ids, fe.LabelDP(2.0, noise="gaussian", delta=1e-5), rng=3)
    assert gau.guarantee.delta == 1e-5 and gau.receipt.delta_spent == pytest.approx(1e-5)
    fixed = fv.auc(s, y, ids, epsilon=2.0, alpha=0.3, rng=3)
    assert fixed.alpha == 0.3 and fixed.beta is None and fixed.client_beta is None


@pytest.mark.parametrize(("noise", "rank_sensitivity", "allocation"), VERTICAL_COMBOS)
@pytest.mark.parametrize("path", ["fast", "faithful"])
def test_same_seed_same_estimate(noise, rank_sensitivity, allocation, path):
    s, y, ids = vertical_data(10)
    kw = {"rank_sensitivity": rank_sensitivity, "allocation": allocation, "path": path}
    model = _model(noise)
    a = fv.auc(s, y, ids, model, rng=5, **kw).roc_auc
    assert fv.auc(s, y, ids, model, rng=5, **kw).roc_auc == a
    assert fv.auc(s, y, ids, model, rng=6, **kw).roc_auc != a


def test_heavy_noise_warns_but_returns():
    rng = np.random.default_rng(13)
    y = np.array([0, 1] * 5)
    s = rng.normal(size=10)
    with pytest.warns(UserWarning, match="outside"):
        for seed in range(50):  # deterministic: some seed sends P̄ outside (0, 10)
            res = fv.auc(s, y, np.arange(10), epsilon=0.01, rng=seed)
            if not 0 < res.released_n_pos < 10:
                break
    assert not 0 < res.released_n_pos < 10
    assert math.isnan(res.roc_auc_se)


# --- bad input ---------------------------------------------------------------------------


@pytest.fixture
def good():
    s, y, ids = vertical_data(14, m=50)
    return s, y, ids


def test_client_with_no_examples(good):
    s, y, ids = good
    declared = np.append(np.unique(ids), 12345)
    with pytest.raises(ValueError, match="12345 has no examples"):
        fv.auc(s, y, ids, epsilon=1.0, clients=declared)
    with pytest.raises(ValueError, match="no examples"):
        fv.simulate(s, y, n_clients=s.size + 1, epsilon=1.0)
    with pytest.raises(ValueError, match="no examples"):
        fv.assign_clients(s, s.size + 1)
    with pytest.raises(ValueError, match="not among the declared clients"):
        fv.auc(s, y, ids, epsilon=1.0, clients=np.unique(ids)[1:])


@pytest.mark.parametrize("bad", [[0, 2], [0, -1], [0.5, 1], [0, np.nan]])
def test_labels_not_binary(good, bad):
    s, y, ids = good
    y = y.astype(float)
    y[: len(bad)] = bad
    with pytest.raises(ValueError, match="0 or 1"):
        fv.auc(s, y, ids, epsilon=1.0)


def test_labels_single_class_without_dp_is_an_error(good):
    s, _, ids = good
    with pytest.raises(ValueError, match="single class"):
        fv.auc(s, np.ones(s.size, int), ids)
    with pytest.raises(ValueError, match="single class"):
        fv.simulate(s, np.zeros(s.size, int), n_clients=2, epsilon=1.0)


@pytest.mark.parametrize("noise", ["laplace", "gaussian", "rr"])
@pytest.mark.parametrize("label", [0, 1])
def test_labels_single_class_under_label_dp_is_released_with_a_warning(good, noise, label):
    """Issue 12, finding 6: under DP an empty class is no refusal (it would depend on the data).

    The estimate is NaN when the released positive count leaves (0, M) and a
    noisy number otherwise; a warning says the count is not clearly inside
    (0, M). Its message holds released values only, not the exact count.
    """
    s, _, ids = good
    y = np.full(s.size, label)
    outcomes = set()
    for seed in range(12):
        with pytest.warns(UserWarning, match="released positive count") as record:
            res = fv.auc(s, y, ids, _model(noise), rng=seed)
        assert res.epsilon_spent == pytest.approx(1.0)
        outside = not 0 < res.released_n_pos < s.size
        assert math.isnan(res.roc_auc) == outside
        outcomes.add(outside)
        for w in record:
            assert "positives of" not in str(w.message)
    assert True in outcomes  # some seed gave NaN


def test_empty_class_under_label_dp_gives_nan_and_a_warning(good):
    s, _, ids = good
    for seed in range(50):  # deterministic: about every other seed sends P̄ below 0
        with pytest.warns(UserWarning, match="released positive count"):
            res = fv.auc(s, np.zeros(s.size, int), ids, LAPLACE, rng=seed)
        if res.released_n_pos <= 0:
            break
    assert res.released_n_pos <= 0
    assert math.isnan(res.roc_auc) and math.isnan(res.roc_auc_se)


def test_length_mismatch(good):
    s, y, ids = good
    with pytest.raises(ValueError, match="label parties hold 50 examples"):
        fv.auc(np.append(s, 0.3), y, ids, epsilon=1.0)
    with pytest.raises(ValueError, match="client_of_example has 49"):
        fv.auc(s, y, ids[:-1], epsilon=1.0)
    with pytest.raises(ValueError, match="scores has 49"):
        fv.simulate(s[:-1], y, n_clients=2, epsilon=1.0)
    proto = fv.rank_protocol(s, ids)
    with pytest.raises(ValueError, match="labels has 49"):
        fv.local_statistics(proto, y[:-1])


@pytest.mark.parametrize("eps", [0, 0.0, -1.0, math.nan, math.inf])
def test_epsilon_not_positive(good, eps):
    s, y, ids = good
    for noise in ("rr", "laplace", "gaussian"):
        with pytest.raises(ValueError, match="epsilon"):
            fv.auc(
                s, y, ids, fe.LabelDP(eps, noise=noise, delta=1e-6 if noise == "gaussian" else None)
            )
    with pytest.raises(ValueError, match="epsilon"):
        fv.auc(s, y, ids, epsilon=eps)
    with pytest.raises(ValueError, match="epsilon"):
        fv.simulate(s, y, n_clients=3, epsilon=eps)
    with pytest.raises(ValueError, match="epsilon"):
        flip_probability(eps)


def test_other_bad_options(good):
    s, y, ids = good
    with pytest.raises(TypeError, match="epsilon"):
        fv.auc(s, y, ids, epsilon="one")  # type: ignore[arg-type]
    # Behaviour change: without privacy= or epsilon= the exact protocol runs (no DP), where
    # epsilon used to be required; giving both is ambiguous and refused.
    assert not fv.auc(s, y, ids).guarantee.is_private
    with pytest.raises(TypeError, match="not both"):
        fv.auc(s, y, ids, LAPLACE, epsilon=1.0)
    with pytest.raises(TypeError, match="not both"):
        fv.simulate(s, y, n_clients=2, privacy=LAPLACE, epsilon=1.0)
    # The old mechanism strings are gone: the noise is the model's.
    with pytest.raises(ValueError, match="noise"):
        fe.LabelDP(1.0, noise="local-laplace")  # type: ignore[arg-type]
    # Models that cannot release the rank sums.
    with pytest.raises(TypeError, match="LocalDP"):
        fv.auc(s, y, ids, fe.LocalDP(1.0))
    with pytest.raises(TypeError, match="UserLevelDP"):
        fv.auc(s, y, ids, fe.UserLevelDP(1.0, 1e-5, 1.0))
    with pytest.raises(ValueError, match="LabelDP"):
        fv.auc(s, y, ids, fe.DistributedDP(1.0))
    with pytest.raises(ValueError, match="allocation"):
        fv.auc(s, y, ids, epsilon=1.0, allocation="best")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="rank sensitivity"):
        fv.auc(s, y, ids, epsilon=1.0, rank_sensitivity="max")  # type: ignore[arg-type]
    for a in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match="alpha"):
            fv.auc(s, y, ids, epsilon=1.0, alpha=a)
        with pytest.raises(ValueError, match="beta"):
            fv.auc(s, y, ids, epsilon=1.0, allocation="orthogonal", beta=a)
    with pytest.raises(ValueError, match="delta"):
        fe.LabelDP(1.0, noise="gaussian")
    with pytest.raises(ValueError, match="delta"):
        fe.LabelDP(1.0, noise="gaussian", delta=1.5)
    with pytest.raises(ValueError, match="delta"):
        fe.LabelDP(1.0, delta=1e-5)
    for model in (LAPLACE, GAUSSIAN):
        with pytest.raises(ValueError, match="allocation"):
            fv.auc(s, y, ids, model, rank_sensitivity="global", allocation="adaptive")
    with pytest.raises(TypeError, match="integer client ids"):
        fv.auc(s, y, ids.astype(float), epsilon=1.0)
    bad = s.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        fv.auc(bad, y, ids, epsilon=1.0)
    with pytest.raises(ValueError, match="path"):
        fv.auc(s, y, ids, epsilon=1.0, path="slow")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n_reps"):
        fv.simulate(s, y, n_clients=2, epsilon=1.0, n_reps=1)
    with pytest.raises(ValueError, match="assignment"):
        fv.simulate(s, y, n_clients=2, epsilon=1.0, assignment="random")  # type: ignore[arg-type]


def test_rr_allocation_only_chooses_the_encoding(good):
    # Behaviour change: RR with allocation="orthogonal" used to be refused; the allocation
    # now only chooses the encoding (plain or centred rank sums), and the linear debiasing
    # gives the same estimate from the same flips.
    s, y, ids = good
    fixed = fv.auc(s, y, ids, RR, rng=4)
    for allocation in ("orthogonal", "adaptive"):
        other = fv.auc(s, y, ids, RR, allocation=allocation, rng=4)
        assert other.roc_auc == pytest.approx(fixed.roc_auc, abs=1e-12)
        assert other.roc_auc_se == pytest.approx(fixed.roc_auc_se, rel=1e-9)
        assert other.epsilon_spent == fixed.epsilon_spent == 1.0


def test_errors_consume_no_randomness(good):
    s, y, ids = good
    gen = np.random.default_rng(0)
    before = gen.bit_generator.state
    with pytest.raises(ValueError):
        fv.auc(s, y, ids, epsilon=-1.0, rng=gen)
    with pytest.raises(ValueError):
        fv.auc(s, y, ids, epsilon=1.0, clients=[1, 2], rng=gen)
    with pytest.raises(ValueError):
        fv.auc(s, y, ids, epsilon=1.0, allocation="adaptive", rank_sensitivity="global", rng=gen)
    with pytest.raises(TypeError):
        fv.auc(s, y, ids, fe.LocalDP(1.0), rng=gen)
    assert gen.bit_generator.state == before


@pytest.mark.parametrize(
    ("model", "allocation"),
    [(RR, "fixed"), (LAPLACE, "fixed"), (LAPLACE, "adaptive"), (GAUSSIAN, "orthogonal")],
)
def test_vertical_release_is_charged_to_the_ledger(model, allocation) -> None:
    rng = np.random.default_rng(0)
    s = rng.random(500)
    y = (rng.random(500) < s).astype(int)
    ids = np.arange(500) % 5
    ledger = fe.BudgetLedger(1.5, 1e-5)
    res = fe.vertical.auc(s, y, ids, model, allocation=allocation, rng=0, ledger=ledger)
    assert ledger.spent_epsilon == pytest.approx(1.0) == res.epsilon_spent
    assert ledger.spent_delta == pytest.approx(model.delta_or_zero)
    assert all(e.unit == "label" for e in ledger.entries)
    n_entries = len(ledger.entries)
    # The ledger is charged before any noise is drawn: a refused release draws nothing.
    gen = np.random.default_rng(1)
    before = gen.bit_generator.state
    with pytest.raises(fe.BudgetExceededError):
        fe.vertical.auc(s, y, ids, model, allocation=allocation, rng=gen, ledger=ledger)
    assert gen.bit_generator.state == before
    assert len(ledger.entries) == n_entries
    assert ledger.spent_epsilon == pytest.approx(1.0)
