"""A client's reply and the range of every honest reply.

:func:`client_reply` is what a Flower client computes: its examples subsampled
to the public bound (:attr:`~fedeval.flower.plan.EvaluationPlan.client_bound`,
uniformly at random with its own random source), then the same
:func:`~fedeval.aggregation.client_vector` (encoding plus noise share) or
:func:`~fedeval.aggregation.client_reports` (local-DP reports) that the
in-process faithful path runs. Nothing about the client's size leaves it,
except under local DP the number of its reports (public under LocalDP). The
server checks every plaintext reply against the range an honest client can
produce (:func:`reply_range`) and rejects the rest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fedeval.aggregation.paths import bound_client, client_reports, client_vector
from fedeval.flower.plan import EvaluationPlan

__all__ = [
    "NotEnoughClientsError",
    "ReplyOutOfRangeError",
    "ReplyRange",
    "check_enough_clients",
    "check_reply",
    "client_reply",
    "encode_client",
    "reply_range",
]


class ReplyOutOfRangeError(ValueError):
    """A client's reply lies outside the range of every honest encoding."""


class NotEnoughClientsError(RuntimeError):
    """Fewer clients remain than the evaluation needs."""


def client_reply(
    plan: EvaluationPlan,
    scores: NDArray[np.float64],
    labels: NDArray[np.int64],
    rng: np.random.Generator,
) -> tuple[NDArray[np.int64], int | None]:
    """What one client sends: fedeval's faithful per-client encoding, and its report count.

    The client first keeps at most ``plan.client_bound`` of its examples,
    uniformly at random (its own random source): whatever it holds, its reply
    lies in the public range and says nothing about its size.

    Parameters
    ----------
    plan : EvaluationPlan
    scores : ndarray of float64, shape (n,)
        The client's scores, inside ``plan.score_range``.
    labels : ndarray of int64, shape (n,)
        0/1 labels.
    rng : numpy.random.Generator
        The client's own random source (subsampling, noise share, OUE bits).

    Returns
    -------
    vector : ndarray of int64, shape (plan.vector_length,)
        Exact sums: per-class leaf counts. Distributed DP: per-class counts of
        every level plus the client's noise share. Local DP: per (class, node)
        of the client's level, the number of its examples whose report has
        that bit set.
    n_reports : int or None
        Local DP: the number of reports (examples kept), which the server needs
        to debias them and which LocalDP treats as public. None otherwise: a
        sum's reply carries no count.

    Raises
    ------
    ValueError
        An encoding outside its range (a bug, never the data's size).
    """
    mech = plan.mechanism()
    scores, labels = bound_client(scores, labels, plan.client_bound, rng)
    n = int(labels.shape[0])
    if mech.placement == "local":
        if plan.level < 1:
            raise ValueError("a local-DP plan needs the client's level (1..h)")
        vec = client_reports(scores, labels, plan.sketch, mech, plan.level - 1, rng)
    else:
        vec = client_vector(scores, labels, 0, plan.sent_sketch, mech, rng)
    if mech.placement != "shares":
        check_reply(vec, reply_range(plan, n_examples=n))
    return np.asarray(vec, dtype=np.int64), (n if mech.placement == "local" else None)


def encode_client(
    plan: EvaluationPlan,
    scores: NDArray[np.float64],
    labels: NDArray[np.int64],
    rng: np.random.Generator,
) -> NDArray[np.int64]:
    """The vector of :func:`client_reply` (what one client sends, without the report count)."""
    return client_reply(plan, scores, labels, rng)[0]


@dataclass(frozen=True)
class ReplyRange:
    """The range of every honest reply.

    Attributes
    ----------
    length : int
    low, high : int
        Every coordinate lies in [low, high] (noise shares: only with
        probability 1 - clip probability, see
        :func:`~fedeval.flower.secagg.choose_clipping_range`).
    total : int or None
        If set, the coordinates sum to exactly this (RR reports, one item each).
    """

    length: int
    low: int
    high: int
    total: int | None = None


def reply_range(
    plan: EvaluationPlan, *, n_examples: int | None = None, noise_tail: int = 0
) -> ReplyRange:
    """Range of an honest reply under ``plan``.

    Parameters
    ----------
    plan : EvaluationPlan
    n_examples : int, optional
        Local DP: the number of reports the client sent; default the public
        bound ``plan.client_bound``.
    noise_tail : int
        Noise shares: the bound τ on |share| from
        :func:`~fedeval.flower.secagg.choose_clipping_range`.

    Raises
    ------
    ReplyOutOfRangeError
        A report count outside [0, ``plan.client_bound``].
    """
    bound = plan.client_bound
    m = bound if n_examples is None else int(n_examples)
    if m < 0 or m > bound:
        raise ReplyOutOfRangeError(
            f"declared {m} reports, outside [0, max_examples = {bound}] (the public bound)"
        )
    mech = plan.mechanism()
    if mech.placement == "shares":
        return ReplyRange(plan.vector_length, -noise_tail, m + noise_tail)
    total = m if mech.oracle_kind == "rr" else None
    return ReplyRange(plan.vector_length, 0, m, total)


def check_reply(vector: Any, expected: ReplyRange) -> NDArray[np.int64]:
    """Validate one client's reply; return it as int64.

    Raises
    ------
    ReplyOutOfRangeError
        Wrong shape, non-integer or non-finite values, a coordinate outside
        [low, high], or the wrong total.
    """
    arr = np.asarray(vector)
    if arr.shape != (expected.length,):
        raise ReplyOutOfRangeError(f"reply has shape {arr.shape}, expected ({expected.length},)")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)):
            raise ReplyOutOfRangeError("reply has non-finite values")
        if not np.array_equal(arr, np.round(arr)):
            raise ReplyOutOfRangeError("reply has non-integer values")
    elif arr.dtype.kind not in "iub":
        raise ReplyOutOfRangeError(f"reply has dtype {arr.dtype}, expected integers")
    out = arr.astype(np.int64)
    if out.size and (out.min() < expected.low or out.max() > expected.high):
        raise ReplyOutOfRangeError(
            f"reply has values in [{out.min()}, {out.max()}], outside the honest range "
            f"[{expected.low}, {expected.high}]"
        )
    if expected.total is not None and int(out.sum()) != expected.total:
        raise ReplyOutOfRangeError(
            f"reply sums to {int(out.sum())}, expected exactly {expected.total}"
        )
    return out


def check_enough_clients(
    n_available: int, n_required: int, *, stage: str, count_public: bool = True
) -> None:
    """Stop with a clear error when too few clients remain.

    Parameters
    ----------
    n_available, n_required : int
    stage : str
        Where the run stopped, for the message.
    count_public : bool
        Whether the number of clients is public under the run's privacy models
        (:func:`~fedeval.flower.run_privacy.run_counts`); if not, the message
        does not state it.

    Raises
    ------
    NotEnoughClientsError
    """
    if n_available < n_required:
        have = (
            f"only {n_available} client(s) remain"
            if count_public
            else "fewer clients remain than needed (their number is not public under the "
            "run's privacy models)"
        )
        raise NotEnoughClientsError(
            f"{stage}: {have}, the evaluation needs at least {n_required} (see the failures "
            "in the server log; lower min-clients or fix the clients)"
        )
