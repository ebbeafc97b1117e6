"""Fixed-point encoding: real-valued summaries sent as integers, so all noise is discrete.

Noise drawn from a continuous distribution and added to floating-point numbers
is attackable: the set of doubles the sum can take depends on the true value,
and an adversary reading the low-order bits tells neighbouring datasets apart
(Mironov 2012, "On significance of the least significant bits for differential
privacy"). fedeval therefore releases only integers: a sketch whose natural
values are real (probability sums, rank sums with a centring, clipped
histograms, clipped parameter updates) rounds every client's contribution to
a public grid of step γ and sends the integer number of steps. The noise is
then discrete (discrete Laplace, Pólya/Skellam shares, discrete Gaussian) and
the released value is (integer sum + integer noise) · γ, computed the same
way for every dataset.

Rounding is deterministic, to the nearest grid point, per example for linear
sketches and per client for clipped ones. Its costs, both stated by each
sketch: a bias of at most γ/2 per rounded value (so at most nγ/2 on a sum of n
of them), and, for sensitivity, at most 1/2 unit per coordinate a unit
changes (|round(a/γ) − round(b/γ)| ≤ |a − b|/γ + 1 and |round(a/γ)| ≤ |a|/γ + ½).
γ is a power of two, so the conversions to and from units are exact for
values on the grid.

References
----------
.. [1] I. Mironov, "On significance of the least significant bits for
   differential privacy", CCS 2012.
.. [2] C. Canonne, G. Kamath and T. Steinke, "The discrete Gaussian for
   differential privacy", NeurIPS 2020 (why discrete noise on integers).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["DEFAULT_BITS", "power_of_two_step", "rounding_note", "to_units"]

DEFAULT_BITS = 20
"""Fractional bits of the default grid: γ = 2^-20 ≈ 9.5e-7 of the value's natural unit."""


def power_of_two_step(scale: float, bits: int = DEFAULT_BITS) -> float:
    """γ = the power of two at or below ``scale · 2^-bits`` (``scale`` > 0, e.g. a clip norm)."""
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"the fixed-point scale must be finite and > 0, got {scale!r}")
    return 2.0 ** (math.floor(math.log2(scale)) - bits)


def to_units(values: ArrayLike, step: float) -> NDArray[np.int64]:
    """Round real values to the nearest multiple of ``step`` and return the multiples."""
    return np.rint(np.asarray(values, dtype=np.float64) / step).astype(np.int64)


def rounding_note(step: float, what: str) -> str:
    """The receipt's sentence about the grid: step and worst-case bias."""
    return (
        f"{what} rounded to the nearest multiple of γ = 2^{round(math.log2(step))} "
        "(fixed point, so the noise is discrete); bias at most γ/2 per rounded value"
    )
