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

import fedeval as fe
import fedeval.vertical as fv
from fedeval.privacy.mechanism_for import mechanism_for
from fedeval.privacy.mechanisms.gaussian import Gaussian
from fedeval.privacy.mechanisms.randomized_response import flip_labels, flip_probability
from fedeval.privacy.noise import CentralNoise
from fedeval.privacy.receipt import Receipt
from fedeval.vertical.estimate import release_rank_sums

LAPLACE = fe.LabelDP(1.0)
GAUSSIAN = fe.LabelDP(1.0, noise="gaussian", delta=1e-6)
RR = fe.LabelDP(1.0, noise="rr")

# (noise, rank sensitivity, allocation): the combinations the module supports. The old
# mechanism strings map to LabelDP(ε, noise=...) with rank_sensitivity (see the brief).
COMBOS = [
    ("rr", "local", "fixed"),
    ("laplace", "global", "fixed"),
    ("laplace", "local", "fixed"),
    ("laplace", "local", "orthogonal"),
    ("laplace", "local", "adaptive"),
    ("gaussian", "global", "fixed"),
    ("gaussian", "local", "fixed"),
    ("gaussian", "local", "orthogonal"),
    ("gaussian", "local", "adaptive"),
]


def _model(noise: str, epsilon: float = 1.0) -> fe.LabelDP:
    delta = 1e-6 if noise == "gaussian" else None
    return fe.LabelDP(epsilon, noise=noise, delta=delta)  # type: ignore[arg-type]


def _data(seed: int, m: int = 400, n_clients: int = 17, decimals: int = 1):
    """Scores rounded to create many ties, labels with signal, arbitrary client ids."""
    rng = np.random.default_rng(seed)
    y = (rng.random(m) < 0.3).astype(np.int64)
    y[:2] = [0, 1]
    s = np.round(rng.normal(size=m) + 1.2 * y, decimals)
    ids = rng.choice(np.array([-7, 3, 11, 10**9, 42, *range(100, 100 + n_clients)]), m)
    return s, y, ids


def _mechanism(proto: fv.RankProtocol, model: fe.LabelDP, **sketch_kw):
    sketch = proto.sketch(**sketch_kw)
    mech = mechanism_for(model, sketch, n_clients=proto.n_clients)
    assert isinstance(mech.noise, CentralNoise)
    scale = np.broadcast_to(np.asarray(mech.noise.scale, dtype=np.float64), (sketch.length,))
    k = proto.n_clients
    return sketch, mech, scale[:k], scale[k:]  # noise on localP_k, on the (centred) sums


# --- rank protocol: worked examples -----------------------------------------------------


def test_worked_example_distinct_scores():
    # Pairs (pos, neg): 0.35>0.1 yes, 0.35>0.4 no, 0.8>0.1 yes, 0.8>0.4 yes -> 3/4.
    s = np.array([0.1, 0.4, 0.35, 0.8])
    y = np.array([0, 0, 1, 1])
    np.testing.assert_array_equal(fv.mid_ranks(s), [0.0, 2.0, 1.0, 3.0])
    # eq. (1): (1 + 3 - 2*1/2) / (2*2) = 0.75
    assert fv.auc_from_rank_sum(1.0 + 3.0, 2, 4) == 0.75
    assert roc_auc_score(y, s) == 0.75
    assert fv.auc(s, y, [5, 5, 9, 9]).roc_auc == 0.75


def test_worked_example_ties_count_half():
    # Tied pairs count 1/2: (1 vs 1) 1/2, (1 vs 2) 0, (2 vs 1) 1, (2 vs 2) 1/2 -> 2/4.
    s = np.array([1.0, 1.0, 2.0, 2.0])
    y = np.array([0, 1, 0, 1])
    np.testing.assert_array_equal(fv.mid_ranks(s), [0.5, 0.5, 2.5, 2.5])
    assert fv.auc(s, y, [0, 1, 0, 1]).roc_auc == 0.5 == roc_auc_score(y, s)


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
        assert proto.spread[k] == pytest.approx(np.abs(r - r.mean()).max(), rel=1e-12)
        assert stats.local_sum[k] == pytest.approx(r @ y[ids == cid], rel=1e-12)
        assert stats.local_pos[k] == y[ids == cid].sum()
    assert proto.global_mean_rank == pytest.approx(proto.ranks.mean(), rel=1e-12)
    np.testing.assert_allclose(stats.local_neg, proto.counts - stats.local_pos)


