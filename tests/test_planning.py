"""The planner: its documented rules, bad input, and its fitted error predictions."""

from __future__ import annotations

import importlib.util
import itertools
import math
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

import fedeval as fe
from fedeval.planning import ERROR_CONSTANTS, error_rates

METRICS = ("threshold_metrics", "auc", "ece", "roc_area_error")
M_GRID = [10**k for k in range(1, 9)]


# ------------------------------------------------------------------ rules
def test_secure_aggregation_uses_height_14_and_ignores_epsilon() -> None:
    for m in (10, 10_000, 10**7):
        p = fe.plan(n_clients=m, privacy="sa")
        assert (p.height, p.branching) == (14, 2)
        assert math.isinf(p.epsilon)
        assert fe.plan(fe.SecureAggregation(), n_clients=m).height == 14
    with pytest.raises(ValueError, match="epsilon"):
        fe.plan(n_clients=10, privacy="sa", epsilon=0.5)


@pytest.mark.parametrize("eps", [0.1, 1.0, 5.0])
def test_distdp_height_grows_with_clients_within_4_to_16(eps: float) -> None:
    heights = [fe.plan(n_clients=m, epsilon=eps, privacy="distdp").height for m in M_GRID]
    assert heights == sorted(heights)
    assert heights[-1] > heights[0]
    assert all(4 <= h <= 16 for h in heights)
    for m, h in zip(M_GRID, heights, strict=True):
        # Theorem 2 balance: 2^h ≈ (εM)^{2/3} leaves, clamped.
        assert h == min(max(math.ceil(math.log2(max((eps * m) ** (2 / 3), 2))), 4), 16)


@pytest.mark.parametrize("eps", [0.5, 1.0, 8.0])
def test_ldp_is_shallower_than_distdp_and_within_3_to_12(eps: float) -> None:
    for m in M_GRID:
        ldp = fe.plan(n_clients=m, epsilon=eps, privacy="ldp")
        dist = fe.plan(n_clients=m, epsilon=eps, privacy="distdp")
        assert 3 <= ldp.height <= 12
        assert ldp.height <= dist.height
    heights = [fe.plan(n_clients=m, epsilon=eps, privacy="ldp").height for m in M_GRID]
    assert heights == sorted(heights)


