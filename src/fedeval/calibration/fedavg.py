"""FedAvg of local fits over T Poisson-sampled rounds (DP-FedAvg under user-level DP).

Every round the server samples clients with probability p; each sampled client
fits the scaler locally from the current global parameters (L-BFGS-B on its
mean negative log-likelihood with analytic gradients, at most ``max_iter``
iterations, 50 as in the multiclass paper's Appendix A.6) and sends its update,
clipped to L2 norm C under user-level DP
(:class:`~fedeval.sketches.scaler_updates.ScalerUpdateSketch`). The sums are
released by :class:`fedeval.aggregation.Rounds`, which charges the budget of
all T rounds once and adds the Gaussian noise of every round. Without DP the
server averages the updates of the clients that took part; with DP it divides
the noisy sum by the expected number of participants pK, so that one client
moves the step by at most C/(pK) (McMahan et al. 2018).

References
----------
.. [1] Private federated multiclass post-hoc calibration, Algorithm 2, §4.2–4.3,
   Appendix B.2; McMahan et al. (2018), DP-FedAvg.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import minimize
from threadpoolctl import threadpool_limits

from fedeval.aggregation import Rounds
from fedeval.data import Federation
from fedeval.privacy.ledger import BudgetLedger
from fedeval.privacy.mechanism_for import client_clip
from fedeval.privacy.models import PrivacyModel
from fedeval.sketches.scaler_updates import ScalerUpdateSketch

__all__ = ["Objective", "fedavg", "fit_local"]

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
) -> tuple[NDArray[np.float64], Rounds]:
    """FedAvg (DP-FedAvg under user-level DP) of local L-BFGS-B fits over T rounds.

    Returns
    -------
    (w_T, rounds)
        The final parameters and the charged :class:`Rounds` (its mechanism's
        receipt, and the participations).

    Raises
    ------
    BudgetExceededError
        The ledger cannot afford the rounds (nothing is computed).
    TypeError, ValueError
        A privacy model the clipped updates cannot be released under.
    """
    clip = client_clip(privacy)
    if isinstance(clip, tuple):
        raise ValueError(f"scaling clips updates to one L2 norm C, got the pair {clip!r}")
    source = replace(fed, scores=logits)

    def fit(
        w: NDArray[np.float64], z: NDArray[np.float64], y: NDArray[np.int64]
    ) -> NDArray[np.float64]:
        return fit_local(objective, w, z, y, max_iter=max_iter, bounds=bounds)

    w = np.array(w0, dtype=np.float64, copy=True)
    schedule = Rounds(
        source,
        ScalerUpdateSketch(fit, w, clip),
        privacy,
        rounds=rounds,
        sampling_rate=sampling_rate,
        rng=gen,
        ledger=ledger,
    )
    # Local fits are tiny (tens to thousands of parameters); OpenBLAS threads
    # only add contention there (measured 30x slower on a loaded 2-core host).
    with threadpool_limits(limits=1, user_api="blas"):
        for _ in range(rounds):
            rel = schedule.release(ScalerUpdateSketch(fit, w, clip))
            total = np.asarray(rel.decode(), dtype=np.float64)
            if not schedule.private:
                if rel.n_clients == 0:
                    continue
                w = w + server_lr * total / rel.n_clients
            else:
                w = w + server_lr * total / (sampling_rate * fed.n_clients)
            if project is not None:
                w = project(w)
    return w, schedule
