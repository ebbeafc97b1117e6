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
    integer uniform on {0, ..., u − 1} being below s), all clients at once;
    many rows (more than 16) are taken as one step: the count is drawn, and
    the rows are put in a uniformly random order (one permutation, then a
    stable grouping), whose first k stay.
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

    def __call__(self, clients: NDArray[np.int64]) -> NDArray[np.bool_]:
        keep = np.ones(clients.shape[0], dtype=bool)
        rows = None if self.over is None else np.flatnonzero(self.over[clients])
        sub = clients if rows is None else clients[rows]
        if sub.size == 0:
            return keep
        owner, order = grouped(sub, self.n_clients)
        starts = np.flatnonzero(np.concatenate(([True], owner[1:] != owner[:-1])))
        who = owner[starts]
        here = np.diff(np.append(starts, owner.size))
        state = self.state[who]
        unseen, slots = state >> _HALF, state & _LOW
        if np.any(here > unseen):
            raise ValueError("a client has more rows than counted: the data changed between passes")
        # Slots left after this batch, first where there is no choice: no slot left (every
        # row goes) or as many slots as unseen rows (every row stays).
        after = np.where(slots == unseen, slots - here, slots)
        lost = [_ranges(starts[slots == 0], here[slots == 0])]
        choose = (slots > 0) & (slots < unseen)
        one = np.flatnonzero(choose & (here == 1))  # most clients in most batches
        take = self.rng.integers(0, unseen[one]) < slots[one]
        after[one] -= take
        lost.append(starts[one[~take]])
        few = np.flatnonzero(choose & (here > 1) & (here <= _ROW_BY_ROW))
        lost += self._row_by_row(few, starts, here, unseen, slots, after)
        many = np.flatnonzero(choose & (here > _ROW_BY_ROW))
        lost += self._in_blocks(many, starts, here, unseen, slots, after)
        gone = order[np.concatenate(lost)]
        keep[gone if rows is None else rows[gone]] = False
        self.state[who] = ((unseen - here) << _HALF) | after
        return keep

    def _row_by_row(
        self,
        g: NDArray[np.intp],
        starts: NDArray[np.intp],
        here: NDArray[np.int64],
        unseen: NDArray[np.int64],
        slots: NDArray[np.int64],
        after: NDArray[np.int64],
    ) -> list[NDArray[np.intp]]:
        """Algorithm S on the clients' rows in this batch, one rank at a time (all clients at once).

        The rows at rank t of their client are decided together: each is kept
        with probability (slots left)/(rows left). A client leaves when its
        rows here are done or its choice is settled (no slot left: the rest
        go; as many slots as rows left: the rest stay).
        """
        lost: list[NDArray[np.intp]] = []
        pos, left, u, s = starts[g], here[g], unseen[g], slots[g]
        while g.size:
            take = self.rng.integers(0, u) < s
            lost.append(pos[~take])
            s = s - take
            u, left, pos = u - 1, left - 1, pos + 1
            # provisional for clients still deciding, final for the others
            after[g] = np.where(s == u, s - left, s)
            done = (left == 0) | (s == 0) | (s == u)
            drop_rest = done & (s == 0) & (left > 0)
            if drop_rest.any():
                lost.append(_ranges(pos[drop_rest], left[drop_rest]))
            stay = ~done
            g, pos, left, u, s = g[stay], pos[stay], left[stay], u[stay], s[stay]
        return lost

    def _in_blocks(
        self,
        g: NDArray[np.intp],
        starts: NDArray[np.intp],
        here: NDArray[np.int64],
        unseen: NDArray[np.int64],
        slots: NDArray[np.int64],
        after: NDArray[np.int64],
    ) -> list[NDArray[np.intp]]:
        """Clients with many rows in this batch: how many stay, then which (a random order)."""
        if g.size == 0:
            return []
        s, u, r = slots[g], unseen[g], here[g]
        k = self.rng.hypergeometric(s, u - s, r)
        after[g] = s - k
        begin = np.cumsum(r) - r
        member = _ranges(starts[g], r)
        shuffle = self.rng.permutation(member.size)
        _, regroup = grouped(np.repeat(np.arange(g.size), r)[shuffle], g.size)
        member = member[shuffle][regroup]
        rank = np.arange(member.size) - np.repeat(begin, r)
        return [member[rank >= np.repeat(k, r)]]


def _ranges(starts: NDArray[np.intp], lengths: NDArray[np.int64]) -> NDArray[np.intp]:
    """``starts[i] + 0 .. lengths[i] - 1`` for every i, concatenated."""
    total = int(lengths.sum())
    return np.repeat(starts - (np.cumsum(lengths) - lengths), lengths) + np.arange(total)


#: Clients with at most this many rows in a batch are decided row by row (Algorithm S,
#: one vectorised step per rank); more, in one block (a hypergeometric count and a shuffle).
_ROW_BY_ROW = 16
_HALF = 32
_LOW = (1 << 32) - 1
