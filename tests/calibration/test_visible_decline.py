"""A declined scaling map is a visible identity calibrator that carries its reason (issue 27).

Before: under user-level DP the default (Newton) scaling was declined nearly
always and returned a ScalingCalibrator with T = 1 (the identity's parameters),
indistinguishable from a learned map except for ``procedure["applied"]``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from fedeval.calibration import calibrator_from_json
from fedeval.calibration.do_no_harm import IdentityCalibrator, MulticlassIdentityCalibrator
from fedeval.calibration.federated import calibrate_multiclass
from fedeval.calibration.scaling import ScalingCalibrator
from fedeval.metrics.calibration_error import calibration_summary
from fedeval.privacy.models import UserLevelDP
from helpers import digits_task, softmax_rows
from helpers import generated_logits_task as generated_task


def test_declined_scaling_is_an_identity_calibrator_with_its_reason() -> None:
    fed, _, _, z_te, _ = digits_task()
    # A tiny clip leaves the released sums in the noise: nothing can be shown to help.
    with pytest.warns(UserWarning, match="not applied"):
        cal = calibrate_multiclass(
            fed, UserLevelDP(0.5, 1e-5, clip=1e-3), method="temperature", rounds=3, rng=0
        )
    assert isinstance(cal, MulticlassIdentityCalibrator)
    assert cal.declined == "temperature"
    assert "NLL" in cal.reason and "±" in cal.reason
    assert "declined" in repr(cal) and cal.reason in repr(cal)
    assert cal.reason in cal.summary()
    assert cal.procedure["applied"] is False
    np.testing.assert_allclose(cal.predict_proba(z_te), softmax_rows(z_te), atol=1e-12)
    back = calibrator_from_json(cal.to_json())
    assert isinstance(back, MulticlassIdentityCalibrator) and back.reason == cal.reason
    assert cal.epsilon_spent > 0  # the rounds were released and are on the receipt


def test_binary_identity_calibrator_carries_a_reason() -> None:
    cal = IdentityCalibrator(declined="bbq", reason="the map was not shown to help")
    assert "the map was not shown to help" in repr(cal) and "declined" in cal.summary()
    assert calibrator_from_json(cal.to_json()) == cal
    assert cal.procedure["applied"] is False


@pytest.mark.parametrize("seed", range(3))
def test_user_level_dp_default_scaling_helps_or_declines_visibly(seed: int) -> None:
    """The paper's setting (100 clients, q = 0.1, T = 12, ε = 1, δ = 1e-5, C = 0.5) on
    an overconfident generated task: the default temperature scaling either lowers the
    held-out NLL or is an identity calibrator with a reason; never a silent T = 1."""
    fed, z_te, y_te = generated_task()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cal = calibrate_multiclass(
            fed,
            UserLevelDP(1.0, 1e-5, clip=0.5),
            method="temperature",
            rounds=12,
            sampling_rate=0.1,
            rng=seed,
        )
    before = calibration_summary(softmax_rows(z_te), y_te)["nll"]
    if isinstance(cal, ScalingCalibrator):
        assert cal.temperature != 1.0
        assert calibration_summary(cal.predict_proba(z_te), y_te)["nll"] < before
    else:
        assert isinstance(cal, MulticlassIdentityCalibrator) and cal.reason
