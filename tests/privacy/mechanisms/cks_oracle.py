"""Test oracle: the scalar exact samplers of Canonne, Kamath & Steinke (2020), Algorithms 1–3.

They use nothing but uniform integers from the generator and exact rational
arithmetic, one draw at a time in Python (tens of microseconds each). Until
issue 24 they were fedeval's "secure mode" samplers
(``fedeval.privacy.mechanisms.exact``); the library now draws exactly with the
vectorised samplers of :mod:`fedeval.privacy.mechanisms.exact_sampling` for
every generator, and these independent implementations serve as the reference
the vectorised ones are compared with (two-sample tests).

* :func:`bernoulli_exp` — Bernoulli(exp(−γ)) for rational γ ≥ 0 (Algorithm 1);
* :func:`discrete_laplace` — P(y) ∝ exp(−|y|/scale) (Algorithm 2);
* :func:`discrete_gaussian` — P(y) ∝ exp(−y²/(2σ²)) (Algorithm 3).

A float parameter is converted to the rational number it exactly represents
(:class:`fractions.Fraction`), so nothing is rounded.

References
----------
.. [1] C. Canonne, G. Kamath and T. Steinke, "The discrete Gaussian for
   differential privacy", NeurIPS 2020 (arXiv:2004.00010), Algorithms 1–3.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["bernoulli_exp", "discrete_gaussian", "discrete_laplace"]


def _uniform_below(n: int, rng: np.random.Generator) -> int:
    """A uniform integer in {0, ..., n − 1} for any n ≥ 1 (arbitrary precision)."""
    if n <= 2**62:
        return int(rng.integers(0, n))
    # Rejection from enough random 32-bit words.
    bits = n.bit_length()
    while True:
        words = rng.integers(0, 2**32, size=(bits + 31) // 32, dtype=np.uint64)
        x = 0
        for w in words:
            x = (x << 32) | int(w)
        x >>= 32 * len(words) - bits
        if x < n:
            return x


def _bernoulli(p: Fraction, rng: np.random.Generator) -> bool:
    """Bernoulli(p) for rational p in [0, 1]."""
    return _uniform_below(p.denominator, rng) < p.numerator


def bernoulli_exp(gamma: Fraction, rng: np.random.Generator) -> bool:
    """Bernoulli(exp(−γ)) for rational γ ≥ 0 (CKS Algorithm 1)."""
    if gamma < 0:
        raise ValueError(f"gamma must be >= 0, got {gamma}")
    while gamma > 1:
        if not bernoulli_exp(Fraction(1), rng):
            return False
        gamma -= 1
    k = 1
    while _bernoulli(gamma / k, rng):
        k += 1
    return k % 2 == 1


def _one_laplace(s: int, t: int, rng: np.random.Generator) -> int:
    """P(y) ∝ exp(−|y|·s/t) for integers s, t ≥ 1 (CKS Algorithm 2)."""
    while True:
        u = _uniform_below(t, rng)
        if not bernoulli_exp(Fraction(u, t), rng):
            continue
        v = 0
        while bernoulli_exp(Fraction(1), rng):
            v += 1
        y = (u + t * v) // s
        negative = _uniform_below(2, rng) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


def discrete_laplace(scale: ArrayLike, rng: np.random.Generator) -> NDArray[np.int64]:
    """One exact discrete Laplace draw per entry, P(y) ∝ exp(−|y|/scale), scale > 0."""
    flat = np.asarray(scale, dtype=np.float64).ravel()
    out = np.empty(flat.size, dtype=np.int64)
    for i, b in enumerate(flat):
        rate = 1 / Fraction(float(b))  # s/t with P(y) ∝ exp(−|y|·s/t)
        out[i] = _one_laplace(rate.numerator, rate.denominator, rng)
    return out.reshape(np.shape(scale))


def _one_gaussian(sigma: Fraction, rng: np.random.Generator) -> int:
    """P(y) ∝ exp(−y²/(2σ²)) (CKS Algorithm 3: rejection from the discrete Laplace)."""
    var = sigma * sigma
    t = int(sigma) + 1
    while True:
        y = _one_laplace(1, t, rng)
        gap = abs(y) - var / t
        if bernoulli_exp(gap * gap / (2 * var), rng):
            return y


def discrete_gaussian(sigma: ArrayLike, rng: np.random.Generator) -> NDArray[np.int64]:
    """One exact discrete Gaussian draw per entry, parameter σ > 0."""
    flat = np.asarray(sigma, dtype=np.float64).ravel()
    out = np.empty(flat.size, dtype=np.int64)
    for i, s in enumerate(flat):
        out[i] = _one_gaussian(Fraction(float(s)), rng)
    return out.reshape(np.shape(sigma))
