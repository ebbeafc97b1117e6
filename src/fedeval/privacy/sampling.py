"""Random choices a release makes about clients and examples (not noise).

Sampling is part of a mechanism's privacy analysis (Poisson sampling amplifies
privacy; a random split of clients into groups gives parallel composition; a
random subsample enforces a contribution bound), so it lives here, next to the
noise samplers, and every draw comes from the explicit generator passed in.

References
----------
.. [1] Private federated multiclass post-hoc calibration, Algorithms 1–2
   (Poisson sampling of participants).
.. [2] Cormode & Markov (2023), §2.3 (clients split across hierarchy levels).
.. [3] A. Shamir, "How to share a secret", CACM 22(11) 1979; additive sharing
   modulo 2^64 as in SPDZ-style MPC.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "additive_shares",
    "assign_groups",
    "client_streams",
    "contribution_mask",
    "group_sizes",
    "poisson_sample",
    "public_uniform",
    "raw_words",
    "reconstruct_shares",
    "sample_clients",
    "seeded_contribution_mask",
    "spawn_seeds",
    "split_counts",
    "uniform_seed",
]

#: numpy's hypergeometric sampler needs fewer than 10^9 items in the urn.
SPLIT_COUNTS_LIMIT = 10**9


def raw_words(gen: np.random.Generator, n: int) -> NDArray[np.uint64]:
    """``n`` independent words uniform on {0, …, 2⁶⁴ − 1}, whatever ``gen``'s bit generator.

    ``gen.bit_generator.random_raw`` alone is not this: a 32-bit bit
    generator (numpy's MT19937) returns 32-bit values there, so every word's
    top half would be 0. ``integers`` over the full 64-bit range returns the
    bit generator's ``next_uint64`` (two 32-bit outputs for MT19937). For the
    bit generators whose raw output is known to be that same 64-bit word
    (:data:`_RAW_IS_64_BITS`; tested), ``random_raw`` gives the same words
    about 20 % faster, and is used.
    """
    kind = type(gen.bit_generator)
    if f"{kind.__module__.partition('.')[0]}.{kind.__name__}" in _RAW_IS_64_BITS:
        return np.asarray(gen.bit_generator.random_raw(n), dtype=np.uint64)
    return gen.integers(0, np.iinfo(np.uint64).max, size=n, dtype=np.uint64, endpoint=True)


#: Bit generators whose ``random_raw`` is their ``next_uint64`` (numpy's 64-bit ones, ChaCha).
_RAW_IS_64_BITS = frozenset(
    {"numpy.PCG64", "numpy.PCG64DXSM", "numpy.SFC64", "numpy.Philox", "randomgen.ChaCha"}
)


def poisson_sample(
    n_clients: int, sampling_rate: float, rng: np.random.Generator
) -> NDArray[np.intp]:
    """Clients taking part in one round: each independently with probability ``sampling_rate``.

    Poisson sampling is what the subsampled-Gaussian accountant assumes, so the
    number of participants varies between rounds (it may be 0).
    """
    if sampling_rate >= 1.0:
        return np.arange(n_clients)
    return np.flatnonzero(rng.random(n_clients) < sampling_rate)


def assign_groups(n_clients: int, n_groups: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """Split clients uniformly at random into ``n_groups`` groups of (near) equal size."""
    return (rng.permutation(n_clients) % n_groups).astype(np.int64)


def group_sizes(n_clients: int, n_groups: int) -> NDArray[np.int64]:
    """Clients in each group of :func:`assign_groups` (the same for every draw).

    ``permutation(n) % G`` takes the value g for ⌈(n − g)/G⌉ of the n positions:
    ``n // G`` clients per group, one more in the first ``n % G`` groups.
    """
    sizes = np.full(n_groups, n_clients // n_groups, dtype=np.int64)
    sizes[: n_clients % n_groups] += 1
    return sizes


def split_counts(
    counts: NDArray[np.int64], sizes: NDArray[np.int64], rng: np.random.Generator
) -> NDArray[np.int64]:
    """The per-group counts of :func:`assign_groups`, drawn from the counts alone.

    Items (clients) of K kinds, ``counts[j]`` of kind j, are split at random
    into groups of ``sizes`` (Σ sizes = Σ counts) exactly as
    ``assign_groups(Σ counts, len(sizes), rng)`` splits them; returned is how
    many items of each kind fall in each group, without drawing the group of
    every item: O(groups × kinds) instead of O(items).

    Parameters
    ----------
    counts : ndarray of int, shape (K,)
        Items of every kind.
    sizes : ndarray of int, shape (G,)
        Items per group (:func:`group_sizes`).
    rng : numpy.random.Generator

    Returns
    -------
    ndarray of int64, shape (G, K)
        Row g: items of every kind in group g (row sums ``sizes``, column sums ``counts``).

    Raises
    ------
    ValueError
        Σ sizes ≠ Σ counts, or Σ counts ≥ :data:`SPLIT_COUNTS_LIMIT`.

    Notes
    -----
    Exact in distribution. ``assign_groups`` takes a uniformly random
    permutation π of the n items and puts item i in group π(i) mod G, so the
    sequence of group labels is uniform over the n!/∏ m_g! arrangements with
    m_g labels g. Equivalently, group 0 is a uniformly random m_0-subset of
    the items and, given it, the other groups are a uniformly random split of
    the remaining items into groups of m_1, m_2, ... (count the arrangements).
    The kinds of a uniformly random m-subset of an urn holding c_j items of
    kind j are multivariate hypergeometric, MVHG(c, m) (its definition:
    drawing m items without replacement). Hence row 0 ~ MVHG(counts, m_0),
    row g ~ MVHG(counts − rows 0..g−1, m_g) given the rows before it, and the
    last row is what remains, which is how the rows are drawn here (numpy's
    ``multivariate_hypergeometric``, method "marginals": a chain of exact
    univariate hypergeometric draws). Items of one kind are interchangeable
    for these counts, so nothing else about the split matters to a release
    that uses only them (the local-DP fast path with one example per client).
    Kinds with no items are skipped (they get 0 in every group).
    """
    c = np.asarray(counts, dtype=np.int64)
    m = np.asarray(sizes, dtype=np.int64)
    total = int(c.sum())
    if int(m.sum()) != total:
        raise ValueError(f"group sizes sum to {int(m.sum())}, counts to {total}")
    if total >= SPLIT_COUNTS_LIMIT:
        raise ValueError(f"split_counts draws from fewer than {SPLIT_COUNTS_LIMIT} items")
    out = np.zeros((m.shape[0], c.shape[0]), dtype=np.int64)
    kinds = np.flatnonzero(c)
    remaining = c[kinds]
    for g in range(m.shape[0] - 1):
        if m[g] == 0:
            continue
        drawn = rng.multivariate_hypergeometric(remaining, int(m[g]))
        out[g, kinds] = drawn
        remaining = remaining - drawn
    if m.shape[0]:
        out[-1, kinds] = remaining
    return out


def contribution_mask(
    client_index: NDArray[np.int64],
    offsets: NDArray[np.int64],
    bound: int | NDArray[np.int64],
    rng: np.random.Generator,
) -> NDArray[np.bool_]:
    """Keep at most ``bound`` uniformly random examples of every client.

    Parameters
    ----------
    client_index : ndarray of int, shape (n,)
        Dense client of every example, in any order.
    offsets : ndarray of int64, shape (n_clients + 1,)
        Cumulative client sizes: client ``i`` holds ``offsets[i + 1] - offsets[i]`` examples.
    bound : int or ndarray of int64, shape (n_clients,)
        The contribution bound B >= 1, or one bound >= 0 per client (what each
        client may still contribute, e.g. of a bound over several releases).

    Returns
    -------
    ndarray of bool, shape (n,)
        True for the examples kept; a client at or below the bound keeps all.

    Notes
    -----
    Linear time: only the rows of clients above the bound are touched; they
    are put in a uniformly random order (one permutation) and grouped by
    client with a stable radix sort, so the first B rows of every client's
    group are a uniform B-subset of its examples.
    """
    n = client_index.shape[0]
    sizes = np.diff(offsets)
    keep = np.ones(n, dtype=bool)
    bounds = np.broadcast_to(np.asarray(bound, dtype=np.int64), sizes.shape)
    over = sizes > bounds
    if not over.any():
        return keep
    # On first use: importing fedeval.data costs ~60 ms, which the samplers'
    # raw_words (this module) must not add to `fedeval plan` (issue 28's start-up target).
    from fedeval.data.grouping import group_order

    rows = np.flatnonzero(over[client_index])
    rows = rows[rng.permutation(rows.size)]
    grouped = rows[group_order(client_index[rows], sizes.shape[0])]
    owner = client_index[grouped]
    over_sizes = np.where(over, sizes, 0)
    start = np.cumsum(over_sizes) - over_sizes  # where each client's group begins in `grouped`
    rank = np.arange(grouped.size) - start[owner]
    keep[grouped[rank >= bounds[owner]]] = False
    return keep


def seeded_contribution_mask(
    client_index: NDArray[np.int64], offsets: NDArray[np.int64], seed: int, *, bound: int
) -> NDArray[np.bool_]:
    """:func:`contribution_mask` with a generator seeded by ``seed`` (one per data partition)."""
    return contribution_mask(client_index, offsets, bound, np.random.default_rng(seed))


def spawn_seeds(rng: np.random.Generator, n: int) -> list[int]:
    """``n`` independent seeds from ``rng`` (one per worker task of a distributed engine)."""
    return [uniform_seed(child) for child in rng.spawn(n)]


def client_streams(rng: np.random.Generator, n_clients: int) -> list[np.random.Generator]:
    """Independent child generators, one per client (each client's own randomness)."""
    return list(rng.spawn(n_clients))


def uniform_seed(rng: np.random.Generator) -> int:
    """A 63-bit seed drawn from ``rng`` (a party's secret noise seed)."""
    return int(rng.integers(0, 2**63 - 1))


def additive_shares(
    vector: ArrayLike, n_servers: int, rng: np.random.Generator
) -> NDArray[np.uint64]:
    """Split a non-negative integer vector into ``n_servers`` additive shares modulo 2^64.

    Rows 0..m-2 are uniform on (ℤ/2^64)^N; row m-1 makes the columns sum to the
    vector modulo 2^64, so any m - 1 shares are independent of the vector
    (information-theoretic secrecy). Use a CSPRNG-backed generator in
    deployment (numpy's PCG64 is not one).

    Raises
    ------
    TypeError
        ``n_servers`` is not an integer.
    ValueError
        ``n_servers`` < 2 (one share would be the plaintext).
    """
    if isinstance(n_servers, bool) or not isinstance(n_servers, int | np.integer):
        raise TypeError(f"n_servers must be an integer >= 2, got {n_servers!r}")
    if int(n_servers) < 2:
        raise ValueError(
            f"n_servers must be >= 2 (a single share would be the plaintext), got {n_servers!r}"
        )
    v = np.asarray(vector)
    shares = np.empty((n_servers, v.size), dtype=np.uint64)
    shares[:-1] = rng.integers(0, 2**64, size=(n_servers - 1, v.size), dtype=np.uint64)
    # uint64 arithmetic wraps modulo 2^64, which is exactly the group we share in.
    shares[-1] = v.astype(np.uint64) - shares[:-1].sum(axis=0, dtype=np.uint64)
    return shares


def reconstruct_shares(shares: ArrayLike) -> NDArray[np.int64]:
    """Sum shares modulo 2^64 and read the result as signed 64-bit integers."""
    s = np.asarray(shares, dtype=np.uint64)
    return s.sum(axis=0, dtype=np.uint64).view(np.int64)


def sample_clients(n_clients: int, k: int, rng: np.random.Generator) -> NDArray[np.intp]:
    """``k`` of ``n_clients`` clients uniformly without replacement, sorted (a server's selection)."""
    return np.sort(rng.choice(n_clients, size=k, replace=False))


def public_uniform(
    low: float, high: float, size: int | tuple[int, ...], rng: np.random.Generator
) -> NDArray[np.float64]:
    """Public server randomness (e.g. a model's initial weights), U(low, high).

    Drawn from the procedure's generator so runs are reproducible; it depends on
    no client's data and is published with the result.
    """
    return np.asarray(rng.uniform(low, high, size=size), dtype=np.float64)
