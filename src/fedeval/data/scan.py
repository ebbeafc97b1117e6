"""Streamed and distributed sources: ``fe.scan``.

:func:`scan` returns a lazy :class:`Scan`: nothing is read until a release
needs it. A linear sketch is then encoded **batch by batch** (Parquet row
groups, CSV blocks, Dask partitions) and the encodings are summed, so memory is
bounded by one batch plus the sketch, whatever the number of rows (and, between
the two passes of a client-level bound, by at most 256 MB of the client ids
that the first pass read: see below). Each batch
is validated as it arrives (NaN/inf, scores outside the domain, labels not
0/1), and an error names the file (or partition) and the row.

Two engines run the same encoder:

* ``"arrow"`` (local): a path, a glob, a directory of Parquet or CSV files, a
  list of files, or a :class:`pyarrow.dataset.Dataset`, read with pyarrow;
* ``"dask"``: a ``dask.dataframe.DataFrame`` (or a path when a
  ``dask.distributed`` client is active). Every partition is encoded on a
  worker and only the small vectors travel, summed in a tree on the workers;
  the release function draws the noise once, on the driver. A frame that is
  ``read_parquet`` of local files is read on the workers with pyarrow (its
  row counts come from the footers, as on the arrow engine), so the planning
  count and the encoding cost one pass together. A client-level
  contribution bound is applied after Dask's shuffle on the client column
  (:meth:`Scan.bounded`), so a client whose rows span several partitions is
  bounded as a whole.

What cannot stream (the faithful path, which runs every client's own encoder;
randomized response on labels) reads the data into a
:class:`~fedeval.data.federation.Federation` (:meth:`Scan.to_federation`), with
the same per-batch validation.

Client indices
--------------
With ``client=None`` every row is its own client, and its index is its row
number. With a client column, one pass over that column (only) finds the
sorted distinct ids (:meth:`Scan.client_ids`) and, in most cases, their sizes.
A row's dense index is the position of its id among them. Small
non-negative integer ids (the common case) are marked in a table indexed by the
id, so a row's dense index is one table lookup (none when the ids are
0..K-1); other ids (strings, huge integers) are found by binary search. The
index is computed only when the encoder reads it (``reads_clients``): the
hierarchy, for one, does not, so an example-level release reads the client
column once, to count the clients, and then only scores and labels. Before a
client-level contribution bound, the first pass keeps the integer ids it read
(4 bytes a row, up to 64M rows) for the bounded pass, which takes them instead
of decoding the client column again.

A client-level contribution bound on the arrow engine is a stateful filter
over the batches (:meth:`Scan.filtered`), supplied by the aggregation layer:
the bounded scan is still one streamed pass.
"""

from __future__ import annotations

import collections
import contextlib
import copy
import functools
import glob as globlib
import math
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np
from numpy.typing import NDArray

from fedeval.data.federation import Federation

__all__ = ["Batch", "RowFilter", "Scan", "scan"]

# pyarrow is imported where it is used, not here: pyarrow.dataset pulls in pandas
# (~0.3 s), and fe.evaluate on in-memory arrays reads no file.

Engine = Literal["arrow", "dask"]
Encoder = Callable[[NDArray[np.float64], NDArray[np.int8], NDArray[np.int64]], NDArray[Any]]


class RowFilter(Protocol):
    """Which rows of every batch to keep (a fresh filter per pass, see :meth:`Scan.filtered`)."""

    def prepare(self, keys: NDArray[np.int64], /) -> Any:
        """Stateless work on a batch's client keys (run in the reader thread)."""

    def __call__(self, prepared: Any, /) -> NDArray[np.bool_]:
        """The rows of the batch to keep; called once per batch, in order."""


_DEFAULT_BATCH = 1 << 20
#: Non-negative integer ids below this are counted in a table indexed by the id (8 bytes
#: each), every ``_COUNT_EVERY`` ids; below ``_MARK_IDS_BELOW`` they are marked present
#: (1 byte each); larger ones are merged by sorting.
_COUNT_IDS_BELOW = 1 << 23
_COUNT_EVERY = 1 << 22
_MARK_IDS_BELOW = 1 << 28
#: pyarrow's read-ahead within a file: two batches, one file at a time. Its default
#: (16 batches, 4 files) holds ~150 MB more of decoded batches beside the reader
#: thread's own prefetch (:data:`PREFETCH_DEPTH`); none at all halves the speed of
#: a pass over a client column alone (30M int64 ids, 1M-row row groups: 0.69–0.80 s
#: without, 0.34–0.35 s with two and :func:`_streamed_parquet`). In a full evaluation
#: both cores are busy anyway, and the gain is mostly absorbed.
_READ_OPTIONS: dict[str, Any] = {"batch_readahead": 2, "fragment_readahead": 0}
#: Clients are counted in a table of every client per batch below this; above, by sorting.
_COUNT_CLIENTS_BELOW = 1 << 23
_PROGRESS_DELAY_S = 2.0
_PROGRESS_MININTERVAL_S = 0.5


@dataclass(frozen=True)
class Batch:
    """One validated batch: scores, 0/1 labels, dense client index, and where it came from."""

    scores: NDArray[np.float64]
    labels: NDArray[np.int8]
    clients: NDArray[np.int64]
    where: str
    first_row: int


