"""Binary calibration metrics read from a released hierarchy (metrics/binned_calibration.py).

Under secure aggregation the released leaves are exact, so the only error is
reading each example's score at its leaf's midpoint m (leaf width w):

* Brier: each example's loss moves by |s − m|·|s + m − 2y| ≤ (w/2)·2 = w;
* log loss: by at most its leaf's largest |log s − log m| (the reported bound);
* reliability curve with bins that are unions of leaves: exact observed
  frequencies, mean predictions within w/2;
* ECE and reliability with bins that are not unions of leaves: the examples of
  the leaves that straddle a bin edge may change bins; each moves one bin's
  gap by at most 1, hence tolerances 2k/n from the k examples in such leaves.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss, log_loss

import fedeval as fe
from fedeval.metrics.binned_calibration import (
    binned_brier_score,
    binned_calibration_error,
    binned_log_loss,
    binned_reliability_curve,
)
from fedeval.metrics.calibration_error import expected_calibration_error

HEIGHT = 10
WIDTH = 2.0**-HEIGHT


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    """6,000 examples, scores in (0.02, 0.98), labels drawn miscalibrated (y ~ s^1.3)."""
    rng = np.random.default_rng(21)
    s = np.clip(rng.beta(2.0, 3.0, 6000), 0.02, 0.98)
    y = (rng.random(s.size) < s**1.3).astype(np.int64)
    return s, y


@pytest.fixture(scope="module")
def sa(data: tuple[np.ndarray, np.ndarray]) -> fe.Evaluation:
    s, y = data
    ev = fe.evaluate(fe.Federation.from_arrays(s, y), fe.SecureAggregation(), height=HEIGHT)
    assert isinstance(ev, fe.Evaluation)
    return ev


def _straddlers(s: np.ndarray, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Per bin (sklearn's), its examples and those that the leaf midpoints move into or out of it."""
    inner = np.linspace(0.0, 1.0, n_bins + 1)[1:-1]
    mids = (np.minimum(np.floor(s / WIDTH), 2**HEIGHT - 1) + 0.5) * WIDTH
    true_bin = np.searchsorted(inner, s, side="left")
    read_bin = np.searchsorted(inner, mids, side="left")
    moved = true_bin != read_bin
    k = np.bincount(true_bin[moved], minlength=n_bins) + np.bincount(
        read_bin[moved], minlength=n_bins
    )
    return np.bincount(true_bin, minlength=n_bins), k


def test_brier_within_the_leaf_width_of_sklearn(data, sa) -> None:
    s, y = data
    got = binned_brier_score(sa)
    assert got.binning_bound == WIDTH and got.privacy_se == 0.0
    assert abs(got.estimate - brier_score_loss(y, s)) <= WIDTH
    assert sa.brier == sa.brier_score() == got.estimate


def test_log_loss_within_its_reported_bound_of_sklearn(data, sa) -> None:
    s, y = data
    got = binned_log_loss(sa)
    exact = log_loss(y, s)
    assert abs(got.estimate - exact) <= got.binning_bound
    # Scores at least 0.02 from 0 and 1: the bound is about w/(2·0.02) at worst, far below.
    assert got.binning_bound <= WIDTH / (2 * 0.02)
    assert sa.log_loss == got.estimate and sa.log_loss_se == 0.0


@pytest.mark.parametrize("n_bins", [4, 8, 16])
def test_reliability_curve_with_bins_of_whole_leaves_matches_sklearn(data, sa, n_bins) -> None:
    s, y = data
    true, pred = binned_reliability_curve(sa, n_bins=n_bins)
    ref_true, ref_pred = calibration_curve(y, s, n_bins=n_bins)
    np.testing.assert_allclose(true, ref_true, atol=1e-12)
    np.testing.assert_allclose(pred, ref_pred, atol=WIDTH / 2)
    assert np.array_equal(sa.reliability_curve(n_bins)[0], true)


def test_reliability_curve_and_ece_with_bins_across_leaves(data, sa) -> None:
    s, y = data
    n, k = _straddlers(s, 10)
    assert 0 < k.sum() < 0.01 * s.size  # some leaves straddle an edge, few examples move
    true, pred = sa.reliability_curve(10)
    ref_true, ref_pred = calibration_curve(y, s, n_bins=10)
    # A bin of n_j examples that gains or loses k_j moves its frequency by at most k_j/(n_j − k_j).
    tol = (k / (n - k))[n > 0]
    assert np.all(np.abs(true - ref_true) <= tol + 1e-12)
    assert np.all(np.abs(pred - ref_pred) <= tol + WIDTH / 2)
    exact = expected_calibration_error(s, y, n_bins=10)
    moved = k.sum() / 2  # each moved example counted in its two bins
    assert abs(sa.expected_calibration_error(n_bins=10) - exact) <= WIDTH / 2 + 2 * moved / s.size


def test_ece_default_bins_are_the_level_of_16_nodes(data, sa) -> None:
    s, y = data
    by_level = binned_calibration_error(sa)
    assert by_level.n_bins == 16
    assert binned_calibration_error(sa, n_bins=16) == by_level  # bins of whole leaves: same
    assert sa.ece == by_level.estimate and sa.ece_se == by_level.se
    assert abs(sa.ece - expected_calibration_error(s, y, n_bins=16)) <= WIDTH / 2
    with pytest.raises(ValueError, match="not both"):
        binned_calibration_error(sa, level=4, n_bins=16)


def test_under_dp_metrics_stay_in_range_with_standard_errors(data) -> None:
    s, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ev = fe.evaluate(fe.Federation.from_arrays(s, y), fe.DistributedDP(epsilon=1.0), rng=2)
    assert 0.0 <= ev.brier <= 1.0 and ev.brier_se > 0
    assert ev.log_loss >= 0.0 and ev.log_loss_se > 0
    assert 0.0 <= ev.ece <= 1.0 and ev.ece_se > 0
    true, pred = ev.reliability_curve(5)
    assert true.shape == pred.shape and np.all((true >= 0) & (true <= 1))
    assert np.all(np.diff(pred) > 0)  # each clipped into its own bin
    # 1 of ε over thousands of examples: near the exact values (SE-scaled tolerance).
    assert abs(ev.brier - brier_score_loss(y, s)) <= 6 * ev.brier_se + ev.brier_binning_bound


def test_scores_that_are_not_probabilities_are_refused() -> None:
    rng = np.random.default_rng(0)
    y = np.tile([0, 1], 200)
    s = rng.uniform(-3.0, 3.0, y.size)
    ev = fe.evaluate(
        fe.Federation.from_arrays(s, y, score_range=(-3.0, 3.0)), fe.SecureAggregation()
    )
    for call in (
        ev.brier_score,
        lambda: ev.log_loss,
        lambda: ev.expected_calibration_error(n_bins=10),
        lambda: ev.reliability_curve(5),
    ):
        with pytest.raises(ValueError, match=r"score domain must be \(0, 1\)"):
            call()
    assert math.isfinite(ev.roc_auc)  # the ranking metrics are unaffected
