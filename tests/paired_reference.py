"""Exact paired statistics on raw arrays: the references the comparison tests check against.

DeLong, DeLong and Clarke-Pearson (Biometrics 44(3), 1988), eqs. (2)–(5): the
placement values of every positive (V10, the share of negatives scored below
it, ties ½) and every negative (V01), their sample variances and covariance
between two models; McNemar's (Psychometrika 12(2), 1947) discordant counts.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray


def placements(
    scores: NDArray[np.float64], labels: NDArray[np.int64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """DeLong's V10 (one per positive) and V01 (one per negative), ties counted ½."""
    pos, neg = scores[labels == 1], scores[labels == 0]
    sn, sp = np.sort(neg), np.sort(pos)
    v10 = (np.searchsorted(sn, pos, "left") + np.searchsorted(sn, pos, "right")) / 2 / neg.size
    v01 = 1 - (np.searchsorted(sp, neg, "left") + np.searchsorted(sp, neg, "right")) / 2 / pos.size
    return v10, v01


def paired_delong(
    a: NDArray[np.float64], b: NDArray[np.float64], labels: NDArray[np.int64]
) -> dict[str, float]:
    """AUCs, their variances, covariance and the SE of the difference (DeLong 1988)."""
    a10, a01 = placements(a, labels)
    b10, b01 = placements(b, labels)
    p, n = a10.size, a01.size
    s10 = np.cov(np.vstack([a10, b10]))
    s01 = np.cov(np.vstack([a01, b01]))
    var_a = s10[0, 0] / p + s01[0, 0] / n
    var_b = s10[1, 1] / p + s01[1, 1] / n
    cov = s10[0, 1] / p + s01[0, 1] / n
    return {
        "auc_a": float(a10.mean()),
        "auc_b": float(b10.mean()),
        "var_a": float(var_a),
        "var_b": float(var_b),
        "cov": float(cov),
        "se_diff": float(np.sqrt(var_a + var_b - 2 * cov)),
    }


def binned(scores: NDArray[np.float64], n_bins: int) -> NDArray[np.float64]:
    """Scores replaced by their bin's index on a uniform grid of [0, 1] (left-closed bins)."""
    return np.minimum(np.floor(scores * n_bins), n_bins - 1).astype(np.float64)
