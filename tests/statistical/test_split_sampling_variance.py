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
        n_clients=n,
        node_sampling_variance=samp,
        part_fractions=sizes / n,
    )
    return tree.consistent()


def _simulated_queries(
    tree: HierarchicalHistogram,
    leaves: np.ndarray,
    sizes: np.ndarray,
    weights: list[np.ndarray],
    rng: np.random.Generator,
) -> np.ndarray:
    """The query's value under R random splits (the consistent tree's linear map on the scaled levels)."""
    spec = tree.spec
    n = int(leaves.sum())
    cls = np.repeat(np.repeat([0, 1], spec.n_leaves), leaves.ravel())
    leaf = np.repeat(np.tile(np.arange(spec.n_leaves), 2), leaves.ravel())
    node_w = [tree._node_weights(w[None, :]) for w in weights]
    part_of = np.repeat(np.arange(sizes.size), sizes)
    out = np.empty(R)
    for r in range(R):
        part = rng.permutation(part_of)
        value = 0.0
        for k in range(spec.height):
            mine = part == k
            node = leaf[mine] // spec.branching ** (spec.height - k - 1)
            counts = np.zeros((2, spec.level_size(k + 1)))
            np.add.at(counts, (cls[mine], node), 1.0)
            counts *= n / sizes[k]
            value += sum(node_w[c][k][0] @ counts[c] for c in (0, 1))
        out[r] = value
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
    simulated = _simulated_queries(tree, leaves, sizes, weights, rng)
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