@pytest.mark.parametrize("privacy", ["sa", "distdp", "ldp"])
@pytest.mark.parametrize("branching", [2, 3, 4])
def test_quantiles_buckets_and_bins_follow_the_height(privacy: str, branching: int) -> None:
    eps = None if privacy == "sa" else 1.0
    for m in M_GRID:
        p = fe.plan(n_clients=m, epsilon=eps, privacy=privacy, branching=branching)
        leaves = branching**p.height
        assert p.n_quantiles == min(1024, branching ** max(p.height - 2, 0)) <= 1024
        assert 2 <= p.n_buckets <= max(2, leaves // 4)
        assert p.calibration_bins >= 2


def test_predictions_are_fitted_constant_times_rate() -> None:
    for privacy, regime in (("sa", "exact"), ("distdp", "central"), ("ldp", "local")):
        p = fe.plan(n_clients=123_456, epsilon=None if privacy == "sa" else 0.7, privacy=privacy)
        assert p.regime == regime
        rates = error_rates(p)
        assert set(p.predicted_error) == set(METRICS) == set(rates)
        for k in METRICS:
            assert p.predicted_error[k] == pytest.approx(ERROR_CONSTANTS[(regime, k)] * rates[k])
    regimes = ("exact", "central", "local")
    assert set(ERROR_CONSTANTS) == {(r, k) for r in regimes for k in METRICS}
    assert all(c > 0 for c in ERROR_CONSTANTS.values())
    assert "fitted" in fe.plan(n_clients=1000, privacy="sa").notes[0]


def test_more_clients_or_budget_never_predicts_more_error() -> None:
    for privacy in ("distdp", "ldp"):
        for k in ("threshold_metrics", "roc_area_error"):
            errs = [
                fe.plan(n_clients=m, epsilon=1.0, privacy=privacy).predicted_error[k]
                for m in M_GRID
            ]
            assert all(b <= a * (1 + 1e-12) for a, b in itertools.pairwise(errs))
    small = fe.plan(n_clients=100, epsilon=0.1, privacy="distdp")
    large = fe.plan(n_clients=10**8, epsilon=1.0, privacy="distdp", target_error=0.05)
    assert not small.enough_clients and any("target" in n for n in small.notes)
    assert large.enough_clients


def test_n_examples_drive_the_bounds_and_privacy_is_case_insensitive() -> None:
    p = fe.plan(n_clients=100, n_examples=10**6, epsilon=1.0, privacy="DistDP")
    q = fe.plan(n_clients=10**6, epsilon=1.0, privacy="distdp")
    assert p.regime == "central" and (p.n_clients, p.n_examples) == (100, 10**6)
    assert p.privacy == fe.DistributedDP(1.0).describe()
    model = fe.plan(fe.DistributedDP(1.0), n_clients=10**6)
    assert model.height == q.height and model.predicted_error == q.predicted_error
    assert p.height == q.height and p.predicted_error == q.predicted_error


def test_the_plan_uses_public_inputs_only_and_says_which() -> None:
    """Issue 12, finding 1: the plan is published, so M must be public.

    Without a (public) number of examples the plan takes M = n_clients and says
    so; the docstring tells callers to pass only public counts.
    """
    p = fe.plan(fe.DistributedDP(1.0), n_clients=10)
    assert p.n_examples == 10
    assert any("n_examples not given" in n for n in p.notes)
    q = fe.plan(fe.DistributedDP(1.0), n_clients=10, n_examples=64)
    assert not any("n_examples not given" in n for n in q.notes)
    doc = fe.plan.__doc__ or ""
    assert "Public inputs only" in doc and "public" in doc.split("n_examples : int")[1][:200]


# -------------------------------------------------------------- bad input
@pytest.mark.parametrize("n", [0, -5])
def test_too_few_clients_is_an_error(n: int) -> None:
    with pytest.raises(ValueError, match="n_clients"):
        fe.plan(n_clients=n, epsilon=1.0)


@pytest.mark.parametrize("n", [1.5, "10", True])
def test_non_integer_clients_is_a_type_error(n: object) -> None:
    with pytest.raises(TypeError, match="n_clients"):
        fe.plan(n_clients=n, epsilon=1.0)  # type: ignore[arg-type]


def test_a_plan_needs_a_public_size() -> None:
    with pytest.raises(ValueError, match="public size"):
        fe.plan("distdp", epsilon=1.0)
    assert fe.plan("distdp", epsilon=1.0, n_examples=500).n_clients is None


@pytest.mark.parametrize("eps", [0.0, -1.0, float("nan"), float("inf")])
@pytest.mark.parametrize("privacy", ["distdp", "ldp"])
def test_non_positive_or_non_finite_epsilon_is_an_error(eps: float, privacy: str) -> None:
    with pytest.raises(ValueError, match="epsilon"):
        fe.plan(n_clients=1000, epsilon=eps, privacy=privacy)


@pytest.mark.parametrize("privacy", ["distdp", "ldp"])
def test_missing_epsilon_is_an_error(privacy: str) -> None:
    with pytest.raises(ValueError, match="epsilon"):
        fe.plan(n_clients=1000, privacy=privacy)


@pytest.mark.parametrize("privacy", ["gdp", "", "secagg"])
def test_unknown_privacy_model_is_an_error(privacy: str) -> None:
    with pytest.raises(ValueError, match="privacy"):
        fe.plan(n_clients=1000, epsilon=1.0, privacy=privacy)


def test_central_dp_plans_like_distributed_dp() -> None:
    """'central' is a known short name (issue 29, CLI parity): the same discrete Laplace
    noise on the same sums as distributed DP, so the same plan."""
    central = fe.plan(n_clients=1000, epsilon=1.0, privacy="central")
    distdp = fe.plan(n_clients=1000, epsilon=1.0, privacy="distdp")
    assert central.regime == distdp.regime == "central"
    assert central.height == distdp.height and central.predicted_error == distdp.predicted_error


def test_bad_branching_and_examples_are_errors() -> None:
    with pytest.raises(ValueError, match="branching"):
        fe.plan(n_clients=1000, epsilon=1.0, branching=1)
    with pytest.raises(ValueError, match="n_examples"):
        fe.plan(n_clients=1000, epsilon=1.0, n_examples=0)


# ----------------------------------------------- fitted predictions hold
OVERSTATEMENT_FACTOR = 60.0
"""Largest factor by which a DP prediction may exceed the median observed error (see below)."""


def _fit_script() -> ModuleType:
    path = Path(__file__).parents[1] / "benchmarks" / "fit_planner_constants.py"
    if not path.exists():  # pragma: no cover - source checkout only
        pytest.skip("benchmarks/fit_planner_constants.py is not available")
    spec = importlib.util.spec_from_file_location("fit_planner_constants", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.statistical
def test_predicted_errors_bound_observed_errors_at_a_held_out_setting() -> None:
    """At settings outside the fitting grid, runs rarely exceed the prediction.

    Each constant is the largest, over the fitting grid's settings, of the
    90th percentile of observed/rate, so at every grid setting a run exceeds
    its prediction with probability at most about 0.1. If a held-out setting
    behaves like its neighbours in the grid, the number of its 10 independent
    runs exceeding the prediction is ~ Binomial(10, p) with p <= 0.1, and
    P(more than 3 exceed) <= 0.013; we allow at most 3 (tolerance), and also
    require the median run to be below the prediction. The prediction must also
    not overstate by more than a stated factor: under DP the median run is at
    least 1/F of it, F = 60. Source of F: refitting to the current (dense,
    Wiener-shrunk) estimators, the smallest median(observed)/prediction over the
    DP grid settings was 0.037 (DistDP roc_area_error at ε = 3, M = 10^6; 0.09-0.22
    for the other DP metrics), i.e. within 27×; F doubles that for a held-out
    setting. Not asserted under SA, whose only error is the bucketization:
    there the rate's form does not follow it (median/prediction spans 0.016-0.97
    over the grid). The held-out settings
    use (M, ε) pairs not in the grid, and a fresh draw of the task (another
    seed: new data and a newly trained model). Fixed seeds: deterministic.
    """
    fit = _fit_script()
    reps = 10
    held_out = [("sa", None, 50_000), ("distdp", 2.0, 50_000), ("ldp", 5.0, 200_000)]
    pool_s, pool_y = fit.planner_task(max(m for *_, m in held_out) + 50_000, seed=1)
    for gi, (privacy, eps, m) in enumerate(held_out):
        ratios: dict[str, list[float]] = {k: [] for k in fit.FITTED}
        for r in range(reps):
            gen = np.random.default_rng([99, gi, r])
            idx = gen.choice(pool_s.size, size=m, replace=False)
            obs, rate = fit.observed_errors(pool_s[idx], pool_y[idx], privacy, eps, seed=r)
            for k in fit.FITTED:
                predicted = ERROR_CONSTANTS[(fit.REGIME[privacy], k)] * rate[k]
                ratios[k].append(obs[k] / predicted)
        for k, vals in ratios.items():
            arr = np.array(vals)
            exceed = int((arr > 1.0).sum())
            assert exceed <= 3, f"{privacy} {k}: {exceed}/{reps} runs above prediction {arr}"
            assert np.median(arr) < 1.0, f"{privacy} {k}: median ratio {np.median(arr):.2f}"
            if privacy != "sa":
                assert np.median(arr) >= 1.0 / OVERSTATEMENT_FACTOR, (
                    f"{privacy} {k}: prediction overstates, median ratio {np.median(arr):.3f}"
                )


def test_predicted_errors_never_exceed_the_uninformative_answer() -> None:
    """Issue 29: plan predicted an AUC error of 0.92 for 57 clients (AUC lies in [0, 1];
    answering 0.5 errs by at most 0.5). Capped, with a note that says so."""
    from fedeval.planning import UNINFORMATIVE_ERROR

    p = fe.plan(n_clients=57, privacy="distdp", epsilon=1.0)
    assert p.predicted_error["auc"] == UNINFORMATIVE_ERROR == 0.5
    # the uncapped prediction (0.92 with the constants of issue 29; refitted since)
    uncapped = ERROR_CONSTANTS[("central", "auc")] * error_rates(p)["auc"]
    assert uncapped > 0.5
    assert any(
        n.startswith(f"auc: the predicted error ({uncapped:.2g}) reaches 0.5") for n in p.notes
    )
    assert not p.enough_clients
    for clients in (2, 10, 57, 1_000, 10**6):
        for privacy, eps in (("sa", None), ("distdp", 0.1), ("ldp", 1.0), ("central", 0.1)):
            q = fe.plan(n_clients=clients, privacy=privacy, epsilon=eps)
            assert all(0 <= v <= 0.5 for v in q.predicted_error.values()), (clients, privacy)
