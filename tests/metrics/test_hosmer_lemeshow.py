"""Hosmer–Lemeshow statistic: exact (eq. 5) and ε-DP (Algorithm 2), Barczewski et al. 2025."""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest
from scipy import stats

from fedeval.ecdf.grid import equal_width_grid
from fedeval.metrics.hosmer_lemeshow import hosmer_lemeshow
from fedeval.privacy.ledger import BudgetExceededError, BudgetLedger
from fedeval.privacy.mechanisms.laplace import DiscreteLaplace
from fedeval.privacy.models import DistributedDP, SecureAggregation
from fedeval.sketches.group_sums import GroupSumsSketch
from fedeval.sketches.prefix_tree import PrefixTreeSketch


def _r_type7_quantile(sorted_p: np.ndarray, level: float) -> float:
    """R's default ``quantile(type = 7)``, written out: x[h] + (h - floor h)(x[h+1] - x[h]),
    h = (n - 1)·level (0-based), as in Hyndman & Fan (1996), definition 7."""
    h = (sorted_p.size - 1) * level
    lo = int(np.floor(h))
    hi = min(lo + 1, sorted_p.size - 1)
    return float(sorted_p[lo] + (h - lo) * (sorted_p[hi] - sorted_p[lo]))


def _direct_hl(p: np.ndarray, y: np.ndarray, q: int) -> tuple[float, np.ndarray]:
    """Textbook deciles of risk, as R's ``ResourceSelection::hoslem.test`` cuts them.

    ``cut(yhat, breaks = quantile(yhat, probs = seq(0, 1, 1/g)), include.lowest = TRUE)``:
    type-7 quantiles and right-closed groups (t_{q-1}, t_q], the first also holding
    its lower end. Written with loops over the sorted examples, independently of the
    library's searchsorted.
    """
    ps = np.sort(p)
    order = np.argsort(p, kind="stable")
    ys = y[order]
    cuts = [_r_type7_quantile(ps, k / q) for k in range(1, q)]
    groups = np.empty(p.size, dtype=int)
    for i, value in enumerate(ps):
        k = 0
        while k < q - 1 and value > cuts[k]:
            k += 1
        groups[i] = k
    h = 0.0
    sizes = []
    for k in range(q):
        in_group = groups == k
        o1, e1 = ys[in_group].sum(), ps[in_group].sum()
        o0, e0 = in_group.sum() - o1, in_group.sum() - e1
        if in_group.any():
            h += (o1 - e1) ** 2 / e1 + (o0 - e0) ** 2 / e0
        sizes.append(in_group.sum())
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
    assert res.epsilon == math.inf and not res.guarantee.is_private
    assert res.receipt.epsilon_spent == 0.0 and res.receipt.entries == ()


def test_worked_example_by_hand() -> None:
    # Q = 3, n = 6: the type-7 1/3 and 2/3 quantiles are 0.2 + (5/3 - 1)(0.4 - 0.2) = 1/3 and
    # 0.5 + (10/3 - 3)(0.8 - 0.5) = 0.6. Groups are right-closed, [0, 1/3] | (1/3, 0.6] |
    # (0.6, 1]: (0.1, 0.2 | 0.4, 0.5 | 0.8, 0.9), two examples each; labels 0 1 | 0 1 | 1 1.
    p = np.array([0.1, 0.2, 0.4, 0.5, 0.8, 0.9])
    y = np.array([0, 1, 0, 1, 1, 1])
    # group 1: O1=1, E1=0.3, O0=1, E0=1.7 -> 0.49/0.3 + 0.49/1.7
    # group 2: O1=1, E1=0.9, O0=1, E0=1.1 -> 0.01/0.9 + 0.01/1.1
    # group 3: O1=2, E1=1.7, O0=0, E0=0.3 -> 0.09/1.7 + 0.09/0.3
    expected_h = 0.49 / 0.3 + 0.49 / 1.7 + 0.01 / 0.9 + 0.01 / 1.1 + 0.09 / 1.7 + 0.09 / 0.3
    res = hosmer_lemeshow(p, y, groups=3)
    np.testing.assert_allclose(res.thresholds, [0.0, 1 / 3, 0.6, 1.0])
    np.testing.assert_allclose(res.observed, [[1, 1], [1, 1], [0, 2]])
    np.testing.assert_allclose(res.expected, [[1.7, 0.3], [1.1, 0.9], [0.3, 1.7]])
    assert res.statistic == pytest.approx(expected_h)
    assert res.p_value == pytest.approx(stats.chi2.sf(expected_h, 1))