# --- no noise: every encoding equals sklearn ---------------------------------------------


@pytest.mark.parametrize(
    ("rank_sensitivity", "allocation"),
    sorted({(sens, alloc) for _, sens, alloc in COMBOS}),
)
@pytest.mark.parametrize("path", ["fast", "faithful"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_no_noise_equals_sklearn_with_ties(rank_sensitivity, allocation, path, seed):
    # Without a privacy model the exact protocol runs (secure aggregation, no DP); every
    # encoding (plain or centred rank sums) decodes to the exact AUC on either path.
    s, y, ids = _data(seed)
    res = fv.auc(s, y, ids, rank_sensitivity=rank_sensitivity, allocation=allocation, path=path)
    # Both sides are exact rational numbers computed in float64; they agree to rounding.
    assert res.roc_auc == pytest.approx(roc_auc_score(y, s), rel=0, abs=1e-12)
    assert res.roc_auc_se == 0.0
    assert res.guarantee.unit == "none" and not res.guarantee.is_private
    assert math.isinf(res.guarantee.epsilon)
    assert res.epsilon_spent == 0.0 and res.receipt.entries == ()
    assert res.released_n_pos == y.sum()
    assert res.client_beta is None


def test_no_noise_is_the_correctly_rounded_exact_auc():
    # Mann-Whitney by pair counting in exact rationals (ties 1/2); eq. (1) on mid-ranks
    # is computed from exact half-integer sums and one division, so it matches bit for bit.
    from fractions import Fraction

    for seed in range(5):
        s, y, ids = _data(seed, m=150)
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


@pytest.mark.parametrize(("noise", "rank_sensitivity", "allocation"), COMBOS[1:])
@pytest.mark.parametrize("path", ["fast", "faithful"])
def test_release_pipeline_converges_as_noise_vanishes(noise, rank_sensitivity, allocation, path):
    # Exercises the orthogonal decomposition r = mean*1 + v' and its reassembly.
    s, y, ids = _data(3, m=600)
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
    np.testing.assert_allclose(released.local_sum, exact.local_sum, rtol=0, atol=tol)
    np.testing.assert_allclose(released.local_pos, exact.local_pos, rtol=0, atol=tol)
    auc = fv.auc_from_rank_sum(released.local_sum.sum(), released.local_pos.sum(), s.size)
    assert auc == pytest.approx(roc_auc_score(y, s), abs=1e-5)


def test_rr_with_negligible_flip_probability_is_exact():
    s, y, ids = _data(4)
    res = fv.auc(s, y, ids, fe.LabelDP(60.0, noise="rr"), rng=0)  # ρ ≈ 1e-26
    assert res.roc_auc == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    assert res.released_n_pos == pytest.approx(y.sum(), abs=1e-9)


# --- RR debiasing algebra --------------------------------------------------------------


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 3.0])
def test_algorithm3_equals_centred_ratio_form(epsilon):
    # The identity the delta-method derivation rests on (module docstring).
    s, y, _ = _data(5, m=1000)
    m = s.size
    r = fv.mid_ranks(s)
    rho = flip_probability(epsilon)
    flipped = flip_labels(y, rho, rng=1)
    p_bar = float(flipped.sum())
    noisy = fv.auc_from_rank_sum(r @ flipped, p_bar, m)
    p_est = (p_bar * (1 - rho) - (m - p_bar) * rho) / (1 - 2 * rho)
    c = r - (m - 1) / 2
    ratio_form = 0.5 + (c @ flipped) / ((1 - 2 * rho) * p_est * (m - p_est))
    assert fv.debias_auc(noisy, p_bar, m, epsilon=epsilon) == pytest.approx(ratio_form, abs=1e-13)


