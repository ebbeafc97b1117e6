"""Exact, vectorised samplers: float proposes, certified integers decide.

Every draw here is *inversion of one infinite uniform* U = 0.b₁b₂b₃… whose
first 63 bits are the top 63 bits of one uniform 64-bit word
(:func:`fedeval.privacy.sampling.raw_words`; its lowest bit is a spare, used
for a sign) and whose further bits are more words, drawn only when the first
63 do not decide the outcome. A discrete Laplace sampler of a small scale
reads half words instead: the first 31 bits of U are the top 31 of a 32-bit
half of a raw word (:func:`sampler_for`, the same integer certificate on 31
bits; issue 28). The output is F⁻¹(U) for the target
distribution F, computed *exactly*, so the law of the output is exactly the
target law whatever the bit generator (PCG64, ChaCha, MT19937, ...): the guarantees
computed for the target hold with δ = 0 and nothing hidden in rounding.
numpy's ``geometric``, ``random`` and the like are never used: their laws
are the targets' only up to rounding, and the inversion of a 53-bit float
has holes in its tail (the finding below).

Design choice: *lazy exact inversion* rather than an integer table whose
ratios are merely bounded by e^{1/t}. It makes the implemented law equal to
the target (so the variance, the pmf and the ε of the receipts are all
exactly those of the discrete Laplace / Gaussian), and it needs no table at
all in the tail, which matters for the large scales of fixed-point sums.
The proof rests on two documented facts only: IEEE-754 ``+``, ``×`` and
int→float conversion are correctly rounded (numpy's float64 loops are), and
:meth:`decimal.Decimal.exp` is correctly rounded.

How a 63-bit word w decides, i.e. when U ∈ [w, w + 1)·2⁻⁶³ lies on one side
of a threshold S (a real number in (0, 1)):

* **Integer certificate** (body of the discrete Laplace). A table holds
  N = ⌊S·2⁶³⌋ for each threshold, computed once in certified arithmetic. Then
  w < N ⟹ U < (w + 1)·2⁻⁶³ ≤ S, and w > N ⟹ U ≥ w·2⁻⁶³ > S, exactly; only
  w = N (probability 2⁻⁶³ per threshold) is undecided. A float logarithm only
  *guesses* which two thresholds bracket w; a wrong guess fails the integer
  check and is corrected, never believed.
* **Float certificate** (discrete Laplace tail, discrete Gaussian acceptance).
  The threshold is computed in float64 by :func:`exp_neg`, which uses only
  IEEE-754 additions, multiplications and ``ldexp`` (each correctly rounded,
  so their errors are bounded: no trust in a libm) and is within 2⁻⁴⁷ of the
  true value relatively. With the rounding of its argument the total relative
  error is below 2⁻³⁹; the word is compared with integer bounds
  ⌊S·2⁶³·(1 − 2⁻³⁶)⌋ and ⌈S·2⁶³·(1 + 2⁻³⁶)⌉ that are therefore certainly below
  and above S·2⁶³. Words between the bounds (probability ~2⁻³⁵) are
  undecided.
* **Exact resolution** of undecided words (:class:`LazyUniform`): further
  64-bit words extend U; each comparison U < S is settled by comparing the
  integer prefix with ⌊S·2^b⌋ computed to as many bits as needed in
  certified arithmetic (:func:`floor_scaled`: interval bounds from
  :mod:`decimal`'s correctly rounded ``exp`` and exact :mod:`fractions`,
  refined until the floor is certain). Every threshold used is irrational
  (e^{−q} and rational functions of it for rational q ≠ 0 are transcendental,
  Lindemann 1882), so equality never persists and the loop ends with
  probability 1; each extra word is needed with probability 2⁻⁶⁴.

Independence. The words of a batch are drawn first and the extra words of its
undecided entries after them, in index order. Given the batch's words, the
extra words are fresh i.i.d. uniforms, so each output is a function of its own
independent infinite uniform and the outputs are i.i.d. with the target law.

The audit finding this replaces: the former fast path computed
|X| = max(0, 1 + ⌊log V / log α⌋) from a 53-bit float uniform. Enumerating its
2⁵³ inputs (tests/privacy/mechanisms/test_enumeration.py) gives support
|X| ≤ 37 at ε/Δ = 1 (an infinite privacy loss at ±38) and, at ε/Δ = 0.125,
empty values from 279 on (among them 289–293) between values of mass 2⁻⁵⁴,
with ln 2 jumps (5.5× the target) between non-empty neighbours; the audit
found the same kind of cut-off tail in numpy's ``Generator.geometric``.
Mironov (2012) showed the same class of flaw for the floating-point
continuous Laplace. The same enumeration of this module's sampler finds
P(|X| ≥ k) = S_k for every k and a worst loss of exactly ε/Δ.

References
----------
.. [1] C. Canonne, G. Kamath and T. Steinke, "The discrete Gaussian for
   differential privacy", NeurIPS 2020 (arXiv:2004.00010), Algorithms 1–3
   (exact Bernoulli(exp(−γ)), discrete Laplace and discrete Gaussian
   samplers; Algorithm 3 is the rejection scheme used here).
.. [2] I. Mironov, "On significance of the least significant bits for
   differential privacy", CCS 2012 (floating-point samplers break DP).
.. [3] W. J. Cody and W. Waite, "Software Manual for the Elementary
   Functions", 1980 (the two-part ln 2 argument reduction of :func:`exp_neg`).
.. [4] N. J. Higham, "Accuracy and Stability of Numerical Algorithms", 2nd
   ed., SIAM 2002, §5.1 (the rounding-error bound of Horner's rule).
"""

from __future__ import annotations

import decimal
import functools
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fedeval.privacy.sampling import raw_words

