"""Federated scaling calibrators: FedTemp, FedVector, FedMatrix, FedOPVector (Algorithm 2).

A scaling calibrator maps logits z to softmax(o(z)). Families:

* ``"temperature"`` (FedTemp): o = z / τ, one parameter τ > 0.
* ``"vector"`` (FedVector): o = a ⊙ z + b, 2c parameters.
* ``"matrix"`` (FedMatrix): o = A z + b, c² + c parameters.
* ``"op-vector"`` (FedOPVector): order-preserving vector scaling (Rahimi et
  al. 2020): sort z decreasingly, y = S z, gaps d_i = y_i − y_{i+1} ≥ 0; the
  new sorted logits are ŷ_i = Σ_{k ≥ i, k < c} d_k m_k with
  m_k = softplus(a_s x_s + b_s) + 10⁻⁶ for the class s at rank k, where
  x = z − max_j z_j is the shift-invariant (vector-scaled) input, and
  o = S⁻¹ ŷ. Every m_k > 0, so equal logits stay equal and a larger logit
  stays larger: the ranking, and hence the top-1 (top-k) prediction, never
  changes. With a = 0 and softplus(b) = 1/τ it is temperature scaling.

Training is FedAvg over T rounds: the server samples clients with probability
p; each fits the family locally, starting from the current global parameters,
by L-BFGS-B on its mean negative log-likelihood with analytic gradients
(``scipy.optimize.minimize``, at most ``max_iter`` iterations, 50 as in the
paper's Appendix A.6); the server averages. Under user-level DP (DP-FedAvg)
each client clips its update u_k = w_k − w_t to L2 norm C, the server adds
N(0, (zC)²) to the securely aggregated sum and divides by the expected number
of participants pK.

References
----------
.. [1] Private federated multiclass post-hoc calibration (the multiclass paper),
   Algorithm 2, §4.2, §4.3, Appendices B.1, B.2, B.6.
.. [2] C. Guo, G. Pleiss, Y. Sun and K. Weinberger, "On calibration of modern
   neural networks", ICML 2017 (temperature, vector and matrix scaling).
.. [3] A. Rahimi, A. Shaban, C.-A. Cheng, R. Hartley and B. Boots,
   "Intra order-preserving functions for calibration of multi-class neural
   networks", NeurIPS 2020, Theorem 1 (g = S⁻¹ U w with w_i = 0 on ties and
   w_i > 0 on strict descents).
.. [4] McMahan et al. (2018), DP-FedAvg.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import minimize
from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

from fedeval.calibration.base import register
from fedeval.calibration.user_dp import (
    MulticlassCalibrator,
    check_procedure,
    clip_l2,
    plan_noise,
    poisson_sample,
    privacy_record,
    softmax,
    to_logits,
)
from fedeval.data import Federation
from fedeval.privacy.models import SecureAggregation, UserLevelDP
from fedeval.randomness import RNGLike, as_generator
from fedeval.validation import check_int_at_least, check_positive

__all__ = [
    "ScalingCalibrator",
    "ScalingFamily",
    "fedavg",
    "fit_local",
    "fit_scaling",
    "nll_and_grad",
    "order_preserving_backward",
    "order_preserving_logits",
    "scaling_logits",
    "sum_client_updates",
]

ScalingFamily = Literal["temperature", "vector", "matrix", "op-vector"]
FAMILIES: tuple[str, ...] = ("temperature", "vector", "matrix", "op-vector")

_TEMPERATURE_BOUNDS = (1e-3, 1e3)
_OP_FLOOR = 1e-6
_SOFTPLUS_INV_ONE = math.log(math.e - 1.0)

Objective = Callable[
    [NDArray[np.float64], NDArray[np.float64], NDArray[np.int64]],
    tuple[float, NDArray[np.float64]],
]


# --------------------------------------------------------------- order-preserving map
def _softplus(v: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.asarray(np.logaddexp(0.0, v), dtype=np.float64)


def _sigmoid(v: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.asarray(0.5 * (1.0 + np.tanh(0.5 * v)), dtype=np.float64)


@dataclass(frozen=True)
class _OPCache:
    order: NDArray[np.intp]
    gaps: NDArray[np.float64]
    v_sorted: NDArray[np.float64]


def order_preserving_logits(
    z: NDArray[np.float64], v: NDArray[np.float64]
) -> tuple[NDArray[np.float64], _OPCache]:
    """Order-preserving logits from raw logits ``z`` and class-indexed scores ``v``.

    Parameters
    ----------
    z : ndarray, shape (n, c)
        Raw logits (their ranking is kept).
    v : ndarray, shape (n, c)
        Unconstrained per-class scores; m = softplus(v) + 1e-6 > 0 scales the
        gap below each class in the sorted order.

    Returns
    -------
    o : ndarray, shape (n, c)
        o[s_i] = Σ_{k=i}^{c−2} (y_k − y_{k+1}) m[s_k], with y = z sorted
        decreasingly and s the sorting permutation; the smallest class gets 0.
    cache : for :func:`order_preserving_backward`.

    References
    ----------
    .. [1] Rahimi et al. (2020), Theorem 1; multiclass paper, Appendix B.6.
    """
    order = np.argsort(-z, axis=1, kind="stable")
    y = np.take_along_axis(z, order, axis=1)
    gaps = y[:, :-1] - y[:, 1:]
    v_sorted = np.take_along_axis(v, order, axis=1)
    m = _softplus(v_sorted[:, :-1]) + _OP_FLOOR
    w = gaps * m
    # ŷ_i = Σ_{k ≥ i} w_k: reversed cumulative sum, last (smallest) rank at 0.
    y_new = np.zeros_like(y)
    y_new[:, :-1] = np.cumsum(w[:, ::-1], axis=1)[:, ::-1]
    o = np.empty_like(y_new)
    np.put_along_axis(o, order, y_new, axis=1)
    return o, _OPCache(order, gaps, v_sorted)


def order_preserving_backward(cache: _OPCache, grad_o: NDArray[np.float64]) -> NDArray[np.float64]:
    """Gradient with respect to ``v`` given the gradient with respect to the output logits."""
    g_sorted = np.take_along_axis(grad_o, cache.order, axis=1)
    # dL/dm_k = d_k Σ_{i ≤ k} dL/dŷ_i
    g_m = cache.gaps * np.cumsum(g_sorted[:, :-1], axis=1)
    g_v_sorted = np.zeros_like(g_sorted)
    g_v_sorted[:, :-1] = g_m * _sigmoid(cache.v_sorted[:, :-1])
    g_v = np.empty_like(g_v_sorted)
    np.put_along_axis(g_v, cache.order, g_v_sorted, axis=1)
    return g_v


# ------------------------------------------------------------------------- families
def initial_parameters(family: str, n_classes: int) -> NDArray[np.float64]:
    """Parameters of the identity map of each family (τ = 1, a = 1/b = 0, A = I)."""
    c = n_classes
    if family == "temperature":
        return np.ones(1)
    if family == "vector":
        return np.concatenate([np.ones(c), np.zeros(c)])
    if family == "matrix":
        return np.concatenate([np.eye(c).ravel(), np.zeros(c)])
    if family == "op-vector":
        return np.concatenate([np.zeros(c), np.full(c, _SOFTPLUS_INV_ONE)])
    raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")


def scaling_logits(
    family: str, w: NDArray[np.float64], z: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Calibrated logits o(z) of a family with parameters ``w``."""
    c = z.shape[1]
    if family == "temperature":
        return z / w[0]
    if family == "vector":
        return z * w[:c] + w[c:]
    if family == "matrix":
        return z @ w[: c * c].reshape(c, c).T + w[c * c :]
    x = z - z.max(axis=1, keepdims=True)
    return order_preserving_logits(z, x * w[:c] + w[c:])[0]


