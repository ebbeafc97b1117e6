"""Pointwise federated evaluation of a private ECDF (Barczewski et al. 2025, §4.1).

Every evaluation of F̂ at a set B of grid points is one federated sum
(:func:`fedeval.aggregation.federated_sum`): each client sends, for every
point τ_i ∈ B, its count of examples ≤ τ_i plus its share of the tree noise on
τ_i's root path (eq. 4: F̂(τ_i) = Û_{ϕ≤τ_i}(X, I[L, i])).

Noise that stays the same across queries
----------------------------------------
The tree noise η_{j,l} must be the *same* random variable whenever a query
touches node (j, l); otherwise two queries at one point would be two
independent releases. Each client therefore holds a secret seed from which it
re-derives its Pólya share of every node: the shares of all clients sum to a
discrete Laplace η_{j,l} (Balle et al. 2020; :class:`fedeval.privacy.PolyaShares`),
the "UStat keeps the noise secret and stored" assumption of §2. The whole
function is released once, ε-DP by Theorem 1, and every later query is
post-processing of that one release; the budget is charged once.

Cost
----
A query over B points makes every client send |B| integers: O(n·|B|)
communication and client computation (plus O(N) to re-derive the node shares),
and all n clients must be online for each query. This is the generic strategy;
:mod:`fedeval.ecdf.secret_sharing` trades one larger upload for offline clients.

References
----------
.. [1] J. Barczewski, A. Mawass and J. Ramon, "Differentially private empirical
   cumulative distribution functions", arXiv:2502.06651 (2025), §2 (UStat),
   §4.1, eq. (4).
.. [2] B. Balle, J. Bell, A. Gascón and K. Nissim, "Private summation in the
   multi-message shuffle model", CCS 2020 (Pólya shares).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from fedeval.aggregation import Path, federated_sum
from fedeval.data import Federation
from fedeval.ecdf.grid import check_grid
from fedeval.ecdf.release import PrivateECDF
from fedeval.ecdf.tree import TreeMechanism, path_sums
from fedeval.privacy.ledger import BudgetLedger
from fedeval.privacy.mechanisms.polya import PolyaShares
from fedeval.randomness import RNGLike, as_generator

__all__ = ["FederatedECDF", "TreePathShares", "federated_ecdf"]


@dataclass(frozen=True)
class TreePathShares:
    """Per-client Pólya shares of the tree noise, summed along the queried paths.

    Implements the :class:`fedeval.aggregation.ShareNoise` protocol for a query
    at tree positions ``positions``. A client draws its shares of *all* nodes
    in a fixed order from its own generator, so re-seeding the generator
    reproduces the same node shares for every later query.
    """

    positions: NDArray[np.int64]
    n_points: int
    node_shares: PolyaShares

    def _n_nodes(self) -> int:
        return TreeMechanism(1.0, self.n_points).n_nodes

    def sample_share(self, size: int, rng: np.random.Generator) -> NDArray[np.int64]:
        nodes = self.node_shares.sample_share(self._n_nodes(), rng)
        return np.asarray(path_sums(nodes, self.positions, self.n_points), dtype=np.int64)

    def sample_sum(self, size: int, rng: np.random.Generator) -> NDArray[np.int64]:
        nodes = self.node_shares.sample_sum(self._n_nodes(), rng)
        return np.asarray(path_sums(nodes, self.positions, self.n_points), dtype=np.int64)

    @property
    def variance(self) -> float:
        """Variance of each released count: L + 1 discrete-Laplace nodes."""
        height = TreeMechanism(1.0, self.n_points).height
        return (height + 1) * float(self.node_shares.variance)


@dataclass(frozen=True)
class FederatedECDF:
    """A private ECDF whose evaluations are federated sums over the clients.

    Create with :func:`federated_ecdf`. Each :meth:`query` is one federated
    sum; all queries share the same tree noise, so together they are one
    ε-DP release.

    Attributes
    ----------
    fed : Federation
    grid : ndarray, shape (N,)
    mechanism : TreeMechanism
        Discrete-Laplace tree noise with the Theorem 1 scale.
    path : {"fast", "faithful"}
    """

    fed: Federation
    grid: NDArray[np.float64]
    mechanism: TreeMechanism
    path: Path
    _noise_seed: int = field(repr=False)

    def query(self, points: ArrayLike | None = None) -> PrivateECDF:
        """Evaluate F̂ at grid positions ``points`` (default: all) by one federated sum.

        Parameters
        ----------
        points : array_like of int, optional
            0-based positions in ``grid``.

        Returns
        -------
        PrivateECDF
            Restricted to the queried points.

        Notes
        -----
        Privacy: every query is post-processing of the single ε-DP tree release
        charged at creation; queries cost no further budget.
        """
        n_points = self.grid.size
        if points is None:
            pos = np.arange(n_points, dtype=np.int64)
        else:
            raw = np.asarray(points)
            if raw.dtype.kind not in "iu":
                raise TypeError(f"points must be integer grid positions, got dtype {raw.dtype}")
            pos = np.unique(raw.astype(np.int64))
            if pos.size == 0 or pos[0] < 0 or pos[-1] >= n_points:
                raise ValueError(f"points must be non-empty positions in [0, {n_points - 1}]")
        thresholds = self.grid[pos]

        def encode(
            scores: NDArray[np.float64], labels: NDArray[np.int64], client: NDArray[np.int64]
        ) -> NDArray[np.int64]:
            # Linear in the examples: a sum of per-example indicators I[x ≤ τ_i].
            hist = np.bincount(
                np.searchsorted(thresholds, scores, side="left"), minlength=pos.size + 1
            )
            return np.cumsum(hist[: pos.size]).astype(np.int64)

        noise = TreePathShares(
            pos,
            n_points,
            PolyaShares(self.mechanism.epsilon / self.mechanism.nodes_touched, self.fed.n_clients),
        )
        release = federated_sum(
            self.fed,
            encode,
            int(pos.size),
            noise=noise,
            path=self.path,
            rng=np.random.default_rng(self._noise_seed),
        )
        return PrivateECDF(
            grid=thresholds,
            counts=release.values.astype(np.float64),
            total=float(self.fed.n_examples),
            indices=pos,
            n_tree_points=n_points,
            epsilon=self.mechanism.epsilon,
            noise_scale=self.mechanism.noise_scale,
            count_variance=release.noise_variance,
            guarantee=self.mechanism.guarantee("example"),
        )

    def cost(self, n_points_queried: int) -> dict[str, int]:
        """Communication of one query over B points (integers sent, §4.1): O(n·|B|)."""
        return {
            "client_uploads": self.fed.n_clients,
            "integers_per_client": int(n_points_queried),
            "integers_total": self.fed.n_clients * int(n_points_queried),
            "clients_online_per_query": self.fed.n_clients,
        }


def federated_ecdf(
    fed: Federation,
    grid: ArrayLike,
    *,
    epsilon: float,
    path: Path = "fast",
    rng: RNGLike = None,
    ledger: BudgetLedger | None = None,
) -> FederatedECDF:
    """Set up pointwise federated evaluation of an ε-DP ECDF of the clients' scores (§4.1).

    Parameters
    ----------
    fed : Federation
        Binary-task federation; the ECDF is of ``fed.scores``.
    grid : array_like, shape (N,)
        Public strictly increasing grid, N ≥ 2.
    epsilon : float
        ε > 0 for the whole function and all its later queries.
    path : {"fast", "faithful"}
        Simulation path of :func:`fedeval.aggregation.federated_sum`.
    rng : int, Generator or None
        Seeds the clients' secret noise seeds.
    ledger : BudgetLedger, optional
        Charged ε once, here.

    Returns
    -------
    FederatedECDF

    Raises
    ------
    ValueError, TypeError
        Bad grid, ε ≤ 0, multiclass data or unknown path.

    Notes
    -----
    Privacy: discrete-Laplace tree noise with scale (L + 1)/ε assembled from
    Pólya shares; ε-DP per example against the server (Theorem 1), provided
    the secure aggregation reveals only sums.

    References
    ----------
    .. [1] Barczewski, Mawass & Ramon (2025), §4.1, eq. (4), Theorem 1.
    """
    g = check_grid(grid)
    if fed.scores.ndim != 1:
        raise ValueError("federated_ecdf needs one score per example (a binary-task federation)")
    if path not in ("fast", "faithful"):
        raise ValueError(f"path must be 'fast' or 'faithful', got {path!r}")
    mech = TreeMechanism(epsilon, int(g.size), noise="discrete")
    if ledger is not None:
        ledger.charge(
            "federated private ECDF (tree mechanism, Pólya shares)",
            mech.epsilon,
            unit="example",
            details={"n_points": mech.n_points, "height": mech.height, "scale": mech.noise_scale},
        )
    seed = int(as_generator(rng).integers(0, 2**63 - 1))
    return FederatedECDF(fed, g, mech, path, seed)
