"""Parametric bootstrap of a released hierarchy: uncertainty of any statistic.

A replicate takes the released (consistent) leaves as the truth, draws fresh
Gaussian noise with every node's known variance, and re-applies consistency
if the release had it. Any statistic of the release can then be recomputed on
many replicates; the spread is its standard error. This is post-processing of
released values only: no privacy cost. The normal approximation to the
discrete noise is stated wherever bootstrap errors are reported. It is one of
the two places outside :mod:`fedeval.privacy` that draw random numbers (the
other is data generation), and its draws are never released as data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from fedeval.randomness import RNGLike, as_generator

if TYPE_CHECKING:
    from fedeval.sketches.hierarchical_histogram import HierarchicalHistogram

__all__ = ["bootstrap_se", "bootstrap_values", "leaf_replicates", "parametric_replicate"]


def parametric_replicate(
    tree: HierarchicalHistogram, rng: np.random.Generator
) -> HierarchicalHistogram:
    """One replicate: this tree's leaves as the truth, fresh noise of each node's variance."""
    truth = tree.spec.levels_from_leaves(tree.levels[-1])
    noisy = tuple(
        t + rng.standard_normal(t.shape) * np.sqrt(v)
        for t, v in zip(truth, tree.node_variance, strict=True)
    )
    raw = replace(tree, levels=noisy, consistent_=False, _level_weights=None)
    return raw.consistent() if tree.is_consistent else raw


def bootstrap_values(
    tree: HierarchicalHistogram,
    statistic: Callable[[HierarchicalHistogram], Any],
    *,
    replicates: int = 200,
    rng: RNGLike = None,
) -> list[Any]:
    """``statistic`` of ``replicates`` parametric replicates of ``tree``."""
    gen = as_generator(rng)
    return [statistic(parametric_replicate(tree, gen)) for _ in range(replicates)]


def bootstrap_se(
    tree: HierarchicalHistogram,
    statistic: Callable[[HierarchicalHistogram], Any],
    *,
    replicates: int = 200,
    rng: RNGLike = None,
) -> float:
    """Standard error of ``statistic(tree)`` from the noise, by parametric bootstrap.

    0 when the release has no noise (the statistic is then exact up to its
    bucketization error, which is not a standard error).
    """
    if not tree.guarantee.is_private:
        return 0.0
    values = bootstrap_values(tree, statistic, replicates=replicates, rng=rng)
    return float(np.nanstd(values, ddof=1))


def leaf_replicates(
    tree: HierarchicalHistogram,
    leaves: np.ndarray,
    rng: np.random.Generator,
    replicates: int,
) -> np.ndarray:
    """Leaves of ``replicates`` releases whose truth is ``leaves`` (a post-processed estimate).

    The bootstrap estimate of a post-processing step's bias: if the released
    counts were ``leaves`` (non-negative, e.g. the dense curves' projected
    bins), a fresh release would add noise of every leaf's known variance, and
    the same post-processing applied to it has mean E* stat; E* stat −
    stat(leaves) estimates the step's bias (Efron & Tibshirani 1993, §10.2).
    For a tree whose leaves were released alone and whose inner nodes are
    their sums (:func:`fedeval.sketches.multiclass.class_tree`). All
    replicates' normals are drawn in one call: the same numbers, in the same
    order, as one call per replicate.

    Parameters
    ----------
    tree : HierarchicalHistogram
        The released tree (its leaves' variances).
    leaves : ndarray, shape (n_classes, n_leaves)
    rng : Generator
    replicates : int

    Returns
    -------
    ndarray, shape (replicates, n_classes, n_leaves)
    """
    truth = np.asarray(leaves, dtype=np.float64)
    noise = rng.standard_normal((replicates, *truth.shape))
    return np.asarray(truth + noise * np.sqrt(tree.node_variance[-1]), dtype=np.float64)