@dataclass(frozen=True, eq=False)
class Scan:
    """A lazy binary-task source (see the module docstring). Build it with :func:`scan`.

    Attributes
    ----------
    source : pyarrow.dataset.Dataset or dask.dataframe.DataFrame
    score, label, client : str
        Column names (``client=None``: one row per client).
    score_range : (float, float)
        The public, closed score domain.
    engine : {"arrow", "dask"}
    batch_size : int
        Rows per batch on the arrow engine.
    progress : bool
        Show a progress bar (rows, MB/s) when a pass lasts longer than 2 s.
    row_filter : callable or None
        Arrow engine: makes a fresh per-batch row filter for every pass (see :meth:`filtered`).
    """

    source: Any
    score: str
    label: str
    client: str | None
    score_range: tuple[float, float]
    engine: Engine
    batch_size: int = _DEFAULT_BATCH
    progress: bool = True
    row_filter: Callable[[NDArray[np.int64]], RowFilter] | None = field(default=None, repr=False)
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    kind = "binary"

    # ----------------------------------------------------------------- sizes
    @property
    def n_examples(self) -> int:
        """Number of rows (Parquet: from the file metadata, without reading the data)."""
        if "n_examples" not in self._cache:
            if self.engine == "dask":
                pieces = _dask_parquet_pieces(self)
                self._cache["n_examples"] = (
                    int(self.source.shape[0].compute())
                    if pieces is None
                    else sum(p.rows for p in pieces)
                )
            else:
                self._cache["n_examples"] = int(self.source.count_rows())
        return int(self._cache["n_examples"])

    @property
    def n_clients(self) -> int:
        """Number of clients (rows, or distinct ids of the client column)."""
        if self.client is None:
            return self.n_examples
        return self._clients().n_clients

    def keep_ids_for_bound(self) -> None:
        """Have the first pass over the client column keep the ids it reads, for a bound.

        A client-level contribution bound (:meth:`filtered`) reads the client
        column again, with the scores; kept ids spare that decoding
        (:class:`_PassIds`). The release layer asks for it before the first
        pass when its model bounds contributions; after the first pass, or
        without a client column, it does nothing. Arrow engine only.
        """
        if self.engine == "arrow" and self.client is not None and "clients" not in self._cache:
            self._cache["keep_ids"] = True

    def client_ids(self) -> NDArray[Any]:
        """Sorted distinct client ids (one pass over the client column, cached)."""
        return self._clients().ids

    @property
    def client_sizes(self) -> NDArray[np.int64]:
        """Rows per client, in the order of :meth:`client_ids`.

        Counted by the pass that finds the ids, except for integer ids from
        2^23 to 2^28, which that pass only marks present: one more pass over
        the client column counts them, when first asked.
        """
        if self.client is None:
            return np.ones(self.n_examples, dtype=np.int64)
        table = self._clients()
        if table.sizes is None:
            table = self._count_sizes(table)
        assert table.sizes is not None
        return table.sizes

    def _clients(self) -> _ClientTable:
        cached: _ClientTable | None = self._cache.get("clients")
        if cached is not None:
            return cached
        if self.client is None:
            raise ValueError("this scan has no client column: every row is its own client")
        if self.engine == "dask":
            counts = self.source[self.client].value_counts().compute()
            order = np.argsort(counts.index.to_numpy(), kind="stable")
            table = _ClientTable(
                ids=counts.index.to_numpy()[order],
                sizes=counts.to_numpy().astype(np.int64)[order],
            )
        else:
            tally = _IdTally()
            pass_ids = _PassIds() if self._cache.get("keep_ids") else None
            for values, where, first in self._column_batches([self.client]):
                ids = _client_values(values[0], where, first, self.client)
                integer = ids.dtype.kind in "iu" and ids.size > 0
                span = (int(ids.min()), int(ids.max())) if integer else None
                tally.add(ids, span)
                if pass_ids is not None:
                    pass_ids.add(ids, span, where, first)
            table = tally.result()
            if pass_ids is not None:
                self._cache["pass_ids"] = pass_ids  # for the bounded pass
        self._cache["clients"] = table
        return table

    def _count_sizes(self, table: _ClientTable) -> _ClientTable:
        """Rows per client (dense index, then counts): a pass over the client column, or
        over the ids the first pass kept (:class:`_PassIds`)."""
        assert self.client is not None
        n = table.n_clients
        if self.engine == "dask":
            counts = self.source[self.client].value_counts().compute()
            sizes = np.zeros(n, dtype=np.int64)
            sizes[table.index(counts.index.to_numpy())] = counts.to_numpy()
        else:
            sizes = np.zeros(n, dtype=np.int64)
            held: _PassIds | None = self._cache.get("pass_ids")
            batches = (
                held.kept()
                if held is not None and held.parts
                else (
                    _client_values(values[0], where, first, self.client)
                    for values, where, first in self._column_batches([self.client])
                )
            )
            for ids in batches:
                dense = table.index(ids)
                if n < _COUNT_CLIENTS_BELOW:
                    sizes += np.bincount(dense, minlength=n)
                else:  # a table of every client per batch would dwarf the batch
                    u, c = np.unique(dense, return_counts=True)
                    sizes[u] += c
        out = table.with_sizes(sizes)
        self._cache["clients"] = out
        return out

    def n_positives(self) -> int:
        """Exact number of positive labels (one pass over the label column).

        Only for releases without noise (secure aggregation), where the exact
        class counts are what the release shows anyway.
        """
        if self.engine == "dask":
            return int(self.source[self.label].astype("int64").sum().compute())
        total = 0
        for values, where, first in self._column_batches([self.label]):
            total += int(_check_labels(values[0], where, first).sum(dtype=np.int64))
        return total

    # ------------------------------------------------------------- batches
    def _fragments(self) -> list[tuple[Any, str]]:
        frags = list(self.source.get_fragments())
        return [(f, str(getattr(f, "path", "") or f"fragment {i}")) for i, f in enumerate(frags)]

    def _column_batches(
        self,
        columns: Sequence[str],
        transform: Callable[[list[NDArray[Any]], str, int], Any] | None = None,
    ) -> Iterator[tuple[Any, str, int]]:
        """Arrow engine: numpy columns of every batch, with the file and first row.

        With ``transform``, ``transform(columns, file, first_row)`` of every
        batch instead, computed in the reader thread, in order: a batch's
        stateless work (validation, the client index) then overlaps with the
        caller's work on the batch before it.
        """
        import pyarrow as pa

        total = None
        if self.progress:
            try:  # the rows read, which a filtered scan does not all keep
                if "source_rows" not in self._cache:
                    self._cache["source_rows"] = int(self.source.count_rows())
                total = self._cache["source_rows"]
            except (pa.ArrowException, OSError):
                total = None
        items: Iterator[tuple[Any, str, int, int, int]] = self._read(columns)
        if transform is not None:
            items = ((transform(c, w, f), w, f, b, n) for c, w, f, b, n in items)
        with _Progress(self.progress, total) as bar:
            for payload, where, first, nbytes, rows in _prefetched(items, PREFETCH_DEPTH):
                yield payload, where, first
                bar.update(rows, nbytes)

    def _read(
        self, columns: Sequence[str]
    ) -> Iterator[tuple[list[NDArray[Any]], str, int, int, int]]:
        import pyarrow as pa

        for frag, where in self._fragments():
            first = 0
            batches = frag.to_batches(
                columns=list(columns),
                batch_size=self.batch_size,
                **_READ_OPTIONS,
                **_streamed_parquet(frag),
            )
            while True:
                try:
                    rb = next(batches)
                except StopIteration:
                    break
                except (pa.ArrowException, OSError) as exc:
                    raise ValueError(
                        f"{where} could not be read after row {first}: {exc}"
                    ) from None
                if rb.num_rows == 0:
                    continue
                cols = [_to_numpy(rb.column(i)) for i in range(rb.num_columns)]
                yield cols, where, first, rb.nbytes, rb.num_rows
                first += rb.num_rows

    def batches(self, *, clients: bool = True) -> Iterator[Batch]:
        """Validated batches of the arrow engine (scores, labels, dense client index).

        Parameters
        ----------
        clients : bool
            Compute every row's dense client index. When False the client
            column is not read (unless a row filter needs it) and
            ``Batch.clients`` holds zeros that must not be read.
        """
        if self.engine != "arrow":
            raise ValueError("batches() streams the arrow engine; Dask partitions run on workers")
        keep_rows = None
        if self.row_filter is not None:
            keep_rows = self.row_filter(self._clients().filter_sizes(self._cache["source_sizes"]))
        client = self.client if clients or keep_rows is not None else None
        table = None if client is None else self._clients()
        # the first pass's ids, when it kept them: taken (and freed) whether read or not
        held: _PassIds | None = self._cache.get("pass_ids")
        claimed = None if held is None else held.claim()
        pass_ids = claimed if client is not None else None
        del claimed  # not read: freed now, not at the end of the pass
        cols = [self.score, self.label]
        if client is not None and pass_ids is None:
            cols.append(client)
        offset = [0]

        def validated(values: list[NDArray[Any]], where: str, first: int) -> tuple[Any, ...]:
            # in the reader thread, batch after batch
            s = _check_scores(values[0], self.score_range, where, first)
            y = _check_labels(values[1], where, first)
            n = s.shape[0]
            prepared = None
            if table is not None and client is not None:
                ids = (
                    pass_ids.take(where, first, n)
                    if pass_ids is not None
                    else _client_values(values[2], where, first, client)
                )
                c = table.index(ids) if clients else _unread(n)
                if keep_rows is not None:
                    prepared = keep_rows.prepare(table.filter_keys(ids))
            elif clients:
                c = np.arange(offset[0], offset[0] + n, dtype=np.int64)
            else:
                c = _unread(n)
            offset[0] += n
            return s, y, c, prepared

        for (s, y, c, prepared), where, first in self._column_batches(cols, validated):
            if keep_rows is not None:
                # a gather of the kept rows: numpy's boolean-mask indexing of a random
                # mask took 6x as long (1M rows, numpy 2.4, 2 cores)
                kept = np.flatnonzero(keep_rows(prepared))
                s, y = s.take(kept), y.take(kept)
                c = c.take(kept) if clients else _unread(s.shape[0])
            yield Batch(s, y, c, where, first)
        if pass_ids is not None:
            pass_ids.check_used()

    # -------------------------------------------------------------- encode
    def encode(
        self,
        encoder: Encoder,
        *,
        length: int,
        integer: bool = True,
        reads_clients: bool = True,
    ) -> NDArray[Any]:
        """Σ over batches (or partitions) of ``encoder(scores, labels, client_index)``.

        Exact for a linear encoder: the sum of the batches' encodings is the
        encoding of all rows. On the Dask engine each partition is encoded on a
        worker and only its vector is sent back.

        Parameters
        ----------
        encoder : callable
        length : int
            Length of the encoded vector.
        integer : bool
            Sum in int64 (else float64).
        reads_clients : bool
            Whether ``encoder`` reads its client index. When False no index is
            computed (the client column is not even read) and the encoder gets
            zeros.
        """
        dtype = np.int64 if integer else np.float64
        if self.engine == "dask":
            return _dask_encode(self, encoder, length, dtype, reads_clients)
        total = np.zeros(length, dtype=dtype)
        for b in self.batches(clients=reads_clients):
            total += np.asarray(encoder(b.scores, b.labels, b.clients), dtype=dtype)
        return total

    def to_federation(self) -> Federation:
        """Read every row into memory (validated batch by batch), as a Federation."""
        if self.engine == "dask":
            cols = [self.score, self.label] + ([self.client] if self.client is not None else [])
            df = self.source[cols].compute()
            return Federation.from_frame(
                df,
                score=self.score,
                label=self.label,
                client=self.client,
                score_range=self.score_range,
            )
        parts = list(self.batches())
        if not parts:
            raise ValueError("the scanned source has no rows")
        scores = np.concatenate([b.scores for b in parts])
        labels = np.concatenate([b.labels for b in parts])
        if self.client is None:
            return Federation.from_arrays(scores, labels, None, score_range=self.score_range)
        index = np.concatenate([b.clients for b in parts])
        return Federation.from_dense_index(
            scores, labels, index, self.client_ids(), "binary", self.score_range
        )

    def filtered(
        self,
        make_filter: Callable[[NDArray[np.int64]], RowFilter],
        client_sizes: NDArray[np.int64],
    ) -> Scan:
        """Arrow engine: the rows that a filter keeps, batch by batch, in every pass.

        Parameters
        ----------
        make_filter : callable
            ``make_filter(sizes)`` returns a fresh :class:`RowFilter` at the
            start of every pass. Its ``prepare`` runs on every batch's client
            keys in the reader thread, where ``sizes[key]`` is the client's
            number of rows in this scan: the dense client index, or, when the
            ids are small non-negative integers, the id itself (no lookup
            table per row; ``sizes`` is then 0 at the id values no row has).
            The filter itself is called once per batch, in order, with what
            ``prepare`` returned, and returns the rows to keep. A stateful
            filter (a contribution bound that spans batches) is thus
            restarted on every pass, and a filter seeded at construction
            keeps the same rows in every pass.
        client_sizes : ndarray of int64, shape (n_clients,)
            Rows per client after the filter (the filter's caller knows them:
            a bound keeps ``min(size, B)``).

        Returns
        -------
        Scan
            The same clients (a client may keep no rows; it still takes part).
        """
        if self.engine != "arrow" or self.client is None:
            raise ValueError("filtered() streams the arrow engine of a scan with a client column")
        if self.row_filter is not None:
            raise ValueError("this scan is filtered already")
        sizes = np.asarray(client_sizes, dtype=np.int64)
        if sizes.shape != (self.n_clients,):
            raise ValueError(f"client_sizes has shape {sizes.shape}, expected ({self.n_clients},)")
        out = Scan(
            self.source,
            self.score,
            self.label,
            self.client,
            self.score_range,
            self.engine,
            self.batch_size,
            self.progress,
            make_filter,
        )
        out._cache["clients"] = self._clients().with_sizes(sizes)
        out._cache["source_sizes"] = self.client_sizes
        if "pass_ids" in self._cache:  # one holder: whichever pass comes first takes the ids
            out._cache["pass_ids"] = self._cache["pass_ids"]
        out._cache["n_examples"] = int(sizes.sum())
        return out

    def bounded(
        self,
        mask: Callable[[NDArray[np.int64], NDArray[np.int64], int], NDArray[np.bool_]],
        seeds: Callable[[int], list[int]],
        client_sizes: NDArray[np.int64] | None = None,
    ) -> Scan:
        """Dask engine: the rows that ``mask`` keeps of every client, after a shuffle.

        Dask's own shuffle (``set_index`` on the client column, which keeps the
        column) brings every client's rows into exactly one partition, so ``mask(client_index, offsets, seed)`` (the privacy
        layer's contribution bound, with one seed per partition from
        ``seeds(n_partitions)``) sees whole clients, however the input was
        partitioned. ``client_sizes``, the rows per client that the mask keeps when
        the caller knows them (a bound B keeps ``min(size, B)``), gives the
        bounded scan's row count without running the shuffle to count it.
        """
        if self.engine != "dask" or self.client is None:
            raise ValueError("bounded() shuffles a Dask source with a client column")
        shuffled = self.source.set_index(self.client, drop=False)
        per_partition = seeds(int(shuffled.npartitions))
        client = self.client

        def keep(part: Any, partition_info: Any = None) -> Any:
            if len(part) == 0:
                return part.reset_index(drop=True)
            k = 0 if partition_info is None else int(partition_info["number"])
            _, inverse, counts = np.unique(
                part[client].to_numpy(), return_inverse=True, return_counts=True
            )
            offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
            kept = part[mask(inverse.astype(np.int64), offsets, per_partition[k])]
            return kept.reset_index(drop=True)  # the client stays a column only

        out = Scan(
            shuffled.map_partitions(keep, meta=shuffled._meta.reset_index(drop=True)),
            self.score,
            self.label,
            self.client,
            self.score_range,
            "dask",
            self.batch_size,
            self.progress,
        )
        # The same clients take part; their sizes after the bound are counted if asked.
        if client_sizes is None:
            out._cache["clients"] = self._clients().with_sizes(None)
            return out
        sizes = np.asarray(client_sizes, dtype=np.int64)
        if sizes.shape != (self.n_clients,):
            raise ValueError(f"client_sizes has shape {sizes.shape}, expected ({self.n_clients},)")
        out._cache["clients"] = self._clients().with_sizes(sizes)
        out._cache["n_examples"] = int(sizes.sum())
        return out

    def __repr__(self) -> str:
        return (
            f"Scan(engine={self.engine!r}, score={self.score!r}, label={self.label!r}, "
            f"client={self.client!r}, score_range={self.score_range})"
        )