def test_exact_statistic_uses_equal_count_deciles_of_risk() -> None:
    """Issue 27: 5,000 uniform probabilities fall into ten groups of exactly 500.

    The statistic equals the sum over ten consecutive blocks of 500 sorted examples
    (the textbook "deciles of risk"), written here without quantiles at all. The
    previous convention (inverted-CDF cut points, left-closed groups) put 499 in the
    first group and 501 in the last and gave 6.0848 against the textbook 6.6881 on
    this sample.
    """
    rng = np.random.default_rng(0)
    p = rng.random(5000)
    y = (rng.random(5000) < p).astype(int)
    res = hosmer_lemeshow(p, y)
    np.testing.assert_array_equal(res.observed.sum(axis=1), np.full(10, 500))
    order = np.argsort(p, kind="stable")
    textbook = 0.0
    for block in np.split(order, 10):
        n, o1, e1 = block.size, y[block].sum(), p[block].sum()
        textbook += (o1 - e1) ** 2 / e1 + ((n - o1) - (n - e1)) ** 2 / (n - e1)
    assert textbook == pytest.approx(6.688147, abs=1e-6)
    assert res.statistic == pytest.approx(textbook, rel=1e-12)


def test_private_release_spends_exactly_epsilon_with_the_paper_split() -> None:
    p, y = _logistic_data(20_000, 3)
    ledger = BudgetLedger(2.0)
    res = hosmer_lemeshow(p, y, epsilon=2.0, rng=0, height=8, ledger=ledger)
    eps_prime = 2.0 / (8 + 9)
    assert ledger.spent_epsilon == pytest.approx(2.0)
    assert res.observed.shape == res.expected.shape == (10, 2)
    assert res.receipt.epsilon_spent == pytest.approx(2.0)
    # The three parts are charged together: ECDF (L+1)ε′, observed 4ε′, expected 4ε′.
    assert [e.epsilon for e in ledger.entries] == pytest.approx(
        [9 * eps_prime, 4 * eps_prime, 4 * eps_prime]
    )


def _fourth_moment_tolerance(dist: DiscreteLaplace, draws: int, k: float = 5.0) -> float:
    """k standard errors of the sample variance of ``draws`` i.i.d. draws (closed-form pmf)."""
    support = np.arange(-4000, 4001)
    m4 = float(np.sum(support.astype(np.float64) ** 4 * dist.pmf(support)))
    return k * math.sqrt((m4 - dist.variance**2) / draws)


def test_private_release_draws_the_noise_of_the_paper_split(monkeypatch) -> None:
    """Every noise variable of Algorithm 2 is Lap(1/ε′) (Barczewski et al., Theorem 2 proof).

    The noise actually drawn is measured, not the recorded split. For the ECDF
    the noise lives on the tree's nodes: the node vector handed to
    ``noise_to_values`` is recorded. For the 4Q group sums, each release inside
    ``hosmer_lemeshow`` is recorded and its exact counterpart (the same sketch
    of the same federation under secure aggregation) subtracted. Both pooled
    variances must match the discrete Laplace at ε′ = ε/(L+9); the expected
    sums are real-valued and their Laplace has the same scale (variance within
    0.5% of the discrete one at this ε′, far inside the tolerance).
    """
    hl_module = importlib.import_module("fedeval.metrics.hosmer_lemeshow")
    nodes: list[np.ndarray] = []
    sums: list[np.ndarray] = []
    real_release = hl_module.release
    real_to_values = PrefixTreeSketch.noise_to_values

    def record_nodes(self, noise):  # type: ignore[no-untyped-def]
        nodes.append(np.asarray(noise, dtype=np.float64).copy())
        return real_to_values(self, noise)

    def spy(fed, sketch, *args, **kwargs):  # type: ignore[no-untyped-def]
        rel = real_release(fed, sketch, *args, **kwargs)
        if isinstance(sketch, GroupSumsSketch):
            exact = real_release(fed, sketch, SecureAggregation())
            sums.append(rel.values - exact.values)
        return rel

    monkeypatch.setattr(hl_module, "release", spy)
    monkeypatch.setattr(PrefixTreeSketch, "noise_to_values", record_nodes)
    p, y = _logistic_data(2_000, 3)
    eps, height = 2.0, 6
    eps_prime = eps / (height + 9)
    for seed in range(60):
        hosmer_lemeshow(p, y, epsilon=eps, rng=seed, height=height)
    tree, groups = np.concatenate(nodes), np.concatenate(sums)
    assert tree.size == 60 * (2 ** (height + 1) - 1) and groups.size == 60 * 40
    dist = DiscreteLaplace(eps_prime)
    for noise in (tree, groups):
        assert abs(noise.mean()) < 5 * math.sqrt(dist.variance / noise.size)
        tol = _fourth_moment_tolerance(dist, noise.size)
        assert abs(np.mean(noise**2) - dist.variance) < tol


