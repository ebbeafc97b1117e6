"""``method="auto"``: the candidate with the best released NLL estimate, within one budget."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import fedeval as fe
from fedeval.calibration.binary_scaling import BinaryScalingCalibrator
from fedeval.calibration.do_no_harm import HARM_LEVEL, IdentityCalibrator, harm_threshold
from fedeval.privacy.ledger import BudgetExceededError, BudgetLedger


def _task(n: int, seed: int, *, calibrated: bool = False) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    u = rng.normal(0.0, 1.5, n)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-u))).astype(int)
    z = u if calibrated else 3.0 * u + 0.5
    return 1.0 / (1.0 + np.exp(-z)), y


@pytest.mark.parametrize("privacy", [fe.SecureAggregation(), fe.DistributedDP(1.0)])
def test_auto_picks_the_admissible_candidate_of_smallest_estimated_change(privacy) -> None:
    s, y = _task(20_000, 0)
    ledger = BudgetLedger(1.0)
    cal = fe.calibrate(
        fe.Federation.from_arrays(s, y), privacy, method="auto", rng=0, ledger=ledger
    )
    assert not isinstance(cal, IdentityCalibrator)
    sel = cal.harm_estimates["selection"]
    cands = sel["candidates"]
    assert set(cands) == {"binning", "bbq", "temperature", "platt"}
    z = harm_threshold(HARM_LEVEL / 4)
    admissible = {
        k: v["nll_change"]
        for k, v in cands.items()
        if v["ece_after"] < v["ece_before"] and -v["nll_change"] > z * v["nll_change_se"]
    }
    assert cal.harm_estimates["method"] == min(admissible, key=admissible.__getitem__)
    # One release carries the whole budget; the split is stated.
    assert "100%" in sel["budget_split"]
    assert ledger.spent_epsilon == pytest.approx(1.0 if privacy.regime != "exact" else 0.0)
    assert cal.epsilon_spent == pytest.approx(1.0 if privacy.regime != "exact" else 0.0)


def test_auto_declines_calibrated_scores_and_lists_every_candidate() -> None:
    s, y = _task(5000, 1, calibrated=True)
    with pytest.warns(UserWarning, match="auto calibration was not applied"):
        cal = fe.calibrate(
            fe.Federation.from_arrays(s, y), fe.DistributedDP(1.0), method="auto", rng=0
        )
    assert isinstance(cal, IdentityCalibrator) and cal.declined == "auto"
    for name in ("binning", "bbq", "temperature", "platt"):
        assert name in cal.reason


def test_auto_under_user_level_dp_splits_the_budget_up_front() -> None:
    s, y = _task(20_000, 2)
    fed = fe.Federation.from_arrays(s, y, clients=np.arange(20_000) % 200)
    privacy = fe.UserLevelDP(2.0, 1e-5, clip=1.0)
    ledger = BudgetLedger(2.0, 1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cal = fe.calibrate(fed, privacy, method="auto", rng=0, ledger=ledger)
    assert ledger.spent_epsilon <= 2.0 + 1e-9 and ledger.spent_delta <= 1e-5 * (1 + 1e-9)
    assert cal.epsilon_spent == pytest.approx(ledger.spent_epsilon)
    assert "50%" in cal.privacy_receipt.guarantee.statement
    sel = (
        cal.estimates["selection"]
        if isinstance(cal, IdentityCalibrator)
        else cal.harm_estimates["selection"]
    )
    assert set(sel["budget_split"]) == {"temperature", "platt"}
    if not isinstance(cal, IdentityCalibrator):
        assert isinstance(cal, BinaryScalingCalibrator)
    # A ledger that cannot afford both runs refuses before anything is released.
    small = BudgetLedger(1.0, 1e-5)
    with pytest.raises(BudgetExceededError):
        fe.calibrate(fed, privacy, method="auto", rng=0, ledger=small)
    assert small.spent_epsilon == 0.0
