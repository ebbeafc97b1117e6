"""Deterministic tests of fedeval.vertical (Sun et al. 2023, vertical FL AUC)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import expit
from scipy.stats import rankdata
from sklearn.metrics import roc_auc_score

import fedeval.vertical as fv
from fedeval.privacy.mechanisms.gaussian import Gaussian

# (mechanism, allocation, delta) combinations that the module supports.
COMBOS = [
    ("rr", "fixed", None),
    ("global-laplace", "fixed", None),
    ("local-laplace", "fixed", None),
    ("local-laplace", "orthogonal", None),
    ("local-laplace", "adaptive", None),
    ("global-gaussian", "fixed", 1e-6),
    ("local-gaussian", "fixed", 1e-6),
    ("local-gaussian", "orthogonal", 1e-6),
    ("local-gaussian", "adaptive", 1e-6),
]


def _data(seed: int, m: int = 400, n_clients: int = 17, decimals: int = 1):
    """Scores rounded to create many ties, labels with signal, arbitrary client ids."""
    rng = np.random.default_rng(seed)
    y = (rng.random(m) < 0.3).astype(np.int64)
    y[:2] = [0, 1]
    s = np.round(rng.normal(size=m) + 1.2 * y, decimals)
    ids = rng.choice(np.array([-7, 3, 11, 10**9, 42, *range(100, 100 + n_clients)]), m)
    return s, y, ids


# --- rank protocol: worked examples -----------------------------------------------------


def test_worked_example_distinct_scores():
    # Pairs (pos, neg): 0.35>0.1 yes, 0.35>0.4 no, 0.8>0.1 yes, 0.8>0.4 yes -> 3/4.
    s = np.array([0.1, 0.4, 0.35, 0.8])
    y = np.array([0, 0, 1, 1])
    np.testing.assert_array_equal(fv.mid_ranks(s), [0.0, 2.0, 1.0, 3.0])
    # eq. (1): (1 + 3 - 2*1/2) / (2*2) = 0.75
    assert fv.rank_auc(s, y) == 0.75
    assert fv.auc(s, y, [5, 5, 9, 9], epsilon=None).value == 0.75


def test_worked_example_ties_count_half():
    # Tied pairs count 1/2: (1 vs 1) 1/2, (1 vs 2) 0, (2 vs 1) 1, (2 vs 2) 1/2 -> 2/4.
    s = np.array([1.0, 1.0, 2.0, 2.0])
    y = np.array([0, 1, 0, 1])
    np.testing.assert_array_equal(fv.mid_ranks(s), [0.5, 0.5, 2.5, 2.5])
    assert fv.rank_auc(s, y) == 0.5 == roc_auc_score(y, s)


def test_mid_ranks_match_scipy_average_ranks():
    s, _, _ = _data(0)
    np.testing.assert_array_equal(fv.mid_ranks(s), rankdata(s) - 1)


def test_rank_protocol_summaries():
    s, y, ids = _data(1)
    proto = fv.rank_protocol(s, ids)
    stats = fv.local_statistics(proto, y)
    assert proto.n_examples == s.size
    np.testing.assert_array_equal(proto.client_ids, np.unique(ids))
    assert proto.counts.sum() == s.size
    for k, cid in enumerate(proto.client_ids):
        r = proto.ranks[ids == cid]
        assert proto.max_rank[k] == r.max()
        assert proto.min_rank[k] == r.min()
        assert proto.mean_rank[k] == pytest.approx(r.mean(), rel=1e-12)
        assert stats.local_sum[k] == pytest.approx(r @ y[ids == cid], rel=1e-12)
        assert stats.local_pos[k] == y[ids == cid].sum()
    assert proto.global_mean_rank == pytest.approx(proto.ranks.mean(), rel=1e-12)
    np.testing.assert_allclose(stats.local_neg, proto.counts - stats.local_pos)


# --- no noise: every mechanism equals sklearn --------------------------------------------


@pytest.mark.parametrize(("mechanism", "allocation", "delta"), COMBOS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_no_noise_equals_sklearn_with_ties(mechanism, allocation, delta, seed):
    s, y, ids = _data(seed)
    res = fv.auc(s, y, ids, epsilon=None, mechanism=mechanism, allocation=allocation, delta=delta)
    # Both sides are exact rational numbers computed in float64; they agree to rounding.
    assert res.value == pytest.approx(roc_auc_score(y, s), rel=0, abs=1e-12)
    assert res.standard_error == 0.0
    assert res.guarantee.unit == "none"
    assert math.isinf(res.guarantee.epsilon)


def test_no_noise_is_the_correctly_rounded_exact_auc():
    # Mann-Whitney by pair counting in exact rationals (ties 1/2); eq. (1) on mid-ranks
    # is computed from exact half-integer sums and one division, so it matches bit for bit.
    from fractions import Fraction

    for seed in range(5):
        s, y, ids = _data(seed, m=150)
        pos, neg = s[y == 1], s[y == 0]
        wins = sum(Fraction(int(a > b) * 2 + int(a == b), 2) for a in pos for b in neg)
        exact = float(wins / (pos.size * neg.size))
        assert fv.auc(s, y, ids, epsilon=None).value == exact
        assert fv.rank_auc(s, y) == exact


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
    assert fv.auc(s, y, ids, epsilon=None).value == pytest.approx(exact, abs=1e-12)
    assert fv.auc(s, y, np.arange(m), epsilon=None).value == pytest.approx(exact, abs=1e-12)
    assert fv.auc(s, y, np.zeros(m, int), epsilon=None).value == pytest.approx(exact, abs=1e-12)


@pytest.mark.parametrize(("mechanism", "allocation", "delta"), COMBOS[1:])
def test_mechanism_pipeline_converges_as_noise_vanishes(mechanism, allocation, delta):
    # Exercises the orthogonal decomposition r = mean*1 + v' and its reassembly.
    s, y, ids = _data(3, m=600)
    noise, sens = mechanism.split("-")[1], mechanism.split("-")[0]
    proto = fv.rank_protocol(s, ids)
    plan = fv.noise_plan(
        proto, epsilon=1e9, noise=noise, sensitivity=sens, allocation=allocation, delta=delta
    )
    released = fv.release_local_statistics(proto, y, plan, rng=0)
    exact = fv.local_statistics(proto, y)
    # 10 noise standard deviations (the analytic Gaussian's σ shrinks only like 1/√ε).
    tol = 10 * float((plan.sum_scale + plan.pos_weight * plan.pos_scale).max())
    assert tol < 1.0
    np.testing.assert_allclose(released.local_sum, exact.local_sum, rtol=0, atol=tol)
    assert released.auc() == pytest.approx(roc_auc_score(y, s), abs=1e-5)


def test_rr_with_negligible_flip_probability_is_exact():
    s, y, ids = _data(4)
    res = fv.auc(s, y, ids, mechanism="rr", epsilon=60.0, rng=0)  # ρ ≈ 1e-26
    assert res.value == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    assert res.noisy_auc == pytest.approx(res.value, abs=1e-12)


# --- RR debiasing algebra --------------------------------------------------------------


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 3.0])
def test_algorithm3_equals_centred_ratio_form(epsilon):
    # The identity the delta-method derivation rests on (module docstring).
    s, y, _ = _data(5, m=1000)
    m = s.size
    r = fv.mid_ranks(s)
    rho = fv.flip_probability(epsilon)
    flipped = fv.randomized_response(y, epsilon=epsilon, rng=1)
    p_bar = float(flipped.sum())
    noisy = fv.auc_from_rank_sum(r @ flipped, p_bar, m)
    p_est = (p_bar * (1 - rho) - (m - p_bar) * rho) / (1 - 2 * rho)
    c = r - (m - 1) / 2
    ratio_form = 0.5 + (c @ flipped) / ((1 - 2 * rho) * p_est * (m - p_est))
    assert fv.debias_auc(noisy, p_bar, m, epsilon=epsilon) == pytest.approx(ratio_form, abs=1e-13)


def test_debias_is_identity_in_expectation_form():
    # Eq. (3) inverts AUC_noisy = (1-α-β)A + (α+β)/2 at the true base rate.
    m, p, a_true, eps = 10_000, 2_500, 0.8, 1.0
    rho = fv.flip_probability(eps)
    pi = p / m
    alpha = (1 - pi) * rho / (pi * (1 - rho) + (1 - pi) * rho)
    beta = pi * rho / (pi * rho + (1 - pi) * (1 - rho))
    noisy = (1 - alpha - beta) * a_true + (alpha + beta) / 2
    p_bar = m * (pi * (1 - rho) + (1 - pi) * rho)  # expected noisy positives
    assert fv.debias_auc(noisy, p_bar, m, epsilon=eps) == pytest.approx(a_true, abs=1e-12)


def test_debias_undefined_is_nan():
    assert math.isnan(fv.debias_auc(math.nan, 0.0, 10, epsilon=1.0))
    # P̄ = 0 or M: no flipped positives (negatives), eq. (4) divides by zero.
    out = fv.debias_auc(np.array([0.6, 0.6, 0.6]), np.array([3.0, 0.0, 10.0]), 10, epsilon=1.0)
    assert np.isfinite(out[0]) and np.isnan(out[1]) and np.isnan(out[2])


def test_variance_formulas_closed_forms():
    m, p = 1000, 300
    r = np.arange(m, dtype=float)
    rho = fv.flip_probability(2.0)
    eq7 = fv.rr_variance_eq7(p, m - p, epsilon=2.0)
    assert eq7 == pytest.approx(rho * (1 - rho) * (r @ r) / (p * (m - p)) ** 2, rel=1e-12)
    mine = fv.rr_variance_delta(r, n_pos=p, auc=0.5, epsilon=2.0)
    # At A = 1/2 only the centred rank sum of squares M(M²-1)/12 remains.
    expect = rho * (1 - rho) / (1 - 2 * rho) ** 2 * m * (m * m - 1) / 12 / (p * (m - p)) ** 2
    assert mine == pytest.approx(expect, rel=1e-12)
    assert fv.rr_bias_second_order(m, p, auc=0.5, epsilon=2.0) == 0.0


# --- Laplace / Gaussian noise plans ------------------------------------------------------


def test_adaptive_beta_minimises_the_local_sum_variance():
    a = np.array([5.0, 100.0, 1000.0, 3.0, 7.0])
    b = np.array([50.0, 100.0, 10.0, 0.0, 7.0])
    grid = np.linspace(1e-4, 1 - 1e-4, 200_001)
    beta = fv.adaptive_beta(a, b)
    beta_g = fv.adaptive_beta(a, b, noise="gaussian")
    for k in range(a.size):
        if b[k] == 0:
            assert beta[k] == 1.0 and beta_g[k] == 1.0
            continue
        lap = a[k] ** 2 / grid**2 + b[k] ** 2 / (1 - grid) ** 2
        gau = a[k] ** 2 / grid + b[k] ** 2 / (1 - grid)
        assert beta[k] == pytest.approx(grid[np.argmin(lap)], abs=2e-5)
        assert beta_g[k] == pytest.approx(grid[np.argmin(gau)], abs=2e-5)


def test_laplace_plan_scales_spend_exactly_epsilon():
    s, _, ids = _data(6)
    proto = fv.rank_protocol(s, ids)
    eps, alpha, beta = 1.5, 0.3, 0.6
    fixed = fv.noise_plan(proto, epsilon=eps, alpha=alpha)
    np.testing.assert_allclose(fixed.sum_scale, proto.max_rank / (alpha * eps))
    np.testing.assert_allclose(fixed.pos_scale, 1 / ((1 - alpha) * eps))
    # ε spent = Δ_sum/b_sum + Δ_pos/b_pos for every client.
    np.testing.assert_allclose(fixed.sum_sensitivity / fixed.sum_scale + 1 / fixed.pos_scale, eps)
    glob = fv.noise_plan(proto, epsilon=eps, sensitivity="global", alpha=alpha)
    np.testing.assert_allclose(glob.sum_scale, (s.size - 1) / (alpha * eps))
    for allocation in ("orthogonal", "adaptive"):
        plan = fv.noise_plan(proto, epsilon=eps, allocation=allocation, beta=beta)
        np.testing.assert_allclose(plan.pos_weight, proto.mean_rank)
        spent = 1 / plan.pos_scale + np.where(
            plan.sum_scale > 0,
            plan.sum_sensitivity / np.where(plan.sum_scale > 0, plan.sum_scale, 1),
            0,
        )
        has_v = proto.spread > 0
        np.testing.assert_allclose(spent[has_v], eps)
        assert np.all(spent <= eps * (1 + 1e-12))
    assert fv.noise_plan(proto, epsilon=eps, allocation="orthogonal", beta=beta).beta == beta


def test_gaussian_plan_is_jointly_calibrated():
    s, _, ids = _data(7)
    proto = fv.rank_protocol(s, ids)
    eps, delta = 1.0, 1e-6
    unit = Gaussian.calibrate(eps, delta).noise_multiplier
    for allocation in ("fixed", "orthogonal", "adaptive"):
        plan = fv.noise_plan(
            proto, epsilon=eps, noise="gaussian", allocation=allocation, delta=delta
        )
        with np.errstate(divide="ignore", invalid="ignore"):
            term = np.where(plan.sum_scale > 0, (plan.sum_sensitivity / plan.sum_scale) ** 2, 0.0)
        joint = np.sqrt(term + 1 / plan.pos_scale**2)
        assert np.all(joint <= 1 / unit * (1 + 1e-12))
        # The pair is then (ε, δ)-DP by the analytic Gaussian mechanism at σ/Δ2 = unit.
        assert Gaussian(unit).delta_for_epsilon(eps) <= delta * (1 + 1e-9)
        assert plan.guarantee().delta == delta


def test_variance_delta_reduces_to_eq8_and_eq9_one_example_per_client():
    m, p, eps, alpha = 500, 150, 2.0, 0.5
    rng = np.random.default_rng(8)
    s = rng.permutation(m).astype(float)  # distinct scores: ranks 0..M-1
    proto = fv.rank_protocol(s, np.arange(m))
    for sens, formula in (
        ("global", fv.global_laplace_variance_eq8(m, p, n_clients=m, epsilon_sum=alpha * eps)),
        ("local", fv.local_laplace_variance_eq9(m, p, epsilon_sum=alpha * eps)),
    ):
        plan = fv.noise_plan(proto, epsilon=eps, sensitivity=sens, alpha=alpha)
        v = fv.laplace_variance_delta(proto, plan, auc=0.7, n_pos=p, counts_exact=True)
        assert v == pytest.approx(formula, rel=1e-12)
    ratio = fv.global_laplace_variance_eq8(
        m, p, n_clients=m, epsilon_sum=1.0
    ) / fv.local_laplace_variance_eq9(m, p, epsilon_sum=1.0)
    assert ratio == pytest.approx(6 * (m - 1) / (2 * m - 1), rel=1e-12)


# --- results, reproducibility, simulation ------------------------------------------------


def test_result_fields_and_guarantee():
    s, y, ids = _data(9)
    res = fv.auc(s, y, ids, epsilon=2.0, mechanism="local-laplace", allocation="adaptive", rng=3)
    assert isinstance(res, fv.VerticalAUC)
    assert float(res) == res.value
    assert res.mechanism == "local-laplace" and res.allocation == "adaptive"
    assert res.epsilon == 2.0 and res.delta == 0.0
    assert res.n_examples == s.size and res.n_clients == np.unique(ids).size
    assert res.client_beta is not None and res.client_beta.shape == (res.n_clients,)
    assert res.guarantee.unit == "label" and res.guarantee.epsilon == 2.0
    assert res.standard_error > 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.value = 0.0  # type: ignore[misc]
    rr = fv.auc(s, y, ids, epsilon=2.0, mechanism="rr", rng=3)
    assert rr.noisy_auc is not None and rr.allocation is None and rr.guarantee.unit == "label"
    fixed = fv.auc(s, y, ids, epsilon=2.0, alpha=0.3, rng=3)
    assert fixed.alpha == 0.3 and fixed.beta is None


@pytest.mark.parametrize(("mechanism", "allocation", "delta"), COMBOS)
def test_same_seed_same_estimate(mechanism, allocation, delta):
    s, y, ids = _data(10)
    kw = {"mechanism": mechanism, "allocation": allocation, "delta": delta, "epsilon": 1.0}
    a = fv.auc(s, y, ids, rng=5, **kw).value
    assert fv.auc(s, y, ids, rng=5, **kw).value == a
    assert fv.auc(s, y, ids, rng=6, **kw).value != a


def test_assign_clients_sizes_and_blocks():
    rng = np.random.default_rng(11)
    s = rng.normal(size=1003)
    for assignment in ("iid", "by-score"):
        idx = fv.assign_clients(s, 10, assignment=assignment, rng=0)
        sizes = np.bincount(idx)
        assert sizes.size == 10 and sizes.max() - sizes.min() <= 1
    idx = fv.assign_clients(s, 10, assignment="by-score")
    highs = [s[idx == k].max() for k in range(10)]
    lows = [s[idx == k].min() for k in range(10)]
    assert all(highs[k] <= lows[k + 1] for k in range(9))
    np.testing.assert_array_equal(
        fv.assign_clients(s, s.size, assignment="iid", rng=0).size, s.size
    )


def test_simulate_without_noise_and_shapes():
    rng = np.random.default_rng(12)
    y = (rng.random(300) < 0.4).astype(int)
    s = expit(rng.normal(size=300) + y)
    exact = roc_auc_score(y, s)
    res = fv.simulate(s, y, n_clients=7, epsilon=None, n_reps=5, rng=0)
    assert res.std == 0.0 and res.mean == pytest.approx(exact, abs=1e-12)
    res = fv.simulate(s, y, n_clients=300, epsilon=1.0, n_reps=50, rng=0, allocation="adaptive")
    assert res.estimates.shape == (50,) and res.n_invalid == 0
    assert res.true_auc == pytest.approx(exact, abs=1e-12)
    assert res.std > 0 and res.predicted_std > 0
    assert res.allocation == "adaptive" and res.alpha is None
    res = fv.simulate(s, y, n_clients=1, epsilon=1.0, mechanism="rr", n_reps=10, rng=0)
    assert res.allocation is None and res.estimates.shape == (10,)


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


# --- bad input ---------------------------------------------------------------------------


@pytest.fixture
def good():
    s, y, ids = _data(14, m=50)
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


def test_labels_single_class(good):
    s, _, ids = good
    with pytest.raises(ValueError, match="single class"):
        fv.auc(s, np.ones(s.size, int), ids, epsilon=1.0)
    with pytest.raises(ValueError, match="single class"):
        fv.simulate(s, np.zeros(s.size, int), n_clients=2, epsilon=1.0)


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
    for mechanism in ("rr", "local-laplace"):
        with pytest.raises(ValueError, match="epsilon"):
            fv.auc(s, y, ids, epsilon=eps, mechanism=mechanism)
    with pytest.raises(ValueError, match="epsilon"):
        fv.simulate(s, y, n_clients=3, epsilon=eps)
    with pytest.raises(ValueError, match="epsilon"):
        fv.randomized_response(y, epsilon=eps)


def test_other_bad_options(good):
    s, y, ids = good
    with pytest.raises(TypeError, match="epsilon"):
        fv.auc(s, y, ids, epsilon="one")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        fv.auc(s, y, ids)  # type: ignore[call-arg]  # epsilon is required
    with pytest.raises(ValueError, match="mechanism"):
        fv.auc(s, y, ids, epsilon=1.0, mechanism="laplace")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="allocation"):
        fv.auc(s, y, ids, epsilon=1.0, allocation="best")  # type: ignore[arg-type]
    for a in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match="alpha"):
            fv.auc(s, y, ids, epsilon=1.0, alpha=a)
        with pytest.raises(ValueError, match="beta"):
            fv.auc(s, y, ids, epsilon=1.0, allocation="orthogonal", beta=a)
    with pytest.raises(ValueError, match="delta"):
        fv.auc(s, y, ids, epsilon=1.0, mechanism="local-gaussian")
    with pytest.raises(ValueError, match="delta"):
        fv.auc(s, y, ids, epsilon=1.0, mechanism="local-gaussian", delta=1.5)
    with pytest.raises(ValueError, match="delta"):
        fv.auc(s, y, ids, epsilon=1.0, mechanism="local-laplace", delta=1e-5)
    with pytest.raises(ValueError, match="allocation"):
        fv.auc(s, y, ids, epsilon=1.0, mechanism="global-laplace", allocation="adaptive")
    with pytest.raises(ValueError, match="allocation"):
        fv.auc(s, y, ids, epsilon=1.0, mechanism="rr", allocation="orthogonal")
    with pytest.raises(TypeError, match="integer client ids"):
        fv.auc(s, y, ids.astype(float), epsilon=1.0)
    bad = s.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        fv.auc(bad, y, ids, epsilon=1.0)
    with pytest.raises(ValueError, match="n_reps"):
        fv.simulate(s, y, n_clients=2, epsilon=1.0, n_reps=1)
    with pytest.raises(ValueError, match="assignment"):
        fv.simulate(s, y, n_clients=2, epsilon=1.0, assignment="random")  # type: ignore[arg-type]


def test_errors_consume_no_randomness(good):
    s, y, ids = good
    gen = np.random.default_rng(0)
    before = gen.bit_generator.state
    with pytest.raises(ValueError):
        fv.auc(s, y, ids, epsilon=-1.0, rng=gen)
    with pytest.raises(ValueError):
        fv.auc(s, y, ids, epsilon=1.0, clients=[1, 2], rng=gen)
    assert gen.bit_generator.state == before


def test_vertical_release_is_charged_to_the_ledger() -> None:
    import fedeval as fe

    rng = np.random.default_rng(0)
    s = rng.random(500)
    y = (rng.random(500) < s).astype(int)
    ledger = fe.BudgetLedger(1.5)
    fe.vertical.auc(s, y, np.arange(500) % 5, epsilon=1.0, mechanism="rr", rng=0, ledger=ledger)
    assert ledger.spent_epsilon == pytest.approx(1.0)
    assert ledger.entries[0].unit == "label"
    with pytest.raises(fe.BudgetExceededError):
        fe.vertical.auc(s, y, np.arange(500) % 5, epsilon=1.0, mechanism="rr", rng=0, ledger=ledger)
    assert len(ledger.entries) == 1
