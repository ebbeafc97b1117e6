"""ROC curves from per-class quantiles, with scikit-learn's conventions.

References
----------
xu-cormode-2025-federated-roc-pr §3.1, eqs. (1)–(2), Algorithm 1.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from fedeval.metrics.dense import boundary_counts, dense_roc_curve
from fedeval.metrics.inputs import default_quantiles, hierarchy_of
from fedeval.metrics.quantile_ecdf import Interpolation, QuantileECDF, quantile_ecdf

__all__ = ["CurveMethod", "curve_thresholds", "roc_curve", "roc_curve_from_ecdfs"]

CurveMethod = Literal["dense", "quantile"]


def curve_thresholds(
    neg: QuantileECDF, pos: QuantileECDF, score_range: tuple[float, float]
) -> NDArray[np.float64]:
    """Evaluation thresholds: every knot of both class ECDFs, increasing, unique."""
    lo, hi = score_range
    return np.unique(np.clip(np.concatenate([neg.knots, pos.knots]), lo, hi))


def roc_curve_from_ecdfs(
    neg: QuantileECDF, pos: QuantileECDF, thresholds: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """(fpr, tpr, thresholds) in the layout of ``sklearn.metrics.roc_curve``.

    Thresholds decrease; the first is ``inf`` with (fpr, tpr) = (0, 0); at each
    threshold s, FPR = 1 − Φ⁻(s⁻) and TPR = 1 − Φ⁺(s⁻), the fractions with
    score >= s (the left limit, evaluated just below s, matches "score >= s").
    """
    t = np.sort(np.asarray(thresholds, dtype=np.float64))[::-1]
    below = np.nextafter(t, -np.inf)
    fpr = 1.0 - neg(below)
    tpr = 1.0 - pos(below)
    # Enforce monotonicity against floating-point wiggle (PCHIP is monotone).
    fpr = np.maximum.accumulate(fpr)
    tpr = np.maximum.accumulate(tpr)
    return (
        np.concatenate(([0.0], fpr)),
        np.concatenate(([0.0], tpr)),
        np.concatenate(([np.inf], t)),
    )


def roc_curve(
    release: Any,
    *,
    method: CurveMethod = "dense",
    level: int | None = None,
    n_quantiles: int | None = None,
    interpolation: Interpolation = "pchip",
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """(fpr, tpr, thresholds) of a released per-class hierarchy, as ``sklearn.metrics.roc_curve``.

    Parameters
    ----------
    release : Release, HierarchicalHistogram or Evaluation
    method : {"dense", "quantile"}
        "dense" (default): a point at every boundary of one level from
        consistent, monotone prefix counts (:mod:`fedeval.metrics.dense`); its
        trapezoid area is :func:`~fedeval.metrics.roc_auc_score` with
        ``strategy="dense"``. "quantile": the two class ECDFs are rebuilt from
        Q quantiles each (Xu–Cormode §3.1, Algorithm 1) and the curve is
        evaluated at every knot of both (the reproductions' method).
    level : int, optional
        For "dense": the level (default :func:`~fedeval.metrics.dense.choose_level`).
    n_quantiles : int, optional
        For "quantile": Q per class; default :func:`~fedeval.metrics.inputs.default_quantiles`.
    interpolation : {"pchip", "linear"}
        For "quantile".
    """
    tree = hierarchy_of(release)
    if method == "dense":
        return dense_roc_curve(boundary_counts(tree, level))
    if method != "quantile":
        raise ValueError(f"method must be 'dense' or 'quantile', got {method!r}")
    q = default_quantiles(tree) if n_quantiles is None else n_quantiles
    neg = quantile_ecdf(tree, q, cls=0, interpolation=interpolation)
    pos = quantile_ecdf(tree, q, cls=1, interpolation=interpolation)
    return roc_curve_from_ecdfs(neg, pos, curve_thresholds(neg, pos, tree.spec.score_range))
