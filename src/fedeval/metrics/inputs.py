"""What the release-based metrics accept: a release, its decoded hierarchy, or an evaluation."""

from __future__ import annotations

from typing import Any

from fedeval.sketches.hierarchical_histogram import HierarchicalHistogram

__all__ = ["default_buckets", "default_quantiles", "hierarchy_of"]


def hierarchy_of(source: Any) -> HierarchicalHistogram:
    """The consistent per-class hierarchy of a release of one.

    Parameters
    ----------
    source : Release, HierarchicalHistogram or Evaluation
        A release of a :class:`~fedeval.sketches.hierarchy.HierarchySketch`
        (decoded here), its decoded histogram, or an evaluation (its ``tree``).

    Raises
    ------
    TypeError
        For anything else, or a release of another sketch.
    """
    tree = getattr(source, "tree", source)
    if not isinstance(tree, HierarchicalHistogram) and hasattr(tree, "decode"):
        tree = tree.decode()
    if not isinstance(tree, HierarchicalHistogram):
        raise TypeError(
            "expected a release of a hierarchy sketch, a HierarchicalHistogram or an Evaluation, "
            f"got {type(source).__name__}"
        )
    if tree.spec.n_classes != 2:
        raise ValueError(f"binary metrics need a two-class hierarchy, got {tree.spec.n_classes}")
    return tree.consistent()


def default_quantiles(tree: HierarchicalHistogram) -> int:
    """Q = b^(h−2), at most 1024 (Xu–Cormode §3.2: h = ceil(log_b Q) + c, c = 2)."""
    b, h = tree.branching, tree.height
    return max(1, min(1024, b ** max(h - 2, 0)))


def default_buckets(tree: HierarchicalHistogram) -> int:
    """B = min(leaves/4, 1000), at least 2 (the exact-sums rule of :func:`fedeval.plan`)."""
    return max(2, min(tree.spec.n_leaves // 4, 1000))
