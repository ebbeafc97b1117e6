"""Paired covariances of two models' metrics on the same examples, read from a pair grid.

Two statistics T_A and T_B of the same n examples are, to first order, sums of
their examples' influence values: T_A ≈ const + Σ_i g_A(x_i) with g_A(x) the
derivative of T_A with respect to the count of x's cell. Under sampling of the
examples from a population (class sizes fixed, as DeLong et al. condition) the
covariance of the two is

    Cov(T_A, T_B) = Σ_c n_c/(n_c − 1) · [Σ_{i∈c} g_A(x_i) g_B(x_i) − (Σ_{i∈c} g_A)(Σ_{i∈c} g_B)/n_c]

(for the AUC this is DeLong's S10/P + S01/N with its covariance, eq. (3)–(5)
of DeLong et al. 1988; for a recall or an accuracy at a threshold it is
McNemar's variance of a paired difference of proportions: only the
discordant examples, where the models decide differently, contribute). Each
model's own sums come from its fine hierarchy; the cross sum Σ g_A g_B needs
the pairing, which only the pair grid holds: the influence values are
averaged over each of its coarse bins (weighted by the model's own fine
counts) and summed against the grid's cells (:func:`cross_sum`). Variation
inside a pair cell is not seen; for two models whose scores move together it
makes the cross sum too small and the variance of the difference too large,
on the safe side (measured in ``benchmarks/bench_compare_coverage.py``).

The same cross sum gives the covariance of two releases whose clients were
split at random over their parts (local DP, layout "assign"): an example
counted in a part of model A is missing from every part of model B, so the
two estimates' sampling errors are *negatively* correlated,

    Cov = −[N Σ_i u_A(x_i) u_B(x_i) − Σ_i u_A Σ_i u_B] / (N − 1),

u the statistics' leaf weights (the derivation of
:meth:`~fedeval.sketches.hierarchical_histogram.HierarchicalHistogram.joint_query_variance`
with the parts of two models).

References
----------
DeLong, DeLong and Clarke-Pearson, Biometrics 44(3):837–845, 1988, §2 eqs.
(2)–(5); McNemar, Psychometrika 12(2):153–157, 1947 (the paired test on
discordant pairs); Obuchowski, Stat. Med. 16, 1997 (paired AUC comparisons).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fedeval.sketches.hierarchical_histogram import HierarchicalHistogram
from fedeval.sketches.paired import PairGrid

__all__ = [
    "JointDecisions",
    "coarse_means",
    "cross_sum",
    "influence_variance",
    "joint_decisions",
    "paired_covariance",
    "split_covariance",
]


def coarse_means(
    values: NDArray[np.float64], counts: NDArray[np.float64], n_bins: int
) -> NDArray[np.float64]:
    """Count-weighted mean of per-fine-bin values inside each of ``n_bins`` equal coarse bins.

    Parameters
    ----------
    values, counts : ndarray, shape (2, B)
        Per class and fine bin: a function of the bin, and the class's count
        there (negative counts read as 0). B must be a multiple of ``n_bins``.

    Returns
    -------
    ndarray, shape (2, n_bins)
        Where a coarse bin holds no count, the plain mean of its fine values.
    """
    v = np.asarray(values, dtype=np.float64)
    w = np.clip(np.asarray(counts, dtype=np.float64), 0.0, None)
    per = v.shape[1] // n_bins
    if per * n_bins != v.shape[1]:
        raise ValueError(f"{v.shape[1]} fine bins do not split into {n_bins} coarse bins")
    vw = (v * w).reshape(2, n_bins, per).sum(axis=2)
    ws = w.reshape(2, n_bins, per).sum(axis=2)
    plain = v.reshape(2, n_bins, per).mean(axis=2)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(np.where(ws > 0, vw / np.where(ws > 0, ws, 1.0), plain))


def cross_sum(
    pair: PairGrid,
    values_a: NDArray[np.float64],
    counts_a: NDArray[np.float64],
    values_b: NDArray[np.float64],
    counts_b: NDArray[np.float64],
) -> float:
    """Estimate of Σ_i f_A(x_i) f_B(x_i) over all examples from the pair grid.

    ``values_*`` are per (class, fine bin) of each model's hierarchy and
    ``counts_*`` that model's counts there; each is averaged over the pair
    grid's coarse bins (:func:`coarse_means`) and summed against the cells
    (:meth:`PairGrid.cross_moment`).
    """
    g = pair.n_bins
    return pair.cross_moment(
        coarse_means(values_a, counts_a, g), coarse_means(values_b, counts_b, g)
    )


def _class_sums(values: NDArray[np.float64], counts: NDArray[np.float64]) -> NDArray[np.float64]:
    """Per class: Σ counts·values (negative counts read as 0)."""
    return np.asarray(np.sum(np.clip(counts, 0.0, None) * values, axis=1), dtype=np.float64)


def paired_covariance(
    pair: PairGrid,
    grad_a: NDArray[np.float64],
    counts_a: NDArray[np.float64],
    grad_b: NDArray[np.float64],
    counts_b: NDArray[np.float64],
    totals: NDArray[np.float64],
) -> tuple[float, float, float]:
    """Sampling variances of T_A and T_B and their covariance (module docstring).

    Parameters
    ----------
    pair : PairGrid
    grad_a, grad_b : ndarray, shape (2, B)
        Influence values per (class, fine bin) of each model's statistic.
    counts_a, counts_b : ndarray, shape (2, B)
        Each model's (projected, non-negative) counts on the same fine bins.
    totals : ndarray, shape (2,)
        The class totals n_c (released).

    Returns
    -------
    var_a, var_b, cov : float
    """
    n = np.maximum(np.asarray(totals, dtype=np.float64), 2.0)
    factor = n / (n - 1.0)
    g = pair.n_bins
    ca = np.clip(counts_a, 0.0, None)
    cb = np.clip(counts_b, 0.0, None)
    sa, sb = _class_sums(grad_a, ca), _class_sums(grad_b, cb)
    ma, mb = coarse_means(grad_a, ca, g), coarse_means(grad_b, cb, g)
    cross = np.einsum("cij,ci,cj->c", pair.counts, ma, mb)
    cov = float(np.sum(factor * (cross - sa * sb / n)))
    return influence_variance(grad_a, ca, totals), influence_variance(grad_b, cb, totals), cov


def influence_variance(
    grad: NDArray[np.float64], counts: NDArray[np.float64], totals: NDArray[np.float64]
) -> float:
    """Sampling variance of one statistic from its influence values (classes fixed).

    Σ_c n_c/(n_c − 1) · [Σ_i g(x_i)² − (Σ_i g(x_i))²/n_c] over the examples of
    class c, with ``grad`` and ``counts`` per (class, fine bin), shape (2, B).
    For the dense AUC this is DeLong's S10/P + S01/N
    (:func:`fedeval.metrics.dense.delong_auc_se` squared).
    """
    n = np.maximum(np.asarray(totals, dtype=np.float64), 2.0)
    c = np.clip(counts, 0.0, None)
    s = _class_sums(grad, c)
    return float(max(np.sum(n / (n - 1.0) * (_class_sums(grad**2, c) - s**2 / n)), 0.0))


def split_covariance(
    pair: PairGrid,
    tree_a: HierarchicalHistogram,
    weights_a: NDArray[np.float64],
    tree_b: HierarchicalHistogram,
    weights_b: NDArray[np.float64],
) -> float:
    """Covariance of two models' estimates from the random split of clients over parts.

    Zero unless both trees were released with clients assigned to parts
    (local DP, layout "assign"). ``weights_*`` are the statistics' consistent-leaf
    weights, shape (2, n_leaves) (:func:`fedeval.metrics.dense.dense_leaf_weights`).
    """
    if tree_a.part_fractions is None or tree_b.part_fractions is None:
        return 0.0
    leaves_a = np.clip(np.asarray(tree_a.leaves, dtype=np.float64), 0.0, None)
    leaves_b = np.clip(np.asarray(tree_b.leaves, dtype=np.float64), 0.0, None)
    big_n = 0.5 * float(leaves_a.sum() + leaves_b.sum())
    if big_n <= 1.0:
        return 0.0
    ua = float(np.sum(leaves_a * weights_a))
    ub = float(np.sum(leaves_b * weights_b))
    cross = cross_sum(pair, weights_a, leaves_a, weights_b, leaves_b)
    return -(big_n * cross - ua * ub) / (big_n - 1.0)


@dataclass(frozen=True)
class JointDecisions:
    """Estimated counts of the examples by class and by the two models' decisions at a threshold.

    Attributes
    ----------
    cells : ndarray, shape (2, 2, 2)
        ``cells[c, i, j]``: examples of class c that model A predicts positive
        (i = 1) or not and model B predicts positive (j = 1) or not. The
        discordant cells are (i, j) = (1, 0) and (0, 1).
    """

    cells: NDArray[np.float64]

    @property
    def totals(self) -> NDArray[np.float64]:
        return np.asarray(self.cells.sum(axis=(1, 2)), dtype=np.float64)

    def sampling_variance(self, gradient: NDArray[np.float64]) -> float:
        """Var of Σ_i g(x_i) under sampling, classes fixed (``gradient`` per cell, shape (2, 2, 2))."""
        m = np.clip(self.cells, 0.0, None)
        n = np.maximum(m.sum(axis=(1, 2)), 2.0)
        s = np.sum(m * gradient, axis=(1, 2))
        sq = np.sum(m * gradient**2, axis=(1, 2))
        return float(max(np.sum(n / (n - 1.0) * (sq - s**2 / n)), 0.0))

    def cross_sum(self, grad_a: NDArray[np.float64], grad_b: NDArray[np.float64]) -> float:
        """Σ_i g_A(x_i) g_B(x_i) over all examples (gradients per cell, shape (2, 2, 2))."""
        return float(np.sum(np.clip(self.cells, 0.0, None) * grad_a * grad_b))


def _above_fractions(tree: HierarchicalHistogram, pair: PairGrid, threshold: float) -> Any:
    """Per class and pair bin: the share of the model's examples there scoring >= threshold."""
    edges = pair.edges
    g = pair.n_bins
    out = np.zeros((2, g))
    out[:, edges[:-1] >= threshold] = 1.0
    inside = np.flatnonzero((edges[:-1] < threshold) & (edges[1:] > threshold))
    for i in inside:
        lo, hi = float(edges[i]), float(edges[i + 1])
        for c in (0, 1):
            above, _ = tree.range_counts(np.array([threshold]), np.array([hi]), cls=c)
            whole, _ = tree.range_counts(np.array([lo]), np.array([hi]), cls=c)
            w = float(whole[0])
            out[c, i] = float(np.clip(float(above[0]) / w, 0.0, 1.0)) if w > 0 else 0.5
    return out


