"""The dyadic tree noise of the private ECDF: Lemma 1, Theorem 1/3 noise scales, error and an audit.

Reference: Barczewski, Mawass & Ramon (2025), eq. (2), Lemma 1, Theorems 1 and 3.
The geometry is :class:`fedeval.sketches.tree.Tree` (depth 0 = root, flattened
depth by depth from the root); the sensitivity is declared by
:class:`fedeval.sketches.prefix_tree.PrefixTreeSketch`; the noise is discrete
Laplace on every node (Pólya shares summing to discrete Laplace).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from ecdf_closed_form import mse_tolerance, node_alpha, path_sum_moments, path_sum_pvalue
from scipy import stats

from fedeval.ecdf import count_at_most, count_below, empirical_cdf, private_ecdf
from fedeval.privacy.ledger import BudgetExceededError, BudgetLedger
from fedeval.privacy.mechanism_for import mechanism_for
from fedeval.privacy.models import DistributedDP, SecureAggregation
from fedeval.sketches.prefix_tree import PrefixTreeSketch
from fedeval.sketches.tree import Tree, binary_height, signed_cover_size


def test_paths_follow_eq2_indexing() -> None:
    # N = 5 -> L = 3; point i (1-based) uses node ceil(i / 2^l) at level l (l = 0: leaves).
    # Tree numbers depths from the root (depth d = L - l), flattened root first.
    n, big_l = 5, 3
    tree = Tree(2, big_l, n_points=n)
    assert PrefixTreeSketch(np.arange(float(n))).tree == tree
    sizes = [tree.width(d) for d in range(big_l + 1)]
    np.testing.assert_array_equal(sizes, [1, 2, 3, 5])
    assert tree.n_nodes == 11
    offsets = tree.depth_offsets()
    np.testing.assert_array_equal(offsets, [0, 1, 3, 6])
    a = tree.path_matrix(np.arange(n)).toarray()
    for i in range(1, n + 1):
        expected = {offsets[big_l - lvl] + math.ceil(i / 2**lvl) - 1 for lvl in range(big_l + 1)}
        assert set(np.flatnonzero(a[i - 1])) == expected
    assert np.all(a.sum(axis=1) == big_l + 1)


@pytest.mark.parametrize("height", [1, 2, 3, 4, 5])
def test_lemma1_interval_and_suffix_cover_sizes(height: int) -> None:
    n = 1 << height
    worst_interval = max(signed_cover_size(a, b, height) for a in range(n) for b in range(a, n))
    worst_suffix = max(signed_cover_size(a, n - 1, height) for a in range(n))
    # Theorem 1 needs at most L + 1 nodes for any closed interval ...
    assert worst_interval <= height + 1
    # ... and Theorem 3 at most ceil((L + 1)/2) for a suffix; that bound is attained.
    assert worst_suffix == math.ceil((height + 1) / 2)
    # The prefix-tree sketch declares exactly these bounds as its node-space sensitivity.
    sketch = PrefixTreeSketch(np.arange(float(n)))
    for neighbouring, bound in (("replace", height + 1), ("add_remove", worst_suffix)):
        sens = sketch.sensitivity(
            unit="example", neighbouring=neighbouring, examples_per_unit=1, layout="whole"
        )
        assert sens.l1 == bound >= (worst_interval if neighbouring == "replace" else worst_suffix)
        assert sens.basis_size == sketch.tree.n_nodes


def test_count_at_most_and_count_below_on_ties() -> None:
    values = np.array([0.0, 0.5, 0.5, 1.0, 2.0])
    points = np.array([0.0, 0.5, 1.0, 1.5])
    # count_at_most is #x <= t (was prefix_counts); count_below is #x < t.
    np.testing.assert_array_equal(count_at_most(values, points), [1, 3, 4, 4])
    np.testing.assert_array_equal(count_below(values, points), [0, 1, 3, 4])


def test_noise_scales_of_theorems_1_and_3() -> None:
    eps, n_points = 2.0, 1000
    sketch = PrefixTreeSketch(np.arange(float(n_points)))
    assert sketch.tree.height == binary_height(n_points) == 10
    assert sketch.nodes_touched("replace") == 11
    assert sketch.nodes_touched("add_remove") == 6
    rel = private_ecdf(np.zeros(10), np.arange(float(n_points)), epsilon=eps, rng=0)
    assert rel.height == 10
    assert rel.noise_scale == pytest.approx(11 / eps)
    # Discrete Laplace node noise, α = exp(-ε/(L+1)): variance 2α/(1-α)² per node, L + 1
    # nodes per count. Theorem 1's continuous 2(L+1)³/ε² is an upper bound, within
    # x²/12 relatively (x = ε/(L+1): 2α/(1-α)² = 1/(2 sinh²(x/2)) ≥ (2/x²)(1 - x²/12)).
    sigma2, _ = path_sum_moments(node_alpha(eps, 11), 11)
    assert rel.count_variance == pytest.approx(sigma2, rel=1e-12)
    assert rel.point_variance == pytest.approx(sigma2 / 100, rel=1e-12)
    theorem1 = 2 * 11**3 / eps**2
    x = eps / 11
    assert theorem1 * (1 - x**2 / 12) <= rel.count_variance <= theorem1
    rel3 = private_ecdf(
        np.zeros(10), np.arange(float(n_points)), epsilon=eps, rng=0, neighbouring="add_remove"
    )
    assert rel3.noise_scale == pytest.approx(6 / eps)
    sigma2_3, _ = path_sum_moments(node_alpha(eps, 6), 11)
    assert rel3.count_variance == pytest.approx(sigma2_3, rel=1e-12)


def test_no_noise_limit_recovers_the_exact_counts() -> None:
    rng = np.random.default_rng(3)
    values = rng.random(500)
    grid = np.linspace(0, 1, 33)
    exact = empirical_cdf(values, grid)
    np.testing.assert_array_equal(exact.counts, [(values <= t).sum() for t in grid])
    np.testing.assert_allclose(exact(grid), exact.counts / 500)
    assert float(exact(-1.0)) == 0.0
    assert not exact.guarantee.is_private and exact.count_variance == 0.0
    # Huge ε: the noise is negligible.
    near = private_ecdf(values, grid, epsilon=1e9, rng=0)
    np.testing.assert_allclose(near.counts, exact.counts, atol=1e-5)
    # Secure aggregation alone releases the exact counts, with no DP claimed.
    sa = private_ecdf(values, grid, SecureAggregation(), rng=0)
    np.testing.assert_array_equal(sa.counts, exact.counts)
    assert sa.count_variance == 0.0 and not sa.guarantee.is_private
    # Without DP n is known: values above τ_N still count in the normaliser.
    above = private_ecdf([0.1, 0.5, 2.0], [0.0, 1.0], SecureAggregation())
    assert above.total == 3.0
    np.testing.assert_allclose(above.values, [0.0, 2 / 3])


@pytest.mark.statistical
@pytest.mark.parametrize(("n_points", "path"), [(64, "fast"), (1000, "fast"), (100, "faithful")])
def test_expected_squared_error_matches_theorem1(n_points: int, path: str) -> None:
    # Theorem 1 with discrete Laplace nodes: E[(n F̂ - n F)²] = (L+1)·2α/(1-α)², α = e^{-ε/(L+1)}.
    eps, trials = 1.0, 4000 if path == "fast" else 1500
    values = np.random.default_rng(0).random(15) * n_points
    grid = np.arange(float(n_points))
    k = binary_height(n_points) + 1
    point = n_points // 3
    exact = empirical_cdf(values, grid).counts[point]
    err = np.array(
        [
            private_ecdf(values, grid, epsilon=eps, rng=r, path=path).counts[point] - exact  # type: ignore[arg-type]
            for r in range(trials)
        ]
    )
    alpha = node_alpha(eps, k)
    sigma2, _ = path_sum_moments(alpha, k)
    # One fixed point per trial keeps the trials independent.
    assert abs(np.mean(err**2) - sigma2) < mse_tolerance(alpha, k, trials)
    assert abs(np.mean(err)) < 5 * math.sqrt(sigma2 / trials)
    assert np.all(err == np.round(err))


@pytest.mark.statistical
def test_fast_and_faithful_paths_release_the_same_distribution() -> None:
    """Both paths' error at one point follows the exact pmf of L + 1 discrete Laplace nodes.

    Fast: the node noise drawn as one discrete Laplace per node; faithful: every
    client (one per value) adds its own Pólya share on every node. χ² goodness
    of fit of each to the closed-form pmf (convolution of L + 1 discrete
    Laplace pmfs), at α = 1e-4; and the two samples against each other.
    """
    eps, trials = 1.0, 2000
    values = np.random.default_rng(1).random(12)
    grid = np.linspace(0.0, 1.0, 8)  # L = 3: 4 nodes per point
    point = 5
    exact = empirical_cdf(values, grid).counts[point]
    k = 4
    alpha = node_alpha(eps, k)
    samples = {}
    for path in ("fast", "faithful"):
        err = np.array(
            [
                private_ecdf(values, grid, epsilon=eps, rng=10_000 + r, path=path).counts[point]  # type: ignore[arg-type]
                - exact
                for r in range(trials)
            ]
        ).astype(np.int64)
        assert path_sum_pvalue(err, alpha, k) > 1e-4, path
        samples[path] = err
    # Two-sample check (no closed form needed): the paths are indistinguishable.
    assert stats.ks_2samp(samples["fast"], samples["faithful"]).pvalue > 1e-4


@pytest.mark.privacy
def test_empirical_audit_on_neighbouring_datasets() -> None:
    """Distinguish two neighbouring datasets through the released vector.

    N = 4 (L = 2), the pipeline's own mechanism (discrete Laplace node noise,
    the sum of all clients' Pólya shares). Moving one example from τ₁ to τ₃
    (0-based) lowers the prefix counts at positions 1 and 2 by one. The
    statistic T = (y₁ - y₀) + (y₂ - y₃) cancels the shared upper-level noise
    and shifts by 2; the claimed ε must bound every empirical
    log P(T ≥ k | D₁)/P(T ≥ k | D₂) beyond its Clopper–Pearson interval.
    """
    eps, trials = 1.0, 400_000
    grid = np.array([0.0, 1.0, 2.0, 3.0])
    d1 = np.array([0.0, 1.0, 2.0, 3.0, 3.0])
    d2 = np.array([0.0, 3.0, 2.0, 3.0, 3.0])  # one example replaced
    sketch = PrefixTreeSketch(grid, total=5.0)
    mech = mechanism_for(DistributedDP(eps, neighbouring="replace"), sketch, n_clients=5)
    assert mech.noise is not None and mech.guarantee.epsilon == eps
    a = sketch.tree.path_matrix(np.arange(4)).toarray()
    rng = np.random.default_rng(2024)

    def statistic(values: np.ndarray) -> np.ndarray:
        c = count_at_most(values, grid).astype(float)
        eta = mech.noise.total((trials, sketch.noise_size), rng, 5).astype(float)  # type: ignore[union-attr, arg-type]
        y = c + eta @ a.T
        return (y[:, 1] - y[:, 0]) + (y[:, 2] - y[:, 3])

    t1, t2 = statistic(d1), statistic(d2)
    eps_lower = []
    for k in range(-2, 12):
        c1 = int((t1 >= k).sum())
        c2 = int((t2 >= k).sum())
        if c1 < 50 or c2 < 50:
            continue
        lo1 = stats.beta.ppf(1e-4, c1, trials - c1 + 1)
        hi2 = stats.beta.ppf(1 - 1e-4, c2 + 1, trials - c2)
        eps_lower.append(math.log(lo1 / hi2))
    assert eps_lower, "audit produced no usable thresholds"
    assert max(eps_lower) <= eps
    # The audit has power: it detects a real privacy loss (well above 0).
    assert max(eps_lower) > 0.2


def test_ledger_is_charged_once_and_refuses_overspend_atomically() -> None:
    ledger = BudgetLedger(1.0)
    rel = private_ecdf([0.1, 0.4], [0.0, 0.5, 1.0], epsilon=0.6, rng=0, ledger=ledger)
    assert ledger.spent_epsilon == pytest.approx(0.6)
    assert rel.receipt.epsilon_spent == pytest.approx(0.6)
    gen = np.random.default_rng(1)
    state = gen.bit_generator.state
    with pytest.raises(BudgetExceededError):
        private_ecdf([0.1, 0.4], [0.0, 0.5, 1.0], epsilon=0.6, rng=gen, ledger=ledger)
    # Refused before any noise: nothing charged, no random draw made.
    assert len(ledger.entries) == 1
    assert ledger.spent_epsilon == pytest.approx(0.6)
    assert gen.bit_generator.state == state


def test_add_remove_normalises_by_released_total() -> None:
    rel = private_ecdf(
        np.full(1000, 0.5), [0.0, 0.5, 1.0], epsilon=5.0, rng=1, neighbouring="add_remove"
    )
    assert rel.total == pytest.approx(rel.counts[-1])
    assert rel.noise_scale == pytest.approx(math.ceil(3 / 2) / 5.0)
    assert rel.guarantee is not None and "Theorem 3" in rel.guarantee.statement
    # The number of examples is not public under add/remove; under replacement it is.
    assert "the number of examples" not in rel.guarantee.public
    rep = private_ecdf(np.full(1000, 0.5), [0.0, 0.5, 1.0], epsilon=5.0, rng=1)
    assert rep.total == 1000.0 and "the number of examples" in rep.guarantee.public
