"""Noise samplers, one module per mechanism.

Each module exposes the mechanism's exact sampler, its share sampler (where the
noise can be split among clients), its sum sampler (the total of all shares,
drawn directly), its variance and its :class:`~fedeval.privacy.guarantee.Guarantee`
(DESIGN.md convention 3). Which one a release uses is decided in one place,
:func:`fedeval.privacy.mechanism_for.mechanism_for`.
"""

from __future__ import annotations

from fedeval.privacy.mechanisms.discrete_gaussian import DiscreteGaussian
from fedeval.privacy.mechanisms.laplace import DiscreteLaplace
from fedeval.privacy.mechanisms.polya import PolyaShares, polya_difference_epsilon
from fedeval.privacy.mechanisms.randomized_response import RandomizedResponse
from fedeval.privacy.mechanisms.skellam import SkellamShares, skellam_epsilon, skellam_rdp
from fedeval.privacy.mechanisms.unary_encoding import OptimalUnaryEncoding

__all__ = [
    "DiscreteGaussian",
    "DiscreteLaplace",
    "OptimalUnaryEncoding",
    "PolyaShares",
    "RandomizedResponse",
    "SkellamShares",
    "polya_difference_epsilon",
    "skellam_epsilon",
    "skellam_rdp",
]
