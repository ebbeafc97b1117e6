"""The rank protocol of vertical federated AUC (Sun et al. 2023, §4.2 and Appendix H.2).

The server (the non-label party) holds every example's score. It sorts the
scores, gives every example a 0-based rank and sends each label party (client)
the ranks of its own examples. Each client returns its local rank sum over
positives and its positive count; the server adds them up and evaluates eq. (1).

Ties
----
The paper assumes distinct scores. Here tied scores share their *mid-rank*
(the average of the 0-based positions they occupy), so eq. (1) equals the
Mann-Whitney AUC with ties counted one half, which is exactly what
:func:`sklearn.metrics.roc_auc_score` returns. Mid-ranks may be half-integers;
the mean rank over all examples is still (M - 1)/2 and no rank exceeds M - 1,
so the sensitivities of §5 are unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.stats import rankdata

from fedeval.data.partition import Assignment, assign_clients
from fedeval.sketches.rank_sums import (
    Allocation,
    PartyRanks,
    RankSensitivity,
    RankSumSketch,
    party_ranks,
)
from fedeval.validation import check_binary_labels, check_scores

__all__ = [
    "Assignment",
    "LocalStatistics",
    "RankProtocol",
    "assign_clients",
    "auc_from_rank_sum",
    "local_statistics",
    "mid_ranks",
    "rank_protocol",
    "rank_values",
]

_INF_RANGE = (-np.inf, np.inf)


def mid_ranks(scores: ArrayLike) -> NDArray[np.float64]:
    """0-based ranks of ``scores`` in increasing order, ties sharing their mid-rank.

    Parameters
    ----------
    scores : array_like, shape (M,)
        Finite real scores (any range).

    Returns
    -------
    ndarray of float64, shape (M,)
        ``r_i`` in [0, M - 1]: the lowest score gets 0, the highest M - 1; a
        group of tied scores occupying positions p..q all get (p + q)/2.

    Raises
    ------
    ValueError, TypeError
        If ``scores`` is not a 1-D array of finite numbers.

    References
    ----------
    .. [1] Sun et al. (2023), "Differentially private AUC computation in vertical
       federated learning", §2.4 and Appendix H.2 (ranks r_i from 0 to M - 1).
    """
    s = check_scores(scores, score_range=_INF_RANGE)
    return rank_values(s)


def rank_values(s: NDArray[np.float64]) -> NDArray[np.float64]:
    """Mid-ranks of already validated scores."""
    return np.asarray(rankdata(s, method="average"), dtype=np.float64) - 1.0


@dataclass(frozen=True, eq=False)
class RankProtocol:
    """What the server knows after step 2 of the protocol (no labels involved).

    Attributes
    ----------
    ranks : ndarray of float64, shape (M,)
        Mid-rank of every example (see :func:`mid_ranks`).
    client_index : ndarray of intp, shape (M,)
        Client of every example as an index 0..K-1 into ``client_ids``.
    client_ids : ndarray, shape (K,)
        The label parties' original ids, sorted.

    Notes
    -----
    Ranks depend only on scores, which the threat model treats as known to the
    server (§3), so everything here is public with respect to label privacy.
    The per-party statistics (``counts``, ``max_rank``, ``mean_rank``, ...)
    come from :func:`fedeval.sketches.rank_sums.party_ranks`.
    """

    ranks: NDArray[np.float64]
    client_index: NDArray[np.intp]
    client_ids: NDArray[Any]

    @cached_property
    def stats(self) -> PartyRanks:
        return party_ranks(self.ranks, self.client_index, int(self.client_ids.shape[0]))

    @property
    def counts(self) -> NDArray[np.int64]:
        """|Y_k|, the number of examples of each client (all ≥ 1)."""
        return self.stats.counts

    @property
    def max_rank(self) -> NDArray[np.float64]:
        return self.stats.max_rank

    @property
    def min_rank(self) -> NDArray[np.float64]:
        return self.stats.min_rank

    @property
    def mean_rank(self) -> NDArray[np.float64]:
        return self.stats.mean_rank

    @property
    def spread(self) -> NDArray[np.float64]:
        """‖v'_k‖∞ = max_i |r_i - mean_rank_k| per client, shape (K,) (§5.3)."""
        return self.stats.spread

    @property
    def n_examples(self) -> int:
        """M, the total number of examples."""
        return int(self.ranks.shape[0])

    @property
    def n_clients(self) -> int:
        """K, the number of label parties."""
        return int(self.client_ids.shape[0])

    @property
    def global_mean_rank(self) -> float:
        """(M - 1)/2, the mean of all ranks (also with mid-ranks)."""
        return (self.n_examples - 1) / 2.0

    @property
    def centered_sum_of_squares(self) -> float:
        """Σ_i (r_i - (M - 1)/2)², equal to M(M² - 1)/12 without ties."""
        c = self.ranks - self.global_mean_rank
        return float(c @ c)

    def sketch(
        self,
        *,
        allocation: Allocation = "fixed",
        alpha: float = 0.5,
        beta: float = 0.5,
        rank_sensitivity: RankSensitivity = "local",
    ) -> RankSumSketch:
        """The label parties' encoding of step 3 under a budget allocation."""
        return RankSumSketch(
            self.ranks,
            np.asarray(self.client_index, dtype=np.int64),
            self.n_clients,
            allocation,
            alpha,
            beta,
            rank_sensitivity,
        )


