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