@pytest.mark.parametrize("allocation", ["fixed", "orthogonal", "adaptive"])
@pytest.mark.parametrize("epsilon", [0.5, 1.0, 3.0])
def test_pipeline_linear_debiasing_equals_algorithm3(epsilon, allocation):
    # The release debiases the rank sums linearly (values = (noisy - ρ·ones)/(1 - 2ρ));
    # undoing that recovers the flipped-label sums, and Algorithm 3 on them gives the same
    # AUC as eq. (1) on the debiased sums (randomized_response module docstring). With RR
    # the allocation only chooses the encoding.
    s, y, ids = _data(5, m=1000)
    m = s.size
    rho = flip_probability(epsilon)
    proto = fv.rank_protocol(s, ids)
    sketch = proto.sketch(allocation=allocation)
    rel = release_rank_sums(proto, y, fe.LabelDP(epsilon, noise="rr"), sketch, rng=2)
    k = proto.n_clients
    ones = sketch.encode(proto.ranks, np.ones(m, np.int64), proto.client_index.astype(np.int64))
    noisy = rel.values * (1 - 2 * rho) + rho * ones  # the sums over the flipped labels
    p_bar = noisy[:k].sum()
    s_bar = (proto.mean_rank @ noisy[:k] if sketch.centred else 0.0) + noisy[k:].sum()
    assert p_bar == pytest.approx(round(p_bar), abs=1e-8)  # an integer count of flipped 1s
    alg3 = fv.debias_auc(fv.auc_from_rank_sum(s_bar, p_bar, m), p_bar, m, epsilon=epsilon)
    sums = rel.decode()
    linear = fv.auc_from_rank_sum(sums.local_sum.sum(), sums.local_pos.sum(), m)
    assert linear == pytest.approx(alg3, abs=1e-12)
    res = fv.auc(s, y, ids, fe.LabelDP(epsilon, noise="rr"), allocation=allocation, rng=2)
    assert res.roc_auc == pytest.approx(alg3, abs=1e-12)


def test_debias_is_identity_in_expectation_form():
    # Eq. (3) inverts AUC_noisy = (1-α-β)A + (α+β)/2 at the true base rate.
    m, p, a_true, eps = 10_000, 2_500, 0.8, 1.0
    rho = flip_probability(eps)
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
    rho = flip_probability(2.0)
    eq7 = fv.rr_variance_eq7(p, m - p, epsilon=2.0)
    assert eq7 == pytest.approx(rho * (1 - rho) * (r @ r) / (p * (m - p)) ** 2, rel=1e-12)
    mine = fv.rr_variance_delta(r, n_pos=p, auc=0.5, epsilon=2.0)
    # At A = 1/2 only the centred rank sum of squares M(M²-1)/12 remains.
    expect = rho * (1 - rho) / (1 - 2 * rho) ** 2 * m * (m * m - 1) / 12 / (p * (m - p)) ** 2
    assert mine == pytest.approx(expect, rel=1e-12)
    assert fv.rr_bias_second_order(m, p, auc=0.5, epsilon=2.0) == 0.0


@pytest.mark.parametrize("allocation", ["fixed", "orthogonal", "adaptive"])
@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_release_variance_for_rr_equals_rr_variance_delta(epsilon, allocation):
    # The release carries the exact covariance of the debiased sums; the delta method on it
    # is rr_variance_delta whatever the encoding (centred or not), ties and clients included.
    s, y, ids = _data(6, m=500)
    proto = fv.rank_protocol(s, ids)
    sketch = proto.sketch(allocation=allocation)
    rel = release_rank_sums(proto, y, fe.LabelDP(epsilon, noise="rr"), sketch, rng=0)
    assert rel.covariance is not None
    p, a = float(y.sum()), float(roc_auc_score(y, s))
    mine = fv.auc_variance(rel, auc=a, n_pos=p)
    assert mine == pytest.approx(
        fv.rr_variance_delta(proto.ranks, n_pos=p, auc=a, epsilon=epsilon), rel=1e-10
    )


