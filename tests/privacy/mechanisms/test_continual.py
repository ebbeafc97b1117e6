"""Continual counting strategies: geometry, sensitivity, unbiased estimators and closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedeval.privacy.mechanisms.continual import (
    MAX_HORIZON,
    ContinualStrategy,
    continual_strategy,
    sqrt_coefficients,
)

ALL = [("tree", "plain"), ("tree", "gls"), ("factorization", "gls"), ("per-period", "gls")]


def test_sqrt_coefficients_are_the_binomial_series_and_square_to_the_prefix_matrix() -> None:
    # (1 − x)^(−1/2) = 1 + x/2 + 3x²/8 + 5x³/16 + 35x⁴/128 + … (binomial series)
    assert np.allclose(sqrt_coefficients(5), [1, 1 / 2, 3 / 8, 5 / 16, 35 / 128])
    c = sqrt_coefficients(40)
    idx = np.arange(40)
    lag = idx[:, None] - idx[None, :]
    big_c = np.where(lag >= 0, c[np.clip(lag, 0, None)], 0.0)
    assert np.allclose(big_c @ big_c, np.tril(np.ones((40, 40))), atol=1e-12)


def test_binary_tree_has_one_row_per_dyadic_interval_closed_at_its_end() -> None:
    s = continual_strategy("tree", 8)
    assert s.n_rows == 8 + 4 + 2 + 1
    assert s.column_l1 == 4.0 and s.column_l2 == pytest.approx(2.0)
    # the rows published at period 4 are [4,4], [3,4] and [1,4]
    got = sorted(s.row_periods(i) for i in s.rows_released_at(4))
    assert got == [(1, 4), (3, 4), (4, 4)]
    # a horizon that is not a power of two keeps the complete intervals only
    s5 = continual_strategy("tree", 5)
    assert s5.n_rows == 5 + 2 + 1 and s5.column_l1 == 3.0
    assert list(s5.rows_reading(5)) == [int(i) for i in s5.rows_released_at(5)]


def test_every_period_lies_in_floor_log2_t_plus_one_tree_nodes() -> None:
    for t in (1, 2, 3, 16, 37, 64, 100):
        s = continual_strategy("tree", t)
        assert s.column_l1 == math.floor(math.log2(t)) + 1


def test_per_period_and_factorization_norms() -> None:
    s = continual_strategy("per-period", 10)
    assert (s.column_l1, s.column_l2, s.n_rows) == (1.0, 1.0, 10)
    f = continual_strategy("factorization", 64, resolution=1024)
    c = sqrt_coefficients(64)
    # fixed point: the column norms are γ times the exact ones, to rounding
    assert f.column_l1 / 1024 == pytest.approx(c.sum(), abs=64 / 1024)
    assert f.column_l2 / 1024 == pytest.approx(math.sqrt(np.sum(c**2)), rel=1e-3)
    # Σ_{k<n} c_k = 2n c_n: the L1 norm grows like √T, the L2 norm like √log T
    assert c.sum() == pytest.approx(2 * 64 * sqrt_coefficients(65)[-1])


@settings(max_examples=60, deadline=None)
@given(
    which=st.sampled_from(ALL),
    horizon=st.integers(1, 40),
    data=st.data(),
)
def test_query_weights_are_unbiased(
    which: tuple[str, str], horizon: int, data: st.DataObject
) -> None:
    name, est = which
    s = continual_strategy(name, horizon, estimator=est)  # type: ignore[arg-type]
    t_now = data.draw(st.integers(1, horizon))
    stop = data.draw(st.integers(1, t_now))
    start = data.draw(st.integers(0, stop - 1))
    u = s.query_weights(t_now, start, stop)
    expected = np.zeros(horizon)
    expected[start:stop] = 1.0
    assert np.allclose(u @ s.matrix[: u.size], expected, atol=1e-9)


@pytest.mark.parametrize("name,est", ALL)
@pytest.mark.parametrize("horizon", [1, 2, 7, 16, 37])
def test_closed_form_prefix_variances_equal_the_weights(name: str, est: str, horizon: int) -> None:
    s = continual_strategy(name, horizon, estimator=est)  # type: ignore[arg-type]
    direct = [s.variance_factor(t, 0, t) for t in range(1, horizon + 1)]
    assert np.allclose(s.prefix_variance_factors(), direct)


def test_honaker_worked_example_and_gls_never_worse_than_plain() -> None:
    # T = 2: the root (variance 1) and the sum of the two leaves (variance 2):
    # inverse-variance weights give 1 / (1 + 1/2) = 2/3.
    assert continual_strategy("tree", 2).variance_factor(2, 0, 2) == pytest.approx(2 / 3)
    # period 7 of 8: three nodes [1,4], [5,6], [7,7] plainly; GLS adds nothing across them
    plain = continual_strategy("tree", 8, estimator="plain")
    gls = continual_strategy("tree", 8)
    assert plain.variance_factor(7, 0, 7) == 3.0
    assert gls.variance_factor(7, 0, 7) == pytest.approx(4 / 7 + 2 / 3 + 1)
    for t_now in range(1, 9):
        for stop in range(1, t_now + 1):
            for start in range(stop):
                assert (
                    gls.variance_factor(t_now, start, stop)
                    <= plain.variance_factor(t_now, start, stop) + 1e-12
                )


def test_factorization_prefix_variance_is_the_partial_sum_of_squared_coefficients() -> None:
    # A C⁻¹ = C, so Var(ŝ_t)/σ² = Σ_{k<t} c_k² (in the strategy's fixed-point units, / γ²)
    f = continual_strategy("factorization", 64)
    exact = np.cumsum(sqrt_coefficients(64) ** 2)
    assert np.allclose(f.prefix_variance_factors() * 1024**2, exact, rtol=2e-3)


def test_the_factorization_beats_the_tree_on_average_under_l2_and_loses_under_l1() -> None:
    """The closed forms behind mechanism="auto" (T = 64): column norm² × mean prefix factor."""
    tree = continual_strategy("tree", 64)
    fact = continual_strategy("factorization", 64)
    per = continual_strategy("per-period", 64)

    def mean(s: ContinualStrategy, norm: float) -> float:
        return norm**2 * float(np.mean(s.prefix_variance_factors()))

    l2 = {s.name: mean(s, s.column_l2) for s in (tree, fact, per)}
    l1 = {s.name: mean(s, s.column_l1) for s in (tree, fact, per)}
    assert l2["factorization"] < 0.4 * l2["tree"]  # 4.97 against 13.3
    assert min(l2, key=l2.__getitem__) == "factorization"
    assert min(l1, key=l1.__getitem__) == "per-period"  # 32.5 against 93 (tree), 169


def test_where_the_factorization_wins_per_period_t() -> None:
    """monitoring.py's "which mechanism wins where", t by t (T = 64, prefix variances).

    L1 (pure ε): the factorization loses to the tree at every t, worst at t = T
    (7.85×, SD 2.8×). L2 (Skellam): it wins at every t but the powers of two,
    where the prefix is one tree node estimated from its whole subtree (the
    tree's best case), and never loses to the plain dyadic tree.
    """
    tree = continual_strategy("tree", 64)
    plain = continual_strategy("tree", 64, estimator="plain")
    fact = continual_strategy("factorization", 64)

    def var(s: ContinualStrategy, norm: float) -> np.ndarray:
        return norm**2 * s.prefix_variance_factors()

    l1 = var(fact, fact.column_l1) / var(tree, tree.column_l1)
    assert l1.min() > 1.0
    assert l1[-1] == pytest.approx(7.85, abs=0.01)
    l2 = var(fact, fact.column_l2) / var(tree, tree.column_l2)
    assert list(np.flatnonzero(l2 > 1.0) + 1) == [8, 16, 32, 64]
    assert math.sqrt(l2[-1]) == pytest.approx(1.27, abs=0.01)
    assert np.all(var(fact, fact.column_l2) < var(plain, plain.column_l2))


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="horizon"):
        continual_strategy("tree", 0)
    with pytest.raises(ValueError, match="at most"):
        continual_strategy("tree", MAX_HORIZON + 1)
    with pytest.raises(ValueError, match="strategy must be"):
        continual_strategy("wavelet", 8)
    with pytest.raises(ValueError, match="plain"):
        continual_strategy("factorization", 8, estimator="plain")
    with pytest.raises(ValueError, match="causal"):
        ContinualStrategy("x", np.ones((1, 3), dtype=np.int64), np.array([2]))
    s = continual_strategy("tree", 8)
    with pytest.raises(ValueError, match="start"):
        s.query_weights(4, 2, 5)
    with pytest.raises(ValueError, match="t_now"):
        s.query_weights(9, 0, 1)