def _nll_residual(
    o: NDArray[np.float64], y: NDArray[np.int64]
) -> tuple[float, NDArray[np.float64]]:
    """Mean NLL of logits ``o`` and its gradient with respect to ``o``."""
    n = o.shape[0]
    shift = o.max(axis=1, keepdims=True)
    e = np.exp(o - shift)
    s = e.sum(axis=1, keepdims=True)
    lse = np.log(s)[:, 0] + shift[:, 0]
    loss = float(np.mean(lse - o[np.arange(n), y]))
    r = e / s
    r[np.arange(n), y] -= 1.0
    return loss, r / n


def nll_and_grad(
    family: str, w: NDArray[np.float64], z: NDArray[np.float64], y: NDArray[np.int64]
) -> tuple[float, NDArray[np.float64]]:
    """Mean negative log-likelihood of a scaling family and its analytic gradient.

    Parameters
    ----------
    family : {"temperature", "vector", "matrix", "op-vector"}
    w : ndarray
        Flat parameters (layout of :func:`initial_parameters`).
    z : ndarray, shape (n, c)
    y : ndarray of int64, shape (n,)
    """
    c = z.shape[1]
    if family == "temperature":
        tau = w[0]
        loss, r = _nll_residual(z / tau, y)
        return loss, np.array([-np.sum(r * z) / tau**2])
    if family == "vector":
        loss, r = _nll_residual(z * w[:c] + w[c:], y)
        return loss, np.concatenate([np.sum(r * z, axis=0), np.sum(r, axis=0)])
    if family == "matrix":
        a = w[: c * c].reshape(c, c)
        loss, r = _nll_residual(z @ a.T + w[c * c :], y)
        return loss, np.concatenate([(r.T @ z).ravel(), np.sum(r, axis=0)])
    x = z - z.max(axis=1, keepdims=True)
    o, cache = order_preserving_logits(z, x * w[:c] + w[c:])
    loss, r = _nll_residual(o, y)
    g_v = order_preserving_backward(cache, r)
    return loss, np.concatenate([np.sum(g_v * x, axis=0), np.sum(g_v, axis=0)])