def scan(
    source: Any,
    *,
    score: str = "score",
    label: str = "label",
    client: str | None = None,
    score_range: tuple[float, float] = (0.0, 1.0),
    format: Literal["parquet", "csv"] | None = None,
    batch_size: int = _DEFAULT_BATCH,
    progress: bool = True,
) -> Scan:
    """A lazy, streamed (or distributed) source of scores and labels.

    Parameters
    ----------
    source : str, Path, sequence of paths, pyarrow.dataset.Dataset or dask.dataframe.DataFrame
        A Parquet or CSV file, a glob (``"logs/*.parquet"``), a directory of
        such files (partitioned layouts included), a list of files, a pyarrow
        dataset, or a Dask DataFrame. A path is read through Dask when a
        ``dask.distributed`` client is active.
    score, label, client : str
        Column names; ``client=None`` means one row per client.
    score_range : (float, float)
        Closed public score domain; a score outside it is an error.
    format : {"parquet", "csv"}, optional
        Inferred from the file extensions when not given.
    batch_size : int
        Rows per batch (arrow engine): memory is bounded by one batch plus the sketch.
    progress : bool
        Progress bar (rows, MB/s) on passes longer than 2 s.

    Returns
    -------
    Scan
        Accepted by :func:`fedeval.evaluate`, :func:`fedeval.aggregation.release`
        and :func:`fedeval.ecdf.federated_ecdf`.

    Raises
    ------
    FileNotFoundError
        No file matches the path.
    ValueError
        Unknown format, a missing column (the message lists the available
        ones), a bad score range. Bad values are found when the data is read,
        and the error names the file and row.
    """
    import pyarrow as pa
    import pyarrow.dataset as pads

    lo, hi = score_range
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise ValueError(f"score_range must be finite with low < high, got {score_range!r}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    rng_ = (float(lo), float(hi))
    columns = [score, label] + ([client] if client is not None else [])
    if _is_dask_frame(source):
        _check_columns(columns, list(map(str, source.columns)), "the Dask DataFrame")
        return Scan(source, score, label, client, rng_, "dask", batch_size, progress)
    if isinstance(source, pads.Dataset):
        dataset = source
    else:
        files, fmt = _resolve_files(source, format)
        if _dask_client_active():
            ddf = _dask_read(files, fmt, columns)
            _check_columns(columns, list(map(str, ddf.columns)), str(source))
            return Scan(ddf, score, label, client, rng_, "dask", batch_size, progress)
        try:
            dataset = pads.dataset(files, format=fmt)
        except (pa.ArrowException, OSError) as exc:
            raise ValueError(f"{source} could not be opened as {fmt}: {exc}") from None
    _check_columns(columns, list(dataset.schema.names), str(source))
    return Scan(dataset, score, label, client, rng_, "arrow", batch_size, progress)


# ---------------------------------------------------------------------- helpers
def _resolve_files(source: Any, fmt: str | None) -> tuple[list[str], str]:
    if isinstance(source, str | Path):
        text = str(source)
        p = Path(text)
        if p.is_dir():
            files = sorted(str(f) for f in p.rglob("*") if f.is_file() and _format_of(f, None))
        elif any(ch in text for ch in "*?["):
            files = sorted(f for f in globlib.glob(text, recursive=True) if Path(f).is_file())
        elif p.is_file():
            files = [text]
        else:
            raise FileNotFoundError(f"no such file or directory: {text}")
    else:
        files = [str(f) for f in source]
        missing = [f for f in files if not Path(f).is_file()]
        if missing:
            raise FileNotFoundError(f"no such file: {missing[0]}")
    if not files:
        raise FileNotFoundError(f"no Parquet or CSV file found at {source}")
    formats = {fmt or _format_of(Path(f), None) for f in files}
    if None in formats or len(formats) != 1:
        raise ValueError(
            f"cannot tell one format (parquet or csv) from the files at {source}; pass format="
        )
    out = formats.pop()
    assert out is not None
    if out not in ("parquet", "csv"):
        raise ValueError(f"format must be 'parquet' or 'csv', got {out!r}")
    return files, out


def _format_of(path: Path, default: str | None) -> str | None:
    name = path.name.lower()
    if name.endswith((".parquet", ".pq")):
        return "parquet"
    if name.endswith((".csv", ".csv.gz")):
        return "csv"
    return default


def _check_columns(columns: list[str], available: list[str], where: str) -> None:
    missing = [c for c in columns if c not in available]
    if missing:
        raise ValueError(
            f"column(s) {missing} not found in {where}; available columns: {available}"
        )


def _streamed_parquet(fragment: Any) -> dict[str, Any]:
    """Parquet pages read as they are decoded, not a row group's columns at once.

    pyarrow pre-buffers every column chunk of a row group by default: a pass over
    (score, label, client) of 30M rows, with :data:`_READ_OPTIONS`, then peaks
    ~150 MB higher (+330 against +182 MB) for no speed (0.50–0.68 against
    0.47–0.56 s streamed).
    Only for files on the local disk, and where the format's scan options are
    pyarrow's defaults. On other filesystems (S3, GCS) pre-buffering coalesces
    many small reads into a few large ones, which is what it is for; options a
    caller set on their own dataset (decryption, buffer sizes) are kept as they are.
    """
    import pyarrow.dataset as pads
    import pyarrow.fs as pafs

    fmt = getattr(fragment, "format", None)
    if not isinstance(fmt, pads.ParquetFileFormat):
        return {}
    if not isinstance(getattr(fragment, "filesystem", None), pafs.LocalFileSystem):
        return {}
    default = pads.ParquetFragmentScanOptions()
    current = fmt.default_fragment_scan_options
    if current is not None and not default.equals(current):
        return {}
    return {"fragment_scan_options": pads.ParquetFragmentScanOptions(pre_buffer=False)}


def _to_numpy(col: Any) -> NDArray[Any]:
    import pyarrow as pa

    if col.null_count:
        # A null is a missing value: floats make it NaN, so validation reports it.
        return np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.float64)
    if pa.types.is_boolean(col.type):
        return np.asarray(col.to_numpy(zero_copy_only=False), dtype=bool)
    return np.asarray(col.to_numpy(zero_copy_only=False))


