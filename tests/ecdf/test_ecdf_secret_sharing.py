"""Multi-server additive secret sharing of prefix-indicator vectors (§4.2).

The shares are :func:`fedeval.privacy.sampling.additive_shares` (was
``ecdf.share_vector``) and :func:`~fedeval.privacy.sampling.reconstruct_shares`
(was ``ecdf.reconstruct``); the protocol is
:mod:`fedeval.aggregation.secret_sharing`.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from ecdf_closed_form import chi_square_pvalue, node_alpha, polya_difference_pmf
from scipy import stats

from fedeval.data import Federation
from fedeval.ecdf import empirical_cdf, multi_server_ecdf
from fedeval.privacy.ledger import BudgetExceededError, BudgetLedger
from fedeval.privacy.mechanisms.laplace import DiscreteLaplace
from fedeval.privacy.models import DistributedDP
from fedeval.privacy.sampling import additive_shares as share_vector
from fedeval.privacy.sampling import reconstruct_shares as reconstruct


def _federation(seed: int = 0) -> Federation:
    rng = np.random.default_rng(seed)
    scores = rng.random(500)
    return Federation.from_arrays(scores, rng.integers(0, 2, 500), clients=rng.integers(0, 25, 500))


@pytest.mark.parametrize("m", [2, 3, 5])
def test_shares_sum_to_the_plaintext(m: int) -> None:
    rng = np.random.default_rng(m)
    v = rng.integers(0, 10**6, 40)
    shares = share_vector(v, m, rng)
    assert shares.shape == (m, 40) and shares.dtype == np.uint64
    np.testing.assert_array_equal(reconstruct(shares), v)


def test_servers_accumulate_exact_counts() -> None:
    fed = _federation()
    grid = np.linspace(0, 1, 50)
    ms = multi_server_ecdf(fed, grid, n_servers=3, epsilon=1.0, rng=1)
    acc = np.stack([s.accumulated for s in ms.shared.servers])
    np.testing.assert_array_equal(reconstruct(acc), empirical_cdf(fed.scores, grid).counts)


@pytest.mark.statistical
def test_any_m_minus_1_shares_are_uniform_and_independent_of_the_data() -> None:
    m, trials = 3, 20_000
    rng = np.random.default_rng(7)
    v_a = np.array([0, 1, 5, 9])
    v_b = np.array([7, 7, 7, 10**9])
    draws = {
        "a": np.stack([share_vector(v_a, m, rng) for _ in range(trials)]),
        "b": np.stack([share_vector(v_b, m, rng) for _ in range(trials)]),
    }
    alpha = 1e-4
    for key, shares in draws.items():
        for subset in itertools.combinations(range(m), m - 1):
            i, j = subset
            # Joint of the top nibbles of two shares (coordinate 3): uniform on 16 x 16 cells.
            hi_i = (shares[:, i, 3] >> np.uint64(60)).astype(np.int64)
            hi_j = (shares[:, j, 3] >> np.uint64(60)).astype(np.int64)
            cells = np.bincount(16 * hi_i + hi_j, minlength=256)
            assert stats.chisquare(cells).pvalue > alpha, (key, subset)
            # Low byte of each share is uniform too.
            low = (shares[:, j, 0] & np.uint64(255)).astype(np.int64)
            assert stats.chisquare(np.bincount(low, minlength=256)).pvalue > alpha, (key, subset)
    # The last share's distribution does not depend on the plaintext.
    top_a = (draws["a"][:, m - 1, 3] >> np.uint64(56)).astype(np.int64)
    top_b = (draws["b"][:, m - 1, 3] >> np.uint64(56)).astype(np.int64)
    table = np.stack([np.bincount(top_a, minlength=256), np.bincount(top_b, minlength=256)])
    assert stats.chi2_contingency(table).pvalue > alpha


def test_servers_answer_repeated_queries_consistently_without_clients() -> None:
    fed = _federation(3)
    grid = np.linspace(0, 1, 40)
    ledger = BudgetLedger(2.0)
    ms = multi_server_ecdf(fed, grid, n_servers=2, epsilon=2.0, rng=3, ledger=ledger)
    full = ms.query()
    part = ms.query([0, 13, 39])
    np.testing.assert_array_equal(part.counts, full.counts[[0, 13, 39]])
    assert ledger.spent_epsilon == pytest.approx(2.0)
    exact = empirical_cdf(fed.scores, grid).counts
    # Noise of scale (L+1)/ε per node, L+1 = 7 nodes per point: far below 200.
    assert np.max(np.abs(full.counts - exact)) < 200
    cost = ms.cost(3)
    assert cost["clients_online_per_query"] == 0
    assert cost["upload_words_per_client"] == 2 * 40


@pytest.mark.parametrize("m", [1, 0, -2])
def test_fewer_than_two_servers_is_rejected(m: int) -> None:
    with pytest.raises(ValueError, match="n_servers must be >= 2"):
        multi_server_ecdf(_federation(), [0.0, 1.0], n_servers=m, epsilon=1.0)


@pytest.mark.parametrize("m", [1, 0, -2])
def test_additive_shares_rejects_fewer_than_two_servers(m: int) -> None:
    with pytest.raises(ValueError, match="n_servers must be >= 2"):
        share_vector([1, 2], m, np.random.default_rng(0))


def test_non_integer_server_count_is_type_error() -> None:
    with pytest.raises(TypeError, match="n_servers"):
        multi_server_ecdf(_federation(), [0.0, 1.0], n_servers=2.5, epsilon=1.0)  # type: ignore[arg-type]


def test_additive_shares_non_integer_server_count_is_type_error() -> None:
    with pytest.raises(TypeError, match="n_servers"):
        share_vector([1, 2], 2.5, np.random.default_rng(0))  # type: ignore[arg-type]


@pytest.mark.statistical
def test_server_noise_variance_matches_the_reported_variance() -> None:
    fed = _federation(4)
    grid = np.linspace(0, 1, 16)  # L = 4
    exact = empirical_cdf(fed.scores, grid).counts[9]
    reps, m = 300, 3
    errs = []
    var = 0.0
    for r in range(reps):
        rel = multi_server_ecdf(fed, grid, n_servers=m, epsilon=1.0, rng=500 + r).query([9])
        errs.append(rel.counts[0] - exact)
        var = rel.count_variance
    node = DiscreteLaplace(1.0 / 5)
    # Any m - 1 = 2 shares reach the target, so all 3 carry 3/2 of its variance.
    assert var == pytest.approx(5 * node.variance * m / (m - 1))
    # Mean squared error within 5 standard errors: Var(S²) = μ4 - σ⁴ ≤ 5σ⁴, since a
    # sum of symmetric Pólya differences has kurtosis at most the Laplace's 6.
    sq = np.square(errs)
    assert abs(sq.mean() - var) < 5 * np.sqrt(5.0 * var**2 / reps)


@pytest.mark.statistical
def test_multi_server_release_follows_the_exact_polya_law() -> None:
    """The multi-server path's law, from its closed form (it has no fast/faithful pair).

    Each of the m servers adds a Pólya(1/(m-1), α) difference share on every
    node (any m - 1 suffice), α = e^{-ε/(L+1)}; shapes add, so the error at a
    point (L + 1 nodes) is Pólya(r, α) - Pólya(r, α) with r = (L + 1)·m/(m - 1).
    χ² goodness of fit of the released errors to that pmf.
    """
    fed = _federation(5)
    grid = np.linspace(0, 1, 8)  # L = 3
    point, reps, m, eps = 3, 1500, 3, 1.0
    exact = empirical_cdf(fed.scores, grid).counts[point]
    errs = np.array(
        [
            multi_server_ecdf(fed, grid, n_servers=m, epsilon=eps, rng=9000 + r)
            .query([point])
            .counts[0]
            - exact
            for r in range(reps)
        ]
    ).astype(np.int64)
    support, pmf = polya_difference_pmf(4 * m / (m - 1), node_alpha(eps, 4))
    assert chi_square_pvalue(errs, support, pmf) > 1e-4
    # Power check: the discrete Laplace law of the single-aggregator release is rejected.
    support1, pmf1 = polya_difference_pmf(4.0, node_alpha(eps, 4))
    assert chi_square_pvalue(errs, support1, pmf1) < 1e-4


def test_ledger_charged_once_at_upload_and_refused_atomically() -> None:
    fed = _federation(6)
    grid = np.linspace(0, 1, 16)
    ledger = BudgetLedger(1.0)
    ms = multi_server_ecdf(
        fed, grid, DistributedDP(0.75, neighbouring="replace"), n_servers=2, rng=0, ledger=ledger
    )
    for pts in ([0], [3, 4], None):
        ms.query(pts)
    assert len(ledger.entries) == 1 and ledger.spent_epsilon == pytest.approx(0.75)
    assert ms.query().receipt.epsilon_spent == pytest.approx(0.75)
    gen = np.random.default_rng(8)
    state = gen.bit_generator.state
    with pytest.raises(BudgetExceededError):
        multi_server_ecdf(fed, grid, n_servers=2, epsilon=0.5, rng=gen, ledger=ledger)
    # Refused before any share or noise seed is drawn.
    assert len(ledger.entries) == 1 and ledger.spent_epsilon == pytest.approx(0.75)
    assert gen.bit_generator.state == state


def test_bad_multi_server_arguments() -> None:
    fed = _federation()
    with pytest.raises(ValueError, match="strictly increasing"):
        multi_server_ecdf(fed, [0.0, 0.5, 0.2], epsilon=1.0)
    with pytest.raises(ValueError, match="epsilon"):
        multi_server_ecdf(fed, [0.0, 1.0], epsilon=-1.0)
    with pytest.raises(TypeError, match="exactly one"):
        multi_server_ecdf(fed, [0.0, 1.0])
    ms = multi_server_ecdf(fed, [0.0, 0.5, 1.0], epsilon=1.0, rng=0)
    with pytest.raises(ValueError, match="positions"):
        ms.query([3])
    with pytest.raises(TypeError, match="integer"):
        ms.query([0.5])


def test_add_remove_queries_are_normalised_by_the_last_grid_point() -> None:
    # Without a public n, every query is normalised by the released count at τ_N, also
    # when τ_N is not among the points asked for (the servers answer it too).
    fed = _federation(7)
    grid = np.linspace(0, 1, 16)
    ms = multi_server_ecdf(fed, grid, DistributedDP(1.0, neighbouring="add_remove"), rng=2)
    full = ms.query()
    part = ms.query([0, 5])
    assert part.total == full.total == max(full.counts[-1], 1.0)
    np.testing.assert_array_equal(part.counts, full.counts[[0, 5]])
    np.testing.assert_array_equal(part.values, full.values[[0, 5]])
    np.testing.assert_array_equal(part.grid, grid[[0, 5]])