# --- Laplace / Gaussian noise calibration ---------------------------------------------


def test_adaptive_beta_minimises_the_local_sum_variance():
    a = np.array([5.0, 100.0, 1000.0, 3.0, 7.0])
    b = np.array([50.0, 100.0, 10.0, 0.0, 7.0])
    grid = np.linspace(1e-4, 1 - 1e-4, 200_001)
    beta = fv.adaptive_beta(a, b)
    beta_g = fv.adaptive_beta(a, b, l2=True)  # the Gaussian rule (split of 1/σ²)
    for k in range(a.size):
        if b[k] == 0:
            assert beta[k] == 1.0 and beta_g[k] == 1.0
            continue
        lap = a[k] ** 2 / grid**2 + b[k] ** 2 / (1 - grid) ** 2
        gau = a[k] ** 2 / grid + b[k] ** 2 / (1 - grid)
        assert beta[k] == pytest.approx(grid[np.argmin(lap)], abs=2e-5)
        assert beta_g[k] == pytest.approx(grid[np.argmin(gau)], abs=2e-5)


def test_laplace_scales_spend_exactly_epsilon():
    s, y, ids = _data(6)
    proto = fv.rank_protocol(s, ids)
    eps, alpha, beta = 1.5, 0.3, 0.6
    model = fe.LabelDP(eps)
    sketch, mech, b_pos, b_sum = _mechanism(proto, model, alpha=alpha)
    assert mech.noise.kind == "laplace"
    np.testing.assert_allclose(b_sum, proto.max_rank / (alpha * eps))
    np.testing.assert_allclose(b_pos, 1 / ((1 - alpha) * eps))
    # ε spent = Δ_sum/b_sum + Δ_pos/b_pos for every client (where Δ_sum = max rank > 0).
    has_rank = proto.max_rank > 0
    np.testing.assert_allclose(
        proto.max_rank[has_rank] / b_sum[has_rank] + 1 / b_pos[has_rank], eps
    )
    assert mech.receipt.epsilon_spent == pytest.approx(eps)
    assert [e.epsilon for e in mech.ledger_entries] == pytest.approx(
        [(1 - alpha) * eps, alpha * eps]
    )
    _, _, _, b_glob = _mechanism(proto, model, alpha=alpha, rank_sensitivity="global")
    np.testing.assert_allclose(b_glob, (s.size - 1) / (alpha * eps))
    for allocation in ("orthogonal", "adaptive"):
        sketch, mech, b_pos, b_sum = _mechanism(proto, model, allocation=allocation, beta=beta)
        assert sketch.centred  # localSum'_k = r̄_k·localP'_k + ⟨v'_k, y⟩'
        np.testing.assert_allclose(sketch.mean_rank, proto.mean_rank)
        has_v = proto.spread > 0
        assert np.all(b_sum[~has_v] == 0)  # ⟨v'_k, y⟩ = 0 for every labelling: nothing to hide
        spent = 1 / b_pos + np.where(has_v, proto.spread / np.where(has_v, b_sum, 1), 0)
        np.testing.assert_allclose(spent[has_v], eps)
        assert np.all(spent <= eps * (1 + 1e-12))
        # The share of ε on localP_k is the declared β (orthogonal) or the §5.3 rule.
        expect = (
            np.full(proto.n_clients, beta)
            if allocation == "orthogonal"
            else fv.adaptive_beta(proto.mean_rank, proto.spread)
        )
        np.testing.assert_allclose((1 / b_pos / eps)[has_v], expect[has_v], rtol=1e-12)
        # The ledger is charged exactly ε (one entry per common budget share).
        assert mech.receipt.epsilon_spent == pytest.approx(eps)
    res = fv.auc(s, y, ids, model, allocation="orthogonal", beta=beta, rng=0)
    assert res.beta == beta and res.alpha is None
    np.testing.assert_array_equal(res.client_beta, np.full(res.n_clients, beta))


