"""Laplace noise: the discrete Laplace (two-sided geometric) and the continuous Laplace.

The discrete Laplace is the noise every DistDP count in fedeval ends up with: the
sum of the clients' Pólya shares (:mod:`fedeval.privacy.mechanisms.polya`) is exactly
discrete-Laplace distributed. The continuous Laplace is kept for real-valued
releases that the papers specify with Laplace noise (e.g. rank sums in Sun et al.
2023, tree-structured ECDFs in Barczewski et al. 2025).

References
----------
.. [1] S. Inusah and T. J. Kozubowski, "A discrete analogue of the Laplace
   distribution", J. Statist. Plann. Inference 136 (2006) 1090-1102.
.. [2] A. Ghosh, T. Roughgarden and M. Sundararajan, "Universally utility-maximizing
   privacy mechanisms", STOC 2009 (the geometric mechanism).
.. [3] C. Dwork, F. McSherry, K. Nissim and A. Smith, "Calibrating noise to
   sensitivity in private data analysis", TCC 2006 (the Laplace mechanism).
.. [4] I. Mironov, "On significance of the least significant bits for differential
   privacy", CCS 2012 (floating-point attacks on the continuous Laplace).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from fedeval.privacy.guarantee import Guarantee, PrivacyUnit
from fedeval.privacy.mechanisms.common import (
    Size,
    as_size,
    check_integers,
    check_unit,
    two_sided_geometric,
)
from fedeval.randomness import RNGLike, as_generator
from fedeval.validation import check_epsilon, check_int_at_least, check_positive

__all__ = [
    "DiscreteLaplace",
    "Laplace",
    "LaplaceShares",
    "discrete_laplace_alpha",
    "discrete_laplace_variance",
    "sample_discrete_laplace",
    "sample_laplace",
]


@dataclass(frozen=True)
class DiscreteLaplace:
    """Discrete Laplace (two-sided geometric) noise for integer-valued queries.

    P(k) = (1-α)/(1+α) · α^|k| for k ∈ ℤ, with α = exp(-ε/Δ1).

    Parameters
    ----------
    epsilon : float
        Privacy parameter ε > 0 of the pure ε-DP guarantee.
    l1_sensitivity : int, default 1
        L1 sensitivity Δ1 ≥ 1 of the integer-valued query the noise protects
        (1 for a count under add/remove-one-example).

    Raises
    ------
    ValueError, TypeError
        If ``epsilon`` is not a finite number > 0 or ``l1_sensitivity`` is not an
        integer ≥ 1.

    Notes
    -----
    Privacy: adding this noise to an integer-valued query with L1 sensitivity Δ1
    is ε-DP, because P(k)/P(k+s) ≤ α^-s ≤ e^ε for every integer shift |s| ≤ Δ1
    (Ghosh, Roughgarden & Sundararajan 2009). The bound is tight: the ratio equals
    e^ε for all k ≥ 0 at s = Δ1.

    References
    ----------
    .. [1] Inusah & Kozubowski (2006), "A discrete analogue of the Laplace
       distribution" (pmf, variance 2α/(1-α)²).
    .. [2] Ghosh, Roughgarden & Sundararajan (2009), the geometric mechanism.
    .. [3] Cormode & Markov (2023), §2.2: DistDP counts carry discrete Laplace
       noise of variance O(1/ε²).
    """

    epsilon: float
    l1_sensitivity: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(
            self,
            "l1_sensitivity",
            check_int_at_least(self.l1_sensitivity, 1, name="l1_sensitivity"),
        )

    @property
    def alpha(self) -> float:
        """α = exp(-ε/Δ1), the ratio between the pmf at neighbouring integers."""
        return math.exp(-self.epsilon / self.l1_sensitivity)

    @property
    def scale(self) -> float:
        """Δ1/ε, the scale of the continuous Laplace this distribution discretises."""
        return self.l1_sensitivity / self.epsilon

    @property
    def variance(self) -> float:
        """Var = 2α/(1-α)² (Inusah & Kozubowski 2006)."""
        a = self.alpha
        # -expm1(-x) = 1 - exp(-x) without cancellation for small ε/Δ1.
        one_minus_a = -math.expm1(-self.epsilon / self.l1_sensitivity)
        return 2.0 * a / one_minus_a**2

    def logpmf(self, k: ArrayLike) -> NDArray[np.float64]:
        """log P(k) for integer ``k`` (any shape)."""
        kk = np.abs(check_integers(k)).astype(np.float64)
        x = self.epsilon / self.l1_sensitivity
        # log((1-α)/(1+α)) = log(-expm1(-x)) - log1p(exp(-x))
        log_norm = math.log(-math.expm1(-x)) - math.log1p(math.exp(-x))
        return np.asarray(log_norm - x * kk, dtype=np.float64)

    def pmf(self, k: ArrayLike) -> NDArray[np.float64]:
        """P(k) = (1-α)/(1+α) α^|k| for integer ``k`` (any shape)."""
        return np.exp(self.logpmf(k))

    def sample(self, size: Size = 1, rng: RNGLike = None) -> NDArray[np.int64]:
        """Draw exact discrete Laplace noise.

        Parameters
        ----------
        size : int or tuple of int, default 1
            Output shape.
        rng : int, numpy.random.Generator or None
            Random source (see :func:`fedeval.randomness.as_generator`).

        Returns
        -------
        numpy.ndarray of int64, shape ``size``
            Each entry is the difference of two i.i.d. geometric variables with
            success probability 1-α, which is exactly discrete Laplace.
        """
        shape = as_size(size)
        return two_sided_geometric(self.alpha, shape, as_generator(rng))

    def guarantee(self, unit: PrivacyUnit = "example") -> Guarantee:
        """Pure ε-DP for integer-valued queries with L1 sensitivity Δ1.

        Parameters
        ----------
        unit : {"example", "client", "label"}, default "example"
            What the sensitivity Δ1 was computed for.
        """
        return Guarantee(
            epsilon=self.epsilon,
            delta=0.0,
            unit=check_unit(unit),
            statement=(
                f"discrete Laplace noise with α = exp(-ε/Δ1) = {self.alpha:.6g} added to an "
                f"integer-valued query with L1 sensitivity Δ1 = {self.l1_sensitivity}"
            ),
        )


@dataclass(frozen=True)
class Laplace:
    """Continuous Laplace noise with scale b = Δ1/ε.

    Parameters
    ----------
    epsilon : float
        Privacy parameter ε > 0.
    l1_sensitivity : float, default 1.0
        L1 sensitivity Δ1 > 0 of the real-valued query.

    Raises
    ------
    ValueError, TypeError
        If ``epsilon`` or ``l1_sensitivity`` is not a finite number > 0.

    Notes
    -----
    Privacy: the Laplace mechanism is ε-DP for queries with L1 sensitivity Δ1
    (Dwork et al. 2006) *over the reals*. Textbook floating-point sampling
    leaks through the low-order bits (Mironov 2012); for counts use
    :class:`DiscreteLaplace`, which has no such issue. This class is meant for
    simulation and for real-valued releases where the papers specify Laplace.

    References
    ----------
    .. [1] Dwork, McSherry, Nissim & Smith (2006), Theorem 1 (Laplace mechanism).
    .. [2] Mironov (2012), "On significance of the least significant bits for
       differential privacy".
    """

    epsilon: float
    l1_sensitivity: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(
            self, "l1_sensitivity", check_positive(self.l1_sensitivity, name="l1_sensitivity")
        )

    @property
    def scale(self) -> float:
        """b = Δ1/ε."""
        return self.l1_sensitivity / self.epsilon

    @property
    def variance(self) -> float:
        """Var = 2b²."""
        return 2.0 * self.scale**2

    def sample(self, size: Size = 1, rng: RNGLike = None) -> NDArray[np.float64]:
        """Draw Laplace(0, b) noise of shape ``size`` (float64)."""
        shape = as_size(size)
        return as_generator(rng).laplace(0.0, self.scale, size=shape)

    def guarantee(self, unit: PrivacyUnit = "example") -> Guarantee:
        """Pure ε-DP for real-valued queries with L1 sensitivity Δ1 (see class Notes)."""
        return Guarantee(
            epsilon=self.epsilon,
            delta=0.0,
            unit=check_unit(unit),
            statement=(
                f"Laplace noise of scale b = Δ1/ε = {self.scale:.6g} added to a real-valued "
                f"query with L1 sensitivity Δ1 = {self.l1_sensitivity:.6g}"
            ),
        )


def discrete_laplace_alpha(scale: ArrayLike) -> NDArray[np.float64]:
    """α = exp(-1/t) of the discrete Laplace with scale t (t = Δ1/ε; any shape)."""
    return np.exp(-1.0 / np.asarray(scale, dtype=np.float64))


def discrete_laplace_variance(scale: ArrayLike) -> NDArray[np.float64]:
    """Variance 2α/(1-α)² of the discrete Laplace with scale t, per entry."""
    t = np.asarray(scale, dtype=np.float64)
    one_minus_a = -np.expm1(-1.0 / t)
    return np.asarray(2.0 * np.exp(-1.0 / t) / one_minus_a**2, dtype=np.float64)


def sample_discrete_laplace(
    scale: ArrayLike, size: Size, rng: np.random.Generator
) -> NDArray[np.int64]:
    """Exact discrete Laplace draws with a per-entry scale t (α = exp(-1/t)).

    ``scale`` broadcasts against ``size``; this is the sampler a release uses
    when one party (a trusted curator, or a label party on its own statistics)
    adds all the noise, possibly with a different scale on every coordinate.
    """
    shape = as_size(size)
    alpha = np.broadcast_to(discrete_laplace_alpha(scale), shape)
    return two_sided_geometric(alpha, shape, rng)


def sample_laplace(scale: ArrayLike, size: Size, rng: np.random.Generator) -> NDArray[np.float64]:
    """Continuous Laplace draws with a per-entry scale b (float64; see the floating-point note)."""
    shape = as_size(size)
    return np.asarray(rng.laplace(0.0, np.broadcast_to(scale, shape), size=shape))


@dataclass(frozen=True)
class LaplaceShares:
    """Per-client shares of continuous Laplace noise (the Laplace is infinitely divisible).

    Laplace(b) = b(E₁ − E₂) with E exponential = Gamma(1, 1), and Gamma(1, 1) is
    the sum of m independent Gamma(1/m, 1); so each of n clients adds
    b(G − G') with G, G' ~ Gamma(1/m, 1), and any m shares sum to Laplace(b)
    plus independent noise.

    Parameters
    ----------
    scale : float
        b = Δ1/ε of the target Laplace.
    n_shares : int
        Clients adding a share.
    min_received : int
        Reconstruction threshold m (any m shares reach the target).

    Notes
    -----
    For real-valued sums under distributed DP. Floating-point Laplace is
    attackable through its low-order bits (Mironov 2012); the integer-valued
    sketches use :class:`~fedeval.privacy.mechanisms.polya.PolyaShares` instead.
    """

    scale: float
    n_shares: int
    min_received: int

    @property
    def variance(self) -> float:
        """Variance of the sum of all n shares, 2b²·n/m."""
        return 2.0 * self.scale**2 * self.n_shares / self.min_received

    @property
    def share_variance(self) -> float:
        return 2.0 * self.scale**2 / self.min_received

    def sample_share(self, size: Size = 1, rng: RNGLike = None) -> NDArray[np.float64]:
        gen = as_generator(rng)
        shape = as_size(size)
        a = 1.0 / self.min_received
        return self.scale * (gen.standard_gamma(a, shape) - gen.standard_gamma(a, shape))

    def sample_sum(
        self, size: Size = 1, rng: RNGLike = None, *, n_received: int | None = None
    ) -> NDArray[np.float64]:
        gen = as_generator(rng)
        shape = as_size(size)
        k = self.n_shares if n_received is None else n_received
        a = k / self.min_received
        return self.scale * (gen.standard_gamma(a, shape) - gen.standard_gamma(a, shape))