def check_client_ids(client_of_example: Any, n_examples: int) -> NDArray[Any]:
    arr = np.asarray(client_of_example)
    if arr.ndim != 1:
        raise ValueError(f"client_of_example must be 1-dimensional, got shape {arr.shape}")
    if arr.dtype.kind not in "iu":
        raise TypeError(f"client_of_example must hold integer client ids, got dtype {arr.dtype}")
    if arr.shape[0] != n_examples:
        raise ValueError(
            f"client_of_example has {arr.shape[0]} entries but there are {n_examples} scores; "
            "give one client id per example"
        )
    return arr


def index_clients(
    client_of_example: NDArray[Any], clients: ArrayLike | None
) -> tuple[NDArray[Any], NDArray[np.intp]]:
    """Map arbitrary integer ids to 0..K-1, checking declared clients are non-empty."""
    present, index = np.unique(client_of_example, return_inverse=True)
    if clients is None:
        return present, index.astype(np.intp)
    declared = np.asarray(clients)
    if declared.ndim != 1 or declared.dtype.kind not in "iu":
        raise TypeError(
            f"clients must be a 1-D array of integer client ids, got {declared.dtype} "
            f"with shape {declared.shape}"
        )
    ids = np.unique(declared)
    if ids.shape[0] != declared.shape[0]:
        raise ValueError("clients contains duplicate ids")
    unknown = ~np.isin(present, ids)
    if unknown.any():
        raise ValueError(
            f"client_of_example uses client id {present[np.flatnonzero(unknown)[0]].item()!r}, "
            "which is not among the declared clients"
        )
    empty = ~np.isin(ids, present)
    if empty.any():
        raise ValueError(
            f"client {ids[np.flatnonzero(empty)[0]].item()!r} has no examples; every label party "
            "must hold at least one example (its rank sum and count would be undefined)"
        )
    return ids, np.searchsorted(ids, client_of_example).astype(np.intp)


def rank_protocol(
    scores: ArrayLike,
    client_of_example: ArrayLike,
    *,
    clients: ArrayLike | None = None,
) -> RankProtocol:
    """Server side of the rank protocol: rank all scores, group the ranks by client.

    Parameters
    ----------
    scores : array_like, shape (M,)
        Finite scores of all examples (the server's data).
    client_of_example : array_like of int, shape (M,)
        Which label party holds each example's label; any integer ids.
    clients : array_like of int, optional
        The label parties taking part. When given, each must hold at least one
        example. By default, the distinct values of ``client_of_example``.

    Returns
    -------
    RankProtocol

    Raises
    ------
    ValueError, TypeError
        On non-finite scores, mismatched lengths, non-integer client ids, an
        id outside ``clients`` or a declared client without examples.

    References
    ----------
    .. [1] Sun et al. (2023), §4.2 steps 1-2 and Appendix H.2.
    """
    s = check_scores(scores, score_range=_INF_RANGE)
    if s.shape[0] == 0:
        raise ValueError("scores is empty; at least one example is needed")
    ids = check_client_ids(client_of_example, s.shape[0])
    client_ids, index = index_clients(ids, clients)
    return RankProtocol(rank_values(s), index, client_ids)