__all__ = [
    "HALF_WORD_BITS",
    "HALF_WORD_TAIL",
    "MAX_SCALE",
    "MAX_SIGMA",
    "GaussianSampler",
    "LaplaceSampler",
    "LazyUniform",
    "certify_magnitude",
    "exp_neg",
    "exp_neg_interval",
    "floor_scaled",
    "gaussian_sampler",
    "group_by_value",
    "laplace_sampler",
    "rate_of_scale",
    "sample_discrete_laplace_exact",
    "sample_discrete_laplace_scales",
    "sampler_for",
]

WORD_BITS = 63
"""Bits of each raw word used for the uniform (its top 63); the lowest bit is the spare (sign)."""

HALF_WORD_BITS = 31
"""Bits of each half word (32 bits) used for the uniform by a half-word sampler; the lowest is the sign."""

HALF_WORD_TAIL = 1 << (HALF_WORD_BITS - 24)
"""A half-word table is used only when it ends at N_K ≤ 2⁷, i.e. S_K ≤ 2⁻²⁴ (:func:`sampler_for`)."""

MAX_SCALE = 2.0**50
"""Largest discrete Laplace scale t accepted: outputs stay far inside int64 (|X| < 2⁵⁷)."""

_CHUNK = 1 << 14
"""Words per vectorised batch: arrays of 128 KiB stay in cache."""

_TABLE_MAX = 1 << 14
"""Most integer-table entries per scale (the tail beyond goes to the float certificate)."""

_TAIL_BITS = 24
"""The table reaches thresholds down to ~2⁻²⁴ (fewer entries for small batches)."""

MARGIN = 2.0**-36
"""Relative margin of the float certificates (≥ 2⁹ times their proven error bound)."""

Threshold = Callable[[int], tuple[Fraction, Fraction]]
"""A real S given as ``digits -> (lo, hi)`` with lo ≤ S ≤ hi, hi − lo → 0 as digits grow."""


# ---------------------------------------------------------------- certified reals


def _context(digits: int) -> decimal.Context:
    return decimal.Context(
        prec=digits,
        Emin=decimal.MIN_EMIN,
        Emax=decimal.MAX_EMAX,
        traps=[decimal.InvalidOperation, decimal.DivisionByZero, decimal.Overflow],
    )


_EXP_DIRECT_MAX = 4096
"""Above this, exp(−q) is computed as exp(−q/2^j) squared j times (decimal's exp slows down)."""


def exp_neg_interval(q: Fraction, digits: int) -> tuple[Fraction, Fraction]:
    """Rational bounds lo ≤ exp(−q) ≤ hi for rational q ≥ 0, about ``digits`` digits wide.

    q is rounded down and up to ``digits`` significant digits
    (``ROUND_FLOOR``/``ROUND_CEILING``), so q_lo ≤ q ≤ q_hi; exp is decreasing, and
    :meth:`decimal.Decimal.exp` is correctly rounded (error ≤ ½ ulp), so one ulp
    outward (``next_minus``/``next_plus``) bounds exp(−q_hi) from below and
    exp(−q_lo) from above. For q > 4096 the bounds for q/2^j are squared j
    times with products rounded down and up (each correctly rounded), with j
    more digits to absorb the 2^j-fold growth of the relative width.

    For q > 2¹⁶ with exp(−q) < 10^−(2·digits + 60) (q > 2.31·(2·digits + 60)
    > ln 10·(...)), the bounds are 0 and 10^−(2·digits + 60): absolutely that
    narrow, which is all :func:`floor_scaled` needs at this precision (it asks
    for more digits when not), and far cheaper than exact powers of such tiny
    numbers (a denominator of q/ln 2 bits).
    """
    if q == 0:
        return Fraction(1), Fraction(1)
    tiny = 2 * digits + 60
    if q > 1 << 16 and q > Fraction(231, 100) * tiny:
        return Fraction(0), Fraction(1, 10**tiny)
    if q > _EXP_DIRECT_MAX:
        j = math.ceil(math.log2(q / _EXP_DIRECT_MAX))
        more = digits + j
        lo_r, hi_r = exp_neg_interval(q / (1 << j), more)
        down = _context(more)
        down.rounding = decimal.ROUND_FLOOR
        up = _context(more)
        up.rounding = decimal.ROUND_CEILING
        lo_d = down.divide(decimal.Decimal(lo_r.numerator), decimal.Decimal(lo_r.denominator))
        hi_d = up.divide(decimal.Decimal(hi_r.numerator), decimal.Decimal(hi_r.denominator))
        for _ in range(j):
            lo_d = down.multiply(lo_d, lo_d)
            hi_d = up.multiply(hi_d, hi_d)
        return Fraction(lo_d), Fraction(hi_d)
    down = _context(digits)
    down.rounding = decimal.ROUND_FLOOR
    up = _context(digits)
    up.rounding = decimal.ROUND_CEILING
    num, den = decimal.Decimal(q.numerator), decimal.Decimal(q.denominator)
    q_lo = down.divide(num, den)
    q_hi = up.divide(num, den)
    ctx = _context(digits)
    # copy_negate is exact (unary minus would round in the thread's default context).
    lo = ctx.next_minus(ctx.exp(q_hi.copy_negate()))
    hi = ctx.next_plus(ctx.exp(q_lo.copy_negate()))
    return Fraction(max(lo, decimal.Decimal(0))), Fraction(hi)


def floor_scaled(threshold: Threshold, bits: int) -> int:
    """⌊S·2^bits⌋ for the real S given by ``threshold``, certified.

    The bounds are refined (more digits) until both give the same floor; at
    ``digits`` ≥ 0.302·bits + 40 they are within 2^−bits·10^−30 absolutely for
    every threshold used here (relative width 10^−digits of a value ≤ 2, or an
    absolute one below that for tiny values). S is
    irrational for every threshold used here, so S·2^bits is never an integer
    and the loop ends.
    """
    digits = int(bits * 0.302) + 40
    while True:
        lo, hi = threshold(digits)
        a = math.floor(lo * (1 << bits))
        if a == math.floor(hi * (1 << bits)):
            return a
        digits *= 2


