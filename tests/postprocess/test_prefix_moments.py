"""The O(b·h) prefix moments on the consistent tree equal the generic propagation."""

from __future__ import annotations

import numpy as np
import pytest

from fedeval.postprocess.consistency import consistent_node_weights, consistent_prefix_moments
from fedeval.sketches.tree import prefix_leaf_weights


@pytest.mark.parametrize(("b", "h"), [(2, 5), (3, 3), (4, 3), (2, 1)])
def test_closed_form_equals_transposed_map(b: int, h: int) -> None:
    rng = np.random.default_rng(b * 10 + h)
    a = [*rng.uniform(0.2, 0.9, h - 1), 1.0]
    v = [rng.uniform(0.5, 2.0, b ** (k + 1)) for k in range(h)]  # unequal node variances
    n = b**h
    r = rng.integers(0, n + 1, 40)
    frac = np.where(r < n, rng.random(40), 0.0)
    r[:2], frac[:2] = (n, 0), (0.0, 0.0)
    node_w = consistent_node_weights(prefix_leaf_weights(r, frac, n), a, b)
    total_w = consistent_node_weights(np.ones((1, n)), a, b)
    var = sum((w**2) @ vk for w, vk in zip(node_w, v, strict=True))
    cov = sum((w * t) @ vk for w, t, vk in zip(node_w, total_w, v, strict=True))
    var_t = sum((t**2) @ vk for t, vk in zip(total_w, v, strict=True))[0]
    got_var, got_cov, got_var_t = consistent_prefix_moments(r, frac, v, a, b)
    np.testing.assert_allclose(got_var, var, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got_cov, cov, rtol=1e-12, atol=1e-12)
    assert got_var_t == pytest.approx(var_t, rel=1e-12)


@pytest.mark.parametrize("b", [2, 3, 4, 5, 7, 8, 16])
@pytest.mark.parametrize("h", [1, 2, 4, 6])
def test_few_prefixes_equal_the_vectorised_path_bit_for_bit(b: int, h: int) -> None:
    """A few queries take a scalar path (issue 28, tiny releases): they must agree exactly.

    The reference is the same function asked nine queries at once (the vectorised
    loop); equality is exact, not approximate, so no released number moves.
    """
    if b**h > 5000:
        h = 3
    rng = np.random.default_rng(1000 * b + h)
    n = b**h
    for trial in range(40):
        a = [*rng.uniform(0.05, 0.95, h - 1), 1.0]
        v = [rng.uniform(0.0, 3.0, b ** (k + 1)) * rng.choice([1e-3, 1.0, 1e4]) for k in range(h)]
        if trial % 5 == 0:
            v = [np.full(b ** (k + 1), 2.0 / 3.0) for k in range(h)]  # equal node variances
        r = int(rng.integers(0, n + 1))
        frac = 0.0 if r == n or trial % 3 == 0 else float(rng.random())
        one = consistent_prefix_moments(np.array([r]), np.array([frac]), v, a, b)
        # nine or more prefixes take the vectorised loop: the reference
        rs = np.array([r, *rng.integers(0, n + 1, 8)])
        fs = np.where(rs < n, np.array([frac, *rng.random(8)]), 0.0)
        many = consistent_prefix_moments(rs, fs, v, a, b)
        assert one[0][0] == many[0][0] and one[1][0] == many[1][0], (trial, r, frac)
        assert one[0].shape == one[1].shape == (1,)
        assert one[2] == many[2]
        few = consistent_prefix_moments(rs[:8], fs[:8], v, a, b)  # scalar, one at a time
        np.testing.assert_array_equal(few[0], many[0][:8])
        np.testing.assert_array_equal(few[1], many[1][:8])


@pytest.mark.parametrize(("b", "h"), [(2, 1), (2, 4), (2, 8), (3, 5), (4, 4), (7, 2), (2, 9)])
def test_small_trees_subtree_sums_equal_the_array_form_bit_for_bit(b: int, h: int) -> None:
    """Issue 28: small trees take a scalar path; the sums must equal the array recursion's."""
    from fedeval.postprocess import consistency

    rng = np.random.default_rng(b * 100 + h)
    for trial in range(20):
        a = [*rng.uniform(0.05, 0.95, h - 1), 1.0]
        v = [rng.uniform(0.0, 3.0, b ** (k + 1)) * rng.choice([1e-3, 1.0, 1e4]) for k in range(h)]
        got = consistency.subtree_moment_sums(v, a, b)
        limit = consistency._SCALAR_SUMS_MAX_LEAVES
        try:
            consistency._SCALAR_SUMS_MAX_LEAVES = 0  # the array recursion
            want = consistency.subtree_moment_sums(v, a, b)
        finally:
            consistency._SCALAR_SUMS_MAX_LEAVES = limit
        for k in range(h):
            np.testing.assert_array_equal(got[0][k], want[0][k])
            np.testing.assert_array_equal(got[1][k], want[1][k])
        assert got[2] == want[2], trial


def test_small_tree_sums_are_kept_by_their_public_inputs_and_read_only() -> None:
    """Issue 28: a second release with the same node variances reuses the first's sums
    (equal to a fresh computation); other variances get their own; nobody can alter them."""
    from fedeval.postprocess import consistency

    v = [np.full(2**k, 3.0 + k) for k in range(1, 6)]
    a = [0.2, 0.3, 0.4, 0.5, 1.0]
    consistency._SMALL_TREE_SUMS.clear()
    first = consistency.subtree_moment_sums(v, a, 2)
    again = consistency.subtree_moment_sums([x.copy() for x in v], list(a), 2)
    assert again is first
    fresh = consistency._subtree_moment_sums_scalar(
        v, np.array(a), consistency._total_weights(np.array(a)), 2
    )
    for x, y in zip((*first[0], *first[1]), (*fresh[0], *fresh[1]), strict=True):
        np.testing.assert_array_equal(x, y)
        assert not x.flags.writeable
    other = consistency.subtree_moment_sums([x * 2 for x in v], a, 2)
    assert other is not first and other[2] == 2 * first[2]
