"""Multi-server ECDF evaluation with clients offline after one upload (Barczewski et al. 2025, §4.2).

Protocol
--------
1. *Upload (once).* Client i computes its prefix-indicator vector over the
   public grid, v_i[k] = #{its examples x with x ≤ τ_k} (k = 0..N-1), and
   splits it into m ≥ 2 additive shares modulo 2^64: m - 1 uniformly random
   vectors and a last one, v_i minus their sum. Share j goes to server j.
   Any m - 1 shares are independent and uniform on (ℤ/2^64)^N whatever v_i
   is (information-theoretic secrecy), so no coalition of fewer than m
   servers learns anything about a client.
2. *Accumulate.* Server j adds the shares it received: S_j = Σ_i s_{i,j}
   (mod 2^64). The clients can now go offline.
3. *Query (any number).* For grid points B, server j publishes
   S_j[k] + its share of the tree noise on k's path, for k ∈ B; the sum over
   servers (mod 2^64, read as a signed integer) is n·F(τ_k) + Σ_l η_{k>>l,l}.
   Every server re-derives its noise shares from its own secret seed, so every
   query sees the same tree noise and the whole function is one ε-DP release.

Noise. Each server's node shares are Pólya shares calibrated so that any
m - 1 of them already sum to (at least) discrete Laplace noise of scale
(L + 1)/ε: the published sum is ε-DP against the analyst, and a single curious
server, who can subtract its own share, still faces full noise from the
others. The protocol itself is :mod:`fedeval.aggregation.secret_sharing`; this
module is its ECDF front end.

Cost, and the paper's function secret sharing (FSS)
---------------------------------------------------
* Upload: each client sends m·N·64 bits once (m·N words); total O(n·m·N).
  Using a PRG seed for the m - 1 random shares would cut this to
  (m - 1)·λ + 64·N bits per client.
* Per query over B points: each server reads |B| words of its accumulated
  vector and adds its noise: O(|B|·L) computation and O(m·|B|) words
  exchanged, independent of n; no client is contacted.
* The paper's FSS-based variant (Boyle et al. comparison keys) sends per client
  one key of O(L·(λ + log n)) bits to each server — far less than N words for
  a fine grid — but each query then costs every server n key evaluations,
  O(n·L·λ) PRG work, versus our O(|B|) table lookups. Its evaluation-phase
  communication, O(m·|B|), is the same as here. Total communication O(n + m|B|)
  for FSS vs O(n·m·N + m|B|) here: this variant suits moderate N (up to ~10^5
  points = under a megabyte per client and server) and it needs no
  cryptographic assumption beyond non-collusion.

References
----------
.. [1] J. Barczewski, A. Mawass and J. Ramon, "Differentially private empirical
   cumulative distribution functions", arXiv:2502.06651 (2025), §4.2.
.. [2] E. Boyle, N. Gilboa and Y. Ishai, "Function secret sharing", EUROCRYPT
   2015 (the FSS keys the paper uses).
.. [3] A. Shamir, "How to share a secret", CACM 22(11) 1979 / additive secret
   sharing over ℤ/2^64 as in SPDZ-style MPC.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike

from fedeval.aggregation.secret_sharing import SharedSum, shared_sum
from fedeval.data import Federation
from fedeval.ecdf.federated import query_positions
from fedeval.ecdf.grid import check_grid
from fedeval.ecdf.release import PrivateECDF, ecdf_model, public_total
from fedeval.privacy.guarantee import Neighbouring
from fedeval.privacy.ledger import BudgetLedger
from fedeval.privacy.models import PrivacyModel
from fedeval.randomness import RNGLike
from fedeval.sketches.prefix_tree import PrefixTreeSketch

__all__ = ["MultiServerECDF", "multi_server_ecdf"]


def _check_servers(n_servers: object) -> int:
    if isinstance(n_servers, bool) or not isinstance(n_servers, int | np.integer):
        raise TypeError(f"n_servers must be an integer >= 2, got {n_servers!r}")
    if int(n_servers) < 2:
        raise ValueError(
            f"n_servers must be >= 2 non-colluding servers (one server would see the data), "
            f"got {n_servers!r}"
        )
    return int(n_servers)


@dataclass(frozen=True)
class MultiServerECDF:
    """m non-colluding servers answering ECDF queries without the clients.

    Create with :func:`multi_server_ecdf`.

    Attributes
    ----------
    shared : SharedSum
        The servers' accumulated shares and noise seeds.
    sketch : PrefixTreeSketch
        The uploaded prefix counts (all grid points).
    """

    shared: SharedSum
    sketch: PrefixTreeSketch

    @property
    def grid(self) -> np.ndarray:
        return self.sketch.points

    @property
    def n_servers(self) -> int:
        return self.shared.n_servers

    def query(self, points: ArrayLike | None = None) -> PrivateECDF:
        """Evaluate F̂ at grid positions ``points`` (default all) using the servers only.

        Notes
        -----
        Privacy: all queries share one noise, so together they are a single
        release (charged at setup); no client participates.
        """
        pos = query_positions(points, self.sketch.points.size)
        if self.sketch.total is not None:
            return PrivateECDF.of(self.shared.query(pos, self.sketch.at(pos)).decode())
        # No public total: the normaliser is the released count at the last grid point,
        # so that point is always answered too (the same noise as any other query).
        last = self.sketch.points.size - 1
        ask = np.union1d(pos, [last]).astype(np.int64)
        full = PrivateECDF.of(self.shared.query(ask, self.sketch.at(ask)).decode())
        keep = np.searchsorted(ask, pos)
        return replace(
            full, grid=full.grid[keep], counts=full.counts[keep], indices=full.indices[keep]
        )

    def cost(self, n_points_queried: int) -> dict[str, int]:
        """Words (64-bit) communicated: one-off upload and one query over B points."""
        n, m, big_n = self.shared.n_clients, self.n_servers, self.sketch.points.size
        return {
            "upload_words_per_client": m * big_n,
            "upload_words_total": n * m * big_n,
            "query_words_total": m * int(n_points_queried),
            "query_server_word_reads": m * int(n_points_queried),
            "clients_online_per_query": 0,
        }


def multi_server_ecdf(
    fed: Federation,
    grid: ArrayLike,
    privacy: PrivacyModel | None = None,
    *,
    epsilon: float | None = None,
    neighbouring: Neighbouring = "replace",
    n_servers: int = 2,
    rng: RNGLike = None,
    ledger: BudgetLedger | None = None,
) -> MultiServerECDF:
    """Clients secret-share their prefix-count vectors once; servers then answer queries (§4.2).

    Parameters
    ----------
    fed : Federation
        The ECDF is of ``fed.scores``.
    grid : array_like, shape (N,)
        Public strictly increasing grid, N ≥ 2.
    privacy : privacy model, optional
        E.g. ``DistributedDP(1.0, neighbouring="replace")``; its noise is split
        among the servers.
    epsilon : float, optional
        Sugar for ``DistributedDP(epsilon, neighbouring=neighbouring)``.
    neighbouring : {"replace", "add_remove"}
        Only with ``epsilon``.
    n_servers : int, default 2
        m ≥ 2 servers trusted not to collude all together.
    rng : int, Generator or None
        Random source for the shares and the servers' noise seeds (use a CSPRNG
        generator in deployment).
    ledger : BudgetLedger, optional
        Charged once, here.

    Returns
    -------
    MultiServerECDF

    Raises
    ------
    ValueError, TypeError
        Bad grid, inconsistent privacy arguments, fewer than 2 servers, or
        multiclass data.

    Notes
    -----
    Public inputs: the grid, the number of servers and of participating
    clients, and the number of examples only under replacement of one example.

    Privacy: the model's guarantee per example for everything the servers
    publish; shares are information-theoretically hiding against any m - 1
    servers.

    References
    ----------
    .. [1] Barczewski, Mawass & Ramon (2025), §4.2.
    """
    m = _check_servers(n_servers)
    g = check_grid(grid)
    if fed.scores.ndim != 1:
        raise ValueError("multi_server_ecdf needs one score per example (a binary-task federation)")
    model = ecdf_model(privacy, epsilon, neighbouring)
    total = public_total(model, fed.n_examples)
    sketch = PrefixTreeSketch(g, "at_most", total=total)
    shared = shared_sum(fed, sketch, model, n_servers=m, rng=rng, ledger=ledger)
    return MultiServerECDF(shared, sketch)
