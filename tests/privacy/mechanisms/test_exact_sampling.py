"""Secure mode's exact samplers (Canonne, Kamath & Steinke 2020, Algorithms 1–3).

Their output distributions are checked against the closed-form pmfs with a
chi-square goodness-of-fit test (fixed seeds), and secure mode is shown to
change the sampler, not just the bits: the same bit stream gives other draws
through a :class:`SecureGenerator` than through a plain Generator.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from fedeval.privacy import DiscreteGaussian, DiscreteLaplace
from fedeval.privacy.mechanisms import exact
from fedeval.privacy.mechanisms.discrete_gaussian import sample_discrete_gaussian
from fedeval.privacy.mechanisms.laplace import sample_discrete_laplace
from fedeval.randomness import SecureGenerator

N = 20_000


def test_bernoulli_exp_matches_its_probability() -> None:
    rng = SecureGenerator(np.random.PCG64(1))
    for gamma in (Fraction(0), Fraction(1, 3), Fraction(1), Fraction(7, 3)):
        hits = sum(exact.bernoulli_exp(gamma, rng) for _ in range(N))
        p = math.exp(-float(gamma))
        assert abs(hits / N - p) < 5 * math.sqrt(p * (1 - p) / N) + 1e-12


@pytest.mark.parametrize("scale", [0.7, 3.0, 12.5])
def test_exact_discrete_laplace_has_the_discrete_laplace_pmf(scale, gof_pvalue) -> None:
    x = exact.discrete_laplace(np.full(N, scale), SecureGenerator(np.random.PCG64(2)))
    dl = DiscreteLaplace(1.0 / scale)
    assert gof_pvalue(x, dl.pmf, int(60 * scale) + 20) > 1e-4


@pytest.mark.slow
@pytest.mark.parametrize("sigma", [0.8, 2.5, 9.0])
def test_exact_discrete_gaussian_has_the_discrete_gaussian_pmf(sigma, gof_pvalue) -> None:
    x = exact.discrete_gaussian(np.full(N, sigma), SecureGenerator(np.random.PCG64(3)))
    assert gof_pvalue(x, DiscreteGaussian(sigma).pmf, int(12 * sigma) + 10) > 1e-4


def test_secure_mode_changes_the_sampler_not_only_the_bits() -> None:
    plain = np.random.Generator(np.random.PCG64(4))
    secure = SecureGenerator(np.random.PCG64(4))
    a = sample_discrete_laplace(3.0, 200, plain)
    b = sample_discrete_laplace(3.0, 200, secure)
    assert not np.array_equal(a, b)
    c = sample_discrete_gaussian(np.full(200, 2.0), np.random.Generator(np.random.PCG64(5)))
    d = sample_discrete_gaussian(np.full(200, 2.0), SecureGenerator(np.random.PCG64(5)))
    assert not np.array_equal(c, d)
    # And the exact path is what the secure generator took: same bits, same draws.
    again = exact.discrete_laplace(np.full(200, 3.0), SecureGenerator(np.random.PCG64(4)))
    np.testing.assert_array_equal(b, again)