def fit_local(
    objective: Objective,
    w0: NDArray[np.float64],
    z: NDArray[np.float64],
    y: NDArray[np.int64],
    *,
    max_iter: int,
    bounds: list[tuple[float | None, float | None]] | None = None,
) -> NDArray[np.float64]:
    """One client's local fit: L-BFGS-B from ``w0`` on ``objective(w, z, y) -> (loss, grad)``."""
    res = minimize(
        objective,
        w0,
        args=(z, y),
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={"maxiter": max_iter, "gtol": 1e-10, "ftol": 1e-14},
    )
    w = np.asarray(res.x, dtype=np.float64)
    return w if np.isfinite(w).all() else np.array(w0, copy=True)


def sum_client_updates(
    fed: Federation,
    logits: NDArray[np.float64],
    w: NDArray[np.float64],
    objective: Objective,
    chosen: NDArray[np.intp],
    *,
    clip: float | None,
    max_iter: int,
    bounds: list[tuple[float | None, float | None]] | None = None,
) -> NDArray[np.float64]:
    """What secure aggregation returns in one round: Σ_k u_k, clipped to L2 norm C if given.

    Each chosen client k fits locally from the global ``w`` and contributes
    u_k = w_k − w, scaled down to norm ≤ ``clip`` (client-side, before the
    upload), so one client moves the sum by at most C (2C if its data is
    replaced rather than removed).
    """
    offsets = fed.offsets
    total = np.zeros_like(w)
    for k in chosen:
        a, b = int(offsets[k]), int(offsets[k + 1])
        w_k = fit_local(
            objective, w, logits[a:b], fed.labels[a:b], max_iter=max_iter, bounds=bounds
        )
        u_k = w_k - w
        total += u_k if clip is None else clip_l2(u_k, clip)
    return total


def fedavg(
    fed: Federation,
    logits: NDArray[np.float64],
    w0: NDArray[np.float64],
    objective: Objective,
    privacy: SecureAggregation | UserLevelDP,
    *,
    rounds: int,
    sampling_rate: float,
    noise_multiplier: float,
    max_iter: int,
    server_lr: float,
    gen: np.random.Generator,
    bounds: list[tuple[float | None, float | None]] | None = None,
    project: Callable[[NDArray[np.float64]], NDArray[np.float64]] | None = None,
) -> tuple[NDArray[np.float64], int]:
    """FedAvg (DP-FedAvg under UserLevelDP) of local L-BFGS-B fits over T rounds.

    Non-private rounds average the updates of the clients that took part
    (w_{t+1} = w_t + η_S · mean_k u_k, which is Algorithm 2's parameter
    average for η_S = 1) and skip rounds nobody joined. Private rounds release
    Σ_k clip(u_k, C) + N(0, (zC)² I) every round (also when nobody joined) and
    divide by the expected participant count pK, so that one client moves the
    released sum by at most C (Appendix B.2; McMahan et al. 2018).

    Returns
    -------
    (w_T, participations)
    """
    # Local fits are tiny (tens to thousands of parameters); OpenBLAS threads
    # only add contention there (measured 30x slower on a loaded 2-core host).
    with threadpool_limits(limits=1, user_api="blas"):
        return _fedavg_rounds(
            fed,
            logits,
            w0,
            objective,
            privacy,
            rounds=rounds,
            sampling_rate=sampling_rate,
            noise_multiplier=noise_multiplier,
            max_iter=max_iter,
            server_lr=server_lr,
            gen=gen,
            bounds=bounds,
            project=project,
        )


