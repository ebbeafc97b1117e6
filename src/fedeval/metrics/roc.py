"""ROC curves from per-class quantiles, with scikit-learn's conventions.

References
----------
xu-cormode-2025-federated-roc-pr §3.1, eqs. (1)–(2), Algorithm 1.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from fedeval.metrics.quantile_ecdf import QuantileECDF

__all__ = ["curve_thresholds", "roc_curve_from_ecdfs"]


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
