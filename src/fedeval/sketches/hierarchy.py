"""b-ary hierarchical histograms of scores, per class, under every privacy model.

Geometry
--------
The public score domain ``[lo, hi]`` is cut, at level ``k = 1..h``, into ``b^k``
equal-width nodes (Cormode–Markov §2.3 with b = 2; Xu–Cormode §3.2 with general
branching b). Leaves are level h. Each example falls in exactly one node per
level. There is no root node (the papers' levels start at 1); totals are sums of
level 1. A flat histogram of B bins is the special case ``height=1,
branching=B``.

Release (encode → federated sum → decode)
-----------------------------------------
* Secure aggregation: clients send leaf counts only; upper levels are exact sums.
* Distributed DP, ``level_budget="split"``: clients send every level; every node
  gets a noise share calibrated to ε/h (one example touches h nodes, one per
  level), so the release is ε-DP by basic composition over levels. This is the
  papers' default.
* Distributed DP, ``level_budget="assign"``: clients are split uniformly at
  random into h groups; a group reports only one level, with noise for the full
  ε (parallel composition). Level counts are scaled by M/m_k (clients over
  clients in group k), unbiased under the random split, at the price of a
  sampling error that the node variances include.
* Local DP: clients are split into h groups; each example sends one OUE (or RR)
  report of its (class, node) at its group's level; estimates are debiased and
  scaled by M/m_k.

Decoding
--------
:meth:`HierarchicalHistogram.consistent` applies the consistency post-processing
of Hay et al. (2010) (weighted averaging bottom-up, mean consistency top-down),
Xu–Cormode §2.2/§5. Queries (prefix/range counts, quantiles, equi-depth
boundaries) work on raw or consistent trees.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Literal, cast

import numpy as np
from numpy.typing import NDArray

from fedeval.aggregation import (
    FrequencyOracle,
    Path,
    assign_groups,
    federated_frequencies,
    federated_sum,
    limit_contributions,
)
from fedeval.data import Federation
from fedeval.privacy.guarantee import Guarantee
from fedeval.privacy.ledger import BudgetLedger, LedgerEntry
from fedeval.privacy.models import DistributedDP, LocalDP, PrivacyModel, SecureAggregation
from fedeval.randomness import RNGLike, as_generator
from fedeval.sketches.histogram import UniformGrid, class_leaf_counts
from fedeval.validation import check_int_at_least

__all__ = [
    "HierarchicalHistogram",
    "HierarchySpec",
    "LevelBudget",
    "decode_ldp_levels",
    "release_hierarchy",
]

LevelBudget = Literal["split", "assign"]

# Above this many leaves the dense per-level arrays stop being "small summaries".
_MAX_LEAVES = 1 << 24


@dataclass(frozen=True)
class HierarchySpec:
    """Shape of a hierarchy: height h, branching b, score domain, number of classes."""

    height: int
    branching: int = 2
    score_range: tuple[float, float] = (0.0, 1.0)
    n_classes: int = 2

    def __post_init__(self) -> None:
        check_int_at_least(self.height, 1, name="height")
        check_int_at_least(self.branching, 2, name="branching")
        check_int_at_least(self.n_classes, 1, name="n_classes")
        if self.branching**self.height > _MAX_LEAVES:
            raise ValueError(
                f"branching**height = {self.branching}**{self.height} leaves is too many "
                f"(limit {_MAX_LEAVES}); lower the height"
            )
        UniformGrid(1, self.score_range)  # validates the range

    @property
    def n_leaves(self) -> int:
        return int(self.branching**self.height)

    @property
    def grid(self) -> UniformGrid:
        """The leaf grid."""
        return UniformGrid(self.n_leaves, self.score_range)

    @property
    def leaf_width(self) -> float:
        return self.grid.width

    def level_size(self, level: int) -> int:
        """Nodes per class at ``level`` (1..h)."""
        return int(self.branching**level)

    @property
    def nodes_per_class(self) -> int:
        return sum(self.level_size(k) for k in range(1, self.height + 1))

    @property
    def vector_length(self) -> int:
        """Length of a client's all-levels vector (every class, every level)."""
        return self.n_classes * self.nodes_per_class

    def levels_from_leaves(self, leaves: NDArray[Any]) -> list[NDArray[Any]]:
        """Exact level counts, shape (C, b^k) for k = 1..h, from leaf counts (C, b^h)."""
        c = leaves.shape[0]
        return [
            leaves.reshape(c, self.level_size(k), -1).sum(axis=2) for k in range(1, self.height + 1)
        ]

    def flatten(self, levels: list[NDArray[Any]]) -> NDArray[Any]:
        """Levels → one vector, level-major, then class, then node."""
        return np.concatenate([lv.ravel() for lv in levels])

    def unflatten(self, vector: NDArray[Any]) -> list[NDArray[Any]]:
        """Inverse of :meth:`flatten`."""
        out, start = [], 0
        for k in range(1, self.height + 1):
            size = self.n_classes * self.level_size(k)
            out.append(vector[start : start + size].reshape(self.n_classes, -1))
            start += size
        return out

    def encode_levels(
        self,
        scores: NDArray[np.float64],
        labels: NDArray[np.int64],
        level_of_example: NDArray[np.int64] | None = None,
    ) -> NDArray[np.int64]:
        """The all-levels count vector of some examples (a client's, or everyone's).

        With ``level_of_example`` each example is counted only at its level (the
        "assign" strategy); otherwise at every level.
        """
        if level_of_example is None:
            leaves = class_leaf_counts(self.grid, scores, labels, self.n_classes)[0]
            return self.flatten(self.levels_from_leaves(leaves))
        per_group = class_leaf_counts(
            self.grid, scores, labels, self.n_classes, group=level_of_example, n_groups=self.height
        )
        levels = [
            self.levels_from_leaves(per_group[k - 1])[k - 1] for k in range(1, self.height + 1)
        ]
        return self.flatten(levels)


