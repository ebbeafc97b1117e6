"""Confusion counts at thresholds: the one primitive of threshold metrics.

From the per-class hierarchical histogram, the number of examples of class c
predicted positive at threshold T (score >= T) is the class total minus the
prefix count below T. Precision, recall (TPR), FPR and accuracy are ratios of
such linear queries, so their standard errors follow by the delta method from
the exact variances of linear leaf queries (:meth:`leaf_query_variance`) and,
under level assignment (local DP), the covariance of the split's sampling
errors, which the classes share
(:meth:`~fedeval.sketches.hierarchical_histogram.HierarchicalHistogram.split_prefix_covariance`).

References
----------
cormode-markov-2023-federated-calibration-evaluation §4, Theorem 2.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fedeval.metrics.dense import MAX_SE
from fedeval.metrics.inputs import hierarchy_of

__all__ = ["ThresholdMetrics", "threshold_metrics"]


@dataclass(frozen=True)
class ThresholdMetrics:
    """Metrics of the classifier ``score >= threshold``, with uncertainty.

    All arrays have the shape of the thresholds passed in.

    Attributes
    ----------
    threshold, precision, recall, fpr, accuracy : ndarray
    precision_se, recall_se, fpr_se, accuracy_se : ndarray
        Standard errors from the privacy noise (delta method on the exact
        variances of the prefix count, the class total and their covariance,
        O(b·h) per threshold), capped at 0.5 (the largest spread of a value in
        [0, 1]). 0 under secure aggregation, and at the domain's low end where
        recall and FPR are 1 by construction.
    bucketization_bound : ndarray
        Largest possible change of recall/FPR from the unknown position of
        examples inside the leaf holding the threshold (the leaf's share of its
        class), the Δ = 2^-h term of Theorem 2. Not a standard error.
    tp, fp, positives, negatives : ndarray
        Estimated counts behind the ratios.
    positive_rate, positive_rate_se : ndarray or None
        Share of all examples predicted positive, (TP + FP)/(P + N) (demographic
        parity compares it across groups), and its standard error from the
        privacy noise.
    """

    threshold: NDArray[np.float64]
    precision: NDArray[np.float64]
    recall: NDArray[np.float64]
    fpr: NDArray[np.float64]
    accuracy: NDArray[np.float64]
    precision_se: NDArray[np.float64]
    recall_se: NDArray[np.float64]
    fpr_se: NDArray[np.float64]
    accuracy_se: NDArray[np.float64]
    bucketization_bound: NDArray[np.float64]
    tp: NDArray[np.float64]
    fp: NDArray[np.float64]
    positives: float
    negatives: float
    positive_rate: NDArray[np.float64] | None = None
    positive_rate_se: NDArray[np.float64] | None = None

    @property
    def tpr(self) -> NDArray[np.float64]:
        return self.recall

    def as_dict(self) -> dict[str, Any]:
        """Plain floats/lists, for JSON output."""
        out: dict[str, Any] = {}
        for name in (
            "threshold",
            "precision",
            "recall",
            "fpr",
            "accuracy",
            "precision_se",
            "recall_se",
            "fpr_se",
            "accuracy_se",
            "bucketization_bound",
        ):
            v = np.asarray(getattr(self, name))
            out[name] = v.item() if v.ndim == 0 else v.tolist()
        return out


def _se(var: NDArray[np.float64]) -> NDArray[np.float64]:
    """Standard error from a delta-method variance, capped at :data:`~fedeval.metrics.dense.MAX_SE`."""
    return np.asarray(np.minimum(np.sqrt(np.maximum(var, 0.0)), MAX_SE), dtype=np.float64)


def threshold_metrics(release: Any, thresholds: Any) -> ThresholdMetrics:
    """Precision, recall, FPR and accuracy at query-time thresholds.

    Parameters
    ----------
    release : Release, HierarchicalHistogram or Evaluation
        Two classes (0 = negative, 1 = positive); made consistent here.
    thresholds : float or array-like
        Points of the score domain; the classifier predicts positive when
        ``score >= threshold``.

    Returns
    -------
    ThresholdMetrics

    Raises
    ------
    ValueError
        A threshold outside the score domain.

    Notes
    -----
    Estimated counts are clamped to [0, class total] before the ratios are
    formed (a named post-processing step: noisy counts can leave that range).
    A ratio with an estimated denominator <= 0 is reported as NaN.
    """
    tree = hierarchy_of(release)
    t = np.asarray(thresholds, dtype=np.float64)
    flat = np.atleast_1d(t).ravel()
    totals = np.maximum(tree.totals(), 0.0)
    n_neg, n_pos = float(totals[0]), float(totals[1])
    below_neg, _ = tree.count_below(flat, cls=0, with_variance=False)
    below_pos, _ = tree.count_below(flat, cls=1, with_variance=False)
    tp = np.clip(n_pos - below_pos, 0.0, n_pos)
    fp = np.clip(n_neg - below_neg, 0.0, n_neg)
    tn = n_neg - fp
    m = n_pos + n_neg

    # Each class enters through its prefix count X (below t) and its total T:
    # Var, Cov(X, T) and Var(T) per threshold in O(b·h) (never a (k+1)² matrix),
    # of the noise. Under level assignment the split of clients over the levels
    # adds a sampling error shared by X⁺, T⁺, X⁻ and T⁻ (their 4 × 4 covariance,
    # O(h · leaves) per threshold; local DP trees are shallow).
    noise = tree.noise_only()
    vx_pos, cxt_pos, vt_pos = noise.prefix_moments(flat, 1)
    vx_neg, cxt_neg, vt_neg = noise.prefix_moments(flat, 0)
    split = tree.split_prefix_covariance(flat)

    def var_of(gx_pos: Any, gt_pos: Any, gx_neg: Any, gt_neg: Any) -> NDArray[np.float64]:
        """Var(gx⁺·X⁺ + gt⁺·T⁺ + gx⁻·X⁻ + gt⁻·T⁻) for every threshold."""
        var = (
            gx_pos**2 * vx_pos
            + gt_pos**2 * vt_pos
            + 2 * gx_pos * gt_pos * cxt_pos
            + gx_neg**2 * vx_neg
            + gt_neg**2 * vt_neg
            + 2 * gx_neg * gt_neg * cxt_neg
        )
        if split is not None:
            g = np.stack(np.broadcast_arrays(gx_pos, gt_pos, gx_neg, gt_neg), axis=-1)
            var = var + np.einsum("mi,mij,mj->m", g, split, g)
        return np.asarray(var, dtype=np.float64)

    def var_pos(gx: Any, gt: Any) -> NDArray[np.float64]:
        """Var(gx·X⁺ + gt·T⁺) for every threshold."""
        return var_of(gx, gt, 0.0 * gx, 0.0 * gx)

    def var_neg(gx: Any, gt: Any) -> NDArray[np.float64]:
        return var_of(0.0 * gx, 0.0 * gx, gx, gt)

    k = flat.shape[0]
    r, _ = tree.spec.grid.locate(flat)
    n_leaves = tree.spec.n_leaves
    with np.errstate(divide="ignore", invalid="ignore"):
        recall = np.where(n_pos > 0, tp / n_pos, np.nan)
        fpr = np.where(n_neg > 0, fp / n_neg, np.nan)
        pred_pos = tp + fp
        precision = np.where(pred_pos > 0, tp / pred_pos, np.nan)
        accuracy = np.where(m > 0, (tp + tn) / m, np.nan)
        # recall = (T − X)/T = 1 − X/T: gradient −1/T on X, X/T² on T (class 1).
        recall_var = (
            var_pos(np.full(k, -1 / n_pos), below_pos / n_pos**2)
            if n_pos > 0
            else np.full(k, np.nan)
        )
        fpr_var = (
            var_neg(np.full(k, -1 / n_neg), below_neg / n_neg**2)
            if n_neg > 0
            else np.full(k, np.nan)
        )
        # precision = TP/(TP+FP), TP = T⁺ − X⁺, FP = T⁻ − X⁻ (the classes' noise is
        # independent; under level assignment their split errors are not).
        d2 = np.where(pred_pos > 0, pred_pos**2, np.nan)
        g_tp, g_fp = fp / d2, -tp / d2
        precision_var = var_of(-g_tp, g_tp, -g_fp, g_fp)
        # accuracy = (T⁺ − X⁺ + X⁻)/(T⁺ + T⁻).
        acc = np.nan_to_num(accuracy)
        acc_var = (
            var_of(np.full(k, -1 / m), (1 - acc) / m, np.full(k, 1 / m), -acc / m)
            if m > 0
            else np.full(k, np.nan)
        )
        # positive rate = 1 − (X⁺ + X⁻)/(T⁺ + T⁻).
        positive_rate = np.where(m > 0, pred_pos / m, np.nan)
        pr = np.nan_to_num(positive_rate)
        pr_var = (
            var_of(np.full(k, -1 / m), (1 - pr) / m, np.full(k, -1 / m), (1 - pr) / m)
            if m > 0
            else np.full(k, np.nan)
        )
        leaf_idx = np.minimum(r, n_leaves - 1)
        leaf_pos = np.maximum(tree.leaves[1, leaf_idx], 0.0) / max(n_pos, 1.0)
        leaf_neg = np.maximum(tree.leaves[0, leaf_idx], 0.0) / max(n_neg, 1.0)
        bound = np.where(r < n_leaves, np.maximum(leaf_pos, leaf_neg), 0.0)

    def shaped(x: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(x, dtype=np.float64).reshape(t.shape)

    return ThresholdMetrics(
        threshold=shaped(flat),
        precision=shaped(precision),
        recall=shaped(recall),
        fpr=shaped(fpr),
        accuracy=shaped(accuracy),
        precision_se=shaped(_se(precision_var)),
        recall_se=shaped(_se(recall_var)),
        fpr_se=shaped(_se(fpr_var)),
        accuracy_se=shaped(_se(acc_var)),
        bucketization_bound=shaped(bound),
        tp=shaped(tp),
        fp=shaped(fp),
        positives=n_pos,
        negatives=n_neg,
        positive_rate=shaped(positive_rate),
        positive_rate_se=shaped(_se(pr_var)),
    )
