"""The federated sum: the one primitive every protocol in fedeval is built on.

Two paths with one interface:

* ``path="faithful"`` runs what a real deployment runs. Every client encodes its
  own examples into an integer vector, adds its own noise share (distributed DP)
  or randomises each report (local DP) with its own random stream, and the
  server adds the vectors. Cost O(clients × vector length).
* ``path="fast"`` is *exact in distribution*. Encodings are linear in the
  examples, so the sum of all client vectors is one encoding of all examples (a
  single ``np.bincount``), and the sum of the noise is drawn directly: n Pólya
  shares sum to one discrete Laplace draw per coordinate; n OUE reports sum to
  two binomials per bin. Cost O(examples + vector length), independent of the
  number of clients.

Tests in ``tests/statistical/test_aggregation_paths.py`` show both paths release
the same distribution.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np
from numpy.typing import NDArray

from fedeval.data import ClientView, Federation
from fedeval.randomness import RNGLike, as_generator

__all__ = [
    "FrequencyOracle",
    "FrequencyRelease",
    "Path",
    "ShareNoise",
    "SumRelease",
    "assign_groups",
    "federated_frequencies",
    "federated_sum",
    "limit_contributions",
]

Path = Literal["fast", "faithful"]


class ShareNoise(Protocol):
    """Noise that clients add in shares (Pólya, Skellam)."""

    def sample_share(self, size: int, rng: np.random.Generator) -> NDArray[np.int64]: ...

    def sample_sum(self, size: int, rng: np.random.Generator) -> NDArray[np.int64]: ...

    @property
    def variance(self) -> float: ...


class FrequencyOracle(Protocol):
    """A local-DP frequency oracle over a domain of ``n_bins`` items (OUE, RR)."""

    @property
    def n_bins(self) -> int: ...

    def perturb(
        self, indices: NDArray[np.int64], rng: np.random.Generator
    ) -> NDArray[np.uint8]: ...

    def sample_aggregate(
        self, true_counts: NDArray[np.int64], n_reports: int, rng: np.random.Generator
    ) -> NDArray[np.int64]: ...

    def estimate(self, counts: NDArray[np.int64], n_reports: int) -> NDArray[np.float64]: ...

    def count_variance(
        self, true_counts: NDArray[np.float64], n_reports: int
    ) -> NDArray[np.float64]: ...


ClientEncoder = Callable[
    [NDArray[np.float64], NDArray[np.int64], NDArray[np.int64]], NDArray[np.int64]
]
"""``encode(scores, labels, client_index) -> int64 vector``, linear in the examples."""


@dataclass(frozen=True)
class SumRelease:
    """What the server learns from a secure (possibly noisy) sum.

    Attributes
    ----------
    values : ndarray of int64
        The released sum of client vectors plus noise.
    noise_variance : float
        Variance of the noise on every coordinate (0 under secure aggregation).
    n_clients : int
        Clients whose vectors are in the sum.
    path : {"fast", "faithful"}
    """

    values: NDArray[np.int64]
    noise_variance: float
    n_clients: int
    path: Path


def federated_sum(
    fed: Federation,
    encode: ClientEncoder,
    length: int,
    *,
    noise: ShareNoise | None,
    path: Path = "fast",
    rng: RNGLike = None,
) -> SumRelease:
    """Sum every client's encoded vector (plus its noise share) under secure aggregation.

    Parameters
    ----------
    fed : Federation
    encode : callable
        ``encode(scores, labels, client_index) -> int64 vector of length`` —
        must be linear in the examples (a sum of per-example encodings), which
        is what makes the fast path exact.
    length : int
        Length of the vector.
    noise : ShareNoise or None
        Per-client noise shares (distributed DP), or None (secure aggregation).
    path : {"fast", "faithful"}
    rng : int, Generator or None

    Returns
    -------
    SumRelease
    """
    gen = as_generator(rng)
    if path == "fast":
        total = encode(fed.scores, fed.labels, fed.client_index).astype(np.int64, copy=False)
        if noise is not None:
            total = total + noise.sample_sum(length, gen)
    elif path == "faithful":
        total = np.zeros(length, dtype=np.int64)
        for i, child in enumerate(gen.spawn(fed.n_clients)):
            view = fed.client(i)
            total += client_vector(view, i, encode, length, noise, child)
    else:
        raise ValueError(f"path must be 'fast' or 'faithful', got {path!r}")
    return SumRelease(total, 0.0 if noise is None else float(noise.variance), fed.n_clients, path)


def client_vector(
    view: ClientView,
    client_index: int,
    encode: ClientEncoder,
    length: int,
    noise: ShareNoise | None,
    rng: np.random.Generator,
) -> NDArray[np.int64]:
    """What one client sends: its encoding plus its own noise share.

    This is the function a deployed client runs (the Flower client calls it).
    """
    idx = np.full(view.n_examples, client_index, dtype=np.int64)
    vec = encode(view.scores, view.labels, idx).astype(np.int64, copy=True)
    if vec.shape != (length,):
        raise ValueError(f"encoder returned shape {vec.shape}, expected ({length},)")
    if noise is not None:
        vec += noise.sample_share(length, rng)
    return vec


@dataclass(frozen=True)
class FrequencyRelease:
    """Local-DP frequency estimates for several groups of reports.

    Attributes
    ----------
    raw_counts : list of ndarray of int64
        Per group, the aggregated perturbed bits/categories as received.
    estimates : list of ndarray of float64
        Per group, unbiased estimates of the true counts *within that group*.
    n_reports : ndarray of int64
        Number of reports in each group.
    path : {"fast", "faithful"}
    """

    raw_counts: list[NDArray[np.int64]]
    estimates: list[NDArray[np.float64]]
    n_reports: NDArray[np.int64]
    path: Path


def federated_frequencies(
    fed: Federation,
    item_of: ClientEncoder,
    group_of_client: NDArray[np.int64],
    oracles: list[FrequencyOracle],
    *,
    path: Path = "fast",
    rng: RNGLike = None,
) -> FrequencyRelease:
    """Each example sends one locally randomised report of one item.

    Parameters
    ----------
    fed : Federation
    item_of : callable
        ``item_of(scores, labels, client_index) -> item index per example`` in
        the domain of the example's group oracle (-1 for "nothing to report",
        sent as an all-zero input).
    group_of_client : ndarray of int64, shape (n_clients,)
        Which group (oracle) each client reports to; all its examples use it.
    oracles : list of FrequencyOracle
        One per group; ``oracles[g].n_bins`` is that group's domain size.
    path : {"fast", "faithful"}

    Returns
    -------
    FrequencyRelease
    """
    gen = as_generator(rng)
    n_groups = len(oracles)
    sizes = [int(o.n_bins) for o in oracles]
    group_of_example = group_of_client[fed.client_index]
    n_reports = np.bincount(group_of_example, minlength=n_groups).astype(np.int64)
    raw: list[NDArray[np.int64]] = []
    if path == "fast":
        items = item_of(fed.scores, fed.labels, fed.client_index)
        for g, oracle in enumerate(oracles):
            sel = items[(group_of_example == g) & (items >= 0)]
            true = np.bincount(sel, minlength=sizes[g]).astype(np.int64)
            raw.append(oracle.sample_aggregate(true, int(n_reports[g]), gen))
    elif path == "faithful":
        raw = [np.zeros(s, dtype=np.int64) for s in sizes]
        for i, child in enumerate(gen.spawn(fed.n_clients)):
            view = fed.client(i)
            g = int(group_of_client[i])
            idx = np.full(view.n_examples, i, dtype=np.int64)
            reports = oracles[g].perturb(item_of(view.scores, view.labels, idx), child)
            raw[g] += reports.sum(axis=0, dtype=np.int64)
    else:
        raise ValueError(f"path must be 'fast' or 'faithful', got {path!r}")
    estimates = [o.estimate(c, int(n)) for o, c, n in zip(oracles, raw, n_reports, strict=True)]
    return FrequencyRelease(raw, estimates, n_reports, path)


def assign_groups(n_clients: int, n_groups: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """Split clients uniformly at random into ``n_groups`` groups of (near) equal size."""
    return (rng.permutation(n_clients) % n_groups).astype(np.int64)


def limit_contributions(fed: Federation, bound: int, rng: np.random.Generator) -> Federation:
    """Keep at most ``bound`` uniformly random examples of every client.

    This is the client-side contribution bound that makes client-level
    sensitivity finite. Clients at or below the bound are unchanged.
    """
    sizes = fed.client_sizes
    if sizes.max() <= bound:
        return fed
    # Rank examples within their client by a random key; keep ranks < bound.
    key = rng.random(fed.n_examples)
    order = np.lexsort((key, fed.client_index))
    rank = np.arange(fed.n_examples) - np.repeat(fed.offsets[:-1], sizes)
    keep = np.empty(fed.n_examples, dtype=bool)
    keep[order] = rank < bound
    new_sizes = np.minimum(sizes, bound)
    offsets = np.zeros(fed.n_clients + 1, dtype=np.int64)
    np.cumsum(new_sizes, out=offsets[1:])
    return Federation(
        fed.scores[keep], fed.labels[keep], offsets, fed.client_ids, fed.kind, fed.score_range
    )
