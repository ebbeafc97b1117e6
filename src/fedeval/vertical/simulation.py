"""Repeated-run simulation of the paper's settings (Sun et al. 2023, §6).

The client assignment is drawn once per call; every repetition is a fresh
release of the rank sums through the one pipeline
(:func:`fedeval.aggregation.release`, fast path), so every repetition redraws
all DP noise (RR label flips, or the parties' Laplace or Gaussian noise)
exactly as :func:`fedeval.vertical.auc` does. The label parties' federation is
built once; each repetition costs O(M + K).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from fedeval.aggregation import Release, release
from fedeval.data.partition import Assignment, assign_clients
from fedeval.exceptions import SmallDataWarning
from fedeval.privacy.models import LabelDP, PrivacyModel, SecureAggregation
from fedeval.privacy.receipt import Receipt
from fedeval.randomness import RNGLike, as_generator
from fedeval.sketches.rank_sums import Allocation, RankSensitivity, RankSums
from fedeval.validation import (
    check_binary_labels,
    check_int_at_least,
    check_probability,
    check_scores,
)
from fedeval.vertical.estimate import auc_variance, rank_federation
from fedeval.vertical.protocol import (
    RankProtocol,
    auc_from_rank_sum,
    local_statistics,
    rank_values,
)

__all__ = ["SimulationResult", "simulate"]


@dataclass(frozen=True)
class SimulationResult:
    """Mean and spread of the estimated AUC over repetitions.

    Attributes
    ----------
    mean : float
        Mean of the finite estimates.
    empirical_se : float
        Their sample standard deviation (ddof = 1): the standard error of one
        estimate, measured over the repetitions.
    true_auc : float
        The exact AUC (eq. 1 without noise).
    predicted_se : float
        The delta-method standard error at the true P and AUC
        (:func:`~fedeval.vertical.estimate.auc_variance` of the release); 0 without noise.
    n_reps : int
    n_invalid : int
        Repetitions whose estimate was undefined (noisy counts outside (0, M)).
    estimates : ndarray, shape (n_reps,)
    receipt : Receipt
        Of one repetition (every repetition is a separate release).
    n_clients : int
    assignment, allocation : str
    alpha, beta : float or None
    exact_counts : bool
    """

    mean: float
    empirical_se: float
    true_auc: float
    predicted_se: float
    n_reps: int
    n_invalid: int
    receipt: Receipt
    n_clients: int
    assignment: str
    allocation: str
    alpha: float | None
    beta: float | None
    exact_counts: bool
    estimates: NDArray[np.float64] = field(repr=False, compare=False)


def simulate(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    n_clients: int,
    privacy: PrivacyModel | None = None,
    epsilon: float | None = None,
    assignment: Assignment = "iid",
    rank_sensitivity: RankSensitivity = "local",
    allocation: Allocation = "fixed",
    alpha: float = 0.5,
    beta: float = 0.5,
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
    privacy : LabelDP, optional
        As in :func:`fedeval.vertical.auc`; None (and no ``epsilon``) for the
        exact protocol (std 0).
    epsilon : float, optional
        Sugar for ``LabelDP(epsilon)``.
    assignment : {"iid", "by-score"}
        How examples are split (see :func:`assign_clients`): the paper's IID and Non-IID.
    rank_sensitivity, allocation, alpha, beta
        As in :func:`fedeval.vertical.auc`. The RR estimate does not depend on
        the assignment.
    n_reps : int, default 100
        Number of repetitions (≥ 2).
    exact_counts : bool, default False
        Analysis only, not private: use the exact P and N on the server (the
        simplification behind the paper's Table 2 and eqs. 8-9). The budget on
        localSum is still ``alpha * epsilon``; to give localSum a budget ε_sum,
        pass ``epsilon=ε_sum / alpha``.
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
    s = check_scores(scores, score_range=(-np.inf, np.inf))
    y = check_binary_labels(labels)
    if s.shape[0] != y.shape[0]:
        raise ValueError(f"scores has {s.shape[0]} entries but labels has {y.shape[0]}")
    m = int(y.shape[0])
    n_pos = int(y.sum())
    if n_pos == 0 or n_pos == m:
        raise ValueError(f"labels contain a single class ({n_pos} positives of {m})")
    reps = check_int_at_least(n_reps, 2, name="n_reps")
    if privacy is not None and epsilon is not None:
        raise TypeError("give privacy (a model) or epsilon (sugar for LabelDP), not both")
    model: PrivacyModel = (
        privacy
        if privacy is not None
        else (LabelDP(epsilon) if epsilon is not None else SecureAggregation())
    )
    a = check_probability(alpha, name="alpha", open_high=True)
    b = check_probability(beta, name="beta", open_high=True)
    gen = as_generator(rng)
    index = assign_clients(s, n_clients, assignment=assignment, rng=gen)
    protocol = RankProtocol(rank_values(s), index, np.arange(int(n_clients)))
    sketch = protocol.sketch(
        allocation=allocation, alpha=a, beta=b, rank_sensitivity=rank_sensitivity
    )
    exact = local_statistics(protocol, y)
    true_auc = exact.auc()
    fed = rank_federation(protocol, y)
    estimates = np.empty(reps)
    first: Release | None = None
    for r in range(reps):
        rel = release(fed, sketch, model, rng=gen)
        if first is None:
            first = rel
        sums: RankSums = rel.decode()
        p_bar = float(exact.n_pos) if exact_counts else float(sums.local_pos.sum())
        s_tot = float(sums.local_sum.sum())
        estimates[r] = float(auc_from_rank_sum(s_tot, p_bar, m))
    assert first is not None
    private = first.guarantee.is_private
    predicted = (
        math.sqrt(auc_variance(first, auc=true_auc, n_pos=n_pos, counts_exact=exact_counts))
        if private
        else 0.0
    )
    finite = np.isfinite(estimates)
    n_invalid = int(reps - finite.sum())
    if n_invalid:
        warnings.warn(
            f"{n_invalid} of {reps} repetitions gave an undefined AUC (noisy class counts "
            "outside (0, M)); they are excluded from mean and std",
            SmallDataWarning,
            stacklevel=2,
        )
    good = estimates[finite]
    return SimulationResult(
        mean=float(good.mean()) if good.size else math.nan,
        empirical_se=float(good.std(ddof=1)) if good.size > 1 else math.nan,
        true_auc=true_auc,
        predicted_se=predicted,
        n_reps=reps,
        n_invalid=n_invalid,
        receipt=first.receipt,
        n_clients=protocol.n_clients,
        assignment=str(assignment),
        allocation=str(allocation),
        alpha=a if allocation == "fixed" else None,
        beta=b if allocation == "orthogonal" else None,
        exact_counts=bool(exact_counts),
        estimates=estimates,
    )