def test_private_release_is_refused_atomically() -> None:
    p, y = _logistic_data(500, 5)
    ledger = BudgetLedger(1.0)
    hosmer_lemeshow(p, y, DistributedDP(0.4, neighbouring="replace"), rng=0, ledger=ledger)
    assert len(ledger.entries) == 3 and ledger.spent_epsilon == pytest.approx(0.4)
    gen = np.random.default_rng(6)
    state = gen.bit_generator.state
    # 0.6 remain: the ECDF part alone (11/19 of 1.0) would fit, all three parts do not.
    with pytest.raises(BudgetExceededError):
        hosmer_lemeshow(p, y, epsilon=1.0, rng=gen, ledger=ledger)
    assert len(ledger.entries) == 3 and ledger.spent_epsilon == pytest.approx(0.4)
    assert gen.bit_generator.state == state


def test_add_remove_does_not_treat_n_as_public() -> None:
    p, y = _logistic_data(2000, 6)
    rep = hosmer_lemeshow(p, y, DistributedDP(5.0, neighbouring="replace"), rng=0)
    rem = hosmer_lemeshow(p, y, DistributedDP(5.0, neighbouring="add_remove"), rng=0)
    assert "the number of examples" in rep.guarantee.public
    assert "the number of examples" not in rem.guarantee.public
    # The quantile ECDF is then normalised by its own released total (named step).
    assert any("released count" in step for step in rem.post_processing)
    assert not any("released count" in step for step in rep.post_processing)


