"""Continual counting: linear mechanisms that release every prefix sum of a stream.

A stream x_1, ..., x_T (one coordinate of a sketch, one value per period) is
released through an integer *strategy matrix* R (m × T): row i is published at
period τ_i and reads only periods up to τ_i (causality), with independent
noise of one distribution on every row,

    y = R x + z,        Var z_i = σ² (the same for every row).

Every linear query on the periods released so far (a prefix sum, a window of
the last w periods) is answered from y. With R of full column rank, the
generalised least-squares estimate of x from the rows published by period t,

    x̂ = (R_tᵀ R_t)⁻¹ R_tᵀ y_t,     Cov x̂ = σ² (R_tᵀ R_t)⁻¹,

is the minimum-variance linear unbiased estimate of every such query (Gauss–
Markov; the noise need not be Gaussian). On the binary tree this is Honaker's
efficient estimator (Honaker 2015), here in its continual form: at period t it
uses every node closed by t. The estimate of a query q is ``u @ y_t`` with
``u = R_t (R_tᵀ R_t)⁻¹ q`` (:meth:`ContinualStrategy.query_weights`), and
the covariance of two queries is σ² u₁·u₂.

Privacy. One privacy unit changes x by Δ (a vector over periods); the rows
change by R Δ. With non-negative R, ‖R Δ‖_p ≤ max_s ‖R[:, s]‖_p · Σ_s |Δ_s|
(triangle inequality), attained when the whole change falls in the worst
period, so the sensitivity over the whole horizon is the per-period one times
the largest column norm (:attr:`ContinualStrategy.column_l1` for pure-ε
noise, :attr:`ContinualStrategy.column_l2` for Gaussian-type noise). The
release of all T periods is one mechanism: its ε is charged once.

Strategies
----------
``"tree"``
    The binary tree mechanism (Dwork, Naor, Pitassi & Rothblum 2010; Chan,
    Shi & Song 2011): one row per dyadic interval [k 2^j + 1, (k + 1) 2^j] of
    periods, published when it closes. A period lies in ⌊log₂ T⌋ + 1 of them.
    Decoded by GLS (Honaker) or ``estimator="plain"``: the sum of the at most
    ⌊log₂ T⌋ + 1 nodes of the dyadic decomposition of [1, t].
``"factorization"``
    The square-root factorization of the prefix-sum matrix A = C²
    (Fichtenberger, Henzinger & Upadhyay 2023; Henzinger, Upadhyay &
    Upadhyay 2023): C lower-triangular Toeplitz with entries
    c_k = binom(2k, k)/4^k, the coefficients of (1 − x)^(−1/2). Its column
    L2 norm and the L2 norm of each row of A C⁻¹ = C are both
    √(Σ_{k<T} c_k²) = O(√log T), against log₂ T + 1 and up to log₂ T + 1 for
    the tree. Sent in fixed point: R = round(γ C) with γ = ``resolution``
    (noise is only ever added to integers); decoding inverts that R exactly.
``"per-period"``
    R = I: every period released on its own (Chan, Shi & Song's simple
    mechanism); a cumulative sum adds t noises. Column norms 1.

References
----------
.. [1] C. Dwork, M. Naor, T. Pitassi and G. N. Rothblum, "Differential privacy
   under continual observation", STOC 2010.
.. [2] T.-H. H. Chan, E. Shi and D. Song, "Private and continual release of
   statistics", ACM TISSEC 14(3), 2011.
.. [3] J. Honaker, "Efficient use of differentially private binary trees",
   TPDP 2015.
.. [4] H. Fichtenberger, M. Henzinger and J. Upadhyay, "Constant matters:
   fine-grained error bound on differentially private continual observation",
   ICML 2023.
.. [5] M. Henzinger, J. Upadhyay and S. Upadhyay, "Almost tight error bounds on
   differentially private continual counting", SODA 2023.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from scipy.linalg import cho_factor, cho_solve

from fedeval.validation import check_int_at_least

__all__ = [
    "MAX_HORIZON",
    "STRATEGIES",
    "ContinualStrategy",
    "Estimator",
    "StrategyName",
    "continual_strategy",
    "sqrt_coefficients",
]

StrategyName = Literal["tree", "factorization", "per-period"]
Estimator = Literal["gls", "plain"]
STRATEGIES: tuple[str, ...] = ("tree", "factorization", "per-period")

MAX_HORIZON = 1024
"""Longest horizon: GLS decoding factors a t × t matrix once per current period."""

#: γ of the fixed-point square-root factorization (entries round(γ c_k) ≥ 18 for T ≤ 1024).
DEFAULT_RESOLUTION = 1024


def sqrt_coefficients(n: int) -> NDArray[np.float64]:
    """c_0..c_{n−1} of (1 − x)^(−1/2): c_0 = 1, c_k = c_{k−1}·(2k − 1)/(2k) = binom(2k, k)/4^k.

    The lower-triangular Toeplitz matrix C of these coefficients squares to the
    lower-triangular matrix of ones (the prefix sums): Σ_{j≤k} c_j c_{k−j} = 1.
    """
    k = np.arange(1, max(int(n), 1), dtype=np.float64)
    return np.concatenate(([1.0], np.cumprod((2.0 * k - 1.0) / (2.0 * k))))[: max(int(n), 0)]


@dataclass(frozen=True, eq=False)
class ContinualStrategy:
    """A causal linear continual-release strategy over ``horizon`` periods.

    Attributes
    ----------
    name : {"tree", "factorization", "per-period"}
    matrix : ndarray of int64, shape (m, T)
        R; rows sorted by release period, so the rows published by period t
        are the first :meth:`n_released` ones.
    release_period : ndarray of int64, shape (m,)
        τ_i (1-based): row i is published at the end of period τ_i and reads
        only periods 1..τ_i.
    estimator : {"gls", "plain"}
        "gls": generalised least squares on every row published so far
        (Honaker's estimator on the tree). "plain" (tree only): the dyadic
        decomposition of each prefix, each prefix read when it was released.
    resolution : float
        γ of a fixed-point strategy (the factorization); 1 otherwise.
    """

    name: str
    matrix: NDArray[np.int64]
    release_period: NDArray[np.int64]
    estimator: Estimator = "gls"
    resolution: float = 1.0
    _gls_cache: dict[int, Any] = field(default_factory=dict, init=False, repr=False)
    _node_index: dict[tuple[int, int], int] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        r = np.array(self.matrix, dtype=np.int64)
        tau = np.array(self.release_period, dtype=np.int64)
        r.flags.writeable = False
        tau.flags.writeable = False
        # Read-only copies: a cached strategy is shared by every monitor of its horizon.
        object.__setattr__(self, "matrix", r)
        object.__setattr__(self, "release_period", tau)
        if r.ndim != 2 or tau.shape != (r.shape[0],):
            raise ValueError("matrix must be (m, T) with one release period per row")
        if np.any(np.diff(tau) < 0):
            raise ValueError("rows must be sorted by release period")
        cols = np.arange(1, r.shape[1] + 1)
        if np.any((r != 0) & (cols[None, :] > tau[:, None])):
            raise ValueError("a row reads a period after its release: the strategy is not causal")
        if self.estimator not in ("gls", "plain"):
            raise ValueError(f"estimator must be 'gls' or 'plain', got {self.estimator!r}")
        if self.estimator == "plain" and self.name != "tree":
            raise ValueError("estimator='plain' is the binary tree's dyadic decomposition")

    # ------------------------------------------------------------- geometry
    @property
    def horizon(self) -> int:
        return int(self.matrix.shape[1])

    @property
    def n_rows(self) -> int:
        return int(self.matrix.shape[0])

    @functools.cached_property
    def column_l1(self) -> float:
        """max_s Σ_i |R[i, s]|: the L1 norm one unit of one period can move the rows by."""
        return float(np.abs(self.matrix).sum(axis=0).max())

    @functools.cached_property
    def column_l2(self) -> float:
        """max_s (Σ_i R[i, s]²)^½."""
        m = self.matrix.astype(np.float64)
        return float(math.sqrt(float((m * m).sum(axis=0).max())))

    def n_released(self, t: int) -> int:
        """Rows published by the end of period ``t`` (0 ≤ t ≤ T)."""
        return int(np.searchsorted(self.release_period, int(t), side="right"))

    def rows_released_at(self, t: int) -> NDArray[np.intp]:
        """Indices of the rows published at the end of period ``t``."""
        return np.arange(self.n_released(t - 1), self.n_released(t))

    def rows_reading(self, t: int) -> NDArray[np.intp]:
        """Rows whose value depends on period ``t`` (the running sums period t adds to)."""
        return np.flatnonzero(self.matrix[:, int(t) - 1])

    def row_periods(self, row: int) -> tuple[int, int]:
        """(first, last) period a row reads (its support, for tree nodes an interval)."""
        nz = np.flatnonzero(self.matrix[int(row)])
        return int(nz[0]) + 1, int(nz[-1]) + 1

    # -------------------------------------------------------------- queries
    def _check_query(self, t_now: int, start: int, stop: int) -> None:
        if not 1 <= t_now <= self.horizon:
            raise ValueError(f"t_now must lie in 1..{self.horizon}, got {t_now}")
        if not 0 <= start < stop <= t_now:
            raise ValueError(
                f"a query covers periods start+1..stop with 0 <= start < stop <= {t_now} "
                f"(the periods released so far), got start={start}, stop={stop}"
            )

    def query_weights(self, t_now: int, start: int, stop: int) -> NDArray[np.float64]:
        """Weights u on the rows published by ``t_now`` with u @ y ≈ Σ_{start < s ≤ stop} x_s.

        Unbiased: u @ R[:n, :] is the indicator of periods start+1..stop.

        Parameters
        ----------
        t_now : int
            The current period (rows published by its end are used).
        start, stop : int
            0 ≤ start < stop ≤ t_now.

        Returns
        -------
        ndarray of float64, shape (n_released(t_now),)
        """
        self._check_query(t_now, start, stop)
        if self.estimator == "plain":
            u = np.zeros(self.n_released(t_now))
            u[self._dyadic(stop)] += 1.0
            if start:
                u[self._dyadic(start)] -= 1.0
            return u
        q = np.zeros(t_now)
        q[start:stop] = 1.0
        return self.query_weights_matrix(t_now, q[None, :])[0]

    def query_weights_matrix(self, t_now: int, q: NDArray[np.float64]) -> NDArray[np.float64]:
        """GLS weights of several period-weighted queries at once: rows of ``q`` (k, t_now)."""
        rt, factor = self._gls(t_now)
        g = cho_solve(factor, np.asarray(q, dtype=np.float64).T)
        return np.asarray((rt @ g).T, dtype=np.float64)

    def variance_factor(self, t_now: int, start: int, stop: int) -> float:
        """Var(estimate of Σ_{start<s≤stop} x_s) / σ²: ‖u‖²."""
        u = self.query_weights(t_now, start, stop)
        return float(u @ u)

    def _gls(self, t_now: int) -> tuple[NDArray[np.float64], Any]:
        """R restricted to the rows published by t_now (and its periods), with a Cholesky factor."""
        hit: tuple[NDArray[np.float64], Any] | None = self._gls_cache.get(t_now)
        if hit is None:
            n = self.n_released(t_now)
            rt = self.matrix[:n, :t_now].astype(np.float64)
            hit = (rt, cho_factor(rt.T @ rt, lower=True))
            if len(self._gls_cache) >= 4:  # a few current periods at a time: O(t²) memory each
                self._gls_cache.clear()
            self._gls_cache[t_now] = hit
        return hit

    def _dyadic(self, t: int) -> NDArray[np.intp]:
        """Tree rows of the dyadic decomposition of [1, t], largest interval first."""
        rows: list[int] = []
        pos = 0
        j = int(self.horizon).bit_length()
        while pos < t and j >= 0:
            size = 1 << j
            if pos + size <= t:
                rows.append(self._tree_row(pos + 1, pos + size))
                pos += size
            else:
                j -= 1
        return np.asarray(rows, dtype=np.intp)

    def _tree_row(self, first: int, last: int) -> int:
        if not self._node_index:
            self._node_index.update({self.row_periods(i): i for i in range(self.n_rows)})
        return self._node_index[(first, last)]

    @functools.cached_property
    def _prefix_factors(self) -> NDArray[np.float64]:
        return self._compute_prefix_factors()

    def prefix_variance_factors(self) -> NDArray[np.float64]:
        """Var(ŝ_t)/σ² for t = 1..T (see :meth:`_compute_prefix_factors`), computed once."""
        return self._prefix_factors.copy()

    def _compute_prefix_factors(self) -> NDArray[np.float64]:
        """Var(ŝ_t)/σ² for t = 1..T, each prefix estimated from the rows published by t.

        Closed forms, O(T log T) or O(T²), equal to :meth:`variance_factor`
        (tested):

        * tree, GLS: the rows published by t are the complete subtrees of the
          dyadic decomposition of [1, t], disjoint in their periods, so the
          prefix's variance is the sum of theirs; the BLUE of a complete
          subtree's total from its own nodes has variance v_j (2^j leaves),
          v_0 = 1, v_j = 1 / (1 + 1/(2 v_{j−1})) (Hay et al. 2010's bottom-up
          pass, Honaker 2015);
        * tree, plain: the number of nodes in the decomposition (the 1-bits of t);
        * square strategies (factorization, per-period): the rows of R are
          all published by their own period and R is invertible, so the
          prefix estimate is (A R⁻¹ y)_t and its variance the squared norm of
          row t of A R⁻¹.
        """
        t = np.arange(1, self.horizon + 1)
        if self.name == "tree":
            bits = [(t >> j) & 1 for j in range(int(self.horizon).bit_length())]
            if self.estimator == "plain":
                return np.asarray(sum(bits), dtype=np.float64)
            v = [1.0]
            for _ in range(1, len(bits)):
                v.append(1.0 / (1.0 + 1.0 / (2.0 * v[-1])))
            return np.asarray(sum(b * vj for b, vj in zip(bits, v, strict=True)), dtype=np.float64)
        from scipy.linalg import solve_triangular

        r = self.matrix.astype(np.float64)
        # rows of A R⁻¹ = cumulative sums of the rows of R⁻¹
        inv = solve_triangular(r, np.eye(self.horizon), lower=True)
        rows = np.cumsum(inv, axis=0)
        return np.asarray(np.sum(rows * rows, axis=1), dtype=np.float64)

    def describe(self) -> str:
        """The strategy in words, for receipts."""
        t = self.horizon
        if self.name == "tree":
            how = "Honaker's GLS estimate" if self.estimator == "gls" else "dyadic decomposition"
            return (
                f"binary tree mechanism over {t} periods ({self.n_rows} dyadic nodes, each "
                f"period in at most {self.column_l1:g}; prefixes by {how})"
            )
        if self.name == "factorization":
            return (
                f"square-root factorization of the {t}-period prefix-sum matrix (lower-"
                f"triangular Toeplitz, c_k = binom(2k,k)/4^k, fixed point ×{self.resolution:g}; "
                f"column L1 {self.column_l1:g}, L2 {self.column_l2:.6g} in fixed-point units)"
            )
        return f"every one of {t} periods released on its own (cumulative sums add t noises)"


def _tree_matrix(horizon: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    rows: list[tuple[int, int, int]] = []  # (release period, size, first)
    size = 1
    while size <= horizon:
        for k in range(horizon // size):
            rows.append(((k + 1) * size, size, k * size + 1))
        size *= 2
    rows.sort()
    r = np.zeros((len(rows), horizon), dtype=np.int64)
    for i, (_, size_, first) in enumerate(rows):
        r[i, first - 1 : first - 1 + size_] = 1
    return r, np.array([tau for tau, _, _ in rows], dtype=np.int64)


@functools.lru_cache(maxsize=64)
def continual_strategy(
    name: str,
    horizon: int,
    *,
    estimator: Estimator = "gls",
    resolution: int = DEFAULT_RESOLUTION,
) -> ContinualStrategy:
    """Build a strategy (see the module docstring).

    Parameters
    ----------
    name : {"tree", "factorization", "per-period"}
    horizon : int
        T, 1 ≤ T ≤ :data:`MAX_HORIZON`.
    estimator : {"gls", "plain"}
        "plain" only for the tree.
    resolution : int
        γ ≥ 1 of the fixed-point factorization.

    Raises
    ------
    ValueError
        An unknown name, a horizon out of range, a bad estimator.

    Notes
    -----
    A pure function of public inputs, cached: monitors of the same horizon
    share one strategy (and its decoding caches).
    """
    t = check_int_at_least(horizon, 1, name="horizon")
    if t > MAX_HORIZON:
        raise ValueError(f"horizon must be at most {MAX_HORIZON}, got {t}")
    if name == "tree":
        r, tau = _tree_matrix(t)
        return ContinualStrategy("tree", r, tau, estimator)
    if name == "factorization":
        g = check_int_at_least(resolution, 1, name="resolution")
        c = np.rint(g * sqrt_coefficients(t)).astype(np.int64)
        idx = np.arange(t)
        lag = idx[:, None] - idx[None, :]
        r = np.where(lag >= 0, c[np.clip(lag, 0, None)], 0).astype(np.int64)
        return ContinualStrategy("factorization", r, idx + 1, estimator, float(g))
    if name == "per-period":
        return ContinualStrategy(
            "per-period", np.eye(t, dtype=np.int64), np.arange(1, t + 1), estimator
        )
    raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, got {name!r}")
