"""Upper levels are the sums of their children, exactly (integers and floats)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fedeval.sketches.hierarchy import HierarchySpec


@pytest.mark.parametrize(("b", "h"), [(2, 6), (3, 4), (4, 3), (7, 2), (8, 2), (10, 2)])
@pytest.mark.parametrize("dtype", [np.int64, np.float64])
def test_levels_are_children_sums_bit_for_bit(b: int, h: int, dtype: type) -> None:
    """Reference: the definition, each node the sum of its b children (numpy's own sum)."""
    spec = HierarchySpec(h, b)
    rng = np.random.default_rng(b * 10 + h)
    leaves = rng.integers(0, 9, (2, spec.n_leaves)).astype(dtype)
    if dtype is np.float64:
        leaves = leaves * rng.random((2, spec.n_leaves)) * 1e3
    reference = [leaves]
    for _ in range(h - 1):
        reference.append(reference[-1].reshape(2, -1, b).sum(axis=-1))
    reference = reference[::-1]
    got = spec.levels_from_leaves(leaves)
    for g, r in zip(got, reference, strict=True):
        assert g.dtype == r.dtype
        np.testing.assert_array_equal(g, r)
    if dtype is np.int64:
        np.testing.assert_array_equal(spec._flatten_from_leaves(leaves), spec.flatten(reference))
    # several rows at once (the local-DP split: one row of leaves per level)
    stacked = spec.levels_from_leaves(np.stack([leaves, 2 * leaves]))
    for g, r in zip(stacked, reference, strict=True):
        np.testing.assert_array_equal(g[1], 2 * r)


def test_encoding_a_federation_with_gapped_ids_builds_no_client_index() -> None:
    """The hierarchy does not read clients: the per-example index (a gather) is not built."""
    from fedeval.data import Federation
    from fedeval.sketches.hierarchy import HierarchySketch

    rng = np.random.default_rng(0)
    s, y = rng.random(1000), rng.integers(0, 2, 1000)
    fed = Federation.from_arrays(s, y, rng.integers(0, 400, 1000) * 3)  # ids with gaps
    sketch = HierarchySketch(HierarchySpec(4))
    got = sketch.encode_clients(fed)
    assert fed._client_index is None
    np.testing.assert_array_equal(got, sketch.encode(s, y, fed.client_index))


@pytest.mark.parametrize(("b", "h"), [(2, 6), (4, 3), (3, 4)])
def test_batch_encoding_sums_to_the_encoding_bit_for_bit(b: int, h: int) -> None:
    """Issue 28: a streamed source sums leaf counts per batch and sums up the levels once.

    Integer sums: ``expand(Σ leaves)`` is exactly ``Σ encode`` over any split into batches,
    for the hierarchy and the sliced hierarchy (more classes), ragged batches included."""
    from fedeval.sketches.hierarchy import HierarchySketch
    from fedeval.sketches.sliced import SlicedHierarchySketch, slice_labels

    rng = np.random.default_rng(7)
    n = 5000
    s = rng.random(n)
    y = (rng.random(n) < s).astype(np.int8)
    sliced = SlicedHierarchySketch.of(HierarchySpec(h, branching=b), 3)
    cases = [
        (HierarchySketch(HierarchySpec(h, branching=b)), y),
        (sliced, slice_labels(y, rng.integers(0, 3, n))),
    ]
    cuts = [0, 1, 17, 1000, 1001, 4096, n]
    for sketch, labels in cases:
        short = sketch.batch_encoding()
        assert short is not None and short.length < sketch.length
        clients = np.zeros(n, dtype=np.int64)
        full = sum(
            sketch.encode(s[a:z], labels[a:z], clients[a:z]) for a, z in itertools.pairwise(cuts)
        )
        leaves = sum(
            short.encoder(s[a:z], labels[a:z], clients[a:z]) for a, z in itertools.pairwise(cuts)
        )
        out = short.expand(leaves)
        assert out.dtype == np.int64
        np.testing.assert_array_equal(out, full)
        np.testing.assert_array_equal(out, sketch.encode(s, labels, clients))
    assert HierarchySketch(HierarchySpec(h, branching=b), leaves_only=True).batch_encoding() is None
