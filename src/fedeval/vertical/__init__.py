"""Vertical federated AUC with label differential privacy (Sun et al. 2023).

A non-label party (the server) holds every example's score; K label parties
(clients) hold the labels of their own examples. The server learns the global
ROC AUC through the rank protocol of eq. (1) without seeing any label, with
ε-label-DP from randomized response (FedAUC_RR, §4) or from Laplace/Gaussian
noise on the local rank sums and counts (FedAUC_Lap, §5).

>>> import fedeval as fe                                    # doctest: +SKIP
>>> fe.vertical.auc(scores, labels, client_of_example,      # doctest: +SKIP
...                 mechanism="local-laplace", epsilon=1.0, allocation="adaptive", rng=0)

Modules
-------
protocol
    Mid-ranks, the rank protocol, eq. (1), IID / by-score client assignment.
randomized_response
    Algorithms 1-3, the paper's eq. (7) and the delta-method variance.
laplace
    Global/local sensitivity, fixed/orthogonal/adaptive budget split, eqs. (8)-(9).
estimate
    :func:`auc`, the public entry point.
simulation
    :func:`simulate`, vectorised repeated runs.

References
----------
.. [1] J. Sun, X. Yang, Y. Yao, J. Xie, D. Wu and C. Wang, "Differentially
   private AUC computation in vertical federated learning", 2023.
"""

from fedeval.vertical.estimate import Mechanism, VerticalAUC, auc
from fedeval.vertical.laplace import (
    Allocation,
    Noise,
    NoisePlan,
    Sensitivity,
    adaptive_beta,
    global_laplace_variance_eq8,
    laplace_variance_delta,
    local_laplace_variance_eq9,
    noise_plan,
    release_local_statistics,
)
from fedeval.vertical.protocol import (
    Assignment,
    LocalStatistics,
    RankProtocol,
    assign_clients,
    auc_from_rank_sum,
    local_statistics,
    mid_ranks,
    rank_auc,
    rank_protocol,
)
from fedeval.vertical.randomized_response import (
    debias_auc,
    flip_probability,
    randomized_response,
    rr_bias_second_order,
    rr_variance_delta,
    rr_variance_eq7,
)
from fedeval.vertical.simulation import SimulationResult, simulate

__all__ = [
    "Allocation",
    "Assignment",
    "LocalStatistics",
    "Mechanism",
    "Noise",
    "NoisePlan",
    "RankProtocol",
    "Sensitivity",
    "SimulationResult",
    "VerticalAUC",
    "adaptive_beta",
    "assign_clients",
    "auc",
    "auc_from_rank_sum",
    "debias_auc",
    "flip_probability",
    "global_laplace_variance_eq8",
    "laplace_variance_delta",
    "local_laplace_variance_eq9",
    "local_statistics",
    "mid_ranks",
    "noise_plan",
    "randomized_response",
    "rank_auc",
    "rank_protocol",
    "release_local_statistics",
    "rr_bias_second_order",
    "rr_variance_delta",
    "rr_variance_eq7",
    "simulate",
]
