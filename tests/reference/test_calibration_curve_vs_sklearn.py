"""Calibration bins and ECE against scikit-learn's calibration_curve."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.calibration import calibration_curve

from fedeval.metrics.calibration_error import calibration_bins, expected_calibration_error


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("on_grid", [False, True])
def test_bins_match_sklearn_calibration_curve(strategy: str, on_grid: bool) -> None:
    rng = np.random.default_rng(7)
    n = 2000
    # on_grid: many predictions exactly on the uniform inner edges k/10
    p = np.round(rng.random(n), 1) if on_grid else rng.random(n)
    y = (rng.random(n) < p).astype(int)
    n_bins = 10
    prob_true, prob_pred = calibration_curve(y, p, n_bins=n_bins, strategy=strategy)
    bins = calibration_bins(p, y, n_bins=n_bins, strategy=strategy)  # type: ignore[arg-type]
    nonempty = bins.counts > 0
    np.testing.assert_allclose(bins.fraction_positive[nonempty], prob_true, rtol=0, atol=1e-12)
    np.testing.assert_allclose(bins.mean_predicted[nonempty], prob_pred, rtol=0, atol=1e-12)
    # ECE from sklearn's per-bin output, weighted by the (matching) bin counts
    weights = bins.counts[nonempty] / n
    ece_ref = float(np.sum(weights * np.abs(prob_true - prob_pred)))
    got = expected_calibration_error(p, y, n_bins=n_bins, strategy=strategy)  # type: ignore[arg-type]
    assert got == pytest.approx(ece_ref, abs=1e-12)
