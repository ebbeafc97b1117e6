"""The scaling maps of multiclass calibration and their negative log-likelihood.

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

This module is pure maths (maps, NLL, analytic gradients); the federated
training is :mod:`fedeval.calibration.fedavg`.

References
----------
.. [1] Private federated multiclass post-hoc calibration, Algorithm 2,
   Appendix B.6.
.. [2] C. Guo, G. Pleiss, Y. Sun and K. Weinberger, "On calibration of modern
   neural networks", ICML 2017 (temperature, vector and matrix scaling).
.. [3] A. Rahimi, A. Shaban, C.-A. Cheng, R. Hartley and B. Boots,
   "Intra order-preserving functions for calibration of multi-class neural
   networks", NeurIPS 2020, Theorem 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "FAMILIES",
    "OPCache",
    "ScalingFamily",
    "initial_parameters",
    "nll_and_grad",
    "nll_residual",
    "order_preserving_backward",
    "order_preserving_jacobian",
    "order_preserving_logits",
    "scaling_logits",
]

ScalingFamily = Literal["temperature", "vector", "matrix", "op-vector"]
FAMILIES: tuple[str, ...] = ("temperature", "vector", "matrix", "op-vector")

_OP_FLOOR = 1e-6
_SOFTPLUS_INV_ONE = math.log(math.e - 1.0)


# --------------------------------------------------------------- order-preserving map
def _softplus(v: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.asarray(np.logaddexp(0.0, v), dtype=np.float64)


def _sigmoid(v: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.asarray(0.5 * (1.0 + np.tanh(0.5 * v)), dtype=np.float64)


@dataclass(frozen=True)
class OPCache:
    order: NDArray[np.intp]
    gaps: NDArray[np.float64]
    v_sorted: NDArray[np.float64]


def order_preserving_logits(
    z: NDArray[np.float64], v: NDArray[np.float64]
) -> tuple[NDArray[np.float64], OPCache]:
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
    return o, OPCache(order, gaps, v_sorted)


def order_preserving_backward(cache: OPCache, grad_o: NDArray[np.float64]) -> NDArray[np.float64]:
    """Gradient with respect to ``v`` given the gradient with respect to the output logits."""
    g_sorted = np.take_along_axis(grad_o, cache.order, axis=1)
    # dL/dm_k = d_k Σ_{i ≤ k} dL/dŷ_i
    g_m = cache.gaps * np.cumsum(g_sorted[:, :-1], axis=1)
    g_v_sorted = np.zeros_like(g_sorted)
    g_v_sorted[:, :-1] = g_m * _sigmoid(cache.v_sorted[:, :-1])
    g_v = np.empty_like(g_v_sorted)
    np.put_along_axis(g_v, cache.order, g_v_sorted, axis=1)
    return g_v


def order_preserving_jacobian(cache: OPCache) -> NDArray[np.float64]:
    """∂o/∂v of :func:`order_preserving_logits`, shape (n, c, c): [example, output, score].

    In sorted order ŷ_i = Σ_{k ≥ i} d_k m_k, so ∂ŷ_i/∂v_k = d_k σ(v_k) for
    i ≤ k ≤ c − 2 and 0 otherwise: output class j depends on score l with
    coefficient d σ(v) at l's rank when rank(j) ≤ rank(l). This is every row
    :func:`order_preserving_backward` gives for a one-hot gradient, at once,
    with the same float operations (d·σ(v) times an exact 0 or 1), so equal
    bit for bit (tested).
    """
    order = cache.order
    n, c = order.shape
    coef_sorted = np.zeros((n, c))
    coef_sorted[:, :-1] = cache.gaps * _sigmoid(cache.v_sorted[:, :-1])
    coef = np.empty_like(coef_sorted)
    np.put_along_axis(coef, order, coef_sorted, axis=1)
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(c), (n, c)), axis=1)
    below = rank[:, :, None] <= rank[:, None, :]
    return np.asarray(coef[:, None, :] * below, dtype=np.float64)


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


def nll_residual(o: NDArray[np.float64], y: NDArray[np.int64]) -> tuple[float, NDArray[np.float64]]:
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
        loss, r = nll_residual(z / tau, y)
        return loss, np.array([-np.sum(r * z) / tau**2])
    if family == "vector":
        loss, r = nll_residual(z * w[:c] + w[c:], y)
        return loss, np.concatenate([np.sum(r * z, axis=0), np.sum(r, axis=0)])
    if family == "matrix":
        a = w[: c * c].reshape(c, c)
        loss, r = nll_residual(z @ a.T + w[c * c :], y)
        return loss, np.concatenate([(r.T @ z).ravel(), np.sum(r, axis=0)])
    x = z - z.max(axis=1, keepdims=True)
    o, cache = order_preserving_logits(z, x * w[:c] + w[c:])
    loss, r = nll_residual(o, y)
    g_v = order_preserving_backward(cache, r)
    return loss, np.concatenate([np.sum(g_v * x, axis=0), np.sum(g_v, axis=0)])
