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

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from fedeval.metrics.dense import MAX_SE
from fedeval.metrics.inputs import hierarchy_of

__all__ = [
    "THRESHOLD_METRICS",
    "ConfusionCounts",
    "ThresholdMetric",
    "ThresholdMetrics",
    "exact_threshold_metrics",
    "sampling_variance",
    "threshold_metrics",
]


Array = NDArray[np.float64]


@dataclass(frozen=True)
class ConfusionCounts:
    """Estimated confusion counts at each threshold (clamped to [0, class total]).

    ``tp + fn`` is the positives' total and ``fp + tn`` the negatives'; the
    arrays have one entry per threshold.
    """

    tp: Array
    fp: Array
    fn: Array
    tn: Array


@dataclass(frozen=True)
class ThresholdMetric:
    """One metric of the classifier ``score >= t``, a function of the confusion counts.

    The one place a threshold metric is defined: its estimate from the
    released counts, its gradient for the delta-method standard error, and
    the same function on exact counts (simulations, ``--compare-exact``).

    Attributes
    ----------
    name : str
        Attribute of :class:`ThresholdMetrics` (``name`` and ``name_se``) and
        JSON key.
    label : str
        Column heading in tables.
    value : callable
        ``value(c)`` for :class:`ConfusionCounts` ``c``: the metric (NaN where
        its denominator is not positive).
    gradient : callable
        ``gradient(c)`` → (∂/∂tp, ∂/∂fp, ∂/∂fn, ∂/∂tn) at ``c``.
    higher_is_better : bool
        Direction, for the best and worst slice (:mod:`fedeval.slicing`).
    """

    name: str
    label: str
    value: Callable[[ConfusionCounts], Array]
    gradient: Callable[[ConfusionCounts], tuple[Array, Array, Array, Array]]
    higher_is_better: bool = True


def _ratio(num: Any, den: Any) -> Array:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan))


def _zero(c: ConfusionCounts) -> Array:
    return np.zeros_like(c.tp)


def _precision_gradient(c: ConfusionCounts) -> tuple[Array, Array, Array, Array]:
    d2 = _ratio(1.0, (c.tp + c.fp) ** 2)
    return c.fp * d2, -c.tp * d2, _zero(c), _zero(c)


def _recall_gradient(c: ConfusionCounts) -> tuple[Array, Array, Array, Array]:
    d2 = _ratio(1.0, (c.tp + c.fn) ** 2)
    return c.fn * d2, _zero(c), -c.tp * d2, _zero(c)


def _fpr_gradient(c: ConfusionCounts) -> tuple[Array, Array, Array, Array]:
    d2 = _ratio(1.0, (c.fp + c.tn) ** 2)
    return _zero(c), c.tn * d2, _zero(c), -c.fp * d2


def _total(c: ConfusionCounts) -> Array:
    return c.tp + c.fp + c.fn + c.tn


def _accuracy_gradient(c: ConfusionCounts) -> tuple[Array, Array, Array, Array]:
    m = _total(c)
    acc = np.nan_to_num(_ratio(c.tp + c.tn, m))
    right, wrong = _ratio(1 - acc, m), _ratio(-acc, m)
    return right, wrong, wrong, right


def _positive_rate_gradient(c: ConfusionCounts) -> tuple[Array, Array, Array, Array]:
    m = _total(c)
    rate = np.nan_to_num(_ratio(c.tp + c.fp, m))
    predicted, not_predicted = _ratio(1 - rate, m), _ratio(-rate, m)
    return predicted, predicted, not_predicted, not_predicted


def _f1_gradient(c: ConfusionCounts) -> tuple[Array, Array, Array, Array]:
    d2 = _ratio(1.0, (2 * c.tp + c.fp + c.fn) ** 2)
    other = -2 * c.tp * d2
    return 2 * (c.fp + c.fn) * d2, other, other, _zero(c)


#: Every threshold metric, by name: estimates, standard errors, tables and JSON
#: (``results.json``'s ``at_threshold``) all read this registry. Adding a metric is
#: one entry here (its value and gradient) and its test.
THRESHOLD_METRICS: dict[str, ThresholdMetric] = {
    m.name: m
    for m in (
        ThresholdMetric(
            "precision", "precision", lambda c: _ratio(c.tp, c.tp + c.fp), _precision_gradient
        ),
        ThresholdMetric("recall", "recall", lambda c: _ratio(c.tp, c.tp + c.fn), _recall_gradient),
        ThresholdMetric(
            "fpr", "FPR", lambda c: _ratio(c.fp, c.fp + c.tn), _fpr_gradient, higher_is_better=False
        ),
        ThresholdMetric(
            "accuracy", "accuracy", lambda c: _ratio(c.tp + c.tn, _total(c)), _accuracy_gradient
        ),
        ThresholdMetric(
            "positive_rate",
            "positive rate",
            lambda c: _ratio(c.tp + c.fp, _total(c)),
            _positive_rate_gradient,
        ),
        ThresholdMetric(
            "f1", "F1", lambda c: _ratio(2 * c.tp, 2 * c.tp + c.fp + c.fn), _f1_gradient
        ),
    )
}


def sampling_variance(metric: ThresholdMetric, counts: ConfusionCounts) -> Array:
    """Delta-method variance of ``metric`` from sampling the examples (not the noise).

    The m examples fall in the four cells multinomially, Var(c_i) = m p_i (1 − p_i)
    and Cov(c_i, c_j) = −m p_i p_j, so for the gradient g at the counts c
    Var f ≈ Σ c_i g_i² − (Σ c_i g_i)² / m. For a ratio of counts (precision,
    recall, FPR, accuracy, positive rate, F1: homogeneous of degree 0) the
    second term vanishes and this is the binomial p(1 − p)/n of a proportion
    over its own denominator.
    """
    grads = metric.gradient(counts)
    cells = (counts.tp, counts.fp, counts.fn, counts.tn)
    m = _total(counts)
    first = sum(c * g**2 for c, g in zip(cells, grads, strict=True))
    second = sum(c * g for c, g in zip(cells, grads, strict=True))
    return np.asarray(first - _ratio(second**2, m), dtype=np.float64)


