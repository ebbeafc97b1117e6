"""The two ways to compute a federated sum: fast (exact in distribution) and faithful.

* ``path="faithful"`` runs what a deployment runs. Every client encodes its own
  examples, adds its own noise share (:func:`client_vector`) or randomises each
  report (:func:`client_reports`), and the server adds the vectors. The Flower
  apps call exactly these two client functions, one client each; in process
  the same work is done for blocks of clients at once (their encodings summed,
  every client's share or report still its own independent draw, all drawn
  from the release's generator), so the cost is the draws themselves, not a
  Python loop over the clients. A block's Pólya or Skellam shares are drawn as
  their compound-Poisson jumps (:meth:`AdditiveNoise.shares_sum
  <fedeval.privacy.noise.AdditiveNoise.shares_sum>`): O(jumps), about
  2·length·(−log(1 − α)) for the whole federation, instead of O(clients ×
  vector length); reports (local DP) still cost O(clients × part length).
* ``path="fast"`` is *exact in distribution*. A linear encoding of all
  examples is the sum of the clients' encodings (one ``np.bincount``), and the
  sum of the noise is drawn directly (n Pólya shares sum to one discrete
  Laplace draw per coordinate; n OUE reports sum to two binomials per bin).
  Cost O(examples + vector length), whatever the number of clients.

Tests in ``tests/statistical/test_aggregation_paths.py`` show both release the
same distribution.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from functools import partial
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from fedeval.aggregation.streamed_bound import StreamedBound
from fedeval.data import Federation, Scan
from fedeval.privacy.mechanism_for import Mechanism
from fedeval.privacy.mechanisms.randomized_response import flip_labels
from fedeval.privacy.noise import restrict
from fedeval.privacy.sampling import (
    SPLIT_COUNTS_LIMIT,
    assign_groups,
    contribution_mask,
    group_sizes,
    seeded_contribution_mask,
    spawn_seeds,
    split_counts,
    uniform_seed,
)
from fedeval.sketches.base import Sketch

__all__ = [
    "FAITHFUL_BLOCK_CELLS",
    "Path",
    "as_float_in_place",
    "bound_client",
    "bound_contributions",
    "client_blocks",
    "client_reports",
    "client_vector",
    "flip_federation_labels",
    "local_reports",
    "owned_int64",
    "sum_reports",
    "sum_vectors",
]

#: Noise vectors at least this long are drawn in a second thread while the data
#: are encoded (measured on 2 cores: 2^24 draws + a 10M-example encoding, 135 ms
#: in sequence, 95 ms overlapped; below ~2^20 the thread costs more than it saves).
OVERLAP_NOISE_MIN_SIZE = 1 << 20

Path = Literal["fast", "faithful"]


def check_path(path: Any) -> Path:
    if path not in ("fast", "faithful"):
        raise ValueError(f"path must be 'fast' or 'faithful', got {path!r}")
    out: Path = path
    return out


def _zeros(sketch: Sketch) -> NDArray[Any]:
    return np.zeros(sketch.length, dtype=np.int64 if sketch.integer else np.float64)


# -------------------------------------------------------------- contributions
def bound_contributions(
    fed: Federation | Scan, bound: int, rng: np.random.Generator
) -> Federation | Scan:
    """Keep at most ``bound`` uniformly random examples of every client (the client-side bound).

    Linear time on a Federation (:func:`~fedeval.privacy.sampling.contribution_mask`).
    A Dask scan is shuffled on the client column and bounded partition by
    partition. A local scan stays streamed: its batches are bounded as they
    are read (:class:`StreamedBound`, seeded once here, so every pass keeps the
    same rows); the clients' sizes cost one pass over the client column first.
    """
    if int(fed.client_sizes.max()) <= bound:
        return fed
    if isinstance(fed, Scan):
        if fed.engine == "dask":
            return fed.bounded(
                partial(seeded_contribution_mask, bound=bound),
                partial(spawn_seeds, rng),
                np.minimum(fed.client_sizes, bound),
            )
        sizes = fed.client_sizes
        return fed.filtered(
            partial(StreamedBound, bound=bound, seed=uniform_seed(rng)), np.minimum(sizes, bound)
        )
    keep = contribution_mask(fed.client_index, fed.offsets, bound, rng)
    return fed.keep_rows(keep)


def bound_client(
    scores: NDArray[np.float64],
    labels: NDArray[np.int64],
    bound: int | None,
    rng: np.random.Generator,
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """One client's own subsample to the contribution bound (what a deployed client does)."""
    n = labels.shape[0]
    if bound is None or n <= bound:
        return scores, labels
    keep = contribution_mask(
        np.zeros(n, dtype=np.int64), np.array([0, n], dtype=np.int64), bound, rng
    )
    return scores[keep], labels[keep]


