"""Argument checks shared by the mechanism modules."""

from __future__ import annotations

from typing import Any, get_args

import numpy as np
from numpy.typing import ArrayLike, NDArray

from fedeval.privacy.guarantee import PrivacyUnit

__all__ = [
    "Size",
    "as_size",
    "check_integers",
    "check_unit",
]

Size = int | tuple[int, ...]

DP_UNITS: tuple[str, ...] = tuple(u for u in get_args(PrivacyUnit) if u != "none")


def as_size(size: Any) -> tuple[int, ...]:
    """Validate a numpy-style ``size`` (a non-negative int or a tuple of them)."""
    if isinstance(size, bool):
        raise TypeError(f"size must be a non-negative int or a tuple of them, got {size!r}")
    if isinstance(size, int | np.integer):
        dims: tuple[Any, ...] = (size,)
    elif isinstance(size, tuple):
        dims = size
    else:
        raise TypeError(f"size must be a non-negative int or a tuple of them, got {size!r}")
    out = []
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, int | np.integer):
            raise TypeError(f"size must contain integers only, got {size!r}")
        if int(d) < 0:
            raise ValueError(f"size must be non-negative, got {size!r}")
        out.append(int(d))
    return tuple(out)


def check_unit(unit: Any) -> PrivacyUnit:
    """A DP privacy unit ('example', 'client' or 'label')."""
    if unit not in DP_UNITS:
        raise ValueError(f"unit must be one of {DP_UNITS}, got {unit!r}")
    return unit


def check_integers(k: ArrayLike, *, name: str = "k") -> NDArray[np.int64]:
    """An array of integers (integer-valued floats are accepted)."""
    arr = np.asarray(k)
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64, copy=False)
    if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
        return arr.astype(np.int64)
    raise TypeError(f"{name} must hold integers, got dtype {arr.dtype} with values {arr!r}")
