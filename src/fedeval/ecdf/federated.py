"""Federated evaluation of a private ECDF (Barczewski et al. 2025, §4.1).

Every client holds some values. It sends, for every point τ_k of the public
grid, its count of values ≤ τ_k plus its share of the tree noise on τ_k's root
path (eq. 4: F̂(τ_k) = Û_{ϕ≤τ_k}(X, I[L, k])); the shares of all clients sum to
the discrete-Laplace tree noise (Pólya shares, Balle et al. 2020). This is one
release of the :class:`~fedeval.sketches.prefix_tree.PrefixTreeSketch` through
:func:`fedeval.aggregation.release`, charged once.

Snapshot
--------
The paper evaluates pointwise, one federated sum per query, with noise that
"UStat keeps secret and stored" so that every query sees the same noise. That
is private only if the clients' data never change between queries: a changed
count with unchanged noise shows the change noise-free. :func:`federated_ecdf`
therefore releases every grid point once, at creation, and answers every later
query from that snapshot; queries are post-processing and cost nothing. The
price is one upload of N integers per client instead of |B| per query.

References
----------
.. [1] J. Barczewski, A. Mawass and J. Ramon, "Differentially private empirical
   cumulative distribution functions", arXiv:2502.06651 (2025), §2 (UStat),
   §4.1, eq. (4).
.. [2] B. Balle, J. Bell, A. Gascón and K. Nissim, "Private summation in the
   multi-message shuffle model", CCS 2020 (Pólya shares).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from fedeval.aggregation import Path, release
from fedeval.data import Federation, Scan
from fedeval.ecdf.grid import check_grid
from fedeval.ecdf.release import PrivateECDF, ecdf_model, public_total
from fedeval.privacy.guarantee import Neighbouring
from fedeval.privacy.ledger import BudgetLedger
from fedeval.privacy.models import PrivacyModel
from fedeval.public_facts import client_count_public
from fedeval.randomness import RNGLike
from fedeval.sketches.prefix_tree import PrefixTreeSketch

__all__ = ["FederatedECDF", "federated_ecdf", "query_positions"]


def query_positions(points: ArrayLike | None, n_points: int) -> NDArray[np.int64]:
    """Validated, sorted, unique 0-based grid positions (default: all)."""
    if points is None:
        return np.arange(n_points, dtype=np.int64)
    raw = np.asarray(points)
    if raw.dtype.kind not in "iu":
        raise TypeError(f"points must be integer grid positions, got dtype {raw.dtype}")
    pos = np.unique(raw.astype(np.int64))
    if pos.size == 0 or pos[0] < 0 or pos[-1] >= n_points:
        raise ValueError(f"points must be non-empty positions in [0, {n_points - 1}]")
    return pos


@dataclass(frozen=True)
class FederatedECDF:
    """A private ECDF of federated data, released once; queries read the snapshot.

    Attributes
    ----------
    snapshot : PrivateECDF
        The release at every grid point.
    n_clients : int or None
        The number of participating clients when it is public under the
        privacy model (:func:`fedeval.public_facts.client_count_public`), else None.
    path : {"fast", "faithful"}
    """

    snapshot: PrivateECDF
    n_clients: int | None
    path: Path

    @property
    def grid(self) -> NDArray[np.float64]:
        return self.snapshot.grid

    def query(self, points: ArrayLike | None = None) -> PrivateECDF:
        """F̂ at grid positions ``points`` (default: all), from the snapshot.

        Notes
        -----
        Privacy: post-processing of the single release charged at creation;
        queries cost no further budget and see no later change of the data.
        """
        pos = query_positions(points, self.snapshot.grid.size)
        s = self.snapshot
        return replace(s, grid=s.grid[pos], counts=s.counts[pos], indices=s.indices[pos])

    def cost(self, n_points_queried: int, n_clients: int | None = None) -> dict[str, int | None]:
        """Communication (integers sent): one upload of N per client; queries send nothing.

        ``n_clients`` defaults to the public count; the totals are None when
        no count is public or given (a planning figure, not a release).
        """
        n = int(self.snapshot.n_tree_points)
        k = self.n_clients if n_clients is None else int(n_clients)
        return {
            "client_uploads": k,
            "integers_per_client": n,
            "integers_total": None if k is None else k * n,
            "clients_online_per_query": 0,
        }


def federated_ecdf(
    fed: Federation | Scan,
    grid: ArrayLike,
    privacy: PrivacyModel | None = None,
    *,
    epsilon: float | None = None,
    neighbouring: Neighbouring = "replace",
    path: Path = "fast",
    rng: RNGLike = None,
    ledger: BudgetLedger | None = None,
) -> FederatedECDF:
    """Release an ECDF of the clients' scores once; query it as often as needed (§4.1).

    Parameters
    ----------
    fed : Federation or Scan
        Binary-task federation, in memory or streamed (:func:`fedeval.scan`);
        the ECDF is of its scores.
    grid : array_like, shape (N,)
        Public strictly increasing grid, N ≥ 2.
    privacy : privacy model, optional
        E.g. ``DistributedDP(1.0, neighbouring="replace")``.
    epsilon : float, optional
        Sugar for ``DistributedDP(epsilon, neighbouring=neighbouring)``.
    neighbouring : {"replace", "add_remove"}
        Only with ``epsilon``.
    path : {"fast", "faithful"}
    rng : int, Generator or None
    ledger : BudgetLedger, optional
        Charged once, here.

    Returns
    -------
    FederatedECDF

    Raises
    ------
    ValueError, TypeError
        Bad grid, inconsistent privacy arguments, multiclass data, unknown path.

    Notes
    -----
    Public inputs: the grid, the participating clients (the secure sum's
    parties), and the number of examples only under replacement of one example
    (otherwise the ECDF is normalised by its own released count).

    Privacy: the model's guarantee per example (Theorem 1 under replacement),
    against the server, provided secure aggregation reveals only sums.

    References
    ----------
    .. [1] Barczewski, Mawass & Ramon (2025), §4.1, eq. (4), Theorem 1.
    """
    g = check_grid(grid)
    if fed.kind != "binary":
        raise ValueError("federated_ecdf needs one score per example (a binary-task federation)")
    model = ecdf_model(privacy, epsilon, neighbouring)
    total = public_total(model, fed.n_examples)
    sketch = PrefixTreeSketch(g, "at_most", total=total)
    snapshot = PrivateECDF.of(
        release(fed, sketch, model, path=path, rng=rng, ledger=ledger).decode()
    )
    return FederatedECDF(snapshot, fed.n_clients if client_count_public(model) else None, path)