class LazyUniform:
    """An infinite uniform U ∈ [0, 1) whose bits are drawn on demand.

    U ∈ [prefix, prefix + 1)·2^-bits; :meth:`extend` appends one raw 64-bit
    word. :meth:`less_than` decides U < S exactly for a real threshold S.
    """

    def __init__(self, prefix: int, bits: int, gen: np.random.Generator) -> None:
        self.prefix = prefix
        self.bits = bits
        self._gen = gen

    def extend(self) -> None:
        word = int(raw_words(self._gen, 1)[0])
        self.prefix = (self.prefix << 64) | word
        self.bits += 64

    def less_than(self, threshold: Threshold) -> bool:
        """Exactly whether U < S (see the module docstring)."""
        while True:
            theta = floor_scaled(threshold, self.bits)
            if self.prefix < theta:
                return True
            if self.prefix > theta:
                return False
            self.extend()

    def log(self) -> float:
        """An approximation of ln U (for guesses only), extending until U's prefix is > 0."""
        while self.prefix == 0:
            self.extend()
        return math.log(self.prefix) - self.bits * math.log(2.0)


# ---------------------------------------------------------------- certified float exp

# ln 2 / 32 split Cody–Waite style: L1 has 38 significant bits, so n·L1 is exact
# for the integers n < 2^15 used here; L2 = ln 2 / 32 − L1 rounded.
_LN2_32 = Fraction(_context(60).ln(decimal.Decimal(2))) / 32
_L1 = math.ldexp(math.floor(_LN2_32 * (1 << 43)), -43)
_L2 = float(_LN2_32 - Fraction(_L1))
_INV_L = 32.0 / math.log(2.0)
_POW2 = np.array([float(exp_neg_interval(_LN2_32 * j, 40)[0]) for j in range(32)], dtype=np.float64)
# exp(−r) ≈ Σ_{i ≤ 6} (−r)^i / i! on |r| ≤ 0.0109 (truncation ≤ 0.0109⁷/7! < 2⁻⁵⁸).
_TAYLOR = tuple(float(Fraction((-1) ** i, math.factorial(i))) for i in range(7))
EXP_NEG_MAX = 700.0
"""Arguments above this are clipped: exp(−700)·2⁶³ < 2⁻⁹⁴⁶, so the word decides alone."""
EXP_NEG_ERROR = 2.0**-47
"""Proven bound on the relative error of :func:`exp_neg` on [0, EXP_NEG_MAX]."""


def exp_neg(g: NDArray[np.float64]) -> NDArray[np.float64]:
    """exp(−g) for float64 0 ≤ g ≤ 700, relative error < 2⁻⁴⁷, from IEEE basic operations only.

    Notes
    -----
    With L = ln 2/32 and n = rint(g·32/ln 2) (any integer near g/L will do),
    exp(−g) = 2^(−⌊n/32⌋) · 2^(−(n mod 32)/32) · exp(−r), r = g − nL, |r| ≤ 0.0109.
    Error budget, each term relative (u = 2⁻⁵³ is the unit roundoff):

    * r is computed as (g − n·L1) − n·L2: n·L1 is exact (n < 2¹⁵, L1 has 38
      bits), the two subtractions and n·L2 round by ≤ u·0.011, and
      |L1 + L2 − L| ≤ u·|L2| < 2⁻⁹⁵, so r is off by < 2⁻⁵⁸ absolutely, which
      changes exp(−r) by < 2⁻⁵⁸ relatively;
    * the degree-6 Taylor polynomial of exp(−r) is within 0.0109⁷/7! < 2⁻⁵⁸;
    * Horner's rule in float64 with coefficients rounded to float64: ≤ 14u·
      Σ|a_i||r|^i / |p(r)| ≤ 14u·e^{0.022} < 2⁻⁴⁹ (Higham 2002, eq. 5.3);
    * the table value 2^(−j/32) (correctly rounded from a certified interval)
      and the product: 2u; ``ldexp`` is exact (results stay normal, ≥ 2⁻¹⁰¹¹).

    The sum is below 2⁻⁴⁸·⁵; :data:`EXP_NEG_ERROR` = 2⁻⁴⁷ is what callers use.
    tests/privacy/mechanisms/test_exact_sampling.py checks it against
    :mod:`decimal` on random and adversarial arguments.
    """
    n = np.rint(g * _INV_L)
    r = g - n * _L1
    r -= n * _L2
    p = np.full_like(r, _TAYLOR[6])
    for c in _TAYLOR[5::-1]:
        p *= r
        p += c
    ni = n.astype(np.int64)
    p *= _POW2[ni & 31]
    return np.asarray(np.ldexp(p, -(ni >> 5)), dtype=np.float64)


def _float_bounds(
    s63: NDArray[np.float64],
) -> tuple[NDArray[np.uint64], NDArray[np.uint64]]:
    """Integers ⌊S·2⁶³(1−m)⌋ ≤ S·2⁶³ ≤ ⌈S·2⁶³(1+m)⌉ from an estimate with relative error < 2⁻³⁹.

    The product by (1 ∓ m) rounds by at most 2⁻⁵³; with m = 2⁻³⁶ the bounds
    stay on their sides of the true S·2⁶³. Values are capped at 2⁶³.
    """
    cap = float(1 << 63)
    lo = np.floor(np.minimum(s63 * (1.0 - MARGIN), cap)).astype(np.uint64)
    hi = np.ceil(np.minimum(s63 * (1.0 + MARGIN), cap)).astype(np.uint64)
    return lo, hi


