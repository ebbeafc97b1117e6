"""Precision–recall curves from per-class quantiles, with scikit-learn's conventions.

References
----------
xu-cormode-2025-federated-roc-pr §3.1 eq. (3), §6 ("separate" vs "combine").
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from fedeval.metrics.dense import boundary_counts, dense_precision_recall_curve
from fedeval.metrics.inputs import default_quantiles, hierarchy_of
from fedeval.metrics.quantile_ecdf import Interpolation, QuantileECDF, quantile_ecdf
from fedeval.metrics.roc import CurveMethod, curve_thresholds

__all__ = [
    "PRStrategy",
    "average_precision_from_curve",
    "average_precision_score",
    "precision_recall_curve",
    "precision_recall_from_ecdfs",
]

PRStrategy = Literal["separate", "combine"]


def precision_recall_from_ecdfs(
    neg: QuantileECDF,
    pos: QuantileECDF,
    thresholds: NDArray[np.float64],
    n_pos: float,
    n_neg: float,
    *,
    strategy: PRStrategy = "separate",
    combined: QuantileECDF | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """(precision, recall, thresholds) in the layout of ``sklearn.metrics.precision_recall_curve``.

    Thresholds increase; precision and recall have one more entry than the
    thresholds, ending with precision 1 and recall 0.

    Parameters
    ----------
    neg, pos : QuantileECDF
    thresholds : ndarray
    n_pos, n_neg : float
        Class totals from the release.
    strategy : {"separate", "combine"}
        "separate" (default): P(s) = T(s)n⁺ / (T(s)n⁺ + F(s)n⁻), eq. (3), so the
        numerator never exceeds the denominator. "combine": the denominator is
        (1 − Φ_all(s))(n⁺ + n⁻) from the quantiles of all scores; precision is
        then clipped to [0, 1] (a named post-processing step, needed because
        the numerator can exceed the denominator).
    combined : QuantileECDF
        ECDF of all scores; required for "combine".

    Notes
    -----
    Where no example is predicted positive (denominator 0) precision is 1, as
    in scikit-learn's final point.
    """
    t = np.sort(np.asarray(thresholds, dtype=np.float64))
    below = np.nextafter(t, -np.inf)
    recall = np.minimum.accumulate(1.0 - pos(below))  # non-increasing in t
    tp = recall * n_pos
    if strategy == "separate":
        denom = tp + (1.0 - neg(below)) * n_neg
    elif strategy == "combine":
        if combined is None:
            raise ValueError("the 'combine' strategy needs the ECDF of all scores")
        denom = (1.0 - combined(below)) * (n_pos + n_neg)
    else:
        raise ValueError(f"strategy must be 'separate' or 'combine', got {strategy!r}")
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(denom > 0, tp / denom, 1.0)
    precision = np.clip(precision, 0.0, 1.0)
    return np.concatenate((precision, [1.0])), np.concatenate((recall, [0.0])), t


def average_precision_from_curve(
    precision: NDArray[np.float64], recall: NDArray[np.float64]
) -> float:
    """AP = Σ_n (R_n − R_{n+1}) P_n, the step sum of ``sklearn.metrics.average_precision_score``."""
    return float(-np.sum(np.diff(recall) * precision[:-1]))


def precision_recall_curve(
    release: Any,
    *,
    method: CurveMethod = "dense",
    level: int | None = None,
    n_quantiles: int | None = None,
    interpolation: Interpolation = "pchip",
    strategy: PRStrategy = "separate",
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """(precision, recall, thresholds) of a released hierarchy, as scikit-learn lays them out.

    Parameters
    ----------
    release : Release, HierarchicalHistogram or Evaluation
    method : {"dense", "quantile"}
        "dense" (default): a point at every boundary of one level from
        consistent, monotone prefix counts (:mod:`fedeval.metrics.dense`; no
        point of precision 0 at recall 0 unless the counts are exact).
        "quantile": Xu–Cormode's construction from Q quantiles per class.
    level : int, optional
        For "dense"; default :func:`~fedeval.metrics.dense.choose_level`.
    n_quantiles : int, optional
        For "quantile": Q per class; default :func:`~fedeval.metrics.inputs.default_quantiles`.
    interpolation : {"pchip", "linear"}
        For "quantile".
    strategy : {"separate", "combine"}
        For "quantile": see :func:`precision_recall_from_ecdfs` (Xu–Cormode §6).
        The dense curve uses the two classes' counts ("separate").
    """
    tree = hierarchy_of(release)
    if method == "dense":
        return dense_precision_recall_curve(
            boundary_counts(tree, level), exact=not tree.guarantee.is_private
        )
    if method != "quantile":
        raise ValueError(f"method must be 'dense' or 'quantile', got {method!r}")
    q = default_quantiles(tree) if n_quantiles is None else n_quantiles
    neg = quantile_ecdf(tree, q, cls=0, interpolation=interpolation)
    pos = quantile_ecdf(tree, q, cls=1, interpolation=interpolation)
    combined = (
        quantile_ecdf(tree, q, cls=None, interpolation=interpolation)
        if strategy == "combine"
        else None
    )
    totals = np.maximum(tree.totals(), 0.0)
    return precision_recall_from_ecdfs(
        neg,
        pos,
        curve_thresholds(neg, pos, tree.spec.score_range),
        float(totals[1]),
        float(totals[0]),
        strategy=strategy,
        combined=combined,
    )


def average_precision_score(
    release: Any,
    *,
    method: CurveMethod = "dense",
    level: int | None = None,
    n_quantiles: int | None = None,
    interpolation: Interpolation = "pchip",
    strategy: PRStrategy = "separate",
) -> float:
    """Step-sum average precision of :func:`precision_recall_curve` (scikit-learn's definition).

    NaN when a class's released total is not positive.
    """
    p, r, _ = precision_recall_curve(
        release,
        method=method,
        level=level,
        n_quantiles=n_quantiles,
        interpolation=interpolation,
        strategy=strategy,
    )
    if np.isnan(p).any():
        return float("nan")
    return average_precision_from_curve(p, r)
