"""fedeval.vertical.auc against scikit-learn's roc_auc_score."""

from __future__ import annotations

import math

import pytest
from sklearn.metrics import roc_auc_score

import fedeval.vertical as fv
from helpers import VERTICAL_COMBOS, vertical_data

# --- no noise: every encoding equals sklearn ---------------------------------------------


@pytest.mark.parametrize(
    ("rank_sensitivity", "allocation"),
    sorted({(sens, alloc) for _, sens, alloc in VERTICAL_COMBOS}),
)
@pytest.mark.parametrize("path", ["fast", "faithful"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_no_noise_equals_sklearn_with_ties(rank_sensitivity, allocation, path, seed):
    # Without a privacy model the exact protocol runs (secure aggregation, no DP); every
    # encoding (plain or centred rank sums) decodes to the exact AUC on either path.
    s, y, ids = vertical_data(seed)
    res = fv.auc(s, y, ids, rank_sensitivity=rank_sensitivity, allocation=allocation, path=path)
    # Both sides are exact rational numbers computed in float64; they agree to rounding.
    assert res.roc_auc == pytest.approx(roc_auc_score(y, s), rel=0, abs=1e-12)
    assert res.roc_auc_se == 0.0
    assert res.guarantee.unit == "none" and not res.guarantee.is_private
    assert math.isinf(res.guarantee.epsilon)
    assert res.epsilon_spent == 0.0 and res.receipt.entries == ()
    assert res.released_n_pos == y.sum()
    assert res.client_beta is None
