"""The exact vectorised samplers: their certified parts, undecided words, and laws.

The enumeration of the discrete Laplace pmf lives in ``test_enumeration.py``;
here: the certified float exp and interval bounds against :mod:`decimal`, the
exact resolution of undecided words, the discrete Gaussian acceptance boundary
found by bisection, and fixed-seed statistical tests of both samplers (scalar
and per-entry parameters, PCG64 and randomgen's ChaCha) against their closed
forms and against the scalar Canonne–Kamath–Steinke samplers (``cks_oracle``).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest
from cks_oracle import discrete_gaussian as oracle_gaussian
from cks_oracle import discrete_laplace as oracle_laplace
from numpy.typing import NDArray
from scipy import stats
from test_enumeration import support_end, thresholds

from fedeval.privacy import DiscreteGaussian, DiscreteLaplace
from fedeval.privacy.mechanisms.discrete_gaussian import sample_discrete_gaussian
from fedeval.privacy.mechanisms.exact_sampling import (
    EXP_NEG_ERROR,
    EXP_NEG_MAX,
    HALF_WORD_TAIL,
    GaussianSampler,
    LaplaceSampler,
    LazyUniform,
    exp_neg,
    exp_neg_interval,
    floor_scaled,
    group_by_value,
    sample_discrete_laplace_scales,
    sampler_for,
)
from fedeval.privacy.mechanisms.laplace import sample_discrete_laplace

TWO63 = 1 << 63


def _bit_generator(name: str, seed: int) -> np.random.BitGenerator:
    if name == "pcg64":
        return np.random.PCG64(seed)
    if name == "mt19937":  # 32-bit raw output: its random_raw words have 32 zero top bits
        return np.random.MT19937(seed)
    randomgen = pytest.importorskip("randomgen")
    return randomgen.ChaCha(seed=seed, rounds=20)  # type: ignore[no-any-return]


def _dec(q: Fraction) -> Decimal:
    return Decimal(q.numerator) / Decimal(q.denominator)


# ------------------------------------------------------------------ certified arithmetic


def test_exp_neg_error_is_below_its_proven_bound() -> None:
    """Random, small, large and reduction-boundary arguments, against 40-digit decimal."""
    gen = np.random.default_rng(0)
    step = math.log(2.0) / 32
    g = np.concatenate(
        [
            gen.uniform(0.0, EXP_NEG_MAX, 20_000),
            gen.uniform(0.0, 1.0, 4_000),
            10.0 ** gen.uniform(-300, 0, 2_000),
            (np.arange(1, 4_000) + 0.5) * step,  # where rint(g/L) flips
            np.nextafter((np.arange(1, 4_000) + 0.5) * step, 0.0),
            [0.0, EXP_NEG_MAX, 5e-324],
        ]
    )
    approx = exp_neg(g)
    worst = 0.0
    with localcontext() as ctx:
        ctx.prec = 40
        for x, y in zip(g.tolist(), approx.tolist(), strict=True):
            exact = (-Decimal(x)).exp()
            worst = max(worst, float(abs(Decimal(y) - exact) / exact))
    assert worst < EXP_NEG_ERROR
    assert worst < 2.0**-50  # in practice a few ulp


@pytest.mark.parametrize(
    "q",
    [Fraction(0), Fraction(1, 3), Fraction(1), Fraction(123456789, 1000), Fraction(10**9, 7)],
)
def test_exp_neg_interval_brackets_the_value(q) -> None:
    """Checked through ln (monotone, and fast where exp of a huge argument is not)."""
    lo, hi = exp_neg_interval(q, 50)
    with localcontext() as ctx:
        ctx.prec = 120
        if q == 0:
            assert lo == hi == 1
            return
        if q > 1 << 16:  # only an absolute bound is needed for such tiny values
            assert lo == 0 and -_dec(q) <= _dec(hi).ln() and hi < Fraction(1, 10**150)
            return
        lo_ln, hi_ln, minus_q = _dec(lo).ln(), _dec(hi).ln(), -_dec(q)
        assert lo_ln <= minus_q <= hi_ln
        assert hi_ln - lo_ln <= Decimal(10) ** -47


@pytest.mark.parametrize("rate", [Fraction(1), Fraction(1, 8), Fraction(3, 700)])
def test_threshold_bits_match_high_precision(rate) -> None:
    sampler = LaplaceSampler(rate)
    s = thresholds(rate, 60)
    with localcontext() as ctx:
        ctx.prec = 90
        for k in (1, 2, 7, 60):
            for bits in (63, 127, 191):
                expected = math.floor(s[k] * (1 << bits))
                assert floor_scaled(sampler.threshold(k), bits) == expected


def test_table_is_the_floor_of_the_thresholds() -> None:
    rate = Fraction(1, 8)
    sampler = LaplaceSampler(rate)
    s = thresholds(rate, sampler.size)
    with localcontext() as ctx:
        ctx.prec = 90
        expected = [math.floor(x * TWO63) for x in s]
    assert sampler.hi_table.tolist() == expected
    assert np.all(np.diff(sampler.hi_table.astype(object)) < 0)


# ------------------------------------------------------------------ undecided words


def test_lazy_uniform_decides_like_the_infinite_uniform() -> None:
    """U < S as decided with extra words agrees with 400-digit arithmetic on the same bits."""
    gen = np.random.Generator(np.random.PCG64(5))
    for q in (Fraction(1, 3), Fraction(7, 2), Fraction(45)):
        lo, _ = exp_neg_interval(q, 60)
        for shift in (-1, 0, 1):
            prefix = math.floor(lo * TWO63) + shift  # 0: the straddling word
            u = LazyUniform(prefix, 63, gen)
            below = u.less_than(lambda d, q=q: exp_neg_interval(q, d))
            with localcontext() as ctx:
                ctx.prec = 400
                s = (-_dec(q)).exp() * (1 << u.bits)
                assert (u.prefix + 1 <= s) if below else (u.prefix >= s)
            assert (u.bits > 63) == (shift == 0)


@pytest.mark.statistical
@pytest.mark.parametrize("word_bits", [63, 31])
def test_straddling_word_splits_at_the_threshold(word_bits: int) -> None:
    """The word ⌊S_k·2ᵇ⌋ gives k with probability frac(S_k·2ᵇ), else k − 1."""
    rate, k = Fraction(1, 8), 5
    sampler = LaplaceSampler(rate, word_bits=word_bits)
    word = int(sampler.hi_table[k])
    dtype = np.uint64 if word_bits == 63 else np.uint32
    _, certified = sampler.decode(np.array([word << 1], dtype=dtype))
    assert not certified[0]
    with localcontext() as ctx:
        ctx.prec = 90
        frac = float(thresholds(rate, k)[k] * (1 << word_bits) - word)
    gen = np.random.Generator(np.random.PCG64(11))
    n = 4_000
    draws = np.array([sampler.resolve(word << 1, gen) for _ in range(n)])
    assert set(draws.tolist()) <= {k, k - 1}
    hits = (draws == k).mean()
    assert abs(hits - frac) <= 5 * math.sqrt(frac * (1 - frac) / n)
    negative = sampler.resolve((word << 1) | 1, gen)
    assert negative in (-k, -(k - 1))


@pytest.mark.statistical
@pytest.mark.parametrize(
    ("rate", "word_bits", "seed"), [(Fraction(1), 63, 12), (Fraction(1, 4), 31, 21)]
)
def test_word_zero_continues_into_the_far_tail(rate: Fraction, word_bits: int, seed: int) -> None:
    """U < 2⁻ᵇ: every S_k with S_k·2ᵇ ≥ 1 is exceeded, and the rest is exact. A half
    word (b = 31) below its table's end N_K (S_K ≤ 2⁻²⁴) is undecided, so its
    resolution is what continues U into the tail."""
    sampler = LaplaceSampler(rate, word_bits=word_bits)
    if word_bits == 31:
        assert int(sampler.hi_table[-1]) <= HALF_WORD_TAIL
        _, certified = sampler.decode(np.array([0, 1, 2, 3], dtype=np.uint32))
        assert not certified.any()
    k0 = support_end(rate, word_bits)
    gen = np.random.Generator(np.random.PCG64(seed))
    n = 600
    draws = np.array([sampler.resolve(0, gen) for _ in range(n)])
    assert draws.min() >= k0
    with localcontext() as ctx:
        ctx.prec = 90
        # P(U < S_{k0+1} | U < 2⁻ᵇ)
        p_more = float(thresholds(rate, k0 + 1)[k0 + 1] * (1 << word_bits))
    assert abs((draws > k0).mean() - p_more) <= 5 * math.sqrt(p_more * (1 - p_more) / n)


@pytest.mark.parametrize("word_bits", [63, 31])
def test_resolve_agrees_with_decode_where_the_word_decides(word_bits: int) -> None:
    gen = np.random.Generator(np.random.PCG64(13))
    cases = [(Fraction(1, 8), 1 << 14), (Fraction(1, 22), 1 << 14)]
    if word_bits == 63:  # tables that end early: the float certificate decides the tail
        cases += [(Fraction(1, 8), 4), (Fraction(1, 10**6), 64)]
    for rate, table in cases:
        sampler = LaplaceSampler(rate, table, word_bits)
        raw = sampler.words(gen, 300)
        values, certified = sampler.decode(raw)
        assert certified.mean() > 0.99
        for r, v in zip(
            raw[certified][:100].tolist(), values[certified][:100].tolist(), strict=True
        ):
            assert sampler.resolve(r, gen) == v


def test_sampler_for_takes_half_words_only_where_their_table_reaches_the_tail() -> None:
    """Half words at the scales of a large DistDP release (t = 1, 22), 63-bit words
    where a half-word table would stop early: a large scale, or a small table."""
    for t, table in ((1, 64), (22, 1 << 14), (22, 1024)):
        chosen = sampler_for(1 / Fraction(t), table)
        assert chosen.word_bits == 31 and int(chosen.hi_table[-1]) <= HALF_WORD_TAIL
    for t, table in ((22, 64), (100, 1 << 14), (10**6, 1 << 14)):
        assert sampler_for(1 / Fraction(t), table).word_bits == 63


@pytest.mark.statistical
def test_half_word_draws_follow_the_discrete_laplace() -> None:
    """200,000 half-word draws at t = 22 against the pmf: chi-square over |x| ≤ 60
    and the tail beyond, p > 1e-4 (the enumeration proves the law; this checks the
    batch loop, the words' halves and the resolution together)."""
    rate = Fraction(1, 22)
    sampler = sampler_for(rate, 1 << 14)
    assert sampler.word_bits == 31
    draws = sampler.sample(200_000, np.random.Generator(np.random.PCG64(22)))
    alpha = math.exp(-1 / 22)
    ks = np.arange(-60, 61)
    p = (1 - alpha) / (1 + alpha) * alpha ** np.abs(ks)
    observed = np.append(np.bincount(draws[np.abs(draws) <= 60] + 60, minlength=121), 0)
    observed[-1] = int((np.abs(draws) > 60).sum())
    expected = np.append(p, 1 - p.sum()) * draws.size
    assert stats.chisquare(observed, expected).pvalue > 1e-4


def test_table_free_scales_decide_every_word_like_the_table_sampler() -> None:
    """Many distinct scales skip the tables; each word must still give exactly the value
    the table sampler of its own scale gives (both are F⁻¹(U) for that rate)."""
    scales = np.array([1 / 512, 0.3, 1.0, 2.5, 8.0, 77.7, 4096.5, 3e6])
    n = 4000
    per_entry = np.repeat(scales, n)
    # The same bit stream twice: the words the sampler consumes first are ``raw``.
    raw = np.random.PCG64(14).random_raw(per_entry.size)
    gen = np.random.Generator(np.random.PCG64(14))
    values = sample_discrete_laplace_scales(per_entry, gen)
    for j, t in enumerate(scales):
        sampler = LaplaceSampler(1 / Fraction(float(t)))
        part = slice(j * n, (j + 1) * n)
        expected, certified = sampler.decode(raw[part])
        assert certified.mean() > 0.99
        np.testing.assert_array_equal(values[part][certified], expected[certified])
    with pytest.raises(ValueError, match="scales"):
        sample_discrete_laplace_scales(np.array([1e-4]), gen)


@pytest.mark.statistical
def test_discrete_laplace_many_distinct_scales() -> None:
    """The table-free path (one scale per coordinate) draws each coordinate's own law."""
    scales = np.repeat(np.linspace(2.0, 9.0, 40), 20_000)
    x = sample_discrete_laplace(scales, scales.size, np.random.Generator(np.random.PCG64(23)))
    for s in (2.0, 9.0):
        _check_laplace(x[scales == s], s)
    # Every coordinate's variance at once: the mean of x² / Var over all 40 scales.
    ratio = x.astype(np.float64) ** 2 / (2 * np.exp(-1 / scales) / np.expm1(-1 / scales) ** 2)
    assert abs(ratio.mean() - 1) < 6 * ratio.std() / math.sqrt(ratio.size)


@pytest.mark.parametrize("sigma", [0.7, 4.0, 1000.0])
def test_gaussian_acceptance_boundary_is_exact(sigma) -> None:
    """Accepting exactly when V < exp(−γ_y): the first word not certainly accepted is
    ⌊exp(−γ_y)·2⁶³⌋, found by bisection with the sampler's own ``decide``, and the sampler
    leaves it (and only words in a thin band around it) undecided."""
    gs = GaussianSampler(Fraction(sigma))
    ys = np.unique(np.concatenate([np.arange(0, 40), np.round(np.linspace(0, 60 * sigma, 60))]))
    ys = ys.astype(np.int64)
    with localcontext() as ctx:
        ctx.prec = 90
        scaled = [(-_dec(gs.gamma(int(y)))).exp() * TWO63 for y in ys]

    def accepted(w: NDArray[np.uint64]) -> NDArray[np.bool_]:
        acc, certified = gs.decide(ys, w << np.uint64(1))
        for i in np.flatnonzero(~certified):
            acc[i] = int(w[i]) + 1 <= scaled[i]
        return acc

    lo = np.zeros(ys.size, dtype=np.uint64)
    hi = np.full(ys.size, TWO63, dtype=np.uint64)
    while np.any(hi - lo > 1):
        mid = (lo + hi) // np.uint64(2)
        a = accepted(mid)
        lo = np.where(a, mid, lo)
        hi = np.where(a, hi, mid)
    first = np.where(accepted(np.zeros(ys.size, dtype=np.uint64)), hi, 0)
    for i, y in enumerate(ys.tolist()):
        assert int(first[i]) == math.floor(scaled[i]), y
        _, certified = gs.decide(ys[i : i + 1], np.array([int(first[i]) << 1], dtype=np.uint64))
        assert not certified[0]
        if 2 <= scaled[i] <= TWO63 * (1 - 2.0**-30):
            ends = np.array([0, (TWO63 - 1) << 1], dtype=np.uint64)
            _, sure = gs.decide(np.repeat(ys[i], 2), ends)
            assert sure.all()  # far from the threshold the word decides


@pytest.mark.statistical
def test_gaussian_undecided_acceptance_is_exact() -> None:
    """The straddling acceptance word accepts with probability frac(exp(−γ)·2⁶³)."""
    gs = GaussianSampler(Fraction(3, 2))
    y = 2
    with localcontext() as ctx:
        ctx.prec = 90
        scaled = (-_dec(gs.gamma(y))).exp() * TWO63
        word = math.floor(scaled)
        frac = float(scaled - word)
    gen = np.random.Generator(np.random.PCG64(14))
    n = 4_000
    hits = np.mean([gs.resolve(y, word << 1, gen) for _ in range(n)])
    assert abs(hits - frac) <= 5 * math.sqrt(frac * (1 - frac) / n)


# ------------------------------------------------------------------ laws


def _pooled_pvalue(
    x: NDArray[np.int64], pmf: Callable[..., NDArray[np.float64]], window: int
) -> float:
    """Chi-square p-value on the integers in [−window, window], tails pooled to expected ≥ 5.

    Outcomes with expected count < 5 are merged into the two tail bins, and those
    bins grow inwards until their own expected count is ≥ 5 (a tail bin with an
    expected count of 0.01 would let one legitimate far draw fail the test).
    """
    n = x.size
    ks = np.arange(-window, window + 1)
    expected = n * pmf(ks)
    inner = np.flatnonzero(expected >= 5)
    lo, hi = int(inner[0]), int(inner[-1])
    while expected[:lo].sum() + n * (1 - pmf(ks).sum()) / 2 < 5 and lo < hi:
        lo += 1
    while expected[hi + 1 :].sum() + n * (1 - pmf(ks).sum()) / 2 < 5 and hi > lo:
        hi -= 1
    cuts = ks[lo : hi + 1]
    obs = np.concatenate(
        [
            [(x < cuts[0]).sum()],
            np.bincount(x[(x >= cuts[0]) & (x <= cuts[-1])] - cuts[0], minlength=cuts.size),
            [(x > cuts[-1]).sum()],
        ]
    )
    exp = np.concatenate([[expected[:lo].sum()], expected[lo : hi + 1], [expected[hi + 1 :].sum()]])
    exp *= n / exp.sum()
    return float(stats.chisquare(obs, exp).pvalue)


def _binned_pvalue(
    x: NDArray[np.int64], cdf: Callable[[NDArray[np.int64]], NDArray[np.float64]]
) -> float:
    """Chi-square p-value of integer draws in 40 bins cut at the target's quantiles."""
    edges = np.unique(np.quantile(x, np.linspace(0, 1, 41)[1:-1]).round().astype(np.int64))
    probs = np.diff(np.concatenate([[0.0], cdf(edges), [1.0]]))
    counts = np.bincount(np.searchsorted(edges, x, side="right"), minlength=edges.size + 1)
    return float(stats.chisquare(counts, probs * x.size).pvalue)


def _laplace_cdf(scale: float) -> Callable[[NDArray[np.int64]], NDArray[np.float64]]:
    """P(X ≤ x) = α^{−x}/(1+α) for x < 0, 1 − α^{x+1}/(1+α) for x ≥ 0."""
    a = math.exp(-1.0 / scale)

    def cdf(x: NDArray[np.int64]) -> NDArray[np.float64]:
        xf = x.astype(np.float64)
        neg = np.exp(xf / scale) / (1 + a)
        pos = 1.0 - np.exp(-(xf + 1) / scale) / (1 + a)
        return np.where(x < 0, neg, pos)

    return cdf


def _check_laplace(x: NDArray[np.int64], scale: float) -> None:
    n = x.size
    a = math.exp(-1.0 / scale)
    var = 2 * a / (1 - a) ** 2
    mu4 = 2 * a * (1 + 4 * a + a * a) / (1 - a) ** 4 + 3 * var**2
    assert abs(x.mean()) <= 5 * math.sqrt(var / n)
    assert abs(x.var() - var) <= 5 * math.sqrt((mu4 - var**2) / n)
    if scale < 1000:
        pmf = DiscreteLaplace(1.0 / scale).pmf
        assert _pooled_pvalue(x, pmf, int(60 * scale) + 20) > 1e-4
    else:
        assert _binned_pvalue(x, _laplace_cdf(scale)) > 1e-4


@pytest.mark.statistical
@pytest.mark.parametrize("bitgen", ["pcg64", "chacha", "mt19937"])
@pytest.mark.parametrize("scale", [0.7, 8.0, 100.0, 3e6])
def test_discrete_laplace_law(bitgen, scale) -> None:
    gen = np.random.Generator(_bit_generator(bitgen, 21))
    x = sample_discrete_laplace(scale, 300_000, gen)
    assert x.dtype == np.int64 and x.shape == (300_000,)
    _check_laplace(x, scale)


@pytest.mark.statistical
@pytest.mark.parametrize("bitgen", ["pcg64", "chacha", "mt19937"])
def test_discrete_laplace_per_entry_scales(bitgen) -> None:
    scales = np.repeat([0.7, 8.0, 100.0, 3e6], 150_000)
    order = np.random.default_rng(1).permutation(scales.size)
    scales = scales[order]
    x = sample_discrete_laplace(
        scales, scales.size, np.random.Generator(_bit_generator(bitgen, 22))
    )
    for s in (0.7, 8.0, 100.0, 3e6):
        _check_laplace(x[scales == s], s)


@pytest.mark.statistical
def test_discrete_laplace_matches_the_cks_oracle(two_sample_chi2_pvalue) -> None:
    ours = DiscreteLaplace(1 / 3.0).sample(200_000, rng=31)
    theirs = oracle_laplace(np.full(6_000, 3.0), np.random.default_rng(32))
    assert two_sample_chi2_pvalue(ours, theirs) > 1e-4


def _gaussian_cdf(sigma: float) -> Callable[[NDArray[np.int64]], NDArray[np.float64]]:
    """For large σ the discrete Gaussian's CDF equals Φ((x + ½)/σ) to within e^{−2π²σ²}."""

    def cdf(x: NDArray[np.int64]) -> NDArray[np.float64]:
        return np.asarray(stats.norm.cdf((x + 0.5) / sigma), dtype=np.float64)

    return cdf


def _check_gaussian(x: NDArray[np.int64], sigma: float) -> None:
    n = x.size
    dg = DiscreteGaussian(sigma)
    var = dg.variance
    assert abs(x.mean()) <= 5 * math.sqrt(var / n)
    assert abs(x.var() - var) <= 5 * math.sqrt(2 * var**2 / n) * 1.1  # μ4 ≈ 3σ⁴ (≤ for σ < 1)
    if sigma < 100:
        assert _pooled_pvalue(x, dg.pmf, int(12 * sigma) + 10) > 1e-4
    else:
        assert _binned_pvalue(x, _gaussian_cdf(sigma)) > 1e-4


@pytest.mark.statistical
@pytest.mark.parametrize("bitgen", ["pcg64", "chacha", "mt19937"])
@pytest.mark.parametrize("sigma", [0.7, 4.0, 40.0, 1e5])
def test_discrete_gaussian_law(bitgen, sigma) -> None:
    gen = np.random.Generator(_bit_generator(bitgen, 41))
    x = DiscreteGaussian(sigma).sample(300_000, rng=gen)
    assert x.dtype == np.int64 and x.shape == (300_000,)
    _check_gaussian(x, sigma)


@pytest.mark.statistical
@pytest.mark.parametrize("bitgen", ["pcg64", "chacha", "mt19937"])
def test_discrete_gaussian_per_entry_sigmas(bitgen) -> None:
    sigmas = np.repeat([0.7, 4.0, 40.0, 1e5], 100_000)
    sigmas = sigmas[np.random.default_rng(2).permutation(sigmas.size)]
    x = sample_discrete_gaussian(sigmas, np.random.Generator(_bit_generator(bitgen, 42)))
    for s in (0.7, 4.0, 40.0, 1e5):
        _check_gaussian(x[sigmas == s], s)


@pytest.mark.statistical
def test_discrete_gaussian_matches_the_cks_oracle(two_sample_chi2_pvalue) -> None:
    ours = DiscreteGaussian(2.5).sample(200_000, rng=51)
    theirs = oracle_gaussian(np.full(4_000, 2.5), np.random.default_rng(52))
    assert two_sample_chi2_pvalue(ours, theirs) > 1e-4


# ------------------------------------------------------------------ plumbing


def test_no_numpy_float_samplers_and_exact_for_any_generator() -> None:
    """The samplers read raw words only: a generator whose float methods fail still works."""

    class RawOnly(np.random.Generator):
        def geometric(self, *a: object, **k: object) -> None:  # type: ignore[override]
            raise AssertionError("numpy geometric used")

        def random(self, *a: object, **k: object) -> None:  # type: ignore[override]
            raise AssertionError("numpy random used")

    gen = RawOnly(np.random.PCG64(3))
    sample_discrete_laplace(np.array([0.5, 2.0, 1e7]), 3, gen)
    sample_discrete_gaussian(np.array([0.5, 2.0, 1e7]), gen)
    DiscreteLaplace(0.1).sample(10, rng=gen)


def test_same_bits_same_draws() -> None:
    a = DiscreteLaplace(0.3).sample(1000, rng=np.random.Generator(np.random.PCG64(9)))
    b = DiscreteLaplace(0.3).sample(1000, rng=np.random.Generator(np.random.PCG64(9)))
    np.testing.assert_array_equal(a, b)
    g = np.random.Generator(np.random.PCG64(9))
    twin = copy.deepcopy(g)
    DiscreteGaussian(2.0).sample(10, rng=g)
    assert g.bit_generator.state != twin.bit_generator.state  # it did consume words


def test_group_by_value() -> None:
    v = np.array([3.0, 1.0, 3.0, 2.0, 1.0])
    groups = group_by_value(v)
    assert [g[0] for g in groups] == [1.0, 2.0, 3.0]
    assert [g[1].tolist() for g in groups] == [[1, 4], [3], [0, 2]]
    assert group_by_value(np.full(4, 7.0))[0][1].tolist() == [0, 1, 2, 3]
    assert group_by_value(np.empty(0)) == []


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, math.nan, 2.0**51])
def test_bad_scales_are_refused(bad) -> None:
    with pytest.raises(ValueError, match="scale"):
        sample_discrete_laplace(np.array([1.0, bad]), 2, np.random.default_rng(0))


