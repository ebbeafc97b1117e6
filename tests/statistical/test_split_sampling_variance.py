"""The split of clients over levels (layout "assign"): exact sampling variance of linear queries.

Under local DP each client encodes one level, chosen by a uniformly random
split with public sizes. ``HierarchicalHistogram.joint_query_variance`` states
the variance that split adds to a linear query on the consistent tree, over
both classes at once, in closed form. Here it is checked against the split
itself, simulated: a population of known leaf counts (one example per
client), R random allocations with the same part sizes, the scaled level
counts of each, and the same linear map the consistent tree applies.

Tolerance: the sample variance of R draws has relative standard deviation
√((κ − 1)/R) (κ the kurtosis, ≈ 3 for these sums of many indicators); the
band is 4 of those with κ = 4 (a margin for heavier tails), i.e.
4·√(3/R).
"""

from __future__ import annotations

import numpy as np
import pytest

from fedeval.aggregation.release import sampling_variance
from fedeval.privacy.guarantee import Guarantee
from fedeval.privacy.receipt import Receipt
from fedeval.sketches.hierarchical_histogram import HierarchicalHistogram
from fedeval.sketches.hierarchy import HierarchySpec

R = 4000
TOL = 4.0 * np.sqrt(3.0 / R)


def _population_tree(
    leaves: np.ndarray, sizes: np.ndarray, spec: HierarchySpec
) -> HierarchicalHistogram:
    """The consistent tree whose estimates are the population's counts, with the split's variances."""
    n = int(leaves.sum())
    levels = tuple(np.asarray(x, dtype=np.float64) for x in spec.levels_from_leaves(leaves))
    samp = tuple(
        sampling_variance(lv * n / m, int(m), n, float(n))
        for lv, m in zip(levels, sizes, strict=True)
    )
    receipt = Receipt(
        model="test",
        guarantee=Guarantee(epsilon=1.0, delta=0.0, unit="example", statement="test"),
    )
    tree = HierarchicalHistogram(
        spec=spec,
        levels=levels,
        node_variance=samp,
        receipt=receipt,
        node_sampling_variance=samp,
        part_fractions=sizes / n,
    )
    return tree.consistent()


def _simulated_queries(
    tree: HierarchicalHistogram,
    leaves: np.ndarray,
    sizes: np.ndarray,
    queries: list[list[np.ndarray | None]],
    rng: np.random.Generator,
) -> np.ndarray:
    """Each query's value under R random splits, shape (R, queries).

    A query is one leaf-weight vector per class (None: the class is left
    out), answered by the consistent tree's linear map on the scaled levels.
    """
    spec = tree.spec
    n = int(leaves.sum())
    cls = np.repeat(np.repeat([0, 1], spec.n_leaves), leaves.ravel())
    leaf = np.repeat(np.tile(np.arange(spec.n_leaves), 2), leaves.ravel())
    node_w = [[None if w is None else tree._node_weights(w[None, :]) for w in q] for q in queries]
    part_of = np.repeat(np.arange(sizes.size), sizes)
    out = np.zeros((R, len(queries)))
    for r in range(R):
        part = rng.permutation(part_of)
        for k in range(spec.height):
            mine = part == k
            node = leaf[mine] // spec.branching ** (spec.height - k - 1)
            counts = np.zeros((2, spec.level_size(k + 1)))
            np.add.at(counts, (cls[mine], node), 1.0)
            counts *= n / sizes[k]
            for j, nw in enumerate(node_w):
                out[r, j] += sum(nw[c][k][0] @ counts[c] for c in (0, 1) if nw[c] is not None)
    return out


@pytest.mark.parametrize("seed", [0, 1])
def test_joint_split_variance_equals_the_simulated_split(seed: int) -> None:
    rng = np.random.default_rng(seed)
    spec = HierarchySpec(3, 2)
    leaves = rng.integers(0, 40, size=(2, spec.n_leaves))
    n = int(leaves.sum())
    sizes = np.array([n // 3, n // 4, n - n // 3 - n // 4])
    tree = _population_tree(leaves, sizes, spec)
    # a query on both classes: AUC-like gradients (ramps of opposite sign per class)
    weights = [np.linspace(-1.0, 1.0, spec.n_leaves), -(np.linspace(0.5, -1.0, spec.n_leaves) ** 2)]
    predicted = float(tree.joint_query_variance(weights)[0])
    simulated = _simulated_queries(tree, leaves, sizes, [weights], rng)[:, 0]
    assert abs(simulated.var(ddof=1) / predicted - 1.0) < TOL
    # the per-node model (independent nodes and classes) is far off for this query
    independent = sum(float(tree.leaf_query_variance(w, c)[0]) for c, w in enumerate(weights))
    assert abs(independent / predicted - 1.0) > 3 * TOL


def test_the_total_of_all_classes_has_no_split_variance() -> None:
    """Each level's scaled part counts exactly N examples, so any mix of the levels does too."""
    rng = np.random.default_rng(3)
    spec = HierarchySpec(4, 2)
    leaves = rng.integers(0, 20, size=(2, spec.n_leaves))
    n = int(leaves.sum())
    sizes = np.array([n // 4] * 3 + [n - 3 * (n // 4)])
    tree = _population_tree(leaves, sizes, spec)
    ones = np.ones(spec.n_leaves)
    assert float(tree.joint_query_variance([ones, ones])[0]) == pytest.approx(0.0, abs=1e-6 * n)
    # the per-node model says otherwise
    assert sum(float(tree.leaf_query_variance(ones, c)[0]) for c in (0, 1)) > 1.0
    # one class's total does vary: the class mix of each level's clients is random
    assert float(tree.joint_query_variance([ones, None])[0]) > 1.0


def test_threshold_metric_errors_include_the_split() -> None:
    """Precision and recall at a threshold: delta-method SE² against the simulated split.

    Both are ratios of the prefix counts X and totals T of the two classes,
    whose split errors are correlated across the classes and between X and T.
    On the old code (independent per-node split errors) the recall variance
    was off by more than the tolerance; precision and accuracy likewise.
    The population is large enough (≈ 2,000 examples) that the ratios'
    non-linearity is far inside the tolerance.
    """
    from fedeval.metrics.confusion import threshold_metrics
    from fedeval.sketches.tree import prefix_leaf_weights

    rng = np.random.default_rng(5)
    spec = HierarchySpec(3, 2)
    leaves = np.array([[200, 180, 160, 120, 90, 60, 40, 20], [15, 25, 40, 60, 90, 140, 180, 220]])
    n = int(leaves.sum())
    sizes = np.array([n // 3, n // 3, n - 2 * (n // 3)])
    tree = _population_tree(leaves, sizes, spec)
    t = 0.5  # a leaf edge: X is exactly the first four leaves' count
    below = prefix_leaf_weights(np.array([4]), np.zeros(1), spec.n_leaves)[0]
    ones = np.ones(spec.n_leaves)
    x_pos, t_pos, x_neg, t_neg = _simulated_queries(
        tree,
        leaves,
        sizes,
        [[None, below], [None, ones], [below, None], [ones, None]],
        rng,
    ).T
    tp, fp = t_pos - x_pos, t_neg - x_neg
    simulated = {
        "recall": np.var(tp / t_pos, ddof=1),
        "precision": np.var(tp / (tp + fp), ddof=1),
        "accuracy": np.var((tp + x_neg) / (t_pos + t_neg), ddof=1),
    }
    got = threshold_metrics(tree, t)
    for name, var in simulated.items():
        se = float(getattr(got, f"{name}_se"))
        assert abs(se**2 / var - 1.0) < TOL, (name, se**2, var)