def test_gaussian_noise_is_jointly_calibrated():
    s, _, ids = _data(7)
    proto = fv.rank_protocol(s, ids)
    eps, delta = 1.0, 1e-6
    model = fe.LabelDP(eps, noise="gaussian", delta=delta)
    unit = Gaussian.calibrate(eps, delta).noise_multiplier
    for allocation in ("fixed", "orthogonal", "adaptive"):
        sketch, mech, s_pos, s_sum = _mechanism(proto, model, allocation=allocation)
        assert mech.noise.kind == "gaussian"
        sens = proto.max_rank if allocation == "fixed" else proto.spread
        with np.errstate(divide="ignore", invalid="ignore"):
            term = np.where(s_sum > 0, (sens / s_sum) ** 2, 0.0)
        assert np.all(sens[s_sum == 0] == 0)
        joint = np.sqrt(term + 1 / s_pos**2)
        # Equality: the whole 1/σ² budget is used by every party with a non-trivial sum.
        assert np.all(joint <= 1 / unit * (1 + 1e-12))
        np.testing.assert_allclose(joint[sens > 0], 1 / unit, rtol=1e-12)
        # The pair is then (ε, δ)-DP by the analytic Gaussian mechanism at σ/Δ2 = unit.
        assert Gaussian(unit).delta_for_epsilon(eps) <= delta * (1 + 1e-9)
        assert mech.guarantee.delta == delta and mech.guarantee.epsilon == eps
        assert mech.receipt.epsilon_spent == pytest.approx(eps)


@pytest.mark.parametrize("allocation", ["orthogonal", "adaptive"])
def test_client_beta_is_the_split_the_noise_used(allocation):
    # Laplace splits ε, the Gaussian splits 1/σ²: client_beta must follow the noise that
    # was drawn (the adaptive rules differ, adaptive_beta(l2=...)), read from the release.
    s, y, ids = _data(8)
    proto = fv.rank_protocol(s, ids)
    beta = 0.3
    lap = fv.auc(s, y, ids, fe.LabelDP(1.0), allocation=allocation, beta=beta, rng=0)
    gau = fv.auc(s, y, ids, GAUSSIAN, allocation=allocation, beta=beta, rng=0)
    if allocation == "orthogonal":
        np.testing.assert_array_equal(lap.client_beta, np.full(proto.n_clients, beta))
        np.testing.assert_array_equal(gau.client_beta, np.full(proto.n_clients, beta))
    else:
        np.testing.assert_allclose(lap.client_beta, fv.adaptive_beta(proto.mean_rank, proto.spread))
        expect = fv.adaptive_beta(proto.mean_rank, proto.spread, l2=True)
        np.testing.assert_allclose(gau.client_beta, expect)
        # The two rules agree only where r̄_k = ‖v'_k‖∞; here they visibly differ.
        assert np.abs(gau.client_beta - lap.client_beta).max() > 0.02
    # And the shares are those of the drawn noise: 1/σ_pos² is β_k times the total 1/σ².
    _, _, s_pos, _ = _mechanism(proto, GAUSSIAN, allocation=allocation, beta=beta)
    unit = Gaussian.calibrate(1.0, 1e-6).noise_multiplier
    np.testing.assert_allclose(gau.client_beta, unit**2 / s_pos**2, rtol=1e-9)
    assert fv.auc(s, y, ids, RR, allocation=allocation, rng=0).client_beta is None
    assert fv.auc(s, y, ids, LAPLACE, rng=0).client_beta is None  # fixed: α, not β_k