def test_bad_sigmas_are_refused() -> None:
    with pytest.raises(ValueError, match="sigma"):
        sample_discrete_gaussian(np.array([1.0, 2.0**41]), np.random.default_rng(0))
    with pytest.raises(ValueError, match="sigma"):
        DiscreteGaussian(2.0**41).sample(3, rng=0)


@pytest.mark.parametrize("bitgen", ["pcg64", "pcg64dxsm", "sfc64", "philox", "chacha", "mt19937"])
def test_raw_words_are_64_uniform_bits_whatever_the_bit_generator(bitgen) -> None:
    """raw_words are the bit generator's next_uint64 (what ``integers`` over the full range
    returns): random_raw's words where those are 64 bits (the generators it reads random_raw
    of; so every seeded release is unchanged), two 32-bit outputs for MT19937, whose
    random_raw has 32 bits only."""
    from fedeval.privacy.sampling import raw_words

    def make(seed: int) -> np.random.BitGenerator:
        extra = {
            "pcg64dxsm": np.random.PCG64DXSM,
            "sfc64": np.random.SFC64,
            "philox": np.random.Philox,
        }
        return extra[bitgen](seed) if bitgen in extra else _bit_generator(bitgen, seed)

    words = raw_words(np.random.Generator(make(7)), 4096)
    assert words.dtype == np.uint64 and words.shape == (4096,)
    next_uint64 = np.random.Generator(make(7)).integers(
        0, 2**64 - 1, size=4096, dtype=np.uint64, endpoint=True
    )
    np.testing.assert_array_equal(words, next_uint64)
    top_bits = np.unpackbits((words >> np.uint64(32)).astype(np.uint32).view(np.uint8))
    assert abs(top_bits.mean() - 0.5) <= 5 * math.sqrt(0.25 / top_bits.size)  # 2^17 fair bits
    raw = make(7).random_raw(4096)
    if bitgen == "mt19937":
        assert int(raw.max()) < 1 << 32  # why random_raw alone cannot be used
    else:
        np.testing.assert_array_equal(words, raw)