# ---------------------------------------------------------------- discrete Laplace


def _magnitude_threshold(rate: Fraction, k: int) -> Threshold:
    """S_k = P(|X| ≥ k) = 2α^k/(1+α), α = exp(−rate), for the discrete Laplace magnitude."""

    def bounds(digits: int) -> tuple[Fraction, Fraction]:
        if k == 0:
            return Fraction(1), Fraction(1)
        ek_lo, ek_hi = exp_neg_interval(rate * k, digits)
        e1_lo, e1_hi = exp_neg_interval(rate, digits)
        return 2 * ek_lo / (1 + e1_hi), 2 * ek_hi / (1 + e1_lo)

    return bounds


class _Workspace:
    """Scratch arrays for :meth:`LaplaceSampler.decode`, reused across batches.

    Words and their table rows are uint64 (63-bit words) or uint32 (half
    words), the float guess float64 or float32 to match.
    """

    def __init__(self, size: int, half: bool = False) -> None:
        word, real = (np.uint32, np.float32) if half else (np.uint64, np.float64)
        self.size = size
        self.half = half
        self.w = np.empty(size, dtype=word)
        self.f = np.empty(size, dtype=real)
        self.s = np.empty(size, dtype=word)
        self.pair = np.empty((size, 2), dtype=word)
        self.ok = np.empty(size, dtype=np.bool_)
        self.i = np.empty(size, dtype=np.int64)

    def views(
        self, m: int
    ) -> tuple[
        NDArray[Any], NDArray[Any], NDArray[Any], NDArray[Any], NDArray[np.bool_], NDArray[np.int64]
    ]:
        return self.w[:m], self.f[:m], self.s[:m], self.pair[:m], self.ok[:m], self.i[:m]


def certify_magnitude(
    w: NDArray[np.uint64],
    t_hat: float | NDArray[np.float64],
    rate_hat: float | NDArray[np.float64],
    alpha_hat: float | NDArray[np.float64],
    c63_hat: float | NDArray[np.float64],
    guess_scale: float | NDArray[np.float64],
) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
    """|X| = M = k̂ for 63-bit words w, certified iff ⌈S_{k̂+1}·2⁶³⌉⁺ ≤ w < ⌊S_k̂·2⁶³⌋⁻.

    The constants (t, fl(1/t), α̂ ≈ e^(−1/t), ĉ·2⁶³ ≈ 2⁶⁴/(1+α), and its
    reciprocal) are scalars for one scale or arrays with one entry per word.
    Float bounds with margin 2⁻³⁶ (:func:`_float_bounds`): S_k·2⁶³ =
    c·2⁶³·exp(−k·rate) is estimated as fl(c·2⁶³)·exp_neg(fl(k̂)·fl(rate)); the
    argument k̂·rate is within 3u relatively (u = 2⁻⁵³), i.e. < 2⁻⁴² absolutely
    for arguments ≤ 700, which moves exp by < 2⁻⁴²; α̂ and ĉ are within 2⁻⁴³
    (from decimal intervals in :class:`LaplaceSampler`, or from
    :func:`exp_neg` of fl(1/t) ≤ 700 in :func:`sample_discrete_laplace_scales`:
    2⁻⁴⁷ + 700u); with exp_neg's 2⁻⁴⁷ and the products' roundings the relative
    error is < 2⁻⁴¹, inside :func:`_float_bounds`' requirement of 2⁻³⁹. An
    uncertified word is never given a value: the caller resolves it exactly.
    """
    wf = w.view(np.int64).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        guess = -t_hat * np.log(wf * guess_scale)
    usable = (w > 0) & (guess < 2.0**62)
    k = np.where(usable, guess, 0.0).astype(np.int64)
    g = k.astype(np.float64) * rate_hat
    usable &= g <= EXP_NEG_MAX
    s_k = exp_neg(np.minimum(g, EXP_NEG_MAX)) * c63_hat
    below_k, _ = _float_bounds(s_k)
    _, above_k1 = _float_bounds(s_k * alpha_hat)
    ok = usable & (w < below_k) & (w >= above_k1)
    return k, ok