@dataclass(frozen=True)
class HierarchicalHistogram:
    """Released per-class hierarchical histogram, with the variance of every node.

    Attributes
    ----------
    spec : HierarchySpec
    levels : tuple of ndarray, shape (n_classes, b^k) for k = 1..h
        Estimated counts (float; may be negative under DP).
    node_variance : tuple of ndarray, same shapes
        Variance of each estimate from the known noise (and, for level
        assignment, the sampling of clients into levels).
    consistent : bool
        Whether :meth:`consistent` post-processing has been applied.
    guarantee : Guarantee
    ledger_entries : tuple of LedgerEntry
        What this release charged, one entry per budget share.
    n_clients : int
    privacy : str
        Description of the privacy model.
    """

    spec: HierarchySpec
    levels: tuple[NDArray[np.float64], ...]
    node_variance: tuple[NDArray[np.float64], ...]
    guarantee: Guarantee
    ledger_entries: tuple[LedgerEntry, ...] = ()
    n_clients: int = 0
    privacy: str = ""
    consistent_: bool = field(default=False)
    _level_weights: tuple[float, ...] | None = field(default=None, repr=False)

    # ---------------------------------------------------------------- basics
    @property
    def height(self) -> int:
        return self.spec.height

    @property
    def branching(self) -> int:
        return self.spec.branching

    @property
    def is_consistent(self) -> bool:
        return self.consistent_

    @property
    def leaves(self) -> NDArray[np.float64]:
        """Leaf counts, shape (n_classes, b^h)."""
        return self.levels[-1]

    def totals(self) -> NDArray[np.float64]:
        """Estimated number of examples per class (sum of level 1)."""
        return self.levels[0].sum(axis=1)

    def total_variance(self) -> NDArray[np.float64]:
        """Variance of :meth:`totals` per class."""
        if self.consistent_:
            q = np.ones(self.spec.n_leaves)
            return np.array(
                [
                    self._consistent_query_variance(q[None, :], c)[0]
                    for c in range(self.spec.n_classes)
                ]
            )
        return self.node_variance[0].sum(axis=1)

    # ------------------------------------------------------- post-processing
    def consistent(self) -> HierarchicalHistogram:
        """Consistency post-processing (Hay et al. 2010), an explicit named step.

        Phase 1, bottom-up weighted averaging: a node's own estimate x (variance
        v) and the sum s of its children's phase-1 estimates (variance b·v') are
        combined with inverse-variance weights, z = (x/v + s/(b v'))/(1/v + 1/(b v')).
        Phase 2, top-down mean consistency: each child gets its phase-1 value
        plus an equal share of the gap between its parent's final value and the
        sum of the siblings' phase-1 values. The result is the minimum-variance
        linear unbiased estimate when nodes of a level share one variance
        (Hay et al. Theorem 3); where node variances differ within a level (level
        assignment, LDP), the level mean is used as the weight.

        Post-processing only: it costs no privacy budget. It never increases the
        variance of a range query (tested against the closed form).

        References
        ----------
        xu-cormode-2025-federated-roc-pr §2.2 and §5; Hay, Rastogi, Miklau and
        Suciu, "Boosting the accuracy of differentially private histograms
        through consistency", PVLDB 3(1), 2010.
        """
        if self.consistent_:
            return self
        h, b = self.height, self.branching
        v = [float(np.mean(nv)) for nv in self.node_variance]
        if all(x == 0.0 for x in v):
            # Exact counts (secure aggregation) are consistent already.
            return replace(self, consistent_=True, _level_weights=tuple([1.0] * h))
        # Phase 1: bottom-up.
        z: list[NDArray[np.float64]] = [np.empty(0)] * h
        var_z = [0.0] * h
        a = [1.0] * h  # weight on a node's own estimate
        z[h - 1] = self.levels[h - 1].astype(np.float64, copy=True)
        var_z[h - 1] = v[h - 1]
        for k in range(h - 2, -1, -1):
            s = _sum_children(z[k + 1], b)
            var_s = b * var_z[k + 1]
            if v[k] == 0.0:
                a[k] = 1.0
            elif var_s == 0.0:
                a[k] = 0.0
            else:
                a[k] = (1.0 / v[k]) / (1.0 / v[k] + 1.0 / var_s)
            z[k] = a[k] * self.levels[k] + (1.0 - a[k]) * s
            var_z[k] = a[k] * v[k] if v[k] > 0 else 0.0  # = 1/(1/v + 1/var_s)
        # Phase 2: top-down.
        u = [z[0]]
        for k in range(1, h):
            gap = u[k - 1] - _sum_children(z[k], b)
            u.append(z[k] + np.repeat(gap, b, axis=1) / b)
        # node_variance keeps the raw variances: query variances on the consistent
        # tree are computed exactly from them (see _consistent_query_variance).
        return replace(self, levels=tuple(u), consistent_=True, _level_weights=tuple(a))

    # ---------------------------------------------------------------- queries
    def prefix_counts(
        self, thresholds: Any, *, cls: int | None = None, with_variance: bool = True
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Estimated number of examples with score below each threshold, and its variance.

        Thresholds on leaf edges are answered exactly from the minimal set of
        nodes (at most (b−1)·h of them: the base-b digits of the leaf index).
        Inside a leaf, the leaf's count is interpolated linearly (uniform mass
        within a leaf), so the bucketization error is at most one leaf's count.

        Parameters
        ----------
        thresholds : array-like of float
            Points of the score domain.
        cls : int, optional
            Class to count; None sums all classes.
        with_variance : bool
            False skips the (exact, O(queries × leaves)) variance computation
            and returns NaN variances; for bootstrap loops.

        Returns
        -------
        counts, variance : ndarray of float64, shape of ``thresholds``

        Raises
        ------
        ValueError
            A threshold outside the score domain.
        """
        t = np.asarray(thresholds, dtype=np.float64)
        lo, hi = self.spec.score_range
        if not np.isfinite(t).all() or (t < lo).any() or (t > hi).any():
            raise ValueError(f"thresholds must lie in the score domain [{lo}, {hi}]")
        flat = t.ravel()
        r, frac = self.spec.grid.locate(flat)
        classes = range(self.spec.n_classes) if cls is None else [self._check_cls(cls)]
        counts = np.zeros(flat.shape)
        variance = np.zeros(flat.shape)
        leaf_idx = np.minimum(r, self.spec.n_leaves - 1)
        for c in classes:
            base, node_var = self._prefix_at_leaf_edges(r, c)
            leaf = self.levels[-1][c, leaf_idx]
            counts += base + frac * leaf
            if not with_variance:
                variance[:] = np.nan
            elif self.consistent_:
                variance += self._consistent_query_variance(
                    _prefix_weights(r, frac, self.spec.n_leaves), c
                )
            else:
                variance += node_var + frac**2 * self.node_variance[-1][c, leaf_idx]
        return counts.reshape(t.shape), variance.reshape(t.shape)

    def range_counts(
        self, low: Any, high: Any, *, cls: int | None = None
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Estimated number of examples with ``low <= score < high``, and its variance.

        On a raw tree the range is answered from its minimal node set (the
        greedy decomposition of the range's leaf weights), and the variance is
        that of this very estimate. On a consistent tree every node set gives
        the same answer; the variance is propagated through the consistency map.
        Partial leaves at either end are interpolated as in :meth:`prefix_counts`.
        """
        lo_t = np.asarray(low, dtype=np.float64)
        hi_t = np.asarray(high, dtype=np.float64)
        if lo_t.shape != hi_t.shape or (lo_t > hi_t).any():
            raise ValueError("low and high must have the same shape with low <= high")
        d_lo, d_hi = self.spec.score_range
        for t in (lo_t, hi_t):
            if not np.isfinite(t).all() or (t < d_lo).any() or (t > d_hi).any():
                raise ValueError(f"range ends must lie in the score domain [{d_lo}, {d_hi}]")
        n = self.spec.n_leaves
        r_lo, f_lo = self.spec.grid.locate(lo_t.ravel())
        r_hi, f_hi = self.spec.grid.locate(hi_t.ravel())
        w = _prefix_weights(r_hi, f_hi, n) - _prefix_weights(r_lo, f_lo, n)
        classes = range(self.spec.n_classes) if cls is None else [self._check_cls(cls)]
        est = np.zeros(lo_t.size)
        var = np.zeros(lo_t.size)
        for c in classes:
            if self.consistent_:
                est += w @ self.levels[-1][c]
                var += self._consistent_query_variance(w, c)
            else:
                node_w = self._raw_node_weights(w)
                est += sum(nw @ lv[c] for nw, lv in zip(node_w, self.levels, strict=True))
                var += self._query_variance(node_w, c)
        return est.reshape(lo_t.shape), var.reshape(lo_t.shape)

    def quantiles(self, q: Any, *, cls: int | None = None) -> NDArray[np.float64]:
        """Scores below which a fraction ``q`` of the (class's) examples lie.

        Found by descending the tree: at each level the child whose cumulative
        count first reaches the target is entered (negative noisy counts count
        as zero, a post-processing choice). In the leaf, the point is placed by
        linear interpolation of the residual target over the leaf's count rather
        than at the leaf's lower edge: with mass spread inside the leaf the lower
        edge is biased low by up to one leaf width, while interpolation is exact
        for uniform mass within the leaf and never errs by more than a leaf
        width. This matters for coarse (LDP) trees and for ROC/PR curves built
        from many quantiles (Xu–Cormode §3.1).

        Parameters
        ----------
        q : array-like of float in [0, 1]
        cls : int, optional
            Class whose quantiles are wanted; None for all examples.

        Returns
        -------
        ndarray of float64, shape of ``q``
        """
        qs = np.asarray(q, dtype=np.float64)
        if not np.isfinite(qs).all() or (qs < 0).any() or (qs > 1).any():
            raise ValueError("quantile levels q must lie in [0, 1]")
        levels = [self._class_level(k, cls) for k in range(self.height)]
        levels = [np.maximum(lv, 0.0) for lv in levels]
        total = levels[0].sum()
        flat = qs.ravel()
        lo, _ = self.spec.score_range
        if total <= 0:
            return np.full(qs.shape, np.nan)
        residual = flat * total
        node = np.zeros(flat.shape, dtype=np.int64)
        b = self.branching
        for k in range(self.height):
            children = (
                node[:, None] * b + np.arange(b)
                if k > 0
                else np.broadcast_to(np.arange(b), (flat.size, b))
            )
            cnt = levels[k][children]
            cum = np.cumsum(cnt, axis=1)
            # first child whose cumulative count reaches the residual target
            # (a zero target skips empty children, so q=0 is the first occupied leaf)
            below = np.where(residual[:, None] > 0, cum < residual[:, None] * (1 - 1e-12), cum <= 0)
            pick = np.minimum(below.sum(axis=1), b - 1)
            before = np.where(
                pick > 0, np.take_along_axis(cum, (pick - 1)[:, None], axis=1)[:, 0], 0.0
            )
            residual = residual - before
            node = children[np.arange(flat.size), pick]
        leaf_count = levels[-1][node]
        with np.errstate(divide="ignore", invalid="ignore"):
            frac = np.where(leaf_count > 0, residual / leaf_count, 0.0)
        frac = np.clip(frac, 0.0, 1.0)
        points = np.asarray(lo + (node + frac) * self.spec.leaf_width, dtype=np.float64)
        return points.reshape(qs.shape)

    def equi_depth_edges(self, n_buckets: int, *, cls: int | None = None) -> NDArray[np.float64]:
        """Boundaries of ``n_buckets`` buckets holding (about) equal numbers of examples.

        Returns ``n_buckets + 1`` non-decreasing edges, the first and last being
        the domain ends. Data-dependent, but computed from the released tree, so
        post-processing (no privacy cost).
        """
        nb = check_int_at_least(n_buckets, 1, name="n_buckets")
        lo, hi = self.spec.score_range
        inner = self.quantiles(np.arange(1, nb) / nb, cls=cls)
        return np.concatenate(([lo], np.maximum.accumulate(inner), [hi]))

    def leaf_query_variance(self, weights: Any, cls: int) -> NDArray[np.float64]:
        """Exact noise variance of linear queries ``weights @ leaves[cls]``.

        Parameters
        ----------
        weights : array-like, shape (m, n_leaves) or (n_leaves,)
            Leaf weights of m linear queries on one class (e.g. the linearised
            ratio of a delta-method standard error).
        cls : int

        Returns
        -------
        ndarray of float64, shape (m,)
            On a consistent tree, propagated exactly through the consistency
            map; on a raw tree, over the minimal node set.
        """
        w = np.atleast_2d(np.asarray(weights, dtype=np.float64))
        if w.shape[1] != self.spec.n_leaves:
            raise ValueError(f"weights must have {self.spec.n_leaves} columns, got {w.shape[1]}")
        c = self._check_cls(cls)
        if self.consistent_:
            return self._consistent_query_variance(w, c)
        return self._raw_query_variance(w, c)

    def leaf_query_covariance(self, weights: Any, cls: int) -> NDArray[np.float64]:
        """Exact noise covariance matrix of linear queries ``weights @ leaves[cls]``.

        Parameters
        ----------
        weights : array-like, shape (m, n_leaves)
        cls : int

        Returns
        -------
        ndarray of float64, shape (m, m)
        """
        w = np.atleast_2d(np.asarray(weights, dtype=np.float64))
        if w.shape[1] != self.spec.n_leaves:
            raise ValueError(f"weights must have {self.spec.n_leaves} columns, got {w.shape[1]}")
        c = self._check_cls(cls)
        node_w = self._node_weights(w)
        return np.asarray(
            sum((nw * v[c]) @ nw.T for nw, v in zip(node_w, self.node_variance, strict=True)),
            dtype=np.float64,
        )

    def perturbed(self, rng: np.random.Generator) -> HierarchicalHistogram:
        """A parametric-bootstrap replicate: this tree's leaves as the truth, fresh noise.

        The exact level counts implied by the (consistent) leaves get new
        Gaussian noise with each node's known variance, and consistency is
        applied again if it was applied here. Post-processing of released
        values only: no privacy cost. The normal approximation to the discrete
        noise is stated wherever bootstrap errors are reported.
        """
        truth = self.spec.levels_from_leaves(self.levels[-1])
        noisy = tuple(
            t + rng.standard_normal(t.shape) * np.sqrt(v)
            for t, v in zip(truth, self.node_variance, strict=True)
        )
        raw = replace(self, levels=noisy, consistent_=False, _level_weights=None)
        return raw.consistent() if self.consistent_ else raw

    # --------------------------------------------------------------- internal
    def _check_cls(self, cls: int) -> int:
        if not 0 <= int(cls) < self.spec.n_classes:
            raise ValueError(f"cls must lie in 0..{self.spec.n_classes - 1}, got {cls}")
        return int(cls)

    def _class_level(self, k: int, cls: int | None) -> NDArray[np.float64]:
        lv = self.levels[k]
        return lv.sum(axis=0) if cls is None else lv[self._check_cls(cls)]

    def _prefix_at_leaf_edges(
        self, r: NDArray[np.int64], c: int
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Count below leaf edge r from the minimal node set, and its raw-tree variance."""
        h, b = self.height, self.branching
        out = np.zeros(r.shape)
        var = np.zeros(r.shape)
        for k in range(1, h + 1):
            hi_node = r // b ** (h - k)
            # Level 1 has no parent (no root): its prefix always starts at node 0,
            # which also makes r = n_leaves (the top edge) the total.
            lo_node = (r // b ** (h - k + 1)) * b if k > 1 else np.zeros_like(r)
            cs = np.concatenate(([0.0], np.cumsum(self.levels[k - 1][c])))
            out += cs[hi_node] - cs[lo_node]
            vs = np.concatenate(([0.0], np.cumsum(self.node_variance[k - 1][c])))
            var += vs[hi_node] - vs[lo_node]
        return out, var

    def _raw_node_weights(self, w_leaves: NDArray[np.float64]) -> list[NDArray[np.float64]]:
        """Node weights of leaf-weighted queries answered from the minimal node set of a raw tree.

        A weight vector that is constant over a node's leaves uses that node; the
        greedy choice of the highest such nodes is the minimal decomposition.
        """
        h, b = self.height, self.branching
        out = []
        remaining = w_leaves.copy()
        for k in range(1, h + 1):
            blocks = remaining.reshape(remaining.shape[0], b**k, -1)
            const = np.all(blocks == blocks[:, :, :1], axis=2)
            weight = np.where(const, blocks[:, :, 0], 0.0)
            out.append(weight)
            remaining = (blocks - weight[:, :, None]).reshape(remaining.shape)
        return out

    def _consistent_node_weights(self, w_leaves: NDArray[np.float64]) -> list[NDArray[np.float64]]:
        """Weights on the raw nodes of leaf-weighted queries on the consistent tree.

        The two consistency passes are linear maps; the query weights are pushed
        back through their transposes to weights on the raw nodes, whose noise
        is independent.
        """
        h, b = self.height, self.branching
        a = self._level_weights or tuple([1.0] * h)
        m = w_leaves.shape[0]
        # Transpose of phase 2 (top-down): g_u[k] = q_k + S g_u[k+1] / b, leaves carry the query.
        g_u: list[NDArray[np.float64]] = [np.zeros((m, b ** (k + 1))) for k in range(h)]
        g_u[h - 1] = w_leaves.astype(np.float64)
        for k in range(h - 2, -1, -1):
            g_u[k] = _sum_children(g_u[k + 1], b) / b
        g_z = [g_u[0]]
        for k in range(1, h):
            g_z.append(g_u[k] - np.repeat(_sum_children(g_u[k], b), b, axis=1) / b)
        # Transpose of phase 1 (bottom-up).
        out = []
        big_g = g_z[0]
        for k in range(h):
            if k > 0:
                big_g = g_z[k] + (1.0 - a[k - 1]) * np.repeat(big_g, b, axis=1)
            out.append(a[k] * big_g if k < h - 1 else big_g)
        return out

    def _node_weights(self, w_leaves: NDArray[np.float64]) -> list[NDArray[np.float64]]:
        if self.consistent_:
            return self._consistent_node_weights(w_leaves)
        return self._raw_node_weights(w_leaves)

    def _raw_query_variance(self, w_leaves: NDArray[np.float64], c: int) -> NDArray[np.float64]:
        return self._query_variance(self._raw_node_weights(w_leaves), c)

    def _consistent_query_variance(
        self, w_leaves: NDArray[np.float64], c: int
    ) -> NDArray[np.float64]:
        return self._query_variance(self._consistent_node_weights(w_leaves), c)

    def _query_variance(self, node_w: list[NDArray[np.float64]], c: int) -> NDArray[np.float64]:
        """Var = Σ_nodes weight² · variance (independent node noise)."""
        return np.asarray(
            sum((w**2) @ v[c] for w, v in zip(node_w, self.node_variance, strict=True)),
            dtype=np.float64,
        )


def _sum_children(arr: NDArray[np.float64], b: int) -> NDArray[np.float64]:
    return arr.reshape(arr.shape[0], -1, b).sum(axis=2)


def _prefix_weights(
    r: NDArray[np.int64], frac: NDArray[np.float64], n_leaves: int
) -> NDArray[np.float64]:
    """Leaf weights of 'count below edge r, plus frac of leaf r' queries, shape (m, n_leaves)."""
    idx = np.arange(n_leaves)
    w = (idx[None, :] < r[:, None]).astype(np.float64)
    inside = r < n_leaves
    w[np.flatnonzero(inside), r[inside]] = frac[inside]
    return w


# ------------------------------------------------------------------- release
def release_hierarchy(
    fed: Federation,
    privacy: PrivacyModel,
    *,
    height: int,
    branching: int = 2,
    level_budget: LevelBudget = "split",
    path: Path = "fast",
    rng: RNGLike = None,
    ledger: BudgetLedger | None = None,
) -> HierarchicalHistogram:
    """Release per-class hierarchical score histograms of a binary federation.

    Parameters
    ----------
    fed : Federation
        Binary task (1-D scores in ``fed.score_range``, labels 0/1).
    privacy : SecureAggregation, DistributedDP or LocalDP
    height : int
        h >= 1.
    branching : int
        b >= 2.
    level_budget : {"split", "assign"}
        Distributed DP only: ε/h on every level (default), or clients assigned
        to one level each with the full ε (see module docstring). Local DP
        always assigns clients to levels.
    path : {"fast", "faithful"}
        Exact-in-distribution simulation, or every client's encoder and noise.
    rng : int, Generator or None
    ledger : BudgetLedger, optional
        Charged atomically before anything is returned; a refused charge raises
        and nothing is released. Default: a fresh ledger holding the model's ε.

    Returns
    -------
    HierarchicalHistogram
        Raw (not yet consistent) estimates with their node variances.

    Raises
    ------
    ValueError
        Multiclass data, bad height/branching/level_budget, unsupported model.
    BudgetExceededError
        The ledger cannot afford the release.

    Privacy
    -------
    Secure aggregation: none (exact sums). Distributed DP: ε-DP (Pólya) or
    (ε, δ)-DP (Skellam) per privacy unit. Local DP: ε-LDP per example.

    References
    ----------
    cormode-markov-2023-federated-calibration-evaluation §2.3;
    xu-cormode-2025-federated-roc-pr §3.2.
    """
    if fed.kind != "binary":
        raise ValueError("hierarchical score histograms need a binary task (1-D scores)")
    if level_budget not in ("split", "assign"):
        raise ValueError(f"level_budget must be 'split' or 'assign', got {level_budget!r}")
    spec = HierarchySpec(height, branching, fed.score_range, n_classes=2)
    gen = as_generator(rng)
    if isinstance(privacy, SecureAggregation):
        return _release_sa(fed, spec, path, gen)
    if isinstance(privacy, DistributedDP):
        return _release_distdp(fed, spec, privacy, level_budget, path, gen, ledger)
    if isinstance(privacy, LocalDP):
        return _release_ldp(fed, spec, privacy, path, gen, ledger)
    raise ValueError(
        f"hierarchical histograms support SecureAggregation, DistributedDP and LocalDP, "
        f"not {type(privacy).__name__}"
    )


def _release_sa(
    fed: Federation, spec: HierarchySpec, path: Path, gen: np.random.Generator
) -> HierarchicalHistogram:
    leaf_spec = HierarchySpec(1, spec.n_leaves, spec.score_range, spec.n_classes)

    def encode(
        s: NDArray[np.float64], y: NDArray[np.int64], _c: NDArray[np.int64]
    ) -> NDArray[np.int64]:
        return leaf_spec.encode_levels(s, y)

    summed = federated_sum(fed, encode, leaf_spec.vector_length, noise=None, path=path, rng=gen)
    leaves = summed.values.reshape(spec.n_classes, spec.n_leaves).astype(np.float64)
    levels = tuple(spec.levels_from_leaves(leaves))
    return HierarchicalHistogram(
        spec=spec,
        levels=levels,
        node_variance=tuple(np.zeros_like(lv) for lv in levels),
        guarantee=Guarantee(
            math.inf, 0.0, "none", "secure aggregation of leaf counts: exact sums, no DP"
        ),
        n_clients=fed.n_clients,
        privacy=SecureAggregation().describe(),
        consistent_=True,
    )


def _release_distdp(
    fed: Federation,
    spec: HierarchySpec,
    model: DistributedDP,
    level_budget: LevelBudget,
    path: Path,
    gen: np.random.Generator,
    ledger: BudgetLedger | None,
) -> HierarchicalHistogram:
    from fedeval.privacy.noise_shares import share_noise_for

    h = spec.height
    bound = model.examples_per_unit
    if model.unit == "client" or model.contribution_bound is not None:
        fed = limit_contributions(fed, bound, gen)
    n_received_min = max(1, math.ceil(model.min_clients_fraction * fed.n_clients))
    if level_budget == "split":
        per_level_eps = model.epsilon / h
        # One example adds 1 to one node per level: L1 = h·bound over the vector,
        # L1 = bound within a level; L2 = sqrt(h)·bound over the vector.
        noise = share_noise_for(
            model,
            epsilon=model.epsilon,
            l1_sensitivity=h * bound,
            l2_sensitivity=math.sqrt(h) * bound,
            per_coordinate_l1=bound,
            split=h,
            n_shares=fed.n_clients,
            n_min=n_received_min,
        )
        if model.noise == "polya":
            entries = [
                LedgerEntry(
                    f"hierarchy level {k} (both classes)",
                    per_level_eps,
                    0.0,
                    _unit(model),
                    {"noise": "polya", "l1_sensitivity": bound, "branching": spec.branching},
                )
                for k in range(1, h + 1)
            ]
        else:
            # Skellam is calibrated on the whole vector by RDP: one entry.
            entries = [
                LedgerEntry(
                    f"hierarchy, all {h} levels (both classes)",
                    model.epsilon,
                    model.delta_or_zero,
                    _unit(model),
                    {
                        "noise": "skellam",
                        "l1_sensitivity": h * bound,
                        "l2_sensitivity": math.sqrt(h) * bound,
                    },
                )
            ]
        level_of_client = None
    else:
        noise = share_noise_for(
            model,
            epsilon=model.epsilon,
            l1_sensitivity=bound,
            l2_sensitivity=float(bound),
            per_coordinate_l1=bound,
            split=1,
            n_shares=fed.n_clients,
            n_min=n_received_min,
        )
        entries = [
            LedgerEntry(
                "hierarchy, clients assigned to levels (parallel composition)",
                model.epsilon,
                model.delta_or_zero,
                _unit(model),
                {"noise": model.noise, "l1_sensitivity": bound, "levels": h},
            )
        ]
        level_of_client = assign_groups(fed.n_clients, h, gen)
    _charge(ledger, model.epsilon, model.delta_or_zero, entries)

    def encode(
        s: NDArray[np.float64], y: NDArray[np.int64], c: NDArray[np.int64]
    ) -> NDArray[np.int64]:
        lvl = None if level_of_client is None else level_of_client[c]
        return spec.encode_levels(s, y, lvl)

    summed = federated_sum(fed, encode, spec.vector_length, noise=noise, path=path, rng=gen)
    raw = [lv.astype(np.float64) for lv in spec.unflatten(summed.values)]
    if level_of_client is None:
        levels = raw
        variances = [np.full(lv.shape, summed.noise_variance) for lv in raw]
    else:
        levels, variances = _scale_assigned_levels(
            raw, level_of_client, fed.n_clients, summed.noise_variance
        )
    return HierarchicalHistogram(
        spec=spec,
        levels=tuple(levels),
        node_variance=tuple(variances),
        guarantee=Guarantee(
            model.epsilon,
            model.delta_or_zero,
            _unit(model),
            f"{model.noise} noise shares on every node of a height-{h} hierarchy "
            f"({'ε/h per level' if level_budget == 'split' else 'one level per client'}), "
            f"contribution ≤ {bound} example(s) per {_unit(model)}",
        ),
        ledger_entries=tuple(entries),
        n_clients=fed.n_clients,
        privacy=model.describe(),
    )


def _release_ldp(
    fed: Federation,
    spec: HierarchySpec,
    model: LocalDP,
    path: Path,
    gen: np.random.Generator,
    ledger: BudgetLedger | None,
) -> HierarchicalHistogram:
    from fedeval.privacy.noise_shares import frequency_oracle_for

    h, b = spec.height, spec.branching
    entries = [
        LedgerEntry(
            "hierarchy, one OUE report per example at its client's level",
            model.epsilon,
            0.0,
            "example",
            {"oracle": model.oracle, "levels": h},
        )
    ]
    _charge(ledger, model.epsilon, 0.0, entries)
    group_of_client = assign_groups(fed.n_clients, h, gen)
    oracles = [
        cast(FrequencyOracle, frequency_oracle_for(model, spec.n_classes * spec.level_size(k)))
        for k in range(1, h + 1)
    ]
    grid = spec.grid

    def item_of(
        s: NDArray[np.float64], y: NDArray[np.int64], c: NDArray[np.int64]
    ) -> NDArray[np.int64]:
        level = group_of_client[c] + 1
        leaf = grid.bin_index(s)
        node = leaf // (b ** (h - level))
        return y.astype(np.int64) * (b**level) + node

    rel = federated_frequencies(fed, item_of, group_of_client, oracles, path=path, rng=gen)
    m_k = np.bincount(group_of_client, minlength=h)
    levels, variances = decode_ldp_levels(
        spec, model, rel.estimates, rel.n_reports, m_k, fed.n_examples
    )
    return HierarchicalHistogram(
        spec=spec,
        levels=tuple(levels),
        node_variance=tuple(variances),
        guarantee=Guarantee(
            model.epsilon,
            0.0,
            "example",
            f"one {model.oracle.upper()} report per example over (class, node) of one level of a "
            f"height-{h} hierarchy",
        ),
        ledger_entries=tuple(entries),
        n_clients=fed.n_clients,
        privacy=model.describe(),
    )


def decode_ldp_levels(
    spec: HierarchySpec,
    model: LocalDP,
    estimates: list[NDArray[np.float64]],
    n_reports: NDArray[np.int64],
    clients_per_level: NDArray[np.int64],
    n_examples: int,
) -> tuple[list[NDArray[np.float64]], list[NDArray[np.float64]]]:
    """Population counts and node variances from per-level local-DP estimates.

    The server step shared by the simulation and the Flower server. Level k's
    debiased estimates count the examples of the m_k clients assigned to it;
    they are scaled by M/m_k (unbiased under the uniform split of clients),
    and each node's variance is the oracle's variance (with the estimate
    plugged in for the unknown true counts, clamped to what the level's
    one-hot reports can hold) times the scale², plus the sampling variance of
    the split.

    Parameters
    ----------
    spec : HierarchySpec
    model : LocalDP
    estimates : list of ndarray, level k at index k-1, length n_classes·b^k
        Unbiased within-level estimates (``oracle.estimate``).
    n_reports : ndarray of int64, shape (h,)
        Reports (examples) per level.
    clients_per_level : ndarray of int64, shape (h,)
        m_k, clients assigned to each level.
    n_examples : int
        Total examples (reports) over all levels.

    Returns
    -------
    levels, variances : lists of ndarray, shape (n_classes, b^k)
    """
    from fedeval.privacy.noise_shares import frequency_oracle_for

    n_clients = int(np.sum(clients_per_level))
    levels, variances = [], []
    for k in range(spec.height):
        oracle = frequency_oracle_for(model, spec.n_classes * spec.level_size(k + 1))
        m = int(clients_per_level[k])
        n_k = int(n_reports[k])
        scale = n_clients / max(m, 1)
        flat = np.asarray(estimates[k], dtype=np.float64)
        est = flat.reshape(spec.n_classes, -1)
        clamped = np.clip(flat, 0, None)
        if clamped.sum() > n_k:  # one-hot reports: true counts sum to at most n_k
            clamped *= n_k / clamped.sum()
        plug_in = np.floor(clamped).astype(np.int64)
        if model.oracle == "rr":  # RR counts must account for every report
            plug_in[np.argmax(plug_in)] += n_k - int(plug_in.sum())
        noise_var = oracle.count_variance(plug_in, n_k)
        samp = _sampling_variance(np.clip(est * scale, 0, None), m, n_clients, n_examples)
        levels.append(est * scale)
        variances.append(noise_var.reshape(spec.n_classes, -1) * scale**2 + samp)
    return levels, variances


def _scale_assigned_levels(
    raw: list[NDArray[np.float64]],
    level_of_client: NDArray[np.int64],
    n_clients: int,
    noise_variance: float,
) -> tuple[list[NDArray[np.float64]], list[NDArray[np.float64]]]:
    m_k = np.bincount(level_of_client, minlength=len(raw))
    levels, variances = [], []
    n_examples_est = float(
        sum(lv.sum() * n_clients / max(int(m), 1) for lv, m in zip(raw, m_k, strict=True))
        / len(raw)
    )
    for lv, m in zip(raw, m_k, strict=True):
        scale = n_clients / max(int(m), 1)
        est = lv * scale
        levels.append(est)
        samp = _sampling_variance(
            np.clip(est, 0, None), int(m), n_clients, max(n_examples_est, 1.0)
        )
        variances.append(np.full(lv.shape, noise_variance * scale**2) + samp)
    return levels, variances


def _sampling_variance(
    count: NDArray[np.float64], m: int, n_clients: int, n_examples: float
) -> NDArray[np.float64]:
    """Variance of (M/m)·(count among m of M random clients), one example per client.

    Hypergeometric: Var = (M/m)² · m p(1-p) (M-m)/(M-1) with p = count/M. With
    several examples per client this treats examples as independent, an
    approximation stated in the docs.
    """
    if m >= n_clients or n_clients <= 1:
        return np.zeros_like(count)
    scale = n_clients / m
    p = np.clip(count / max(n_examples, 1.0), 0.0, 1.0)
    n = max(n_examples, 1.0)
    frac = m / n_clients
    m_ex = n * frac
    return scale**2 * m_ex * p * (1 - p) * (n - m_ex) / max(n - 1.0, 1.0)


def _unit(model: DistributedDP) -> Literal["example", "client"]:
    return model.unit


def _charge(
    ledger: BudgetLedger | None, epsilon: float, delta: float, entries: list[LedgerEntry]
) -> None:
    book = ledger if ledger is not None else BudgetLedger(epsilon, delta)
    book.charge_all(entries)
