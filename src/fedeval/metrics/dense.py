"""Dense ROC and PR curves, AUC and AP from consistent prefix counts of one level.

The released hierarchy holds far more resolution than Q quantiles: every
boundary of level L (b^L bins) has a consistent prefix count per class. This
module reads those counts from the whole hierarchy, top down, shrinking each
node's split among its children towards an even split by an empirical Wiener
filter whose noise level is public (:func:`wiener_levels`: where a split is
within the noise the node is spread evenly, as if the level were coarser
there) and projecting each node's children onto the non-negative splits of
its estimate (:func:`fedeval.postprocess.tables.project_children_to_simplex`), projects each class's
prefix counts onto the monotone sequences from 0 to the released class total
(isotonic regression; a no-op after the non-negative split, kept for the
unshrunk reading), all named post-processing steps, and answers every curve
metric from them:

* ROC: at each boundary e_i (predict positive when score >= e_i),
  FPR_i = N_{>=e_i} / N and TPR_i = P_{>=e_i} / P; between boundaries the curve
  is linear (exact when scores are uniform inside a bin).
* AUC: the trapezoid area of that very curve, which is H_B (Cormode–Markov eq. 5)
  on the projected bin counts. The reported AUC and the returned curve therefore
  agree to floating-point rounding (tested: |AUC − area| <= 1e-12).
* PR: precision_i = TP_i / (TP_i + FP_i), recall_i = TP_i / P, in scikit-learn's
  layout; AP is the step sum of that curve (scikit-learn's definition).

Bucketization bound: for the projected bin counts (p_i, n_i), the AUC of the
examples lies within ½ Σ_i p_i n_i / (P N) of H_B (Lemma 3: only pairs in the
same bin are undetermined); :func:`auc_bucketization_bound` returns it.

Level choice (:func:`choose_level`): the leaf level by default (measured
against the other levels there); any level can be asked for. The
noise/bias trade-off of the level is made per node by the shrinkage.

References
----------
cormode-markov-2023-federated-calibration-evaluation §5, eq. (5), Lemma 3;
xu-cormode-2025-federated-roc-pr §3 (curves from per-class ECDFs), Def. 4.1.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fedeval.metrics.inputs import hierarchy_of
from fedeval.postprocess.tables import project_children_to_simplex, simplex_transpose
from fedeval.sketches.hierarchical_histogram import HierarchicalHistogram

__all__ = [
    "MAX_SE",
    "MIN_PR_POINTS",
    "RARE_CLASS_EXAMPLES",
    "BoundaryCounts",
    "Shrinkage",
    "auc_bucketization_bound",
    "boundary_counts",
    "choose_level",
    "dense_average_precision",
    "dense_band_se",
    "dense_leaf_weights",
    "dense_precision_recall_curve",
    "dense_roc_auc",
    "dense_roc_auc_of_leaves",
    "dense_roc_curve",
    "dense_se_parts",
    "effective_examples",
    "statistic_gradients",
]


MAX_SE = 0.5
"""Cap on a standard error of an estimate confined to [0, 1].