def _right_closed_sums(
    p: np.ndarray, y: np.ndarray, thresholds: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """True (Q, 2) observed and expected tables for given edges, groups (t_{q-1}, t_q]."""
    q = thresholds.size - 1
    g = np.searchsorted(thresholds[1:-1], p, side="left")
    obs = np.stack([np.bincount(g, 1 - y, q), np.bincount(g, y, q)], axis=1)
    exp = np.stack([np.bincount(g, 1 - p, q), np.bincount(g, p, q)], axis=1)
    return obs, exp


def _discrete_laplace_pvalue(sample: np.ndarray, alpha: float) -> float:
    """χ² goodness of fit to the discrete Laplace pmf (1-α)/(1+α) α^|k|, tails pooled."""
    n = sample.size
    k = np.arange(-60, 61)
    pmf = (1 - alpha) / (1 + alpha) * alpha ** np.abs(k)
    keep = n * pmf >= 5
    lo, hi = k[keep][0], k[keep][-1]
    inner = (k >= lo) & (k <= hi)
    tail = (1 - pmf[inner].sum()) / 2
    exp_cells = n * np.concatenate([[tail], pmf[inner], [tail]])
    obs_cells = np.concatenate(
        [
            [np.sum(sample < lo)],
            np.bincount(sample[(sample >= lo) & (sample <= hi)] - lo, minlength=hi - lo + 1),
            [np.sum(sample > hi)],
        ]
    )
    return float(stats.chisquare(obs_cells, exp_cells).pvalue)


@pytest.mark.slow
@pytest.mark.statistical
def test_fast_and_faithful_paths_agree_in_distribution() -> None:
    """Algorithm 2's noise on both paths, against its closed form.

    ε = 13, L = 4: ε′ = ε/(L + 9) = 1. Given the released cut points, every
    observed count carries discrete Laplace noise with α = e^{-ε′} and every
    expected sum Laplace noise of scale 1/ε′ (χ² and Kolmogorov–Smirnov goodness
    of fit, α = 1e-4, all 2Q cells of all trials pooled: they are independent).
    The cut points (noisy ECDF inverted by Algorithm 1) have no simple closed
    form: the two paths' first cut points are compared with each other.
    """
    rng = np.random.default_rng(7)
    p = rng.uniform(0.2, 0.8, 150)
    y = (rng.random(150) < p).astype(int)
    eps, height, q, trials = 13.0, 4, 3, 300
    eps_prime = eps / (height + 9)
    out: dict[str, dict[str, list[np.ndarray]]] = {}
    for path in ("fast", "faithful"):
        parts: dict[str, list[np.ndarray]] = {"obs": [], "exp": [], "cut": []}
        for r in range(trials):
            res = hosmer_lemeshow(
                p,
                y,
                epsilon=eps,
                groups=q,
                height=height,
                min_expected=1e-9,
                rng=r,
                path=path,  # type: ignore[arg-type]
            )
            true_obs, true_exp = _right_closed_sums(p, y, res.thresholds)
            parts["obs"].append((res.observed - true_obs).ravel())
            # Cells whose true sum is >= 15 are floored at min_expected with probability
            # e^{-15}/2: their error is the noise. (Chosen from the cut points, which are
            # independent of the group-sum noise, so the selection keeps the law.)
            large = true_exp.ravel() >= 15
            parts["exp"].append((res.expected - true_exp).ravel()[large])
            parts["cut"].append(res.thresholds[1:2])
        flat = {key: np.concatenate(v) for key, v in parts.items()}
        obs_err = flat["obs"]
        assert np.all(obs_err == np.round(obs_err))
        assert _discrete_laplace_pvalue(obs_err.astype(np.int64), math.exp(-eps_prime)) > 1e-4, path
        assert stats.kstest(flat["exp"], stats.laplace(scale=1 / eps_prime).cdf).pvalue > 1e-4, path
        out[path] = {key: [v] for key, v in flat.items()}
    for key in ("obs", "exp", "cut"):
        a, b = out["fast"][key][0], out["faithful"][key][0]
        assert stats.ks_2samp(a, b, method="asymp").pvalue > 1e-4, key


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
    with pytest.raises(ValueError, match="min_expected"):
        hosmer_lemeshow(p, y, epsilon=1.0, min_expected=0.0)
    with pytest.raises(TypeError, match="exactly one"):
        hosmer_lemeshow(p, y, DistributedDP(1.0), epsilon=1.0)
    with pytest.raises(ValueError, match="path"):
        hosmer_lemeshow(p, y, epsilon=1.0, path="slow")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="probs"):
        hosmer_lemeshow(np.where(np.arange(100) == 2, np.nan, p), y)


def test_private_groups_are_right_closed_like_the_at_most_ecdf() -> None:
    """The private cut points are grid points t with F̂(t) = #{p ≤ t}/n ≥ q/Q, so the
    examples at t belong below the cut: groups (t_{q-1}, t_q], as the exact statistic.

    Without noise (secure aggregation) and probabilities on the 2^L-point grid,
    several examples sit exactly on every cut point; each group's observed and
    expected sums must be those of the right-closed groups."""
    rng = np.random.default_rng(3)
    p = equal_width_grid(0.0, 1.0, 16)[rng.integers(1, 15, 400)]
    y = (rng.random(400) < p).astype(int)
    res = hosmer_lemeshow(p, y, SecureAggregation(), height=4, groups=4)
    cuts = res.thresholds[1:-1]
    assert np.isin(cuts, p).all()  # every cut point holds examples
    obs, exp = _right_closed_sums(p, y, res.thresholds)
    np.testing.assert_allclose(res.observed, obs)
    np.testing.assert_allclose(res.expected, exp, atol=1e-9)
    # The exact cut points of these data give the same groups.
    exact = hosmer_lemeshow(p, y, groups=4)
    np.testing.assert_allclose(exact.observed, obs)