def _check_scores(
    values: NDArray[Any], score_range: tuple[float, float], where: str, first: int
) -> NDArray[np.float64]:
    if values.dtype.kind not in "fiu":
        raise TypeError(f"scores in {where} must be numeric, got dtype {values.dtype}")
    s = values.astype(np.float64, copy=False)
    lo, hi = score_range
    # Two reductions, no temporaries: NaN propagates through min/max and inf lies
    # outside a finite range, so a valid batch passes here; otherwise find the row.
    if s.size == 0 or (s.min() >= lo and s.max() <= hi):
        return s
    ok = (s >= lo) & (s <= hi)  # NaN compares False
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        what = "NaN or inf" if not math.isfinite(s[i]) else f"outside score_range [{lo}, {hi}]"
        raise ValueError(f"score {float(s[i])} is {what} in {where} at row {first + i}")
    return s


def _check_labels(values: NDArray[Any], where: str, first: int) -> NDArray[np.int8]:
    if values.dtype.kind == "b":
        return values.view(np.int8)
    if values.dtype.kind not in "iuf":
        raise TypeError(f"labels in {where} must be 0/1 or booleans, got dtype {values.dtype}")
    # Integers: two reductions, no temporaries (a 0/1 batch has min >= 0 and max <= 1).
    if values.dtype.kind in "iu" and (
        values.size == 0 or (values.min() >= 0 and values.max() <= 1)
    ):
        return values.astype(np.int8, copy=False)
    ok = (values == 0) | (values == 1)
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        raise ValueError(f"label {values[i].item()!r} is not 0 or 1 in {where} at row {first + i}")
    return values.astype(np.int8, copy=False)