def _fedavg_rounds(
    fed: Federation,
    logits: NDArray[np.float64],
    w0: NDArray[np.float64],
    objective: Objective,
    privacy: SecureAggregation | UserLevelDP,
    *,
    rounds: int,
    sampling_rate: float,
    noise_multiplier: float,
    max_iter: int,
    server_lr: float,
    gen: np.random.Generator,
    bounds: list[tuple[float | None, float | None]] | None,
    project: Callable[[NDArray[np.float64]], NDArray[np.float64]] | None,
) -> tuple[NDArray[np.float64], int]:
    w = np.array(w0, dtype=np.float64, copy=True)
    participations = 0
    clip = privacy.clip if isinstance(privacy, UserLevelDP) else None
    if isinstance(clip, tuple):
        raise ValueError(f"scaling clips updates to one L2 norm C, got the pair {clip!r}")
    clip_norm = 0.0 if clip is None else float(clip)
    for _ in range(rounds):
        chosen = poisson_sample(fed.n_clients, sampling_rate, gen)
        participations += int(chosen.size)
        total = sum_client_updates(
            fed,
            logits,
            w,
            objective,
            chosen,
            clip=None if clip is None else clip_norm,
            max_iter=max_iter,
            bounds=bounds,
        )
        if clip is None:
            if chosen.size == 0:
                continue
            w = w + server_lr * total / chosen.size
        else:
            noisy = total + gen.normal(0.0, noise_multiplier * clip_norm, size=w.shape)
            w = w + server_lr * noisy / (sampling_rate * fed.n_clients)
        if project is not None:
            w = project(w)
    return w, participations


def _check_l2(l2: Any) -> float:
    try:
        value = float(l2)
    except (TypeError, ValueError):
        raise TypeError(f"l2 must be a number >= 0, got {l2!r}") from None
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"l2 must be a finite number >= 0, got {l2!r}")
    return value


@register
@dataclass(frozen=True)
class ScalingCalibrator(MulticlassCalibrator):
    """A scaling calibrator softmax(o(z)) learned by federated averaging.

    Attributes
    ----------
    family : {"temperature", "vector", "matrix", "op-vector"}
    params : ndarray
        Flat parameters: [τ]; [a (c), b (c)]; [A (c·c, row-major), b (c)];
        [a (c), b (c)] for op-vector.
    n_classes, input_kind, privacy
        See :class:`~fedeval.calibration.user_dp.MulticlassCalibrator`.

    Notes
    -----
    Privacy: holds only the released (noisy) parameters; using it costs no
    further budget.

    References
    ----------
    .. [1] Multiclass paper, Algorithm 2 and Appendix B.6.
    """

    kind: ClassVar[str] = "multiclass-scaling"
    array_fields: ClassVar[tuple[str, ...]] = ("params",)

    family: str
    params: NDArray[np.float64]

    @property
    def temperature(self) -> float:
        """τ of temperature scaling (ValueError for other families)."""
        if self.family != "temperature":
            raise ValueError(f"a {self.family!r} calibrator has no single temperature")
        return float(self.params[0])

    def calibrated_logits(self, scores: Any) -> NDArray[np.float64]:
        """o(z) for (n, c) logits or probabilities (log-probabilities are used as logits)."""
        return scaling_logits(self.family, self.params, self._logits(scores))

    def predict_proba(self, scores: Any) -> NDArray[np.float64]:
        """Calibrated probabilities, shape (n, c), rows summing to 1.

        Raises
        ------
        ValueError, TypeError
            Wrong shape, NaN/inf, or probabilities not summing to 1.
        """
        return softmax(self.calibrated_logits(scores))


