"""Federated BBQ (Naeini et al. 2015; Cormode–Markov §7.3)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import gammaln

from fedeval.calibration.base import calibrator_from_json
from fedeval.calibration.bbq import BBQCalibrator, bbq, bbq_candidate_bins, bbq_log_score
from fedeval.data import Federation
from fedeval.privacy.ledger import BudgetLedger
from fedeval.privacy.models import DistributedDP, LocalDP, SecureAggregation


def _data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    s = rng.beta(2.0, 2.0, n)
    y = (rng.random(n) < 1 / (1 + np.exp(-8 * (s - 0.6)))).astype(np.int64)
    return s, y


def _centralized_bbq(
    bucketings: list[np.ndarray], s: np.ndarray, y: np.ndarray, query: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """BBQ written out directly from raw scores on given bucketings (domain [0, 1]).

    Per bucket: Beta(α, β) prior, α = (2/B)·mid, β = (2/B)·(1 − mid), evidence
    Γ(2/B)/Γ(N+2/B) · Γ(m+α)/Γ(α) · Γ(n+β)/Γ(β); uniform model prior; prediction
    = Σ_M w_M · (m+α)/(N+2/B) of the query's bucket.
    """
    logs, preds = [], []
    for edges in bucketings:
        b = edges.size - 1
        idx = np.searchsorted(edges[1:-1], s, side="right")
        m = np.bincount(idx, weights=y, minlength=b)
        tot = np.bincount(idx, minlength=b).astype(float)
        n = tot - m
        mid = (edges[:-1] + edges[1:]) / 2
        a0 = 2.0 / b
        alpha, beta = a0 * mid, a0 * (1 - mid)
        logs.append(
            sum(
                math.lgamma(a0)
                - math.lgamma(tot[k] + a0)
                + math.lgamma(m[k] + alpha[k])
                - math.lgamma(alpha[k])
                + math.lgamma(n[k] + beta[k])
                - math.lgamma(beta[k])
                for k in range(b)
            )
        )
        rate = (m + alpha) / (tot + a0)
        preds.append(rate[np.searchsorted(edges[1:-1], query, side="right")])
    log_arr = np.array(logs)
    w = np.exp(log_arr - log_arr.max())
    w /= w.sum()
    return log_arr, w, np.tensordot(w, np.array(preds), axes=1)


def test_log_score_worked_example() -> None:
    # One bucket, one positive, prior Beta(1, 1) (N' = 2, B = 1, midpoint 1/2):
    # evidence = P(y = 1) = 1/2; posterior mean (1 + 1)/(1 + 2) = 2/3 (Laplace's rule).
    log_score, rate = bbq_log_score([1.0], [0.0], [0.5])
    assert log_score == pytest.approx(-math.log(2.0))
    assert rate[0] == pytest.approx(2 / 3)
    # Two buckets, counts (m, n) = (3, 1) and (0, 2), midpoints .25 and .75: α = p, β = 1 − p.
    ls, _ = bbq_log_score([3.0, 0.0], [1.0, 2.0], [0.25, 0.75])
    ref = (
        gammaln(1.0) - gammaln(5.0) + gammaln(3.25) - gammaln(0.25) + gammaln(1.75) - gammaln(0.75)
    ) + (
        gammaln(1.0) - gammaln(3.0) + gammaln(0.75) - gammaln(0.75) + gammaln(2.25) - gammaln(0.25)
    )
    assert ls == pytest.approx(ref)


def test_candidate_bins_range() -> None:
    c = bbq_candidate_bins(1e6, n_candidates=20)
    assert c[0] == 10 and c[-1] == 1000 and len(c) == 20
    assert c == sorted(set(c))
    assert bbq_candidate_bins(1000, n_candidates=200) == list(range(1, 101))
    assert max(bbq_candidate_bins(1e9, max_bins=256)) == 256


def test_noiseless_one_client_equals_centralized_bbq() -> None:
    s, y = _data(30_000, 0)
    fed = Federation.from_arrays(s, y, clients=np.zeros(s.size, dtype=int))
    cands = [3, 5, 8, 13, 21, 34]
    cal = bbq(fed, SecureAggregation(), candidate_bins=cands, height=9, rng=0)
    assert cal.n_bins == cands
    query = np.linspace(0, 1, 2001)
    log_ref, w_ref, pred_ref = _centralized_bbq([np.asarray(e) for e in cal.edges], s, y, query)
    np.testing.assert_allclose(cal.log_scores, log_ref, rtol=1e-10)
    np.testing.assert_allclose(cal.weights, w_ref, rtol=1e-9, atol=1e-300)
    np.testing.assert_allclose(cal.predict_proba(query), pred_ref, rtol=1e-10, atol=1e-12)
    # the bucketings are the equi-depth ones of the raw scores, up to one leaf
    for e in cal.edges:
        b = len(e) - 1
        inner = np.quantile(s, np.arange(1, b) / b)
        assert np.max(np.abs(np.asarray(e)[1:-1] - inner)) <= 1.0 / 2**9 + 1e-12


def test_default_candidates_and_weights() -> None:
    s, y = _data(20_000, 1)
    cal = bbq(Federation.from_arrays(s, y), SecureAggregation(), rng=0)
    m3 = 20_000 ** (1 / 3)
    assert min(cal.n_bins) >= math.ceil(m3 / 10) - 1 and max(cal.n_bins) <= math.floor(10 * m3)
    assert cal.weights.sum() == pytest.approx(1.0)
    p = cal.predict_proba(s)
    assert np.all((p >= 0) & (p <= 1))


def test_json_round_trip_gives_identical_predictions() -> None:
    s, y = _data(10_000, 2)
    fed = Federation.from_arrays(s, y)
    for privacy in (SecureAggregation(), DistributedDP(1.0), LocalDP(5.0)):
        cal = bbq(fed, privacy, n_candidates=8, height=8, rng=3, do_no_harm=False)
        back = calibrator_from_json(cal.to_json())
        assert isinstance(back, BBQCalibrator)
        grid = np.linspace(-0.2, 1.2, 777)
        np.testing.assert_array_equal(back.predict_proba(grid), cal.predict_proba(grid))
        # the receipt (guarantee and ledger entries) survives the round trip
        assert back.receipt == cal.receipt
        assert back.privacy_receipt.entries == cal.privacy_receipt.entries
        assert back.guarantee.epsilon == cal.guarantee.epsilon


def test_one_release_is_charged() -> None:
    s, y = _data(5000, 3)
    ledger = BudgetLedger(2.0)
    cal = bbq(Federation.from_arrays(s, y), DistributedDP(1.0), height=6, rng=0, ledger=ledger)
    # the h level entries of ONE hierarchy release, ε/h each, summing to ε
    assert ledger.spent_epsilon == pytest.approx(1.0)
    assert len(cal.privacy_receipt.entries) == len(ledger.entries) == 6
    assert cal.privacy_receipt.entries == tuple(ledger.entries)
    assert cal.guarantee.epsilon == pytest.approx(1.0)
    assert cal.epsilon_spent == pytest.approx(1.0)
    assert any("clamp negative" in step for step in cal.post_processing)


def test_bad_input() -> None:
    s, y = _data(500, 4)
    fed = Federation.from_arrays(s, y)
    with pytest.raises(ValueError, match="candidate_bins"):
        bbq(fed, SecureAggregation(), candidate_bins=[0, 3])
    with pytest.raises(ValueError, match="at least one"):
        bbq(fed, SecureAggregation(), candidate_bins=[])
    with pytest.raises(ValueError, match="prior_strength"):
        bbq(fed, SecureAggregation(), prior_strength=0.0)
    with pytest.raises(ValueError, match=">= 0"):
        bbq_log_score([-1.0], [2.0], [0.5])
    with pytest.raises(ValueError, match="midpoints"):
        bbq_log_score([1.0], [2.0], [1.0])
    cal = bbq(fed, SecureAggregation(), n_candidates=3, height=6)
    with pytest.raises(ValueError, match="NaN"):
        cal.predict_proba([np.nan])