def _client_values(values: NDArray[Any], where: str, first: int, name: str) -> NDArray[Any]:
    if values.dtype.kind == "f" and not np.isfinite(values).all():
        i = int(np.flatnonzero(~np.isfinite(values))[0])
        raise ValueError(
            f"client column {name!r} has a missing value in {where} at row {first + i}"
        )
    if values.dtype == object:
        bad = np.array([v is None for v in values])
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"client column {name!r} has a missing value in {where} at row {first + i}"
            )
    return values


def _unread(n: int) -> NDArray[np.int64]:
    """A client index that the encoder does not read: zeros, read-only, no memory."""
    return np.broadcast_to(np.int64(0), (n,))


class _ClientTable:
    """The distinct ids of a client column and how a row's id becomes its dense index.

    Built from sorted ids (strings, floats, huge or negative integers: a row's
    index is a binary search) or from a presence table of small non-negative
    integer ids (``present[id]``). From a presence table, the sorted ids and
    the lookup table (``lookup[id]``, the dense index of every id value) are
    computed only when asked for: counting the clients needs neither, and at
    10^8 clients they would take 0.8 and 0.4 GB.

    Parameters
    ----------
    ids : ndarray, optional
        Sorted distinct ids.
    present : ndarray of bool, optional
        Whether each id value occurs (exactly one of ``ids`` and ``present``).
    dtype : numpy dtype
        The client column's dtype (ids built from ``present`` take it).
    sizes : ndarray of int64, optional
        Rows per client, when counted.
    """

    def __init__(
        self,
        *,
        ids: NDArray[Any] | None = None,
        present: NDArray[np.bool_] | None = None,
        dtype: Any = np.int64,
        sizes: NDArray[np.int64] | None = None,
    ) -> None:
        self._ids, self.present, self.dtype, self.sizes = ids, present, dtype, sizes
        self.search = present is None
        if present is None:
            assert ids is not None
            self.n_clients = int(ids.shape[0])
        else:
            self.n_clients = int(np.count_nonzero(present))
        # ids 0..K-1 are their own dense index
        self.identity = present is not None and self.n_clients == present.shape[0]

    def with_sizes(self, sizes: NDArray[np.int64] | None) -> _ClientTable:
        """The same clients with other sizes (ids and lookup shared, not recomputed)."""
        out = copy.copy(self)
        out.sizes = sizes
        return out

    @property
    def ids(self) -> NDArray[Any]:
        """Sorted distinct ids; client ``i`` is ``ids[i]``."""
        if self._ids is None:
            assert self.present is not None
            self._ids = np.flatnonzero(self.present).astype(self.dtype)
        return self._ids

    @functools.cached_property
    def lookup(self) -> NDArray[np.integer]:
        assert self.present is not None
        table: NDArray[np.integer] = np.cumsum(
            self.present, dtype=np.int32 if self.n_clients < 2**31 else np.int64
        )
        table -= 1
        return table

    def filter_keys(self, values: NDArray[Any]) -> NDArray[np.int64]:
        """Keys of a row filter (:meth:`Scan.filtered`): the ids themselves, else the index.

        The ids are their own keys when they index a presence table at most
        twice as long as the number of clients (no lookup per row); an id that
        no row had in the first pass then keeps its key, and the filter finds
        that its client has no rows.
        """
        if self.present is None or self.present.shape[0] > 2 * self.n_clients:
            return self.index(values)
        keys = values.astype(np.int64, copy=False)
        if keys.size and (int(keys.min()) < 0 or int(keys.max()) >= self.present.shape[0]):
            raise ValueError("a client id was not in the scan's first pass: the data changed")
        return keys

    def filter_sizes(self, sizes: NDArray[np.int64]) -> NDArray[np.int64]:
        """``sizes`` (one per client) indexed by :meth:`filter_keys`."""
        if self.present is None or self.present.shape[0] > 2 * self.n_clients or self.identity:
            return sizes
        out = np.zeros(self.present.shape[0], dtype=np.int64)
        out[self.present] = sizes
        return out

    def index(self, values: NDArray[Any]) -> NDArray[np.int64]:
        """Dense index (position in ``ids``) of every value; every value must be an id."""
        if self.search:
            return np.asarray(np.searchsorted(self.ids, values), dtype=np.int64)
        if self.identity:
            return values.astype(np.int64, copy=False)
        return np.take(self.lookup, values).astype(np.int64, copy=False)


