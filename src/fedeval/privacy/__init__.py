"""Privacy: models, the one mechanism dispatch, samplers, accounting and the budget ledger.

* :mod:`~fedeval.privacy.models` — who is trusted and what is protected.
* :mod:`~fedeval.privacy.mechanism_for` — THE dispatch: model × sketch sensitivity × clients → mechanism.
* :mod:`~fedeval.privacy.mechanisms` — one module per sampler (exact, share and sum samplers,
  variance, guarantee).
* :mod:`~fedeval.privacy.noise` — who adds the noise, on the fast and faithful paths.
* :mod:`~fedeval.privacy.sampling` — random choices about clients (Poisson sampling, group split,
  contribution bounds, secret shares).
* :mod:`~fedeval.privacy.sensitivity`, :mod:`~fedeval.privacy.guarantee`,
  :mod:`~fedeval.privacy.receipt` — what a sketch declares and what a release states.
* :mod:`~fedeval.privacy.accounting`, :mod:`~fedeval.privacy.ledger` — composition and the budget.
"""

from __future__ import annotations

from fedeval.privacy.accounting import (
    basic_composition,
    calibrate_noise_multiplier,
    gaussian_rounds_epsilon,
    rdp_to_approx_dp,
    zcdp_to_approx_dp,
)
from fedeval.privacy.guarantee import Guarantee, Neighbouring, PrivacyUnit
from fedeval.privacy.ledger import BudgetExceededError, BudgetLedger, LedgerEntry
from fedeval.privacy.mechanism_for import Mechanism, mechanism_for
from fedeval.privacy.mechanisms.discrete_gaussian import DiscreteGaussian
from fedeval.privacy.mechanisms.laplace import DiscreteLaplace
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
    model_from_dict,
    model_to_dict,
    privacy_model,
)
from fedeval.privacy.receipt import Receipt
from fedeval.privacy.sensitivity import Part, Sensitivity

__all__ = [
    "BudgetExceededError",
    "BudgetLedger",
    "DiscreteGaussian",
    "DiscreteLaplace",
    "DistributedDP",
    "Guarantee",
    "LabelDP",
    "LedgerEntry",
    "LocalDP",
    "Mechanism",
    "Neighbouring",
    "OptimalUnaryEncoding",
    "Part",
    "PolyaShares",
    "PrivacyModel",
    "PrivacyUnit",
    "RandomizedResponse",
    "Receipt",
    "SecureAggregation",
    "Sensitivity",
    "SkellamShares",
    "UserLevelDP",
    "basic_composition",
    "calibrate_noise_multiplier",
    "gaussian_rounds_epsilon",
    "mechanism_for",
    "model_from_dict",
    "model_to_dict",
    "polya_difference_epsilon",
    "privacy_model",
    "rdp_to_approx_dp",
    "skellam_epsilon",
    "skellam_rdp",
    "zcdp_to_approx_dp",
]
