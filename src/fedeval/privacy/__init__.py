"""Differential-privacy mechanisms, their guarantees, and accounting maths.

One module per mechanism; each exposes a sampler, its variance and its
:class:`Guarantee` (DESIGN.md convention 3).
"""

from __future__ import annotations

from fedeval.privacy.accounting import (
    basic_composition,
    calibrate_noise_multiplier,
    gaussian_rounds_epsilon,
    rdp_to_approx_dp,
    zcdp_to_approx_dp,
)
from fedeval.privacy.guarantee import Guarantee, PrivacyUnit
from fedeval.privacy.ledger import BudgetExceededError, BudgetLedger, LedgerEntry
from fedeval.privacy.mechanisms.discrete_gaussian import DiscreteGaussian
from fedeval.privacy.mechanisms.gaussian import Gaussian
from fedeval.privacy.mechanisms.laplace import DiscreteLaplace, Laplace
from fedeval.privacy.mechanisms.polya import PolyaShares, polya_difference_epsilon
from fedeval.privacy.mechanisms.randomized_response import RandomizedResponse
from fedeval.privacy.mechanisms.skellam import SkellamShares, skellam_epsilon, skellam_rdp
from fedeval.privacy.mechanisms.unary_encoding import OptimalUnaryEncoding
from fedeval.privacy.models import (
    DistributedDP,
    LabelDP,
    LocalDP,
    PrivacyModel,
    SecureAggregation,
    UserLevelDP,
    privacy_model,
)

__all__ = [
    "BudgetExceededError",
    "BudgetLedger",
    "DiscreteGaussian",
    "DiscreteLaplace",
    "DistributedDP",
    "Gaussian",
    "Guarantee",
    "LabelDP",
    "Laplace",
    "LedgerEntry",
    "LocalDP",
    "OptimalUnaryEncoding",
    "PolyaShares",
    "PrivacyModel",
    "PrivacyUnit",
    "RandomizedResponse",
    "SecureAggregation",
    "SkellamShares",
    "UserLevelDP",
    "basic_composition",
    "calibrate_noise_multiplier",
    "gaussian_rounds_epsilon",
    "polya_difference_epsilon",
    "privacy_model",
    "rdp_to_approx_dp",
    "skellam_epsilon",
    "skellam_rdp",
    "zcdp_to_approx_dp",
]
