"""Laplace noise, discrete: the two-sided geometric (discrete Laplace) distribution.

The discrete Laplace is the noise every pure-ε release in fedeval ends up with:
the sum of the clients' Pólya shares (:mod:`fedeval.privacy.mechanisms.polya`) is
exactly discrete-Laplace distributed, and a trusted curator or a label party
draws it directly. Where a paper specifies continuous Laplace noise on real
values (rank sums in Sun et al. 2023, expected counts in Barczewski et al.
2025), fedeval sends the values in fixed point and uses this distribution
instead: continuous Laplace on floating-point numbers leaks through the
low-order bits (Mironov 2012), so it is not offered.

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
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike, NDArray

from fedeval.privacy.guarantee import Guarantee, PrivacyUnit
from fedeval.privacy.mechanisms.common import Size, as_size, check_integers, check_unit
from fedeval.privacy.mechanisms.exact_sampling import (
    MANY_SCALES,
    MAX_SCALE,
    MIN_TABLELESS_SCALE,
    group_by_value,
    rate_of_scale,
    sample_discrete_laplace_exact,
    sample_discrete_laplace_scales,
)
from fedeval.randomness import RNGLike, as_generator
from fedeval.validation import check_epsilon, check_int_at_least

__all__ = [
    "DiscreteLaplace",
    "discrete_laplace_alpha",
    "discrete_laplace_variance",
    "sample_discrete_laplace",
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
    def rate(self) -> Fraction:
        """ε/Δ1 exactly (the float ε as the rational it represents): the sampler's rate."""
        return Fraction(self.epsilon) / self.l1_sensitivity

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
            Exactly discrete Laplace with α = exp(−ε/Δ1), ε/Δ1 taken as the
            exact rational :attr:`rate`: the privacy loss of a shift by Δ1 is
            exactly ε (:class:`~fedeval.privacy.mechanisms.exact_sampling.LaplaceSampler`).
        """
        shape = as_size(size)
        draws = sample_discrete_laplace_exact(self.rate, math.prod(shape), as_generator(rng))
        return draws.reshape(shape)

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
    Entries are grouped by scale and each group is drawn by the exact
    vectorised sampler with rate 1/t, t the float scale taken exactly
    (:class:`~fedeval.privacy.mechanisms.exact_sampling.LaplaceSampler`), so a
    unit shift costs exactly 1/t whatever the bit generator. With more than
    :data:`~fedeval.privacy.mechanisms.exact_sampling.MANY_SCALES` distinct
    scales the same values come from the table-free certificate
    (:func:`~fedeval.privacy.mechanisms.exact_sampling.sample_discrete_laplace_scales`).

    Raises
    ------
    ValueError
        If a scale is not finite or not in (0, 2^50].
    """
    shape = as_size(size)
    scales = np.broadcast_to(np.asarray(scale, dtype=np.float64), shape).ravel()
    out = np.empty(scales.size, dtype=np.int64)
    if not np.all((scales > 0) & (scales <= MAX_SCALE)):
        bad = scales[~((scales > 0) & (scales <= MAX_SCALE))][0]
        raise ValueError(f"the discrete Laplace scale must lie in (0, 2^50], got {bad!r}")
    groups = group_by_value(scales)
    if len(groups) > MANY_SCALES and np.all(scales >= MIN_TABLELESS_SCALE):
        return sample_discrete_laplace_scales(scales, rng).reshape(shape)
    for value, where in groups:
        out[where] = sample_discrete_laplace_exact(rate_of_scale(value), where.size, rng)
    return out.reshape(shape)
