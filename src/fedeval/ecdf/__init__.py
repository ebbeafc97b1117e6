"""Differentially private empirical CDFs (Barczewski, Mawass & Ramon 2025).

* :func:`private_ecdf` — DP ECDF on a public grid by tree noise (§3.1, Theorems 1 and 3).
* :func:`smooth_ecdf` / :meth:`PrivateECDF.smoothed` — monotone L1/L2 smoothing (§3.2, eq. 3).
* :func:`inverse_ecdf` / :meth:`PrivateECDF.inverse` — quantiles by bisection (Algorithm 1).
* :func:`federated_ecdf` — federated release, queried from one snapshot (§4.1).
* :func:`multi_server_ecdf` — one secret-shared upload, then server-only queries (§4.2).
* :func:`dp_roc_curve` — DP ROC from two class releases (§5.1).

Every release goes through :func:`fedeval.aggregation.release` with the
:class:`~fedeval.sketches.prefix_tree.PrefixTreeSketch`; privacy is a model
object (``epsilon=`` is sugar for distributed discrete Laplace noise). The DP
Hosmer–Lemeshow statistic (§5.2) is :func:`fedeval.metrics.hosmer_lemeshow`.
"""

from fedeval.ecdf.federated import FederatedECDF, federated_ecdf
from fedeval.ecdf.grid import check_grid, equal_width_grid, geometric_grid
from fedeval.ecdf.inverse import inverse_ecdf
from fedeval.ecdf.release import PrivateECDF, empirical_cdf, private_ecdf
from fedeval.ecdf.roc import DPROCCurve, dp_roc_curve, roc_l1_distance
from fedeval.ecdf.secret_sharing import MultiServerECDF, multi_server_ecdf
from fedeval.postprocess.smoothing import SmoothingProblem, Solver, smooth_ecdf, smoothing_problem
from fedeval.sketches.prefix_tree import count_at_most, count_below

__all__ = [
    "DPROCCurve",
    "FederatedECDF",
    "MultiServerECDF",
    "PrivateECDF",
    "SmoothingProblem",
    "Solver",
    "check_grid",
    "count_at_most",
    "count_below",
    "dp_roc_curve",
    "empirical_cdf",
    "equal_width_grid",
    "federated_ecdf",
    "geometric_grid",
    "inverse_ecdf",
    "multi_server_ecdf",
    "private_ecdf",
    "roc_l1_distance",
    "smooth_ecdf",
    "smoothing_problem",
]