def fit_scaling(
    fed: Federation,
    privacy: SecureAggregation | UserLevelDP,
    *,
    family: ScalingFamily = "temperature",
    rounds: int = 1,
    sampling_rate: float = 1.0,
    max_iter: int = 50,
    server_lr: float = 1.0,
    l2: float = 0.0,
    rng: RNGLike = None,
) -> ScalingCalibrator:
    """Run Algorithm 2 (FedTemp / FedVector / FedMatrix / FedOPVector).

    Parameters
    ----------
    fed : Federation
        Multiclass; "probabilities" are turned into logits by log (floored at
        1e-300), which softmax maps back to the same probabilities.
    privacy : SecureAggregation or UserLevelDP
        UserLevelDP's ``clip`` must be a single C (norm of each client's update).
    family : {"temperature", "vector", "matrix", "op-vector"}, keyword-only
    rounds : int
        T ≥ 1.
    sampling_rate : float
        p ∈ (0, 1].
    max_iter : int
        L-BFGS-B iterations of each local fit, ≥ 1 (paper: 50).
    server_lr : float
        η_S > 0 (paper: 1).
    l2 : float
        Ridge λ ≥ 0 of each local fit, (λ/2)·‖w − w_identity‖² added to the
        client's mean NLL (0, the paper's setting, by default). On clients
        missing some classes the unpenalised vector/matrix/op-vector NLL has no
        finite minimiser, so only ``max_iter`` stops the local fit; a small λ
        keeps local parameters finite.
    rng : int, Generator or None

    Returns
    -------
    ScalingCalibrator

    Raises
    ------
    ValueError, TypeError
        Invalid federation, privacy model (including a (C+, C−) pair), T, p or option.

    Notes
    -----
    Choices where the paper is open:

    * DP clips each client's *update* w_k − w_t (DP-FedAvg, Appendix B.2)
      rather than the raw parameters (§4.3 wording): the identity map is the
      natural centre and C = 0.5 bounds a step, not a temperature.
    * Temperatures are kept in [1e-3, 1e3] (bounds of the local fit, and a
      projection after each noisy server step).
    * FedTemp averages τ itself (the paper's A = 1/τ with τ shared).

    Privacy: user-level (ε, δ)-DP under UserLevelDP by RDP accounting of T
    Poisson-subsampled Gaussian rounds; no DP with SecureAggregation (the
    server learns the exact average). Recorded in the calibrator's ``privacy``.

    References
    ----------
    .. [1] Multiclass paper, Algorithm 2, §4.2–4.3, Appendices B.1, B.2, B.6.
    """
    priv, t, p_rate = check_procedure(fed, privacy, rounds, sampling_rate)
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")
    if isinstance(priv, UserLevelDP) and isinstance(priv.clip, tuple):
        raise ValueError(
            f"scaling methods clip each client's update to one L2 norm C; got the pair "
            f"clip={priv.clip!r} (a (C+, C−) pair is for binning)"
        )
    iters = check_int_at_least(max_iter, 1, name="max_iter")
    lr = check_positive(server_lr, name="server_lr")
    ridge = _check_l2(l2)
    gen = as_generator(rng)
    c = fed.n_classes
    logits = to_logits(fed.scores, fed.kind)
    plan = plan_noise(priv, rounds=t, sampling_rate=p_rate)

    centre = initial_parameters(family, c)

    def objective(
        w: NDArray[np.float64], z: NDArray[np.float64], y: NDArray[np.int64]
    ) -> tuple[float, NDArray[np.float64]]:
        loss, grad = nll_and_grad(family, w, z, y)
        if ridge > 0:
            d = w - centre
            return loss + 0.5 * ridge * float(d @ d), grad + ridge * d
        return loss, grad

    bounds: list[tuple[float | None, float | None]] | None = None
    project = None
    if family == "temperature":
        bounds = [_TEMPERATURE_BOUNDS]

        def project(w: NDArray[np.float64]) -> NDArray[np.float64]:
            return np.clip(w, *_TEMPERATURE_BOUNDS)

    w, participations = fedavg(
        fed,
        logits,
        centre,
        objective,
        priv,
        rounds=t,
        sampling_rate=p_rate,
        noise_multiplier=plan.noise_multiplier,
        max_iter=iters,
        server_lr=lr,
        gen=gen,
        bounds=bounds,
        project=project,
    )
    n_params = w.size
    noise_std = None
    sens = None
    if isinstance(priv, UserLevelDP):
        sens = float(priv.clip)  # type: ignore[arg-type]
        noise_std = {"sum": plan.noise_multiplier * sens}
    record = privacy_record(
        priv,
        plan,
        release=f"the sum of {n_params} clipped {family}-scaling parameter updates",
        l2_sensitivity=sens,
        noise_std=noise_std,
    )
    record["participations"] = participations
    return ScalingCalibrator(family, w, n_classes=c, input_kind=fed.kind, privacy=record)