class _PassIds:
    """The client ids that a scan's first pass read, kept for its next pass over the scores.

    The first pass (:meth:`Scan._clients`) reads the client column alone; the
    next one would decode it again with the scores and labels, and that
    decoding was a fifth of the CPU of a client-level bounded pass (30M int64
    ids, snappy: the bounded pass of ``bench_scale.py`` case (f) used 1.8-2.2 s
    of CPU with the ids kept, 2.1-2.8 s without). Non-negative integer ids
    below 2^32 are kept as uint32, batch by batch in read order, up to
    :data:`_PASS_IDS_BYTES`; beyond that, or for other ids, nothing is kept and
    the next pass reads the column.

    Kept only when asked (:meth:`Scan.keep_ids_for_bound`): an example-level
    release does not read the clients again, and the ids would add up to
    :data:`_PASS_IDS_BYTES` to its peak (120 MB at 30M rows) for nothing. The
    next pass over the scores (:meth:`Scan.batches`, of the scan or of a scan
    :meth:`Scan.filtered` from it) takes them whether it reads clients or not
    (:meth:`claim`), so the scan holds them only between the two passes, and it
    frees each batch's ids as it goes. Its rows must be the first pass's, in
    the same order (its batches may be cut elsewhere): a row more or less in a
    file is an error (the data changed between passes), as it is for the
    client sizes. Files are told apart by their order, not their names: two
    fragments of one file (row groups split by the caller) are two files here.
    """

    def __init__(self) -> None:
        # (file, first row, ids) of every batch, in read order
        self.parts: collections.deque[tuple[str, int, NDArray[np.uint32]]] | None = (
            collections.deque()
        )
        self.nbytes = 0
        self.last: str | None = None  # the file of the last rows taken

    def add(self, ids: NDArray[Any], span: tuple[int, int] | None, where: str, first: int) -> None:
        """Keep a batch's ids (``span``: their min and max, None when not integers)."""
        if self.parts is None or ids.size == 0:
            return
        self.nbytes += 4 * ids.size
        if span is None or span[0] < 0 or span[1] >= 1 << 32 or self.nbytes > _PASS_IDS_BYTES:
            self.parts = None  # the next pass reads the column
            return
        self.parts.append((where, first, ids.astype(np.uint32)))

    def kept(self) -> Iterator[NDArray[np.uint32]]:
        """The kept ids, batch by batch, left in place."""
        assert self.parts is not None
        for _, _, ids in self.parts:
            yield ids

    def claim(self) -> _PassIds | None:
        """The kept ids, taken out of this holder (None when none were kept or they were taken)."""
        if not self.parts:
            self.parts = None
            return None
        out = _PassIds()
        out.parts, self.parts = self.parts, None
        return out

    def take(self, where: str, first: int, n: int) -> NDArray[np.uint32]:
        """The ids of rows ``first .. first + n - 1`` of ``where``: the rows after the last taken.

        The next pass reads the files in the first pass's order; its batches may
        be cut elsewhere, but must hold the same rows.
        """
        pieces = self.parts
        assert pieces is not None
        out = []
        while n > 0:
            if not pieces or pieces[0][:2] != (where, first):
                # a file that lost rows (the next one began before its kept rows were
                # read again), else one that gained or changed them
                lost = pieces and pieces[0][0] == self.last != where
                at = pieces[0][:2] if lost else (where, first)
                raise ValueError(_CHANGED.format(where=at[0], first=at[1]))
            _, _, ids = pieces[0]
            k = min(n, ids.shape[0])
            out.append(ids[:k])
            if k == ids.shape[0]:
                pieces.popleft()
            else:
                pieces[0] = (where, first + k, ids[k:])
            first, n = first + k, n - k
        self.last = where
        return out[0] if len(out) == 1 else np.concatenate(out)

    def check_used(self) -> None:
        """After the pass: every kept row was read again (else the data changed)."""
        assert self.parts is not None
        if self.parts:
            where, first, _ = self.parts[0]
            raise ValueError(_CHANGED.format(where=where, first=first))


_CHANGED = (
    "{where} has other rows than in the first pass over its client column (from row "
    "{first}): the data changed between passes"
)
#: Client ids of the first pass kept for the next (:class:`_PassIds`): 64M rows.
_PASS_IDS_BYTES = 256 << 20


class _IdTally:
    """Distinct ids over batches: counted, marked present, or merged by sorting.

    Non-negative integers below 2^23 are counted in a table indexed by the id,
    one ``bincount`` per few batches (a table-sized ``bincount`` per batch would
    cost ~3x a presence mark); up to 2^28 they are only marked present, a byte
    per id value (8 bytes a count would take too much), and their sizes are
    left to a later pass, taken only when asked for
    (:attr:`Scan.client_sizes`). Other ids are merged by sorting, with their
    counts.
    """

    def __init__(self) -> None:
        self.counts: NDArray[np.int64] | None = np.zeros(0, dtype=np.int64)
        self.pending: list[NDArray[Any]] = []
        self.n_pending = 0
        self.present: NDArray[np.bool_] = np.zeros(0, dtype=bool)
        self.ids: NDArray[Any] | None = None
        self.id_counts: NDArray[np.int64] | None = None
        self.dtype: Any = None

    def add(self, values: NDArray[Any], span: tuple[int, int] | None) -> None:
        """Tally a batch's ids; ``span`` is their (min, max) when they are integers, else None."""
        if self.dtype is None:
            self.dtype = values.dtype
        if values.size == 0:
            return
        if self.ids is None and span is not None:
            lo, hi = span
            if lo >= 0 and hi < _MARK_IDS_BELOW:
                if self.counts is not None and hi < _COUNT_IDS_BELOW:
                    self.pending.append(values)
                    self.n_pending += values.size
                    if self.n_pending >= _COUNT_EVERY:
                        self._count()
                    return
                self._mark(values, hi)
                return
        self._merge(values)

    def _count(self) -> None:
        if not self.pending:
            return
        assert self.counts is not None
        c = np.bincount(np.concatenate(self.pending), minlength=self.counts.size)
        c[: self.counts.size] += self.counts
        self.counts, self.pending, self.n_pending = c, [], 0

    def _mark(self, values: NDArray[Any], hi: int) -> None:
        if self.counts is not None:  # leave counting: keep which ids were seen
            self._count()
            self.present, self.counts = self.counts > 0, None
        if hi >= self.present.size:
            grown = np.zeros(hi + 1, dtype=bool)
            grown[: self.present.size] = self.present
            self.present = grown
        self.present[values] = True

    def _merge(self, values: NDArray[Any]) -> None:
        u, c = np.unique(values, return_counts=True)
        if self.ids is None:  # leave the table indexed by id: carry its ids (and counts) over
            self._count()
            if self.counts is not None:
                seen = np.flatnonzero(self.counts)
                self.id_counts = self.counts[seen]
            else:
                seen = np.flatnonzero(self.present)
            self.ids = seen.astype(u.dtype) if seen.size else u[:0]
            self.counts, self.present = None, np.zeros(0, dtype=bool)
        merged, inverse = np.unique(np.concatenate([self.ids, u]), return_inverse=True)
        if self.id_counts is not None:
            self.id_counts = np.bincount(
                inverse, weights=np.concatenate([self.id_counts, c]), minlength=merged.size
            ).astype(np.int64)
        self.ids = merged

    def result(self) -> _ClientTable:
        if self.ids is not None:
            return _ClientTable(ids=self.ids, sizes=self.id_counts)
        self._count()
        if self.counts is None:
            return _ClientTable(present=self.present, dtype=self.dtype or np.int64)
        present = self.counts > 0
        return _ClientTable(
            present=present, dtype=self.dtype or np.int64, sizes=self.counts[present]
        )


