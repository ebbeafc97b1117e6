"""Scaling calibrators by federated Newton on the pooled NLL (issue 14)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from fedeval.calibration.federated import calibrate_multiclass
from fedeval.calibration.newton import client_statistic, map_jacobian, newton_centre
from fedeval.calibration.scaling_maps import nll_and_grad, nll_residual
from fedeval.data import Federation
from fedeval.metrics.calibration_error import calibration_summary
from fedeval.privacy.models import SecureAggregation, UserLevelDP
from helpers import digits_task, softmax_rows

FAMILIES = ("temperature", "vector", "matrix", "op-vector")


@pytest.mark.parametrize("family", FAMILIES)
def test_statistic_sums_match_the_nll_gradient_and_a_finite_difference_hessian(family):
    rng = np.random.default_rng(1)
    z = 3 * rng.normal(size=(40, 4))
    y = rng.integers(0, 4, 40)
    theta0 = newton_centre(family, 4)
    theta = theta0 + 0.1 * rng.normal(size=theta0.size)
    d = theta.size
    v = client_statistic(family, theta, theta0, full_hessian=True)(z, y)
    assert v[0] == 40
    w = 1.0 / theta if family == "temperature" else theta
    w0 = 1.0 / theta0 if family == "temperature" else theta0
    loss, grad = nll_and_grad(family, w, z, y)
    assert v[1] == pytest.approx(40 * (loss - nll_and_grad(family, w0, z, y)[0]), rel=1e-9)
    assert v[-1] >= v[1] ** 2 / 40  # Σ Δℓ² ≥ (Σ Δℓ)²/n
    if family != "temperature":  # the calibrator's τ vs Newton's β = 1/τ
        np.testing.assert_allclose(v[2 : 2 + d], 40 * grad, atol=1e-9)
    # Gauss–Newton = exact Hessian for maps linear in θ (vector, matrix, β z):
    # compare with central differences of the summed gradient.
    if family != "op-vector":
        iu = np.triu_indices(d)
        h = np.zeros((d, d))
        h[iu] = v[2 + d : 2 + d + iu[0].size]
        h = h + np.triu(h, 1).T
        eps = 1e-6
        for k in range(d):
            e = np.zeros(d)
            e[k] = eps
            gp = client_statistic(family, theta + e, theta0, full_hessian=True)(z, y)[2 : 2 + d]
            gm = client_statistic(family, theta - e, theta0, full_hessian=True)(z, y)[2 : 2 + d]
            np.testing.assert_allclose((gp - gm) / (2 * eps), h[:, k], atol=1e-4)


def test_jacobian_of_op_vector_matches_finite_differences():
    rng = np.random.default_rng(2)
    z = rng.normal(size=(5, 3))
    theta = newton_centre("op-vector", 3) + 0.2 * rng.normal(size=6)
    o, jac = map_jacobian("op-vector", theta, z)
    for k in range(6):
        e = np.zeros(6)
        e[k] = 1e-6
        fd = (
            map_jacobian("op-vector", theta + e, z)[0] - map_jacobian("op-vector", theta - e, z)[0]
        ) / 2e-6
        np.testing.assert_allclose(fd, jac[:, :, k], atol=1e-5)


def test_sa_temperature_reaches_the_pooled_optimum_on_small_label_skewed_clients():
    # Issue 14: FedAvg of local fits learned τ = 0.56 where the pooled optimum was 1.27.
    # Under SA the released sums are the pooled ones, so Newton's fixed point is the
    # pooled optimum (up to the ridge 1e-4, whose shift is far below 5%).
    fed, z_cal, y_cal, z_te, y_te = digits_task()
    pooled = minimize_scalar(
        lambda t: nll_residual(z_cal / t, y_cal)[0], bounds=(0.01, 100), method="bounded"
    ).x
    cal = calibrate_multiclass(fed, SecureAggregation(), method="temperature", rng=0)
    assert cal.temperature == pytest.approx(pooled, rel=0.05)
    assert cal.procedure["optimizer"] == "newton"
    before = calibration_summary(softmax_rows(z_te), y_te)
    after = calibration_summary(cal.predict_proba(z_te), y_te)
    assert after["nll"] < before["nll"] - 2 * before["nll_se"]


def test_sa_newton_does_not_depend_on_how_examples_are_split_over_clients():
    fed, z_cal, y_cal, *_ = digits_task()
    one = Federation.from_arrays(z_cal, y_cal, clients=np.zeros(len(y_cal), int), kind="logits")
    a = calibrate_multiclass(fed, SecureAggregation(), method="vector", rng=0)
    b = calibrate_multiclass(one, SecureAggregation(), method="vector", rng=0)
    np.testing.assert_allclose(a.params, b.params, rtol=1e-6, atol=1e-8)


def test_fedavg_of_local_fits_is_kept_as_a_named_variant():
    fed, *_ = digits_task()
    cal = calibrate_multiclass(
        fed, SecureAggregation(), method="temperature", optimizer="fedavg", rng=0
    )
    assert cal.procedure["optimizer"] == "fedavg"
    assert cal.procedure["rounds"] == 1


@pytest.mark.slow
@pytest.mark.statistical
@pytest.mark.parametrize("family", FAMILIES)
def test_user_level_dp_is_no_worse_than_uncalibrated_within_its_standard_error(family):
    # Issue 14 with the README's settings (ε = 3, δ = 1e-5, C = 0.5, T = 12, q = 0.3).
    # Tolerance: one standard error of the held-out mean (NLL: sd/√n; ECE: bootstrap).
    fed, _, _, z_te, y_te = digits_task()
    privacy = UserLevelDP(3.0, 1e-5, clip=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a declined map warns; both outcomes are allowed
        cal = calibrate_multiclass(fed, privacy, method=family, rounds=12, sampling_rate=0.3, rng=0)
    before = calibration_summary(softmax_rows(z_te), y_te)
    after = calibration_summary(cal.predict_proba(z_te), y_te)
    assert after["nll"] <= before["nll"] + before["nll_se"]
    assert after["ece_top"] <= before["ece_top"] + before["ece_top_se"]
    assert cal.epsilon_spent <= 3.0 + 1e-9


def test_do_no_harm_returns_the_identity_with_the_numbers_in_a_warning():
    fed, _, _, z_te, _ = digits_task()
    # A tiny clip leaves the released sums in the noise: nothing can be shown to help.
    with pytest.warns(UserWarning, match=r"not applied: the estimated held-out change .* ± "):
        cal = calibrate_multiclass(
            fed, UserLevelDP(0.5, 1e-5, clip=1e-3), method="vector", rounds=3, rng=0
        )
    assert cal.procedure["applied"] is False
    np.testing.assert_allclose(cal.predict_proba(z_te), softmax_rows(z_te), atol=1e-12)


def test_one_round_returns_the_newton_step_from_that_round():
    # T = 1 evaluates only the identity; its quadratic model predicts the step's gain.
    fed, _, _, z_te, y_te = digits_task()
    cal = calibrate_multiclass(fed, SecureAggregation(), method="temperature", rounds=1, rng=0)
    assert cal.procedure["applied"] is True
    assert cal.procedure["estimated_nll_change"] < 0
    assert cal.temperature > 1.0  # logits ×3 are overconfident: the step raises τ


def test_op_vector_jacobian_at_once_equals_one_backward_pass_per_output_bit_for_bit() -> None:
    """Issue 28 (user-level DP calibration): the order-preserving map's Jacobian is built in
    one pass instead of c backward passes of a one-hot gradient; the same numbers, with ties
    among the logits (a stable sort) and a class per rank."""
    from fedeval.calibration.scaling_maps import (
        order_preserving_backward,
        order_preserving_jacobian,
        order_preserving_logits,
    )

    rng = np.random.default_rng(28)
    for n, c in [(1, 2), (7, 3), (50, 10)]:
        z = rng.normal(size=(n, c))
        z[: n // 2, 1] = z[: n // 2, 0]  # ties
        v = rng.normal(size=(n, c)) * 3
        _, cache = order_preserving_logits(z, v)
        jac = order_preserving_jacobian(cache)
        for j in range(c):
            e = np.zeros((n, c))
            e[:, j] = 1.0
            np.testing.assert_array_equal(jac[:, j, :], order_preserving_backward(cache, e))


@pytest.mark.parametrize(
    ("family", "full"),
    [("temperature", True), ("vector", True), ("vector", False), ("matrix", False),
     ("op-vector", True)],
)  # fmt: skip
def test_batched_client_statistics_equal_the_per_client_statistic(family: str, full: bool) -> None:
    """Issue 28 (user-level DP calibration): every client's Newton statistic computed for a
    batch of clients at once equals the per-client one to rounding, and the clipped,
    fixed-point sums the release adds differ by at most one unit per client and coordinate
    (a sum within an ulp of a rounding boundary), the same law."""
    from fedeval.calibration.newton import client_statistics, per_example_means
    from fedeval.calibration.scaling_maps import initial_parameters
    from fedeval.sketches.clipped_sums import ClippedSumSketch

    rng = np.random.default_rng(5)
    c, n = 4, 600
    z = rng.normal(scale=2.0, size=(n, c))
    z[:40, 1] = z[:40, 0]  # ties (the order-preserving map's stable sort)
    y = rng.integers(0, c, n)
    clients = rng.integers(0, 90, n)
    theta0 = initial_parameters(family, c)
    theta = theta0 + rng.normal(scale=0.2, size=theta0.size)
    stat = per_example_means(client_statistic(family, theta, theta0, full_hessian=full))
    many = client_statistics(family, theta, theta0, full_hessian=full, means=True)
    fed = Federation.from_arrays(z, y, clients=clients, kind="logits")
    ids = np.flatnonzero(fed.client_sizes > 0)
    rows = fed.rows_of(ids)
    starts = np.concatenate(([0], np.cumsum(fed.client_sizes[ids])[:-1]))
    got = many(fed.scores[rows], fed.labels[rows], starts)
    want = np.array([stat(fed.client(int(k)).scores, fed.client(int(k)).labels) for k in ids])
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-13)
    size = want.shape[1]
    loop = ClippedSumSketch(stat, size, 0.5).encode_clients(fed)
    fast = ClippedSumSketch(stat, size, 0.5, many).encode_clients(fed)
    assert np.max(np.abs(fast - loop)) <= ids.size  # at most one unit per client
    assert np.count_nonzero(fast != loop) <= max(1, fast.size // 100)  # and rarely any
