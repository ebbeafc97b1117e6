"""Flat histograms over a public, data-independent score grid.

Bins are left-closed, ``[e_j, e_{j+1})``, and the last bin also holds the upper
domain end. With this convention the number of examples with score ``>= e_j``
(a prediction "positive at threshold e_j") is exactly the sum of bins ``j..``,
so threshold metrics at bin edges carry no bucketization error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fedeval._validation import check_int_at_least

__all__ = ["UniformGrid", "class_leaf_counts"]

_CHUNK = 1 << 18


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
        """The ``n_bins + 1`` bin edges."""
        lo, hi = self.score_range
        return np.linspace(lo, hi, self.n_bins + 1)

    def bin_index(self, scores: NDArray[np.float64]) -> NDArray[np.int64]:
        """Bin of each score (scores must lie in the domain; validated upstream)."""
        lo, hi = self.score_range
        scale = self.n_bins / (hi - lo)
        if lo == 0.0:
            idx = (scores * scale).astype(np.int64)
        else:
            idx = ((scores - lo) * scale).astype(np.int64)
        # Only s == hi (and float round-up just below it) lands on n_bins.
        np.minimum(idx, self.n_bins - 1, out=idx)
        return idx

    def fractional_position(self, thresholds: NDArray[np.float64]) -> NDArray[np.float64]:
        """Threshold positions in units of bins: ``(t - lo) / width``, in [0, n_bins]."""
        lo, _ = self.score_range
        return (np.asarray(thresholds, dtype=np.float64) - lo) / self.width


def class_leaf_counts(
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
    n = scores.shape[0]
    stride = grid.n_bins
    size = n_groups * n_classes * stride
    counts = np.zeros(size, dtype=np.int64)
    # Work in cache-sized chunks: one pass over the data, small reused buffers
    # (allocating several n-sized temporaries costs more than the bincount).
    chunk = _CHUNK
    for start in range(0, n, chunk):
        stop = min(start + chunk, n)
        key = grid.bin_index(scores[start:stop])
        key += labels[start:stop] * stride
        if group is not None:
            key += group[start:stop] * (stride * n_classes)
        counts += np.bincount(key, minlength=size)
    return counts.reshape(n_groups, n_classes, stride)
