"""Issue 12 for calibration: published parameters from public inputs, no exact counts, no refusals.

* Finding 4: user-level DP calibrators published the exact number of
  participations (T·K at sampling rate 1), and DP-FedAvg divided by q·K with
  the true K. The number of clients is what add/remove of a client changes.
* Finding 1 (binary calibration): the default hierarchy height, published in
  the receipt, was planned from the exact number of examples.
* "Always release": degenerate noisy releases (no positive mass, NaN standard
  errors) must give a calibrator with a warning, not an error.

Every test here failed on the code before the fix (checked by running it
against a worktree of the earlier commit). The last one is a regression guard:
it fails there only because ``population`` did not exist.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import numpy as np
import pytest

import fedeval as fe
from fedeval.calibration import calibrator_from_json
from fedeval.data import Federation
from fedeval.privacy.ledger import BudgetLedger


def _multiclass(n_clients: int, per_client: int = 3, c: int = 3, seed: int = 0) -> Federation:
    rng = np.random.default_rng(seed)
    n = n_clients * per_client
    p = rng.dirichlet(np.ones(c), size=n)
    y = rng.integers(0, c, size=n)
    return Federation.from_arrays(p, y, clients=np.repeat(np.arange(n_clients), per_client))


def _ints(obj: Any) -> list[int]:
    """Every integer leaf of a JSON document (booleans excluded)."""
    if isinstance(obj, bool):
        return []
    if isinstance(obj, int):
        return [obj]
    if isinstance(obj, dict):
        return [i for v in obj.values() for i in _ints(v)]
    if isinstance(obj, list):
        return [i for v in obj for i in _ints(v)]
    return []


# ------------------------------------------------------------ exact participations
@pytest.mark.parametrize("method", ["binning", "temperature", "fedcal"])
def test_user_level_calibrators_publish_no_participations(method: str) -> None:
    # T = 3 rounds at q = 1 over K = 13 clients: 39 participations, which would
    # give K away exactly.
    fed = _multiclass(13)
    options: dict[str, Any] = {"hidden": 4, "max_iter": 2} if method == "fedcal" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        cal = fe.calibrate(
            fed, fe.UserLevelDP(1.0, 1e-5, clip=0.5), method=method, rounds=3, rng=0, **options
        )
    assert isinstance(cal, fe.calibration.base.Calibrator)
    procedure = cal.procedure  # type: ignore[attr-defined]
    assert "participations" not in procedure
    doc = json.loads(cal.to_json())
    assert not {13, 39} & set(_ints(doc)), doc
    assert "participations" not in repr(cal)


# ------------------------------------------------------------ DP-FedAvg's denominator
def test_dp_fedavg_divides_by_the_declared_population() -> None:
    # ε huge: the noise is negligible, and the same seed draws the same noise, so
    # the step w_T − w_0 = η Σu / (q K) scales exactly as 1/K.
    fed = _multiclass(6)
    model = fe.UserLevelDP(1e6, 0.5, clip=0.5)
    steps = {}
    for k in (10, 20):
        cal = fe.calibrate(
            fed, model, method="vector", optimizer="fedavg", population=k, max_iter=5, rng=1
        )
        steps[k] = np.asarray(cal.params) - np.r_[np.ones(3), np.zeros(3)]  # type: ignore[attr-defined]
        assert cal.procedure["population"] == {  # type: ignore[attr-defined]
            "source": "declared by the user (public input)",
            "value": k,
        }
        assert any(f"K = {k}" in p for p in cal.guarantee.public)
    np.testing.assert_allclose(steps[10], 2 * steps[20], rtol=1e-6, atol=1e-9)
    assert np.abs(steps[10]).max() > 1e-3  # not vacuous


def test_dp_fedavg_releases_the_population_when_none_is_declared() -> None:
    fed = _multiclass(6)
    ledger = BudgetLedger(2.0, 1e-3)
    # ε large enough that the released count is close to K = 6.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        cal = fe.calibrate(
            fed,
            fe.UserLevelDP(1000.0, 1e-5, clip=0.5),
            method="temperature",
            optimizer="fedavg",
            rng=0,
        )
    pop = cal.procedure["population"]  # type: ignore[attr-defined]
    assert pop["source"].startswith("released")
    assert pop["budget_share"] == 0.05
    assert pop["value"] == pytest.approx(6, abs=0.5)
    assert pop["used"] >= pop["value"] or pop["used"] >= 2 * pop["noise_std"]
    # The receipt composes the two releases; each is a ledger entry.
    assert "composed" in cal.guarantee.statement and "client count" in cal.guarantee.statement
    assert len(cal.privacy_receipt.entries) == 2
    assert cal.epsilon_spent <= 1000.0 * (1 + 1e-9)
    # Charged together to a ledger: 5% and 95% of the budget.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        cal = fe.calibrate(
            fed,
            fe.UserLevelDP(1.0, 1e-5, clip=0.5),
            method="temperature",
            optimizer="fedavg",
            rng=0,
            ledger=ledger,
        )
    eps = sorted(e.epsilon for e in ledger.entries)
    assert len(eps) == 2 and eps[0] <= 0.05 + 1e-9 and 0.9 <= eps[1] <= 0.95 + 1e-9
    assert ledger.spent_epsilon <= cal.epsilon_spent + 1e-9


def test_population_is_checked_as_an_input_format() -> None:
    fed = _multiclass(4)
    with pytest.raises(ValueError, match="population"):
        fe.calibrate(
            fed,
            fe.UserLevelDP(1.0, 1e-5, clip=0.5),
            method="temperature",
            optimizer="fedavg",
            population=0,
        )
    with pytest.raises(TypeError, match="population"):
        fe.calibrate(fed, fe.UserLevelDP(1.0, 1e-5, clip=0.5), method="bbq", population=10)


# ------------------------------------------------------------ binary: planned height
def _binary(n_examples: int, n_clients: int = 10, seed: int = 0) -> Federation:
    rng = np.random.default_rng(seed)
    s = rng.random(n_examples)
    y = (rng.random(n_examples) < s).astype(int)
    return Federation.from_arrays(s, y, clients=np.arange(n_examples) % n_clients)


def _levels(cal: Any) -> int:
    """The height of the released hierarchy, as the receipt publishes it (one part per level)."""
    parts = cal.receipt["sensitivity"].get("parts")
    return len(parts) if parts else int(cal.receipt["entries"][-1]["details"]["parts"])


def test_default_height_is_planned_from_a_released_count_not_the_exact_one() -> None:
    # round(M^(1/3)) is 4 at M = 91 and 5 at M = 92: the old rule planned heights 3
    # and 4 from the exact count and published them in the receipt; then (issue 12)
    # from the number of clients, which is not public under add/remove either
    # (issue 24). Now from a noisy count released first, listed on the receipt.
    model = fe.DistributedDP(1.0)
    for m in (91, 92):
        cal = fe.calibrate(_binary(m), model, method="binning", rng=0)
        labels = [e["label"] for e in cal.receipt["entries"]]
        assert labels[0].startswith("example count") and len(labels) == 1 + _levels(cal)
        assert cal.epsilon_spent == pytest.approx(1.0)
    heights = {
        _levels(fe.calibrate(_binary(91), model, method="binning", rng=seed)) for seed in range(12)
    }
    assert len(heights) >= 2  # a function of the noisy count, not of 91


def test_a_declared_size_or_a_public_count_plans_the_height() -> None:
    fed = _binary(92)
    declared = fe.calibrate(fed, fe.DistributedDP(1.0), method="binning", n_examples=10**6, rng=0)
    assert _levels(declared) == 8  # B = 100 buckets need ~2B = 256 leaves
    # Local DP sends one report per example: the count is public and may be used.
    ldp = fe.calibrate(fed, fe.LocalDP(1.0), method="binning", rng=0)
    assert _levels(ldp) == 3
    with pytest.raises(ValueError, match="n_examples"):
        fe.calibrate(fed, fe.DistributedDP(1.0), method="binning", n_examples=0)


# ------------------------------------------------------------ always release
@pytest.mark.parametrize("method", ["binning", "bbq"])
def test_a_release_without_positive_mass_gives_a_calibrator_and_a_warning(method: str) -> None:
    fed = Federation.from_arrays(np.array([0.3, 0.8]), np.array([0, 1]))
    model = fe.DistributedDP(0.3)
    fallbacks = 0
    for seed in range(40):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cal = fe.calibrate(fed, model, method=method, rng=seed, do_no_harm=False)
        if any("no positive mass" in str(w.message) for w in caught):
            fallbacks += 1
            assert any("equal-width" in step for step in cal.post_processing)  # type: ignore[attr-defined]
        back = calibrator_from_json(cal.to_json())
        out = back.predict_proba(np.linspace(0.0, 1.0, 11))
        assert np.isfinite(out).all() and (out >= 0).all() and (out <= 1).all()
    assert fallbacks > 0  # the degenerate case was exercised


def test_nan_standard_errors_survive_json() -> None:
    # Buckets whose released total is not positive have no standard error (NaN);
    # strict JSON has no NaN, and to_json used to raise for such calibrators.
    fed = Federation.from_arrays(np.array([0.2, 0.7, 0.9]), np.array([0, 1, 1]))
    seen_nan = False
    for seed in range(30):
        cal = fe.calibrate(fed, fe.DistributedDP(0.5), method="binning", rng=seed, do_no_harm=False)
        back = calibrator_from_json(cal.to_json())
        se = np.asarray(cal.probabilities_se)  # type: ignore[attr-defined]
        np.testing.assert_array_equal(np.isnan(back.probabilities_se), np.isnan(se))  # type: ignore[attr-defined]
        seen_nan |= bool(np.isnan(se).any())
    assert seen_nan


def test_local_dp_with_fewer_examples_than_levels_releases() -> None:
    fed = Federation.from_arrays(np.array([0.2, 0.7]), np.array([0, 1]))
    cal = fe.calibrate(fed, fe.LocalDP(1.0), method="binning", rng=0)
    assert np.isfinite(cal.predict_proba(np.array([0.5]))).all()


def test_a_class_nobody_holds_is_released_under_user_level_dp() -> None:
    # Regression guard (this already held): labels 0 and 1 only, 3 classes.
    p = np.random.default_rng(3).dirichlet(np.ones(3), size=12)
    fed = Federation.from_arrays(p, np.arange(12) % 2, clients=np.arange(12) % 4)
    for method in ("binning", "bbq", "temperature", "op-vector"):
        options = {} if method in ("binning", "bbq") else {"population": 4}
        cal = fe.calibrate(
            fed, fe.UserLevelDP(1.0, 1e-5, clip=0.5), method=method, rng=0, **options
        )
        out = cal.predict_proba(p)
        np.testing.assert_allclose(out.sum(axis=1), 1.0)
        calibrator_from_json(cal.to_json())
