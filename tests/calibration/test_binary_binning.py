"""Federated histogram binning of binary scores (Cormode–Markov §6)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fedeval.calibration.base import calibrator_from_json
from fedeval.calibration.binning import (
    HistogramBinningCalibrator,
    binning_from_hierarchy,
    default_n_bins,
    histogram_binning,
)
from fedeval.data import Federation
from fedeval.privacy.ledger import BudgetExceededError, BudgetLedger
from fedeval.privacy.models import DistributedDP, LocalDP, SecureAggregation, UserLevelDP
from helpers import release_hierarchy


def _data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    s = rng.beta(2.0, 3.0, n)
    y = (rng.random(n) < s**2).astype(np.int64)
    return s, y


def _direct_binning(edges: np.ndarray, s: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, ...]:
    """Centralized histogram binning on given edges: left-closed buckets, last closed."""
    idx = np.searchsorted(edges[1:-1], s, side="right")
    pos = np.bincount(idx, weights=y, minlength=edges.size - 1)
    tot = np.bincount(idx, minlength=edges.size - 1)
    return pos, tot - pos, pos / tot


def test_noiseless_one_client_equals_centralized_binning() -> None:
    s, y = _data(20_000, 0)
    fed = Federation.from_arrays(s, y, clients=np.zeros(s.size, dtype=int))
    assert fed.n_clients == 1
    cal = histogram_binning(fed, SecureAggregation(), n_bins=25, height=9, rng=0)
    pos, neg, frac = _direct_binning(cal.edges, s, y)
    np.testing.assert_array_equal(cal.positive_counts, pos)
    np.testing.assert_array_equal(cal.negative_counts, neg)
    np.testing.assert_allclose(cal.probabilities, frac, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(cal.probabilities_se, 0.0)
    # the calibrator maps each score to its bucket's fraction
    np.testing.assert_allclose(
        cal.predict_proba(s), frac[np.searchsorted(cal.edges[1:-1], s, side="right")]
    )
    # equi-depth: every bucket holds n/B examples up to one leaf's worth of rounding
    leaf = 1.0 / 2**9
    per_leaf_max = np.bincount((s / leaf).astype(int)).max()
    assert cal.n_bins == 25
    assert np.all(np.abs((pos + neg) - s.size / 25) <= 2 * per_leaf_max)
    # edges are leaf edges and cover the domain
    assert cal.edges[0] == 0.0 and cal.edges[-1] == 1.0
    np.testing.assert_allclose(cal.edges * 2**9, np.rint(cal.edges * 2**9), atol=1e-9)


def test_split_across_clients_does_not_matter_under_sa() -> None:
    s, y = _data(5000, 1)
    one = Federation.from_arrays(s, y, clients=np.zeros(s.size, dtype=int))
    many = Federation.from_arrays(s, y, clients=np.arange(s.size) % 37)
    a = histogram_binning(one, SecureAggregation(), n_bins=10, height=8, rng=0)
    b = histogram_binning(many, SecureAggregation(), n_bins=10, height=8, rng=1)
    np.testing.assert_array_equal(a.edges, b.edges)
    np.testing.assert_array_equal(a.probabilities, b.probabilities)


def test_default_number_of_bins() -> None:
    assert default_n_bins(1e6, SecureAggregation()) == 100
    assert default_n_bins(1e6, DistributedDP(1.0)) == 100
    # LDP rule of Theorem 8: sqrt(eps * sqrt(M))
    assert default_n_bins(1e6, LocalDP(4.0)) == round(math.sqrt(4.0 * 1000.0))
    assert default_n_bins(0, SecureAggregation()) == 1
    s, y = _data(27_000, 2)
    cal = histogram_binning(Federation.from_arrays(s, y), SecureAggregation(), rng=0)
    assert cal.n_bins == 30


def test_json_round_trip_gives_identical_predictions() -> None:
    s, y = _data(10_000, 3)
    fed = Federation.from_arrays(s, y)
    for privacy in (SecureAggregation(), DistributedDP(1.0), LocalDP(4.0)):
        cal = histogram_binning(fed, privacy, rng=5, do_no_harm=False)  # the map is tested
        back = calibrator_from_json(cal.to_json())
        assert isinstance(back, HistogramBinningCalibrator)
        grid = np.linspace(-0.5, 1.5, 1001)
        np.testing.assert_array_equal(back.predict_proba(grid), cal.predict_proba(grid))
        np.testing.assert_array_equal(back.predict_proba(s), cal.predict_proba(s))
        # the receipt (guarantee and ledger entries) survives the round trip
        assert back.receipt == cal.receipt
        assert back.privacy_receipt.entries == cal.privacy_receipt.entries
        assert back.guarantee.epsilon == cal.guarantee.epsilon


def test_privacy_is_recorded_and_charged_once() -> None:
    s, y = _data(5000, 4)
    fed = Federation.from_arrays(s, y)
    ledger = BudgetLedger(1.0)
    cal = histogram_binning(
        fed, DistributedDP(1.0), height=5, rng=0, ledger=ledger, do_no_harm=False
    )
    assert cal.guarantee.epsilon == pytest.approx(1.0)
    assert cal.epsilon_spent == pytest.approx(1.0)
    assert ledger.spent_epsilon == pytest.approx(1.0)
    assert [e.label for e in cal.privacy_receipt.entries] == [e.label for e in ledger.entries]
    assert any("clamp" in step for step in cal.post_processing)
    with pytest.raises(BudgetExceededError):
        histogram_binning(fed, DistributedDP(1.0), height=5, rng=0, ledger=ledger)
    assert ledger.spent_epsilon == pytest.approx(1.0)
    sa = histogram_binning(fed, SecureAggregation(), rng=0)
    # No DP: the one "none" guarantee (ε = inf, unit "none"), nothing charged.
    assert not sa.guarantee.is_private and sa.guarantee.unit == "none"
    assert sa.epsilon_spent == 0.0 and sa.privacy_receipt.entries == ()


def test_probabilities_are_clamped_under_heavy_noise() -> None:
    s, y = _data(2000, 5)
    cal = histogram_binning(
        Federation.from_arrays(s, y), LocalDP(0.5), n_bins=40, rng=0, do_no_harm=False
    )
    assert np.all((cal.probabilities >= 0) & (cal.probabilities <= 1))
    # Not vacuous: some raw ratios of the noisy counts fall outside [0, 1] and are clamped.
    pos, total = cal.positive_counts, cal.positive_counts + cal.negative_counts
    filled = total > 0
    raw = pos[filled] / total[filled]
    assert np.any((raw < 0) | (raw > 1))
    floor = cal.prob_floor  # the clamp to [0, 1], then the public floor
    np.testing.assert_array_equal(cal.probabilities[filled], np.clip(raw, floor, 1.0 - floor))
    assert np.all(np.diff(cal.edges) > 0)


@pytest.mark.statistical
def test_distdp_bin_probability_errors_match_count_variances() -> None:
    """(p̂ − p)/se over buckets and seeds is ~N(0, 1); se from the exact count variances.

    p is the true positive fraction of each released bucket (same edges, raw
    data). se comes from the delta method on the discrete-Laplace count
    variances of the consistent tree. Mean z² over 200 buckets has standard
    deviation ≈ sqrt(2/200) = 0.1 if the variances are right: accept [0.65, 1.35].
    """
    s, y = _data(20_000, 6)
    fed = Federation.from_arrays(s, y)
    z = []
    for seed in range(10):
        cal = histogram_binning(
            fed, DistributedDP(0.3), n_bins=20, height=6, rng=seed, do_no_harm=False
        )
        _, _, frac = _direct_binning(cal.edges, s, y)
        floor = cal.prob_floor
        ok = (cal.probabilities > floor) & (cal.probabilities < 1 - floor)  # not clamped
        z.append(((cal.probabilities - frac) / cal.probabilities_se)[ok])
    zs = np.concatenate(z)
    assert zs.size >= 180
    assert 0.65 < float(np.mean(zs**2)) < 1.35
    assert abs(float(np.mean(zs))) < 0.3
    # the noise is visible (not a vacuous test): se is far above rounding
    assert float(np.median(cal.probabilities_se)) > 1e-3


def test_binning_from_hierarchy_matches_wrapper() -> None:
    s, y = _data(3000, 7)
    fed = Federation.from_arrays(s, y)
    hist = release_hierarchy(fed, SecureAggregation(), height=7)
    a = binning_from_hierarchy(hist, n_bins=8)
    b = histogram_binning(fed, SecureAggregation(), n_bins=8, height=7)
    np.testing.assert_array_equal(a.probabilities, b.probabilities)


def test_bad_input() -> None:
    s, y = _data(500, 8)
    fed = Federation.from_arrays(s, y)
    with pytest.raises(ValueError, match="n_bins"):
        histogram_binning(fed, SecureAggregation(), n_bins=0)
    with pytest.raises(TypeError, match="n_bins"):
        histogram_binning(fed, SecureAggregation(), n_bins=2.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Federation"):
        histogram_binning((s, y), SecureAggregation())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="UserLevelDP"):
        histogram_binning(fed, UserLevelDP(1.0, 1e-5, clip=1.0))
    probs = np.column_stack([1 - s, s])
    multi = Federation.from_arrays(probs, y, kind="probabilities")
    with pytest.raises(ValueError, match="binary"):
        histogram_binning(multi, SecureAggregation())
    cal = histogram_binning(fed, SecureAggregation(), n_bins=4)
    with pytest.raises(ValueError, match="NaN"):
        cal.predict_proba([0.2, np.nan])
    with pytest.raises(ValueError, match="shape"):
        cal.predict_proba(np.ones((3, 2)))
    # labels that are not 0/1 never reach the calibrator
    with pytest.raises(ValueError):
        Federation.from_arrays(s, np.where(y == 1, 2, 0), kind="binary")
