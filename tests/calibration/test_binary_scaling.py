"""Binary temperature and Platt scaling with do no harm (issue 27, item 5).

scikit-learn's default calibration, ``CalibratedClassifierCV(method="sigmoid")``,
is Platt scaling; binary calibration offered only binning and BBQ before.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

import fedeval as fe
from fedeval.calibration import calibrator_from_json
from fedeval.calibration.binary_scaling import BinaryScalingCalibrator
from fedeval.calibration.do_no_harm import IdentityCalibrator


def _sharpened(n: int, seed: int, factor: float = 3.0) -> tuple[np.ndarray, np.ndarray]:
    """Labels ~ Bernoulli(σ(u)); scores σ(factor·u + 0.5): overconfident and shifted."""
    rng = np.random.default_rng(seed)
    u = rng.normal(0.0, 1.5, n)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-u))).astype(int)
    return 1.0 / (1.0 + np.exp(-(factor * u + 0.5))), y


def _nll(p: np.ndarray, y: np.ndarray) -> float:
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log1p(-p)))


def _logit(s: np.ndarray) -> np.ndarray:
    return np.log(s) - np.log1p(-s)


def test_platt_without_noise_matches_logistic_regression_on_the_logit() -> None:
    """Under secure aggregation the fit is the maximum-likelihood logistic regression of
    y on logit(s) (scikit-learn, no penalty), up to the leaf grid: scores enter as their
    leaf's midpoint (1,024 leaves), which moves the fitted slope and intercept by a few
    thousandths here; predictions agree within 0.01."""
    s, y = _sharpened(20_000, 0)
    fed = fe.Federation.from_arrays(s, y)
    cal = fe.calibrate(fed, fe.SecureAggregation(), method="platt", rng=0)
    assert isinstance(cal, BinaryScalingCalibrator)
    ref = LogisticRegression(C=1e8, max_iter=1000).fit(_logit(s)[:, None], y)
    assert cal.slope == pytest.approx(float(ref.coef_[0, 0]), abs=0.02)
    assert cal.intercept == pytest.approx(float(ref.intercept_[0]), abs=0.02)
    grid = np.linspace(0.01, 0.99, 99)
    np.testing.assert_allclose(
        cal.predict_proba(grid), ref.predict_proba(_logit(grid)[:, None])[:, 1], atol=0.01
    )
    # The truth is slope 1/3, intercept -1/6 (scores σ(3u + 0.5) of rate σ(u)).
    assert cal.slope == pytest.approx(1 / 3, abs=0.03)


def test_temperature_recovers_the_sharpening_without_noise() -> None:
    s, y = _sharpened(20_000, 1, factor=2.5)
    # Temperature scaling has no intercept: remove the shift first.
    s = 1.0 / (1.0 + np.exp(-(_logit(s) - 0.5)))
    cal = fe.calibrate(
        fe.Federation.from_arrays(s, y), fe.SecureAggregation(), method="temperature"
    )
    assert isinstance(cal, BinaryScalingCalibrator) and cal.intercept == 0.0
    assert cal.temperature == pytest.approx(2.5, abs=0.15)


PRIVACY = {
    "SA": fe.SecureAggregation(),
    "DistDP eps=1": fe.DistributedDP(1.0),
    "LDP eps=5": fe.LocalDP(5.0),
    "UserLevelDP eps=1": fe.UserLevelDP(1.0, 1e-5, clip=1.0),
}


@pytest.mark.parametrize("method", ["temperature", "platt"])
@pytest.mark.parametrize("name", list(PRIVACY))
def test_every_binary_model_helps_or_declines_visibly(method: str, name: str) -> None:
    """20,000 calibration examples over 200 clients, 10,000 held out: the map is kept
    and lowers the held-out NLL, or is an identity calibrator with its reason."""
    s, y = _sharpened(30_000, 2)
    clients = np.arange(20_000) % 200
    fed = fe.Federation.from_arrays(s[:20_000], y[:20_000], clients=clients)
    s_te, y_te = s[20_000:], y[20_000:]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cal = fe.calibrate(fed, PRIVACY[name], method=method, rng=0)
    if isinstance(cal, IdentityCalibrator):
        assert cal.declined == method and cal.reason
        return
    assert isinstance(cal, BinaryScalingCalibrator) and cal.family == method
    assert _nll(cal.predict_proba(s_te), y_te) < _nll(s_te, y_te)
    est = cal.harm_estimates
    assert -est["nll_change"] > est["threshold"] * est["nll_change_se"]
    p = cal.predict_proba(np.array([0.0, 1.0]))
    assert p[0] >= cal.prob_floor and p[1] <= 1 - cal.prob_floor
    if name != "SA":
        assert 0 < cal.epsilon_spent <= 1.0 + 1e-9 or name.startswith("LDP")


def test_sa_and_distdp_keep_the_map_on_overconfident_scores() -> None:
    s, y = _sharpened(20_000, 3)
    fed = fe.Federation.from_arrays(s, y)
    for privacy in (fe.SecureAggregation(), fe.DistributedDP(1.0)):
        for method in ("temperature", "platt"):
            cal = fe.calibrate(fed, privacy, method=method, rng=0)
            assert isinstance(cal, BinaryScalingCalibrator), (privacy, method)


def test_calibrated_scores_are_declined() -> None:
    """Scores that are already calibrated: a fitted map cannot help on new data, and the
    one-sided test declines it (kept in none of 10 seeds under DistDP ε = 1)."""
    rng = np.random.default_rng(4)
    s = rng.random(5000)
    y = (rng.random(5000) < s).astype(int)
    fed = fe.Federation.from_arrays(s, y)
    kept = 0
    for seed in range(10):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cal = fe.calibrate(fed, fe.DistributedDP(1.0), method="platt", rng=seed)
        kept += not isinstance(cal, IdentityCalibrator)
    assert kept == 0


def test_json_round_trip_and_bad_input() -> None:
    s, y = _sharpened(5000, 5)
    fed = fe.Federation.from_arrays(s, y)
    cal = fe.calibrate(fed, fe.SecureAggregation(), method="platt")
    back = calibrator_from_json(cal.to_json())
    assert isinstance(back, BinaryScalingCalibrator)
    np.testing.assert_array_equal(back.predict_proba(s), cal.predict_proba(s))
    with pytest.raises(ValueError, match="prob_floor"):
        fe.calibrate(fed, fe.SecureAggregation(), method="platt", prob_floor=0.0)
    with pytest.raises(ValueError, match="NaN"):
        cal.predict_proba(np.array([0.2, np.nan]))
    multi = fe.Federation.from_arrays(np.full((10, 3), 1 / 3), np.arange(10) % 3)
    with pytest.raises(ValueError, match="platt"):
        fe.calibrate(multi, fe.SecureAggregation(), method="platt")
