"""Do no harm for binary binning and BBQ (issue 14)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import fedeval as fe
from fedeval.calibration import calibrator_from_json
from fedeval.calibration.do_no_harm import IdentityCalibrator
from fedeval.metrics.calibration_error import calibration_summary


def _breast_cancer() -> fe.Federation:
    """Issue 14's task: breast_cancer scores of a logistic regression over 57 clients."""
    x, y = load_breast_cancer(return_X_y=True)
    x_tr, x_rest, y_tr, y_rest = train_test_split(x, y, train_size=0.4, random_state=0, stratify=y)
    model = make_pipeline(StandardScaler(), LogisticRegression()).fit(x_tr, y_tr)
    s = model.predict_proba(x_rest)[:, 1]
    return fe.Federation.from_arrays(s, y_rest, clients=np.arange(len(y_rest)) % 57)


@pytest.mark.statistical
@pytest.mark.parametrize("method", ["bbq", "binning"])
@pytest.mark.parametrize("seed", range(4))
def test_distdp_heldout_ece_and_nll_are_no_worse_within_their_standard_errors(method, seed):
    # Tolerance: one delta-method standard error of the held-out ECE (calibration_summary).
    # Before do-no-harm, bbq at seed 1 went 0.026 -> 0.130 and binning at seed 4
    # 0.050 -> 0.091 (both beyond one SE).
    fed = _breast_cancer()
    train, test = fe.partition.split_clients(fed, 0.3, rng=seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cal = fe.calibrate(train, fe.DistributedDP(1.0), method=method, rng=seed)
    before = calibration_summary(test.scores, test.labels)
    after = calibration_summary(cal.predict_proba(test.scores), test.labels)
    assert after["ece_top"] <= before["ece_top"] + before["ece_top_se"]
    # And the NLL (one standard error, sd/√n): binning at seed 1 was applied with ECE
    # 0.026 -> 0.017 but NLL 0.078 -> 0.161 before the decline test took the standard
    # error of its NLL change into account (this assertion failed before).
    assert after["nll"] <= before["nll"] + before["nll_se"]
    declined = [w for w in caught if "was not applied" in str(w.message)]
    if isinstance(cal, IdentityCalibrator):
        assert declined and "ECE ≈" in str(declined[0].message)
        assert "change of the NLL" in str(declined[0].message)
        assert cal.reason in str(declined[0].message)
        np.testing.assert_array_equal(cal.predict_proba(test.scores), test.scores)
        assert cal.epsilon_spent == pytest.approx(1.0)  # the release happened and is recorded
    else:
        assert not declined


def test_sa_on_miscalibrated_scores_is_applied():
    rng = np.random.default_rng(0)
    s = rng.random(20_000)
    y = (rng.random(20_000) < s**2).astype(int)
    fed = fe.Federation.from_arrays(s, y)
    for method in ("bbq", "binning"):
        cal = fe.calibrate(fed, fe.SecureAggregation(), method=method, rng=0)
        assert not isinstance(cal, IdentityCalibrator)


def test_identity_round_trips_through_json():
    cal = IdentityCalibrator(declined="bbq", estimates={"ece_before": 0.1})
    back = calibrator_from_json(cal.to_json())
    assert back == cal
    np.testing.assert_array_equal(back.predict_proba(np.array([0.2, 0.7])), [0.2, 0.7])
