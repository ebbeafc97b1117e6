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

__all__ = ["bootstrap_se", "bootstrap_values", "parametric_replicate"]


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
