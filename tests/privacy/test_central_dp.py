"""CentralDP (trusted curator, discrete Laplace): the model added through the one dispatch.

The model exists to show what adding a privacy model costs in the release
pipeline: its class in ``privacy/models.py``, one branch in
``privacy/mechanism_for.py`` and the export in ``fedeval/__init__.py``. These
tests use it through the public entry points (``fe.evaluate``,
``fe.ecdf.private_ecdf``, ``fe.plan``). Its end-to-end privacy audits (a leaf
count of ``fe.evaluate`` on add/remove neighbours, tight at ε, and the same audit
with half the noise, which must exceed ε) are the ``central`` cases of
``tests/privacy/audits/test_audit_evaluate.py``, in the shared audit harness.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import fedeval as fe
from fedeval.aggregation import release
from fedeval.privacy.mechanisms.laplace import DiscreteLaplace
from fedeval.privacy.models import model_from_dict, model_to_dict
from fedeval.sketches.group_sums import GroupSumsSketch
from helpers import release_hierarchy


def _binary(n: int, seed: int) -> fe.Federation:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(int)
    s = np.clip(rng.normal(0.4 + 0.2 * y, 0.15), 0.0, 1.0)
    return fe.Federation.from_arrays(s, y)


def test_evaluate_releases_the_hierarchy_with_the_curators_noise() -> None:
    fed = _binary(5_000, 0)
    height, eps = 6, 1.5
    exact = fe.evaluate(fed, fe.SecureAggregation(), height=height)
    ledger = fe.BudgetLedger(eps)
    ev = fe.evaluate(fed, fe.CentralDP(eps), height=height, rng=1, ledger=ledger)
    # One entry per level (ε/h each, sequential composition), exactly ε in total.
    assert ledger.spent_epsilon == pytest.approx(eps)
    assert [e.epsilon for e in ledger.entries] == pytest.approx([eps / height] * height)
    g = ev.guarantee
    assert (g.epsilon, g.delta, g.unit, g.neighbouring) == (eps, 0.0, "example", "add_remove")
    assert "trusted curator" in g.statement and "the number of examples" not in g.public
    # The noise actually drawn by the release behind evaluate (raw, before the
    # consistency step): released minus exact level counts over 20 releases,
    # against discrete Laplace of scale h/ε (L1 = 1 per level).
    raw_exact = release_hierarchy(fed, fe.SecureAggregation(), height=height).levels
    noise = np.concatenate(
        [
            (a - b).ravel()
            for seed in range(20)
            for a, b in zip(
                release_hierarchy(fed, fe.CentralDP(eps), height=height, rng=seed).levels,
                raw_exact,
                strict=True,
            )
        ]
    )
    dist = DiscreteLaplace(eps / height)
    support = np.arange(-3000, 3001)
    m4 = float(np.sum(support.astype(float) ** 4 * dist.pmf(support)))
    tol = 5 * math.sqrt((m4 - dist.variance**2) / noise.size)
    assert abs(np.mean(noise**2) - dist.variance) < tol
    assert abs(noise.mean()) < 5 * math.sqrt(dist.variance / noise.size)
    np.testing.assert_allclose(ev.tree.node_variance[0], dist.variance)
    # It is an evaluation like any other: the AUC is close to the exact one.
    assert abs(ev.roc_auc - exact.roc_auc) < 5 * ev.roc_auc_se + 1 / ev.parameters["n_buckets"]


def test_fast_and_faithful_paths_draw_the_same_noise_distribution() -> None:
    """The fast path draws the curator's noise on the sum; the faithful path sums
    every client's exact vector and then adds it: the same distribution."""
    fed = _binary(300, 2)
    exact = release_hierarchy(fed, fe.SecureAggregation(), height=3).levels[-1]
    draws: dict[str, list[np.ndarray]] = {"fast": [], "faithful": []}
    for path, noise in draws.items():
        for seed in range(150):
            tree = release_hierarchy(fed, fe.CentralDP(1.0), height=3, path=path, rng=seed)
            noise.append((tree.levels[-1] - exact).ravel())
    fast, faithful = (np.concatenate(draws[p]) for p in ("fast", "faithful"))
    # Two-sample test of the two noise distributions (discrete: KS is conservative).
    assert stats.ks_2samp(fast, faithful).pvalue > 1e-3
    dist = DiscreteLaplace(1.0 / 3)
    support = np.arange(-3000, 3001)
    m4 = float(np.sum(support.astype(float) ** 4 * dist.pmf(support)))
    for noise in (fast, faithful):
        assert abs(np.mean(noise**2) - dist.variance) < 5 * math.sqrt(
            (m4 - dist.variance**2) / noise.size
        )


@pytest.mark.parametrize("neighbouring", ["replace", "add_remove"])
def test_private_ecdf_under_central_dp(neighbouring: str) -> None:
    rng = np.random.default_rng(3)
    values = rng.random(20_000)
    grid = fe.ecdf.equal_width_grid(0.0, 1.0, 256)
    model = fe.CentralDP(1.0, neighbouring=neighbouring)
    ecdf = fe.ecdf.private_ecdf(values, grid, model, rng=0)
    g = ecdf.receipt.guarantee
    assert g.epsilon == 1.0 and g.neighbouring == neighbouring
    # The count is public only under replacement (Theorem 1 vs Theorem 3).
    assert ("the number of examples" in g.public) == (neighbouring == "replace")
    theorem = "Theorem 1" if neighbouring == "replace" else "Theorem 3"
    assert theorem in g.statement
    pts = np.array([0.25, 0.5, 0.75])
    # Error of each count ≈ sqrt((L+1)·Var) with L = 8 and scale (nodes touched)/ε.
    nodes = 9 if neighbouring == "replace" else 5
    sd = math.sqrt(9 * DiscreteLaplace(1.0 / nodes).variance) / values.size
    np.testing.assert_allclose(ecdf(pts), np.mean(values[:, None] <= pts, axis=0), atol=6 * sd)


def test_plan_and_model_round_trip() -> None:
    model = fe.CentralDP(0.5, neighbouring="replace")
    assert model_from_dict(model_to_dict(model)) == model
    assert fe.plan(model, n_clients=10_000).regime == "central"
    assert model.scaled(0.5) == fe.CentralDP(0.25, neighbouring="replace")
    with pytest.raises(ValueError):
        fe.CentralDP(0.0)
    with pytest.raises(ValueError):
        fe.CentralDP(1.0, neighbouring="swap")  # type: ignore[arg-type]


def test_real_valued_release_is_refused_before_any_charge() -> None:
    # A sketch sending floats (here the Hosmer-Lemeshow expected sums without their
    # fixed point) cannot get discrete Laplace noise; nothing is charged.
    rng = np.random.default_rng(4)
    p = rng.random(500)
    fed = fe.Federation.from_arrays(p, (rng.random(500) < p).astype(int))
    floats = GroupSumsSketch(np.linspace(0, 1, 11), "expected", fixed_point=False)
    ledger = fe.BudgetLedger(1.0)
    with pytest.raises(TypeError, match="real-valued"):
        release(fed, floats, fe.CentralDP(1.0), ledger=ledger)
    assert ledger.entries == []
    # In fixed point (the default) the release goes through, with discrete noise.
    res = fe.metrics.hosmer_lemeshow(p, fed.labels, fe.CentralDP(1.0), rng=0)
    assert res.receipt.epsilon_spent == pytest.approx(1.0)
