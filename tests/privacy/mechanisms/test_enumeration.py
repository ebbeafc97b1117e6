"""The pmf a discrete Laplace sampler implements, by enumerating its uniform word.

A sampler that turns one raw 64-bit word into a value is a function on 2⁶⁴
inputs, so the law it implements is a finite sum that can be computed
exactly, without sampling: its output is monotone in the part of the word that
plays the uniform, so every boundary where the output changes is found by
bisection over the word values, with the sampler's own vectorised word → value
function. The pmf then gives the worst-case privacy loss
max_k |log P(k) − log P(k+1)| of the noise for a unit shift, which must equal
the claimed ε/Δ (pure DP, δ = 0).

* The former fast path (``discrete_laplace_by_inversion``, frozen below) uses
  53 bits of the word as a float uniform and a sign bit. Its enumeration shows
  the audit's finding: at ε/Δ = 1 the support stops at |X| = 37 (infinite loss
  at ±38); at ε/Δ = 0.125 the mass near |X| = 289–293 comes in multiples of
  2⁻⁵³, with empty values and a ln 2 jump.
* The exact sampler (:class:`~fedeval.privacy.mechanisms.exact_sampling.LaplaceSampler`)
  uses the word's top 63 bits as the first bits of an infinite uniform U. A
  word decides |X| ≥ k only when the whole interval [w, w+1)·2⁻⁶³ lies below
  S_k = P(|X| ≥ k); words it does not decide (``certified`` False) are finished
  with more bits, and contribute exactly their share of [w, w+1)·2⁻⁶³ on each
  side of S_k (computed here independently with :mod:`decimal`, 90 digits).
  The enumeration checks that the first undecided word is ⌊S_k·2⁶³⌋ for every
  k, so P(|X| ≥ k) = S_k exactly: no holes, and a loss of exactly ε/Δ.
  Half words (a 32-bit word: 31 bits of U and a sign, the samplers of small
  scales, issue 28) are enumerated the same way over their 2³¹ values.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest
from numpy.typing import NDArray

from fedeval.privacy.mechanisms.exact_sampling import LaplaceSampler

PREC = 90


# ------------------------------------------------------------------ the old sampler


def old_inversion_words(alpha: float, raw: NDArray[np.uint64]) -> NDArray[np.int64]:
    """Word → value of ``discrete_laplace_by_inversion`` as it was before issue 24 (frozen).

    Bit 0 is the sign, bits 11..63 a 53-bit uniform U, W = 1 − U,
    |X| = max(0, 1 + ⌊log(W(1+α)/(2α)) / log α⌋); the same numpy operations in
    the same order as the removed function.
    """
    a = float(alpha)
    to_v = (1.0 + a) / (2.0 * a)
    per_log = 1.0 / math.log(a)
    sign = (raw & np.uint64(1)).astype(np.int64)
    vm = np.multiply(raw >> np.uint64(11), -(2.0**-53), casting="unsafe")
    vm += 1.0
    vm *= to_v
    np.log(vm, out=vm)
    vm *= per_log
    np.floor(vm, out=vm)
    o = vm.astype(np.int64)
    o += 1
    np.maximum(o, 0, out=o)
    np.negative(sign, out=sign)
    o ^= sign
    o -= sign
    return o


def old_pmf(epsilon: float, kmax: int) -> dict[int, Fraction]:
    """Exact pmf of the old sampler on |x| ≤ kmax: bisection over its 2⁵³ uniforms.

    |X| is non-decreasing in U, so A_k = min{U : |X| ≥ k} and
    P(|X| ≥ k) = (2⁵³ − A_k)/2⁵³; the sign bit is independent of U.
    """
    alpha = math.exp(-epsilon)
    ks = np.arange(1, kmax + 2, dtype=np.int64)
    lo = np.zeros(ks.size, dtype=np.uint64)  # |X(lo)| < k unless lo = 0 decides
    hi = np.full(ks.size, 1 << 53, dtype=np.uint64)  # first U with |X| ≥ k, or 2⁵³
    for sign in (0, 1):
        lo[:] = 0
        hi[:] = 1 << 53
        while np.any(hi - lo > 1):
            mid = (lo + hi) // np.uint64(2)
            words = (mid << np.uint64(11)) | np.uint64(sign)
            ge = np.abs(old_inversion_words(alpha, words)) >= ks
            hi = np.where(ge, mid, hi)
            lo = np.where(ge, lo, mid)
        at_zero = old_inversion_words(alpha, np.full(ks.size, sign, dtype=np.uint64))
        first = np.where(np.abs(at_zero) >= ks, 0, hi)
        if sign == 0:
            first_pos = first.copy()
        else:
            np.testing.assert_array_equal(first, first_pos)  # the sign does not change |X|
    tail = [Fraction((1 << 53) - int(a), 1 << 53) for a in first_pos]  # P(|X| ≥ k), k ≥ 1
    p_abs = [1 - tail[0]] + [tail[i] - tail[i + 1] for i in range(kmax)]
    pmf = {0: p_abs[0]}
    for k in range(1, kmax + 1):
        pmf[k] = pmf[-k] = p_abs[k] / 2
    return pmf


# ------------------------------------------------------------------ the exact sampler


def thresholds(rate: Fraction, kmax: int) -> list[Decimal]:
    """S_k = P(|X| ≥ k) = 2α^k/(1+α) for k = 0..kmax (S_0 = 1), 90 digits, independently."""
    with localcontext() as ctx:
        ctx.prec = PREC
        x = Decimal(rate.numerator) / Decimal(rate.denominator)
        alpha = (-x).exp()
        return [Decimal(1)] + [2 * (-(k * x)).exp() / (1 + alpha) for k in range(1, kmax + 1)]


def exact_pmf(
    rate: Fraction, kmax: int, table_size: int, word_bits: int = 63
) -> tuple[dict[int, Decimal], dict[str, int]]:
    """The pmf the exact sampler implements on |x| ≤ kmax, by bisection over its 2^b words.

    b = ``word_bits``: 63 (one 64-bit word: 63 bits of U and a sign) or 31
    (half words). For each k, "the word decides |X| ≥ k" is true exactly for
    w < B_k (the word interval lies below S_k), so B_k is found by bisection
    with ``decode``; where ``decode`` leaves a word undecided the predicate is
    the exact one, (w + 1)·2⁻ᵇ ≤ S_k. The word B_k itself straddles S_k
    (undecided, finished with more bits) and contributes S_k·2ᵇ − B_k.
    Returns the pmf and counts of how the words were decided.
    """
    sampler = LaplaceSampler(rate, table_size, word_bits)
    word = np.uint64 if word_bits == 63 else np.uint32
    top = 1 << word_bits
    s = thresholds(rate, kmax + 1)
    with localcontext() as ctx:
        ctx.prec = PREC
        scaled = [x * top for x in s]  # S_k·2ᵇ
    ks = np.arange(1, kmax + 2, dtype=np.int64)
    stats = {"undecided_probes": 0, "table_size": sampler.size}
    bounds: list[NDArray[np.uint64]] = []
    for sign in (0, 1):

        def below(w: NDArray[np.uint64], sign: int = sign) -> NDArray[np.bool_]:
            raw = ((w << np.uint64(1)) | np.uint64(sign)).astype(word)
            values, certified = sampler.decode(raw)
            mag = -values if sign else values
            out = mag >= ks
            for i in np.flatnonzero(~certified):
                stats["undecided_probes"] += 1
                out[i] = int(w[i]) + 1 <= scaled[i + 1]
            return out

        lo = np.zeros(ks.size, dtype=np.uint64)
        hi = np.full(ks.size, top, dtype=np.uint64)
        # Invariant: every word < lo is below S_k (vacuous at 0); hi is not, or is 2ᵇ.
        while np.any(hi - lo > 1):
            mid = (lo + hi) // np.uint64(2)
            b = below(mid)
            lo = np.where(b, mid, lo)
            hi = np.where(b, hi, mid)
        first = np.where(below(np.zeros(ks.size, dtype=np.uint64)), hi, 0).astype(np.uint64)
        bounds.append(first)
    np.testing.assert_array_equal(bounds[0], bounds[1])
    first_not_below = bounds[0]
    with localcontext() as ctx:
        ctx.prec = PREC
        tail = []
        for i, k in enumerate(ks):
            b = int(first_not_below[i])
            # The first word not wholly below S_k is the one that straddles it ...
            assert b == math.floor(scaled[k]), (k, b, scaled[k])
            # ... and the sampler does not decide it from its first b bits.
            _, certified = sampler.decode(np.array([b << 1, (b << 1) | 1], dtype=word))
            assert not certified.any(), (k, b)
            # Its exact contribution: the part of [b, b+1) below S_k·2ᵇ.
            tail.append((b + (scaled[k] - b)) / top)
        p_abs = [1 - tail[0]] + [tail[i] - tail[i + 1] for i in range(kmax)]
        pmf = {0: p_abs[0]}
        for k in range(1, kmax + 1):
            pmf[k] = pmf[-k] = p_abs[k] / 2
    return pmf, stats


def worst_loss(pmf: dict[int, Fraction] | dict[int, Decimal], kmax: int) -> Decimal:
    """max_k |log P(k) − log P(k+1)| over −kmax ≤ k < kmax (infinite if a value is empty)."""
    with localcontext() as ctx:
        ctx.prec = PREC
        p = {
            k: Decimal(v.numerator) / Decimal(v.denominator) if isinstance(v, Fraction) else v
            for k, v in pmf.items()
        }
        worst = Decimal(0)
        for k in range(-kmax, kmax):
            a, b = p[k], p[k + 1]
            if (a == 0) != (b == 0):
                return Decimal("Infinity")
            if a > 0:
                worst = max(worst, abs(a.ln() - b.ln()))
        return worst


def support_end(rate: Fraction, word_bits: int = 63) -> int:
    """The last k with S_k·2ᵇ ≥ 1 (beyond it all of P(|X| ≥ k) lies inside word 0)."""
    top = math.log(2.0) * (word_bits + 1)
    return math.floor((top - math.log1p(math.exp(-float(rate)))) / float(rate))


# ------------------------------------------------------------------ the tests


def test_old_inversion_support_ends_at_37_for_epsilon_one() -> None:
    """Regression test of the audit finding (frozen copy of the removed sampler).

    Measured here: P(|X| = 37) = 2⁻⁵⁴ (one uniform of 2⁵³ per sign), P(|X| = 38) = 0
    though the target gives it ≈ 3·10⁻¹⁷: the output 38 rules out the neighbour
    dataset, an infinite privacy loss. (The cut-off is where the tail mass falls
    below 2⁻⁵³; a different ``log`` may move it by one.)
    """
    kmax = 45
    pmf = old_pmf(1.0, kmax)
    assert sum(pmf.values()) == 1
    first_empty = min(k for k in range(kmax + 1) if pmf[k] == 0)
    assert first_empty in range(36, 40)
    assert all(pmf[k] == 0 for k in range(first_empty, kmax + 1))
    assert worst_loss(pmf, kmax).is_infinite()


def test_old_inversion_has_holes_and_ln2_jumps_at_epsilon_one_eighth() -> None:
    """At ε/Δ = 0.125 the mass near |X| ≈ 280–300 comes in units of 2⁻⁵⁴.

    Measured here: values 279, 282, 284, 286–287, 289–293, 295, ... are empty
    amid values of mass 2⁻⁵⁴ (infinite loss), and between non-empty
    neighbours the ratio is 2 (a loss of ln 2 = 5.5 times the target 0.125).
    """
    kmax = 320
    pmf = old_pmf(0.125, kmax)
    assert sum(pmf.values()) == 1
    empty = [k for k in range(kmax + 1) if pmf[k] == 0]
    assert 270 <= empty[0] <= 295
    assert any(pmf[k] > 0 for k in range(empty[0] + 1, kmax + 1))  # holes, not just an end
    assert set(range(289, 294)) <= set(empty)
    assert worst_loss(pmf, kmax).is_infinite()
    finite = [
        abs(math.log(pmf[k] / pmf[k + 1])) for k in range(kmax) if pmf[k] > 0 and pmf[k + 1] > 0
    ]
    assert max(finite) == pytest.approx(math.log(2.0), rel=1e-12)
    assert max(finite) > 5 * 0.125


@pytest.mark.parametrize(
    ("rate", "word_bits"),
    [
        (Fraction(1), 63),
        (Fraction(1, 8), 63),
        (Fraction(1, 100), 63),
        (Fraction(1), 31),
        (Fraction(1, 22), 31),
        (Fraction(1, 60), 31),
    ],
)
@pytest.mark.parametrize("table_size", [1 << 14, 4])
def test_exact_sampler_pmf_is_the_discrete_laplace(rate, word_bits, table_size) -> None:
    """Pure ε-DP, δ = 0: the enumerated pmf has no holes and a worst loss of exactly ε/Δ.

    ``table_size = 4`` sends all but the first four thresholds through the float
    certificate (63-bit words) or leaves them undecided for the exact resolution
    (half words), so every deciding stage is enumerated. Half words are
    enumerated at the scales they serve (:func:`sampler_for`: t up to ~63).
    """
    kmax = support_end(rate, word_bits) + 3
    pmf, stats = exact_pmf(rate, kmax, table_size, word_bits)
    assert all(p > 0 for p in pmf.values())
    with localcontext() as ctx:
        ctx.prec = PREC
        beyond = thresholds(rate, kmax + 1)[kmax + 1]  # P(|X| > kmax), not enumerated
        assert abs(sum(pmf.values()) - (1 - beyond)) < Decimal(10) ** -80
    with localcontext() as ctx:
        ctx.prec = PREC
        rate_dec = Decimal(rate.numerator) / Decimal(rate.denominator)
        assert abs(worst_loss(pmf, kmax) - rate_dec) < Decimal(10) ** -80
    with localcontext() as ctx:
        ctx.prec = PREC
        assert abs(pmf[0] - (1 - thresholds(rate, 1)[1])) < Decimal(10) ** -80
    assert stats["table_size"] <= table_size
