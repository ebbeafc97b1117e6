"""fedeval.vertical.simulate and client assignment."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit
from sklearn.metrics import roc_auc_score

import fedeval as fe
import fedeval.vertical as fv

# --- simulation ------------------------------------------------------------------------


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
