"""Consistency post-processing of a hierarchy of noisy counts (Hay et al. 2010).

Phase 1, bottom-up weighted averaging: a node's own estimate x (variance v)
and the sum s of its children's phase-1 estimates (variance b·v') are combined
with inverse-variance weights, z = (x/v + s/(b v'))/(1/v + 1/(b v')). Phase 2,
top-down mean consistency: each child gets its phase-1 value plus an equal
share of the gap between its parent's final value and the sum of the siblings'
phase-1 values. The result is the minimum-variance linear unbiased estimate
when the nodes of a level share one variance (Hay et al. Theorem 3); where node
variances differ within a level (level assignment, LDP), the level mean is used
as the weight.

Both phases are linear maps; :func:`consistent_node_weights` pushes the weights
of leaf queries back through their transposes, so that the exact variance of
any linear query on the consistent tree follows from the raw nodes' independent
noise. Post-processing only: no privacy budget.

References
----------
xu-cormode-2025-federated-roc-pr §2.2 and §5; Hay, Rastogi, Miklau and Suciu,
"Boosting the accuracy of differentially private histograms through
consistency", PVLDB 3(1), 2010.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

__all__ = ["consistent_levels", "consistent_node_weights"]


def _sum_children(arr: NDArray[np.float64], b: int) -> NDArray[np.float64]:
    return arr.reshape(arr.shape[0], -1, b).sum(axis=2)


def consistent_levels(
    levels: Sequence[NDArray[np.float64]],
    level_variance: Sequence[float],
    branching: int,
) -> tuple[list[NDArray[np.float64]], tuple[float, ...]]:
    """Hay et al.'s two passes over levels 1..h (rows: classes; columns: nodes).

    Parameters
    ----------
    levels : sequence of ndarray, shape (n_rows, b^k) for k = 1..h
    level_variance : sequence of float
        The (mean) noise variance of one node of each level.
    branching : int

    Returns
    -------
    levels : list of ndarray
        The consistent estimates.
    weights : tuple of float
        a_k, the weight of a node's own estimate in phase 1 (needed by
        :func:`consistent_node_weights`).
    """
    h, b = len(levels), branching
    v = [float(x) for x in level_variance]
    z: list[NDArray[np.float64]] = [np.empty(0)] * h
    var_z = [0.0] * h
    a = [1.0] * h
    z[h - 1] = np.asarray(levels[h - 1], dtype=np.float64).copy()
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
        z[k] = a[k] * levels[k] + (1.0 - a[k]) * s
        var_z[k] = a[k] * v[k] if v[k] > 0 else 0.0  # = 1/(1/v + 1/var_s)
    u = [z[0]]
    for k in range(1, h):
        gap = u[k - 1] - _sum_children(z[k], b)
        u.append(z[k] + np.repeat(gap, b, axis=1) / b)
    return u, tuple(a)


def consistent_node_weights(
    leaf_weights: NDArray[np.float64], weights: Sequence[float], branching: int
) -> list[NDArray[np.float64]]:
    """Weights on the raw nodes of leaf-weighted queries on the consistent tree.

    Parameters
    ----------
    leaf_weights : ndarray, shape (m, b^h)
        m linear queries on the consistent leaves.
    weights : sequence of float
        The a_k returned by :func:`consistent_levels` (all 1 for exact counts).
    branching : int

    Returns
    -------
    list of ndarray, shape (m, b^k) for k = 1..h
        The same queries as linear combinations of the raw (independent) nodes.
    """
    h, b = len(weights), branching
    a = list(weights)
    m = leaf_weights.shape[0]
    # Transpose of phase 2 (top-down): g_u[k] = q_k + S g_u[k+1] / b, leaves carry the query.
    g_u: list[NDArray[np.float64]] = [np.zeros((m, b ** (k + 1))) for k in range(h)]
    g_u[h - 1] = leaf_weights.astype(np.float64)
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
