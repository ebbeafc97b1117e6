"""The dyadic tree mechanism: Lemma 1, Theorem 1/3 noise scales, error and an audit.

Reference: Barczewski, Mawass & Ramon (2025), eq. (2), Lemma 1, Theorems 1 and 3.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from fedeval.ecdf import (
    TreeMechanism,
    empirical_cdf,
    level_sizes,
    path_matrix,
    prefix_counts,
    private_ecdf,
    signed_cover_size,
)
from fedeval.privacy.ledger import BudgetExceededError, BudgetLedger


def test_paths_follow_eq2_indexing() -> None:
    # N = 5 -> L = 3; point i (1-based) uses nodes ceil(i / 2^l) at level l.
    n = 5
    a = path_matrix(np.arange(n), n).toarray()
    sizes = level_sizes(n)
    np.testing.assert_array_equal(sizes, [5, 3, 2, 1])
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    for i in range(1, n + 1):
        expected = {offsets[lvl] + math.ceil(i / 2**lvl) - 1 for lvl in range(4)}
        assert set(np.flatnonzero(a[i - 1])) == expected
    assert np.all(a.sum(axis=1) == 4)


@pytest.mark.parametrize("height", [1, 2, 3, 4, 5])
def test_lemma1_interval_and_suffix_cover_sizes(height: int) -> None:
    n = 1 << height
    worst_interval = max(signed_cover_size(a, b, height) for a in range(n) for b in range(a, n))
    worst_suffix = max(signed_cover_size(a, n - 1, height) for a in range(n))
    # Theorem 1 needs at most L + 1 nodes for any closed interval ...
    assert worst_interval <= height + 1
    # ... and Theorem 3 at most ceil((L + 1)/2) for a suffix; that bound is attained.
    assert worst_suffix == math.ceil((height + 1) / 2)


def test_noise_scales_of_theorems_1_and_3() -> None:
    m1 = TreeMechanism(2.0, 1000)
    m3 = TreeMechanism(2.0, 1000, neighbouring="add_remove")
    assert m1.height == 10
    assert m1.noise_scale == pytest.approx(11 / 2.0)
    assert m3.noise_scale == pytest.approx(6 / 2.0)
    assert m1.point_variance == pytest.approx(2 * 11**3 / 4.0)
    rel = private_ecdf(np.zeros(10), np.arange(1000.0), epsilon=2.0, rng=0)
    assert rel.count_variance == pytest.approx(2 * 11**3 / 4.0)
    assert rel.point_variance == pytest.approx(2 * 11**3 / 4.0 / 100)


def test_no_noise_limit_recovers_the_exact_counts() -> None:
    rng = np.random.default_rng(3)
    values = rng.random(500)
    grid = np.linspace(0, 1, 33)
    exact = empirical_cdf(values, grid)
    np.testing.assert_array_equal(exact.counts, [(values <= t).sum() for t in grid])
    np.testing.assert_allclose(exact(grid), exact.counts / 500)
    assert float(exact(-1.0)) == 0.0
    # Huge ε: the noise is negligible.
    near = private_ecdf(values, grid, epsilon=1e9, rng=0)
    np.testing.assert_allclose(near.counts, exact.counts, atol=1e-5)


@pytest.mark.statistical
@pytest.mark.parametrize(
    ("n_points", "noise"), [(64, "laplace"), (1000, "laplace"), (100, "discrete")]
)
def test_expected_squared_error_matches_theorem1(n_points: int, noise: str) -> None:
    eps, trials = 1.0, 4000
    mech = TreeMechanism(eps, n_points, noise=noise)  # type: ignore[arg-type]
    big_l = mech.height
    rng = np.random.default_rng(11)
    counts = np.zeros(n_points)
    err = np.stack([mech.release(counts, rng) for _ in range(trials)])
    # One fixed point per statistic keeps the trials independent.
    sq = err[:, n_points // 3] ** 2
    var_node = mech.node_variance
    if noise == "laplace":
        assert mech.point_variance == pytest.approx(2 * (big_l + 1) ** 3 / eps**2)
        mu4_node = 6.0 * var_node**2  # Laplace: E X^4 = 24 b^4 = 6 (2b^2)^2
    else:
        alpha = math.exp(-eps / (big_l + 1))
        # E X^4 of the discrete Laplace: 2α(1 + 10α + α²)/(1-α)^4
        mu4_node = 2 * alpha * (1 + 10 * alpha + alpha**2) / (1 - alpha) ** 4
    k = big_l + 1
    sigma2 = k * var_node
    mu4_sum = k * mu4_node + 3 * k * (k - 1) * var_node**2
    tol = 5 * math.sqrt((mu4_sum - sigma2**2) / trials)
    assert abs(sq.mean() - sigma2) < tol
    if noise == "discrete":
        assert np.all(err == np.round(err))


@pytest.mark.privacy
def test_empirical_audit_on_neighbouring_datasets() -> None:
    """Distinguish two neighbouring datasets through the released vector.

    N = 4 (L = 2), discrete noise. Moving one example from τ₁ to τ₃ (0-based)
    lowers the prefix counts at positions 1 and 2 by one. The statistic
    T = (y₁ - y₀) + (y₂ - y₃) cancels the shared upper-level noise and shifts
    by 2; the claimed ε must bound every empirical
    log P(T ≥ k | D₁)/P(T ≥ k | D₂) beyond its Clopper–Pearson interval.
    """
    eps, trials = 1.0, 400_000
    grid = np.array([0.0, 1.0, 2.0, 3.0])
    d1 = np.array([0.0, 1.0, 2.0, 3.0, 3.0])
    d2 = np.array([0.0, 3.0, 2.0, 3.0, 3.0])  # one example replaced
    mech = TreeMechanism(eps, 4, noise="discrete")
    a = path_matrix(np.arange(4), 4).toarray()
    rng = np.random.default_rng(2024)

    def statistic(values: np.ndarray) -> np.ndarray:
        c = prefix_counts(values, grid).astype(float)
        eta = mech.node_mechanism.sample((trials, mech.n_nodes), rng).astype(float)
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


def test_ledger_is_charged_once_and_refuses_overspend() -> None:
    ledger = BudgetLedger(1.0)
    private_ecdf([0.1, 0.4], [0.0, 0.5, 1.0], epsilon=0.6, rng=0, ledger=ledger)
    assert ledger.spent_epsilon == pytest.approx(0.6)
    with pytest.raises(BudgetExceededError):
        private_ecdf([0.1, 0.4], [0.0, 0.5, 1.0], epsilon=0.6, rng=0, ledger=ledger)
    assert len(ledger.entries) == 1


def test_add_remove_normalises_by_released_total() -> None:
    rel = private_ecdf(
        np.full(1000, 0.5), [0.0, 0.5, 1.0], epsilon=5.0, rng=1, neighbouring="add_remove"
    )
    assert rel.total == pytest.approx(rel.counts[-1])
    assert rel.noise_scale == pytest.approx(math.ceil(3 / 2) / 5.0)
    assert rel.guarantee is not None and "Theorem 3" in rel.guarantee.statement
