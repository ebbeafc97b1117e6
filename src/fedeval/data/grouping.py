"""Grouping examples by dense client index, without an argsort of the indices.

Everything that needs the examples of one client together (the faithful path,
per-client views, contribution bounds) asks for :func:`group_order`; the fast
path never does. When the group and the position of every element fit in one
64-bit key (``group << bits | position``), the order is one ``np.sort`` of
those keys: the position breaks ties, so the sort is stable, and numpy sorts
integers with vectorised kernels (measured on 2 cores: 1M elements over 3M
groups in 18 ms, against 53 ms for the radix form and 147 ms for a stable
``argsort``). Otherwise it is an LSD radix sort on 16-bit digits: numpy's
stable ``argsort`` of a ``uint16`` array is a counting sort, so each pass is
linear in the number of elements.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["group_order", "grouped", "is_grouped"]

_DIGIT = 16
_MASK = (1 << _DIGIT) - 1
_KEY_BITS = 63


def is_grouped(index: NDArray[np.integer]) -> bool:
    """Whether ``index`` is non-decreasing (examples already grouped by client)."""
    return bool(index.size < 2 or not np.any(index[1:] < index[:-1]))


def group_order(index: NDArray[np.integer], n_groups: int) -> NDArray[np.intp]:
    """The stable permutation that groups ``index`` (values 0..n_groups-1) in ascending order.

    Equal to ``np.argsort(index, kind="stable")``.

    Parameters
    ----------
    index : ndarray of int, shape (n,)
        Dense group of every element.
    n_groups : int
        An upper bound on ``index.max() + 1``.

    Returns
    -------
    ndarray of intp, shape (n,)
    """
    return grouped(index, n_groups)[1]


def grouped(
    index: NDArray[np.integer], n_groups: int
) -> tuple[NDArray[np.int64], NDArray[np.intp]]:
    """``index`` sorted, and the stable permutation that sorts it (:func:`group_order`).

    The sorted values come with the permutation at no extra cost (no gather)
    when the keys fit in 64 bits.

    Returns
    -------
    sorted_index : ndarray of int64, shape (n,)
        ``index[order]``.
    order : ndarray of intp, shape (n,)
    """
    idx = np.asarray(index)
    n = idx.shape[0]
    bits = max(int(n - 1).bit_length(), 1)
    if bits + max(int(n_groups - 1).bit_length(), 1) <= _KEY_BITS:
        key = np.left_shift(idx, bits, dtype=np.int64)  # one pass, whatever idx's dtype
        key |= np.arange(n, dtype=np.int64)
        key.sort()
        order = (key & ((1 << bits) - 1)).astype(np.intp, copy=False)
        key >>= bits
        return key, order
    order = _radix_order(idx, n_groups)
    return idx[order].astype(np.int64, copy=False), order


def _radix_order(idx: NDArray[np.integer], n_groups: int) -> NDArray[np.intp]:
    order: NDArray[np.intp] | None = None
    shift = 0
    while True:
        digit = ((idx >> shift) & _MASK).astype(np.uint16)
        if order is not None:
            digit = digit[order]
        step = np.argsort(digit, kind="stable")
        order = step if order is None else order[step]
        shift += _DIGIT
        if n_groups <= (1 << shift):
            return order
