"""Federated L-BFGS on the pooled NLL from released sums of losses and gradients.

For a scaler with too many parameters to release a Hessian (FedCal's MLP has
thousands), each round releases only first-order sums, like the federated
Newton scalers (:mod:`fedeval.calibration.newton`) release second-order ones:

1. every round, each sampled client sends the vector ``[n_k, ΔL_k, g_k]`` of
   its examples at the server's parameters θ: its example count, its summed
   loss change from the starting map θ₀, ``Σ ℓ_i(θ) − ℓ_i(θ₀)``, and its
   summed NLL gradient;
2. the sums are released by :class:`fedeval.aggregation.Rounds` through
   :class:`~fedeval.sketches.clipped_sums.ClippedSumSketch`, the same clipped
   statistic-sum release as the Newton scalers (exact under secure
   aggregation; each client's vector clipped to L2 norm C, discrete Gaussian
   noise every round and the T rounds composed and charged once under
   user-level DP);
3. the server keeps the last ``MEMORY`` curvature pairs (s, y) of accepted
   steps and takes the L-BFGS step ``s = −H ḡ`` (two-loop recursion, Nocedal &
   Wright Algorithm 7.4, initial scaling sᵀy / yᵀy) on the mean gradient ḡ of
   the ridge objective mean NLL + (λ/2)‖θ − θ₀‖².

Choices where nothing is prescribed (documented and tested):

* Step acceptance. The next round's released gradient at θ + s gives the
  step's change of the mean objective by the trapezoid rule,
  ½(ḡ(θ) + ḡ(θ + s))·s (exact for a quadratic; its sampling and noise error
  shrinks with the step, unlike a difference of two released losses over
  different client samples). The step is accepted if that change is below
  ``c₁ ḡ(θ)·s`` (Armijo, c₁ = 10⁻⁴) and the released mean loss change
  did not rise by more than |ḡ(θ)·s| plus two noise standard errors (a
  guard for steps far outside the quadratic regime, where the trapezoid rule
  fails: a first step of 0.5 per weight raised the pooled NLL by 0.86 nats
  and passed the trapezoid test; the allowance keeps client-sampling noise
  in the released losses from rejecting good steps); otherwise the server
  backtracks to the
  minimiser of the one-dimensional quadratic through the two directional
  derivatives, kept in [0.1, 0.5] of the step.
* The first step (no curvature yet) moves the parameter with the largest
  gradient by ``max_step``; every step is capped so that no parameter moves
  by more than ``max_step``.
* A pair (s, y) is kept only if sᵀy > 10⁻⁸ ‖s‖ ‖y‖ (positive curvature), so
  the inverse-Hessian approximation stays positive definite with noisy or
  sampled gradients.
* Under DP the released gradient is shrunk by the positive-part James–Stein
  factor max(0, 1 − d σ² / ‖ĝ‖²), as in the Newton scalers: a gradient buried
  in noise gives no step.
* The example count n̂ dividing the sums is floored at max(2σ, 1).
* The returned map is the last accepted parameters, whose pooled NLL change
  ΔL/n̂ a round released; the last round's proposal is never evaluated, so it
  is not returned (T = 1 therefore returns θ₀).
* Do no harm: unless that released change is below 0 by one standard error
  of its noise, the starting map is returned with a warning giving the numbers
  (as the Newton scalers).

References
----------
.. [1] J. Nocedal and S. Wright, Numerical Optimization, 2nd ed., §7.2
   (L-BFGS, Algorithm 7.4), §3.1 and §3.5 (Armijo condition, interpolation).
.. [2] Private federated multiclass post-hoc calibration, §4.3 (clipping and
   Gaussian noise).
.. [3] W. James and C. Stein (1961), positive-part shrinkage.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
from numpy.typing import NDArray
from tqdm.auto import tqdm

from fedeval.aggregation import Rounds
from fedeval.calibration.base import warn_degenerate
from fedeval.calibration.fedavg import one_blas_thread
from fedeval.calibration.newton import NewtonRun
from fedeval.data import Federation
from fedeval.privacy.ledger import BudgetLedger
from fedeval.privacy.mechanism_for import client_clip
from fedeval.privacy.models import PrivacyModel
from fedeval.sketches.clipped_sums import ClippedSumSketch

__all__ = ["MEMORY", "LBFGSRun", "federated_lbfgs", "two_loop"]

#: Curvature pairs kept by the server.
MEMORY = 10
_ARMIJO = 1e-4
#: The first step (no curvature pair yet) moves the largest-gradient weight by this share of ``max_step``.
FIRST_STEP = 0.2

#: ``loss_and_grad(θ, z, y) -> (summed loss, summed gradient)`` over the given examples.
SumObjective = Callable[
    [NDArray[np.float64], NDArray[np.float64], NDArray[np.int64]],
    tuple[float, NDArray[np.float64]],
]
#: ``sums(θ, z, y, starts) -> (K, 2 + d)``: each client's ``[n, ΔL, g]`` at once (optional).
ClientSums = Callable[
    [NDArray[np.float64], NDArray[np.float64], NDArray[np.int64], NDArray[np.intp]],
    NDArray[np.float64],
]


def two_loop(
    grad: NDArray[np.float64], pairs: list[tuple[NDArray[np.float64], NDArray[np.float64]]]
) -> NDArray[np.float64]:
    """H·grad for the L-BFGS inverse Hessian of ``pairs`` (Nocedal & Wright, Algorithm 7.4).

    ``pairs`` are (s, y), oldest first, each with sᵀy > 0; H₀ = (sᵀy / yᵀy) I of
    the newest pair (the identity without pairs).
    """
    q = np.array(grad, dtype=np.float64, copy=True)
    alphas = []
    for s, y in reversed(pairs):
        rho = 1.0 / float(y @ s)
        a = rho * float(s @ q)
        q -= a * y
        alphas.append((a, rho, s, y))
    if pairs:
        s, y = pairs[-1]
        q *= float(s @ y) / float(y @ y)
    for a, rho, s, y in reversed(alphas):
        b = rho * float(y @ q)
        q += (a - b) * s
    return q


#: What :func:`federated_lbfgs` returns: the same record as a Newton run
#: (parameters, rounds, released ΔNLL and its SE, applied, per-round history).
LBFGSRun = NewtonRun


def _statistic(
    objective: SumObjective, theta: NDArray[np.float64], theta0: NDArray[np.float64]
) -> Callable[[NDArray[np.float64], NDArray[np.int64]], NDArray[np.float64]]:
    d = theta.size

    def stat(z: NDArray[np.float64], y: NDArray[np.int64]) -> NDArray[np.float64]:
        if z.shape[0] == 0:
            return np.zeros(2 + d)
        loss, grad = objective(theta, z, y)
        loss0, _ = objective(theta0, z, y)
        return np.concatenate([[float(z.shape[0]), loss - loss0], grad])

    return stat


def federated_lbfgs(
    fed: Federation,
    logits: NDArray[np.float64],
    theta0: NDArray[np.float64],
    objective: SumObjective,
    privacy: PrivacyModel,
    *,
    name: str,
    rounds: int,
    sampling_rate: float,
    l2: float,
    max_step: float,
    gen: np.random.Generator,
    ledger: BudgetLedger | None = None,
    do_no_harm: bool = True,
    progress: bool | None = None,
    client_sums: ClientSums | None = None,
) -> LBFGSRun:
    """Federated L-BFGS on the pooled ridge NLL (module docstring).

    ``objective(θ, z, y)`` gives the summed loss and gradient over examples;
    ``client_sums``, when given, the clients' ``[n, ΔL, g]`` vectors at once
    (used for the clipped per-client vectors under DP; it must agree with
    ``objective``).

    Raises
    ------
    ValueError, TypeError
        A privacy model the clipped sums cannot be released under, or a (C+, C−) clip.
    BudgetExceededError
        The ledger cannot afford the T rounds (nothing is released).
    """
    clip = client_clip(privacy)
    if isinstance(clip, tuple):
        raise ValueError(f"{name} clips each client's sums to one L2 norm C, got the pair {clip!r}")
    d = theta0.size
    source = replace(fed, scores=logits)

    def sketch(theta: NDArray[np.float64]) -> ClippedSumSketch:
        batched = None
        if client_sums is not None:
            sums = client_sums

            def batched(
                z: NDArray[np.float64], y: NDArray[np.int64], starts: NDArray[np.intp]
            ) -> NDArray[np.float64]:
                return sums(theta, z, y, starts)

        return ClippedSumSketch(_statistic(objective, theta, theta0), 2 + d, clip, batched)

    schedule = Rounds(
        source,
        sketch(theta0),
        privacy,
        rounds=rounds,
        sampling_rate=sampling_rate,
        rng=gen,
        ledger=ledger,
    )
    private = privacy.regime != "exact"
    with one_blas_thread():
        return _rounds(
            schedule, sketch, name, theta0, private, rounds=rounds, l2=l2,
            max_step=max_step, do_no_harm=do_no_harm, progress=progress,
        )  # fmt: skip


def _rounds(
    schedule: Rounds,
    sketch: Any,
    name: str,
    theta0: NDArray[np.float64],
    private: bool,
    *,
    rounds: int,
    l2: float,
    max_step: float,
    do_no_harm: bool,
    progress: bool | None,
) -> LBFGSRun:
    """The T rounds of :func:`federated_lbfgs`."""
    d = theta0.size
    theta = theta0.copy()
    variance = np.zeros(2 + d)
    history: list[dict[str, float]] = []
    pairs: list[tuple[NDArray[np.float64], NDArray[np.float64]]] = []
    accepted: tuple[NDArray[np.float64], float, float] | None = None
    step = np.zeros(d)
    g_old = np.zeros(d)
    bar = tqdm(
        range(rounds),
        desc=f"{name} rounds",
        disable=None if progress is None else not progress,
        leave=False,
    )
    for _ in bar:
        rel = schedule.release(sketch(theta))
        v = np.asarray(rel.decode(), dtype=np.float64)
        variance = np.asarray(rel.variance, dtype=np.float64)
        sd = np.sqrt(variance)
        n_used = max(float(v[0]), 2.0 * float(sd[0]), 1.0)
        change, change_var = float(v[1]) / n_used, float(variance[1]) / n_used**2
        released = {"released_examples": float(v[0]), "nll_change": change}
        g = v[2:]
        if private:
            g2 = float(g @ g)
            noise2 = float(np.sum(variance[2:]))
            g = g * (max(0.0, 1.0 - noise2 / g2) if g2 > 0 else 0.0)
        g_new = g / n_used + l2 * (theta - theta0)
        if accepted is not None:
            slope0 = float(g_old @ step)
            slope1 = float(g_new @ step)
            actual = 0.5 * (slope0 + slope1)
            rise = change - accepted[1]
            if not (
                actual <= _ARMIJO * slope0
                and rise <= 2.0 * math.sqrt(change_var + accepted[2]) - slope0
            ):
                # Backtrack to the minimiser of the quadratic with these end slopes.
                alpha = slope0 / (slope0 - slope1) if slope1 > slope0 else 0.25
                alpha = min(max(alpha, 0.1), 0.5)
                step = step * alpha
                theta = accepted[0] + step
                history.append({**released, "step": 0.0})
                continue
            y = g_new - g_old
            sy = float(step @ y)
            if sy > 1e-8 * math.sqrt(float(step @ step) * float(y @ y)):
                pairs = [*pairs, (step, y)][-MEMORY:]
        accepted = (theta.copy(), change, change_var)
        g_old = g_new
        step = -two_loop(g_new, pairs)
        largest = float(np.max(np.abs(step))) if d else 0.0
        cap = max_step * (FIRST_STEP if not pairs else 1.0)
        if largest > 0 and (not pairs or largest > cap):
            step = step * (cap / largest)
        history.append({**released, "step": float(np.sqrt(step @ step))})
        theta = theta + step
    assert accepted is not None
    theta, estimate, est_var = accepted
    se = math.sqrt(est_var)
    applied = not np.array_equal(theta, theta0)
    if do_no_harm and applied and not estimate + se < 0.0:
        applied = False
        warn_degenerate(
            f"{name} was not applied: the estimated change of the pooled NLL is "
            f"{estimate:+.4g} ± {se:.2g} (standard error) per example, not clearly below 0; "
            "returning the starting map. More clients, rounds or budget, or another clip, "
            "would let the map be learned."
        )
        theta = theta0.copy()
    return LBFGSRun(theta, schedule, variance, estimate, se, applied, history)
