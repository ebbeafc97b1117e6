"""Federated data: who holds which examples.

A :class:`Federation` is columnar: one array of scores, one of labels, and one of
dense client indices, **in the order the user gave them**. Building one never
sorts: the fast aggregation path works on the whole arrays at once and needs no
grouping. Grouping by client is computed lazily, once, and only where a client's
examples must be seen together (the faithful path, per-client views, subsets);
it is one sort of (index, position) keys
(:func:`fedeval.data.grouping.group_order`). Labels stay narrow (``int8`` for
binary tasks).

Score domains
-------------
*Binary* tasks have one score per example in a stated closed interval
``score_range`` (default ``(0, 1)``); scores outside it are an error, never
clipped. *Multiclass* tasks have an ``(n, c)`` array, declared either as
``"probabilities"`` (rows in [0, 1] summing to 1) or ``"logits"`` (any finite
reals).
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray

from fedeval.data.grouping import group_order, is_grouped
from fedeval.validation import check_binary_labels, check_scores, unsigned_view

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ClientView", "Federation", "ScoreKind"]

ScoreKind = Literal["binary", "probabilities", "logits"]

_PROBA_TOLERANCE = 1e-6


def _has_missing(values: NDArray[Any]) -> bool:
    """Whether an object array holds a missing value (None, NaN, pd.NA, NaT)."""
    import pandas as pd  # here, not at import: numeric client ids never need pandas

    return bool(pd.isna(values).any())


@dataclass(frozen=True)
class ClientView:
    """One client's examples (views when the federation is stored grouped, else copies).

    Attributes
    ----------
    client_id : hashable
        The client's identifier as given by the user.
    scores : ndarray, shape (n_i,) or (n_i, c)
    labels : ndarray of int, shape (n_i,)
    """

    client_id: Hashable
    scores: NDArray[np.float64]
    labels: NDArray[Any]

    @property
    def n_examples(self) -> int:
        return int(self.labels.shape[0])


@dataclass(frozen=True, eq=False)
class Federation:
    """Scores and labels spread over clients.

    Build one with :meth:`from_arrays`, :meth:`from_frame`, :func:`read` or a
    partitioner from :mod:`fedeval.partition`; the constructor itself trusts its
    inputs.

    Attributes
    ----------
    scores : ndarray of float64, shape (n,) or (n, c)
        In storage order (the user's order; grouped by client when built
        from ``offsets`` alone).
    labels : ndarray of int, shape (n,)
        0/1 for binary tasks (``int8``), 0..c-1 for multiclass.
    offsets : ndarray of int64, shape (n_clients + 1,)
        Client ``i`` holds ``offsets[i + 1] - offsets[i]`` examples: rows
        ``offsets[i]:offsets[i + 1]`` of the grouped order (:attr:`order`).
    client_ids : ndarray, shape (n_clients,)
        The user's client identifiers (client ``i`` is ``client_ids[i]``).
    kind : {"binary", "probabilities", "logits"}
    score_range : (float, float)
        The public score domain of binary tasks; ``(0, 1)`` for probabilities.
    """

    scores: NDArray[np.float64]
    labels: NDArray[Any]
    _offsets: NDArray[np.int64] | None
    client_ids: NDArray[Any]
    kind: ScoreKind = "binary"
    score_range: tuple[float, float] = (0.0, 1.0)
    _client_index: NDArray[np.int64] | None = field(default=None, repr=False)
    _order: NDArray[np.intp] | None = field(default=None, repr=False, compare=False)
    _id_lookup: tuple[NDArray[Any], NDArray[Any]] | None = field(
        default=None, repr=False, compare=False
    )
    #: Small non-negative integer ids whose per-client counts are not taken yet
    #: (``offsets`` is None until first read; the fast path never reads it).
    _uncounted_ids: NDArray[Any] | None = field(default=None, repr=False, compare=False)

    # ------------------------------------------------------------------ builders
    @classmethod
    def from_arrays(
        cls,
        scores: Any,
        labels: Any,
        clients: Any = None,
        *,
        kind: ScoreKind | Literal["auto"] = "auto",
        score_range: tuple[float, float] = (0.0, 1.0),
    ) -> Federation:
        """Build a federation from arrays.

        Parameters
        ----------
        scores : array-like, shape (n,) or (n, c)
            Binary scores in ``score_range``, or multiclass probabilities/logits.
        labels : array-like, shape (n,)
            0/1 (binary) or class indices 0..c-1 (multiclass).
        clients : array-like, shape (n,), optional
            The client holding each example. None means one example per client
            (the papers' default setting).
        kind : {"auto", "binary", "probabilities", "logits"}
            "auto" is "binary" for 1-D scores and "probabilities" for 2-D scores.
        score_range : (float, float)
            Closed public domain of binary scores.

        Raises
        ------
        ValueError
            Empty input, NaN/inf scores, scores outside the domain, labels out of
            range, mismatched lengths, probabilities not summing to 1.
        TypeError
            Non-numeric scores or labels.
        """
        scores_arr, labels_arr, kind_ = _validate_task(scores, labels, kind, score_range)
        n = labels_arr.shape[0]
        if clients is None:
            offsets = np.arange(n + 1, dtype=np.int64)
            offsets.flags.writeable = False
            # client i is id i: the ids are offsets[:-1] (a view, not a second arange)
            ids: NDArray[Any] = offsets[:-1]
            return cls(scores_arr, labels_arr, offsets, ids, kind_, _range_of(kind_, score_range))
        client_arr = np.asarray(clients)
        if client_arr.shape != (n,):
            raise ValueError(
                f"clients must have one entry per example: got shape {client_arr.shape}, expected ({n},)"
            )
        if client_arr.dtype.kind == "f" and not np.isfinite(client_arr).all():
            raise ValueError("clients contains NaN or inf")
        if client_arr.dtype == object and _has_missing(client_arr):
            raise ValueError("clients contains missing values")
        present = _small_id_presence(client_arr)
        if present is None:
            ids, inverse = np.unique(client_arr, return_inverse=True)
            return cls.from_dense_index(
                scores_arr, labels_arr, inverse.astype(np.int64), ids, kind_, score_range
            )
        ids = np.flatnonzero(present).astype(client_arr.dtype)
        rng_ = _range_of(kind_, score_range)
        # The clients' sizes (``offsets``) are counted on first use: the fast
        # path needs only which clients exist, and a presence mark is ~3x
        # cheaper than counting (scattered writes into a bool, not an int64, table).
        if present.all():  # ids 0..K-1 already: the ids are their own dense index
            index = client_arr.astype(np.int64, copy=False)
            return cls(
                scores_arr, labels_arr, None, ids, kind_, rng_, index, None, None, client_arr
            )
        # Ids with gaps: the dense index is one lookup per example, done only when
        # something needs it.
        table = (np.cumsum(present) - 1).astype(np.int32 if ids.size < 2**31 else np.int64)
        return cls(
            scores_arr, labels_arr, None, ids, kind_, rng_, None, None, (client_arr, table),
            client_arr,
        )  # fmt: skip

    @classmethod
    def from_frame(
        cls,
        df: pd.DataFrame,
        *,
        score: str | Sequence[str] = "score",
        label: str = "label",
        client: str | None = None,
        kind: ScoreKind | Literal["auto"] = "auto",
        score_range: tuple[float, float] = (0.0, 1.0),
    ) -> Federation:
        """Build a federation from a pandas DataFrame.

        Parameters
        ----------
        df : pandas.DataFrame
        score : str or sequence of str
            One column (binary) or one column per class (multiclass).
        label, client : str
            Column names; ``client=None`` means one example per row/client.

        Raises
        ------
        ValueError
            A named column is missing (the message lists the available ones),
            or the frame is empty.
        """
        import pandas as pd  # on first use: from_arrays and the fast path never need pandas

        if not isinstance(df, pd.DataFrame):
            raise TypeError(f"df must be a pandas DataFrame, got {type(df).__name__}")
        score_cols = [score] if isinstance(score, str) else list(score)
        wanted = [*score_cols, label] + ([client] if client is not None else [])
        missing = [c for c in wanted if c not in df.columns]
        if missing:
            raise ValueError(
                f"column(s) {missing} not found; available columns: {list(map(str, df.columns))}"
            )
        if len(df) == 0:
            raise ValueError("the data frame has no rows")
        s = df[score_cols[0]].to_numpy() if isinstance(score, str) else df[score_cols].to_numpy()
        clients = None if client is None else df[client].to_numpy()
        return cls.from_arrays(s, df[label].to_numpy(), clients, kind=kind, score_range=score_range)

    @classmethod
    def from_clients(
        cls,
        per_client: Sequence[tuple[Any, Any]],
        *,
        kind: ScoreKind | Literal["auto"] = "auto",
        score_range: tuple[float, float] = (0.0, 1.0),
    ) -> Federation:
        """Build a federation from a list of ``(scores, labels)`` pairs, one per client.

        Raises
        ------
        ValueError
            If any client holds no examples.
        """
        if len(per_client) == 0:
            raise ValueError("per_client is empty: a federation needs at least one client")
        sizes = []
        for i, (_s, y) in enumerate(per_client):
            n_i = len(np.asarray(y))
            if n_i == 0:
                raise ValueError(f"client {i} holds no examples; drop it or give it data")
            sizes.append(n_i)
        scores = np.concatenate([np.asarray(s, dtype=np.float64) for s, _ in per_client])
        labels = np.concatenate([np.asarray(y) for _, y in per_client])
        clients = np.repeat(np.arange(len(per_client)), sizes)
        return cls.from_arrays(scores, labels, clients, kind=kind, score_range=score_range)

    @classmethod
    def from_dense_index(
        cls,
        scores: NDArray[np.float64],
        labels: NDArray[Any],
        client_index: NDArray[np.int64],
        ids: NDArray[Any],
        kind: ScoreKind,
        score_range: tuple[float, float],
    ) -> Federation:
        """A federation from validated arrays and dense client indices 0..len(ids)-1.

        Examples stay in the given order (no sort, no copy); the grouping by
        client is computed only when asked for (:attr:`order`). The inputs are
        trusted: partitioners and builders call this after validating.
        """
        counts = np.bincount(client_index, minlength=ids.shape[0])
        offsets = np.zeros(ids.shape[0] + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        return cls(scores, labels, offsets, ids, kind, _range_of(kind, score_range), client_index)

    # ----------------------------------------------------------------- accessors
    @property
    def n_examples(self) -> int:
        return int(self.labels.shape[0])

    @property
    def n_clients(self) -> int:
        return int(self.client_ids.shape[0])

    @property
    def offsets(self) -> NDArray[np.int64]:
        """Cumulative client sizes, shape (n_clients + 1,).

        Client ``i`` holds ``offsets[i + 1] - offsets[i]`` examples: rows
        ``offsets[i]:offsets[i + 1]`` of the grouped order (:attr:`order`).
        Counted on first use (one ``np.bincount``) when built from small
        integer ids.
        """
        if self._offsets is None:
            raw = self._uncounted_ids
            assert raw is not None, "a Federation needs offsets or ids to count"
            counts = np.bincount(raw.astype(np.int64, copy=False))
            counts = counts[counts > 0]
            offsets = np.zeros(counts.shape[0] + 1, dtype=np.int64)
            np.cumsum(counts, out=offsets[1:])
            offsets.flags.writeable = False
            object.__setattr__(self, "_offsets", offsets)  # cache of a pure function of the ids
            return offsets
        return self._offsets

    @property
    def n_classes(self) -> int:
        return 2 if self.kind == "binary" else int(self.scores.shape[1])

    @cached_property
    def client_sizes(self) -> NDArray[np.int64]:
        """Number of examples held by each client (computed once)."""
        sizes = np.diff(self.offsets)
        sizes.flags.writeable = False
        return sizes

    @property
    def client_index(self) -> NDArray[np.int64]:
        """Dense client index (0..n_clients-1) of every stored example.

        Computed on first use when the user's ids had gaps (one table lookup per
        example; int32 when there are fewer than 2^31 clients).
        """
        if self._client_index is not None:
            return self._client_index
        if self._id_lookup is not None:
            raw, table = self._id_lookup
            idx = np.take(table, raw)
        elif self.n_clients == self.n_examples:  # one example per client
            idx = np.arange(self.n_examples, dtype=np.int64)
        else:
            idx = np.repeat(np.arange(self.n_clients, dtype=np.int64), self.client_sizes)
        object.__setattr__(self, "_client_index", idx)  # cache of a pure function of the ids
        return idx

    @property
    def one_example_per_client(self) -> bool:
        """Whether example i is client i (``from_arrays(..., clients=None)``): the index is arange."""
        return (
            self._client_index is None
            and self._id_lookup is None
            and self.n_clients == self.n_examples
        )

    @property
    def order(self) -> NDArray[np.intp] | None:
        """Rows in client order (stable), or None when the storage is grouped already.

        Computed once, on first use (:func:`fedeval.data.grouping.group_order`).
        """
        if self._client_index is None and self._id_lookup is None:
            return None  # built from offsets alone: stored grouped
        if self._order is None:
            idx = self.client_index
            order = None if is_grouped(idx) else group_order(idx, self.n_clients)
            # cache of a pure function of the client index; an empty array marks "grouped"
            object.__setattr__(
                self, "_order", np.empty(0, dtype=np.intp) if order is None else order
            )
        cached = self._order
        assert cached is not None
        return None if cached.size == 0 else cached

    def client(self, i: int) -> ClientView:
        """The ``i``-th client's examples (0 <= i < n_clients), in storage order."""
        if not 0 <= i < self.n_clients:
            raise IndexError(f"client index {i} out of range [0, {self.n_clients})")
        a, b = int(self.offsets[i]), int(self.offsets[i + 1])
        order = self.order
        if order is None:
            return ClientView(self.client_ids[i], self.scores[a:b], self.labels[a:b])
        rows = order[a:b]
        return ClientView(self.client_ids[i], self.scores[rows], self.labels[rows])

    def clients(self) -> Iterator[ClientView]:
        """Iterate over all clients' views, in storage order."""
        for i in range(self.n_clients):
            yield self.client(i)

    def subset(self, client_indices: Any) -> Federation:
        """A federation of the given clients only (copies their rows)."""
        idx = np.asarray(client_indices, dtype=np.int64)
        if idx.ndim != 1 or idx.size == 0:
            raise ValueError("client_indices must be a non-empty 1-D array of client indices")
        if idx.min() < 0 or idx.max() >= self.n_clients:
            raise ValueError(f"client indices must lie in [0, {self.n_clients})")
        sizes = self.client_sizes[idx]
        rows = self.rows_of(idx)  # grouped by client, in the order of idx
        offsets = np.zeros(idx.size + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        return Federation(
            self.scores[rows],
            self.labels[rows],
            offsets,
            self.client_ids[idx],
            self.kind,
            self.score_range,
        )

    def rows_of(self, client_indices: Any) -> NDArray[np.int64]:
        """Row indices of the given clients' examples, client by client (in the order given)."""
        idx = np.asarray(client_indices, dtype=np.int64)
        sizes = self.client_sizes[idx]
        starts = self.offsets[idx]
        grouped = np.repeat(
            starts - np.concatenate(([0], np.cumsum(sizes)[:-1])), sizes
        ) + np.arange(int(sizes.sum()))
        order = self.order
        return grouped if order is None else np.asarray(order[grouped], dtype=np.int64)

    def keep_rows(self, keep: NDArray[np.bool_]) -> Federation:
        """The federation with only the rows where ``keep`` is True (same clients, same order).

        A client may end up with no examples; it still takes part (and adds
        its noise share) in a release. O(n): no grouping.
        """
        index = self.client_index[keep]
        new_sizes = np.bincount(index, minlength=self.n_clients)
        offsets = np.zeros(self.n_clients + 1, dtype=np.int64)
        np.cumsum(new_sizes, out=offsets[1:])
        return Federation(
            self.scores[keep],
            self.labels[keep],
            offsets,
            self.client_ids,
            self.kind,
            self.score_range,
            index,
        )

    def __repr__(self) -> str:
        return (
            f"Federation(kind={self.kind!r}, n_examples={self.n_examples}, "
            f"n_clients={self.n_clients}, n_classes={self.n_classes}, score_range={self.score_range})"
        )


# ---------------------------------------------------------------------- helpers
def _small_id_presence(client_arr: NDArray[Any]) -> NDArray[np.bool_] | None:
    """Which ids occur, for small non-negative integer ids (else None).

    The common case (ids 0..K-1, possibly with gaps) is marked in O(n); other
    ids (negative, huge, strings) go through ``np.unique`` (a sort) in the
    caller. Both give sorted ids.
    """
    n = client_arr.shape[0]
    if client_arr.dtype.kind not in "iu" or n == 0:
        return None
    # One pass: a negative id reads as an unsigned one of at least 2^(bits-1)
    # (validation.unsigned_view), which is never a small id.
    hi = int(unsigned_view(client_arr).max())
    negative = client_arr.dtype.kind == "i" and hi >= 1 << (8 * client_arr.dtype.itemsize - 1)
    if negative or hi >= 4 * n + 1024:
        return None
    present = np.zeros(hi + 1, dtype=bool)
    threads = min(_PRESENCE_THREADS, n // _PRESENCE_MIN_PER_THREAD)
    if threads <= 1:
        present[client_arr] = True
        return present
    # Scattered writes release the GIL: each thread marks its slice into its own
    # table (no shared writes), and the tables are or-ed (~2x at 10M ids on 2 cores).
    from concurrent.futures import ThreadPoolExecutor

    step = -(-n // threads)
    tables = [present] + [np.zeros(hi + 1, dtype=bool) for _ in range(threads - 1)]

    def mark(i: int) -> None:
        tables[i][client_arr[i * step : (i + 1) * step]] = True

    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="fedeval-ids") as pool:
        list(pool.map(mark, range(threads)))
    for other in tables[1:]:
        present |= other
    return present


#: Threads that mark which client ids occur (:func:`_small_id_presence`), and the
#: fewest ids per thread for which a second thread pays.
_PRESENCE_THREADS = min(2, os.cpu_count() or 1)
_PRESENCE_MIN_PER_THREAD = 1 << 21


def _range_of(kind: ScoreKind, score_range: tuple[float, float]) -> tuple[float, float]:
    return (float(score_range[0]), float(score_range[1])) if kind == "binary" else (0.0, 1.0)


def _validate_task(
    scores: Any,
    labels: Any,
    kind: ScoreKind | Literal["auto"],
    score_range: tuple[float, float],
) -> tuple[NDArray[np.float64], NDArray[Any], ScoreKind]:
    s = np.asarray(scores)
    if kind not in ("auto", "binary", "probabilities", "logits"):
        raise ValueError(
            f"kind must be 'auto', 'binary', 'probabilities' or 'logits', got {kind!r}"
        )
    if s.size == 0:
        raise ValueError("scores is empty: a federation needs at least one example")
    if kind == "auto":
        kind = "binary" if s.ndim == 1 else "probabilities"
    y_raw = np.asarray(labels)
    if y_raw.ndim != 1:
        raise ValueError(f"labels must be 1-dimensional, got shape {y_raw.shape}")
    if y_raw.shape[0] != s.shape[0]:
        raise ValueError(
            f"scores and labels disagree in length: {s.shape[0]} scores, {y_raw.shape[0]} labels"
        )
    if kind == "binary":
        lo, hi = score_range
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            raise ValueError(f"score_range must be finite with low < high, got {score_range!r}")
        s64 = check_scores(s, score_range=(float(lo), float(hi)))
        return s64, check_binary_labels(y_raw), "binary"
    # multiclass
    if s.ndim != 2 or s.shape[1] < 2:
        raise ValueError(f"multiclass scores must have shape (n, c) with c >= 2, got {s.shape}")
    if s.dtype.kind not in "fiu":
        raise TypeError(f"scores must be numeric, got dtype {s.dtype}")
    s64 = s.astype(np.float64, copy=False)
    if not np.isfinite(s64).all():
        row = int(np.flatnonzero(~np.isfinite(s64).all(axis=1))[0])
        raise ValueError(f"{kind} contain NaN or inf (first at row {row})")
    if kind == "probabilities":
        if (s64 < 0).any() or (s64 > 1).any():
            raise ValueError("probabilities must lie in [0, 1]; pass kind='logits' for logits")
        err = np.abs(s64.sum(axis=1) - 1.0)
        if (err > _PROBA_TOLERANCE).any():
            row = int(np.argmax(err))
            raise ValueError(
                f"probability rows must sum to 1 (row {row} sums to {s64[row].sum():.6g}); "
                "pass kind='logits' for unnormalised scores"
            )
    if y_raw.dtype.kind == "f":
        if not (np.isfinite(y_raw).all() and np.all(y_raw == np.round(y_raw))):
            raise ValueError("multiclass labels must be integers 0..c-1")
    elif y_raw.dtype.kind not in "iu":
        raise TypeError(f"labels must be integers, got dtype {y_raw.dtype}")
    y = y_raw.astype(np.int64)
    c = s64.shape[1]
    bad = (y < 0) | (y >= c)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"labels must lie in 0..{c - 1}; index {i} has {y_raw[i]!r}")
    return s64, y, kind