class _Progress:
    """tqdm bar (rows, MB/s) that appears only on passes longer than two seconds."""

    def __init__(self, enabled: bool, total: int | None) -> None:
        self.bar: Any = None
        self.bytes = 0
        self.start = time.perf_counter()
        if enabled:
            from tqdm.auto import tqdm

            self.bar = tqdm(
                total=total,
                unit="rows",
                unit_scale=True,
                delay=_PROGRESS_DELAY_S,
                mininterval=_PROGRESS_MININTERVAL_S,
                leave=False,
            )

    def update(self, rows: int, nbytes: int) -> None:
        if self.bar is None:
            return
        self.bytes += nbytes
        elapsed = max(time.perf_counter() - self.start, 1e-9)
        self.bar.set_postfix_str(f"{self.bytes / elapsed / 1e6:.0f} MB/s", refresh=False)
        self.bar.update(rows)

    def __enter__(self) -> _Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.close()


_DONE = object()

#: Batches read ahead by a background thread; 0 reads in the calling thread
#: (benchmarks/bench_scale.py measures both).
PREFETCH_DEPTH = 2


def _prefetched(items: Iterator[Any], depth: int = 2) -> Iterator[Any]:
    """``items`` produced by a background thread, at most ``depth`` ahead.

    Reading and decoding a batch (pyarrow, GIL released) overlaps with
    validating and encoding the previous one (numpy); benchmarks/bench_scale.py
    (case b) measures it against ``depth = 0``. Memory stays bounded by
    ``depth + 1`` batches. An error in the reader is raised here; stopping
    early stops the reader.
    """
    if depth <= 0:
        yield from items
        return
    q: queue.Queue[Any] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in items:
                while not stop.is_set():
                    try:
                        q.put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            q.put(_DONE)
        except BaseException as exc:  # handed to the consumer, raised there
            q.put(exc)

    thread = threading.Thread(target=produce, name="fedeval-scan-reader", daemon=True)
    thread.start()
    try:
        while True:
            item = q.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        while thread.is_alive():  # unblock a reader waiting on a full queue
            with contextlib.suppress(queue.Empty):
                q.get(timeout=0.05)
        thread.join()


# ------------------------------------------------------------------------ Dask
def _is_dask_frame(obj: Any) -> bool:
    mod = type(obj).__module__ or ""
    return mod.startswith("dask") and hasattr(obj, "map_partitions") and hasattr(obj, "columns")


def _dask_client_active() -> bool:
    try:
        from distributed import default_client
    except ImportError:
        return False
    try:
        default_client()
    except ValueError:
        return False
    return True


def _dask_read(files: list[str], fmt: str, columns: list[str]) -> Any:
    import dask.dataframe as dd

    if fmt == "parquet":
        return dd.read_parquet(files, columns=columns)
    return dd.read_csv(files, usecols=columns)


@dataclass(frozen=True)
class _Piece:
    """The Parquet rows of one Dask partition: row groups of local files, and their count."""

    files: tuple[tuple[str, tuple[int, ...] | None], ...]
    rows: int


def _dask_parquet_pieces(scan_: Scan) -> list[_Piece] | None:
    """Per partition, the local Parquet row groups that Dask's ``read_parquet`` reads.

    Only for a frame that is ``dd.read_parquet`` of local files with at most a
    column projection or a selection of partitions (no filters, no computed
    column), every scanned column stored in every file. Then a worker can read
    its partition's columns with pyarrow straight into numpy (as the in-process
    scan does), and the row counts come from the files' metadata, with no pass
    over the data. None otherwise (the partitions are read through Dask), or
    when Dask's plan is not the one understood here: the attributes read are
    Dask internals, so anything unexpected falls back rather than guesses.
    Cached on the scan.
    """
    if "dask_pieces" in scan_._cache:
        return scan_._cache["dask_pieces"]
    pieces: list[_Piece] | None = None
    with contextlib.suppress(Exception):
        pieces = _read_parquet_pieces(scan_)
    scan_._cache["dask_pieces"] = pieces
    return pieces


def _read_parquet_pieces(scan_: Scan) -> list[_Piece] | None:
    import pyarrow.parquet as pq
    from dask.dataframe.dask_expr.io.parquet import ReadParquetFSSpec
    from fsspec.implementations.local import LocalFileSystem  # type: ignore[import-untyped]

    cols = [scan_.score, scan_.label] + ([scan_.client] if scan_.client is not None else [])
    expr = scan_.source[cols].optimize().expr
    if type(expr) is not ReadParquetFSSpec or expr.filters:
        return None
    if not isinstance(expr._dataset_info["fs"], LocalFileSystem):
        return None
    parts = list(expr._plan["parts"])
    if expr._filtered:
        parts = [parts[i] for i in expr._partitions]
    if len(parts) != int(scan_.source.npartitions):
        return None
    metadata: dict[str, Any] = {}
    out = []
    for part in parts:
        files = []
        rows = 0
        for item in [part] if isinstance(part, dict) else part:
            path, groups, filters = item["piece"]
            if filters:
                return None
            path = str(path)
            if path not in metadata:
                meta = pq.ParquetFile(path).metadata
                if any(c not in meta.schema.to_arrow_schema().names for c in cols):
                    return None  # e.g. a hive partition column: Dask adds it, the file lacks it
                metadata[path] = meta
            meta = metadata[path]
            rg = None if groups is None else tuple(int(g) for g in groups)
            ids = range(meta.num_row_groups) if rg is None else rg
            rows += sum(meta.row_group(g).num_rows for g in ids)
            files.append((path, rg))
        out.append(_Piece(tuple(files), rows))
    return out


