"""Hosmer–Lemeshow statistic: exact (eq. 5) and ε-DP (Algorithm 2), Barczewski et al. 2025."""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest
from scipy import stats

from fedeval.metrics.hosmer_lemeshow import hosmer_lemeshow
from fedeval.privacy.ledger import BudgetExceededError, BudgetLedger
from fedeval.privacy.mechanisms.laplace import DiscreteLaplace
from fedeval.privacy.models import DistributedDP, SecureAggregation
from fedeval.sketches.group_sums import GroupSumsSketch
from fedeval.sketches.prefix_tree import PrefixTreeSketch


def _direct_hl(p: np.ndarray, y: np.ndarray, q: int) -> tuple[float, np.ndarray]:
    """Textbook computation: sort, cut at the inverted-CDF q/Q quantiles, loop over groups.

    Groups are left-closed, [t_{q-1}, t_q) (the last one also holds 1): the
    library's one bin convention (changed on purpose from right-closed groups).
    """
    order = np.argsort(p, kind="stable")
    ps, ys = p[order], y[order]
    n = p.size
    cuts = [ps[max(int(np.ceil(n * k / q)), 1) - 1] for k in range(1, q)]
    h = 0.0
    sizes = []
    lo = -np.inf
    for k in range(q):
        hi = cuts[k] if k < q - 1 else np.inf
        in_group = (ps >= lo) & (ps < hi)
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
    assert res.epsilon == math.inf and not res.guarantee.is_private
    assert res.receipt.epsilon_spent == 0.0 and res.receipt.entries == ()


def test_worked_example_by_hand() -> None:
    # Q = 3: the inverted-CDF 1/3 and 2/3 quantiles are t1 = 0.2 and t2 = 0.5. Groups are
    # left-closed, [0, 0.2) | [0.2, 0.5) | [0.5, 1]: (0.1 | 0.2, 0.4 | 0.5, 0.8, 0.9),
    # labels 0 | 1 0 | 1 1 1.
    p = np.array([0.1, 0.2, 0.4, 0.5, 0.8, 0.9])
    y = np.array([0, 1, 0, 1, 1, 1])
    # group 1: O1=0, E1=0.1, O0=1, E0=0.9 -> 0.01/0.1 + 0.01/0.9
    # group 2: O1=1, E1=0.6, O0=1, E0=1.4 -> 0.16/0.6 + 0.16/1.4
    # group 3: O1=3, E1=2.2, O0=0, E0=0.8 -> 0.64/2.2 + 0.64/0.8
    expected_h = 0.01 / 0.1 + 0.01 / 0.9 + 0.16 / 0.6 + 0.16 / 1.4 + 0.64 / 2.2 + 0.64 / 0.8
    res = hosmer_lemeshow(p, y, groups=3)
    np.testing.assert_allclose(res.thresholds, [0.0, 0.2, 0.5, 1.0])
    np.testing.assert_allclose(res.observed, [[1, 0], [1, 1], [0, 3]])
    np.testing.assert_allclose(res.expected, [[0.9, 0.1], [1.4, 0.6], [0.8, 2.2]])
    assert res.statistic == pytest.approx(expected_h)
    assert res.p_value == pytest.approx(stats.chi2.sf(expected_h, 1))


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


def _left_closed_sums(
    p: np.ndarray, y: np.ndarray, thresholds: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """True (Q, 2) observed and expected tables for given edges, groups [t_{q-1}, t_q)."""
    q = thresholds.size - 1
    g = np.searchsorted(thresholds[1:-1], p, side="right")
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
            true_obs, true_exp = _left_closed_sums(p, y, res.thresholds)
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