@dataclass(frozen=True, eq=False)
class LocalStatistics:
    """The per-client messages of step 3 (exact or noisy).

    Attributes
    ----------
    local_sum : ndarray of float64, shape (K,)
        localSum_k = Σ_{i ∈ client k} r_i y_i (or its noisy version localSum'_k).
    local_pos : ndarray of float64, shape (K,)
        localP_k = Σ_{i ∈ client k} y_i (or localP'_k).
    counts : ndarray of int64, shape (K,)
        |Y_k|; localN_k = |Y_k| - localP_k.
    """

    local_sum: NDArray[np.float64]
    local_pos: NDArray[np.float64]
    counts: NDArray[np.int64]

    @property
    def local_neg(self) -> NDArray[np.float64]:
        """localN_k = |Y_k| - localP_k."""
        return self.counts - self.local_pos

    @property
    def global_sum(self) -> float:
        """globalSum = Σ_k localSum_k."""
        return float(self.local_sum.sum())

    @property
    def n_pos(self) -> float:
        """P̄ = Σ_k localP_k."""
        return float(self.local_pos.sum())

    @property
    def n_examples(self) -> int:
        """M = Σ_k |Y_k|."""
        return int(self.counts.sum())

    def auc(self) -> float:
        """Eq. (1) on the aggregated sums (NaN when P̄ or N̄ is 0)."""
        return float(auc_from_rank_sum(self.global_sum, self.n_pos, self.n_examples))


def local_statistics(protocol: RankProtocol, labels: ArrayLike) -> LocalStatistics:
    """Client side of the rank protocol, for all clients at once (no noise).

    Parameters
    ----------
    protocol : RankProtocol
        The ranks the server sent.
    labels : array_like of {0, 1}, shape (M,)
        Each example's label (held by its client).

    Returns
    -------
    LocalStatistics
        localSum_k and localP_k of every client (Algorithm 2 lines 15-28 with
        unflipped labels).

    Raises
    ------
    ValueError, TypeError
        If ``labels`` is not 0/1 or its length differs from the number of ranks.

    References
    ----------
    .. [1] Sun et al. (2023), §4.2 step 3, Algorithm 2.
    """
    y = check_binary_labels(labels)
    if y.shape[0] != protocol.n_examples:
        raise ValueError(
            f"labels has {y.shape[0]} entries but the protocol ranks {protocol.n_examples} examples"
        )
    yf = y.astype(np.float64)
    k = protocol.n_clients
    idx = protocol.client_index
    local_sum = np.bincount(idx, weights=protocol.ranks * yf, minlength=k)
    local_pos = np.bincount(idx, weights=yf, minlength=k)
    return LocalStatistics(
        local_sum=np.asarray(local_sum, dtype=np.float64),
        local_pos=np.asarray(local_pos, dtype=np.float64),
        counts=protocol.counts,
    )


def auc_from_rank_sum(
    global_sum: ArrayLike, n_pos: ArrayLike, n_examples: int
) -> NDArray[np.float64] | float:
    """Eq. (1): AUC = (Σ r_i y_i - P(P - 1)/2) / (P N), vectorised.

    Parameters
    ----------
    global_sum : float or array_like
        Σ_i r_i y_i (possibly noisy).
    n_pos : float or array_like
        P (possibly noisy; need not be an integer).
    n_examples : int
        M; N = M - P.

    Returns
    -------
    float or ndarray
        The AUC; NaN where P·N = 0. With noisy inputs the value can leave [0, 1]
        and is returned unclipped (no silent post-processing).

    References
    ----------
    .. [1] Sun et al. (2023), eq. (1) / eq. (6).
    """
    s = np.asarray(global_sum, dtype=np.float64)
    p = np.asarray(n_pos, dtype=np.float64)
    denom = p * (n_examples - p)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(denom != 0, (s - p * (p - 1.0) / 2.0) / denom, np.nan)
    return float(out) if out.ndim == 0 else out
