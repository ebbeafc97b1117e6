"""FedAvg of local fits over T Poisson-sampled rounds (DP-FedAvg under user-level DP).

Every round the server samples clients with probability q; each sampled client
fits the scaler locally from the current global parameters (L-BFGS-B on its
mean negative log-likelihood with analytic gradients, at most ``max_iter``
iterations, 50 as in the multiclass paper's Appendix A.6) and sends its update,
clipped to L2 norm C under user-level DP
(:class:`~fedeval.sketches.scaler_updates.ScalerUpdateSketch`). The sums are
released by :class:`fedeval.aggregation.Rounds`, which charges the budget of
all T rounds once and adds the noise of every round.

The server step
---------------
Without DP the server averages the updates of the clients that took part
(secure aggregation claims no DP, so their number may be used). With DP it
uses McMahan et al.'s (2018) *fixed-denominator* estimator: the noisy sum
divided by q·K, the expected number of participants, so that one client moves
the step by at most C/(qK) whatever the others do. K must not be the true
number of clients: under user-level DP adding or removing a whole client is
what is protected, and an exact K (or the exact number of participations,
T·K at q = 1) would reveal it. K is therefore

* ``population``: a size the user declares (a public input, stated in the
  receipt's public inputs and in the calibrator's ``procedure``); any public
  value keeps the guarantee, since dividing by a constant is post-processing;
  a value far from the real K only changes the step size; or, when it is not
  given,
* a **released count** of the clients (:class:`~fedeval.sketches.client_count.ClientCountSketch`,
  sensitivity 1 per client) under the same privacy model with
  ``POPULATION_BUDGET_SHARE`` (5%) of ε and δ; the rounds get the other 95%.
  The two releases compose sequentially (ε and δ add), the receipt lists both
  and both are charged to the ledger together, before any noise is drawn.
  The noisy count K̂ is floored at max(2σ, 1), σ its noise standard deviation
  (post-processing): a count swamped by its noise would otherwise give a
  tiny or negative denominator and a step that explodes, whereas the floor
  only shrinks the step towards the current calibrator.

References
----------
.. [1] Private federated multiclass post-hoc calibration, Algorithm 2, §4.2–4.3,
   Appendix B.2.
.. [2] H. B. McMahan, D. Ramage, K. Talwar and L. Zhang, "Learning
   differentially private recurrent language models", ICLR 2018, §2
   (DP-FedAvg; the fixed-denominator estimator f̃_f = Σ_k Δ_k / (qW)).
.. [3] T. Li, A. K. Sahu, M. Zaheer, M. Sanjabi, A. Talwalkar and V. Smith,
   "Federated optimization in heterogeneous networks", MLSys 2020 (FedProx:
   the local proximal term (μ/2)‖w − w_t‖²).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import minimize
from threadpoolctl import ThreadpoolController

from fedeval.aggregation import Rounds, release, reserve
from fedeval.calibration.base import warn_degenerate
from fedeval.data import Federation
from fedeval.privacy.ledger import BudgetLedger
from fedeval.privacy.mechanism_for import client_clip
from fedeval.privacy.models import PrivacyModel
from fedeval.privacy.receipt import Receipt, compose
from fedeval.sketches.client_count import ClientCountSketch
from fedeval.sketches.scaler_updates import ScalerUpdateSketch
from fedeval.validation import check_int_at_least

__all__ = [
    "POPULATION_BUDGET_SHARE",
    "FedAvgRun",
    "Objective",
    "fedavg",
    "fit_local",
    "one_blas_thread",
]

#: Share of ε and δ spent on releasing the number of clients when no population is declared.
POPULATION_BUDGET_SHARE = 0.05

Objective = Callable[
    [NDArray[np.float64], NDArray[np.float64], NDArray[np.int64]],
    tuple[float, NDArray[np.float64]],
]


def fit_local(
    objective: Objective,
    w0: NDArray[np.float64],
    z: NDArray[np.float64],
    y: NDArray[np.int64],
    *,
    max_iter: int,
    bounds: list[tuple[float | None, float | None]] | None = None,
    prox: float = 0.0,
) -> NDArray[np.float64]:
    """One client's local fit: L-BFGS-B from ``w0`` on ``objective(w, z, y) -> (loss, grad)``.

    With ``prox`` = μ > 0 the client minimises ``objective + (μ/2)‖w − w0‖²``
    (FedProx, Li et al. 2020): the proximal term keeps its update a damped step
    from the server's parameters instead of its own optimum, which on a
    label-skewed client (one or two classes) lies far from the pooled one.
    """
    fun = objective
    if prox > 0:
        start = np.array(w0, dtype=np.float64, copy=True)

        def fun(
            w: NDArray[np.float64], zz: NDArray[np.float64], yy: NDArray[np.int64]
        ) -> tuple[float, NDArray[np.float64]]:
            loss, grad = objective(w, zz, yy)
            d = w - start
            return loss + 0.5 * prox * float(d @ d), grad + prox * d

    res = minimize(
        fun,
        w0,
        args=(z, y),
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={"maxiter": max_iter, "gtol": 1e-10, "ftol": 1e-14},
    )
    w = np.asarray(res.x, dtype=np.float64)
    return w if np.isfinite(w).all() else np.array(w0, copy=True)


@dataclass(frozen=True, eq=False)
class FedAvgRun:
    """What :func:`fedavg` returns.

    Attributes
    ----------
    params : ndarray
        w_T, the final parameters.
    schedule : Rounds
        The charged rounds (their mechanism's receipt and noise).
    receipt : Receipt
        The receipt of everything released: the rounds alone, or the released
        client count composed with the rounds.
    population : dict
        JSON-able record of the denominator's K: where it came from, and the
        declared or released (noisy) value; no exact count.
    round_variance : ndarray
        Per-coordinate noise variance of one round's released sum of updates.
    """

    params: NDArray[np.float64]
    schedule: Rounds
    receipt: Receipt
    population: dict[str, Any]
    round_variance: NDArray[np.float64]


def fedavg(
    fed: Federation,
    logits: NDArray[np.float64],
    w0: NDArray[np.float64],
    objective: Objective,
    privacy: PrivacyModel,
    *,
    rounds: int,
    sampling_rate: float,
    max_iter: int,
    server_lr: float,
    gen: np.random.Generator,
    ledger: BudgetLedger | None = None,
    bounds: list[tuple[float | None, float | None]] | None = None,
    project: Callable[[NDArray[np.float64]], NDArray[np.float64]] | None = None,
    population: int | None = None,
    prox: float = 0.0,
) -> FedAvgRun:
    """FedAvg (DP-FedAvg under user-level DP) of local L-BFGS-B fits over T rounds.

    Parameters
    ----------
    prox : float
        μ ≥ 0 of each local fit's proximal term (μ/2)‖w − w_t‖² (FedProx,
        :func:`fit_local`); 0 fits each client to its own optimum, as the
        multiclass paper's Algorithm 2.
    population : int, optional
        K ≥ 1 of the DP step's denominator q·K, declared public by the user.
        Default under DP: a count of the clients released with
        ``POPULATION_BUDGET_SHARE`` of the budget (module docstring). Unused
        without DP (the step then averages over the clients that took part).

    Returns
    -------
    FedAvgRun

    Raises
    ------
    BudgetExceededError
        The ledger cannot afford the rounds and the count (nothing is charged
        or computed).
    TypeError, ValueError
        A privacy model the clipped updates cannot be released under; a
        population that is not an integer ≥ 1.

    References
    ----------
    .. [1] McMahan et al. (2018), DP-FedAvg, fixed-denominator estimator.
    """
    clip = client_clip(privacy)
    if isinstance(clip, tuple):
        raise ValueError(f"scaling clips updates to one L2 norm C, got the pair {clip!r}")
    declared = None if population is None else check_int_at_least(population, 1, name="population")
    source = replace(fed, scores=logits)

    def fit(
        w: NDArray[np.float64], z: NDArray[np.float64], y: NDArray[np.int64]
    ) -> NDArray[np.float64]:
        return fit_local(objective, w, z, y, max_iter=max_iter, bounds=bounds, prox=prox)

    w = np.array(w0, dtype=np.float64, copy=True)
    private = privacy.regime != "exact"
    count_needed = private and declared is None
    # The rounds and, without a declared population, the count are reserved together:
    # all or nothing, before any noise is drawn (aggregation.reserve, the one place).
    rounds_model = privacy.scaled(1.0 - POPULATION_BUDGET_SHARE) if count_needed else privacy
    requests: list[Any] = [
        (
            rounds_model,
            ScalerUpdateSketch(fit, w, clip),
            {"rounds": rounds, "sampling_rate": sampling_rate},
        )
    ]
    if count_needed:
        requests.append((privacy.scaled(POPULATION_BUDGET_SHARE), ClientCountSketch()))
    tickets = reserve(ledger, requests, n_clients=fed.n_clients)
    schedule = Rounds(source, ScalerUpdateSketch(fit, w, clip), rng=gen, reservation=tickets[0])
    receipt = schedule.mechanism.receipt
    record: dict[str, Any]
    denominator = math.nan
    if not private:
        record = {"source": "none: without DP every round averages over the clients that took part"}
    elif declared is not None:
        denominator = sampling_rate * declared
        record = {"source": "declared by the user (public input)", "value": declared}
        g = receipt.guarantee
        public = (*g.public, f"the population size K = {declared} (declared)")
        receipt = replace(receipt, guarantee=replace(g, public=public))
    else:
        counted = release(fed, ClientCountSketch(), reservation=tickets[1], rng=gen)
        k_hat = float(counted.decode())
        sd = float(np.sqrt(counted.variance[0]))
        k_used = max(k_hat, 2.0 * sd, 1.0)
        if k_used > k_hat:
            warn_degenerate(
                f"the released number of clients K̂ = {k_hat:.4g} is below twice its noise "
                f"standard deviation ({sd:.4g}); the DP-FedAvg step divides by q·{k_used:.4g} "
                "instead, which shrinks it. Declare population=K (a public population size) "
                "for a step of the intended size."
            )
        denominator = sampling_rate * k_used
        record = {
            "source": "released: the number of clients, under the same privacy model",
            "budget_share": POPULATION_BUDGET_SHARE,
            "value": k_hat,
            "noise_std": sd,
            "used": k_used,
            "post_processing": "K̂ floored at max(2σ, 1)",
        }
        rounds_receipt = receipt
        receipt = replace(
            compose(
                [rounds_receipt, counted.receipt],
                "DP-FedAvg with a released population size: [1] the rounds "
                f"({1 - POPULATION_BUDGET_SHARE:.0%} of the budget), [2] the number of clients "
                f"({POPULATION_BUDGET_SHARE:.0%})",
            ),
            model=privacy.describe(),
            sensitivity=rounds_receipt.sensitivity,
        )
    # Local fits are tiny (tens to thousands of parameters); OpenBLAS threads
    # only add contention there (measured 30x slower on a loaded 2-core host).
    variance = np.zeros(w.size)
    with one_blas_thread():
        for _ in range(rounds):
            rel = schedule.release(ScalerUpdateSketch(fit, w, clip))
            total = np.asarray(rel.decode(), dtype=np.float64)
            variance = np.asarray(rel.variance, dtype=np.float64)
            if not schedule.private:
                if rel.n_clients == 0:
                    continue
                w = w + server_lr * total / rel.n_clients
            else:
                w = w + server_lr * total / denominator
            if project is not None:
                w = project(w)
    return FedAvgRun(w, schedule, receipt, record, variance)


@cache
def _threadpools() -> ThreadpoolController:
    """The loaded BLAS libraries, found once (finding them reads /proc/self/maps: ~3-6 ms)."""
    return ThreadpoolController()


def one_blas_thread() -> Any:
    """Context manager: BLAS on one thread (the calibrators' per-round algebra is tiny)."""
    return _threadpools().limit(limits=1, user_api="blas")