# ---------------------------------------------------------- additive noise
def client_vector(
    scores: NDArray[np.float64],
    labels: NDArray[np.int64],
    client_index: int,
    sketch: Sketch,
    mechanism: Mechanism,
    rng: np.random.Generator,
    *,
    part: int | None = None,
) -> NDArray[Any]:
    """What one client sends: its encoding plus its own noise share.

    Parameters
    ----------
    scores, labels : ndarray
        The client's examples (already within the contribution bound).
    client_index : int
        The client's index in the federation (for sketches with per-client coordinates).
    sketch, mechanism
        From the release.
    rng : numpy.random.Generator
        The client's own random stream.
    part : int, optional
        Layout "assign": the one part this client encodes.
    """
    vec = _checked(_encode_one(scores, labels, client_index, sketch, part), sketch)
    return _add_own_noise(vec, [client_index], sketch, mechanism, rng)


def _encode_one(
    scores: NDArray[np.float64],
    labels: NDArray[np.int64],
    client_index: int,
    sketch: Sketch,
    part: int | None,
) -> NDArray[Any]:
    idx = np.full(labels.shape[0], client_index, dtype=np.int64)
    if part is None:
        return sketch.encode(scores, labels, idx)
    return sketch.encode_assigned(scores, labels, idx, np.full(labels.shape[0], part))


def _checked(vec: Any, sketch: Sketch) -> NDArray[Any]:
    """A fresh vector of the sketch's dtype; an encoder of the wrong length is an error."""
    out = np.array(vec, dtype=np.int64 if sketch.integer else np.float64, copy=True)
    if out.shape != (sketch.length,):
        raise ValueError(f"encoder returned shape {out.shape}, expected ({sketch.length},)")
    return out


def _add_own_noise(
    vec: NDArray[Any],
    clients: Sequence[int],
    sketch: Sketch,
    mechanism: Mechanism,
    rng: np.random.Generator,
) -> NDArray[Any]:
    """``vec`` (the sum of these clients' encodings) plus every client's own noise.

    Each client's share (or its own noise on its own coordinates) is an
    independent draw; all of them come from one call (``shares_sum``; one
    client's share is ``share`` itself, what a deployed client draws). The
    noise variables map onto the coordinates linearly (``noise_to_values``,
    which the fast path relies on too), so the map of the shares' sum is the
    sum of their maps.
    """
    noise = mechanism.noise
    if noise is None:
        return vec
    if mechanism.placement == "shares":
        summed = noise.shares_sum(len(clients), sketch.noise_size, rng)
        assert summed is not None
        vec += sketch.noise_to_values(summed).astype(vec.dtype, copy=False)
    elif mechanism.placement == "owner":
        coords = np.concatenate([sketch.owned_coordinates(int(i)) for i in clients])
        own = restrict(noise, coords).server(coords.size, rng)
        assert own is not None
        vec = vec.astype(np.float64) if not noise.integer else vec
        np.add.at(vec, coords, own)
    return vec


