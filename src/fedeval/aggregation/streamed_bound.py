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

from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from fedeval.data.grouping import grouped

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
    integer uniform on {0, ..., u − 1} being below s, which is certain when
    s = 0 or s = u), the first rows of all clients at once, then the second
    rows, and so on. Many rows (more than 16) are taken as one step: the
    count is drawn, and the rows are put in a uniformly random order (one
    permutation, then a stable grouping), whose first k stay.
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
        # one gather and one scatter per batch: (unseen rows << 32) | slots left
        self.state = (sizes << _HALF) | np.minimum(sizes, bound)

    def prepare(self, clients: NDArray[np.int64]) -> _Grouped:
        """A batch's rows of clients above the bound, grouped by client (stateless).

        Also the order in which the rows are decided (see the class Notes).
        :meth:`fedeval.data.Scan.batches` runs it in the reader thread, so this
        work overlaps with the decisions on the batch before.
        """
        rows = None if self.over is None else np.flatnonzero(self.over[clients])
        sub = clients if rows is None else clients[rows]
        owner, order = grouped(sub, self.n_clients)
        starts = np.flatnonzero(np.concatenate(([True], owner[1:] != owner[:-1])))
        here = np.diff(np.append(starts, owner.size))
        heavy = np.flatnonzero(here > _ROW_BY_ROW)
        light = None if heavy.size == 0 else np.flatnonzero(here <= _ROW_BY_ROW)
        more = np.flatnonzero((here > 1) & (here <= _ROW_BY_ROW))
        # by decreasing rows here (a counting sort: at most _ROW_BY_ROW fit in a byte),
        # so that the clients with a t-th row are a prefix
        more = more[np.argsort((_ROW_BY_ROW - here[more]).astype(np.uint8), kind="stable")]
        with_row = more.size - np.cumsum(np.bincount(here[more], minlength=2))
        return _Grouped(
            clients.shape[0], rows, order, starts, owner[starts], here, heavy, light, more, with_row
        )

    def __call__(self, batch: _Grouped | NDArray[np.int64]) -> NDArray[np.bool_]:
        """The rows to keep of the next batch (its clients, or :meth:`prepare` of them)."""
        b = batch if isinstance(batch, _Grouped) else self.prepare(batch)
        keep = np.ones(b.n_rows, dtype=bool)
        if b.who.size == 0:
            return keep
        state = self.state[b.who]
        unseen, slots = state >> _HALF, state & _LOW
        if np.any(b.here > unseen):
            raise ValueError("a client has more rows than counted: the data changed between passes")
        after = slots.copy()  # slots left after this batch
        lost = self._in_blocks(b.heavy, b.starts, b.here, unseen, after)
        lost += self._row_by_row(b, unseen, after)
        gone = b.order[np.concatenate(lost)]
        keep[gone if b.rows is None else b.rows[gone]] = False
        self.state[b.who] = ((unseen - b.here) << _HALF) | after
        return keep

    def _row_by_row(
        self, b: _Grouped, unseen: NDArray[np.int64], after: NDArray[np.int64]
    ) -> list[NDArray[np.intp]]:
        """Algorithm S on the light clients' rows, a rank at a time.

        The first rows of all of them are decided together (each stays with
        probability slots/unseen, certain when no slot is left or every
        unseen row must stay), then the second rows of those that have one,
        and so on. ``after`` holds the slots left and is updated in place.
        """
        light = b.light
        if light is None:
            take = self._below(after, unseen)
            lost = [b.starts[~take]]
            after -= take
        else:
            s = after[light]
            take = self._below(s, unseen[light])
            lost = [b.starts[light][~take]]
            after[light] = s - take
        more = b.more
        if more.size:
            pos, u, s = b.starts[more], unseen[more] - 1, after[more]
            for t in range(1, b.with_row.size - 1):
                k = b.with_row[t]
                take = self._below(s[:k], u[:k])
                lost.append(pos[:k][~take] + t)
                s[:k] -= take
                u[:k] -= 1
            after[more] = s
        return lost

    def _below(self, s: NDArray[np.int64], u: NDArray[np.int64]) -> NDArray[np.bool_]:
        """Whether an integer uniform on {0, ..., u − 1} is below s, for every pair (u >= 1)."""
        below: NDArray[np.bool_] = self.rng.integers(0, u) < s
        return below

    def _in_blocks(
        self,
        g: NDArray[np.intp],
        starts: NDArray[np.intp],
        here: NDArray[np.int64],
        unseen: NDArray[np.int64],
        after: NDArray[np.int64],
    ) -> list[NDArray[np.intp]]:
        """Clients with many rows in this batch: how many stay, then which (a random order)."""
        if g.size == 0:
            return []
        s, u, r = after[g], unseen[g], here[g]
        k = self.rng.hypergeometric(s, u - s, r)
        after[g] = s - k
        begin = np.cumsum(r) - r
        member = _ranges(starts[g], r)
        shuffle = self.rng.permutation(member.size)
        _, regroup = grouped(np.repeat(np.arange(g.size), r)[shuffle], g.size)
        member = member[shuffle][regroup]
        rank = np.arange(member.size) - np.repeat(begin, r)
        return [member[rank >= np.repeat(k, r)]]


class _Grouped(NamedTuple):
    """A batch's rows of clients above the bound, grouped (:meth:`StreamedBound.prepare`)."""

    n_rows: int
    rows: NDArray[np.intp] | None  # None: every row of the batch
    order: NDArray[np.intp]  # rows[order] are grouped by client, in stream order
    starts: NDArray[np.intp]  # where every client's group begins
    who: NDArray[np.int64]  # the client of every group
    here: NDArray[np.int64]  # its rows in the batch
    heavy: NDArray[np.intp]  # groups decided as one block
    light: NDArray[np.intp] | None  # groups decided row by row (None: all)
    more: NDArray[np.intp]  # light groups with a second row, by decreasing rows here
    with_row: NDArray[np.int64]  # how many of ``more`` have more than t rows here


def _ranges(starts: NDArray[np.intp], lengths: NDArray[np.int64]) -> NDArray[np.intp]:
    """``starts[i] + 0 .. lengths[i] - 1`` for every i, concatenated."""
    total = int(lengths.sum())
    return np.repeat(starts - (np.cumsum(lengths) - lengths), lengths) + np.arange(total)


#: Clients with at most this many rows in a batch are decided row by row (Algorithm S,
#: one vectorised step per rank); more, in one block (a hypergeometric count and a shuffle).
_ROW_BY_ROW = 16
_HALF = 32
_LOW = (1 << 32) - 1
