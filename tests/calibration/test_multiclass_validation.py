"""Bad input to federated multiclass calibration gets clear errors."""

from __future__ import annotations

import numpy as np
import pytest

from fedeval.calibration.federated import calibrate_multiclass
from fedeval.calibration.scaling import ScalingCalibrator
from fedeval.data import Federation
from fedeval.privacy.models import (
    DistributedDP,
    LabelDP,
    LocalDP,
    SecureAggregation,
    UserLevelDP,
)


@pytest.fixture
def fed() -> Federation:
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(3), size=60)
    return Federation.from_arrays(p, rng.integers(0, 3, size=60), np.arange(60) % 6)


def test_logits_with_nan_are_rejected() -> None:
    z = np.zeros((4, 3))
    z[2, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        Federation.from_arrays(z, [0, 1, 2, 0], kind="logits")
    cal = ScalingCalibrator("temperature", np.ones(1), n_classes=3, input_kind="logits")
    with pytest.raises(ValueError, match="NaN or inf"):
        cal.predict_proba(z)
    # A Federation built without validation is caught at the calibration boundary too.
    bad = Federation(z, np.array([0, 1, 2, 0]), np.array([0, 4]), np.array([0]), "logits")
    with pytest.raises(ValueError, match="NaN or inf"):
        calibrate_multiclass(bad, SecureAggregation(), method="temperature", optimizer="fedavg")


def test_probabilities_must_sum_to_one(fed: Federation) -> None:
    with pytest.raises(ValueError, match="sum to 1"):
        Federation.from_arrays(np.full((3, 3), 0.5), [0, 1, 2], kind="probabilities")
    cal = calibrate_multiclass(fed, SecureAggregation(), method="bbq", rng=0)
    with pytest.raises(ValueError, match="sum to 1"):
        cal.predict_proba(np.full((2, 3), 0.5))
    with pytest.raises(ValueError, match=r"shape \(n, 3\)"):
        cal.predict_proba(np.full((2, 4), 0.25))


def test_labels_outside_the_class_range(fed: Federation) -> None:
    with pytest.raises(ValueError, match=r"0\.\.2"):
        Federation.from_arrays(np.full((2, 3), 1 / 3), [0, 3])
    bad = Federation(fed.scores, fed.labels + 1, fed.offsets, fed.client_ids, fed.kind)
    with pytest.raises(ValueError, match=r"labels must lie in 0\.\.2"):
        calibrate_multiclass(bad, SecureAggregation(), method="binning")


@pytest.mark.parametrize("rounds", [0, -3])
def test_rounds_below_one(fed: Federation, rounds: int) -> None:
    with pytest.raises(ValueError, match="rounds must be an integer >= 1"):
        calibrate_multiclass(fed, SecureAggregation(), method="bbq", rounds=rounds)
    with pytest.raises(TypeError, match="rounds"):
        calibrate_multiclass(fed, SecureAggregation(), method="bbq", rounds=2.5)  # type: ignore[arg-type]


@pytest.mark.parametrize("rate", [0.0, -0.1, 1.5, float("nan")])
def test_sampling_rate_outside_unit_interval(fed: Federation, rate: float) -> None:
    with pytest.raises(ValueError, match=r"sampling_rate must lie in \(0, 1\]"):
        calibrate_multiclass(
            fed, SecureAggregation(), method="temperature", optimizer="fedavg", sampling_rate=rate
        )


@pytest.mark.parametrize("clip", [0.0, -1.0, (1.0, 0.0), (-2.0, 3.0)])
def test_non_positive_clip(clip: float | tuple[float, float]) -> None:
    with pytest.raises(ValueError, match="clip"):
        UserLevelDP(1.0, 1e-5, clip=clip)


def test_pair_clip_is_for_binning_only(fed: Federation) -> None:
    with pytest.raises(ValueError, match="pair"):
        calibrate_multiclass(
            fed, UserLevelDP(1.0, 1e-5, clip=(1.0, 2.0)), method="temperature", optimizer="fedavg"
        )
    with pytest.raises(ValueError, match="pair"):
        calibrate_multiclass(fed, UserLevelDP(1.0, 1e-5, clip=(1.0, 2.0)), method="fedcal")


def test_other_bad_arguments(fed: Federation) -> None:
    with pytest.raises(ValueError, match="method must be one of"):
        calibrate_multiclass(fed, SecureAggregation(), method="isotonic")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="unknown option"):
        calibrate_multiclass(
            fed, SecureAggregation(), method="temperature", optimizer="fedavg", levels=3
        )
    # Which models a procedure accepts is now decided by privacy.mechanism_for.
    # One release of exact counts is DistributedDP's (issue 29: it was refused);
    # clipped model updates are not.
    with pytest.raises(TypeError, match="DistributedDP cannot release"):
        calibrate_multiclass(fed, DistributedDP(1.0), method="temperature", optimizer="fedavg")
    with pytest.raises(TypeError, match="LocalDP cannot release"):
        calibrate_multiclass(fed, LocalDP(1.0), method="binning")
    with pytest.raises(TypeError, match="LabelDP"):
        calibrate_multiclass(fed, LabelDP(1.0), method="vector", optimizer="fedavg")
    with pytest.raises(TypeError, match="not a privacy model"):
        calibrate_multiclass(fed, "userdp", method="bbq")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="covers one release"):
        calibrate_multiclass(fed, DistributedDP(1.0), method="bbq", rounds=2)
    with pytest.raises(TypeError, match="Federation"):
        calibrate_multiclass(np.zeros((3, 3)), SecureAggregation())  # type: ignore[arg-type]
    binary = Federation.from_arrays([0.1, 0.9], [0, 1])
    with pytest.raises(ValueError, match="kind"):
        calibrate_multiclass(binary, SecureAggregation())
    with pytest.raises(ValueError, match="weighting"):
        calibrate_multiclass(fed, SecureAggregation(), method="bbq", weighting="some")
    with pytest.raises(ValueError, match="levels"):
        calibrate_multiclass(fed, SecureAggregation(), method="bbq", levels=0)
    with pytest.raises(ValueError, match="l2"):
        calibrate_multiclass(fed, SecureAggregation(), method="vector", optimizer="fedavg", l2=-1.0)
