"""FedAUC_RR (fedeval.vertical.randomized_response): debiasing algebra and variances."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

import fedeval as fe
import fedeval.vertical as fv
from fedeval.privacy.mechanisms.randomized_response import flip_labels, flip_probability
from fedeval.vertical.estimate import release_rank_sums
from helpers import vertical_data

RR = fe.LabelDP(1.0, noise="rr")


# --- RR debiasing algebra --------------------------------------------------------------


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 3.0])
def test_algorithm3_equals_centred_ratio_form(epsilon):
    # The identity the delta-method derivation rests on (module docstring).
    s, y, _ = vertical_data(5, m=1000)
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
    s, y, ids = vertical_data(5, m=1000)
    m = s.size
    rho = flip_probability(epsilon)
    proto = fv.rank_protocol(s, ids)
    sketch = proto.sketch(allocation=allocation)
    rel = release_rank_sums(proto, y, fe.LabelDP(epsilon, noise="rr"), sketch, rng=2)
    k = proto.n_clients
    # Sums of flipped labels carry no additive noise, so they are sent exactly (no fixed
    # point): the release encodes with the sketch's exact variant.
    exact = sketch.exact_variant()
    ones = exact.encode(proto.ranks, np.ones(m, np.int64), proto.client_index.astype(np.int64))
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
    s, y, ids = vertical_data(6, m=500)
    proto = fv.rank_protocol(s, ids)
    sketch = proto.sketch(allocation=allocation)
    rel = release_rank_sums(proto, y, fe.LabelDP(epsilon, noise="rr"), sketch, rng=0)
    assert rel.covariance is not None
    p, a = float(y.sum()), float(roc_auc_score(y, s))
    mine = fv.auc_variance(rel, auc=a, n_pos=p)
    assert mine == pytest.approx(
        fv.rr_variance_delta(proto.ranks, n_pos=p, auc=a, epsilon=epsilon), rel=1e-10
    )
