"""Scaling calibrators by federated Newton steps on the pooled negative log-likelihood.

FedAvg of local fits (:mod:`fedeval.calibration.fedavg`, the multiclass paper's
Algorithm 2) averages each client's own optimum; with small or label-skewed
clients that average is not the pooled optimum (a client holding one class
pushes its temperature towards 0). The NLL of every scaling map, its gradient
and its (Gauss–Newton) Hessian are instead *sums over examples*, so a
federated sum of them is the pooled quantity whatever the client sizes:

1. every round, each sampled client sends the vector
   ``[n_k, ΔL_k, g_k, H_k, ΔL₂_k]`` of its examples at the server's
   parameters θ: its example count, its summed loss change from the identity
   map ``Σ ℓ_i(θ) − ℓ_i(θ₀)``, the summed NLL gradient, the summed
   Gauss–Newton Hessian (upper triangle, or its diagonal when the map has more
   than ``FULL_HESSIAN_MAX`` parameters under DP) and the summed squared
   loss change;
2. the sums are released by :class:`fedeval.aggregation.Rounds` (exact under
   secure aggregation; each client's vector clipped to L2 norm C, with
   discrete Gaussian noise every round and the T rounds composed once, under
   user-level DP);
3. the server takes a damped Newton step
   ``θ ← θ − (Ĥ + λn̂ I + μI)⁻¹ (ĝ + λn̂ (θ − θ₀))`` inside a trust region
   of radius ``max_step`` in the per-example Hessian metric
   √(sᵀĤs / n̂) (nats of logit change, whatever the scale of the logits);
   the next round's released ΔL accepts the step or rejects it and shrinks
   the radius (Nocedal & Wright, Algorithm 4.1); no parameter moves by more
   than ``MAX_PARAMETER_STEP`` in one step.

Under secure aggregation the fixed point is the pooled ridge-regularised
optimum (the Gauss–Newton matrix is the exact Hessian for the vector and
matrix maps and for temperature scaling parametrised by β = 1/τ, all convex
in their parameters), whatever the client sizes.

Choices where nothing is prescribed (documented and tested):

* Temperature scaling is optimised in β = 1/τ (o = βz is linear in β, so the
  NLL is convex and Newton exact); the calibrator stores τ = 1/β.
* ``l2`` (λ) is per example, as in :mod:`fedeval.calibration.scaling`: the
  objective is the mean NLL + (λ/2)‖θ − θ₀‖² (the matrix map's diagonal
  unpenalised, :func:`ridge_weights`); the server multiplies it by the
  released example count n̂ (floored at max(2σ, 1)).
* Under DP, the damping μ = 2σ_H √d (σ_H the noise standard deviation of one
  Hessian entry) is the expected spectral norm of the Hessian's noise, so
  noise never makes the system indefinite; the gradient is shrunk by the
  positive-part James–Stein factor max(0, 1 − d σ_g² / ‖ĝ‖²), so a gradient
  buried in noise gives no step.
* The returned map is the last *accepted* parameters, whose pooled NLL change
  ΔL/n̂ was released by a round (the last round's proposal is never
  evaluated, so it is not returned), unless no step beyond the identity was
  ever accepted (e.g. T = 1): then the last proposal, whose change is
  estimated by the quadratic model of the release it was computed from.
* Do no harm: that released ΔL/n̂ estimates the pooled NLL change of the
  returned map *on the examples it was fitted to*, from the rounds' own
  releases (no extra budget). In-sample it is optimistic by d/n for a map of
  d parameters fitted to n independent units (Akaike 1974: the held-out loss
  of an M-estimate exceeds its in-sample loss by tr(J I⁻¹)/n ≈ d/n), so the
  held-out change is estimated by ΔL/n̂ + d·q/n̂ (with client sampling at
  rate q the evaluating round's units took part in the fit with probability
  about q, and the fit saw about n̂/q units), unbiased to first order. Its
  standard error holds the release's noise and the sampling spread of the
  per-unit changes (the last coordinate, ΔL₂, of every client's vector), by
  the delta method for the ratio ΔL/n̂ (the noise of both). A released count
  n̂ within ``MIN_COUNT_Z`` (3) noise standard deviations of 0 makes the ratio
  no estimate: the map is then declined. The
  map is kept only if the estimated held-out gain −(ΔL/n̂ + d/n̂) exceeds
  z_{1−a} times its standard error, a one-sided test at level a =
  :data:`~fedeval.calibration.do_no_harm.HARM_LEVEL` (0.05, z = 1.645): a map
  whose true held-out change is ≥ 0 is kept with probability at most about
  a. Otherwise the decline is returned as such (``applied`` False, ``reason``
  giving the numbers) and announced by a warning.
* Under DP each client sends its *per-example means* (its sums divided by
  its example count): every client weighs one in the released sums, whose
  first coordinate counts clients. The clip C then bounds a vector of O(1)
  entries whatever a client's size; with sums, the example count dominated
  the norm, clipping scaled the loss change and gradient down with it, and
  the noise swamped them (the map was declined nearly always). The objective
  becomes the client-weighted mean NLL, whose optimum differs from the pooled
  one only through how clients differ; without DP the sums are sent, and the
  fixed point is the pooled optimum.

References
----------
.. [1] Private federated multiclass post-hoc calibration, Algorithm 2 (FedAvg
   of local fits, kept as ``optimizer="fedavg"``), §4.3 (clipping + Gaussian
   noise, RDP accounting).
.. [2] C. Guo, G. Pleiss, Y. Sun and K. Weinberger, ICML 2017 (temperature,
   vector, matrix scaling by NLL).
.. [3] J. Nocedal and S. Wright, Numerical Optimization, 2nd ed., §10.3
   (Gauss–Newton), §4 (damped / trust-region steps).
.. [4] W. James and C. Stein (1961), positive-part shrinkage.
.. [5] H. Akaike (1974), "A new look at the statistical model identification"
   (the in-sample optimism of d fitted parameters).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray
from tqdm.auto import tqdm

from fedeval.aggregation import Rounds
from fedeval.calibration.base import warn_degenerate
from fedeval.calibration.do_no_harm import HARM_LEVEL, harm_threshold
from fedeval.calibration.fedavg import one_blas_thread
from fedeval.calibration.multiclass import procedure_record
from fedeval.calibration.scaling_maps import (
    initial_parameters,
    order_preserving_jacobian,
    order_preserving_logits,
)
from fedeval.data import Federation
from fedeval.privacy.ledger import BudgetLedger
from fedeval.privacy.mechanism_for import client_clip
from fedeval.privacy.models import PrivacyModel
from fedeval.sketches.clipped_sums import ClippedSumSketch

__all__ = [
    "FULL_HESSIAN_MAX",
    "NewtonRun",
    "client_statistic",
    "federated_newton",
    "map_jacobian",
    "newton_centre",
    "pooled_procedure",
    "ridge_weights",
    "to_calibrator_params",
]

#: Largest move of any one parameter in one Newton step.
MAX_PARAMETER_STEP = 0.5

#: Above this many parameters, DP rounds send the Hessian's diagonal only.
FULL_HESSIAN_MAX = 32

#: Do no harm trusts a released change ΔL/n̂ only when the released count n̂ is
#: at least this many noise standard deviations: a ratio over a count near its
#: noise is heavy-tailed, and the normal approximation of the test fails there.
MIN_COUNT_Z = 3.0


def newton_centre(family: str, n_classes: int) -> NDArray[np.float64]:
    """θ₀, the identity map in the Newton parametrisation (β = 1 for temperature).

    ``"platt"`` is the binary family o = (0, a·(z₁ − z₀) + b) of two-class
    logits (:mod:`fedeval.calibration.binary_scaling`), identity (a, b) = (1, 0).
    """
    if family == "platt":
        return np.array([1.0, 0.0])
    return initial_parameters(family, n_classes)  # β = 1 = τ for temperature


def ridge_weights(family: str, n_classes: int) -> NDArray[np.float64]:
    """Per-parameter weights of the ridge: 1, except 0 on a matrix map's diagonal.

    The matrix map is regularised on its off-diagonal entries and biases only
    (ODIR, Kull et al. 2019): its diagonal plays the role of a temperature per
    class and must move freely (logits several times too large need A ≈ I/τ),
    while the c² − c off-diagonal entries are what overfits.
    """
    c = n_classes
    w = np.ones(newton_centre(family, c).size)
    if family == "matrix":
        w[: c * c : c + 1] = 0.0
    return w


def to_calibrator_params(family: str, theta: NDArray[np.float64]) -> NDArray[np.float64]:
    """The calibrator's parameters from θ (τ = 1/β for temperature, else θ itself)."""
    if family == "temperature":
        return np.array([1.0 / float(theta[0])])
    return np.array(theta, dtype=np.float64, copy=True)


