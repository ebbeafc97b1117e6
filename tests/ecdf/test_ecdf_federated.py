"""Federated evaluation (§4.1) of Barczewski et al. (2025): one release, queried from a snapshot."""

from __future__ import annotations

import math

import numpy as np
import pytest
from ecdf_closed_form import path_sum_pvalue
from scipy import stats

from fedeval.data import Federation
from fedeval.ecdf import empirical_cdf, federated_ecdf
from fedeval.privacy.ledger import BudgetExceededError, BudgetLedger
from fedeval.privacy.mechanisms.laplace import DiscreteLaplace
from fedeval.privacy.models import DistributedDP


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
    # All N = 33 grid points are released once at creation (one upload of N integers per
    # client); queries read that snapshot and contact no client.
    cost = session.cost(3)
    assert cost["integers_total"] == fed.n_clients * grid.size
    assert cost["clients_online_per_query"] == 0
    again = session.query([2, 7, 30])
    np.testing.assert_array_equal(again.counts, some.counts)
    assert len(ledger.entries) == 1


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
    samples = {}
    for path in ("fast", "faithful"):
        errs = []
        for r in range(reps):
            rel = federated_ecdf(fed, grid, epsilon=eps, rng=1000 + r, path=path).query([6])
            errs.append(rel.counts[0] - exact[6])
            assert rel.count_variance == pytest.approx(var_point)
        sq = np.square(errs)
        assert abs(sq.mean() - var_point) < tol, path
        assert np.all(np.asarray(errs) == np.round(errs))
        # The whole law, not only the variance: χ² against the exact pmf of 5 nodes.
        assert path_sum_pvalue(np.asarray(errs, dtype=np.int64), a, 5) > 1e-4, path
        samples[path] = np.asarray(errs)
    assert stats.ks_2samp(samples["fast"], samples["faithful"]).pvalue > 1e-4


def test_ledger_charged_once_and_refused_atomically() -> None:
    fed = _federation()
    grid = np.linspace(0, 1, 9)
    ledger = BudgetLedger(1.0)
    session = federated_ecdf(
        fed, grid, DistributedDP(0.7, neighbouring="replace"), rng=0, ledger=ledger
    )
    for pts in ([0], [1, 2], None):
        session.query(pts)
    assert len(ledger.entries) == 1 and ledger.spent_epsilon == pytest.approx(0.7)
    assert session.snapshot.receipt.epsilon_spent == pytest.approx(0.7)
    gen = np.random.default_rng(3)
    state = gen.bit_generator.state
    with pytest.raises(BudgetExceededError):
        federated_ecdf(fed, grid, epsilon=0.5, rng=gen, ledger=ledger)
    # Nothing charged and no noise drawn by the refused release.
    assert len(ledger.entries) == 1 and ledger.spent_epsilon == pytest.approx(0.7)
    assert gen.bit_generator.state == state


def test_bad_arguments() -> None:
    fed = _federation()
    with pytest.raises(ValueError, match="strictly increasing"):
        federated_ecdf(fed, [0.0, 0.5, 0.2], epsilon=1.0)
    with pytest.raises(ValueError, match="epsilon"):
        federated_ecdf(fed, [0.0, 1.0], epsilon=0.0)
    with pytest.raises(ValueError, match="path"):
        federated_ecdf(fed, [0.0, 1.0], epsilon=1.0, path="slow")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="exactly one"):
        federated_ecdf(fed, [0.0, 1.0])
    with pytest.raises(TypeError, match="exactly one"):
        federated_ecdf(fed, [0.0, 1.0], DistributedDP(1.0), epsilon=1.0)
    session = federated_ecdf(fed, [0.0, 0.5, 1.0], epsilon=1.0, rng=0)
    with pytest.raises(ValueError, match="positions"):
        session.query([3])
    with pytest.raises(ValueError, match="positions"):
        session.query([-1])
    with pytest.raises(TypeError, match="integer"):
        session.query([0.5])


def test_client_level_release_is_normalised_by_its_released_total() -> None:
    # Clients are subsampled to the contribution bound, so n (of the examples that enter
    # the sum) is not public: the snapshot is normalised by its count at τ_N.
    fed = _federation(n=300, n_clients=10, seed=2)
    grid = np.linspace(0, 1, 16)
    model = DistributedDP(1.0, unit="client", contribution_bound=3, neighbouring="replace")
    snap = federated_ecdf(fed, grid, model, rng=0).snapshot
    assert snap.total == max(snap.counts[-1], 1.0)
    assert snap.total < fed.n_examples / 2  # about 10 clients x 3 examples, not 300
    assert any("released count" in step for step in snap.post_processing)
    # Example-level replacement keeps every example: n is public and normalises.
    ex = federated_ecdf(fed, grid, DistributedDP(1.0, neighbouring="replace"), rng=0).snapshot
    assert ex.total == fed.n_examples and ex.post_processing == ()
