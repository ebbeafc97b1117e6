"""DP ROC curves from two private ECDFs (§5.1 of Barczewski et al. 2025)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score, roc_curve

from fedeval.ecdf import dp_roc_curve, roc_l1_distance
from fedeval.privacy.ledger import BudgetLedger


def _data(n: int = 4000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    scores = np.clip(rng.normal(0.4 + 0.2 * y, 0.15), 0, 1)
    return scores, y


def test_large_epsilon_matches_sklearn_on_the_grid() -> None:
    scores, y = _data()
    grid = np.unique(scores)  # every score is a grid point: no bucketisation error
    curve = dp_roc_curve(scores, y, grid, epsilon=1e9, rng=0, smoothing=None)
    fpr, tpr, _ = roc_curve(y, scores, drop_intermediate=False)
    assert curve.auc() == pytest.approx(roc_auc_score(y, scores), abs=1e-6)
    # Same vertices in the same order (the noise at ε = 1e9 is ~1e-9 per rate).
    np.testing.assert_allclose(curve.fpr, fpr, atol=1e-6)
    np.testing.assert_allclose(curve.tpr, tpr, atol=1e-6)
    assert roc_l1_distance(fpr, tpr, np.round(curve.fpr, 6), np.round(curve.tpr, 6)) < 1e-5


@pytest.mark.parametrize("norm", [1, 2])
def test_smoothed_curve_is_monotone_and_ends_at_the_corners(norm: int) -> None:
    scores, y = _data(20_000, 1)
    grid = np.linspace(0, 1, 128)
    ledger = BudgetLedger(1.0)
    curve = dp_roc_curve(scores, y, grid, epsilon=1.0, rng=2, smoothing=norm, ledger=ledger)  # type: ignore[arg-type]
    assert np.all(np.diff(curve.fpr) >= 0) and np.all(np.diff(curve.tpr) >= 0)
    assert (curve.fpr[0], curve.tpr[0]) == (0.0, 0.0)
    assert (curve.fpr[-1], curve.tpr[-1]) == (1.0, 1.0)
    assert ledger.spent_epsilon == pytest.approx(1.0)
    assert [e.epsilon for e in ledger.entries] == [0.5, 0.5]
    fpr, tpr, _ = roc_curve(y, scores)
    assert roc_l1_distance(fpr, tpr, curve.fpr, curve.tpr) < 0.1


def test_bad_inputs() -> None:
    scores, y = _data(50)
    with pytest.raises(ValueError, match="0 or 1"):
        dp_roc_curve(scores, y + 1, [0.0, 1.0], epsilon=1.0)
    with pytest.raises(ValueError, match="length"):
        dp_roc_curve(scores, y[:-1], [0.0, 1.0], epsilon=1.0)
    with pytest.raises(ValueError, match="epsilon"):
        dp_roc_curve(scores, y, [0.0, 1.0], epsilon=-1.0)