def joint_decisions(
    pair: PairGrid,
    tree_a: HierarchicalHistogram,
    tree_b: HierarchicalHistogram,
    threshold: float,
    predicted_a: NDArray[np.float64],
    predicted_b: NDArray[np.float64],
    totals: NDArray[np.float64],
) -> JointDecisions:
    """The 2 × 2 table of decisions per class at ``threshold`` (McNemar's table, per class).

    The margins are each model's own released counts (``predicted_*[c]``:
    examples of class c scored at or above the threshold, from its
    hierarchy); the agreements come from the pair grid: a pair cell wholly
    above the threshold on both axes counts fully, and a pair bin that the
    threshold cuts contributes the share of the model's examples above it in
    that bin (from its fine hierarchy), as if the two models' positions inside
    one pair cell were independent. That overstates the discordant counts when
    the models agree closely inside a cell (a wider, safe interval); on the
    grid's edges it is exact. The table is clipped to non-negative cells with
    the given margins.
    """
    pa = _above_fractions(tree_a, pair, threshold)
    pb = _above_fractions(tree_b, pair, threshold)
    both = np.einsum("cij,ci,cj->c", pair.counts, pa, pb)
    cells = np.zeros((2, 2, 2))
    for c in (0, 1):
        n = max(float(totals[c]), 0.0)
        a = float(np.clip(predicted_a[c], 0.0, n))
        b = float(np.clip(predicted_b[c], 0.0, n))
        n11 = float(np.clip(both[c], max(0.0, a + b - n), min(a, b)))
        cells[c] = [[n - a - b + n11, b - n11], [a - n11, n11]]
    return JointDecisions(cells)
