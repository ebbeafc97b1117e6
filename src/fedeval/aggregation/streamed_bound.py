"""A client-level contribution bound on a stream of batches, in one pass.

:func:`~fedeval.privacy.sampling.contribution_mask` bounds a federation held in
memory. A streamed source (:func:`fedeval.scan`) is bounded as it is read
instead: :class:`StreamedBound` keeps, batch by batch, a uniformly random
``bound``-subset of every client's rows, wherever in the stream they lie, with
O(clients) state, so the bounded release stays one streamed pass.

Its random choices belong next to ``contribution_mask`` in
:mod:`fedeval.privacy.sampling`; they live here, the one exception to "no
random draw outside privacy/" (``tools/check_architecture.py``), until that
module is free to change (issue 28).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from fedeval.data.grouping import grouped
from fedeval.privacy.sampling import raw_words

__all__ = ["StreamedBound"]


class StreamedBound:
    """A uniformly random ``bound``-subset of every client's rows, chosen batch by batch.

    Call it once per batch, in stream order, with the batch's dense client
    indices; it returns the rows to keep. Over a whole pass every client keeps
    ``min(size, bound)`` of its rows, a uniformly random subset of them.

    Parameters
    ----------
    sizes : ndarray of int64, shape (n_clients,)
        Every client's number of rows in the whole stream.
    bound : int
        The contribution bound B >= 1.
    seed : int
        Seeds this pass's generator: a fresh instance per pass keeps the same rows.

    Raises
    ------
    ValueError
        (On a call) a client has more rows than ``sizes`` says: the data
        changed between passes.

    Notes
    -----
    Exact, by selection sampling (Knuth, TAOCP vol. 2, §3.4.2, Algorithm S)
    taken a batch at a time. Let S be a uniformly random B-subset of a
    client's n rows, in stream order. With u of its rows not yet seen, s of S
    among them and r of them in this batch, the number of S-rows in the batch
    is Hypergeometric(s, u − s, r); given that it is k, they are a uniformly
    random k-subset of the r rows, and the rest of S is a uniformly random
    (s − k)-subset of the u − r rows still to come, so the same step applies
    to every later batch. A client's few rows in a batch are taken one at a
    time (the step with r = 1: the row stays with probability s/u, drawn as an
    integer uniform on {0, ..., u − 1} being below s, by Lemire's exact
    multiply-and-reject on one 32-bit word, certain when s = 0 or s = u): the
    first rows of all clients at once, then the second rows, and so on. Many
    rows (more than 16) are taken as one step: the count is drawn, and the
    rows are put in a uniformly random order (one permutation, then a stable
    grouping), whose first k stay.

    The batch is grouped by client once (:meth:`prepare`: one sort of packed
    ``client << bits | row`` keys, in the reader thread); the decisions then
    read and write the clients' packed states ``(unseen << shift) | slots``
    (32 bits where they fit, else 64) in ascending client order, and every rank
    after the first is a short vectorised step on the rows that have it.
    """

    def __init__(self, sizes: NDArray[np.int64], bound: int, seed: int) -> None:
        sizes = np.asarray(sizes, dtype=np.int64)
        if sizes.size and int(sizes.max()) >= 1 << 31:
            raise ValueError(
                f"a client holds {int(sizes.max())} rows; at most 2^31 - 1 are supported"
            )
        self.rng = np.random.default_rng(seed)
        self.n_clients = int(sizes.shape[0])
        over = sizes > bound
        # Rows of clients at or below the bound are always kept (their slots equal their
        # unseen rows); they are set aside first only when that saves work.
        self.over = over if sizes[over].sum() < 0.9 * sizes.sum() else None
        # One gather and one scatter per batch of (unseen rows << shift) | slots left, in
        # 32 bits where the largest client and the bound fit (random gathers and scatters
        # of 3M clients took 1.4-1.7 ms against 4.1 ms in 64 bits, numpy 2.4).
        self.shift = max(int(bound).bit_length(), 1)
        largest = int(sizes.max()) if sizes.size else 0
        dtype = np.uint32 if largest < 1 << (32 - self.shift) else np.uint64
        self.one_row: np.unsignedinteger[Any] = dtype(1 << self.shift)  # one row less unseen
        self.slots: np.unsignedinteger[Any] = dtype((1 << self.shift) - 1)
        packed = (sizes.astype(np.uint64) << self.shift) | np.minimum(sizes, bound).astype(
            np.uint64
        )
        self.state: NDArray[np.unsignedinteger[Any]] = packed.astype(dtype)

    def prepare(self, clients: NDArray[np.int64]) -> _Grouped:
        """A batch's rows of clients above the bound, grouped by client (stateless).

        Also the order in which the rows are decided (see the class Notes).
        :meth:`fedeval.data.Scan.batches` runs it in the reader thread, so this
        work overlaps with the decisions on the batch before.
        """
        rows = None if self.over is None else np.flatnonzero(self.over[clients])
        sub = clients if rows is None else clients[rows]
        m = sub.shape[0]
        owner, order = grouped(sub, self.n_clients)
        first = np.empty(m, dtype=bool)
        first[:1] = True
        np.not_equal(owner[1:], owner[:-1], out=first[1:])
        starts = np.flatnonzero(first)
        # The later rows (rank >= 1 in their group), their group and rank. Up to
        # the i-th later row pos[i], i + 1 rows are later rows and the other
        # pos[i] - i rows start groups: its group is pos[i] - i - 1 (no cumsum).
        pos = np.flatnonzero(np.logical_not(first, out=first))
        group = pos - np.arange(1, pos.shape[0] + 1)
        rank = pos - starts[group]
        heavy = np.unique(group[rank >= _ROW_BY_ROW])
        light = None
        heavy_rows = np.zeros(0, dtype=np.int64)
        if heavy.size:
            light_group = np.ones(starts.shape[0], dtype=bool)
            light_group[heavy] = False
            light = np.flatnonzero(light_group)
            heavy_rows = np.append(starts, m)[heavy + 1] - starts[heavy]
            later_light = light_group[group]
            pos, group, rank = pos[later_light], group[later_light], rank[later_light]
        # by rank (a counting sort: ranks below _ROW_BY_ROW fit in a byte), then in
        # stream order: a group has at most one row of each rank, so a rank's
        # decisions are one vectorised step
        rank8 = rank.astype(np.uint8)
        by_rank = np.argsort(rank8, kind="stable")
        ends = np.cumsum(np.bincount(rank8, minlength=1)[1:])
        pos = pos[by_rank]
        return _Grouped(
            clients.shape[0],
            rows,
            order,
            order[starts],
            owner[starts],
            heavy,
            heavy_rows,
            light,
            order[pos],
            group[by_rank],
            ends,
            starts if heavy.size else None,
        )

    def __call__(self, batch: _Grouped | NDArray[np.int64]) -> NDArray[np.bool_]:
        """The rows to keep of the next batch (its clients, or :meth:`prepare` of them)."""
        b = batch if isinstance(batch, _Grouped) else self.prepare(batch)
        if b.who.size == 0:
            return np.ones(b.n_rows, dtype=bool)
        # (rows unseen << shift) | slots left, of every group's client, updated row by row
        state = self.state[b.who]
        keep_sub = np.empty(b.order.shape[0], dtype=bool)
        # Algorithm S: the first rows of the light groups, then their second rows, ...
        if b.light is None:
            take = self._step(state)
            keep_sub[b.first_rows] = take
            state -= take
            state -= self.one_row
        else:
            g = b.light
            st = state[g]
            take = self._step(st)
            keep_sub[b.first_rows[g]] = take
            state[g] = st - take - self.one_row
        begin = 0
        for end in b.level_ends.tolist():
            g = b.level_group[begin:end]
            st = state[g]
            take = self._step(st)
            keep_sub[b.level_rows[begin:end]] = take
            state[g] = st - take - self.one_row
            begin = end
        if b.heavy.size:
            self._in_blocks(b, state, keep_sub)
        self.state[b.who] = state
        if b.rows is None:
            return keep_sub
        keep = np.ones(b.n_rows, dtype=bool)
        keep[b.rows] = keep_sub
        return keep

    def _step(self, state: NDArray[np.unsignedinteger]) -> NDArray[np.bool_]:
        """Whether each client keeps its next row: with probability s/u (Algorithm S, one row).

        Takes the clients' packed states (u rows unseen, s slots left), s <= u < 2^31.
        Lemire's multiply-and-reject on 32-bit words: with x uniform on
        {0, ..., 2^32 − 1}, ``x·u >> 32`` is uniform on {0, ..., u − 1} once the
        words whose low half ``x·u mod 2^32`` falls below ``2^32 mod u`` are drawn
        again; the row stays when ``x·u >> 32`` is below s. Exact, with a word per row
        (a row is drawn again with probability below u / 2^32).

        Raises
        ------
        ValueError
            A client has no unseen row left (u = 0): the data changed between passes.
        """
        u = state >> self.shift
        if not u.all():
            raise ValueError("a client has more rows than counted: the data changed between passes")
        s = state & self.slots
        m = np.multiply(self._words(u.shape[0]), u, dtype=np.uint64)
        below: NDArray[np.bool_] = (m >> _HALF) < s
        m &= _LOW
        redo = np.flatnonzero(m < u)  # only these can fall below 2^32 mod u (< u)
        while redo.size:
            redo = redo[m[redo] < _WORDS % u[redo]]
            if redo.size == 0:
                break
            again = np.multiply(self._words(redo.size), u[redo], dtype=np.uint64)
            below[redo] = (again >> _HALF) < s[redo]
            m[redo] = again & _LOW
        return below

    def _words(self, n: int) -> NDArray[np.uint32]:
        """``n`` independent integers uniform on {0, ..., 2^32 − 1}."""
        raw = raw_words(self.rng, (n + 1) // 2)
        words: NDArray[np.uint32] = raw.view(np.uint32)[:n]
        return words

    def _in_blocks(
        self, b: _Grouped, state: NDArray[np.unsignedinteger[Any]], keep: NDArray[np.bool_]
    ) -> None:
        """Groups with many rows in this batch: how many stay, then which (a random order).

        Their ``state`` (unseen rows, slots left) and rows of ``keep`` are updated in place.
        """
        assert b.starts is not None
        g, r = b.heavy, b.heavy_rows
        st = state[g]
        s, u = (st & self.slots).astype(np.int64), (st >> self.shift).astype(np.int64)
        if np.any(r > u):
            raise ValueError("a client has more rows than counted: the data changed between passes")
        k = self.rng.hypergeometric(s, u - s, r)
        state[g] = st - k.astype(st.dtype) - (r.astype(st.dtype) << self.shift)
        begin = np.cumsum(r) - r
        member = _ranges(b.starts[g], r)
        shuffle = self.rng.permutation(member.size)
        _, regroup = grouped(np.repeat(np.arange(g.size), r)[shuffle], g.size)
        member = member[shuffle][regroup]
        rank = np.arange(member.size) - np.repeat(begin, r)
        keep[b.order[member]] = rank < np.repeat(k, r)


class _Grouped(NamedTuple):
    """A batch's rows of clients above the bound, grouped (:meth:`StreamedBound.prepare`)."""

    n_rows: int
    rows: NDArray[np.intp] | None  # None: every row of the batch
    order: NDArray[np.intp]  # rows[order] are grouped by client, in stream order
    first_rows: NDArray[np.intp]  # the first row of every group (an index into rows)
    who: NDArray[np.int64]  # the client of every group
    heavy: NDArray[np.intp]  # groups decided as one block (more than _ROW_BY_ROW rows)
    heavy_rows: NDArray[np.int64]  # the rows of each
    light: NDArray[np.intp] | None  # groups decided row by row (None: all)
    level_rows: NDArray[np.intp]  # later rows of light groups (indices into rows), by rank
    level_group: NDArray[np.intp]  # the group of each
    level_ends: NDArray[np.int64]  # where the rows of rank 1, 2, ... end in level_rows
    starts: NDArray[np.intp] | None  # where every group begins in order (with heavy groups)


def _ranges(starts: NDArray[np.intp], lengths: NDArray[np.int64]) -> NDArray[np.intp]:
    """``starts[i] + 0 .. lengths[i] - 1`` for every i, concatenated."""
    total = int(lengths.sum())
    return np.repeat(starts - (np.cumsum(lengths) - lengths), lengths) + np.arange(total)


#: Clients with at most this many rows in a batch are decided row by row (Algorithm S,
#: one vectorised step per rank); more, in one block (a hypergeometric count and a shuffle).
_ROW_BY_ROW = 16
_HALF = 32
_LOW = (1 << 32) - 1
_WORDS = np.uint64(1 << 32)  # 2^32 as an array scalar: a Python int would not fit uint32
