"""The public calibrate() dispatcher: binary routing, multiclass hand-off, errors."""

from __future__ import annotations

import sys
import types
from typing import Any

import numpy as np
import pytest

from fedeval.calibration.api import METHODS, calibrate
from fedeval.calibration.bbq import BBQCalibrator
from fedeval.calibration.binning import HistogramBinningCalibrator
from fedeval.data import Federation
from fedeval.privacy.models import DistributedDP, SecureAggregation


def _binary_fed(n: int = 4000, seed: int = 0) -> Federation:
    rng = np.random.default_rng(seed)
    s = rng.random(n)
    y = (rng.random(n) < s**2).astype(int)
    return Federation.from_arrays(s, y, clients=np.arange(n) % 50)


def test_binary_methods_route_to_binary_calibrators() -> None:
    fed = _binary_fed()
    cal = calibrate(fed, SecureAggregation(), method="binning", rng=0, n_bins=7)
    assert isinstance(cal, HistogramBinningCalibrator)
    assert cal.n_bins <= 7
    cal2 = calibrate(fed, DistributedDP(1.0), method="bbq", rng=0, n_candidates=5, height=8)
    assert isinstance(cal2, BBQCalibrator)
    # The guarantee and the budget charged travel in the calibrator's receipt.
    assert cal2.guarantee.epsilon == pytest.approx(1.0)
    assert cal2.epsilon_spent == pytest.approx(1.0)
    p = cal2.predict_proba(np.array([0.1, 0.5, 0.9]))
    assert np.all(np.diff(p) > 0)  # s² is increasing; with 4000 examples the map follows


def test_same_rng_same_calibrator() -> None:
    fed = _binary_fed()
    a = calibrate(fed, DistributedDP(0.5), method="binning", rng=3)
    b = calibrate(fed, DistributedDP(0.5), method="binning", rng=3)
    np.testing.assert_array_equal(a.predict_proba(fed.scores), b.predict_proba(fed.scores))
    # Not vacuous: the release is noisy, so another seed gives another calibrator.
    c = calibrate(fed, DistributedDP(0.5), method="binning", rng=4)
    assert not np.array_equal(a.predict_proba(fed.scores), c.predict_proba(fed.scores))


@pytest.mark.parametrize("method", ["vector", "matrix", "op-vector", "fedcal"])
def test_multiclass_scaling_on_binary_scores_is_explained(method: str) -> None:
    with pytest.raises(ValueError, match="binary scores") as info:
        calibrate(_binary_fed(), SecureAggregation(), method=method)  # type: ignore[arg-type]
    for binary in ("binning", "bbq", "temperature", "platt", "auto"):
        assert binary in str(info.value)


def test_unknown_method_and_bad_inputs() -> None:
    fed = _binary_fed()
    with pytest.raises(ValueError, match="unknown calibration method 'sigmoid'"):
        calibrate(fed, SecureAggregation(), method="sigmoid")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Federation"):
        calibrate(np.zeros(3), SecureAggregation(), method="bbq")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n_bins"):
        calibrate(fed, SecureAggregation(), method="binning", n_bins=0)
    with pytest.raises(TypeError):
        calibrate(fed, SecureAggregation(), method="binning", no_such_option=1)
    assert set(METHODS) == {
        "binning",
        "bbq",
        "temperature",
        "platt",
        "auto",
        "vector",
        "matrix",
        "op-vector",
        "fedcal",
    }


def test_multiclass_goes_to_calibrate_multiclass(monkeypatch: pytest.MonkeyPatch) -> None:
    """Routing only: a stand-in module records the call (the real one is tested elsewhere)."""
    calls: list[dict[str, Any]] = []

    def fake(fed: Federation, privacy: Any, *, method: str, rng: Any, **options: Any) -> str:
        calls.append({"fed": fed, "privacy": privacy, "method": method, "rng": rng, **options})
        return "multiclass-calibrator"

    module = types.ModuleType("fedeval.calibration.federated")
    module.calibrate_multiclass = fake  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fedeval.calibration.federated", module)
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(3), 300)
    fed = Federation.from_arrays(probs, rng.integers(0, 3, 300), kind="probabilities")
    privacy = SecureAggregation()
    out = calibrate(fed, privacy, method="temperature", rng=5, rounds=2)
    assert out == "multiclass-calibrator"
    assert calls == [
        {"fed": fed, "privacy": privacy, "method": "temperature", "rng": 5, "rounds": 2}
    ]