def _dask_encode(
    scan_: Scan, encoder: Encoder, length: int, dtype: Any, reads_clients: bool
) -> NDArray[Any]:
    """Encode every partition on the workers and sum the vectors there; return the sum.

    One pass over the partitions. A partition of local Parquet files
    (:func:`_dask_parquet_pieces`) is read on its worker with pyarrow, straight
    into numpy, and its row count (the row number of its first row, when the
    rows are the clients) is known from the metadata. Otherwise the partitions
    are Dask's own, and only an encoder that reads the client index of a source
    without a client column (the row number) costs a first pass over the
    partitions' lengths.
    """
    import dask

    read_ids = reads_clients and scan_.client is not None
    cols = [scan_.score, scan_.label] + ([scan_.client] if read_ids else [])
    pieces = _dask_parquet_pieces(scan_)
    parts: list[Any]
    if pieces is not None:
        parts = pieces
        sizes: Any = [p.rows for p in pieces]
    else:
        ddf = scan_.source[cols]
        parts = ddf.to_delayed()
        sizes = None
        if reads_clients and scan_.client is None:
            sizes = ddf.map_partitions(len).compute()
    starts: list[int] = [0] * len(parts)
    if sizes is not None:
        starts = np.concatenate(([0], np.cumsum(np.asarray(sizes))[:-1])).astype(int).tolist()
    # One graph key for what every task shares (the encoder, the client table),
    # not one copy per task.
    shared = dask.delayed((encoder, scan_._clients() if read_ids else None), pure=True)
    layout = _PartitionLayout(
        scan_.score, scan_.label, scan_.client if read_ids else None, scan_.score_range,
        length, dtype, reads_clients,
    )  # fmt: skip
    encode = _encode_piece if pieces is not None else _encode_partition
    tasks = [
        dask.delayed(encode)(part, k, start, layout, shared)
        for k, (part, start) in enumerate(zip(parts, starts, strict=True))
    ]
    if not tasks:
        return np.zeros(length, dtype=dtype)
    # Summed in a tree on the workers: one vector reaches the driver, not one per
    # partition. Up to _SUM_FAN_IN vectors per task: 30 partitions cost 5 sum tasks
    # (each ~1 ms of scheduler and worker time, data or not), not 29 pairwise adds.
    while len(tasks) > 1:
        tasks = [
            dask.delayed(_sum_vectors)(*tasks[i : i + _SUM_FAN_IN])
            if len(tasks[i : i + _SUM_FAN_IN]) > 1
            else tasks[i]
            for i in range(0, len(tasks), _SUM_FAN_IN)
        ]
    (total,) = dask.compute(tasks[0])
    return np.asarray(total, dtype=dtype)


#: Vectors summed by one task of the tree that adds the partitions' encodings.
_SUM_FAN_IN = 8


def _sum_vectors(*vectors: NDArray[Any]) -> NDArray[Any]:
    """Σ of a task's input vectors, in a new array (task results are not to be modified)."""
    total = vectors[0] + vectors[1]
    for v in vectors[2:]:
        total += v
    return total


@dataclass(frozen=True)
class _PartitionLayout:
    """What a worker needs to know to encode one partition."""

    score: str
    label: str
    client: str | None
    score_range: tuple[float, float]
    length: int
    dtype: Any
    reads_clients: bool


def _encode_partition(
    df: Any,
    k: int,
    start: int,
    layout: _PartitionLayout,
    shared: tuple[Encoder, _ClientTable | None],
) -> NDArray[Any]:
    encoder, table = shared
    where = f"partition {k}"
    if len(df) == 0:
        return np.zeros(layout.length, dtype=layout.dtype)
    s = _check_scores(
        df[layout.score].to_numpy(dtype=np.float64, na_value=np.nan), layout.score_range, where, 0
    )
    raw_y = df[layout.label]
    y_values = (
        raw_y.to_numpy(dtype=np.float64, na_value=np.nan) if raw_y.hasnans else raw_y.to_numpy()
    )
    y = _check_labels(np.asarray(y_values), where, 0)
    n = s.shape[0]
    c = _batch_clients(
        layout, table, lambda: df[layout.client].to_numpy(), where, first=0, offset=start, n=n
    )
    return np.asarray(encoder(s, y, c), dtype=layout.dtype)


def _column_of(batch: Any, i: int) -> NDArray[Any]:
    return _to_numpy(batch.column(i))


def _batch_clients(
    layout: _PartitionLayout,
    table: _ClientTable | None,
    raw: Callable[[], NDArray[Any]],
    where: str,
    *,
    first: int,
    offset: int,
    n: int,
) -> NDArray[np.int64]:
    """The clients of a partition's batch: dense indices of its client column (read
    by ``raw`` only then), one client per row numbered from ``offset`` where the
    sketch reads clients without a column, else the unread placeholder."""
    if table is not None and layout.client is not None:
        return table.index(_client_values(raw(), where, first, layout.client))
    if layout.reads_clients:
        return np.arange(offset, offset + n, dtype=np.int64)
    return _unread(n)


def _encode_piece(
    piece: _Piece,
    k: int,
    start: int,
    layout: _PartitionLayout,
    shared: tuple[Encoder, _ClientTable | None],
) -> NDArray[Any]:
    """One partition of local Parquet files, read with pyarrow (as the in-process scan does)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    encoder, table = shared
    cols = [layout.score, layout.label] + ([layout.client] if layout.client is not None else [])
    total = np.zeros(layout.length, dtype=layout.dtype)
    first = 0
    for path, groups in piece.files:
        where = f"partition {k} ({path})"
        try:
            batches = pq.ParquetFile(path).iter_batches(
                batch_size=_DEFAULT_BATCH, row_groups=groups, columns=cols, use_threads=True
            )
            for rb in batches:
                n = rb.num_rows
                if n == 0:
                    continue
                s = _check_scores(_to_numpy(rb.column(0)), layout.score_range, where, first)
                y = _check_labels(_to_numpy(rb.column(1)), where, first)
                c = _batch_clients(
                    layout,
                    table,
                    functools.partial(_column_of, rb, 2),
                    where,
                    first=first,
                    offset=start + first,
                    n=n,
                )
                total += np.asarray(encoder(s, y, c), dtype=layout.dtype)
                first += n
        except (pa.ArrowException, OSError) as exc:
            raise ValueError(f"{where} could not be read after row {first}: {exc}") from None
    return total
