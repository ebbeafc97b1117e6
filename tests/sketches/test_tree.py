"""The one b-ary tree geometry (sketches/tree.py).

The root paths of the ECDF tree (Barczewski et al. eq. 2) and Lemma 1's cover
sizes are checked in ``tests/ecdf/test_ecdf_tree.py``; here: sizes of partial
trees, level sums, prefix covers and minimal node decompositions, against
brute force on every small tree.
"""

from __future__ import annotations

import numpy as np
import pytest

from fedeval.sketches.tree import Tree, binary_height, prefix_leaf_weights, sum_children

SHAPES = [(2, 1), (2, 3), (3, 2), (4, 2), (10, 2)]


@pytest.mark.parametrize(("b", "h"), SHAPES)
def test_a_partial_tree_keeps_the_nodes_over_stored_leaves(b: int, h: int) -> None:
    for n in range(1, b**h + 1):
        tree = Tree(b, h, n_points=n)
        for d in range(h + 1):
            # a node exists iff it covers at least one of the n stored leaves
            covering = {leaf // tree.span(d) for leaf in range(n)}
            assert tree.width(d) == len(covering)
        assert tree.n_nodes == sum(tree.width(d) for d in range(h + 1))
        ids = tree.path_ids(np.arange(n))
        assert ids.max() == tree.n_nodes - 1
        assert np.unique(ids).size == tree.n_nodes  # every node is on some stored path


@pytest.mark.parametrize(("b", "h"), SHAPES)
def test_level_sums_and_sum_children_agree(b: int, h: int) -> None:
    tree = Tree(b, h)
    leaves = np.random.default_rng(b * h).integers(0, 50, size=(2, tree.n_leaves))
    below = leaves
    for d in range(h - 1, -1, -1):
        below = sum_children(below, b)
        np.testing.assert_array_equal(below, tree.level_sums(leaves, d))
    np.testing.assert_array_equal(below[:, 0], leaves.sum(axis=1))


@pytest.mark.parametrize(("b", "h"), SHAPES)
def test_prefix_covers_tile_every_prefix_with_few_nodes(b: int, h: int) -> None:
    tree = Tree(b, h)
    r = np.arange(tree.n_leaves + 1, dtype=np.int64)
    covered = np.zeros((r.size, tree.n_leaves), dtype=np.int64)
    for d in range(1, h + 1):
        lo, hi = tree.prefix_cover(r, d)
        assert np.all(lo <= hi)
        # base-b digits of r: at most b - 1 nodes per depth; the whole range takes
        # all b nodes of depth 1 (a rootless hierarchy has no depth-0 node to use)
        assert np.all((hi - lo)[:-1] <= b - 1)
        assert hi[-1] - lo[-1] == (b if d == 1 else 0)
        for i, (a, z) in enumerate(zip(lo, hi, strict=True)):
            for node in range(int(a), int(z)):
                covered[i, node * tree.span(d) : (node + 1) * tree.span(d)] += 1
    expected = (np.arange(tree.n_leaves)[None, :] < r[:, None]).astype(np.int64)
    np.testing.assert_array_equal(covered, expected)  # each leaf of [0, r) exactly once


@pytest.mark.parametrize(("b", "h"), [(2, 3), (3, 2)])
def test_minimal_node_weights_reproduce_the_leaf_weights(b: int, h: int) -> None:
    tree = Tree(b, h)
    r = np.arange(tree.n_leaves, dtype=np.int64)
    frac = np.linspace(0.0, 0.9, r.size)
    weights = prefix_leaf_weights(r, frac, tree.n_leaves)
    assert weights[1].tolist()[:3] == [1.0, frac[1], 0.0]
    nodes = tree.minimal_node_weights(weights)
    rebuilt = sum(np.repeat(w, tree.span(d), axis=1) for d, w in enumerate(nodes, start=1))
    np.testing.assert_allclose(rebuilt, weights)
    # a prefix [0, r) with frac 0 uses its base-b digits: at most b - 1 nodes per depth
    prefix = tree.minimal_node_weights(prefix_leaf_weights(r, np.zeros(r.size), tree.n_leaves))
    for w in prefix:
        assert np.all(np.count_nonzero(w, axis=1) <= b - 1)


def test_path_matrix_and_path_sums_agree() -> None:
    tree = Tree(2, 4, n_points=11)
    values = np.random.default_rng(0).normal(size=tree.n_nodes)
    leaves = np.array([0, 3, 10])
    np.testing.assert_allclose(
        tree.path_matrix(leaves) @ values, tree.path_sums(values, leaves), rtol=1e-12
    )


@pytest.mark.parametrize("n", range(2, 40))
def test_binary_height_is_the_smallest_l_with_room_for_n(n: int) -> None:
    height = binary_height(n)
    assert 2 ** (height - 1) < n <= 2**height


def test_bad_shapes_are_refused() -> None:
    with pytest.raises(ValueError, match="exceeds"):
        Tree(2, 2, n_points=5)
    with pytest.raises(ValueError, match="branching"):
        Tree(1, 2)
    with pytest.raises(TypeError, match="height"):
        Tree(2, 1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n_points"):
        binary_height(1)
