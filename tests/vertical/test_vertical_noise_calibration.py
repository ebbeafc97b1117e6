"""FedAUC_Lap/Gaussian (fedeval.vertical.laplace): noise calibration and eqs. (8)-(9)."""

from __future__ import annotations

import numpy as np
import pytest

import fedeval as fe
import fedeval.vertical as fv
from fedeval.privacy.mechanism_for import mechanism_for
from fedeval.privacy.mechanisms.discrete_gaussian import DiscreteGaussian
from fedeval.privacy.noise import CentralNoise
from fedeval.vertical.estimate import release_rank_sums
from helpers import vertical_data

LAPLACE = fe.LabelDP(1.0)
GAUSSIAN = fe.LabelDP(1.0, noise="gaussian", delta=1e-6)
RR = fe.LabelDP(1.0, noise="rr")


def _mechanism(proto: fv.RankProtocol, model: fe.LabelDP, **sketch_kw):
    sketch = proto.sketch(**sketch_kw)
    mech = mechanism_for(model, sketch, n_clients=proto.n_clients)
    assert isinstance(mech.noise, CentralNoise)
    # In value units: the sums are sent in fixed point and the noise is in their units.
    scale = (
        np.broadcast_to(np.asarray(mech.noise.scale, dtype=np.float64), (sketch.length,))
        * sketch.resolution
    )
    k = proto.n_clients
    return sketch, mech, scale[:k], scale[k:]  # noise on localP_k, on the (centred) sums


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
    s, y, ids = vertical_data(6)
    proto = fv.rank_protocol(s, ids)
    eps, alpha, beta = 1.5, 0.3, 0.6
    model = fe.LabelDP(eps)
    sketch, mech, b_pos, b_sum = _mechanism(proto, model, alpha=alpha)
    assert mech.noise.kind == "discrete_laplace"
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
        # The centred coefficients are rounded: the bound is ‖v'_k‖∞ + γ/2 (sum_bound).
        bound = sketch.sum_bound
        spent = 1 / b_pos + np.where(has_v, bound / np.where(has_v, b_sum, 1), 0)
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
    s, _, ids = vertical_data(7)
    proto = fv.rank_protocol(s, ids)
    eps, delta = 1.0, 1e-6
    model = fe.LabelDP(eps, noise="gaussian", delta=delta)
    unit = DiscreteGaussian.calibrate(eps, delta).sigma
    for allocation in ("fixed", "orthogonal", "adaptive"):
        sketch, mech, s_pos, s_sum = _mechanism(proto, model, allocation=allocation)
        assert mech.noise.kind == "discrete_gaussian"
        sens = sketch.sum_bound
        with np.errstate(divide="ignore", invalid="ignore"):
            term = np.where(s_sum > 0, (sens / s_sum) ** 2, 0.0)
        assert np.all(sens[s_sum == 0] == 0)
        joint = np.sqrt(term + 1 / s_pos**2)
        # Equality: the whole 1/σ² budget is used by every party with a non-trivial sum.
        assert np.all(joint <= 1 / unit * (1 + 1e-12))
        np.testing.assert_allclose(joint[sens > 0], 1 / unit, rtol=1e-12)
        # The pair is then ρ-zCDP with ρ = 1/(2·unit²), which converts to (ε, δ) (CKS Cor. 13).
        assert DiscreteGaussian(unit, delta=delta).guarantee().epsilon <= eps * (1 + 1e-9)
        assert mech.guarantee.delta == delta and mech.guarantee.epsilon == eps
        assert mech.receipt.epsilon_spent == pytest.approx(eps)


@pytest.mark.parametrize("allocation", ["orthogonal", "adaptive"])
def test_client_beta_is_the_split_the_noise_used(allocation):
    # Laplace splits ε, the Gaussian splits 1/σ²: client_beta must follow the noise that
    # was drawn (the adaptive rules differ, adaptive_beta(l2=...)), read from the release.
    s, y, ids = vertical_data(8)
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
    unit = DiscreteGaussian.calibrate(1.0, 1e-6).sigma
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
    s, y, ids = vertical_data(9)
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
