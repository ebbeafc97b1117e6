"""Hosmer–Lemeshow statistic: exact (eq. 5) and ε-DP (Algorithm 2), Barczewski et al. 2025."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from fedeval.metrics.hosmer_lemeshow import hosmer_lemeshow
from fedeval.privacy.ledger import BudgetLedger


def _direct_hl(p: np.ndarray, y: np.ndarray, q: int) -> tuple[float, np.ndarray]:
    """Textbook computation: sort, cut at the inverted-CDF q/Q quantiles, loop over groups."""
    order = np.argsort(p, kind="stable")
    ps, ys = p[order], y[order]
    n = p.size
    cuts = [ps[max(int(np.ceil(n * k / q)), 1) - 1] for k in range(1, q)]
    h = 0.0
    sizes = []
    lo = -np.inf
    for k in range(q):
        hi = cuts[k] if k < q - 1 else np.inf
        in_group = (ps > lo) & (ps <= hi)
        o1, e1 = ys[in_group].sum(), ps[in_group].sum()
        o0, e0 = in_group.sum() - o1, in_group.sum() - e1
        h += (o1 - e1) ** 2 / e1 + (o0 - e0) ** 2 / e0
        sizes.append(in_group.sum())
        lo = hi
    return h, np.array(sizes)


def _logistic_data(n: int, seed: int, miscalibrated: bool = False) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    p_true = 1 / (1 + np.exp(-(1.5 * x - 1)))
    y = (rng.random(n) < p_true).astype(int)
    p_model = 1 / (1 + np.exp(-(3.0 * x - 1))) if miscalibrated else p_true
    return p_model, y


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("groups", [3, 10])
def test_exact_matches_direct_computation(seed: int, groups: int) -> None:
    p, y = _logistic_data(1000, seed)
    res = hosmer_lemeshow(p, y, groups=groups)
    h, sizes = _direct_hl(p, y, groups)
    assert res.statistic == pytest.approx(h, rel=1e-12)
    assert res.dof == groups - 2
    assert res.p_value == pytest.approx(stats.chi2.sf(h, groups - 2), rel=1e-12)
    np.testing.assert_allclose(res.observed.sum(axis=1), sizes)
    np.testing.assert_allclose(res.observed[:, 1].sum(), y.sum())
    np.testing.assert_allclose(res.expected[:, 1].sum(), p.sum())
    assert res.epsilon is None and res.guarantee is None


def test_worked_example_by_hand() -> None:
    # Q = 3 groups of two: (0.1, 0.2 | 0.4, 0.5 | 0.8, 0.9), labels 0 1 | 0 1 | 1 1.
    p = np.array([0.1, 0.2, 0.4, 0.5, 0.8, 0.9])
    y = np.array([0, 1, 0, 1, 1, 1])
    # group 1: O1=1, E1=0.3, O0=1, E0=1.7 -> 0.49/0.3 + 0.49/1.7
    # group 2: O1=1, E1=0.9, O0=1, E0=1.1 -> 0.01/0.9 + 0.01/1.1
    # group 3: O1=2, E1=1.7, O0=0, E0=0.3 -> 0.09/1.7 + 0.09/0.3
    expected_h = 0.49 / 0.3 + 0.49 / 1.7 + 0.01 / 0.9 + 0.01 / 1.1 + 0.09 / 1.7 + 0.09 / 0.3
    res = hosmer_lemeshow(p, y, groups=3)
    assert res.statistic == pytest.approx(expected_h)
    assert res.p_value == pytest.approx(stats.chi2.sf(expected_h, 1))


def test_private_release_spends_exactly_epsilon_with_the_paper_split() -> None:
    p, y = _logistic_data(20_000, 3)
    ledger = BudgetLedger(2.0)
    res = hosmer_lemeshow(p, y, epsilon=2.0, rng=0, height=8, ledger=ledger)
    eps_prime = 2.0 / (8 + 9)
    assert res.epsilon_split["quantiles"] == pytest.approx(9 * eps_prime)
    assert res.epsilon_split["group_sums"] == pytest.approx(8 * eps_prime)
    assert ledger.spent_epsilon == pytest.approx(2.0)
    assert res.observed.shape == res.expected.shape == (10, 2)
    assert np.all(np.diff(res.thresholds) >= 0)
    assert res.thresholds[0] == 0.0 and res.thresholds[-1] == 1.0
    assert res.guarantee is not None and res.guarantee.epsilon == 2.0
    assert len(res.post_processing) == 2


@pytest.mark.statistical
def test_private_statistic_is_close_at_large_epsilon_and_detects_miscalibration() -> None:
    p, y = _logistic_data(50_000, 4)
    exact = hosmer_lemeshow(p, y)
    noisy = hosmer_lemeshow(p, y, epsilon=200.0, rng=1)
    # Large ε: cut points within a grid step, sums within a few units.
    assert abs(noisy.statistic - exact.statistic) < 0.5 * exact.statistic + 5
    p_bad, y_bad = _logistic_data(50_000, 4, miscalibrated=True)
    assert hosmer_lemeshow(p_bad, y_bad, epsilon=1.0, rng=2).p_value < 1e-6


def test_bad_inputs() -> None:
    p, y = _logistic_data(100, 0)
    with pytest.raises(ValueError, match="groups"):
        hosmer_lemeshow(p, y, groups=2)
    with pytest.raises(ValueError, match="epsilon"):
        hosmer_lemeshow(p, y, epsilon=0.0)
    with pytest.raises(ValueError, match="probs"):
        hosmer_lemeshow(p + 1.0, y)
    with pytest.raises(ValueError, match="0 or 1"):
        hosmer_lemeshow(p, y * 2)
    with pytest.raises(ValueError, match="length"):
        hosmer_lemeshow(p, y[:-1])
    with pytest.raises(ValueError, match="height"):
        hosmer_lemeshow(p, y, epsilon=1.0, height=0)
