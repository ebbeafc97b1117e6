"""Federated scaling calibrators (multiclass paper, Algorithm 2 and Appendix B.6)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import logsumexp

from fedeval.calibration.base import calibrator_from_json
from fedeval.calibration.fedcal import fit_fedcal
from fedeval.calibration.federated import calibrate_multiclass
from fedeval.calibration.scaling import ScalingCalibrator, fit_scaling
from fedeval.calibration.scaling_maps import (
    FAMILIES,
    ScalingFamily,
    initial_parameters,
    nll_and_grad,
)
from fedeval.data import Federation
from fedeval.data.partition import dirichlet
from fedeval.privacy.models import SecureAggregation, UserLevelDP


def _overconfident(n: int, c: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    signal = rng.normal(size=(n, c))
    labels = np.argmax(signal + rng.normal(scale=1.5, size=(n, c)), axis=1)
    return 4.0 * signal, labels  # logits ~4x too sharp


def test_fedtemp_one_client_equals_centralised_temperature_fit() -> None:
    # Source of the expected value: a direct scipy fit of τ on the pooled NLL.
    z, y = _overconfident(2000, 6, seed=1)
    fed = Federation.from_arrays(z, y, np.zeros(len(y), dtype=int), kind="logits")
    cal = calibrate_multiclass(
        fed, SecureAggregation(), method="temperature", optimizer="fedavg", l2=0.0, rounds=1, rng=0
    )

    def pooled_nll(t: np.ndarray) -> float:
        o = z / t[0]
        return float(np.mean(logsumexp(o, axis=1) - o[np.arange(len(y)), y]))

    ref = minimize(
        pooled_nll, [1.0], method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-14}
    )
    assert isinstance(cal, ScalingCalibrator)
    assert cal.temperature == pytest.approx(float(ref.x[0]), rel=1e-6)
    assert cal.temperature > 2.0  # the data are overconfident


def test_fedtemp_more_rounds_stay_at_the_fixed_point() -> None:
    z, y = _overconfident(1000, 4, seed=2)
    fed = Federation.from_arrays(z, y, np.zeros(len(y), dtype=int), kind="logits")
    one = fit_scaling(
        fed, SecureAggregation(), family="temperature", optimizer="fedavg", rounds=1, rng=0
    )
    five = fit_scaling(
        fed, SecureAggregation(), family="temperature", optimizer="fedavg", rounds=5, rng=0
    )
    assert five.temperature == pytest.approx(one.temperature, rel=1e-7)


@pytest.mark.parametrize("family", FAMILIES)
def test_analytic_gradients_match_finite_differences(family: str) -> None:
    rng = np.random.default_rng(3)
    z = rng.normal(scale=3, size=(40, 5))
    y = rng.integers(0, 5, size=40)
    w = initial_parameters(family, 5)
    w = w + (0.3 if family == "temperature" else 0.1 * rng.normal(size=w.size))
    _, grad = nll_and_grad(family, w, z, y)
    h = 1e-6
    num = np.array(
        [
            (nll_and_grad(family, w + h * e, z, y)[0] - nll_and_grad(family, w - h * e, z, y)[0])
            / (2 * h)
            for e in np.eye(w.size)
        ]
    )
    np.testing.assert_allclose(grad, num, atol=1e-6)


def test_op_vector_never_changes_the_ranking_property() -> None:
    # Property-style: random parameters (wide range) and random logits with ties.
    rng = np.random.default_rng(4)
    for trial in range(200):
        c = int(rng.integers(2, 9))
        z = rng.normal(scale=rng.uniform(0.1, 20), size=(30, c))
        if trial % 3 == 0:
            z[:, 1] = z[:, 0]  # exact ties must stay ties
        params = np.concatenate([rng.normal(scale=5, size=c), rng.normal(scale=5, size=c)])
        cal = ScalingCalibrator("op-vector", params, n_classes=c, input_kind="logits")
        o = cal.calibrated_logits(z)
        p = cal.predict_proba(z)
        np.testing.assert_array_equal(np.argmax(o, axis=1), np.argmax(z, axis=1))
        np.testing.assert_array_equal(np.argmax(p, axis=1), np.argmax(z, axis=1))
        np.testing.assert_array_equal(np.argsort(-o, kind="stable"), np.argsort(-z, kind="stable"))
        np.testing.assert_allclose(p.sum(axis=1), 1.0)


def test_fed_op_vector_keeps_top1_accuracy_under_skew_and_dp() -> None:
    z, y = _overconfident(3000, 8, seed=5)
    fed = dirichlet(Federation.from_arrays(z, y, kind="logits"), n_clients=30, beta=0.1, rng=0)
    before = np.mean(np.argmax(z, axis=1) == y)
    for privacy in (SecureAggregation(), UserLevelDP(1.0, 1e-5, clip=0.5)):
        cal = calibrate_multiclass(
            fed, privacy, method="op-vector", optimizer="fedavg", rounds=2, sampling_rate=0.5, rng=1
        )
        after = np.mean(np.argmax(cal.predict_proba(z), axis=1) == y)
        assert after == before


def test_fedcal_mlp_is_order_preserving_and_round_trips() -> None:
    z, y = _overconfident(600, 5, seed=6)
    fed = dirichlet(Federation.from_arrays(z, y, kind="logits"), n_clients=10, beta=0.5, rng=0)
    cal = fit_fedcal(fed, SecureAggregation(), rounds=2, sampling_rate=0.5, hidden=8, rng=0)
    p = cal.predict_proba(z)
    np.testing.assert_array_equal(np.argmax(p, axis=1), np.argmax(z, axis=1))
    back = calibrator_from_json(cal.to_json())
    np.testing.assert_array_equal(back.predict_proba(z), p)


@pytest.mark.parametrize("family", FAMILIES)
def test_scaling_json_round_trip_and_probabilities(family: ScalingFamily) -> None:
    z, y = _overconfident(500, 4, seed=7)
    probs = np.exp(z - logsumexp(z, axis=1, keepdims=True))
    fed = dirichlet(Federation.from_arrays(probs, y), n_clients=5, beta=1.0, rng=0)
    # The map itself round-trips (a declined one is an identity calibrator:
    # test_visible_decline.py), so do-no-harm is off here.
    cal = fit_scaling(
        fed,
        UserLevelDP(1.0, 1e-5, clip=0.5),
        family=family,
        rounds=2,
        sampling_rate=0.5,
        rng=0,
        do_no_harm=False,
    )
    back = calibrator_from_json(cal.to_json())
    assert isinstance(back, ScalingCalibrator)
    np.testing.assert_array_equal(back.predict_proba(probs), cal.predict_proba(probs))
    # ``privacy`` became ``procedure`` (facts of the rounds) + ``receipt`` (guarantee, ledger).
    assert back.procedure == cal.procedure
    assert back.receipt == cal.receipt
    assert back.privacy_receipt.entries == cal.privacy_receipt.entries
    assert 0 < back.epsilon_spent <= 1.0
    np.testing.assert_allclose(cal.predict_proba(probs).sum(axis=1), 1.0)


def test_temperature_improves_nll_on_overconfident_model() -> None:
    z, y = _overconfident(4000, 5, seed=8)
    fed = dirichlet(Federation.from_arrays(z, y, kind="logits"), n_clients=40, beta=0.5, rng=0)
    cal = calibrate_multiclass(
        fed,
        SecureAggregation(),
        method="temperature",
        optimizer="fedavg",
        rounds=5,
        sampling_rate=0.5,
        rng=0,
    )

    def nll(p: np.ndarray) -> float:
        return float(-np.mean(np.log(p[np.arange(len(y)), y])))

    base = np.exp(z - logsumexp(z, axis=1, keepdims=True))
    assert nll(cal.predict_proba(z)) < nll(base)
