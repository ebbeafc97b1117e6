"""DP ROC curves from two private ECDFs against scikit-learn's roc_curve and roc_auc_score."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import auc, roc_auc_score, roc_curve

from fedeval.ecdf import dp_roc_curve, roc_l1_distance
from helpers import normal_scores


def test_large_epsilon_matches_sklearn_on_the_grid() -> None:
    scores, y = normal_scores()
    grid = np.unique(scores)  # every score is a grid point: no bucketisation error
    curve = dp_roc_curve(scores, y, grid, epsilon=1e9, rng=0, smoothing=None)
    fpr, tpr, thresholds = roc_curve(y, scores, drop_intermediate=False)
    assert auc(curve.fpr, curve.tpr) == pytest.approx(roc_auc_score(y, scores), abs=1e-6)
    # Same vertices in the same order (the noise at ε = 1e9 is ~1e-9 per rate), and the
    # same thresholds: inf, then the grid from the top down (rule score >= t).
    np.testing.assert_allclose(curve.fpr, fpr, atol=1e-6)
    np.testing.assert_allclose(curve.tpr, tpr, atol=1e-6)
    np.testing.assert_array_equal(curve.thresholds, thresholds)
    assert roc_l1_distance(fpr, tpr, np.round(curve.fpr, 6), np.round(curve.tpr, 6)) < 1e-5