def sum_vectors(
    fed: Federation | Scan,
    sketch: Sketch,
    mechanism: Mechanism,
    *,
    path: Path,
    rng: np.random.Generator,
    groups: NDArray[np.int64] | None = None,
) -> NDArray[Any]:
    """The noisy sum of every client's vector.

    Parameters
    ----------
    groups : ndarray of int64, shape (n_clients,), optional
        Layout "assign": the part each client encodes.
    """
    noise = mechanism.noise
    if path == "fast":
        # The summed noise does not depend on the data, and the encoding draws
        # nothing from ``rng``: a large noise vector is drawn in a second thread
        # while the data are encoded (numpy releases the GIL in both; the
        # generator is used by that thread alone, so the draws are the same).
        pending: Future[NDArray[Any]] | None = None
        pool: ThreadPoolExecutor | None = None
        if noise is not None and sketch.noise_size >= OVERLAP_NOISE_MIN_SIZE:
            pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fedeval-noise")
            pending = pool.submit(noise.total, sketch.noise_size, rng, fed.n_clients)
        try:
            if isinstance(fed, Scan) and sketch.counts_rows and groups is None:
                # The sum of [rows] over the clients is the scan's row count: from the
                # Parquet metadata, or Σ min(size, B) under a contribution bound, with no
                # pass over the data (the bounded pass is the costly one: issue 28).
                total = np.array([fed.n_examples], dtype=np.int64)
            elif isinstance(fed, Scan):
                short = sketch.batch_encoding() if groups is None else None
                if short is not None:  # a shorter vector per batch, expanded once
                    total = short.expand(
                        fed.encode(
                            short.encoder,
                            length=short.length,
                            integer=sketch.integer,
                            reads_clients=sketch.reads_clients,
                        )
                    )
                else:
                    total = fed.encode(
                        _encoder(sketch, groups),
                        length=sketch.length,
                        integer=sketch.integer,
                        reads_clients=groups is not None or sketch.reads_clients,
                    )
            elif groups is None:
                total = sketch.encode_clients(fed)
            else:
                total = sketch.encode_assigned(
                    fed.scores, fed.labels, fed.client_index, _per_example(fed, groups)
                )
        finally:
            if pool is not None:
                pool.shutdown(wait=True)
        total = np.asarray(total)
        if noise is not None:
            raw = (
                pending.result()
                if pending is not None
                else noise.total(sketch.noise_size, rng, fed.n_clients)
            )
            drawn = sketch.noise_to_values(raw)
            if np.result_type(total, drawn) == total.dtype and total.flags.writeable:
                # The encoding is ours: no second vector-sized array, and an int64
                # sum becomes the release's floats in the same pass.
                if owned_int64(total):
                    return as_float_in_place(total, plus=drawn)
                total += drawn
            else:
                total = total + drawn
        return total
    assert isinstance(fed, Federation)  # the release reads a scan into memory for this path
    total = _zeros(sketch)
    for block in client_blocks(fed.n_clients, sketch.noise_size):
        total = total + _block_vector(fed, block, sketch, mechanism, rng, groups)
    if mechanism.placement == "aggregator" and noise is not None:
        server = noise.server(sketch.noise_size, rng)
        assert server is not None
        total = total + sketch.noise_to_values(server)
    return total


#: Elements per piece of :func:`as_float_in_place`: 256 KB of int64, in a core's L2.
_FLOAT_PIECE = 1 << 15


def owned_int64(vec: NDArray[Any]) -> bool:
    """Whether ``vec`` is an int64 array that :func:`as_float_in_place` can write over."""
    return bool(
        vec.dtype == np.int64
        and vec.flags.owndata
        and vec.flags.writeable
        and vec.flags.c_contiguous
    )


def as_float_in_place(
    vec: NDArray[np.int64], *, plus: NDArray[np.int64] | None = None
) -> NDArray[np.float64]:
    """``vec + plus`` (or ``vec``) as float64, written over ``vec``'s own memory.

    For a sum the caller gives away (:func:`owned_int64`; nothing may read
    ``vec`` afterwards). Each int64 becomes the float64 of the same value in
    the same 8 bytes: numpy defines a copy between overlapping arrays as if
    through a temporary, so the values are those of ``astype`` (exact below
    2^53), and only the speed depends on how numpy does it. Cache-sized
    pieces make the addition and the conversion one pass over memory: at
    h = 22 (2^24 coordinates) 25 ms instead of 35 ms for the add and an
    in-place conversion, or 58 ms and a second 134 MB array for the add and
    ``astype`` (measured on this project's 2-core machine).
    """
    out = vec.view(np.float64)
    for a in range(0, vec.shape[0], _FLOAT_PIECE):
        piece = vec[a : a + _FLOAT_PIECE]
        if plus is not None:
            piece += plus[a : a + _FLOAT_PIECE]
        np.copyto(out[a : a + _FLOAT_PIECE], piece, casting="unsafe")
    return out


#: The faithful path works on blocks of clients: at most this many noise draws
#: (clients × noise variables) at once, ~16 MB of int64 shares.
FAITHFUL_BLOCK_CELLS = 1 << 21