def map_jacobian(
    family: str, theta: NDArray[np.float64], z: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Calibrated logits o(z; θ), shape (n, c), and ∂o/∂θ, shape (n, c, d)."""
    n, c = z.shape
    if family == "temperature":
        return z * theta[0], z[:, :, None].copy()
    if family == "vector":
        o = z * theta[:c] + theta[c:]
        jac = np.zeros((n, c, 2 * c))
        idx = np.arange(c)
        jac[:, idx, idx] = z
        jac[:, idx, c + idx] = 1.0
        return o, jac
    if family == "platt":
        x = z[:, 1] - z[:, 0]
        o = np.zeros((n, 2))
        o[:, 1] = theta[0] * x + theta[1]
        jac = np.zeros((n, 2, 2))
        jac[:, 1, 0] = x
        jac[:, 1, 1] = 1.0
        return o, jac
    if family == "matrix":
        a = theta[: c * c].reshape(c, c)
        o = z @ a.T + theta[c * c :]
        jac = np.zeros((n, c, c * c + c))
        for j in range(c):
            jac[:, j, j * c : (j + 1) * c] = z
            jac[:, j, c * c + j] = 1.0
        return o, jac
    if family == "op-vector":
        x = z - z.max(axis=1, keepdims=True)
        o, cache = order_preserving_logits(z, x * theta[:c] + theta[c:])
        g_v = order_preserving_jacobian(cache)  # (n, c outputs, c scores)
        jac = np.empty((n, c, 2 * c))
        jac[:, :, :c] = g_v * x[:, None, :]
        jac[:, :, c:] = g_v
        return o, jac
    raise ValueError(f"unknown scaling family {family!r}")


def _losses(o: NDArray[np.float64], y: NDArray[np.int64]) -> tuple[NDArray[np.float64], Any]:
    shift = o.max(axis=1, keepdims=True)
    e = np.exp(o - shift)
    s = e.sum(axis=1, keepdims=True)
    p = e / s
    loss = np.log(s)[:, 0] + shift[:, 0] - o[np.arange(o.shape[0]), y]
    return loss, p


def client_statistic(
    family: str,
    theta: NDArray[np.float64],
    theta0: NDArray[np.float64],
    *,
    full_hessian: bool,
) -> Any:
    """``stat(z, y) -> [n, ΔL, g (d), H (d(d+1)/2 upper triangle, or d diagonal), ΔL₂]`` (sums).

    ΔL₂ = Σ_i (ℓ_i(θ) − ℓ_i(θ₀))², the second moment of the per-example loss
    change, gives the sampling variance of the released mean change.
    """
    d = theta.size
    iu = np.triu_indices(d)

    def stat(z: NDArray[np.float64], y: NDArray[np.int64]) -> NDArray[np.float64]:
        if z.shape[0] == 0:
            return np.zeros(3 + d + (iu[0].size if full_hessian else d))
        o, jac = map_jacobian(family, theta, z)
        loss, p = _losses(o, y)
        loss0, _ = _losses(map_jacobian(family, theta0, z)[0], y)
        r = p.copy()
        r[np.arange(z.shape[0]), y] -= 1.0
        g = np.einsum("nc,ncd->d", r, jac)
        jbar = np.einsum("nc,ncd->nd", p, jac)
        if full_hessian:
            flat = jac.reshape(-1, d)
            h = (flat * p.reshape(-1, 1)).T @ flat - jbar.T @ jbar
            hv = h[iu]
        else:
            hv = np.einsum("nc,ncd->d", p, jac * jac) - np.sum(jbar * jbar, axis=0)
        delta = loss - loss0
        return np.concatenate(
            [[float(z.shape[0]), float(np.sum(delta))], g, hv, [float(np.sum(delta**2))]]
        )

    return stat


def client_statistics(
    family: str,
    theta: NDArray[np.float64],
    theta0: NDArray[np.float64],
    *,
    full_hessian: bool,
    means: bool,
) -> Any:
    """:func:`client_statistic` of many clients at once: ``batched(z, y, starts) -> (K, size)``.

    The rows of client k are ``starts[k]`` up to the next start. Every
    per-example term (count, loss change, gradient, Hessian entries, squared
    loss change) is computed for all rows in one pass and summed per client
    (``np.add.reduceat``); with ``means`` each row is then divided by the
    client's count as :func:`per_example_means` does. Equal to the per-client
    statistic up to the order of floating-point additions (tested): under DP
    the user-level sketch (:class:`~fedeval.sketches.clipped_sums.ClippedSumSketch`)
    clips and rounds these rows exactly as it does the per-client vectors,
    so the law of the release is unchanged; its rounding can differ by one
    unit where a sum lands within an ulp of a rounding boundary.
    """
    d = theta.size
    iu = np.triu_indices(d)

    def batched(
        z: NDArray[np.float64], y: NDArray[np.int64], starts: NDArray[np.intp]
    ) -> NDArray[np.float64]:
        n = z.shape[0]
        o, jac = map_jacobian(family, theta, z)
        loss, p = _losses(o, y)
        loss0, _ = _losses(map_jacobian(family, theta0, z)[0], y)
        r = p.copy()
        r[np.arange(n), y] -= 1.0
        g = np.einsum("nc,ncd->nd", r, jac)
        jbar = np.einsum("nc,ncd->nd", p, jac)
        if full_hessian:
            h = np.matmul((jac * p[:, :, None]).transpose(0, 2, 1), jac)
            hv = (h - jbar[:, :, None] * jbar[:, None, :])[:, iu[0], iu[1]]
        else:
            hv = np.einsum("nc,ncd->nd", p, jac * jac) - jbar * jbar
        delta = loss - loss0
        per = np.concatenate(
            [np.ones((n, 1)), delta[:, None], g, hv, np.square(delta)[:, None]], axis=1
        )
        sums = np.add.reduceat(per, np.asarray(starts, dtype=np.intp), axis=0)
        if means:
            sizes = np.diff(np.append(starts, n)).astype(np.float64)
            sums = sums / sizes[:, None]
            sums[:, -1] = sums[:, 1] ** 2
        return np.asarray(sums, dtype=np.float64)

    return batched


def per_example_means(stat: Any) -> Any:
    """The statistic divided by the client's example count (module docstring: under DP).

    The last coordinate becomes the square of the client's mean loss change, so
    that the released sums give the spread of the change across clients, the
    units of the client-weighted objective.
    """

    def mean(z: NDArray[np.float64], y: NDArray[np.int64]) -> NDArray[np.float64]:
        v = np.asarray(stat(z, y), dtype=np.float64)
        if not z.shape[0]:
            return v
        v = v / z.shape[0]
        v[-1] = v[1] ** 2
        return v

    return mean


def _quadratic(
    model: tuple[NDArray[np.float64], NDArray[np.float64], float], step: NDArray[np.float64]
) -> float:
    """The quadratic model's change of the mean NLL for ``step``: (gᵀs + ½ sᵀHs) / n̂."""
    g, h, n = model
    return float(g @ step + 0.5 * step @ (h @ step)) / n


@dataclass(frozen=True, eq=False)
class NewtonRun:
    """What :func:`federated_newton` returns.

    Attributes
    ----------
    theta : ndarray
        The returned parameters (θ₀ when do-no-harm declined the map).
    schedule : Rounds
    round_variance : ndarray
        Per-coordinate noise variance of one round's released sums.
    nll_change : float
        Estimated change of the pooled mean NLL of the learned map relative to
        the identity (negative = better), from the releases.
    nll_change_se : float
        Its standard error from the known noise (0 without DP).
    applied : bool
        False when the identity map was returned (do no harm).
    history : list of dict
        Per round: the released (noisy under DP) example count (client count
        under DP, where clients send per-example means) and ΔL/n̂ of the
        evaluated parameters, the step's norm and the trust radius.
    reason : str
        Why the map was declined, with the numbers ("" when applied).
    optimism : float
        d/n̂, added to ``nll_change`` to estimate the held-out change.
    """

    theta: NDArray[np.float64]
    schedule: Rounds
    round_variance: NDArray[np.float64]
    nll_change: float
    nll_change_se: float
    applied: bool
    history: list[dict[str, float]]
    reason: str = ""
    optimism: float = 0.0


def pooled_procedure(
    run: NewtonRun,
    release: str,
    *,
    clip: float | tuple[float, float] | None,
    optimizer: str,
    l2: float,
) -> dict[str, Any]:
    """The calibrator's ``procedure`` record of a pooled-objective fit (Newton or L-BFGS):
    the rounds and their release, the ridge, whether the map was applied and the
    released NLL change with its SE, and the per-round history."""
    rec = procedure_record(run.schedule, release, variance=run.round_variance, clip=clip)
    rec.update(
        optimizer=optimizer,
        l2=l2,
        applied=run.applied,
        estimated_nll_change=run.nll_change,
        estimated_nll_change_se=run.nll_change_se,
        history=run.history,
    )
    if run.optimism:
        rec.update(
            estimated_optimism=run.optimism,
            harm_level=HARM_LEVEL,
            decision=(
                "kept only if the estimated held-out gain -(change + optimism) exceeds "
                f"z_(1-a) = {harm_threshold(HARM_LEVEL):.4g} standard errors (a = {HARM_LEVEL})"
            ),
        )
    return rec


def federated_newton(
    fed: Federation,
    logits: NDArray[np.float64],
    family: str,
    privacy: PrivacyModel,
    *,
    rounds: int,
    sampling_rate: float,
    l2: float,
    max_step: float,
    gen: np.random.Generator,
    ledger: BudgetLedger | None = None,
    do_no_harm: bool = True,
    progress: bool | None = None,
) -> NewtonRun:
    """Federated damped Newton on the pooled NLL of a scaling map (module docstring).

    Raises
    ------
    ValueError, TypeError
        A privacy model the clipped sums cannot be released under, or a (C+, C−) clip.
    BudgetExceededError
        The ledger cannot afford the T rounds (nothing is released).
    """
    clip = client_clip(privacy)
    if isinstance(clip, tuple):
        raise ValueError(
            f"scaling clips each client's sums to one L2 norm C, got the pair {clip!r}"
        )
    c = fed.n_classes
    theta0 = newton_centre(family, c)
    d = theta0.size
    weights = ridge_weights(family, c)
    private = privacy.regime != "exact"
    full = (not private) or d <= FULL_HESSIAN_MAX
    n_h = d * (d + 1) // 2 if full else d
    iu = np.triu_indices(d)
    source = replace(fed, scores=logits)

    def sketch(theta: NDArray[np.float64]) -> ClippedSumSketch:
        stat = client_statistic(family, theta, theta0, full_hessian=full)
        if not private:
            return ClippedSumSketch(stat, 3 + d + n_h, clip)
        # Under DP every client's vector is clipped on its own: all clients' vectors
        # are computed in batches of rows (the per-client loop cost ~0.4 ms a client).
        many = client_statistics(family, theta, theta0, full_hessian=full, means=True)
        return ClippedSumSketch(per_example_means(stat), 3 + d + n_h, clip, many)

    theta = theta0.copy()
    schedule = Rounds(
        source,
        sketch(theta),
        privacy,
        rounds=rounds,
        sampling_rate=sampling_rate,
        rng=gen,
        ledger=ledger,
    )
    # The per-round work is small matrix products: BLAS threads only add
    # contention (as in fedavg, measured many times slower on a loaded 2-core host).
    with one_blas_thread():
        return _rounds(
            schedule, sketch, family, theta0, weights, d, full, iu, private,
            rounds=rounds, l2=l2, max_step=max_step, do_no_harm=do_no_harm, progress=progress,
        )  # fmt: skip


def _rounds(
    schedule: Rounds,
    sketch: Any,
    family: str,
    theta0: NDArray[np.float64],
    weights: NDArray[np.float64],
    d: int,
    full: bool,
    iu: Any,
    private: bool,
    *,
    rounds: int,
    l2: float,
    max_step: float,
    do_no_harm: bool,
    progress: bool | None,
) -> NewtonRun:
    """The T rounds of :func:`federated_newton` (see there)."""
    theta = theta0.copy()
    n_h = d * (d + 1) // 2 if full else d
    variance = np.zeros(3 + d + n_h)
    history: list[dict[str, float]] = []
    # θ, ΔL/n̂, its variance, n̂, and n̂ in noise standard deviations
    accepted: tuple[NDArray[np.float64], float, float, float, float] | None = None
    radius = float(max_step)
    predicted = 0.0
    bar = tqdm(
        range(rounds),
        desc=f"{family} scaling rounds",
        disable=None if progress is None else not progress,
        leave=False,
    )
    step = np.zeros(d)
    model: tuple[NDArray[np.float64], NDArray[np.float64], float] = (step, np.eye(d), 1.0)
    g_old = np.zeros(d)
    for _ in bar:
        rel = schedule.release(sketch(theta))
        v = np.asarray(rel.decode(), dtype=np.float64)
        variance = np.asarray(rel.variance, dtype=np.float64)
        sd = np.sqrt(variance)
        n_used = max(float(v[0]), 2.0 * float(sd[0]), 1.0)
        change = float(v[1]) / n_used
        # The noise on ΔL, and the sampling spread of the per-unit changes
        # (second moment minus the squared mean, over n̂ units).
        spread = max(float(v[-1]) / n_used - change**2, 0.0)
        # Delta method for the ratio ΔL/n̂: the noise of both, and the sampling spread.
        change_var = (
            float(variance[1]) + change**2 * float(variance[0])
        ) / n_used**2 + spread / n_used
        count_z = float(v[0]) / float(sd[0]) if sd[0] > 0 else math.inf
        released = {"released_examples": float(v[0]), "nll_change": change}
        g_raw = v[2 : 2 + d]
        if accepted is not None:
            # Trust region (Nocedal & Wright, Algorithm 4.1). The step's actual
            # change of the mean NLL is estimated by the trapezoid rule on the
            # released mean gradients at both ends, ½(ḡ_old + ḡ_new)·s: exact to
            # O(‖s‖³), and its sampling / noise error shrinks with the step,
            # unlike a difference of two released losses over different samples.
            g_new = g_raw / n_used + l2 * weights * (theta - theta0)
            actual = 0.5 * float((g_old + g_new) @ step)
            rho = actual / predicted if predicted < 0 else 1.0
            if rho < 0.25:
                radius *= 0.25
                history.append({**released, "step": 0.0, "radius": radius})
                theta = accepted[0] + step * 0.25
                step = step * 0.25
                predicted = _quadratic(model, step)
                continue
            if rho > 0.75:
                radius *= 2.0
        accepted = (theta.copy(), change, change_var, n_used, count_z)
        g = g_raw
        hv = v[2 + d : 2 + d + n_h]
        if full:
            h = np.zeros((d, d))
            h[iu] = hv
            h = h + np.triu(h, 1).T
        else:
            h = np.diag(hv)
        lam = l2 * n_used
        mu = 2.0 * float(np.max(sd[2 + d : 2 + d + n_h])) * math.sqrt(d) if private else 0.0
        if private:
            g2 = float(g @ g)
            noise2 = float(np.sum(variance[2 : 2 + d]))
            g = g * (max(0.0, 1.0 - noise2 / g2) if g2 > 0 else 0.0)
        grad = g + lam * weights * (theta - theta0)
        eig, vec = np.linalg.eigh(h)
        h_psd = (vec * np.maximum(eig, 0.0)) @ vec.T + np.diag(lam * weights + mu)
        eig, vec = np.linalg.eigh(h_psd)
        eig = np.maximum(eig, 1e-12 * n_used)
        step = -(vec @ ((vec.T @ grad) / eig))
        # The radius is measured in the metric of the per-example Hessian (the
        # change of the logits in nats), which does not depend on the scale of
        # the logits or of the parameters.
        metric = math.sqrt(max(float(step @ h_psd @ step), 0.0) / n_used)
        if metric > radius:
            step = step * (radius / metric)
        # Overconfident inputs have a nearly flat NLL at the identity (p ≈ one-hot),
        # so the Hessian metric alone allows huge steps: also cap every
        # parameter's move at MAX_PARAMETER_STEP (the identity's parameters are O(1)).
        largest = float(np.max(np.abs(step))) if d else 0.0
        if largest > MAX_PARAMETER_STEP:
            step = step * (MAX_PARAMETER_STEP / largest)

        model = (grad, h_psd, n_used)
        g_old = (g_raw + lam * weights * (theta - theta0)) / n_used
        predicted = _quadratic(model, step)
        history.append({**released, "step": float(np.sqrt(step @ step)), "radius": radius})
        theta = theta + step
        if family == "temperature":
            theta = np.clip(theta, 1e-3, 1e3)
    assert accepted is not None
    proposal = theta
    theta, estimate, est_var, n_hat, count_z = accepted
    se = math.sqrt(est_var)
    if np.array_equal(theta, theta0) and predicted < 0.0:
        # No step was ever evaluated (T = 1, or every step rejected): the last
        # proposal, judged by the quadratic model of its own round's release.
        theta, estimate = proposal, estimate + predicted
    applied = True
    reason = ""
    # Each evaluated unit took part in the fit with probability ≈ q per round, and
    # the fit saw ≈ n̂/q distinct units: optimism d·(fraction in the fit)/(units in
    # the fit) = d·q/n̂ (d/n̂ when every round sees every unit).
    optimism = d * schedule.mechanism.sampling_rate / n_hat
    gain = -(estimate + optimism)
    z = harm_threshold(HARM_LEVEL)
    units = "client" if private else "example"
    if do_no_harm and count_z < MIN_COUNT_Z:
        applied = False
        reason = (
            f"the released number of {units}s of the evaluating round is within "
            f"{MIN_COUNT_Z:g} noise standard deviations of 0 ({count_z:.2g} of them), so its "
            "released NLL change (a ratio over that count) is no estimate"
        )
    elif do_no_harm and not gain > z * se:
        applied = False
        reason = (
            f"the estimated held-out change of the NLL is {estimate:+.4g} (released, in-sample) "
            f"+ {optimism:#.2g} (optimism of {d} fitted parameter(s)) = {-gain:+.4g} "
            f"± {se:#.2g} (standard error) per {units}; the map is kept only if its gain "
            f"exceeds {z:.3g} standard errors (one-sided level {HARM_LEVEL})"
        )
    if not applied:
        warn_degenerate(
            f"{family} scaling was not applied: {reason}; returning the identity map. More "
            "clients, rounds or budget, or another clip, would let the map be learned."
        )
        theta = theta0.copy()
    return NewtonRun(theta, schedule, variance, estimate, se, applied, history, reason, optimism)
