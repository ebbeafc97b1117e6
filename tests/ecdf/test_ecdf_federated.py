"""Pointwise federated evaluation (§4.1) of Barczewski et al. (2025)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fedeval.data import Federation
from fedeval.ecdf import empirical_cdf, federated_ecdf
from fedeval.privacy.ledger import BudgetLedger
from fedeval.privacy.mechanisms.laplace import DiscreteLaplace


def _federation(n: int = 600, n_clients: int = 12, seed: int = 0) -> Federation:
    rng = np.random.default_rng(seed)
    scores = rng.random(n)
    labels = rng.integers(0, 2, n)
    return Federation.from_arrays(scores, labels, clients=rng.integers(0, n_clients, n))


@pytest.mark.parametrize("path", ["fast", "faithful"])
def test_queries_share_one_tree_noise(path: str) -> None:
    fed = _federation()
    grid = np.linspace(0, 1, 33)
    ledger = BudgetLedger(1.0)
    session = federated_ecdf(fed, grid, epsilon=1.0, rng=5, path=path, ledger=ledger)  # type: ignore[arg-type]
    everything = session.query()
    some = session.query([2, 7, 30])
    np.testing.assert_array_equal(some.counts, everything.counts[[2, 7, 30]])
    np.testing.assert_array_equal(some.grid, grid[[2, 7, 30]])
    assert ledger.spent_epsilon == pytest.approx(1.0)  # charged once, not per query
    assert session.cost(3)["integers_total"] == fed.n_clients * 3


@pytest.mark.statistical
def test_fast_and_faithful_paths_agree_with_theorem1_variance() -> None:
    fed = _federation(n=200, n_clients=8, seed=1)
    grid = np.linspace(0, 1, 16)  # L = 4
    exact = empirical_cdf(fed.scores, grid).counts
    eps, reps = 1.0, 400
    node = DiscreteLaplace(eps / 5)
    var_point = 5 * node.variance
    # 4th moment of a sum of 5 discrete Laplace variables, for the z-bound.
    a = node.alpha
    mu4 = 2 * a * (1 + 10 * a + a**2) / (1 - a) ** 4
    mu4_sum = 5 * mu4 + 3 * 5 * 4 * node.variance**2
    tol = 5 * math.sqrt((mu4_sum - var_point**2) / reps)
    for path in ("fast", "faithful"):
        errs = []
        for r in range(reps):
            rel = federated_ecdf(fed, grid, epsilon=eps, rng=1000 + r, path=path).query([6])
            errs.append(rel.counts[0] - exact[6])
            assert rel.count_variance == pytest.approx(var_point)
        sq = np.square(errs)
        assert abs(sq.mean() - var_point) < tol, path
        assert np.all(np.asarray(errs) == np.round(errs))


def test_bad_arguments() -> None:
    fed = _federation()
    with pytest.raises(ValueError, match="strictly increasing"):
        federated_ecdf(fed, [0.0, 0.5, 0.2], epsilon=1.0)
    with pytest.raises(ValueError, match="epsilon"):
        federated_ecdf(fed, [0.0, 1.0], epsilon=0.0)
    with pytest.raises(ValueError, match="path"):
        federated_ecdf(fed, [0.0, 1.0], epsilon=1.0, path="slow")  # type: ignore[arg-type]
    session = federated_ecdf(fed, [0.0, 0.5, 1.0], epsilon=1.0, rng=0)
    with pytest.raises(ValueError, match="positions"):
        session.query([3])