def client_blocks(n_clients: int, cells_per_client: int) -> list[range]:
    """Consecutive blocks of clients, each holding at most :data:`FAITHFUL_BLOCK_CELLS` cells."""
    per_block = max(1, FAITHFUL_BLOCK_CELLS // max(int(cells_per_client), 1))
    return [range(lo, min(lo + per_block, n_clients)) for lo in range(0, n_clients, per_block)]


def _block_vector(
    fed: Federation,
    block: range,
    sketch: Sketch,
    mechanism: Mechanism,
    rng: np.random.Generator,
    groups: NDArray[np.int64] | None,
) -> NDArray[Any]:
    """Σ over a block of clients of what each sends: its encoding plus its own noise.

    What :func:`client_vector` computes for one client, for many at once: the
    encodings summed as the server sums them (a linear sketch encodes the
    block's examples at once; others encode client by client in
    ``encode_clients``), and every client's own noise (:func:`_add_own_noise`).
    """
    clients = np.arange(block.start, block.stop)
    if groups is None:
        vec = sketch.encode_clients(fed, clients)
    elif sketch.linear:
        rows = fed.rows_of(clients)
        index = fed.client_index[rows]
        vec = sketch.encode_assigned(fed.scores[rows], fed.labels[rows], index, groups[index])
    else:  # every client encodes only its assigned part, on its own
        vec = _zeros(sketch)
        for i in clients:
            view = fed.client(int(i))
            vec += _encode_one(view.scores, view.labels, int(i), sketch, int(groups[i]))
    return _add_own_noise(_checked(vec, sketch), block, sketch, mechanism, rng)


def _per_example(fed: Federation, per_client: NDArray[np.int64]) -> NDArray[np.int64]:
    """A per-client array read at every example (no gather when example i is client i)."""
    return per_client if fed.one_example_per_client else per_client[fed.client_index]


def _encoder(sketch: Sketch, groups: NDArray[np.int64] | None) -> Any:
    """The batch encoder of a streamed source: all parts, or each client's assigned part."""
    if groups is None:
        return sketch.encode
    return partial(_encode_assigned, sketch, groups)


def _encode_assigned(
    sketch: Sketch,
    groups: NDArray[np.int64],
    scores: NDArray[np.float64],
    labels: NDArray[np.int64],
    clients: NDArray[np.int64],
) -> NDArray[Any]:
    return sketch.encode_assigned(scores, labels, clients, groups[clients])


# --------------------------------------------------------------- local reports
def client_reports(
    scores: NDArray[np.float64],
    labels: NDArray[np.int64],
    sketch: Sketch,
    mechanism: Mechanism,
    part: int,
    rng: np.random.Generator,
) -> NDArray[np.int64]:
    """One client's local-DP reports at its part, summed over its examples.

    Each example sends one randomised report of its item (its coordinate in
    the part); the client forwards the sum of the bit vectors.
    """
    size = sketch.parts[part].length
    items = sketch.items(scores, labels, np.full(labels.shape[0], part, dtype=np.int64))
    reports = mechanism.oracle(size).perturb(items.astype(np.int64), rng)
    return np.asarray(reports.sum(axis=0, dtype=np.int64), dtype=np.int64)


def local_reports(
    fed: Federation | Scan,
    sketch: Sketch,
    mechanism: Mechanism,
    *,
    path: Path,
    rng: np.random.Generator,
) -> tuple[list[NDArray[np.int64]], NDArray[np.int64], NDArray[np.int64]]:
    """Local DP: split the clients at random over the parts, and sum their reports per part.

    Every client reports at one part, drawn by
    :func:`~fedeval.privacy.sampling.assign_groups`. On the fast path, when
    every client holds one example and the sketch declares atoms, the split
    is drawn from the atom counts instead of client by client
    (:func:`~fedeval.privacy.sampling.split_counts`, the same distribution of
    every part's true item counts, hence of the release), which costs
    O(parts × atoms) instead of a permutation of the clients.

    Returns
    -------
    raw : list of ndarray of int64
        Part p's summed bit vectors.
    n_reports : ndarray of int64, shape (n_parts,)
    clients_per_part : ndarray of int64, shape (n_parts,)
    """
    n_clients, n_parts = fed.n_clients, len(sketch.parts)
    per_part = group_sizes(n_clients, n_parts)
    n_atoms = sketch.n_atoms
    if (
        path == "fast"
        and n_atoms is not None
        and fed.n_examples == n_clients
        and n_clients < SPLIT_COUNTS_LIMIT
        # a chain of hypergeometric draws per atom and part: cheaper than a
        # permutation of the clients unless the atoms far outnumber them
        and n_parts * n_atoms <= 4 * n_clients + (1 << 16)
    ):
        if isinstance(fed, Scan):
            atoms = fed.encode(partial(_atoms, sketch), length=n_atoms, reads_clients=False)
        else:
            atoms = sketch.encode_atoms(fed.scores, fed.labels)
        true = sketch.parts_from_atoms(split_counts(atoms, per_part, rng))
        raw = [
            mechanism.oracle(p.length).sample_aggregate(true[g], int(per_part[g]), rng)
            for g, p in enumerate(sketch.parts)
        ]
        return raw, per_part.copy(), per_part
    groups = assign_groups(n_clients, n_parts, rng)
    raw, n_reports = sum_reports(fed, sketch, mechanism, groups, path=path, rng=rng)
    return raw, n_reports, per_part


def _atoms(
    sketch: Sketch,
    scores: NDArray[np.float64],
    labels: NDArray[np.int64],
    clients: NDArray[np.int64],
) -> NDArray[np.int64]:
    return sketch.encode_atoms(scores, labels)


def sum_reports(
    fed: Federation | Scan,
    sketch: Sketch,
    mechanism: Mechanism,
    groups: NDArray[np.int64],
    *,
    path: Path,
    rng: np.random.Generator,
) -> tuple[list[NDArray[np.int64]], NDArray[np.int64]]:
    """Per part, the summed randomised reports of its clients, and the number of reports.

    Returns
    -------
    raw : list of ndarray of int64
        Part p's summed bit vectors (length of part p).
    n_reports : ndarray of int64, shape (n_parts,)
    """
    n_parts = len(sketch.parts)
    sizes = [p.length for p in sketch.parts]
    raw: list[NDArray[np.int64]] = []
    if isinstance(fed, Scan):
        n_reports = np.bincount(groups, weights=fed.client_sizes, minlength=n_parts).astype(
            np.int64
        )
    else:
        group_of_example = _per_example(fed, groups)
        n_reports = np.bincount(group_of_example, minlength=n_parts).astype(np.int64)
    if path == "fast":
        # One pass: a one-hot sketch's assigned encoding holds, in part g, the
        # counts of the items its examples report (one bincount over a combined key).
        if isinstance(fed, Scan):
            counts = fed.encode(_encoder(sketch, groups), length=sketch.length)
        else:
            counts = np.asarray(
                sketch.encode_assigned(fed.scores, fed.labels, fed.client_index, group_of_example),
                dtype=np.int64,
            )
        offsets = sketch.part_offsets()
        for g in range(n_parts):
            true = counts[offsets[g] : offsets[g + 1]]
            raw.append(mechanism.oracle(sizes[g]).sample_aggregate(true, int(n_reports[g]), rng))
        return raw, n_reports
    assert isinstance(fed, Federation)  # the release reads a scan into memory for this path
    # Every example's report is its own draw (client_reports, for many clients at
    # once): the examples of the clients assigned to part g are perturbed in chunks.
    raw = [np.zeros(s, dtype=np.int64) for s in sizes]
    for g in range(n_parts):
        rows = fed.rows_of(np.flatnonzero(groups == g))
        step = max(1, FAITHFUL_BLOCK_CELLS // max(sizes[g], 1))
        for lo in range(0, rows.size, step):
            chunk = rows[lo : lo + step]
            items = sketch.items(
                fed.scores[chunk], fed.labels[chunk], np.full(chunk.size, g, dtype=np.int64)
            )
            reports = mechanism.oracle(sizes[g]).perturb(items.astype(np.int64), rng)
            raw[g] += reports.sum(axis=0, dtype=np.int64)
    return raw, n_reports


# ---------------------------------------------------------- labels flipped
def flip_federation_labels(
    fed: Federation, flip_probability: float, rng: np.random.Generator
) -> Federation:
    """Randomized response on every label (each label party flips its own; per example either way)."""
    return replace(fed, labels=flip_labels(fed.labels, flip_probability, rng).astype(np.int64))
