"""ROC AUC from bucketed score histograms: the estimator H_B.

References
----------
cormode-markov-2023-federated-calibration-evaluation §5, eq. (5), Lemma 3,
Theorems 4–6.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from fedeval.metrics.dense import boundary_counts, dense_roc_auc
from fedeval.metrics.inputs import default_buckets, hierarchy_of
from fedeval.sketches.hierarchical_histogram import HierarchicalHistogram
from fedeval.validation import check_int_at_least

__all__ = [
    "BucketStrategy",
    "bucket_counts",
    "hb_estimate",
    "mcclish_partial_auc",
    "roc_auc_score",
]

BucketStrategy = Literal["dense", "equi-depth", "uniform"]


def hb_estimate(p: Any, n: Any) -> float:
    """H_B = (1/PN) Σ_i (Σ_{j<i} p_i n_j + ½ p_i n_i), eq. (5).

    Parameters
    ----------
    p, n : array-like, shape (B,)
        Positive and negative counts per bucket, buckets in increasing score
        order. Noisy counts may be negative (see :func:`bucket_counts`).

    Returns
    -------
    float
        NaN if there are no positives or no negatives.

    Notes
    -----
    Ties within a bucket count one half, the midpoint of the two extremes
    (Lemma 3); this equals the rank-based AUC with mid-ranks when every bucket
    holds one distinct score.
    """
    pa = np.asarray(p, dtype=np.float64)
    na = np.asarray(n, dtype=np.float64)
    big_p, big_n = pa.sum(), na.sum()
    if big_p <= 0 or big_n <= 0:
        return float("nan")
    below = np.cumsum(na) - na  # Σ_{j<i} n_j
    return float((pa * (below + 0.5 * na)).sum() / (big_p * big_n))


def bucket_counts(
    tree: HierarchicalHistogram,
    n_buckets: int,
    *,
    strategy: BucketStrategy = "equi-depth",
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Per-class counts in B buckets: equi-depth (private quantiles) or uniform.

    Returns
    -------
    edges : ndarray, shape (B + 1,)
    p, n : ndarray, shape (B,)
        Positive and negative counts per bucket as released. They are *not*
        clamped at 0: H_B is bilinear in (p, n) and the two classes' noise is
        independent and zero-mean, so unclamped counts keep the numerator
        unbiased, while clamping adds positive mass to every empty bucket and
        biases AUC towards 1/2 (measured: −0.01 on well-separated scores under
        DistDP ε = 1).
    """
    b = check_int_at_least(n_buckets, 1, name="n_buckets")
    lo, hi = tree.spec.score_range
    if strategy == "equi-depth":
        edges = tree.equi_depth_edges(b)
    elif strategy == "uniform":
        edges = np.linspace(lo, hi, b + 1)
    else:
        raise ValueError(f"strategy must be 'equi-depth' or 'uniform', got {strategy!r}")
    below_p, _ = tree.count_below(edges, cls=1, with_variance=False)
    below_n, _ = tree.count_below(edges, cls=0, with_variance=False)
    # The last edge is the domain end: count everything up to and including it.
    below_p[-1] = tree.totals()[1]
    below_n[-1] = tree.totals()[0]
    return edges, np.diff(below_p), np.diff(below_n)


def roc_auc_score(
    release: Any,
    *,
    n_buckets: int | None = None,
    strategy: BucketStrategy = "dense",
    level: int | None = None,
) -> float:
    """ROC AUC by H_B over buckets of a released per-class hierarchy (eq. 5).

    Parameters
    ----------
    release : Release, HierarchicalHistogram or Evaluation
        Classes 0 (negative) and 1 (positive); made consistent here.
    n_buckets : int, optional
        B for "equi-depth" and "uniform"; default
        :func:`~fedeval.metrics.inputs.default_buckets`. With "equi-depth" the
        boundaries are private quantiles of all scores (post-processing of the
        same release, no extra privacy cost).
    strategy : {"dense", "equi-depth", "uniform"}
        "dense" (default): H_B over every bin of one level on monotone-projected
        counts, which is the trapezoid area of the dense ROC curve
        (:mod:`fedeval.metrics.dense`), so the AUC and the curve agree.
        Uniform boundaries are the baseline of the paper's Figure 4.
    level : int, optional
        For "dense"; default :func:`~fedeval.metrics.dense.choose_level`.

    Returns
    -------
    float
        Clipped to [0, 1] (a named post-processing step: noise can push the
        ratio of noisy counts slightly outside).

    References
    ----------
    cormode-markov-2023-federated-calibration-evaluation §5, eq. (5), Theorems 4–6.
    """
    tree = hierarchy_of(release)
    if strategy == "dense":
        return dense_roc_auc(boundary_counts(tree, level))
    b = default_buckets(tree) if n_buckets is None else n_buckets
    _, p, n = bucket_counts(tree, b, strategy=strategy)
    return float(np.clip(hb_estimate(p, n), 0.0, 1.0))


def mcclish_partial_auc(fpr: Any, tpr: Any, *, max_fpr: float) -> float:
    """McClish's standardised partial AUC of a ROC curve up to ``max_fpr``, as scikit-learn.

    The area under the piecewise-linear curve over [0, ``max_fpr``] (the curve
    interpolated linearly at ``max_fpr``), mapped by
    ½·(1 + (A − A_min)/(A_max − A_min)), A_min = ``max_fpr``²/2 (the chance
    diagonal) and A_max = ``max_fpr``: 0.5 is chance, 1 a perfect ranking. The
    same computation as :func:`sklearn.metrics.roc_auc_score` with ``max_fpr``.

    Parameters
    ----------
    fpr, tpr : array-like, shape (k,)
        A ROC curve with ``fpr`` non-decreasing, from (0, 0) to (1, 1)
        (:func:`fedeval.metrics.roc_curve` or :meth:`fedeval.Evaluation.roc_curve`).
    max_fpr : float
        In (0, 1]; 1 gives the full (unstandardised) AUC.

    Returns
    -------
    float
        Clipped to [0, 1] (a noisy curve may leave the range); NaN when the
        curve holds NaN (a release with an undefined class).

    Raises
    ------
    ValueError
        ``max_fpr`` outside (0, 1], or curves of different shapes.

    References
    ----------
    McClish, "Analyzing a portion of the ROC curve", Medical Decision Making 9(3),
    1989; scikit-learn ``sklearn/metrics/_ranking.py`` (``_binary_roc_auc_score``).
    """
    m = float(max_fpr)
    if not 0.0 < m <= 1.0:
        raise ValueError(f"max_fpr must lie in (0, 1], got {max_fpr!r}")
    x = np.asarray(fpr, dtype=np.float64)
    y = np.asarray(tpr, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"fpr and tpr must be 1-D of one shape, got {x.shape} and {y.shape}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()) or x.size < 2:
        return float("nan")
    stop = int(np.searchsorted(x, m, side="right"))
    if stop >= x.size:  # the curve ends at max_fpr = 1
        xs, ys = x, y
    else:
        y_cut = float(np.interp(m, [x[stop - 1], x[stop]], [y[stop - 1], y[stop]]))
        xs, ys = np.append(x[:stop], m), np.append(y[:stop], y_cut)
    area = float(np.trapezoid(ys, xs))
    if m == 1.0:
        return float(np.clip(area, 0.0, 1.0))
    min_area, max_area = 0.5 * m**2, m
    return float(np.clip(0.5 * (1.0 + (area - min_area) / (max_area - min_area)), 0.0, 1.0))