class LaplaceSampler:
    """Exact discrete Laplace draws P(k) = (1−α)/(1+α)·α^|k|, α = exp(−rate), one word each.

    Parameters
    ----------
    rate : fractions.Fraction
        The exact rate 1/t > 0 (ε/Δ1 for a mechanism), so the privacy loss of
        a unit shift is exactly ``rate``.
    table_size : int
        Most entries of the integer table (the body); the rest is decided by
        the float certificate, then exactly.
    word_bits : {63, 31}
        Bits of U each word gives: 63 from a 64-bit word, or 31 from a 32-bit
        half word (``decode`` then takes uint32 words). A half word has no float
        certificate: beyond the table every word is resolved exactly, so half
        words pay only with a table that reaches far into the tail
        (:func:`sampler_for` chooses).

    Notes
    -----
    Inversion. With a sign from the word's lowest bit and U from its other
    63 bits (then more words if needed), |X| = M = #{k ≥ 1 : U < S_k} with
    S_k = 2α^k/(1+α): P(M ≥ k) = S_k, so P(M = 0) = 1 − S_1 = (1−α)/(1+α) and
    P(M = k) = S_k − S_{k+1} = 2(1−α)α^k/(1+α) for k ≥ 1; a fair independent
    sign on k ≥ 1 (both signs give 0 at 0) yields exactly the discrete
    Laplace. The three deciding stages (table, float certificate, exact
    resolution) each return M or defer; none can return anything else, so the
    output is exactly F⁻¹(U).

    Table. N_k = ⌊S_k·2⁶³⌋ for k = 0..K (N_0 = 2⁶³), strictly decreasing, from
    a fixed-point interval recurrence S_{k+1} = α·S_k on integers scaled by
    2^P (P = 143 bits, floors and ceilings kept apart; an entry whose two
    floors differ is recomputed by :func:`floor_scaled`). M = k is certified
    iff N_{k+1} < w < N_k; w = N_k straddles S_k; w < N_K is the tail.

    Guess. k̂ = ⌊−t·ln(w·2⁻⁶³/c)⌋ ≈ M (c = 2/(1+α)) in float, signed by the
    sign bit; it selects which row (N_{|k̂|+1} + 1, N_|k̂| − N_{|k̂|+1} − 1) of a
    table indexed by the signed guess to compare w with, nothing more. Rows
    for |k̂| ≥ K certify nothing.
    """

    def __init__(
        self, rate: Fraction, table_size: int = _TABLE_MAX, word_bits: int = WORD_BITS
    ) -> None:
        if not rate > 0:
            raise ValueError(f"rate must be > 0, got {rate}")
        if word_bits not in (WORD_BITS, HALF_WORD_BITS):
            raise ValueError(f"word_bits must be {WORD_BITS} or {HALF_WORD_BITS}, got {word_bits}")
        self.rate = rate
        self.word_bits = word_bits
        self.half = word_bits == HALF_WORD_BITS
        self._word = np.uint32 if self.half else np.uint64
        self.t_hat = float(1 / rate)
        self.rate_hat = float(rate)
        a_lo, a_hi = exp_neg_interval(rate, 60)
        self.alpha_hat = float((a_lo + a_hi) / 2)
        c_lo, c_hi = 2 / (1 + a_hi), 2 / (1 + a_lo)
        self.c63_hat = float((c_lo + c_hi) / 2 * (1 << 63))
        # c·2^bits: the guess's scale for this word width
        self.c_scaled = float((c_lo + c_hi) / 2 * (1 << word_bits))
        self.guess_scale = 1.0 / self.c_scaled
        self._build_table(table_size, a_lo, a_hi)

    def _build_table(self, table_size: int, a_lo: Fraction, a_hi: Fraction) -> None:
        prec = 143
        bits = self.word_bits
        shift = prec - bits
        one = 1 << prec
        al = math.floor(a_lo * one)
        ah = math.ceil(a_hi * one)
        s1 = _magnitude_threshold(self.rate, 1)(60)
        lo = math.floor(s1[0] * one)
        hi = math.ceil(s1[1] * one)
        # Entries: enough for a tail mass ~2^-24, at most table_size.
        c = 2 / (1 + float(a_hi))
        want = math.ceil((math.log(c) + _TAIL_BITS * math.log(2.0)) / self.rate_hat) + 1
        size = max(1, min(table_size, want))
        table = [1 << bits]
        for k in range(1, size + 1):
            n_lo, n_hi = lo >> shift, hi >> shift
            n = n_lo if n_lo == n_hi else floor_scaled(_magnitude_threshold(self.rate, k), bits)
            if n >= table[-1]:
                break  # two thresholds in one word: stop the table (the tail handles the rest)
            table.append(n)
            if n == 0:
                break
            lo = (lo * al) >> prec
            hi = -((-hi * ah) >> prec)
        self.size = len(table) - 1  # K
        nk: NDArray[np.unsignedinteger[Any]] = np.array(table, dtype=self._word)
        self.hi_table = nk  # N_k, k = 0..K
        # Row k: (N_{k+1} + 1, N_k − N_{k+1} − 1), fetched by one gather; row K
        # certifies nothing (width 0).
        above_next = nk[1:] + 1  # stays unsigned (NEP 50)
        pairs = np.column_stack([above_next, nk[:-1] - above_next])  # k = 0..K−1
        # Rows indexed by the signed guess + reach, rows beyond K−1 certify nothing.
        # reach covers every guess a word w ≥ 1 can give (≤ t·ln(c·2ᵇ)) when that
        # is at most 2¹⁵ rows a side; otherwise guesses are clipped to ±K.
        full = math.ceil(self.t_hat * math.log(self.c_scaled)) + 2
        self.clip = full > 1 << 15
        self.reach = self.size if self.clip else max(full, self.size)
        signed = np.zeros((2 * self.reach + 1, 2), dtype=self._word)
        signed[self.reach : self.reach + self.size] = pairs
        signed[self.reach - self.size + 1 : self.reach + 1] = pairs[::-1]
        self.signed_pairs = signed
        self.ascending = nk[:0:-1].copy()  # N_K, ..., N_1

    def threshold(self, k: int) -> Threshold:
        """S_k = P(|X| ≥ k) as a certified real."""
        return _magnitude_threshold(self.rate, k)

    # -- word -> value -------------------------------------------------------

    def decode(
        self,
        raw: NDArray[Any],
        work: _Workspace | None = None,
        out: NDArray[np.int64] | None = None,
    ) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
        """The value each raw word decides, and whether it decides it (vectorised).

        The word's top 63 (half words: 31) bits are U's first bits
        (w = raw >> 1), its lowest bit the sign.

        Parameters
        ----------
        raw : ndarray of uint64 (half words: uint32), shape (m,)
        work, out : optional
            Scratch arrays reused across batches, and where to write the values
            (internal).

        Returns
        -------
        values : ndarray of int64, shape (m,)
            The draw where ``certified``; a guess elsewhere.
        certified : ndarray of bool, shape (m,)
            False where the word alone does not decide the value
            (probability ≈ 2⁻²⁴ + K·2⁻⁶³ with the full table; half words
            ≈ 2⁻²⁴ + K·2⁻³¹, and a wrong float32 guess is looked up again, not
            left undecided); those entries
            are finished by :meth:`resolve` with more words.
        """
        with np.errstate(divide="ignore", invalid="ignore"):
            return self._decode(raw, work, out)

    def _decode(
        self,
        raw: NDArray[Any],
        work: _Workspace | None,
        out: NDArray[np.int64] | None,
    ) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
        m = raw.size
        if raw.dtype != self._word:
            raise TypeError(f"this sampler decodes {np.dtype(self._word)} words, got {raw.dtype}")
        ws = work if work is not None and work.size >= m and work.half == self.half else None
        w, f, sign, pair, ok, index = (ws or _Workspace(m, self.half)).views(m)
        values = np.empty(m, dtype=np.int64) if out is None else out
        word = self._word
        np.right_shift(raw, word(1), out=w)
        if self.half:
            # float32 is enough for a guess (a wrong one is caught below), and twice as fast
            np.copyto(f, w.view(np.int32), casting="unsafe")
            np.multiply(f, np.float32(self.guess_scale), out=f)
            np.log(f, out=f)
            np.multiply(f, np.float32(-self.t_hat), out=f)
        else:
            np.multiply(w.view(np.int64), self.guess_scale, out=f)
            np.log(f, out=f)  # log(0) = −inf for w = 0: an out-of-table guess (undecided)
            np.multiply(f, -self.t_hat, out=f)
        if self.clip:
            np.minimum(f, f.dtype.type(self.reach), out=f)
        # The sign: the word's lowest bit becomes the float's sign bit (exact; the
        # cast truncates towards 0 on both sides, so −0.x gives 0).
        np.left_shift(raw, word(8 * raw.itemsize - 1), out=sign)
        np.bitwise_xor(f.view(word), sign, out=f.view(word))
        np.copyto(values, f, casting="unsafe")
        np.add(values, self.reach, out=index)
        np.take(self.signed_pairs, index, axis=0, out=pair, mode="clip")
        # N_{k+1} < w < N_k  ⟺  (w − (N_{k+1} + 1)) mod 2⁶⁴ (2³²) < N_k − N_{k+1} − 1.
        np.subtract(w, pair[:, 0], out=sign)
        np.less(sign, pair[:, 1], out=ok)
        if not ok.all():
            bad = np.flatnonzero(~ok)
            mag, ok[bad] = self._decode_rest(w[bad])
            values[bad] = np.where(raw[bad] & word(1), -mag, mag)
        return values, ok

    def _decode_rest(self, w: NDArray[Any]) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
        """Words the guess left undecided: the exact table lookup, then the float certificate.

        A half word beyond the table is left undecided (31 bits are too few for
        the float certificate's margin); :meth:`resolve` finishes it.
        """
        size = self.size
        k = size - np.searchsorted(self.ascending, w, side="right").astype(np.int64)
        ok = np.ones(w.size, dtype=np.bool_)
        body = k < size
        if body.any():
            # Certified unless w is the straddling word N_{k+1}.
            ok[body] = w[body] != self.hi_table[k[body] + 1]
        tail = np.flatnonzero(~body)
        if tail.size:
            if self.half:
                ok[tail] = False
            else:
                k[tail], ok[tail] = self._float_certificate(w[tail])
        return k, ok

    def _float_certificate(
        self, w: NDArray[np.uint64]
    ) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
        """M for words beyond the table, certified by :func:`certify_magnitude`."""
        return certify_magnitude(
            w, self.t_hat, self.rate_hat, self.alpha_hat, self.c63_hat, self.guess_scale
        )

    # -- undecided words -----------------------------------------------------

    def resolve(self, raw: int, gen: np.random.Generator) -> int:
        """The exact draw for one raw word the fast stages left undecided (more words as needed)."""
        u = LazyUniform(raw >> 1, self.word_bits, gen)
        c = 2.0 / (1.0 + self.alpha_hat)
        guess = (math.log(c) - u.log()) / self.rate_hat
        k = max(0, min(int(guess), 1 << 60))
        # M = max{k : U < S_k}, S_0 = 1 > S_1 > ...: step from the guess.
        while k > 0 and not u.less_than(self.threshold(k)):
            k -= 1
        while u.less_than(self.threshold(k + 1)):
            k += 1
        return -k if raw & 1 else k

    # -- sampling ------------------------------------------------------------

    def words(self, gen: np.random.Generator, m: int) -> NDArray[Any]:
        """``m`` fresh words: 64-bit, or the two 32-bit halves of ⌈m/2⌉ 64-bit words.

        The halves of a uniform 64-bit word are independent and uniform on
        {0, …, 2³² − 1}, whatever the byte order.
        """
        if not self.half:
            return raw_words(gen, m)
        halves: NDArray[np.uint32] = raw_words(gen, (m + 1) // 2).view(np.uint32)[:m]
        return halves

    def sample(self, n: int, gen: np.random.Generator) -> NDArray[np.int64]:
        """n i.i.d. exact draws, consuming raw words of ``gen``'s bit generator."""
        out = np.empty(n, dtype=np.int64)
        work = _Workspace(min(n, _CHUNK), self.half)
        with np.errstate(divide="ignore", invalid="ignore"):
            for start in range(0, n, _CHUNK):
                m = min(_CHUNK, n - start)
                raw = self.words(gen, m)
                values, ok = self._decode(raw, work, out[start : start + m])
                if not ok.all():
                    for i in np.flatnonzero(~ok):
                        values[i] = self.resolve(int(raw[i]), gen)
        return out


def _table_size_for(n: int) -> int:
    """A power of two between 64 and 2¹⁴, about n/16: small batches build small tables."""
    return int(min(_TABLE_MAX, max(64, 1 << max(0, (n // 16).bit_length()))))


@functools.lru_cache(maxsize=64)
def laplace_sampler(rate: Fraction, table_size: int = _TABLE_MAX) -> LaplaceSampler:
    """The (cached) :class:`LaplaceSampler` for an exact rate."""
    return LaplaceSampler(rate, table_size)


def rate_of_scale(scale: float) -> Fraction:
    """The exact rate 1/t of a float scale t, 0 < t ≤ :data:`MAX_SCALE`."""
    t = float(scale)
    if not (math.isfinite(t) and 0.0 < t <= MAX_SCALE):
        raise ValueError(f"the discrete Laplace scale must lie in (0, 2^50], got {scale!r}")
    return 1 / Fraction(t)


def sample_discrete_laplace_exact(
    rate: Fraction, n: int, gen: np.random.Generator
) -> NDArray[np.int64]:
    """n exact discrete Laplace draws with rate ``rate`` (α = exp(−rate)).

    Half words (:func:`sampler_for`) where their table reaches the tail, else 63-bit words.
    """
    if n == 0:
        return np.empty(0, dtype=np.int64)
    return sampler_for(rate, _table_size_for(n)).sample(n, gen)


@functools.lru_cache(maxsize=64)
def sampler_for(rate: Fraction, table_size: int) -> LaplaceSampler:
    """The sampler :func:`sample_discrete_laplace_exact` draws with: half words where they suffice.

    A half word (31 bits of U and a sign) decides a draw as a 63-bit word does,
    by the integer table N_k = ⌊S_k·2³¹⌋, and costs half the random bits and
    half the memory traffic (decoding 2×, sampling 1.4× faster at t = 22). Beyond its table it
    certifies nothing (31 bits are too few for the float certificate), so
    every such word is finished exactly by :meth:`LaplaceSampler.resolve`,
    which is slow. Half words are therefore used only when their table ends
    at N_K ≤ :data:`HALF_WORD_TAIL` (tail mass S_K ≤ 2⁻²⁴, one exact
    resolution per ~16M draws); the table is built only when a float estimate
    says it can get there: it needs ⌈(ln c + 24 ln 2)/rate⌉ + 1 ≤ ``table_size``
    entries, and thresholds that stay at least two half words apart down to
    the tail (2⁷·(1 − α) ≥ 2, i.e. scales t ≲ 63). Either sampler's output
    is exactly F⁻¹(U); only the work and the words consumed differ.
    """
    r = float(rate)
    c = 2.0 / (1.0 + math.exp(-r))
    want = math.ceil((math.log(c) + _TAIL_BITS * math.log(2.0)) / r) + 1
    if want <= table_size and -math.expm1(-r) * (1 << (HALF_WORD_BITS - _TAIL_BITS)) >= 2.0:
        half = LaplaceSampler(rate, table_size, HALF_WORD_BITS)
        if int(half.hi_table[-1]) <= HALF_WORD_TAIL:
            return half
    return laplace_sampler(rate, table_size)


MANY_SCALES = 16
"""Above this many distinct scales in one draw, :func:`sample_discrete_laplace_scales` skips the tables."""

MIN_TABLELESS_SCALE = 1.0 / 512
"""Scales below this (rates above 512) go to the per-scale samplers: exp_neg needs rate ≤ 700."""


def sample_discrete_laplace_scales(
    scales: NDArray[np.float64], gen: np.random.Generator
) -> NDArray[np.int64]:
    """One exact discrete Laplace draw per entry, each with its own scale t (rate 1/t).

    A release whose coordinates have many distinct scales (the vertical
    protocol's label parties: one per party, thousands of them) would build one
    integer table per scale (~2 ms each) to draw a handful of values. Here
    every word goes straight to the float certificate (:func:`certify_magnitude`)
    with per-entry constants computed in float (rate = fl(1/t), exact when t
    is taken as given; α̂ = exp_neg(rate)); the rare word it leaves undecided
    (probability ~2⁻³⁰) is finished by :meth:`LaplaceSampler.resolve` for that
    scale. Each value is therefore exactly F⁻¹(U) for its own rate, as with
    :func:`sample_discrete_laplace_exact`; only the work differs.
    tests/privacy/mechanisms/test_exact_sampling.py checks the two agree word
    for word.

    Parameters
    ----------
    scales : ndarray of float64, shape (n,)
        Each in [:data:`MIN_TABLELESS_SCALE`, :data:`MAX_SCALE`].
    gen : numpy.random.Generator

    Returns
    -------
    ndarray of int64, shape (n,)
    """
    t = np.asarray(scales, dtype=np.float64)
    if t.size and not (np.all(t >= MIN_TABLELESS_SCALE) and np.all(t <= MAX_SCALE)):
        raise ValueError(
            f"table-free scales must lie in [{MIN_TABLELESS_SCALE}, 2^50], got {t.min()}..{t.max()}"
        )
    raw = raw_words(gen, t.size)
    rate = 1.0 / t
    alpha = exp_neg(rate)
    c63 = 2.0 / (1.0 + alpha) * float(1 << 63)
    mag, ok = certify_magnitude(raw >> np.uint64(1), t, rate, alpha, c63, 1.0 / c63)
    out = np.where(raw & np.uint64(1), -mag, mag)
    for i in np.flatnonzero(~ok):
        sampler = laplace_sampler(rate_of_scale(float(t[i])), 64)
        out[i] = sampler.resolve(int(raw[i]), gen)
    return out


# ---------------------------------------------------------------- discrete Gaussian

MAX_SIGMA = 2.0**40
"""Largest discrete Gaussian σ accepted: proposals stay exact in float64 (|y| < 2⁴⁶)."""


class GaussianSampler:
    """Exact discrete Gaussian draws P(y) ∝ exp(−y²/(2σ²)) (CKS Algorithm 3, vectorised).

    Parameters
    ----------
    sigma : fractions.Fraction
        σ > 0, exactly (a float converts without rounding).

    Notes
    -----
    With t = ⌊σ⌋ + 1, propose Y from the discrete Laplace with rate 1/t
    (:class:`LaplaceSampler`, exact) and accept with probability
    exp(−γ), γ = (|Y| − σ²/t)²/(2σ²). The accepted law is
    ∝ e^{−|y|/t}·e^{−(|y| − σ²/t)²/(2σ²)} = e^{−y²/(2σ²)}·e^{−σ²/(2t²)},
    the discrete Gaussian (Canonne, Kamath & Steinke 2020, Algorithm 3;
    acceptance ≥ 1 − e^{−1}·… ≈ 0.6–0.8).

    Bernoulli(exp(−γ)) is decided exactly: accept iff V < exp(−γ) for an
    infinite uniform V whose first 63 bits are one raw word. γ is computed in
    float64 as ĝ = fl(fl(fl(|y| − ĉ)²)·fl(1/(2σ²))), ĉ = fl(σ²/t), with
    |ĝ − γ| ≤ 2⁻⁵⁰(1 + γ) (five correctly rounded operations; c < σ); for
    ĝ ≤ 700 that is < 2⁻⁴⁰·⁵, so exp_neg(ĝ) is within 2⁻⁴⁰ of exp(−γ)
    relatively and :func:`_float_bounds` gives integers certainly below and
    above exp(−γ)·2⁶³. For ĝ > 700, γ > 699 and exp(−γ)·2⁶³ < 1, which the
    same bounds (0 and 1) express. (A proposal |y| ≥ 2⁵³, whose conversion to
    float64 rounds, has γ > 2²⁴ for σ ≤ 2⁴⁰, so it lands in that case too.) Words between the bounds go to
    :class:`LazyUniform` against certified bits of exp(−γ) (γ rational).
    """

    def __init__(self, sigma: Fraction) -> None:
        if not 0 < sigma <= MAX_SIGMA:
            raise ValueError(f"sigma must lie in (0, 2^40], got {float(sigma)!r}")
        self.sigma = sigma
        self.t = math.floor(sigma) + 1
        self.shift = sigma * sigma / self.t  # σ²/t
        self.two_var = 2 * sigma * sigma
        self.shift_hat = float(self.shift)
        self.inv_two_var = float(1 / self.two_var)

    def gamma(self, y: int) -> Fraction:
        """γ = (|y| − σ²/t)²/(2σ²), exactly."""
        d = abs(y) - self.shift
        return d * d / self.two_var

    def decide(
        self, y: NDArray[np.int64], raw: NDArray[np.uint64]
    ) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
        """Whether each proposal is accepted, and whether its word decides it (vectorised).

        Parameters
        ----------
        y : ndarray of int64, shape (m,)
            Proposals.
        raw : ndarray of uint64, shape (m,)
            One raw word per proposal; its top 63 bits are V's first bits.

        Returns
        -------
        accept, certified : ndarray of bool, shape (m,)
            ``accept`` is meaningful where ``certified``; elsewhere
            :meth:`resolve` decides with more words.
        """
        w = raw >> np.uint64(1)
        d = np.abs(y).astype(np.float64)
        d -= self.shift_hat
        d *= d
        d *= self.inv_two_var
        np.minimum(d, EXP_NEG_MAX, out=d)
        p63 = exp_neg(d)
        p63 *= float(1 << 63)
        below, above = _float_bounds(p63)
        accept = w < below
        certified = accept | (w >= above)
        return accept, certified

    def resolve(self, y: int, raw: int, gen: np.random.Generator) -> bool:
        """Exactly whether V < exp(−γ(y)), V's first 63 bits from ``raw`` (more words as needed)."""
        gamma = self.gamma(y)
        u = LazyUniform(raw >> 1, WORD_BITS, gen)
        return u.less_than(lambda digits: exp_neg_interval(gamma, digits))

    def sample(self, n: int, gen: np.random.Generator) -> NDArray[np.int64]:
        """n i.i.d. exact draws, consuming raw words of ``gen``'s bit generator."""
        out = np.empty(n, dtype=np.int64)
        proposal = laplace_sampler(Fraction(1, self.t), _table_size_for(n))
        filled = 0
        rate = 0.6
        while filled < n:
            need = n - filled
            m = min(_CHUNK, int(need / rate * 1.05) + 16)
            y = proposal.sample(m, gen)
            raw = raw_words(gen, m)
            accept, certified = self.decide(y, raw)
            if not certified.all():
                for i in np.flatnonzero(~certified):
                    accept[i] = self.resolve(int(y[i]), int(raw[i]), gen)
            got = y[accept]
            rate = max(got.size / m, 0.05)
            take = min(got.size, need)
            out[filled : filled + take] = got[:take]
            filled += take
        return out


@functools.lru_cache(maxsize=64)
def gaussian_sampler(sigma: Fraction) -> GaussianSampler:
    """The (cached) :class:`GaussianSampler` for an exact σ."""
    return GaussianSampler(sigma)


def group_by_value(values: NDArray[np.float64]) -> list[tuple[float, NDArray[np.intp]]]:
    """(value, positions) for each distinct value of a 1-D array, in increasing value order.

    Per-entry scales usually take few values (one per hierarchy level or per
    party), and every value gets its own exact sampler.
    """
    if values.size == 0:
        return []
    first = values[0]
    if np.all(values == first):
        return [(float(first), np.arange(values.size))]
    uniq, inverse = np.unique(values, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    cuts = np.searchsorted(inverse[order], np.arange(1, uniq.size))
    return [(float(v), idx) for v, idx in zip(uniq, np.split(order, cuts), strict=True)]