def test_variance_delta_reduces_to_eq8_and_eq9_one_example_per_client():
    m, p, eps, alpha = 500, 150, 2.0, 0.5
    rng = np.random.default_rng(8)
    s = rng.permutation(m).astype(float)  # distinct scores: ranks 0..M-1
    y = np.zeros(m, dtype=np.int64)
    y[rng.choice(m, p, replace=False)] = 1
    proto = fv.rank_protocol(s, np.arange(m))
    for sens, formula in (
        ("global", fv.global_laplace_variance_eq8(m, p, n_clients=m, epsilon_sum=alpha * eps)),
        ("local", fv.local_laplace_variance_eq9(m, p, epsilon_sum=alpha * eps)),
    ):
        sketch = proto.sketch(alpha=alpha, rank_sensitivity=sens)
        rel = release_rank_sums(proto, y, fe.LabelDP(eps), sketch, rng=0)
        v = fv.auc_variance(rel, auc=0.7, n_pos=p, counts_exact=True)
        assert v == pytest.approx(formula, rel=1e-12)
    ratio = fv.global_laplace_variance_eq8(
        m, p, n_clients=m, epsilon_sum=1.0
    ) / fv.local_laplace_variance_eq9(m, p, epsilon_sum=1.0)
    assert ratio == pytest.approx(6 * (m - 1) / (2 * m - 1), rel=1e-12)


def test_auc_variance_matches_the_independent_noise_sum():
    # Var(AUC) ≈ Σ_k [(a_k − g)² V_P,k + V_X,k]/(PN)² (module docstring), by hand.
    s, y, ids = _data(9)
    proto = fv.rank_protocol(s, ids)
    m, p, a = s.size, float(y.sum()), 0.7
    g = (m - 1) / 2 + (a - 0.5) * (m - 2 * p)
    for allocation in ("fixed", "adaptive"):
        sketch = proto.sketch(allocation=allocation)
        rel = release_rank_sums(proto, y, LAPLACE, sketch, rng=0)
        k = proto.n_clients
        w = proto.mean_rank if sketch.centred else np.zeros(k)
        by_hand = ((w - g) ** 2 @ rel.variance[:k] + rel.variance[k:].sum()) / (p * (m - p)) ** 2
        assert fv.auc_variance(rel, auc=a, n_pos=p) == pytest.approx(by_hand, rel=1e-12)
    with pytest.raises(ValueError, match="n_pos"):
        fv.auc_variance(rel, auc=a, n_pos=0)


# --- results, reproducibility, simulation ------------------------------------------------


def test_result_fields_and_guarantee():
    s, y, ids = _data(9)
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


@pytest.mark.parametrize(("noise", "rank_sensitivity", "allocation"), COMBOS)
@pytest.mark.parametrize("path", ["fast", "faithful"])
def test_same_seed_same_estimate(noise, rank_sensitivity, allocation, path):
    s, y, ids = _data(10)
    kw = {"rank_sensitivity": rank_sensitivity, "allocation": allocation, "path": path}
    model = _model(noise)
    a = fv.auc(s, y, ids, model, rng=5, **kw).roc_auc
    assert fv.auc(s, y, ids, model, rng=5, **kw).roc_auc == a
    assert fv.auc(s, y, ids, model, rng=6, **kw).roc_auc != a


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
    res = fv.simulate(s, y, n_clients=7, n_reps=5, rng=0)
    assert res.empirical_se == 0.0 and res.mean == pytest.approx(exact, abs=1e-12)
    assert res.predicted_se == 0.0 and not res.receipt.guarantee.is_private
    res = fv.simulate(s, y, n_clients=300, epsilon=1.0, n_reps=50, rng=0, allocation="adaptive")
    assert res.estimates.shape == (50,) and res.n_invalid == 0
    assert res.true_auc == pytest.approx(exact, abs=1e-12)
    assert res.empirical_se > 0 and res.predicted_se > 0
    assert res.allocation == "adaptive" and res.alpha is None
    assert res.receipt.epsilon_spent == 1.0 and res.receipt.guarantee.unit == "label"
    res = fv.simulate(s, y, n_clients=1, privacy=fe.LabelDP(1.0, noise="rr"), n_reps=10, rng=0)
    assert res.estimates.shape == (10,) and res.empirical_se > 0
    assert res.receipt.epsilon_spent == 1.0
    # Same seed, same repetitions.
    again = fv.simulate(s, y, n_clients=1, privacy=fe.LabelDP(1.0, noise="rr"), n_reps=10, rng=0)
    np.testing.assert_array_equal(again.estimates, res.estimates)


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
