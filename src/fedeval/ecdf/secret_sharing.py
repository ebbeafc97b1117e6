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
others.

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

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from fedeval.data import Federation
from fedeval.ecdf.grid import check_grid
from fedeval.ecdf.release import PrivateECDF, prefix_counts
from fedeval.ecdf.tree import TreeMechanism, path_sums
from fedeval.privacy.guarantee import Guarantee
from fedeval.privacy.ledger import BudgetLedger
from fedeval.privacy.mechanisms.polya import PolyaShares
from fedeval.randomness import RNGLike, as_generator

__all__ = [
    "MultiServerECDF",
    "ServerState",
    "multi_server_ecdf",
    "reconstruct",
    "share_vector",
]


def _check_servers(n_servers: object) -> int:
    if isinstance(n_servers, bool) or not isinstance(n_servers, int | np.integer):
        raise TypeError(f"n_servers must be an integer >= 2, got {n_servers!r}")
    if int(n_servers) < 2:
        raise ValueError(
            f"n_servers must be >= 2 non-colluding servers (one server would see the data), "
            f"got {n_servers!r}"
        )
    return int(n_servers)


def share_vector(vector: ArrayLike, n_servers: int, rng: RNGLike = None) -> NDArray[np.uint64]:
    """Split an integer vector into ``n_servers`` additive shares modulo 2^64.

    Parameters
    ----------
    vector : array_like of int, shape (N,)
        Non-negative integers below 2^63 (counts).
    n_servers : int
        m ≥ 2.
    rng : int, Generator or None
        Use :func:`fedeval.randomness.secure_generator` in deployment: numpy's
        PCG64 is not a cryptographic generator.

    Returns
    -------
    ndarray of uint64, shape (m, N)
        Rows 0..m-2 are uniform; row m-1 makes the columns sum to ``vector``
        modulo 2^64.

    Raises
    ------
    ValueError, TypeError
        If m < 2 or the vector is not non-negative integers.
    """
    m = _check_servers(n_servers)
    v = np.asarray(vector)
    if v.dtype.kind not in "iu" or v.ndim != 1 or (v.size and v.min() < 0):
        raise ValueError("vector must be a 1-D array of non-negative integers")
    gen = as_generator(rng)
    shares = np.empty((m, v.size), dtype=np.uint64)
    shares[:-1] = gen.integers(0, 2**64, size=(m - 1, v.size), dtype=np.uint64, endpoint=False)
    # uint64 arithmetic wraps modulo 2^64, which is exactly the group we share in.
    shares[-1] = v.astype(np.uint64) - shares[:-1].sum(axis=0, dtype=np.uint64)
    return shares


def reconstruct(shares: ArrayLike) -> NDArray[np.int64]:
    """Sum shares modulo 2^64 and read the result as signed 64-bit integers."""
    s = np.asarray(shares, dtype=np.uint64)
    return s.sum(axis=0, dtype=np.uint64).view(np.int64)


@dataclass(frozen=True)
class ServerState:
    """What server j holds after the upload: the sum of its shares and its noise seed."""

    index: int
    accumulated: NDArray[np.uint64] = field(repr=False)
    noise_seed: int = field(repr=False)


