"""The parametric bootstrap of a released hierarchy (postprocess/bootstrap.py).

A replicate takes the released leaves as the truth and redraws every node's
noise with its known variance, so for a linear statistic the bootstrap standard
error must match the closed form Σ of the node variances it reads. Statistical
(fixed seed): the relative error of a standard deviation from R replicates is
about 1/√(2R), and the tolerance is five of those.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import fedeval as fe
from fedeval.postprocess.bootstrap import (
    bootstrap_se,
    bootstrap_values,
    leaf_replicates,
    parametric_replicate,
)
from helpers import release_hierarchy


@pytest.fixture(scope="module")
def federation() -> fe.Federation:
    rng = np.random.default_rng(0)
    scores = rng.beta(2, 3, 3000)
    labels = (rng.random(3000) < scores).astype(np.int64)
    return fe.Federation.from_arrays(scores, labels, rng.integers(0, 300, 3000))


@pytest.mark.statistical
def test_bootstrap_se_of_a_linear_statistic_matches_the_node_variances(
    federation: fe.Federation,
) -> None:
    tree = release_hierarchy(federation, fe.DistributedDP(epsilon=1.0), height=5, rng=1)
    replicates = 2000

    def positives_below_half(t: object) -> float:
        leaves = t.levels[-1]  # type: ignore[attr-defined]
        return float(leaves[1, : leaves.shape[1] // 2].sum())

    se = bootstrap_se(tree, positives_below_half, replicates=replicates, rng=2)
    leaf_var = tree.node_variance[-1][1]
    closed = math.sqrt(float(leaf_var[: leaf_var.size // 2].sum()))
    assert se == pytest.approx(closed, rel=5 / math.sqrt(2 * replicates))


def test_a_replicate_redraws_the_noise_around_the_released_leaves(
    federation: fe.Federation,
) -> None:
    tree = release_hierarchy(federation, fe.DistributedDP(epsilon=1.0), height=4, rng=1)
    rep = parametric_replicate(tree, np.random.default_rng(3))
    assert not rep.is_consistent
    assert rep.receipt == tree.receipt and rep.spec == tree.spec
    assert not np.array_equal(rep.levels[-1], tree.levels[-1])
    consistent = tree.consistent()
    assert parametric_replicate(consistent, np.random.default_rng(3)).is_consistent
    # the same seed gives the same replicates (the bootstrap is reproducible)
    a = bootstrap_values(tree, lambda t: t.levels[-1].sum(), replicates=3, rng=7)
    b = bootstrap_values(tree, lambda t: t.levels[-1].sum(), replicates=3, rng=7)
    assert a == b


def test_an_exact_release_has_no_bootstrap_error(federation: fe.Federation) -> None:
    tree = release_hierarchy(federation, fe.SecureAggregation(), height=4)
    assert bootstrap_se(tree, lambda t: float(t.levels[-1].sum()), replicates=5) == 0.0
    rep = parametric_replicate(tree, np.random.default_rng(0))
    for released, replicated in zip(tree.levels, rep.levels, strict=True):
        np.testing.assert_array_equal(released, replicated)


def test_leaf_replicates_draw_what_one_call_per_replicate_draws() -> None:
    """One call for R replicates gives the per-replicate draws of the same generator, in order,
    with each leaf's own noise scale (the multiclass AUC bootstrap's fixed-seed values)."""
    from fedeval.sketches.multiclass import class_tree

    s = np.linspace(0, 1, 200)
    fed = fe.Federation.from_arrays(s, (s > 0.5).astype(int))
    receipt = release_hierarchy(fed, fe.DistributedDP(epsilon=1.0), height=3).receipt
    truth = np.arange(16, dtype=np.float64).reshape(2, 8)
    variance = np.linspace(1.0, 4.0, 16).reshape(2, 8)
    tree = class_tree(truth, variance, receipt)
    batch = leaf_replicates(tree, truth, np.random.default_rng(3), 7)
    gen = np.random.default_rng(3)
    one_by_one = [truth + gen.standard_normal(truth.shape) * np.sqrt(variance) for _ in range(7)]
    np.testing.assert_array_equal(batch, np.array(one_by_one))
