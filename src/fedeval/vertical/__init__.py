"""Vertical federated AUC with label differential privacy (Sun et al. 2023).

A non-label party (the server) holds every example's score; K label parties
(clients) hold the labels of their own examples. The server learns the global
ROC AUC through the rank protocol of eq. (1) without seeing any label: the
label parties' counts and rank sums
(:class:`~fedeval.sketches.rank_sums.RankSumSketch`) are released under
:class:`~fedeval.privacy.models.LabelDP` through the one pipeline — randomized
response on every label (FedAUC_RR, §4) or Laplace/Gaussian noise on each
party's statistics (FedAUC_Lap, §5) — and decoded here.

>>> import fedeval as fe                                               # doctest: +SKIP
>>> fe.vertical.auc(scores, labels, client_of_example, fe.LabelDP(1.0),  # doctest: +SKIP
...                 allocation="adaptive", rng=0)

Modules
-------
protocol
    Mid-ranks, the rank protocol, eq. (1).
estimate
    :func:`auc`, the public entry point, and the delta-method variance.
randomized_response
    Algorithm 3, the paper's eq. (7) and the delta-method variance of FedAUC_RR.
laplace
    The paper's closed forms eqs. (8)-(9).
simulation
    :func:`simulate`, repeated releases.

References
----------
.. [1] J. Sun, X. Yang, Y. Yao, J. Xie, D. Wu and C. Wang, "Differentially
   private AUC computation in vertical federated learning", 2023.
"""

from fedeval.data.partition import Assignment, assign_clients
from fedeval.sketches.rank_sums import Allocation, RankSensitivity, RankSums, adaptive_beta
from fedeval.vertical.estimate import VerticalAUC, auc, auc_variance
from fedeval.vertical.laplace import global_laplace_variance_eq8, local_laplace_variance_eq9
from fedeval.vertical.protocol import (
    LocalStatistics,
    RankProtocol,
    auc_from_rank_sum,
    local_statistics,
    mid_ranks,
    rank_protocol,
)
from fedeval.vertical.randomized_response import (
    debias_auc,
    rr_bias_second_order,
    rr_variance_delta,
    rr_variance_eq7,
)
from fedeval.vertical.simulation import SimulationResult, simulate

__all__ = [
    "Allocation",
    "Assignment",
    "LocalStatistics",
    "RankProtocol",
    "RankSensitivity",
    "RankSums",
    "SimulationResult",
    "VerticalAUC",
    "adaptive_beta",
    "assign_clients",
    "auc",
    "auc_from_rank_sum",
    "auc_variance",
    "debias_auc",
    "global_laplace_variance_eq8",
    "local_laplace_variance_eq9",
    "local_statistics",
    "mid_ranks",
    "rank_protocol",
    "rr_bias_second_order",
    "rr_variance_delta",
    "rr_variance_eq7",
    "simulate",
]
