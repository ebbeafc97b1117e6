"""Differentially private empirical CDFs (Barczewski, Mawass & Ramon 2025).

* :func:`private_ecdf` — ε-DP ECDF on a public grid by tree noise (§3.1, Theorem 1).
* :func:`smooth_ecdf` / :meth:`PrivateECDF.smoothed` — monotone L1/L2 smoothing (§3.2, eq. 3).
* :func:`inverse_ecdf` / :meth:`PrivateECDF.inverse` — quantiles by bisection (Algorithm 1).
* :func:`federated_ecdf` — pointwise evaluation by federated sums (§4.1).
* :func:`multi_server_ecdf` — one secret-shared upload, then server-only queries (§4.2).
* :func:`dp_roc_curve` — DP ROC from two private ECDFs (§5.1).

The DP Hosmer–Lemeshow statistic (§5.2) is :func:`fedeval.metrics.hosmer_lemeshow`.
"""

from fedeval.ecdf.federated import FederatedECDF, TreePathShares, federated_ecdf
from fedeval.ecdf.grid import check_grid, equal_width_grid, geometric_grid, tree_height
from fedeval.ecdf.inverse import inverse_ecdf
from fedeval.ecdf.release import PrivateECDF, empirical_cdf, prefix_counts, private_ecdf
from fedeval.ecdf.roc import DPROCCurve, dp_roc_curve, roc_l1_distance
from fedeval.ecdf.secret_sharing import (
    MultiServerECDF,
    ServerState,
    multi_server_ecdf,
    reconstruct,
    share_vector,
)
from fedeval.ecdf.smoothing import SmoothingProblem, Solver, smooth_ecdf, smoothing_problem
from fedeval.ecdf.tree import (
    Neighbouring,
    NoiseKind,
    TreeMechanism,
    level_sizes,
    path_matrix,
    path_sums,
    signed_cover_size,
)

__all__ = [
    "DPROCCurve",
    "FederatedECDF",
    "MultiServerECDF",
    "Neighbouring",
    "NoiseKind",
    "PrivateECDF",
    "ServerState",
    "SmoothingProblem",
    "Solver",
    "TreeMechanism",
    "TreePathShares",
    "check_grid",
    "dp_roc_curve",
    "empirical_cdf",
    "equal_width_grid",
    "federated_ecdf",
    "geometric_grid",
    "inverse_ecdf",
    "level_sizes",
    "multi_server_ecdf",
    "path_matrix",
    "path_sums",
    "prefix_counts",
    "private_ecdf",
    "reconstruct",
    "roc_l1_distance",
    "share_vector",
    "signed_cover_size",
    "smooth_ecdf",
    "smoothing_problem",
    "tree_height",
]
