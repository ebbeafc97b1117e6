"""Blocks of shares drawn as compound-Poisson jumps: the law of i.i.d. shares, drawn cheaply.

The block sampler replaces, on blocks of clients, the cell-by-cell draws of
``sample_share`` (issue 28). Where its draws are unchanged (one share; blocks
dense enough to keep the old route) it must give the very same numbers; where
they change, every share must keep its exact law and its independence from the
others: goodness of fit of one client's share against the closed-form pmf, of
the summed block against its closed form (discrete Laplace / Skellam), and a
test of independence between two clients' shares.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import gammaln, hyp2f1

from fedeval.privacy import PolyaShares
from fedeval.privacy.mechanisms.share_jumps import SPARSE_JUMPS_PER_CELL, difference_jumps
from fedeval.privacy.mechanisms.skellam import SkellamShares
from fedeval.privacy.noise import PolyaShareNoise, SkellamShareNoise

P_MIN = 1e-4


def _polya_difference_pmf(r: float, alpha: float):  # type: ignore[no-untyped-def]
    """pmf of Pólya(r, α) − Pólya(r, α), closed form (Gauss hypergeometric function)."""

    def pmf(k: np.ndarray) -> np.ndarray:
        a = np.abs(np.asarray(k)).astype(float)
        return np.exp(
            2 * r * np.log1p(-alpha)
            + a * np.log(alpha)
            + gammaln(a + r)
            - gammaln(r)
            - gammaln(a + 1)
            + np.log(hyp2f1(r, a + r, a + 1, alpha**2))
        )

    return pmf


def _skellam_pmf(mu: float):  # type: ignore[no-untyped-def]
    return lambda k: stats.skellam.pmf(np.asarray(k), mu, mu)


def test_jump_route_is_taken_below_the_threshold_only() -> None:
    # with r = 1/3, α = e^(-1/2): 2λ = (2/3)·(−log(1 − α)) ≈ 0.62 jumps per cell
    assert 2 * PolyaShares(1.0, 3, l1_sensitivity=2).jump_rate <= SPARSE_JUMPS_PER_CELL
    assert 2 * PolyaShares(1.0, 2, l1_sensitivity=7).jump_rate > SPARSE_JUMPS_PER_CELL
    assert 2 * SkellamShares(10.0, 40).share_mu <= SPARSE_JUMPS_PER_CELL


@pytest.mark.parametrize(
    "shares",
    [
        PolyaShares(1.0, 1000, l1_sensitivity=7),
        PolyaShares(1.0, 2, l1_sensitivity=7),
        SkellamShares(10.0, 1000),
        SkellamShares(10.0, 4),
    ],
    ids=["polya-jumps", "polya-dense", "skellam-jumps", "skellam-dense"],
)
def test_one_share_is_drawn_as_before(shares: PolyaShares | SkellamShares) -> None:
    """One share (what a deployed client adds) is ``sample_share``, draw for draw."""
    got = shares.sample_shares_sum(1, 37, np.random.default_rng(4))
    np.testing.assert_array_equal(got, shares.sample_share(37, np.random.default_rng(4)))
    noise = (PolyaShareNoise if isinstance(shares, PolyaShares) else SkellamShareNoise)(shares)  # type: ignore[arg-type]
    np.testing.assert_array_equal(noise.shares_sum(1, 37, np.random.default_rng(4)), got)


@pytest.mark.parametrize(
    "shares",
    [PolyaShares(1.0, 2, l1_sensitivity=7), PolyaShares(1.0, 1), SkellamShares(10.0, 4)],
    ids=["polya-dense", "polya-one-share-exact", "skellam-dense"],
)
def test_dense_blocks_keep_the_old_draws(shares: PolyaShares | SkellamShares) -> None:
    """Above the threshold (or at shape 1, the exact discrete Laplace) a block is drawn
    cell by cell as before: the same seed gives the same sum."""
    got = shares.sample_shares_sum(9, 50, np.random.default_rng(8))
    old = shares.sample_share(9 * 50, np.random.default_rng(8)).reshape(9, 50).sum(axis=0)
    np.testing.assert_array_equal(got, old)


def test_jumps_are_placed_on_every_cell_and_summed_per_coordinate() -> None:
    jumps = PolyaShares(1.0, 3, l1_sensitivity=2).sample_share_jumps(4, 6, 0)
    dense = jumps.dense()
    assert dense.shape == (4, 6) and dense.dtype == np.int64
    assert np.all((jumps.index >= 0) & (jumps.index < 24)) and np.all(jumps.value != 0)
    np.testing.assert_array_equal(jumps.summed(), dense.sum(axis=0))
    empty = difference_jumps(0, 5, 0.3, np.random.default_rng(0), 0.5)
    assert empty.dense().shape == (0, 5)
    np.testing.assert_array_equal(empty.summed(), np.zeros(5, dtype=np.int64))
    with pytest.raises(ValueError, match="rate"):
        difference_jumps(2, 5, -1.0, np.random.default_rng(0), 0.5)


@pytest.mark.statistical
def test_every_client_s_share_has_the_polya_difference_law(gof_pvalue_int) -> None:  # type: ignore[no-untyped-def]
    """Each row (client) of a jump-drawn block against the closed-form pmf of
    Pólya(1/3, α) − Pólya(1/3, α); mean within 5σ/√N, variance within 5 standard
    errors (exact fourth cumulant of the negative binomial)."""
    shares = PolyaShares(1.0, 3, l1_sensitivity=2)
    n_cells = 100_000
    rows = shares.sample_share_jumps(4, n_cells, np.random.default_rng(31)).dense()
    pmf = _polya_difference_pmf(shares.shape, shares.alpha)
    a, r = shares.alpha, shares.shape
    var = shares.share_variance
    mu4 = 2 * r * a * (1 + 4 * a + a * a) / (1 - a) ** 4 + 3 * var**2
    for row in rows:
        assert gof_pvalue_int(row, pmf) > P_MIN / len(rows)
        assert abs(row.mean()) <= 5 * math.sqrt(var / n_cells)
        assert abs(row.var() - var) <= 5 * math.sqrt((mu4 - var**2) / n_cells)


@pytest.mark.statistical
def test_two_clients_shares_are_independent() -> None:
    """Sign of client 0's share × sign of client 1's, cell by cell: chi-square test of
    independence on the 3 × 3 table; correlation within 5/√N of 0. Clients 0 and 1
    of a block of 2, so any leak between rows of the same block would show."""
    n_cells = 200_000
    for shares in (PolyaShares(1.0, 3, l1_sensitivity=2), SkellamShares(10.0, 40)):
        rows = shares.sample_share_jumps(2, n_cells, np.random.default_rng(5)).dense()
        table = np.zeros((3, 3))
        np.add.at(table, (np.sign(rows[0]) + 1, np.sign(rows[1]) + 1), 1)
        assert stats.chi2_contingency(table, correction=False).pvalue > P_MIN
        assert abs(np.corrcoef(rows[0], rows[1])[0, 1]) <= 5 / math.sqrt(n_cells)


@pytest.mark.statistical
def test_a_block_of_all_shares_sums_to_the_discrete_laplace(dlaplace, gof_pvalue_int) -> None:  # type: ignore[no-untyped-def]
    """1000 clients' shares (r = 1/1000) drawn as jumps, summed over the block: every
    coordinate is exactly discrete Laplace (Pólya shapes add to 1)."""
    shares = PolyaShares(1.0, 1000)
    n_cells = 100_000
    total = shares.sample_shares_sum(1000, n_cells, np.random.default_rng(77))
    pmf, var, mu4 = dlaplace(shares.alpha)
    assert gof_pvalue_int(total, pmf) > P_MIN
    assert abs(total.mean()) <= 5 * math.sqrt(var / n_cells)
    assert abs(total.var() - var) <= 5 * math.sqrt((mu4 - var**2) / n_cells)


@pytest.mark.statistical
def test_skellam_jumps_have_the_poisson_difference_law(gof_pvalue_int) -> None:  # type: ignore[no-untyped-def]
    """One client's Skellam share (μ/n per side) and the sum of all n shares (μ per side)
    against scipy's Skellam pmf."""
    shares = SkellamShares(10.0, 40)
    n_cells = 100_000
    rows = shares.sample_share_jumps(3, n_cells, np.random.default_rng(6)).dense()
    for row in rows:
        assert gof_pvalue_int(row, _skellam_pmf(shares.share_mu)) > P_MIN / len(rows)
    total = shares.sample_shares_sum(40, n_cells, np.random.default_rng(7))
    assert gof_pvalue_int(total, _skellam_pmf(shares.mu)) > P_MIN
    assert abs(total.var() - 2 * shares.mu) <= 5 * math.sqrt(
        (2 * shares.mu + 2 * (2 * shares.mu) ** 2) / n_cells
    )
