"""Argument checks and the geometric draws shared by the mechanism modules."""

from __future__ import annotations

import math
from typing import Any, get_args

import numpy as np
from numpy.typing import ArrayLike, NDArray

from fedeval.privacy.guarantee import PrivacyUnit

__all__ = [
    "Size",
    "as_size",
    "check_integers",
    "check_unit",
    "discrete_laplace_by_inversion",
    "two_sided_geometric",
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


def two_sided_geometric(
    alpha: float | NDArray[np.float64], shape: tuple[int, ...], gen: np.random.Generator
) -> NDArray[np.int64]:
    """Exact discrete Laplace draws: the difference of two i.i.d. geometric variables.

    ``Generator.geometric(p)`` counts trials up to the first success (support 1, 2,
    ...); subtracting two of them cancels the offset and leaves
    P(k) = (1-α)/(1+α) α^|k| with α = 1-p. ``alpha`` may be an array broadcasting
    to ``shape`` (one α per entry).
    """
    p = 1.0 - alpha
    a = gen.geometric(p, size=shape).astype(np.int64, copy=False)
    b = gen.geometric(p, size=shape).astype(np.int64, copy=False)
    return a - b


_INVERSION_CHUNK = 1 << 16


def discrete_laplace_by_inversion(
    alpha: float, shape: tuple[int, ...], gen: np.random.Generator
) -> NDArray[np.int64]:
    """Discrete Laplace draws, P(k) = (1-α)/(1+α) α^|k|, from one 64-bit word each.

    The same law as :func:`two_sided_geometric` (two geometric draws per
    entry, ~3× slower); used where many coordinates need one scalar α (the
    summed noise of a distributed-DP release on the fast path).

    Notes
    -----
    Every entry takes one raw 64-bit word of the generator: its lowest bit is
    a sign S, its upper 53 bits a uniform U on {0, 2^-53, ..., 1 - 2^-53}
    (how numpy makes ``Generator.random``). With W = 1 - U, uniform on (0, 1],
    z₀ = (1-α)/(1+α) and V = W/(1 - z₀),

        |X| = max(0, 1 + ⌊log V / log α⌋),   X = |X| if S = 0, −|X| if S = 1.

    Proof (real arithmetic). |X| ≥ 1 iff log V ≤ 0 iff W ≤ 1 - z₀, so
    P(X = 0) = z₀. For k ≥ 1, |X| ≥ k + 1 iff log V / log α ≥ k iff
    V ≤ α^k iff W ≤ (1 - z₀) α^k, so P(|X| ≥ k) = (1 - z₀) α^(k-1) =
    2α^k/(1+α), and with an independent fair sign
    P(X = k) = P(X = −k) = α^k/(1+α) − α^(k+1)/(1+α) = (1-α)/(1+α) α^k:
    the discrete Laplace. In floating point, as for numpy's own geometric
    sampler (an inverted exponential), the law is the target's up to the
    rounding of log and of one product, and the support ends where the
    tail's mass falls below 2^-53 (|X| ≈ 36.7 / −log α). α = 0 (ε/Δ1 beyond
    ~745) gives 0 everywhere, as the target does.
    """
    n = math.prod(shape)
    out = np.empty(n, dtype=np.int64)
    a = float(alpha)
    if not 0.0 <= a < 1.0:
        raise ValueError(f"alpha must lie in [0, 1), got {alpha!r}")
    if a == 0.0 or n == 0:
        out[:] = 0
        return out.reshape(shape)
    to_v = (1.0 + a) / (2.0 * a)  # 1 / (1 - z₀)
    per_log = 1.0 / math.log(a)
    chunk = min(n, _INVERSION_CHUNK)
    v = np.empty(chunk, dtype=np.float64)
    sign = np.empty(chunk, dtype=np.int64)
    draw = gen.bit_generator.random_raw
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        raw = np.asarray(draw(m), dtype=np.uint64)
        vm, sm, o = v[:m], sign[:m], out[start : start + m]
        np.bitwise_and(raw, np.uint64(1), out=sm, casting="unsafe")
        np.right_shift(raw, np.uint64(11), out=raw)
        np.multiply(raw, -(2.0**-53), out=vm, casting="unsafe")  # −U
        vm += 1.0  # W = 1 − U, exact
        vm *= to_v
        np.log(vm, out=vm)
        vm *= per_log
        np.floor(vm, out=vm)
        np.copyto(o, vm, casting="unsafe")
        o += 1
        np.maximum(o, 0, out=o)
        np.negative(sm, out=sm)  # 0 or −1 (all bits set)
        o ^= sm  # two's complement: (x XOR −1) + 1 = −x
        o -= sm
    return out.reshape(shape)
