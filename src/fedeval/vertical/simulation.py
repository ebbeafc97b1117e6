"""Repeated-run simulation of the paper's settings (Sun et al. 2023, §6), vectorised.

The client assignment is drawn once per call; every repetition redraws all DP
noise (RR label flips, or the clients' Laplace/Gaussian noise). The fast path
samples only what the server's estimate depends on:

* RR: the flips of all M labels per repetition (blocks of repetitions, matrix
  products instead of per-client loops).
* Laplace: the totals Σ_k s1_k, Σ_k r̄_k s1_k and Σ_k s2_k. When every client
  has the same scale b, a sum of K Laplace(b) draws is sampled exactly as
  b·(G₁ - G₂) with G₁, G₂ ~ Gamma(K, 1); otherwise per-client draws in blocks.
* Gaussian: the totals are jointly Gaussian and are drawn exactly from their
  2 × 2 covariance.

All of these are exact in distribution; the tests compare them with repeated
calls of :func:`fedeval.vertical.auc` (the faithful path).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import get_args

import numpy as np
from numpy.typing import ArrayLike, NDArray

from fedeval.randomness import RNGLike, as_generator
from fedeval.validation import (
    check_binary_labels,
    check_epsilon,
    check_int_at_least,
    check_probability,
    check_scores,
)
from fedeval.vertical.estimate import Mechanism, _parse_mechanism
from fedeval.vertical.laplace import (
    Allocation,
    NoisePlan,
    laplace_variance_delta,
    noise_plan,
)
from fedeval.vertical.protocol import (
    Assignment,
    _build_protocol,
    _local_statistics,
    _mid_ranks,
    assign_clients,
    auc_from_rank_sum,
)
from fedeval.vertical.randomized_response import (
    debias_auc,
    flip_probability,
    rr_variance_delta,
)

__all__ = ["SimulationResult", "simulate"]

# Largest number of noise draws held in memory at once (8 bytes each).
_BLOCK = 1 << 21


@dataclass(frozen=True)
class SimulationResult:
    """Mean and spread of the estimated AUC over repetitions.

    Attributes
    ----------
    mean, std : float
        Mean and sample standard deviation (ddof = 1) of the finite estimates.
    true_auc : float
        The exact AUC (eq. 1 without noise).
    predicted_std : float
        The delta-method standard deviation at the true P and AUC
        (:func:`rr_variance_delta` or :func:`laplace_variance_delta`); 0 without noise.
    n_reps : int
    n_invalid : int
        Repetitions whose estimate was undefined (noisy counts outside (0, M)).
    estimates : ndarray, shape (n_reps,)
    mechanism, assignment : str
    epsilon : float or None
    n_clients : int
    allocation : str or None
    alpha, beta, delta : float or None
    exact_counts : bool
    """

    mean: float
    std: float
    true_auc: float
    predicted_std: float
    n_reps: int
    n_invalid: int
    mechanism: str
    epsilon: float | None
    n_clients: int
    assignment: str
    allocation: str | None
    alpha: float | None
    beta: float | None
    delta: float | None
    exact_counts: bool
    estimates: NDArray[np.float64] = field(repr=False, compare=False)


def _laplace_total(
    scale: NDArray[np.float64], n: int, gen: np.random.Generator
) -> NDArray[np.float64]:
    """n draws of Σ_k Lap(scale_k)."""
    k = scale.shape[0]
    if np.all(scale == scale[0]):
        if scale[0] == 0:
            return np.zeros(n)
        # Lap(b) = b(E₁ - E₂) with E exponential, so a sum of K is b(G₁ - G₂), G ~ Gamma(K).
        return scale[0] * (gen.standard_gamma(k, n) - gen.standard_gamma(k, n))
    out = np.empty(n)
    rows = max(1, _BLOCK // k)
    for start in range(0, n, rows):
        stop = min(n, start + rows)
        out[start:stop] = gen.laplace(0.0, scale, (stop - start, k)).sum(axis=1)
    return out


def _noise_totals(
    plan: NoisePlan, n: int, gen: np.random.Generator
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """n draws of (Σ_k noise in localSum'_k, Σ_k noise in localP'_k)."""
    a = plan.pos_weight
    if plan.noise == "gaussian":
        v1, v2 = plan.pos_variance, plan.sum_variance
        var_pos = float(v1.sum())
        cov = float(a @ v1)
        var_sum = float((a * a) @ v1 + v2.sum())
        z1, z2 = gen.standard_normal(n), gen.standard_normal(n)
        e_pos = math.sqrt(var_pos) * z1
        e_sum = cov / math.sqrt(var_pos) * z1 + math.sqrt(max(var_sum - cov**2 / var_pos, 0.0)) * z2
        return e_sum, e_pos
    if not a.any():
        e_pos = _laplace_total(plan.pos_scale, n, gen)
        return _laplace_total(plan.sum_scale, n, gen), e_pos
    k = a.shape[0]
    e_pos = np.empty(n)
    e_sum = np.empty(n)
    rows = max(1, _BLOCK // k)
    for start in range(0, n, rows):
        stop = min(n, start + rows)
        s1 = gen.laplace(0.0, plan.pos_scale, (stop - start, k))
        e_pos[start:stop] = s1.sum(axis=1)
        e_sum[start:stop] = s1 @ a
    return e_sum + _laplace_total(plan.sum_scale, n, gen), e_pos


def simulate(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    n_clients: int,
    epsilon: float | None,
    assignment: Assignment = "iid",
    mechanism: Mechanism = "local-laplace",
    allocation: Allocation = "fixed",
    alpha: float = 0.5,
    beta: float = 0.5,
    delta: float | None = None,
    n_reps: int = 100,
    exact_counts: bool = False,
    rng: RNGLike = None,
) -> SimulationResult:
    """Repeat a vertical-FL AUC mechanism and report the mean and std of the estimates.

    Parameters
    ----------
    scores : array_like, shape (M,)
    labels : array_like of {0, 1}, shape (M,)
    n_clients : int
        K, from 1 to M (M gives one example per client).
    epsilon : float or None
        ε > 0, or None for the exact protocol (std 0).
    assignment : {"iid", "by-score"}
        How examples are split (see :func:`assign_clients`): the paper's IID and Non-IID.
    mechanism, allocation, alpha, beta, delta
        As in :func:`fedeval.vertical.auc`. The RR estimate does not depend on
        the assignment.
    n_reps : int, default 100
        Number of repetitions (≥ 2).
    exact_counts : bool, default False
        Analysis only, not private: use the exact P and N on the server (the
        simplification behind the paper's Table 2 and eqs. 8-9). The budget on
        localSum is still ``alpha * epsilon``; to give localSum a budget ε_sum,
        pass ``epsilon=ε_sum / alpha``. Laplace/Gaussian only.
    rng : int, Generator or None

    Returns
    -------
    SimulationResult

    Raises
    ------
    ValueError, TypeError
        As :func:`fedeval.vertical.auc`, plus K > M or ``n_reps`` < 2.

    Warns
    -----
    UserWarning
        If some repetitions gave an undefined estimate (they are excluded from
        mean and std and counted in ``n_invalid``).

    References
    ----------
    .. [1] Sun et al. (2023), §6.1 (100 runs, std of the AUC as the metric),
       §6.2.2 (IID / Non-IID assignment), Tables 1, 2 and 7.
    """
    parsed = _parse_mechanism(mechanism)
    s = check_scores(scores, score_range=(-np.inf, np.inf))
    y = check_binary_labels(labels)
    if s.shape[0] != y.shape[0]:
        raise ValueError(f"scores has {s.shape[0]} entries but labels has {y.shape[0]}")
    m = int(y.shape[0])
    n_pos = int(y.sum())
    if n_pos == 0 or n_pos == m:
        raise ValueError(f"labels contain a single class ({n_pos} positives of {m})")
    reps = check_int_at_least(n_reps, 2, name="n_reps")
    eps = None if epsilon is None else check_epsilon(epsilon)
    if allocation not in get_args(Allocation):
        raise ValueError(f"allocation must be one of {get_args(Allocation)}, got {allocation!r}")
    check_probability(alpha, name="alpha", open_high=True)
    check_probability(beta, name="beta", open_high=True)
    if parsed is None and (allocation != "fixed" or exact_counts):
        raise ValueError(
            "allocation and exact_counts apply to the Laplace/Gaussian mechanisms only"
        )
    if parsed is None and delta is not None:
        raise ValueError(f"delta is only used by the Gaussian mechanisms, got delta={delta!r}")
    gen = as_generator(rng)
    index = assign_clients(s, n_clients, assignment=assignment, rng=gen)
    protocol = _build_protocol(_mid_ranks(s), index, np.arange(int(n_clients)))
    exact = _local_statistics(protocol, y)
    true_auc = exact.auc()

    if eps is None:
        estimates = np.full(reps, true_auc)
        predicted = 0.0
        used: tuple[str | None, float | None, float | None, float | None] = (
            None,
            None,
            None,
            None,
        )
    elif parsed is None:
        rho = flip_probability(eps)
        w = 1.0 - 2.0 * y  # change of ỹ_i when label i flips
        rw = protocol.ranks * w
        d_sum = np.empty(reps)
        d_pos = np.empty(reps)
        rows = max(1, _BLOCK // m)
        for start in range(0, reps, rows):
            stop = min(reps, start + rows)
            flips = (gen.random((stop - start, m)) < rho).astype(np.float64)
            d_sum[start:stop] = flips @ rw
            d_pos[start:stop] = flips @ w
        p_bar = exact.n_pos + d_pos
        noisy = np.asarray(auc_from_rank_sum(exact.global_sum + d_sum, p_bar, m))
        estimates = np.asarray(debias_auc(noisy, p_bar, m, epsilon=eps))
        predicted = math.sqrt(
            rr_variance_delta(protocol.ranks, n_pos=n_pos, auc=true_auc, epsilon=eps)
        )
        used = (None, None, None, None)
    else:
        noise, sens = parsed
        plan = noise_plan(
            protocol,
            epsilon=eps,
            noise=noise,
            sensitivity=sens,
            allocation=allocation,
            alpha=alpha,
            beta=beta,
            delta=delta,
        )
        e_sum, e_pos = _noise_totals(plan, reps, gen)
        if exact_counts:
            e_pos = np.zeros(reps)
        estimates = np.asarray(auc_from_rank_sum(exact.global_sum + e_sum, exact.n_pos + e_pos, m))
        predicted = math.sqrt(
            laplace_variance_delta(
                protocol, plan, auc=true_auc, n_pos=n_pos, counts_exact=exact_counts
            )
        )
        used = (allocation, plan.alpha, plan.beta, plan.delta if noise == "gaussian" else None)

    finite = np.isfinite(estimates)
    n_invalid = int(reps - finite.sum())
    if n_invalid:
        warnings.warn(
            f"{n_invalid} of {reps} repetitions gave an undefined AUC (noisy class counts "
            "outside (0, M)); they are excluded from mean and std",
            UserWarning,
            stacklevel=2,
        )
    good = estimates[finite]
    return SimulationResult(
        mean=float(good.mean()) if good.size else math.nan,
        std=float(good.std(ddof=1)) if good.size > 1 else math.nan,
        true_auc=true_auc,
        predicted_std=predicted,
        n_reps=reps,
        n_invalid=n_invalid,
        mechanism=str(mechanism),
        epsilon=eps,
        n_clients=protocol.n_clients,
        assignment=str(assignment),
        allocation=used[0],
        alpha=used[1],
        beta=used[2],
        delta=used[3],
        exact_counts=bool(exact_counts),
        estimates=estimates,
    )