def exact_threshold_metrics(
    scores: ArrayLike, labels: ArrayLike, threshold: float
) -> dict[str, float]:
    """Every registered metric of ``score >= threshold`` on exact data (simulations only).

    Parameters
    ----------
    scores, labels : array-like
        Per-example scores and 0/1 labels, in the clear.
    threshold : float

    Returns
    -------
    dict
        Metric name → value (NaN where undefined).
    """
    s = np.asarray(scores, dtype=np.float64)
    pos = np.asarray(labels) == 1
    pred = s >= threshold

    def count(mask: Any) -> Array:
        return np.array([float(np.count_nonzero(mask))])

    c = ConfusionCounts(
        count(pred & pos), count(pred & ~pos), count(~pred & pos), count(~pred & ~pos)
    )
    return {name: float(m.value(c)[0]) for name, m in THRESHOLD_METRICS.items()}


@dataclass(frozen=True)
class ThresholdMetrics:
    """Metrics of the classifier ``score >= threshold``, with uncertainty.

    Every metric of :data:`THRESHOLD_METRICS` is an attribute, with its
    standard error as ``<name>_se`` (``precision``, ``recall`` (``tpr``),
    ``fpr``, ``accuracy``, ``positive_rate``, ``f1``). All arrays have the
    shape of the thresholds passed in.

    Attributes
    ----------
    threshold : ndarray
    estimates : dict of str → ndarray
        Each metric from the released counts.
    standard_errors : dict of str → ndarray
        From the privacy noise (delta method on the exact variances of the
        prefix counts, the class totals and their covariances, O(b·h) per
        threshold), capped at 0.5 (the largest spread of a value in [0, 1]).
        0 under secure aggregation, and at the domain's low end where recall
        and FPR are 1 by construction.
    bucketization_bound : ndarray
        Largest possible change of recall/FPR from the unknown position of
        examples inside the leaf holding the threshold (the leaf's share of its
        class), the Δ = 2^-h term of Theorem 2. Not a standard error.
    tp, fp, positives, negatives : ndarray
        Estimated counts behind the ratios.

    Notes
    -----
    ``positive_rate`` is the share of all examples predicted positive,
    (TP + FP)/(P + N) (demographic parity compares it across groups).
    """

    threshold: Array
    estimates: dict[str, Array]
    standard_errors: dict[str, Array]
    bucketization_bound: Array
    tp: Array
    fp: Array
    positives: float
    negatives: float

    def __getattr__(self, name: str) -> Array:
        estimates = self.__dict__.get("estimates", {})
        if name in estimates:
            return estimates[name]
        if name.endswith("_se") and name[:-3] in estimates:
            return self.__dict__["standard_errors"][name[:-3]]
        raise AttributeError(f"{type(self).__name__!r} has no attribute {name!r}")

    @property
    def tpr(self) -> Array:
        return self.estimates["recall"]

    def as_dict(self) -> dict[str, Any]:
        """Plain floats/lists, for JSON output."""

        def plain(v: Any) -> Any:
            a = np.asarray(v)
            return a.item() if a.ndim == 0 else a.tolist()

        out: dict[str, Any] = {"threshold": plain(self.threshold)}
        for name in self.estimates:
            out[name] = plain(self.estimates[name])
            out[f"{name}_se"] = plain(self.standard_errors[name])
        out["bucketization_bound"] = plain(self.bucketization_bound)
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
    A ratio with an estimated denominator <= 0 is reported as NaN. Each
    metric's delta-method gradient is evaluated at these reported counts (a
    choice: before the registry, recall's and FPR's used the unclamped prefix
    count, which differs only where the clamp acts).
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

    # The counts clamped to [0, class total]; fn and tn complete each class.
    counts = ConfusionCounts(tp=tp, fp=fp, fn=n_pos - tp, tn=tn)
    estimates, errors = {}, {}
    for name, metric in THRESHOLD_METRICS.items():
        estimates[name] = metric.value(counts)
        # tp = T⁺ − X⁺, fn = X⁺, fp = T⁻ − X⁻, tn = X⁻ (X below t, T the total):
        # the chain rule takes the count gradient to the linear queries'.
        g_tp, g_fp, g_fn, g_tn = metric.gradient(counts)
        errors[name] = _se(var_of(g_fn - g_tp, g_tp, g_tn - g_fp, g_fp))
    r, _ = tree.spec.grid.locate(flat)
    n_leaves = tree.spec.n_leaves
    with np.errstate(divide="ignore", invalid="ignore"):
        leaf_idx = np.minimum(r, n_leaves - 1)
        leaf_pos = np.maximum(tree.leaves[1, leaf_idx], 0.0) / max(n_pos, 1.0)
        leaf_neg = np.maximum(tree.leaves[0, leaf_idx], 0.0) / max(n_neg, 1.0)
        bound = np.where(r < n_leaves, np.maximum(leaf_pos, leaf_neg), 0.0)

    def shaped(x: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(x, dtype=np.float64).reshape(t.shape)

    return ThresholdMetrics(
        threshold=shaped(flat),
        estimates={k: shaped(v) for k, v in estimates.items()},
        standard_errors={k: shaped(v) for k, v in errors.items()},
        bucketization_bound=shaped(bound),
        tp=shaped(tp),
        fp=shaped(fp),
        positives=n_pos,
        negatives=n_neg,
    )
