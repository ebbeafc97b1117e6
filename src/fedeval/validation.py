"""Validation helpers used at public boundaries (DESIGN.md convention 5).

They raise ``ValueError``/``TypeError`` that name the bad value and the allowed
range. Internal code trusts validated inputs and never re-validates.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "check_binary_labels",
    "check_delta",
    "check_epsilon",
    "check_int_at_least",
    "check_positive",
    "check_probability",
    "check_scores",
    "unsigned_view",
]


#: The smallest ε accepted: below it the noise's α = e^(−ε/Δ) rounds to 1 in double
#: precision (ε = 1e-300 gave "alpha must lie in [0, 1), got 1.0").
MIN_EPSILON = 1e-9


def check_epsilon(epsilon: Any, *, name: str = "epsilon") -> float:
    """A finite privacy parameter ε ≥ :data:`MIN_EPSILON`."""
    try:
        value = float(epsilon)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a positive number, got {epsilon!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {epsilon!r}")
    if value < MIN_EPSILON:
        raise ValueError(
            f"{name} must be at least {MIN_EPSILON:g} (smaller values make the noise infinite "
            f"in double precision), got {epsilon!r}"
        )
    return value


def check_delta(delta: Any, *, name: str = "delta") -> float:
    """δ in the open interval (0, 1)."""
    try:
        value = float(delta)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number in (0, 1), got {delta!r}") from None
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must lie in the open interval (0, 1), got {delta!r}")
    return value


def check_positive(value: Any, *, name: str) -> float:
    """A finite real number > 0."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a positive number, got {value!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return v


def check_probability(
    value: Any, *, name: str, open_low: bool = True, open_high: bool = False
) -> float:
    """A number in (0, 1] by default (interval ends selectable)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number in [0, 1], got {value!r}") from None
    low_ok = v > 0 if open_low else v >= 0
    high_ok = v < 1 if open_high else v <= 1
    if not (math.isfinite(v) and low_ok and high_ok):
        lo = "(" if open_low else "["
        hi = ")" if open_high else "]"
        raise ValueError(f"{name} must lie in {lo}0, 1{hi}, got {value!r}")
    return v


def check_int_at_least(value: Any, minimum: int, *, name: str) -> int:
    """An integer ≥ ``minimum`` (bools rejected)."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if int(value) < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def unsigned_view(arr: NDArray[Any]) -> NDArray[Any]:
    """An integer array read as the unsigned integers of its size (no copy).

    A negative value becomes at least 2^(bits−1), so one ``max`` of the view
    bounds the array on both sides: ``unsigned_view(a).max() <= m`` (m below
    2^(bits−1)) iff every value lies in [0, m]. That is half the passes of
    ``a.min() >= 0 and a.max() <= m`` over a large array.
    """
    return arr.view(np.dtype(f"u{arr.dtype.itemsize}"))


def _within_zero_to(arr: NDArray[np.float64], hi: float) -> bool:
    """Whether every float64 lies in [+0, hi] (hi > 0 finite), in one pass; False is inconclusive.

    Non-negative IEEE doubles are ordered like their bit patterns read as
    unsigned integers, and every other value (negative, −0.0, NaN with the
    sign bit) has the sign bit set, so it reads above any positive double's
    pattern; +inf and positive NaNs read above every finite double. So the
    largest pattern is at most hi's iff every value is in [+0, hi]. −0.0 (a
    valid score) fails this check and is settled by the caller's full one.
    """
    if not (hi > 0 and math.isfinite(hi)):
        return False
    return bool(unsigned_view(arr).max() <= np.float64(hi).view(np.uint64))


def check_scores(
    scores: Any, *, score_range: tuple[float, float] = (0.0, 1.0), name: str = "scores"
) -> NDArray[np.float64]:
    """A 1-D array of finite scores inside the closed ``score_range``."""
    arr = np.asarray(scores)
    if arr.dtype.kind not in "fiub":
        raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}")
    arr = arr.astype(np.float64, copy=False)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    lo, hi = score_range
    if arr.size == 0 or (lo == 0.0 and _within_zero_to(arr, hi)):
        return arr
    # Two reductions, no temporaries: NaN propagates through min/max and inf lies
    # outside a finite range, so valid scores pass without a per-element mask.
    if arr.min() >= lo and arr.max() <= hi:
        return arr
    finite = np.isfinite(arr)
    if not finite.all():
        bad = int(np.flatnonzero(~finite)[0])
        raise ValueError(f"{name} contains NaN or inf (first at index {bad}: {arr[bad]})")
    outside = (arr < lo) | (arr > hi)
    if outside.any():
        bad = int(np.flatnonzero(outside)[0])
        raise ValueError(
            f"{name} must lie in score_range [{lo}, {hi}]; index {bad} has {arr[bad].item()!r}. "
            "Pass score_range=(low, high) for another domain."
        )
    return arr


def check_binary_labels(labels: Any, *, name: str = "labels") -> NDArray[np.int8]:
    """A 1-D array of 0/1 labels (bool accepted)."""
    arr = np.asarray(labels)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    if arr.dtype.kind == "b":
        return arr.view(np.int8)
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be 0/1 integers or booleans, got dtype {arr.dtype}")
    if arr.dtype.kind in "iu" and (arr.size == 0 or unsigned_view(arr).max() <= 1):
        return arr.astype(np.int8, copy=False)
    ok = (arr == 0) | (arr == 1)
    if not ok.all():
        bad = int(np.flatnonzero(~ok)[0])
        raise ValueError(f"{name} must be 0 or 1; index {bad} has {arr[bad].item()!r}")
    return arr.astype(np.int8, copy=False)