No distribution on [0, 1] has a standard deviation above ½ (Popoviciu's
inequality), so a clipped estimate's error spread never exceeds it; a larger
delta-method value (tiny or negative noisy totals) only says the
linearisation has broken down.
"""


@dataclass(frozen=True)
class Shrinkage:
    """What :func:`wiener_levels` did to one class, kept for the delta method.

    Attributes
    ----------
    levels : tuple of (dev, ss, s, k, kept)
        Per level 1..L: the released deviations of each node's children from
        an even split of the released parent (shape (m, b)), their sums of
        squares ``ss`` (m,), the shrink factors ``s`` (m,), the noise
        constant ``k = (b − 1) σ_l²`` and the children the non-negative
        split left positive (bool, (m, b); :func:`fedeval.postprocess.tables.project_children_to_simplex`).
    """

    levels: tuple[
        tuple[
            NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], float, NDArray[np.bool_]
        ],
        ...,
    ]

    @cached_property
    def coefficients(self) -> tuple[NDArray[np.float64], ...]:
        """Per level, 2k/ss² where the split is kept (s > 0), else 0 (the garrote's rank-one term).

        A function of the release alone, computed once: every delta-method
        query through this shrinkage (:func:`_shrinkage_transpose`) uses it.
        A level of up to :data:`_SCALAR_COEFFICIENTS_MAX` nodes is computed on
        Python floats, (2k)/(ss·ss) as numpy's ``2.0 * k / ss**2`` (``**2`` is
        a square), so equal bit for bit (tested) without the ~10 µs of
        ``np.errstate`` per level.
        """
        out = []
        for _, ss, s, k, _ in self.levels:
            if ss.size <= _SCALAR_COEFFICIENTS_MAX:
                two_k = 2.0 * k
                out.append(
                    np.array(
                        [
                            two_k / (q * q) if sj > 0 else 0.0
                            for q, sj in zip(ss.tolist(), s.tolist(), strict=True)
                        ],
                        dtype=np.float64,
                    )
                )
                continue
            with np.errstate(divide="ignore", invalid="ignore"):
                out.append(np.where(s > 0, 2.0 * k / ss**2, 0.0))
        return tuple(out)

    @cached_property
    def as_lists(
        self,
    ) -> tuple[tuple[list[list[float]], list[float], list[float], list[list[bool]]], ...]:
        """Per level, the bottom one first: (dev rows, s, :attr:`coefficients`, kept rows) as
        Python values, converted once for every reverse pass of :func:`_shrinkage_transpose_scalar`."""
        steps = zip(reversed(self.levels), reversed(self.coefficients), strict=True)
        return tuple(
            (dev.tolist(), s.tolist(), coef.tolist(), kept.tolist())
            for (dev, _, s, _, kept), coef in steps
        )


_SCALAR_COEFFICIENTS_MAX = 64
"""Levels up to this many nodes get :attr:`Shrinkage.coefficients` on Python floats."""


@dataclass(frozen=True)
class BoundaryCounts:
    """Monotone per-class counts at or above every boundary of one level.

    Attributes
    ----------
    level : int
        1..h; the level has b^level bins.
    edges : ndarray, shape (B + 1,)
        Increasing bin edges, from the domain's low end to its high end.
    above : ndarray, shape (2, B + 1)
        Examples of class c (0 negative, 1 positive) with score >= edges[i]:
        non-increasing in i, ``above[c, 0]`` the class total, ``above[c, B] = 0``.
    totals : ndarray, shape (2,)
        The class totals of the counts: the released ones (may be <= 0 under
        DP; the class is then undefined), or 0 for a class whose released
        total the non-negative split of :func:`wiener_levels` set to 0.
    shrinkage : tuple of Shrinkage, optional
        Per class, the Wiener shrinkage applied before the monotone projection
        (None without noise).
    unshrunk : BoundaryCounts, optional
        The same level's counts without the shrinkage (only when it was
        applied), for the bias allowance of the standard errors.
    """

    level: int
    edges: NDArray[np.float64]
    above: NDArray[np.float64]
    totals: NDArray[np.float64]
    shrinkage: tuple[Shrinkage, Shrinkage] | None = None
    unshrunk: BoundaryCounts | None = None

    @property
    def defined(self) -> bool:
        """Both class totals are positive (else the curves are NaN)."""
        return bool(np.all(self.totals > 0))

    @property
    def bins(self) -> NDArray[np.float64]:
        """Projected per-bin counts, shape (2, B) (non-negative)."""
        return np.asarray(-np.diff(self.above, axis=1), dtype=np.float64)


def _monotone_prefix(counts: NDArray[np.float64], total: float) -> NDArray[np.float64]:
    """Non-decreasing prefix counts from 0 to ``total`` closest (L2) to the released ones.

    Up to :data:`_PAVA_IN_PYTHON_MAX` bins on Python floats (the cumulative sum
    left to right as ``np.cumsum``, the same checks, PAVA and clip), equal bit
    for bit (tested).
    """
    if counts.size <= _PAVA_IN_PYTHON_MAX:
        return _monotone_prefix_scalar(counts.tolist(), total)
    below = np.concatenate(([0.0], np.cumsum(counts)))
    if total <= 0:
        return np.zeros_like(below)
    inner = below[1:-1]
    if inner.size and (np.any(np.diff(below) < 0) or inner.min() < 0 or inner.max() > total):
        # scipy's PAVA, then the clip to [0, total]: what sklearn's isotonic_regression
        # runs (sklearn >= 1.4 with scipy >= 1.12), without its per-call validation
        inner = np.clip(_isotonic(inner), 0.0, total)
    return np.concatenate(([0.0], inner, [total]))


def _monotone_prefix_scalar(counts: list[float], total: float) -> NDArray[np.float64]:
    """:func:`_monotone_prefix` of a short release on Python floats, the same operations."""
    below = [0.0, *itertools.accumulate(counts)]
    if total <= 0:
        return np.zeros(len(below))
    inner = below[1:-1]
    if inner and (
        any(y - x < 0 for x, y in itertools.pairwise(below)) or min(inner) < 0 or max(inner) > total
    ):
        inner = [min(max(x, 0.0), total) for x in _pava(inner)]
    return np.array([0.0, *inner, total], dtype=np.float64)


_PAVA_IN_PYTHON_MAX = 256
"""Longest input :func:`_isotonic` solves on Python floats rather than through scipy."""


def _isotonic(y: NDArray[np.float64]) -> NDArray[np.float64]:
    """Unweighted increasing isotonic regression: ``scipy.optimize.isotonic_regression(y).x``.

    Short inputs (a small release's bins) run :func:`_pava`, the same
    algorithm with the same float operations, so the result is equal bit for
    bit (tested against sklearn) without importing scipy.optimize (~0.15 s)
    or paying its per-call overhead; long ones call scipy.
    """
    if y.size <= _PAVA_IN_PYTHON_MAX:
        return np.array(_pava(y.tolist()), dtype=np.float64)
    from scipy.optimize import isotonic_regression

    return np.asarray(isotonic_regression(y).x, dtype=np.float64)


def _pava(x: list[float]) -> list[float]:
    """Pool adjacent violators with unit weights: scipy's ``_pava_pybind.pava``, line for line.

    Algorithm 1 of Busing (2022), "Monotone Regression: A Simple and Fast O(n)
    PAVA Implementation", J. Stat. Softw. 102(1), as scipy implements it (its
    ``>=`` where the paper has ``>``, and its order of additions).
    """
    n = len(x)
    if n == 0:
        return x
    w = [1.0] * n
    r = [0] * (n + 1)
    r[1] = 1
    b = 0
    xb_prev, wb_prev = x[0], w[0]
    i = 1
    while i < n:
        b += 1
        xb, wb = x[i], w[i]
        if xb_prev >= xb:
            b -= 1
            sb = wb_prev * xb_prev + wb * xb
            wb += wb_prev
            xb = sb / wb
            while i < n - 1 and xb >= x[i + 1]:
                i += 1
                sb += w[i] * x[i]
                wb += w[i]
                xb = sb / wb
            while b > 0 and x[b - 1] >= xb:
                b -= 1
                sb += w[b] * x[b]
                wb += w[b]
                xb = sb / wb
        x[b] = xb_prev = xb
        w[b] = wb_prev = wb
        r[b + 1] = i + 1
        i += 1
    out = [0.0] * n
    f = n - 1
    for k in range(b, -1, -1):
        t = r[k]
        out[t : f + 1] = [x[k]] * (f + 1 - t)
        f = t - 1
    return out


def _split_variances(tree: HierarchicalHistogram, c: int, level: int) -> list[float]:
    """Noise variance of a child's deviation from an even split of its parent, levels 1..level.

    The consistent tree's per-level noise is the same for every node of a level
    (consistency uses one variance per level) and siblings are exchangeable, so
    with V_l the variance of one level-l node, Cov(child, parent) = V_{l−1}/b and

        Var(child − parent/b) = V_l − V_{l−1}/b²,

    V_0 the total's. V_l is the variance of the count below the first node's
    upper edge (:meth:`~fedeval.sketches.hierarchical_histogram.HierarchicalHistogram.prefix_moments`,
    O(b·h) per level). Under local DP the raw node variances differ within a
    level (the oracle's variance uses the plug-in count); the first node's then
    stands for its level.

    A pure function of the class's node variances: where the other class's are
    equal (distributed and central DP) its result is reused (cached per tree).
    """
    key = f"split_variances_{level}"
    done = tree._derived.setdefault(key, {})
    twin = next((d for d in done if d == c or tree._same_variances(c, d)), None)
    if twin is not None:
        return list(done[twin])
    b = tree.branching
    lo, hi = tree.spec.score_range
    edges = lo + (hi - lo) / float(b) ** np.arange(1, level + 1)
    var_node, _, var_total = tree.prefix_moments(edges, c)
    parent = np.concatenate(([var_total], var_node[:-1]))
    out = [float(v) for v in np.maximum(var_node - parent / b**2, 0.0)]
    done[c] = out
    return list(out)


def wiener_levels(
    tree: HierarchicalHistogram, level: int
) -> tuple[NDArray[np.float64], tuple[Shrinkage, Shrinkage] | None]:
    """Counts of the level's bins, each node's split shrunk towards even by an empirical Wiener filter.

    Top down from the class total, a node's estimate is split among its b
    children as ``E/b + s·d``, where d are the released (consistent) children's
    deviations from an even split of the released parent and

        s = max(0, 1 − (b − 1) σ_l² / Σ d²),

    σ_l² the exact noise variance of one deviation (public: the node
    variances and the tree's geometry). For one coefficient with signal θ and
    noise σ², the multiplier minimising E(s·d − θ)² is θ²/(θ² + σ²); d² − σ²
    estimates θ² without bias, which gives s (the empirical Wiener filter, the
    non-negative garrote with threshold σ). Where a split is within the noise
    the node is spread evenly (as if the level were coarser there); where the
    data split it clearly, the split stands. This is the noise/bias trade-off
    of choosing a level, made per node from public variances and released
    counts (post-processing). Totals are unchanged (Σ_children = E).

    Then, still top down, each node's children are projected onto the
    non-negative split of its estimate (:func:`fedeval.postprocess.tables.project_children_to_simplex`):
    a count cannot be negative, and a child the noise pushed below 0 gives its
    deficit back evenly to its positive siblings instead of carrying it to
    the final monotone projection, where isotonic pooling would spread it over
    neighbouring bins. This is the tree-wide form of the constraint that
    Xu–Cormode's quantile search applies by reading negative counts as 0, and
    with it fedeval's curves are nowhere worse than that method's on the
    issue-13 grid (50 seeds, ``benchmarks/bench_dense_vs_quantile.py
    --seeds 50``): the largest median/p90 ratio to it went 1.10 → 1.00, the
    1.00s being breast_cancer PR under DistDP at h = 7 (p90; no estimator's p90
    can be below 0.77 of it on both of two datasets that get the same release,
    ``benchmarks/bench_dense_oracle.py`` 1b) and under LDP at h = 9 (median);
    breast_cancer DistDP h = 12 PR 0.98/1.04 → 0.89/0.83, generated LDP h = 12
    PR 0.98/0.77 → 0.83/0.72; no ratio higher by more than 0.04.

    Error: per node, the shrunk split has MSE ≤ min(θ², σ²)·(1 + o(1)) for
    |θ| ≫ σ or θ = 0 (garrote risk, Gao 1998); the prefix count at a boundary sums
    at most (b − 1) such splits per level, so its noise is at most the consistent
    tree's (s ≤ 1) plus a bias at most the dropped splits. Measured on the issue-13
    grid (``benchmarks/bench_dense_vs_quantile.py --seeds 10``, ratio to the
    quantile method, p90 PR Area Error under LDP ε = 5): breast_cancer h = 7
    1.88 → 0.80, h = 9 2.10 → 1.29, generated h = 12 0.90 → 0.68; largest ratio
    over the grid 2.10 → 1.29; seeds 10-19 move the same way. The bias this
    adds to AUC/AP is carried into their SEs (:func:`_with_bias_allowance`).

    Returns the (2, b^level) bins and, under noise, the :class:`Shrinkage`
    of each class for the delta method (None without noise: nothing is shrunk).

    References
    ----------
    Donoho & Johnstone, Biometrika 81 (1994) (wavelet shrinkage; the Haar
    coefficients here are the splits of the hierarchy); Gao, J. Comput.
    Graph. Stat. 7 (1998) (non-negative garrote).
    """
    if not tree.guarantee.is_private:
        return np.asarray(tree.levels[level - 1], dtype=np.float64), None
    b = tree.branching
    one_class = _wiener_class_scalar if _scalar_shrinkage(tree) else _wiener_class
    out, info = [], []
    for c in (0, 1):
        var = _split_variances(tree, c, level)
        released = [np.asarray(x[c], dtype=np.float64) for x in tree.levels[:level]]
        est, shrink = one_class(released, var, b)
        out.append(est)
        info.append(shrink)
    return np.array(out), (info[0], info[1])


_SCALAR_SHRINK_MAX_LEAVES = 256
"""Binary trees up to this many leaves run :func:`wiener_levels` and its reverse pass on Python floats."""


def _scalar_shrinkage(tree: HierarchicalHistogram) -> bool:
    """Whether the shrinkage of ``tree`` takes the Python-float paths (small binary trees)."""
    return tree.branching == 2 and tree.spec.n_leaves <= _SCALAR_SHRINK_MAX_LEAVES


def _wiener_class(
    released: list[NDArray[np.float64]], var: list[float], b: int
) -> tuple[NDArray[np.float64], Shrinkage]:
    """One class of :func:`wiener_levels` on arrays: the shrunk bins and the :class:`Shrinkage`."""
    if b == 2:
        return _wiener_class_binary(released, var)
    return _wiener_class_any_branching(released, var, b)


def _wiener_class_any_branching(
    released: list[NDArray[np.float64]], var: list[float], b: int
) -> tuple[NDArray[np.float64], Shrinkage]:
    """:func:`_wiener_class` for any branching b (the reference of the binary form)."""
    parent = np.array([released[0].sum()])
    est = parent.copy()
    steps = []
    for lv in range(len(released)):
        dev = released[lv].reshape(-1, b) - parent[:, None] / b
        ss = np.sum(dev**2, axis=1)
        k = (b - 1) * var[lv]
        with np.errstate(divide="ignore"):
            s = np.clip(1.0 - k / np.where(ss > 0, ss, np.inf), 0.0, 1.0)
        s = np.where(ss > k, s, 0.0)
        kids, kept = project_children_to_simplex(est[:, None] / b + s[:, None] * dev)
        est = kids.ravel()
        parent = released[lv]
        steps.append((dev, ss, s, k, kept))
    return est, Shrinkage(tuple(steps))


def _wiener_class_binary(
    released: list[NDArray[np.float64]], var: list[float]
) -> tuple[NDArray[np.float64], Shrinkage]:
    """:func:`_wiener_class` of a binary tree with fewer array passes, the same float operations.

    The children's two deviations are the last axis of one (m, 2) array;
    their sum of squares is d0·d0 + d1·d1 (numpy's two-term row sum), and
    the non-negative split is :func:`~fedeval.postprocess.tables.project_children_to_simplex`'s
    closed form for b = 2 (the first child clipped to [0, E], the second the
    rest), so the bins and the :class:`Shrinkage` are equal bit for bit
    (tested). A deep tree's leaf level has tens of thousands of nodes, where
    the general form's row reductions over two columns dominate.
    """
    est, steps = _binary_shrinkage(released, var)
    return est, Shrinkage(tuple(steps))


def _binary_shrinkage(
    released: list[NDArray[np.float64]], var: list[float]
) -> tuple[NDArray[np.float64], list[Any]]:
    """The binary shrinkage of :func:`_wiener_class_binary` on levels with any leading axes.

    ``released[l]`` has shape (..., 2^(l+1)): one tree, or a batch of trees
    with the same variances (bootstrap replicates, :func:`dense_roc_auc_of_leaves`).
    Returns the shrunk bins (..., 2^L) and per level (dev, ss, s, k, kept).
    """
    first = released[0]
    est = first[..., :1] + first[..., 1:]
    parent = est
    steps = []
    for rel, k in zip(released, var, strict=False):
        dev = rel.reshape(*rel.shape[:-1], -1, 2) - (parent / 2)[..., None]
        d0, d1 = dev[..., 0], dev[..., 1]
        ss = d0 * d0 + d1 * d1
        with np.errstate(divide="ignore", invalid="ignore"):
            s = np.where(ss > k, np.minimum(np.maximum(1.0 - k / ss, 0.0), 1.0), 0.0)
        kids = (est / 2)[..., None] + s[..., None] * dev
        x0, x1 = kids[..., 0], kids[..., 1]
        clipped = (x0 <= 0) | (x1 <= 0)
        if clipped.any():
            total = np.maximum(x0 + x1, 0.0)
            y0 = np.minimum(np.maximum(x0, 0.0), total)
            first_kid = np.where(clipped, y0, x0)
            second_kid = np.where(clipped, total - y0, x1)
            kids[..., 0] = first_kid
            kids[..., 1] = second_kid
        est = kids.reshape(*kids.shape[:-2], -1)
        parent = rel
        steps.append((dev, ss, s, k, kids > 0))
    return est, steps


def _wiener_class_scalar(
    released: list[NDArray[np.float64]], var: list[float], b: int
) -> tuple[NDArray[np.float64], Shrinkage]:
    """:func:`_wiener_class` of a binary tree on Python floats, the same operations in order.

    With b = 2 every row sum has two terms (one rounding, whatever the order),
    the shrink factor's clip and the closed-form non-negative split of
    :func:`~fedeval.postprocess.tables.project_children_to_simplex` are the
    same comparisons, so the bins and the :class:`Shrinkage` arrays are equal
    bit for bit (tested against the array form). A small release's tree has
    a few tens of nodes, where 2·h rounds of (m, 2) array calls cost ~0.5 ms.
    """
    assert b == 2
    first = released[0].tolist()
    parent = [first[0] + first[1]]
    est = list(parent)
    steps = []
    for lv in range(len(released)):
        rel = released[lv].tolist()
        k = (b - 1) * var[lv]
        dev: list[float] = []
        ss: list[float] = []
        s: list[float] = []
        kept: list[bool] = []
        kids: list[float] = []
        for j, p in enumerate(parent):
            even = p / b
            d0, d1 = rel[2 * j] - even, rel[2 * j + 1] - even
            q = d0 * d0 + d1 * d1
            sj = min(max(1.0 - k / q, 0.0), 1.0) if q > k else 0.0
            e = est[j] / b
            x0, x1 = e + sj * d0, e + sj * d1
            if x0 <= 0 or x1 <= 0:
                total = max(x0 + x1, 0.0)
                x0 = min(max(x0, 0.0), total)
                x1 = total - x0
            dev += (d0, d1)
            ss.append(q)
            s.append(sj)
            kept += (x0 > 0, x1 > 0)
            kids += (x0, x1)
        est = kids
        parent = rel
        steps.append(
            (
                np.array(dev).reshape(-1, b),
                np.array(ss),
                np.array(s),
                k,
                np.array(kept).reshape(-1, b),
            )
        )
    return np.array(est), Shrinkage(tuple(steps))


def _shrinkage_transpose(
    shrink: Shrinkage,
    grad_bins: NDArray[np.float64],
    n_leaves: int,
    b: int,
    *,
    through_simplex: bool = True,
) -> NDArray[np.float64]:
    """Leaf weights of the linear query that :func:`wiener_levels` linearises to (reverse mode).

    The shrunk bins are a.e. differentiable in the released levels: for each
    node, the non-negative split passes gradients as :func:`fedeval.postprocess.tables.simplex_transpose`
    says, and ∂(s·d)/∂d = s·I + (2k/ss²)·d dᵀ where s > 0, 0 where the split
    is dropped. Carries a gradient on the shrunk bins back to one weight per
    consistent leaf (each level's weights are spread to the leaves they sum).
    ``through_simplex=False`` reads the non-negative split as the identity
    (the floor of :data:`PINNED_FLOOR`). Small binary trees take
    :func:`_shrinkage_transpose_scalar` (equal bit for bit).
    """
    if b == 2 and n_leaves <= _SCALAR_SHRINK_MAX_LEAVES:
        return _shrinkage_transpose_scalar(shrink, grad_bins, n_leaves, through_simplex)
    g = np.asarray(grad_bins, dtype=np.float64)
    leaf_w = np.zeros(n_leaves)
    steps = zip(reversed(shrink.levels), reversed(shrink.coefficients), strict=True)
    for (dev, _, s, _, kept), coef in steps:
        gm = g.reshape(-1, b)
        if through_simplex:
            gm = simplex_transpose(gm, kept)
        u = s[:, None] * gm + (coef * np.sum(dev * gm, axis=1))[:, None] * dev
        # d = child - parent/b: the children get u, the released parent -u.sum/b.
        # Each node's value is added to the leaves under it (a broadcast view, no repeat).
        by_child = leaf_w.reshape(u.size, -1)
        by_child += u.reshape(-1, 1)
        g_parent_released = -u.sum(axis=1) / b
        g = gm.sum(axis=1) / b  # towards the parent's estimate
        by_parent = leaf_w.reshape(g_parent_released.size, -1)
        by_parent += g_parent_released[:, None]
    # The root estimate is the released total, the sum of all leaves.
    return leaf_w + float(g.sum())


def _shrinkage_transpose_scalar(
    shrink: Shrinkage, grad_bins: Any, n_leaves: int, through_simplex: bool
) -> NDArray[np.float64]:
    """:func:`_shrinkage_transpose` of a binary tree on Python floats, the same operations in order.

    Per node: :func:`~fedeval.postprocess.tables.simplex_transpose` of its two
    children's gradients (a clipped child gets the kept one's, or 0), then
    u = s·g + (coef·(d·g))·d; every leaf then receives, level by level from
    the bottom, its child's u and its parent's −Σu/2 in the array form's order
    of additions, so the weights are equal bit for bit (tested). The leaves
    under one bin of the level receive the same sequence, so it is summed once
    per bin.
    """
    b = 2
    g = np.asarray(grad_bins, dtype=np.float64).tolist()
    # Every leaf under one bin of the level gets the same additions in the same order,
    # so the sums are kept per bin and repeated over its leaves at the end.
    per_bin = [0.0] * len(g)
    # shift: log2 of the bins under one child of the level being carried back
    for shift, (d, sl, cl, kl) in enumerate(shrink.as_lists):
        u: list[float] = []
        g_parent_released: list[float] = []
        g_next: list[float] = []
        for j, (d0, d1) in enumerate(d):
            g0, g1 = g[2 * j], g[2 * j + 1]
            k0, k1 = kl[j]
            if through_simplex and not (k0 and k1):
                n_kept = k0 + k1
                mean_kept = ((g0 if k0 else 0.0) + (g1 if k1 else 0.0)) / max(n_kept, 1)
                fill = mean_kept if n_kept > 0 else 0.0
                g0, g1 = (g0 if k0 else fill), (g1 if k1 else fill)
            cd = cl[j] * (d0 * g0 + d1 * g1)
            u0, u1 = sl[j] * g0 + cd * d0, sl[j] * g1 + cd * d1
            u += (u0, u1)
            g_parent_released.append(-(u0 + u1) / b)
            g_next.append((g0 + g1) / b)
        # (w + u) + g_parent: the child's pass, then the parent's, as two array adds.
        per_bin = [
            w + u[i >> shift] + g_parent_released[i >> (shift + 1)] for i, w in enumerate(per_bin)
        ]
        g = g_next
    root = g[0]
    repeat = n_leaves // len(per_bin)
    return np.array([x for w in per_bin for x in [w + root] * repeat])


def boundary_counts(
    release: Any, level: int | None = None, *, shrink: bool = True
) -> BoundaryCounts:
    """Consistent, Wiener-shrunk, monotone-projected counts at or above every boundary of ``level``.

    Parameters
    ----------
    release : Release, HierarchicalHistogram or Evaluation
    level : int, optional
        1..h; default :func:`choose_level`.
    shrink : bool
        Apply the Wiener shrinkage (default); False reads the consistent level
        as released (used to estimate the shrinkage's bias).
    """
    tree = hierarchy_of(release)
    lv = choose_level(tree) if level is None else int(level)
    if not 1 <= lv <= tree.height:
        raise ValueError(f"level must lie in 1..{tree.height}, got {level}")
    # Once per release and level: the AUC, the ROC and PR curves and the
    # thresholds all read them (read-only arrays, so a caller cannot alter the copy
    # the next one gets).
    key = f"boundary_counts {lv} {shrink}"
    cached = tree._derived.get(key)
    if cached is None:
        cached = _boundary_counts(tree, lv, shrink)
        for a in (cached.edges, cached.above, cached.totals):
            a.flags.writeable = False
        tree._derived[key] = cached
    return cached


def _boundary_counts(tree: HierarchicalHistogram, lv: int, shrink: bool) -> BoundaryCounts:
    """:func:`boundary_counts` computed."""
    if shrink:
        counts, shrinkage = wiener_levels(tree, lv)
    else:
        counts, shrinkage = np.asarray(tree.levels[lv - 1], dtype=np.float64), None
    unshrunk = None if shrinkage is None else boundary_counts(tree, lv, shrink=False)
    totals = counts.sum(axis=1)
    lo, hi = tree.spec.score_range
    edges = np.linspace(lo, hi, counts.shape[1] + 1)
    above = np.empty((2, counts.shape[1] + 1))
    for c in (0, 1):
        below = _monotone_prefix(counts[c], float(totals[c]))
        above[c] = below[-1] - below
    return BoundaryCounts(lv, edges, above, totals, shrinkage, unshrunk)


def auc_bucketization_bound(counts: BoundaryCounts) -> float:
    """½ Σ_i p_i n_i / (P N): how far the AUC of examples with these bin counts can be from H_B.

    Cormode–Markov Lemma 3: pairs in different bins are ordered by the bins;
    only the pairs sharing a bin are undetermined, and H_B counts them ½.
    """
    if not counts.defined:
        return float("nan")
    bins = counts.bins
    big_n, big_p = counts.above[0, 0], counts.above[1, 0]
    return float(0.5 * np.sum(bins[0] * bins[1]) / (big_p * big_n))


def choose_level(release: Any) -> int:
    """The level of the dense curves and AUC: the leaf level (the finest the release holds).

    Why not shallower under noise: a prefix count at a level-L boundary of the
    consistent tree sums at most (b − 1)·L nodes, so its noise grows only
    slowly with L, while the bucketization error (for the AUC, at most
    ½ Σ p_i n_i/(PN), :func:`auc_bucketization_bound`) shrinks with every level;
    the monotone projection absorbs the per-bin noise. Measured on the
    issue-13 grid (200K generated task and 100× replicated breast_cancer,
    DistDP ε = 1 and LDP ε = 5, h = 9 and 12, seed 0): the leaf level's ROC
    Area Error was within 1.7× of the best level's in every cell and the best
    in two of eight; its AUC RMSE (20 seeds on breast_cancer with 57 clients,
    8 on a 200K logistic task) was the best or within 5 % of it. Its weakness:
    PR curves at deep levels under noise (up to 2.5× the best level's Area
    Error on the generated task under DistDP, h = 12); pass ``level=`` to
    choose another.
    """
    return hierarchy_of(release).height


def dense_roc_curve(
    counts: BoundaryCounts,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """(fpr, tpr, thresholds) in the layout of ``sklearn.metrics.roc_curve``.

    Thresholds decrease from ``inf`` (the point (0, 0)) through every inner
    boundary to the domain's low end (the point (1, 1)). NaN (one point) when
    a class is undefined.
    """
    if not counts.defined:
        nan = np.full(1, np.nan)
        return nan, nan.copy(), nan.copy()
    above = counts.above[:, :-1][:, ::-1]  # thresholds edges[B-1] .. edges[0]
    fpr = above[0] / counts.above[0, 0]
    tpr = above[1] / counts.above[1, 0]
    return (
        np.concatenate(([0.0], fpr)),
        np.concatenate(([0.0], tpr)),
        np.concatenate(([np.inf], counts.edges[:-1][::-1])),
    )


def dense_roc_auc(counts: BoundaryCounts) -> float:
    """Trapezoid area of :func:`dense_roc_curve` (= H_B on the projected bin counts)."""
    if not counts.defined:
        return float("nan")
    fpr, tpr, _ = dense_roc_curve(counts)
    return float(np.clip(np.trapezoid(tpr, fpr), 0.0, 1.0))


def dense_roc_auc_of_leaves(
    tree: HierarchicalHistogram, leaves: NDArray[np.float64]
) -> NDArray[np.float64]:
    """:func:`dense_roc_auc` at the leaf level of many trees that differ from ``tree`` in their leaves only.

    ``leaves[r]`` (shape (2, b^h)) are the leaves of replicate r, whose inner
    nodes are their sums (:func:`fedeval.postprocess.bootstrap.leaf_replicates`).
    Entry r equals
    ``dense_roc_auc(boundary_counts(tree.with_levels(spec.levels_from_leaves(leaves[r]))))``
    bit for bit (tested): binary private trees run the Wiener shrinkage, the
    non-negative splits, the monotone prefixes and the trapezoid on all
    replicates at once, with the scalar path's float operations in its order
    (two-term sums, :func:`_wiener_class_scalar`'s comparisons); a replicate
    whose prefix needs pooling (:func:`_monotone_prefix`) takes the scalar
    path for that class. Other trees loop over the replicates.

    Parameters
    ----------
    tree : HierarchicalHistogram
        Gives the geometry, the node variances and the guarantee.
    leaves : ndarray, shape (R, 2, b^h)

    Returns
    -------
    ndarray, shape (R,)
        NaN where a replicate leaves a class total ≤ 0.
    """
    x = np.asarray(leaves, dtype=np.float64)
    spec = tree.spec
    if not (tree.guarantee.is_private and _scalar_shrinkage(tree)):
        return np.array(
            [
                dense_roc_auc(
                    _boundary_counts(
                        tree.with_levels(spec.levels_from_leaves(r)), tree.height, True
                    )
                )
                for r in x
            ]
        )
    levels = [x]
    for _ in range(tree.height - 1):
        levels.append(levels[-1][..., 0::2] + levels[-1][..., 1::2])
    levels.reverse()
    counts = np.empty_like(x)
    for c in (0, 1):
        released = [lv[:, c] for lv in levels]
        counts[:, c] = _binary_shrinkage(released, _split_variances(tree, c, tree.height))[0]
    totals = counts.sum(axis=-1)
    below = np.zeros((x.shape[0], 2, x.shape[2] + 1))
    np.cumsum(counts, axis=-1, out=below[..., 1:])
    inner = below[..., 1:-1]
    pool = (
        np.any(counts < 0, axis=-1) | (inner.min(axis=-1) < 0) | (inner.max(axis=-1) > totals)
    ) & (totals > 0)
    for r, c in zip(*np.nonzero(pool), strict=True):
        below[r, c] = _monotone_prefix_scalar(counts[r, c].tolist(), float(totals[r, c]))
    below[..., -1] = np.where(totals > 0, totals, 0.0)
    below[totals <= 0] = 0.0
    above = below[..., -1:] - below
    defined = np.all(totals > 0, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rates = above[..., :-1][..., ::-1] / above[..., :1]
    curve = np.concatenate((np.zeros((x.shape[0], 2, 1)), rates), axis=-1)
    area = np.clip(np.trapezoid(curve[:, 1], curve[:, 0], axis=-1), 0.0, 1.0)
    return np.where(defined, area, np.nan)


MIN_PR_POINTS = 4096
"""Fewest PR points :func:`dense_precision_recall_curve` returns (when the level has fewer bins)."""


def dense_precision_recall_curve(
    counts: BoundaryCounts, *, exact: bool = False, subdivide: int | None = None
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """(precision, recall, thresholds) in the layout of ``sklearn.metrics.precision_recall_curve``.

    Thresholds increase; the last (precision, recall) is (1, 0) with no
    threshold. Boundaries with no example predicted positive are left out (like
    scikit-learn, whose thresholds are the observed scores).

    Parameters
    ----------
    counts : BoundaryCounts
    exact : bool
        Whether the counts are exact (no noise). With noise, boundaries whose
        estimated true positives are 0 are left out as well: a point of recall 0
        has no width in AP or in the Area Error, and its precision (0) would
        only reflect noise in the negatives' tail (Xu–Cormode's quantile curve
        shows such points, cause 1 in issue 13). With exact counts they are
        kept: there the data put them.
    subdivide : int, optional
        Points per bin. Precision is not linear inside a bin (unlike the ROC
        curve), so each bin is cut into ``subdivide`` equal parts with both
        classes' counts spread uniformly (the ROC curve's own assumption,
        Davis–Goadrich interpolation of the PR curve). Default: enough for
        :data:`MIN_PR_POINTS` points in all, so a step integral (AP, the PR
        Area Error) no longer depends on how the curve is interpolated.
    """
    if not counts.defined:
        nan = np.full(1, np.nan)
        return nan, nan.copy(), nan.copy()
    n_bins = counts.edges.size - 1
    k = max(1, -(-MIN_PR_POINTS // n_bins)) if subdivide is None else int(subdivide)
    if k < 1:
        raise ValueError(f"subdivide must be >= 1, got {subdivide}")
    u = np.arange(k) / k
    bins = counts.bins
    fp = (counts.above[0, :-1, None] - u[None, :] * bins[0][:, None]).ravel()
    tp = (counts.above[1, :-1, None] - u[None, :] * bins[1][:, None]).ravel()
    width = np.diff(counts.edges)
    thresholds = (counts.edges[:-1, None] + u[None, :] * width[:, None]).ravel()
    keep = (tp + fp) > 0
    if not exact:
        keep &= tp > 0
    tp, fp = tp[keep], fp[keep]
    precision = tp / (tp + fp)
    recall = tp / counts.above[1, 0]
    return (
        np.concatenate((precision, [1.0])),
        np.concatenate((recall, [0.0])),
        thresholds[keep],
    )


def dense_average_precision(counts: BoundaryCounts, *, exact: bool = False) -> float:
    """AP = Σ_n (R_n − R_{n+1}) P_n of :func:`dense_precision_recall_curve`."""
    if not counts.defined:
        return float("nan")
    p, r, _ = dense_precision_recall_curve(counts, exact=exact)
    return float(-np.sum(np.diff(r) * p[:-1]))


def _is_exact(tree: HierarchicalHistogram) -> bool:
    return not tree.guarantee.is_private


# ------------------------------------------------------------ standard errors
def _leaf_weights(
    tree: HierarchicalHistogram,
    bin_weights: NDArray[np.float64],
    shrink: Shrinkage | None,
    *,
    through_simplex: bool = True,
) -> NDArray[np.float64]:
    """Consistent-leaf weights of a query on the level's bins (carried back through ``shrink``)."""
    n = tree.spec.n_leaves
    if shrink is None:
        return np.repeat(bin_weights, n // bin_weights.size)
    return _shrinkage_transpose(
        shrink, bin_weights, n, tree.branching, through_simplex=through_simplex
    )


def _through_projection(
    counts: BoundaryCounts, c: int, grad_bins: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Gradient with respect to the projected bins of class c, carried back to the released bins.

    The projection (:func:`_monotone_prefix`) is piecewise linear in the
    released prefix counts r_1..r_{B−1} and the total T: a pooled block of
    isotonic regression is the mean of its members, a block clipped at 0 is
    constant and one clipped at T equals T. Its derivative is therefore exact
    almost everywhere (ties between noisy counts have probability 0): a pooled
    block spreads the gradient of its members evenly over them, a block at 0
    passes none and a block at T passes it to the total. Returns the weights
    on the released (consistent) bins of the level of the linear query with
    that gradient. Up to :data:`_PAVA_IN_PYTHON_MAX` bins on Python floats
    (:func:`_through_projection_scalar`, equal bit for bit).
    """
    if grad_bins.size <= _PAVA_IN_PYTHON_MAX:
        return _through_projection_scalar(counts.above[c].tolist(), grad_bins.tolist())
    total = float(counts.above[c, 0])
    below = total - counts.above[c]  # projected prefix counts, below[0] = 0, below[B] = T
    n_bins = grad_bins.size
    g_below = np.zeros(n_bins + 1)
    g_below[1:n_bins] = grad_bins[:-1] - grad_bins[1:]
    g_below[n_bins] = grad_bins[-1]
    inner = below[1:n_bins]
    g_inner = g_below[1:n_bins]
    g_raw = np.zeros_like(inner)
    g_total = g_below[n_bins]
    if inner.size:
        starts = np.concatenate(([True], inner[1:] != inner[:-1]))
        block = np.cumsum(starts) - 1
        sums = np.bincount(block, weights=g_inner)
        sizes = np.bincount(block)
        value = inner[starts]
        free = (value > 0) & (value < total)
        g_raw = np.where(free[block], (sums / sizes)[block], 0.0)
        g_total += float(np.sum(sums[value >= total]))
    # r_j sums the released bins below boundary j: bin k enters every r_j with j > k.
    suffix = np.concatenate((np.cumsum(g_raw[::-1])[::-1], [0.0]))
    return np.asarray(suffix + g_total, dtype=np.float64)


def _through_projection_scalar(above: list[float], grad: list[float]) -> NDArray[np.float64]:
    """:func:`_through_projection` on Python floats: the same operations in the same order.

    Block sums add left to right from 0 (``np.bincount`` with weights), the
    suffix sums right to left (``np.cumsum`` of the reversed array); the
    blocks at the total are summed as numpy does below 8 terms (left to right)
    and by numpy from 8 on.
    """
    total = float(above[0])
    below = [total - a for a in above]
    n_bins = len(grad)
    g_inner = [grad[i] - grad[i + 1] for i in range(n_bins - 1)]
    g_total = grad[-1]
    inner = below[1:n_bins]
    g_raw = [0.0] * len(inner)
    if inner:
        block = []
        sums: list[float] = []
        sizes: list[int] = []
        value: list[float] = []
        for i, x in enumerate(inner):
            if i == 0 or x != inner[i - 1]:
                sums.append(0.0)
                sizes.append(0)
                value.append(x)
            sums[-1] += g_inner[i]
            sizes[-1] += 1
            block.append(len(sums) - 1)
        mean = [
            sm / sz if v > 0 and v < total else 0.0
            for sm, sz, v in zip(sums, sizes, value, strict=True)
        ]
        g_raw = [mean[k] for k in block]
        at_total = [sm for sm, v in zip(sums, value, strict=True) if v >= total]
        if len(at_total) < 8:
            extra = 0.0
            for x in at_total:
                extra += x
        else:
            extra = float(np.sum(np.array(at_total)))
        g_total += extra
    suffix = list(itertools.accumulate(reversed(g_raw)))[::-1]
    return np.array([x + g_total for x in suffix] + [0.0 + g_total], dtype=np.float64)


PINNED_FLOOR = 0.25
"""Floor of a delta-method SE, as a share of the SE that ignores the projections.

Where a projection pins the curve (a class's counts clipped at 0 or at the
total, e.g. an AUC at 1; a child the non-negative split of
:func:`wiener_levels` clips at 0, after which its parent fixes its sibling),
its derivative passes no noise and the delta method through it would say 0,
although whether it pins is itself decided by the noise. Both projections
are onto convex sets, hence non-expansive, so the SE of the unprojected
statistic (of the Wiener-shrunk bins, the split projection read as the
identity) bounds the spread from above; a quarter of it is the floor.
Measured with the non-negative split (``benchmarks/bench_binary_coverage.py
--seeds 100``): with the floor taken through that split as well, the AUC on
breast_cancer under DistDP ε = 1 covered 0.90 with z SD 1.78 (seed 92: SE
1.3e-3 for an error of 7.8e-3); around it, 0.94 with z SD 0.98.

Chosen (before the non-negative split) on breast_cancer (57 clients) and
a 20K-example logistic task, DistDP ε = 1 and LDP ε = 5, 60 seeds each:
coverage of 95 % intervals 0.95-0.98 for AP with it, 0.85-0.88 without (and SE
0 in 2 runs). The floor is taken through the shrinkage, not around it: around
it (the raw bins' SE, 4-5× the spread on breast_cancer under LDP ε = 5) it
bound in 64-96 % of the runs there and made every interval cover (100 seeds,
``benchmarks/bench_binary_coverage.py``).
"""


RARE_CLASS_EXAMPLES = 10.0
"""Effective examples (:func:`effective_examples`) below which a class counts as unresolved.

Then the SEs of the AUC and AP are floored at the whole SE of the unprojected,
unshrunk statistic instead of :data:`PINNED_FLOOR` of it
(:func:`_with_bias_allowance`). Measured (``benchmarks/bench_rare_class.py``):
291 examples with 17 positives, generated and breast_cancer-based, 29 or 291
clients, DistDP ε = 1 and LDP ε = 5 had 0.5–3.8 effective positives, and the
tasks of ``benchmarks/bench_binary_coverage.py`` 44 or more in each class.
"""


def effective_examples(tree: HierarchicalHistogram) -> NDArray[np.float64]:
    """Per class, the number of noise-free examples that would pin its ECDF as well as the release.

    A sample of n examples estimates its ECDF at the median with variance
    1/(4n); the release adds the noise variance v_F of its estimate there,
    X/T with X the count below the class's released median and T the class
    total: v_F = (Var X − Cov(X, T) + Var T/4)/T² (delta method at X = T/2,
    :meth:`~fedeval.sketches.hierarchical_histogram.HierarchicalHistogram.prefix_moments`).
    The effective number is 1/(1/T + 4 v_F): T without noise, far below T
    when the noise drowns the class (17 positives of 291 under DistDP ε = 1:
    about 1). Released values only (post-processing).

    Returns
    -------
    ndarray, shape (2,)
        0 for a class whose released total is not positive.
    """
    # Once per release: the small-data check and the SEs' rare-class floor both ask.
    cached = tree._derived.get("effective_examples")
    if cached is not None:
        return np.array(cached)
    out = np.zeros(2)
    totals = tree.totals()
    for c in (0, 1):
        t = float(totals[c])
        if not t > 0 or not tree.has_mass(cls=c):
            continue
        q = tree.quantiles(0.5, cls=c)
        v, cov, vt = tree.prefix_moments(np.atleast_1d(q), c)
        var_f = max(float(v[0] - cov[0] + vt / 4.0), 0.0) / t**2
        out[c] = 1.0 / (1.0 / t + 4.0 * var_f)
    tree._derived["effective_examples"] = out.copy()
    return out


def _auc_and_gradients(
    counts: BoundaryCounts,
) -> tuple[float, NDArray[np.float64], NDArray[np.float64]]:
    """AUC of the projected bins and its gradients (negatives, positives) on them."""
    p, n = counts.bins[1], counts.bins[0]
    big_p, big_n = counts.above[1, 0], counts.above[0, 0]
    auc = float(np.sum(p * (np.cumsum(n) - n + 0.5 * n)) / (big_p * big_n))
    grad_p = (np.cumsum(n) - 0.5 * n) / (big_p * big_n) - auc / big_p
    above_p = big_p - np.cumsum(p)  # positives in higher bins
    grad_n = (above_p + 0.5 * p) / (big_p * big_n) - auc / big_n
    return auc, grad_n, grad_p


def _ap_and_gradients(
    counts: BoundaryCounts,
) -> tuple[float, NDArray[np.float64], NDArray[np.float64]]:
    """Bin-level AP of the projected bins and its gradients (negatives, positives) on them."""
    p = counts.bins[1]
    a_i, f_i = counts.above[1, :-1], counts.above[0, :-1]
    big_p = counts.above[1, 0]
    d = a_i + f_i
    with np.errstate(divide="ignore", invalid="ignore"):
        prec = np.where(d > 0, a_i / d, 1.0)
        d2 = np.where(d > 0, d**2, np.inf)
    ap = float(np.sum(p * prec) / big_p)
    grad_p = (prec + np.cumsum(p * f_i / d2) - ap) / big_p
    grad_n = -np.cumsum(p * a_i / d2) / big_p
    return ap, grad_n, grad_p


def _se_and_bias(
    tree: HierarchicalHistogram,
    counts: BoundaryCounts,
    statistic: Any,
) -> tuple[float, float]:
    """Delta-method SE of ``statistic`` on ``counts``, floored, and the estimated bias that widens it.

    Three linear queries on both classes, answered by one
    :meth:`~fedeval.sketches.hierarchical_histogram.HierarchicalHistogram.joint_query_variance`
    (the classes share the split of clients over levels under level
    assignment):

    * through: the gradient carried back through the projection
      (:func:`_through_projection`) and the shrinkage (:func:`_shrinkage_transpose`),
      the delta-method variance;
    * the floor's: through the shrinkage only, its non-negative split read as
      the identity (:data:`PINNED_FLOOR`). When the shrinkage has dropped every
      split the statistic no longer moves with the released counts to first
      order (an AUC of evenly spread classes depends on the totals only, and
      not at all on their scale), so the floor falls back to the raw bins'
      gradient: under noise an SE is never 0.

    The shrinkage and the non-negative split trade noise for a bias that the
    delta method does not see. D = stat(shrunk) − stat(unshrunk) (the
    consistent level, monotone-projected) has mean ≈ the difference of their
    biases and E[D²] = (that difference)² + Var(D); the SE is √(SE² + D²).

    Rare classes: when a class has fewer than :data:`RARE_CLASS_EXAMPLES`
    effective examples (:func:`effective_examples`) the shrinkage drops its
    splits and spreads it evenly over the domain, so the AUC and AP reflect
    the other class's distribution more than the data (291 examples with 17
    positives: biases of −0.11 to +0.09 in AUC and up to +0.17 in AP, 95 %
    coverage 0.85–0.98 for the AUC and 0.86–0.98 for the AP); the floor is
    then the larger of the whole SE of the unshrunk statistic and
    √(v(1 − v)/n_eff), the largest spread of a mean of n_eff values in
    [0, 1] with mean v (Bhatia–Davis; the AUC and AP are means over the
    positives of values in [0, 1], and the release is worth n_eff noise-free
    examples of its weakest class), capped at :data:`MAX_SE`.

    Why not the sharper √(SE² + max(D² − Var(D), 0)), Var(D) by the delta
    method (an unbiased estimate of the bias², used before the non-negative
    split): it assumes the unshrunk statistic unbiased, and it is not: its
    monotone projection clips negative counts in sparse regions, and under
    local DP that bias is as large as the shrinkage's (AP on the 200K
    generated task, LDP ε = 5: −0.0023 unshrunk, −0.0033 shrunk, SD 0.0047).
    Measured (nominal 95 % intervals of the exact pooled value, seeds 0-99 of
    ``benchmarks/bench_binary_coverage.py`` and held-out seeds 1000-1299, on
    breast_cancer, the 200K generated task and a 20K logistic task, DistDP
    ε = 1 and LDP ε = 5): with the sharper form the AP covered 0.86 and 0.85
    (generated, LDP) and 0.88 (20K, LDP) in runs where the bias was 0.8-0.9
    SE; with √(SE² + D²) every AUC and AP covered 0.91-0.99, the 0.99s where
    the SE is conservative: the AUC on the generated task under LDP (seeds
    0-99; 0.97 on the held-out ones) and the AP on breast_cancer under DistDP
    (held-out; z SD 0.6-0.7). Capped at :data:`MAX_SE`.
    """
    value, grad_n, grad_p = statistic(counts)
    sh = counts.shrinkage or (None, None)
    shrunk = counts.shrinkage is not None
    raw = counts.unshrunk
    with_bias = shrunk and raw is not None and raw.defined
    rows: list[list[NDArray[np.float64]]] = []
    for c, g in ((0, grad_n), (1, grad_p)):
        through = _leaf_weights(tree, _through_projection(counts, c, g), sh[c])
        r = [through, _leaf_weights(tree, g, None)]
        if shrunk:
            r.append(_leaf_weights(tree, g, sh[c], through_simplex=False))
        rows.append(r)
    var = tree.joint_query_variance([np.array(rows[0]), np.array(rows[1])])
    floor = var[1]
    if shrunk and var[2] > 1e-6 * var[1]:
        floor = var[2]
    share, ignorance = PINNED_FLOOR, 0.0
    n_eff = float(np.min(effective_examples(tree))) if shrunk else math.inf
    if n_eff < RARE_CLASS_EXAMPLES:
        # A class the noise drowns: the shrinkage spreads it evenly, a guess the
        # data do not check. The floor is the whole linear SE and the spread of a
        # mean of n_eff values in [0, 1] with this mean (RARE_CLASS_EXAMPLES).
        floor, share = var[1], 1.0
        v = min(max(value, 0.0), 1.0)
        ignorance = math.sqrt(v * (1.0 - v) / n_eff) if n_eff > 0 else MAX_SE
    se = min(max(np.sqrt(max(var[0], 0.0)), share * np.sqrt(max(floor, 0.0)), ignorance), MAX_SE)
    bias = 0.0
    if with_bias:
        assert raw is not None
        bias = float(value - statistic(raw)[0])
    return float(se), bias


def _with_bias_allowance(
    tree: HierarchicalHistogram,
    counts: BoundaryCounts,
    statistic: Any,
) -> float:
    """√(delta-method SE² + estimated bias²), capped at :data:`MAX_SE` (:func:`_se_and_bias`)."""
    se, bias = _se_and_bias(tree, counts, statistic)
    return float(min(float(np.hypot(se, bias)), MAX_SE))


def dense_se_parts(
    tree: HierarchicalHistogram, counts: BoundaryCounts, metric: str
) -> tuple[float, float]:
    """The two parts of :func:`dense_auc_se` / :func:`dense_ap_se`: the floored delta-method
    SE and the estimated bias of the shrinkage (signed; 0 when nothing was shrunk).

    The standard error of one statistic is √(se² + bias²). For a difference of
    two such statistics the biases are subtracted first (two similar models'
    shrinkage biases largely cancel), which is what
    :class:`fedeval.comparison.Comparison` does.
    """
    if metric not in _STATISTICS:
        raise ValueError(f"metric must be one of {sorted(_STATISTICS)}, got {metric!r}")
    if not tree.guarantee.is_private:
        return 0.0, 0.0
    if not counts.defined:
        return float("nan"), float("nan")
    return _se_and_bias(tree, counts, _STATISTICS[metric])


def dense_auc_se(tree: HierarchicalHistogram, counts: BoundaryCounts) -> float:
    """Standard error of :func:`dense_roc_auc` from the privacy noise (delta method).

    AUC = Σ_i p_i (N_{<i} + n_i/2) / (P N) over the projected bins of the
    level. Its gradient with respect to the bin counts of each class, carried
    back through the monotone projection (:func:`_through_projection`) and the
    Wiener shrinkage (:func:`_shrinkage_transpose`, its exact a.e. derivative) to
    the consistent leaves, is one linear query on both classes whose exact
    variance on the consistent tree (noise, and under level assignment the
    split's sampling, shared by the classes and levels) is
    :meth:`~fedeval.sketches.hierarchical_histogram.HierarchicalHistogram.joint_query_variance`.
    Floored at :data:`PINNED_FLOOR` times the SE without the projection, so it
    is positive whenever there is noise, and widened by the shrinkage's
    estimated bias (:func:`_with_bias_allowance`); 0 without noise; capped at
    :data:`MAX_SE`.
    """
    if not tree.guarantee.is_private:
        return 0.0
    if not counts.defined:
        return float("nan")
    return _with_bias_allowance(tree, counts, _auc_and_gradients)


def dense_ap_se(tree: HierarchicalHistogram, counts: BoundaryCounts) -> float:
    """Standard error of :func:`dense_average_precision` from the privacy noise (delta method).

    AP = (1/P) Σ_i p_i A_i / (A_i + F_i), A_i and F_i the positives and
    negatives at or above bin i's lower edge. Gradient with respect to p_j:
    prec_j/P + Σ_{i<=j} p_i F_i / D_i² / P − AP/P; with respect to n_j:
    −Σ_{i<=j} p_i A_i / D_i² / P. Exact leaf-query variances, floor and bias
    allowance as for the AUC; 0 without noise.
    """
    if not tree.guarantee.is_private:
        return 0.0
    if not counts.defined:
        return float("nan")
    return _with_bias_allowance(tree, counts, _ap_and_gradients)


_STATISTICS = {"roc_auc": _auc_and_gradients, "average_precision": _ap_and_gradients}


def statistic_gradients(counts: BoundaryCounts, metric: str) -> tuple[float, NDArray[np.float64]]:
    """A dense statistic of the projected bins and its gradient on them (its influence values).

    Parameters
    ----------
    counts : BoundaryCounts
    metric : {"roc_auc", "average_precision"}

    Returns
    -------
    value : float
    gradient : ndarray, shape (2, B)
        ∂value/∂(count of class c in bin i): row 0 the negatives, row 1 the
        positives. For the AUC, a positive in bin i has (V10_i − AUC)/P and a
        negative in bin j (V01_j − AUC)/N, V10 and V01 DeLong's placement values
        (:func:`delong_auc_se`): the influence of one example on the statistic,
        from which paired sampling covariances follow.
    """
    if metric not in _STATISTICS:
        raise ValueError(f"metric must be one of {sorted(_STATISTICS)}, got {metric!r}")
    value, grad_n, grad_p = _STATISTICS[metric](counts)
    return value, np.stack((grad_n, grad_p))


def dense_leaf_weights(
    tree: HierarchicalHistogram, counts: BoundaryCounts, metric: str
) -> NDArray[np.float64]:
    """Consistent-leaf weights of the linearised dense statistic, shape (2, n_leaves).

    The linear query on the consistent tree's leaves whose noise is the delta
    method's for ``metric`` (carried back through the monotone projection and
    the Wiener shrinkage, as :func:`dense_auc_se` and :func:`dense_ap_se` do);
    one example in leaf ℓ of class c enters it with weight ``w[c, ℓ]``, which is
    what the covariance of two such statistics under a shared split of clients
    needs.
    """
    _, grads = statistic_gradients(counts, metric)
    sh = counts.shrinkage or (None, None)
    return np.stack(
        [_leaf_weights(tree, _through_projection(counts, c, grads[c]), sh[c]) for c in (0, 1)]
    )


def delong_auc_se(counts: BoundaryCounts) -> float:
    """Sampling standard error of the population AUC: DeLong's variance from released bin counts.

    Placements with ties counted ½: a positive in bin i has V10 = (N_{<i} + n_i/2)/N,
    a negative in bin j has V01 = (P_{>j} + p_j/2)/P; Var = S10/P + S01/N with
    S10, S01 their sample variances. This is the uncertainty of the AUC as an
    estimate of a population's from this sample of P + N examples, separate from
    the privacy noise (which :func:`dense_auc_se` measures). Computed from
    released (projected) counts only.

    References
    ----------
    DeLong, DeLong and Clarke-Pearson, Biometrics 44(3), 1988.
    """
    if not counts.defined:
        return float("nan")
    p, n = counts.bins[1], counts.bins[0]
    big_p, big_n = counts.above[1, 0], counts.above[0, 0]
    if big_p <= 1 or big_n <= 1:
        return float("nan")
    v10 = (np.cumsum(n) - 0.5 * n) / big_n
    v01 = (big_p - np.cumsum(p) + 0.5 * p) / big_p
    auc = float(np.sum(p * v10) / big_p)
    s10 = float(np.sum(p * (v10 - auc) ** 2) / (big_p - 1))
    s01 = float(np.sum(n * (v01 - auc) ** 2) / (big_n - 1))
    return float(np.sqrt(max(s10 / big_p + s01 / big_n, 0.0)))


def pointwise_band(
    x: NDArray[np.float64],
    y: NDArray[np.float64],
    se_x: NDArray[np.float64],
    se_y: NDArray[np.float64],
    grid: NDArray[np.float64],
    z: float,
    *,
    se_at: NDArray[np.float64] | None = None,
    slope_window: float = 0.02,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Pointwise band of y over a grid of x for a curve whose points both move with noise.

    At a grid value x0 the curve's y is y(t) at the threshold t where x(t) = x0, so by
    the delta method Var ≈ se_y² + (dy/dx)² se_x² (the two coordinates come from the two
    classes, or from a ratio whose covariance is small against these terms; the
    slope is the chord over ±``slope_window``). Clipped to [0, 1].

    Parameters
    ----------
    x, y, se_x, se_y : ndarray, shape (n,)
        Curve points in non-decreasing x and their standard errors.
    grid : ndarray
    z : float
        Normal quantile of the two-sided level.
    se_at : ndarray, optional
        Non-decreasing x where ``se_x`` and ``se_y`` are given, when they are
        computed on a subset of the points (standard errors vary smoothly along
        the curve; the band's centre stays the full curve).
    """
    yg = np.interp(grid, x, y)
    lo = np.clip(grid - slope_window, x[0], x[-1])
    hi = np.clip(grid + slope_window, x[0], x[-1])
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = np.where(hi > lo, (np.interp(hi, x, y) - np.interp(lo, x, y)) / (hi - lo), 0.0)
    xs = x if se_at is None else se_at
    se = np.sqrt(np.interp(grid, xs, se_y) ** 2 + slope**2 * np.interp(grid, xs, se_x) ** 2)
    return np.clip(yg - z * se, 0.0, 1.0), np.clip(yg + z * se, 0.0, 1.0)


def _curve_points(
    counts: BoundaryCounts, kind: str
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.intp]]:
    """(x, y, boundary index) of every point of the level's ROC or PR curve, by increasing x.

    ROC: x = FPR, y = TPR at "score ≥ edge i"; PR: x = recall, y = precision
    (boundaries with no positive predicted are left out, as in
    :func:`dense_precision_recall_curve` under noise).
    """
    neg, pos = counts.above[0, :-1], counts.above[1, :-1]
    idx = np.arange(neg.size)
    if kind == "roc":
        x, y = neg / counts.above[0, 0], pos / counts.above[1, 0]
    else:
        keep = pos > 0
        idx, neg, pos = idx[keep], neg[keep], pos[keep]
        x, y = pos / counts.above[1, 0], pos / (pos + neg)
    order = np.argsort(x, kind="stable")
    return x[order], y[order], idx[order]


def dense_band_se(
    tree: HierarchicalHistogram,
    counts: BoundaryCounts,
    grid: NDArray[np.float64],
    *,
    kind: str,
    slope_window: float = 0.02,
) -> NDArray[np.float64]:
    """SE of the dense ROC curve's TPR at fixed FPR (``kind="roc"``) or the PR curve's precision at fixed recall.

    At a grid value x0 the curve's y is y(t) at the boundary t where x(t) = x0,
    so its error is e_y(t) − y'(x0)·e_x(t) (the point moves along the curve
    with the noise in x): one linear functional of both classes' bins, with
    the gradient of y minus the slope (the chord over ±``slope_window``) times
    the gradient of x — for ROC (1[j ≥ t] − TPR)/P on the positives and
    −slope·(1[j ≥ t] − FPR)/N on the negatives; for PR
    1[j ≥ t]·F/(A + F)² − slope·(1[j ≥ t] − R)/P on the positives and
    −1[j ≥ t]·A/(A + F)² on the negatives (A, F the positives and negatives
    at or above t). Its SE follows the policy of the AUC and AP
    (:func:`_with_bias_allowance`): the exact a.e. derivative through the
    monotone projection and the Wiener shrinkage, floored at
    :data:`PINNED_FLOOR` of the raw bins' SE, widened by the shrinkage's bias
    estimated as the difference of the shrunk and unshrunk curves at x0, and
    capped at :data:`MAX_SE` (where the curve is pinned at 0 or 1 the floor is
    the whole raw SE; widening it to within two raw SEs of 0 or 1 left
    breast_cancer's ROC at 0.90 and pushed its PR bands to 0.99–1.00). One joint variance query for all grid points
    (the split's sampling covariance of the two classes under local DP
    included).

    Why: the bands read their SEs from the raw consistent tree
    (:func:`fedeval.metrics.confusion.threshold_metrics`) around the shrunk
    curve, and ignored the correlation of x and y along the PR curve; the
    ROC bands covered 1.00 at 1.4–3.2 times the needed width under DistDP and
    PR bands 0.79 at recall 0.8 (``benchmarks/bench_band_coverage.py``).

    Returns
    -------
    ndarray, shape of ``grid``
        0 without noise; NaN where the curve is undefined.
    """
    g = np.asarray(grid, dtype=np.float64)
    if not tree.guarantee.is_private:
        return np.zeros(g.shape)
    if not counts.defined:
        return np.full(g.shape, np.nan)
    x, y, idx = _curve_points(counts, kind)
    if x.size < 2:
        return np.full(g.shape, MAX_SE)
    yg = np.interp(g, x, y)
    lo = np.clip(g - slope_window, x[0], x[-1])
    hi = np.clip(g + slope_window, x[0], x[-1])
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = np.where(hi > lo, (np.interp(hi, x, y) - np.interp(lo, x, y)) / (hi - lo), 0.0)
    at = idx[np.clip(np.searchsorted(x, g), 0, x.size - 1)]
    n_bins = counts.bins.shape[1]
    step = (np.arange(n_bins)[None, :] >= at[:, None]).astype(np.float64)  # 1[j ≥ t]
    big_n, big_p = counts.above[0, 0], counts.above[1, 0]
    a, f = counts.above[1, at], counts.above[0, at]
    if kind == "roc":
        g_pos = (step - (a / big_p)[:, None]) / big_p
        g_neg = -slope[:, None] * (step - (f / big_n)[:, None]) / big_n
    else:
        d2 = np.where(a + f > 0, (a + f) ** 2, np.inf)
        g_pos = step * (f / d2)[:, None] - slope[:, None] * (step - (a / big_p)[:, None]) / big_p
        g_neg = -step * (a / d2)[:, None]
    sh = counts.shrinkage or (None, None)
    through: list[NDArray[np.float64]] = []
    raw: list[NDArray[np.float64]] = []
    for c, grads in ((0, g_neg), (1, g_pos)):
        through.append(
            np.array([_leaf_weights(tree, _through_projection(counts, c, r), sh[c]) for r in grads])
        )
        raw.append(np.array([_leaf_weights(tree, r, None) for r in grads]))
    var_through = tree.joint_query_variance(through)
    var_raw = tree.joint_query_variance(raw)
    # Where the projections pin the curve at 0 or 1 (a TPR or precision of 1) their
    # derivative passes no noise; a projection onto [0, 1], which holds the truth,
    # never moves an estimate away from it, so the whole raw SE bounds the error there.
    pinned = (yg <= 1e-9) | (yg >= 1.0 - 1e-9)
    share = np.where(pinned, 1.0, PINNED_FLOOR)
    se = np.maximum(
        np.sqrt(np.maximum(var_through, 0.0)), share * np.sqrt(np.maximum(var_raw, 0.0))
    )
    unshrunk = counts.unshrunk
    if unshrunk is not None and unshrunk.defined:
        xu, yu, _ = _curve_points(unshrunk, kind)
        if xu.size >= 2:
            se = np.hypot(se, yg - np.interp(g, xu, yu))
    return np.asarray(np.minimum(se, MAX_SE), dtype=np.float64)
