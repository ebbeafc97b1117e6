"""Partitioners: spread examples over simulated clients.

Each function takes a :class:`~fedeval.data.Federation` (its current client
assignment is ignored) or ``scores, labels`` arrays, and returns a new
Federation. Randomness comes from the explicit ``rng`` argument.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

import numpy as np
from numpy.typing import NDArray

from fedeval.data.federation import Federation
from fedeval.randomness import RNGLike, as_generator
from fedeval.validation import check_int_at_least, check_positive, check_scores

__all__ = [
    "Assignment",
    "assign_clients",
    "by_score",
    "dirichlet",
    "iid",
    "natural",
    "split_clients",
]


def _as_federation(data: Federation | Any, labels: Any, kwargs: dict[str, Any]) -> Federation:
    if isinstance(data, Federation):
        if labels is not None:
            raise TypeError("pass labels only with a scores array, not with a Federation")
        return data
    if labels is None:
        raise TypeError("labels are required when data is a scores array")
    return Federation.from_arrays(data, labels, None, **kwargs)


def _assign(fed: Federation, client_of_row: NDArray[np.int64], n_clients: int) -> Federation:
    counts = np.bincount(client_of_row, minlength=n_clients)
    empty = np.flatnonzero(counts == 0)
    if empty.size:
        raise ValueError(
            f"{empty.size} of {n_clients} clients would hold no examples; "
            f"use fewer clients than the {fed.n_examples} examples"
        )
    return Federation.from_dense_index(
        fed.scores,
        fed.labels,
        client_of_row,
        np.arange(n_clients, dtype=np.int64),
        fed.kind,
        fed.score_range,
    )


def _check_n_clients(n_clients: Any, fed: Federation) -> int:
    n = check_int_at_least(n_clients, 1, name="n_clients")
    if n > fed.n_examples:
        raise ValueError(f"n_clients={n} exceeds the number of examples ({fed.n_examples})")
    return n


def iid(
    data: Federation | Any,
    labels: Any = None,
    *,
    n_clients: int,
    rng: RNGLike = None,
    **kwargs: Any,
) -> Federation:
    """Shuffle examples and deal them to ``n_clients`` clients of (near) equal size.

    Extra keyword arguments (``kind``, ``score_range``) go to
    :meth:`Federation.from_arrays` when arrays are given.
    """
    fed = _as_federation(data, labels, kwargs)
    n = _check_n_clients(n_clients, fed)
    perm = as_generator(rng).permutation(fed.n_examples)
    client_of_row = np.empty(fed.n_examples, dtype=np.int64)
    client_of_row[perm] = np.arange(fed.n_examples) % n
    return _assign(fed, client_of_row, n)


def by_score(
    data: Federation | Any,
    labels: Any = None,
    *,
    n_clients: int,
    **kwargs: Any,
) -> Federation:
    """Give each client a contiguous range of scores (the non-IID setting of Sun et al. 2023).

    Examples are sorted by score (multiclass: by top-class probability) and cut
    into ``n_clients`` consecutive groups of (near) equal size; ties are broken
    by the original order, so the result is deterministic.

    References
    ----------
    sun-2023-dp-auc-vertical-fl, §6 (non-IID assignment by score).
    """
    fed = _as_federation(data, labels, kwargs)
    n = _check_n_clients(n_clients, fed)
    key = fed.scores if fed.kind == "binary" else fed.scores.max(axis=1)
    order = np.argsort(key, kind="stable")
    client_of_row = np.empty(fed.n_examples, dtype=np.int64)
    client_of_row[order] = (np.arange(fed.n_examples) * n) // fed.n_examples
    return _assign(fed, client_of_row, n)


def dirichlet(
    data: Federation | Any,
    labels: Any = None,
    *,
    n_clients: int,
    beta: float,
    min_size: int = 1,
    max_tries: int = 1000,
    rng: RNGLike = None,
    **kwargs: Any,
) -> Federation:
    """Label-skewed partition by per-class Dirichlet proportions (Yurochkin et al. 2019).

    For every class k, proportions ``q_k ~ Dirichlet(beta * 1_J)`` over the J
    clients are drawn and the class-k examples (in random order) are cut in those
    proportions. Small ``beta`` gives clients few classes; large ``beta``
    approaches IID. The draw is repeated until every client holds at least
    ``min_size`` examples (as in the reference implementation the multiclass
    calibration paper follows).

    Parameters
    ----------
    beta : float
        Concentration, > 0 (the paper uses 0.1, 0.5, 1).
    min_size : int
        Smallest allowed client, >= 1.
    max_tries : int
        Give up with ValueError after this many redraws.

    References
    ----------
    private-federated-multiclass-calibration, Appendix A.2.
    """
    fed = _as_federation(data, labels, kwargs)
    n = _check_n_clients(n_clients, fed)
    b = check_positive(beta, name="beta")
    m = check_int_at_least(min_size, 1, name="min_size")
    if m * n > fed.n_examples:
        raise ValueError(f"min_size * n_clients = {m * n} exceeds the {fed.n_examples} examples")
    gen = as_generator(rng)
    classes = [np.flatnonzero(fed.labels == k) for k in range(fed.n_classes)]
    client_of_row = np.empty(fed.n_examples, dtype=np.int64)
    for _ in range(check_int_at_least(max_tries, 1, name="max_tries")):
        for rows in classes:
            if rows.size == 0:
                continue
            q = gen.dirichlet(np.full(n, b))
            cuts = (np.cumsum(q)[:-1] * rows.size).astype(np.int64)
            shuffled = gen.permutation(rows)
            for j, part in enumerate(np.split(shuffled, cuts)):
                client_of_row[part] = j
        if np.bincount(client_of_row, minlength=n).min() >= m:
            return _assign(fed, client_of_row, n)
    raise ValueError(
        f"no Dirichlet(beta={b}) draw in {max_tries} tries gave every one of {n} clients "
        f">= {m} examples; lower n_clients or min_size, or raise beta"
    )


def natural(
    data: Federation | Any, labels: Any = None, *, clients: Any, **kwargs: Any
) -> Federation:
    """Use a given client column as the partition (e.g. device or hospital id)."""
    fed = _as_federation(data, labels, kwargs)
    return Federation.from_arrays(
        fed.scores, fed.labels, clients, kind=fed.kind, score_range=fed.score_range
    )


Assignment = Literal["iid", "by-score"]


def assign_clients(
    scores: Any,
    n_clients: int,
    *,
    assignment: Assignment = "iid",
    rng: RNGLike = None,
) -> NDArray[np.intp]:
    """Client index of every example: K clients of sizes ⌊M/K⌋ or ⌈M/K⌉ (the vertical paper's settings).

    Parameters
    ----------
    scores : array_like, shape (M,)
        Scores (used by ``"by-score"``).
    n_clients : int
        K, between 1 and M (every client gets at least one example).
    assignment : {"iid", "by-score"}
        ``"iid"``: a uniformly random partition. ``"by-score"`` (the paper's
        Non-IID): examples sorted by score and cut into K contiguous blocks, so
        similar scores share a client.
    rng : int, Generator or None
        Randomness for ``"iid"``.

    Returns
    -------
    ndarray of intp, shape (M,)

    Raises
    ------
    ValueError
        If K > M (some client would have no examples) or ``assignment`` is unknown.

    References
    ----------
    sun-2023-dp-auc-vertical-fl §6.2.2 (IID and Non-IID simulations).
    """
    s = check_scores(scores, score_range=(-np.inf, np.inf))
    m = int(s.shape[0])
    k = check_int_at_least(n_clients, 1, name="n_clients")
    if k > m:
        raise ValueError(
            f"n_clients={k} exceeds the number of examples M={m}; some client would have no examples"
        )
    if assignment not in get_args(Assignment):
        raise ValueError(f"assignment must be one of {get_args(Assignment)}, got {assignment!r}")
    block = (np.arange(m, dtype=np.int64) * k // m).astype(np.intp)
    order = (
        np.argsort(s, kind="stable")
        if assignment == "by-score"
        else as_generator(rng).permutation(m)
    )
    out = np.empty(m, dtype=np.intp)
    out[order] = block
    return out


def split_clients(
    fed: Federation, test_fraction: float, *, rng: RNGLike = None
) -> tuple[Federation, Federation]:
    """Split whole clients at random into (train, test) federations.

    ``round(test_fraction · n_clients)`` clients (at least one) go to the test
    part; both parts keep the clients' storage order.

    Raises
    ------
    ValueError
        ``test_fraction`` outside (0, 1), or too few clients for both parts.
    """
    if not 0.0 < float(test_fraction) < 1.0:
        raise ValueError(f"the test fraction must lie in (0, 1), got {test_fraction}")
    order = as_generator(rng).permutation(fed.n_clients)
    n_test = max(1, round(test_fraction * fed.n_clients))
    if n_test >= fed.n_clients:
        raise ValueError("too few clients to hold some out for testing")
    return fed.subset(np.sort(order[n_test:])), fed.subset(np.sort(order[:n_test]))