@dataclass(frozen=True)
class MultiServerECDF:
    """m non-colluding servers answering ECDF queries without the clients.

    Create with :func:`multi_server_ecdf`.

    Attributes
    ----------
    grid : ndarray, shape (N,)
    servers : tuple of ServerState
    n_examples : int
        Public n (replacement neighbouring).
    mechanism : TreeMechanism
        Discrete-Laplace tree noise, Theorem 1 scale.
    """

    grid: NDArray[np.float64]
    servers: tuple[ServerState, ...]
    n_examples: int
    n_clients: int
    mechanism: TreeMechanism

    @property
    def n_servers(self) -> int:
        return len(self.servers)

    def _node_shares(self) -> PolyaShares:
        m = self.n_servers
        node_eps = self.mechanism.epsilon / self.mechanism.nodes_touched
        return PolyaShares.for_dropouts(node_eps, m, m - 1)

    def server_answer(self, j: int, positions: NDArray[np.int64]) -> NDArray[np.uint64]:
        """Server j's published words: share sums plus its noise shares (mod 2^64)."""
        server = self.servers[j]
        gen = np.random.default_rng(server.noise_seed)
        nodes = self._node_shares().sample_share(self.mechanism.n_nodes, gen)
        noise = np.asarray(path_sums(nodes, positions, self.grid.size), dtype=np.int64)
        return server.accumulated[positions] + noise.view(np.uint64)

    def query(self, points: ArrayLike | None = None) -> PrivateECDF:
        """Evaluate F̂ at grid positions ``points`` (default all) using the servers only.

        Notes
        -----
        Privacy: all queries share one tree noise, so together they are a
        single ε-DP release (charged at setup); no client participates.
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
        answers = np.stack([self.server_answer(j, pos) for j in range(self.n_servers)])
        counts = reconstruct(answers).astype(np.float64)
        return PrivateECDF(
            grid=self.grid[pos],
            counts=counts,
            total=float(self.n_examples),
            indices=pos,
            n_tree_points=n_points,
            epsilon=self.mechanism.epsilon,
            noise_scale=self.mechanism.noise_scale,
            count_variance=(self.mechanism.height + 1) * float(self._node_shares().variance),
            guarantee=self.guarantee(),
        )

    def guarantee(self) -> Guarantee:
        """ε-DP against the analyst, and against any single server (see module notes)."""
        base = self.mechanism.guarantee("example")
        return Guarantee(
            epsilon=base.epsilon,
            delta=0.0,
            unit="example",
            statement=(
                f"{base.statement}; noise assembled from {self.n_servers} server shares, any "
                f"{self.n_servers - 1} of which reach the full scale; data additively shared "
                "modulo 2^64 (no coalition of fewer than all servers learns anything)"
            ),
        )

    def cost(self, n_points_queried: int) -> dict[str, int]:
        """Words (64-bit) communicated: one-off upload and one query over B points."""
        n, m, big_n = self.n_clients, self.n_servers, self.grid.size
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
    *,
    n_servers: int = 2,
    epsilon: float,
    rng: RNGLike = None,
    ledger: BudgetLedger | None = None,
) -> MultiServerECDF:
    """Clients secret-share their prefix-indicator vectors once; servers then answer queries (§4.2).

    Parameters
    ----------
    fed : Federation
        The ECDF is of ``fed.scores``.
    grid : array_like, shape (N,)
        Public strictly increasing grid, N ≥ 2.
    n_servers : int, default 2
        m ≥ 2 servers trusted not to collude all together.
    epsilon : float
        ε > 0 for the whole function and all later queries.
    rng : int, Generator or None
        Random source for the shares and the servers' noise seeds (use a CSPRNG
        generator in deployment).
    ledger : BudgetLedger, optional
        Charged ε once, here.

    Returns
    -------
    MultiServerECDF

    Raises
    ------
    ValueError, TypeError
        Bad grid, ε ≤ 0, fewer than 2 servers, or multiclass data.

    Notes
    -----
    Privacy: ε-DP per example (Theorem 1, discrete-Laplace tree noise) for
    everything the servers publish; shares are information-theoretically
    hiding against any m - 1 servers.

    References
    ----------
    .. [1] Barczewski, Mawass & Ramon (2025), §4.2.
    """
    m = _check_servers(n_servers)
    g = check_grid(grid)
    if fed.scores.ndim != 1:
        raise ValueError("multi_server_ecdf needs one score per example (a binary-task federation)")
    mech = TreeMechanism(epsilon, int(g.size), noise="discrete")
    gen = as_generator(rng)
    if ledger is not None:
        ledger.charge(
            "multi-server private ECDF (secret-shared prefix counts, tree noise)",
            mech.epsilon,
            unit="example",
            details={"n_points": mech.n_points, "n_servers": m, "scale": mech.noise_scale},
        )
    acc = np.zeros((m, g.size), dtype=np.uint64)
    for i, child in enumerate(gen.spawn(fed.n_clients)):
        view = fed.client(i)
        acc += share_vector(prefix_counts(view.scores, g), m, child)
    seeds = gen.integers(0, 2**63 - 1, size=m)
    servers = tuple(ServerState(j, acc[j].copy(), int(seeds[j])) for j in range(m))
    return MultiServerECDF(g, servers, int(fed.n_examples), int(fed.n_clients), mech)
