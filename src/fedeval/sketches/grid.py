"""The one grid and its one bin-edge convention.

Every sketch that puts scores into bins uses this module. Bins are
**left-closed**, ``[e_j, e_{j+1})``, and the last bin also holds the upper
domain end. With this convention the number of examples with score ``>= e_j``
(a prediction "positive at threshold e_j") is exactly the sum of bins ``j..``,
so threshold metrics at bin edges carry no bucketization error, and the ROC
rule ``score >= t`` reads directly off the bins.

* :class:`UniformGrid`: ``n_bins`` equal-width bins of a public score domain
  (the leaves of a hierarchy, the bins of the multiclass calibrators); a score
  equal to a published edge always lands in the bin that starts there.
* :func:`bin_of_edges`: the same convention for any increasing edges (bucket
  boundaries chosen from a release, Hosmer–Lemeshow groups).

The exact calibration-error metrics in :mod:`fedeval.metrics.calibration_error`
reproduce :func:`sklearn.calibration.calibration_curve` and therefore keep
scikit-learn's right-closed bins; they bin raw predictions, not sketches.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fedeval.validation import check_int_at_least

__all__ = ["UniformGrid", "bin_keys", "bin_of_edges", "chunked_bincount", "count_bins"]

_CHUNK = 1 << 17
#: Examples whose keys are computed at once: every buffer of the key arithmetic
#: (8 bytes × 2^15 = 256 KB) stays in a core's L2 cache.
_KEY_CHUNK = 1 << 15
#: A bincount chunk holds at least this many keys per count it returns (see
#: :func:`chunked_bincount`), up to ``_LONG_CHUNK`` keys (8 MB).
_OUTPUTS_PER_CHUNK = 8
_LONG_CHUNK = 1 << 20
#: Threads that encode chunks at once (numpy releases the GIL in the key
#: arithmetic and in bincount). Measured on 2 idle cores (benchmarks/bench_scale.py,
#: ``encode_*_thread*``): 10M examples 25 → 19 ms, 30M 77 → 55 ms. Set to 1 to
#: encode in the calling thread only.
ENCODE_THREADS = min(2, os.cpu_count() or 1)
#: Threads are used only from this many examples on, and only while every
#: thread's own count vector stays small beside the data (at most this long).
_THREADS_MIN_EXAMPLES = 1 << 22
_THREADS_MAX_SIZE = 1 << 20


@dataclass(frozen=True)
class UniformGrid:
    """``n_bins`` equal-width bins over the closed interval ``score_range``."""

    n_bins: int
    score_range: tuple[float, float] = (0.0, 1.0)

    def __post_init__(self) -> None:
        check_int_at_least(self.n_bins, 1, name="n_bins")
        lo, hi = self.score_range
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            raise ValueError(
                f"score_range must be finite with low < high, got {self.score_range!r}"
            )

    @property
    def width(self) -> float:
        lo, hi = self.score_range
        return (hi - lo) / self.n_bins

    @property
    def edges(self) -> NDArray[np.float64]:
        """The ``n_bins + 1`` bin edges (a fresh array)."""
        return self._edges.copy()

    @cached_property
    def _edges(self) -> NDArray[np.float64]:
        """The edges, computed once per grid and read-only (every threshold query reads them)."""
        lo, hi = self.score_range
        edges = np.linspace(lo, hi, self.n_bins + 1)
        edges.flags.writeable = False
        return edges

    @property
    def _multiplication_is_exact(self) -> bool:
        """Whether floor(s·n/(hi−lo)) lands exactly on the published edges.

        True for lo = 0 and a power-of-two scale (the dyadic grids of b = 2 over
        [0, 1]): multiplying by a power of two is exact in floating point, and
        so are the edges. Otherwise a score equal to an edge can round into the
        bin below, so indices are corrected against the edges.
        """
        lo, hi = self.score_range
        scale = self.n_bins / (hi - lo)
        mantissa, _ = np.frexp(scale)
        return lo == 0.0 and mantissa == 0.5

    def bin_index(
        self, scores: NDArray[np.float64], *, in_range: bool = False
    ) -> NDArray[np.int64]:
        """Bin of each score under the left-closed convention (scores validated upstream).

        ``in_range=True`` is the caller's word that every score lies in the
        grid's range (no NaN): a grid from 0 whose product s·n/(hi−lo) is
        inexact then takes :func:`bin_of_edges`'s table lookup (the same bins:
        the number of inner edges ≤ s) instead of correcting every index
        against the edges.
        """
        lo, hi = self.score_range
        if in_range and lo == 0.0 and not self._multiplication_is_exact:
            x = np.asarray(scores)
            if x.dtype == np.float64 and x.size >= _EDGE_TABLE_MIN_VALUES:
                return bin_of_edges(self._edges, x, in_range=True).astype(np.int64, copy=False)
        scale = self.n_bins / (hi - lo)
        if lo == 0.0:
            idx = (scores * scale).astype(np.int64)
        else:
            idx = ((scores - lo) * scale).astype(np.int64)
        # Only s == hi (and float round-up just below it) lands on n_bins.
        np.minimum(idx, self.n_bins - 1, out=idx)
        if not self._multiplication_is_exact:
            idx = self._snap_to_edges(np.asarray(scores, dtype=np.float64), idx)
        return idx

    def _snap_to_edges(self, x: NDArray[np.float64], idx: NDArray[np.int64]) -> NDArray[np.int64]:
        """Move indices by ±1 where rounding put x on the wrong side of a published edge."""
        edges = self._edges
        np.maximum(idx, 0, out=idx)
        idx += (x >= edges[np.minimum(idx + 1, self.n_bins)]) & (idx < self.n_bins - 1)
        idx -= (x < edges[idx]) & (idx > 0)
        return idx

    def locate(self, thresholds: Any) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """Position of thresholds on the grid: edge index r in 0..n_bins and fraction in bin r.

        A threshold equal to a published edge gets exactly that edge's index and
        fraction 0, so queries at edges are exact.
        """
        t = np.asarray(thresholds, dtype=np.float64)
        lo, _ = self.score_range
        if t.size == 1:
            one = self._locate_one(float(t.ravel()[0]))
            if one is not None:
                return np.full(t.shape, one[0], dtype=np.int64), np.full(t.shape, one[1])
        pos = (t - lo) / self.width
        r = np.clip(np.floor(pos).astype(np.int64), 0, self.n_bins)
        edges = self._edges
        r += (t >= edges[np.minimum(r + 1, self.n_bins)]) & (r < self.n_bins)
        r -= (t < edges[r]) & (r > 0)
        frac = np.where(r < self.n_bins, (t - edges[r]) / self.width, 0.0)
        return r, np.clip(frac, 0.0, 1.0)

    def _locate_one(self, x: float) -> tuple[int, float] | None:
        """:meth:`locate` of one threshold on Python scalars: the same float operations.

        ~10x faster than the array form for one threshold (the small-data check
        asks one per class per release). None where the array form's int64 cast
        is not a plain floor (non-finite or huge positions): the caller falls back.
        """
        lo, _ = self.score_range
        pos = (x - lo) / self.width
        if not abs(pos) < 2.0**62:
            return None
        n = self.n_bins
        edges = self._edges
        r = min(max(math.floor(pos), 0), n)
        if r < n and x >= float(edges[r + 1]):
            r += 1
        if r > 0 and x < float(edges[r]):
            r -= 1
        frac = (x - float(edges[r])) / self.width if r < n else 0.0
        return r, min(max(frac, 0.0), 1.0)

    def fractional_position(self, thresholds: NDArray[np.float64]) -> NDArray[np.float64]:
        """Threshold positions in units of bins, exact at edges: ``r + fraction``."""
        r, frac = self.locate(thresholds)
        return r + frac


def count_bins(
    grid: UniformGrid,
    scores: NDArray[np.float64],
    labels: NDArray[Any],
    n_classes: int,
    *,
    group: NDArray[np.int64] | None = None,
    n_groups: int = 1,
) -> NDArray[np.int64]:
    """Counts per (group, class, bin) in one ``np.bincount`` pass.

    Parameters
    ----------
    grid : UniformGrid
    scores : ndarray, shape (n,)
    labels : ndarray, shape (n,)
        Class of each example, 0..n_classes-1.
    n_classes : int
    group : ndarray of int64, shape (n,), optional
        Group of each example (e.g. the hierarchy level its client reports on).

    Returns
    -------
    ndarray of int64, shape (n_groups, n_classes, n_bins)
    """
    stride = grid.n_bins
    size = n_groups * n_classes * stride
    shift = stride.bit_length() - 1 if stride & (stride - 1) == 0 else None

    def keys(start: int, stop: int, key: NDArray[np.int64], lab: NDArray[np.int64]) -> None:
        bin_keys(grid, scores[start:stop], out=key)
        if shift is not None:  # label · 2^k as a shift (cheaper than a multiplication)
            np.left_shift(labels[start:stop], np.int64(shift), out=lab, casting="unsafe")
        else:
            np.multiply(labels[start:stop], np.int64(stride), out=lab, casting="unsafe")
        key += lab
        if group is not None:
            np.multiply(group[start:stop], np.int64(stride * n_classes), out=lab, casting="unsafe")
            key += lab

    return chunked_bincount(scores.shape[0], size, keys).reshape(n_groups, n_classes, stride)


def bin_keys(grid: UniformGrid, scores: NDArray[np.float64], *, out: NDArray[np.int64]) -> None:
    """Bin index of every score into ``out`` (same convention as :meth:`UniformGrid.bin_index`)."""
    if grid._multiplication_is_exact:
        # lo = 0 and a power-of-two scale: s·scale is exact and lies in
        # [0, n_bins]; truncated straight into the integer output, only s = hi
        # gives n_bins, which the clamp sends to the last bin.
        scale = grid.n_bins / (grid.score_range[1] - grid.score_range[0])
        np.multiply(scores, scale, out=out, casting="unsafe")
        np.minimum(out, grid.n_bins - 1, out=out)
    else:
        out[:] = grid.bin_index(scores)


def chunked_bincount(
    n: int,
    size: int,
    keys: Callable[[int, int, NDArray[np.int64], NDArray[np.int64]], None],
) -> NDArray[np.int64]:
    """Σ of ``np.bincount`` over chunks of n examples, in O(n + size).

    ``keys(start, stop, key, scratch)`` writes the keys of examples
    ``start:stop`` into ``key`` (``scratch`` is a free buffer of the same
    length). Bincount chunks are cache-sized (allocating several n-sized
    temporaries costs more than the bincount itself) but never shorter than
    ``size``, so the per-chunk cost of a full-length bincount stays linear in
    n: a tree of 2^22 leaves costs O(n + 2^22), not O(n · 2^22 / chunk).
    Keys are always computed in pieces of ``_KEY_CHUNK`` examples, so their
    intermediate passes stay in cache even when a bincount chunk is long:
    at 10M examples and 2^23 keys that halves the key arithmetic (83 → 44 ms,
    measured on this project's 2-core machine).

    A chunk is also at least ``_OUTPUTS_PER_CHUNK`` times ``size`` (up to
    ``_LONG_CHUNK`` examples): every ``np.bincount`` allocates and zeroes a
    fresh vector of ``size`` counts, which costs page faults wherever large
    allocations are not reused (a Dask worker sets ``MALLOC_TRIM_THRESHOLD_``,
    which turns off glibc's adaptive mmap threshold). At 1M examples and
    2^17 keys: 8 vectors → 1, 2,891 → 838 page faults and 10.3 → 8.2 ms
    under that setting, no slower without it.
    """
    chunk = max(_CHUNK, size, min(_OUTPUTS_PER_CHUNK * size, _LONG_CHUNK))

    def fill(start: int, stop: int, key: NDArray[np.int64], tmp: NDArray[np.int64]) -> None:
        for a in range(start, stop, _KEY_CHUNK):
            b = min(a + _KEY_CHUNK, stop)
            keys(a, b, key[a - start : b - start], tmp[: b - a])

    if n <= 2 * chunk:
        # One bincount (a key buffer of at most twice the vector): no zeroed
        # accumulator, no per-chunk full-length arrays to add up.
        key = np.empty(n, dtype=np.int64)
        fill(0, n, key, np.empty(min(n, _KEY_CHUNK), dtype=np.int64))
        return np.bincount(key, minlength=size).astype(np.int64, copy=False)
    starts = range(0, n, chunk)

    def count(part: range) -> NDArray[np.int64]:
        counts = np.zeros(size, dtype=np.int64)
        kbuf = np.empty(chunk, dtype=np.int64)
        lbuf = np.empty(_KEY_CHUNK, dtype=np.int64)  # each thread its own scratch
        for start in part:
            m = min(chunk, n - start)
            fill(start, start + m, kbuf[:m], lbuf)
            counts += np.bincount(kbuf[:m], minlength=size)
        return counts

    threads = ENCODE_THREADS if n >= _THREADS_MIN_EXAMPLES and size <= _THREADS_MAX_SIZE else 1
    if threads <= 1:
        return count(starts)
    # Each thread counts every threads-th chunk into its own vector; integer sums
    # are exact, so the result is the single-threaded one.
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="fedeval-encode") as pool:
        parts = list(pool.map(count, (starts[i::threads] for i in range(threads))))
    total = parts[0]
    for other in parts[1:]:
        total += other
    return total


def bin_of_edges(
    edges: NDArray[np.float64],
    x: NDArray[np.float64],
    *,
    out: NDArray[np.int64] | None = None,
    in_range: bool = False,
) -> NDArray[np.intp]:
    """Bin of every value for increasing ``edges`` (K + 1 of them), left-closed.

    Bin j is ``[e_j, e_{j+1})``; values below ``e_1`` go to bin 0 and values at
    or above ``e_{K-1}`` to bin K − 1 (so the top end and anything outside the
    edges land in an end bin). ``out`` (the shape of ``x``), if given, receives
    the bins and is returned. ``in_range=True`` is the caller's word that
    every value lies in [e_0, e_K] (no NaN): the table lookup then skips the
    clamps that send NaN and values outside the edges to their end bins.

    Many values against edges from 0 to a finite top (probabilities: the
    multiclass one-vs-rest and top-label bins; per-example losses: the
    log-loss bins) take a table lookup, the same bins as the binary search
    (:func:`_edge_table`) at a fraction of its cost.
    """
    e = np.asarray(edges, dtype=np.float64)
    inner = e[1:-1]
    xs = np.asarray(x)
    top = float(e[-1])
    if (
        xs.size >= _EDGE_TABLE_MIN_VALUES
        and e[0] == 0.0
        and 0.0 < top < np.inf
        and xs.dtype == np.float64
    ):
        table = _edge_table(tuple(inner.tolist()), top)
        if table is not None:
            scale, below, inside = table
            if in_range:  # x·scale in [0, top·scale], truncated straight into the cell
                cell = np.empty(xs.shape, dtype=np.intp)
                np.multiply(xs, scale, out=cell, casting="unsafe")
            else:
                u = xs * scale  # exact: scale is a power of two
                # fmin/fmax: NaN goes to the last cell and bin, where the binary search puts it.
                np.fmin(u, top * scale, out=u)
                np.fmax(u, 0.0, out=u)
                cell = u.astype(np.intp)
            # "clip" changes nothing (every cell is in the table) and, unlike the
            # default "raise", writes ``out`` without a buffer.
            bins = np.take(below, cell, out=out, mode="clip")
            if inside is not None:
                bins += xs >= inside[cell]
            return bins
    bins = np.searchsorted(inner, xs, side="right")
    if out is None:
        return bins
    out[...] = bins
    return out


#: From this many values, :func:`bin_of_edges` from 0 to a finite top uses :func:`_edge_table`.
_EDGE_TABLE_MIN_VALUES = 1 << 12


@functools.lru_cache(maxsize=64)
def _edge_table(
    inner: tuple[float, ...], top: float
) -> tuple[float, NDArray[np.intp], NDArray[np.float64] | None] | None:
    """Lookup tables for :func:`bin_of_edges` of inner edges in (0, ``top``), or None.

    With fine cells [u/M, (u+1)/M), M = 2^k, u = 0..⌊top·M⌋ (x·M is exact, so
    ⌊x·M⌋ = u puts x in its cell without rounding), the bin of x is the number
    of inner edges ≤ x: ``below[u]`` (those ≤ u/M) plus 1 if the one edge
    strictly inside the cell, ``inside[u]`` (+inf if none), is ≤ x. M is the
    smallest power of two from 2^10 that leaves at most one edge strictly
    inside every cell, with at most 2^20 + 1 cells; None (binary search) if
    none does. ``inside`` is None when no edge is strictly inside any cell
    (every edge a multiple of 1/M, as the planned dyadic multiclass edges
    are): the cell alone gives the bin.
    """
    e = np.asarray(inner, dtype=np.float64)
    if e.size == 0:
        return None
    for k in range(10, 21):
        m = 1 << k
        n_cells = int(np.floor(top * m)) + 1
        if n_cells > (1 << 20) + 1:
            return None
        left = np.arange(n_cells, dtype=np.float64) / m  # exact
        below = np.searchsorted(e, left, side="right")
        before_next = np.searchsorted(e, left + 1.0 / m, side="left")
        count = before_next - below
        if count.max() > 1:
            continue
        one = np.flatnonzero(count == 1)
        if one.size == 0:  # every edge on the grid (dyadic edges): the cell alone gives the bin
            return float(m), below.astype(np.intp), None
        inside = np.full(n_cells, np.inf)
        inside[one] = e[below[one]]
        return float(m), below.astype(np.intp), inside
    return None
