"""Who adds a release's noise, and how it is drawn on each path (privacy/noise.py).

The samplers themselves are tested in ``tests/privacy/mechanisms``; here: the
fast path's ``total`` has the law of the faithful path's sum of client
``share``s, ``variance`` is the variance of ``total``, coordinates that no unit
can change get no noise, and a label party's noise is restricted to its own
coordinates. Statistical tests use fixed seeds and tolerances of five standard
errors of the sample variance (fourth moment bounded by 6σ⁴ for these laws).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from numpy.typing import NDArray

from fedeval.privacy.mechanisms.polya import PolyaShares
from fedeval.privacy.mechanisms.skellam import SkellamShares
from fedeval.privacy.noise import (
    AdditiveNoise,
    CentralNoise,
    PolyaShareNoise,
    SkellamShareNoise,
    restrict,
    shares_needed,
)

N_DRAWS = 200_000


def within_five_se(sample: NDArray[np.int64], variance: float) -> bool:
    se = variance * math.sqrt(5.0 / sample.size)
    return abs(float(np.var(sample)) - variance) <= 5 * se and abs(float(np.mean(sample))) <= 5 * (
        math.sqrt(variance / sample.size)
    )


@pytest.mark.statistical
@pytest.mark.parametrize(
    "noise",
    [CentralNoise("discrete_laplace", 2.0), CentralNoise("discrete_gaussian", 3.0)],
    ids=["laplace", "gaussian"],
)
def test_central_noise_has_its_stated_variance(noise: CentralNoise) -> None:
    draws = noise.total(N_DRAWS, np.random.default_rng(1), n_received=17)
    assert draws.dtype == np.int64
    assert within_five_se(draws, float(noise.variance(17)))
    assert noise.share(3, np.random.default_rng(0)) is None  # clients add nothing


def test_central_total_is_the_server_draw_and_zero_scales_add_nothing() -> None:
    noise = CentralNoise("discrete_laplace", np.array([0.0, 4.0, 0.0, 4.0]))
    a = noise.total(4, np.random.default_rng(5), n_received=3)
    b = noise.server(4, np.random.default_rng(5))
    np.testing.assert_array_equal(a, b)
    assert a[0] == 0 and a[2] == 0
    np.testing.assert_array_equal(np.asarray(noise.variance(3))[[0, 2]], [0.0, 0.0])
    assert "0..4 (integer units) added by the aggregator" in noise.description


@pytest.mark.statistical
@pytest.mark.parametrize(
    "noise",
    [
        PolyaShareNoise(PolyaShares(1.0, 5)),
        PolyaShareNoise(PolyaShares.for_dropouts(1.0, 5, 3)),
        SkellamShareNoise(SkellamShares(20.0, 5)),
    ],
    ids=["polya", "polya-dropouts", "skellam"],
)
def test_the_fast_total_has_the_law_of_the_sum_of_shares(
    noise: AdditiveNoise,
    two_sample_chi2_pvalue: Callable[[NDArray[np.int64], NDArray[np.int64]], float],
) -> None:
    n_received = 4
    rng = np.random.default_rng(11)
    size = 20_000
    faithful = sum(noise.share(size, rng) for _ in range(n_received))
    fast = noise.total(size, rng, n_received)
    assert two_sample_chi2_pvalue(faithful, fast) > 1e-3
    big = noise.total(N_DRAWS, rng, n_received)
    assert within_five_se(big, float(noise.variance(n_received)))
    assert noise.server(3, rng) is None  # the aggregator adds nothing


def test_a_share_rarely_exceeds_its_tail_bound() -> None:
    noise = PolyaShareNoise(PolyaShares(0.5, 10))
    draws = np.abs(noise.share(N_DRAWS, np.random.default_rng(2)))
    for tau in (5, 10, 20):
        bound = noise.share_tail(tau)
        assert float(np.mean(draws > tau)) <= bound + 5 * math.sqrt(bound / N_DRAWS)
    assert CentralNoise("discrete_laplace", 1.0).share_tail(0) == 0.0


def test_restrict_keeps_a_label_partys_own_coordinates() -> None:
    noise = CentralNoise("discrete_gaussian", np.array([1.0, 2.0, 3.0]), by="each label party")
    own = restrict(noise, np.array([2, 0]))
    assert isinstance(own, CentralNoise)
    np.testing.assert_array_equal(own.scale, [3.0, 1.0])
    assert own.kind == "discrete_gaussian" and own.by == "each label party"
    scalar = CentralNoise("discrete_laplace", 2.0)
    assert restrict(scalar, np.array([1])) is scalar
    shared = PolyaShareNoise(PolyaShares(1.0, 3))
    assert restrict(shared, np.array([1])) is shared


@pytest.mark.parametrize(
    ("fraction", "n", "needed"), [(1.0, 10, 10), (0.5, 7, 4), (0.01, 10, 1), (0.0, 5, 1)]
)
def test_the_reconstruction_threshold_rounds_up(fraction: float, n: int, needed: int) -> None:
    assert shares_needed(fraction, n) == needed
