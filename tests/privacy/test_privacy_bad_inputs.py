"""Invalid parameters raise ValueError/TypeError naming the bad value."""

from __future__ import annotations

import math

import pytest

from fedeval.privacy import (
    DiscreteGaussian,
    DiscreteLaplace,
    OptimalUnaryEncoding,
    PolyaShares,
    RandomizedResponse,
    SkellamShares,
)

BAD_EPSILONS = [0.0, -1.0, math.nan, math.inf]


@pytest.mark.parametrize("eps", BAD_EPSILONS)
@pytest.mark.parametrize(
    "make",
    [
        lambda e: DiscreteLaplace(e),
        lambda e: PolyaShares(e, 10),
        lambda e: RandomizedResponse(e),
        lambda e: OptimalUnaryEncoding(e, 4),
        lambda e: DiscreteGaussian.calibrate(e, 1e-5),
        lambda e: SkellamShares.calibrate(e, 1e-5),
    ],
)
def test_bad_epsilon(make, eps) -> None:
    with pytest.raises(ValueError, match="epsilon"):
        make(eps)


def test_non_numeric_epsilon() -> None:
    with pytest.raises(TypeError, match="epsilon"):
        DiscreteLaplace("one")  # type: ignore[arg-type]


@pytest.mark.parametrize("delta", [0.0, 1.0, -0.1, 2.0, math.nan])
@pytest.mark.parametrize(
    "make",
    [
        lambda d: DiscreteGaussian.calibrate(1.0, d),
        lambda d: SkellamShares.calibrate(1.0, d),
        lambda d: DiscreteGaussian(1.0).guarantee(delta=d),
        lambda d: SkellamShares(1.0, 2, delta=d),
    ],
)
def test_bad_delta(make, delta) -> None:
    with pytest.raises(ValueError, match="delta"):
        make(delta)


@pytest.mark.parametrize("n", [0, -3])
def test_bad_n_shares(n) -> None:
    with pytest.raises(ValueError, match="n_shares"):
        PolyaShares(1.0, n)
    with pytest.raises(ValueError, match="n_shares"):
        SkellamShares(1.0, n)


def test_non_integer_n_shares() -> None:
    with pytest.raises(TypeError, match="n_shares"):
        PolyaShares(1.0, 2.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="n_shares"):
        SkellamShares(1.0, True)


@pytest.mark.parametrize("sigma", [0.0, -1.0, math.nan, math.inf])
def test_bad_sigma(sigma) -> None:
    with pytest.raises(ValueError, match="sigma"):
        DiscreteGaussian(sigma)


def test_other_bad_parameters() -> None:
    with pytest.raises(ValueError, match="l1_sensitivity"):
        DiscreteLaplace(1.0, 0)
    with pytest.raises(TypeError, match="l1_sensitivity"):
        DiscreteLaplace(1.0, 1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="mu"):
        SkellamShares(0.0, 3)
    with pytest.raises(ValueError, match="n_categories"):
        RandomizedResponse(1.0, 1)
    with pytest.raises(ValueError, match="n_bins"):
        OptimalUnaryEncoding(1.0, 0)
    with pytest.raises(ValueError, match="unit"):
        DiscreteLaplace(1.0).guarantee(unit="household")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="size"):
        DiscreteLaplace(1.0).sample(-1, rng=0)
    with pytest.raises(TypeError, match="size"):
        DiscreteLaplace(1.0).sample(2.5, rng=0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="rng"):
        DiscreteLaplace(1.0).sample(2, rng="seed")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="values"):
        RandomizedResponse(1.0, 3).perturb([0, 3], rng=0)
    with pytest.raises(TypeError, match="k"):
        DiscreteLaplace(1.0).pmf(0.5)
