"""Issue 26: continual evaluation (fe.monitor / ctx.monitor) — bookkeeping, budget, API, bad input."""

from __future__ import annotations

import importlib
import math
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

import fedeval as fe
from fedeval.monitoring import SCOPE_ONE_MONITOR, choose_mechanism
from fedeval.sketches.hierarchy import HierarchySketch, HierarchySpec

T = 6
HEIGHT = 5


def _period(t: int, n: int = 400, *, clients: bool = False) -> fe.Federation:
    rng = np.random.default_rng(100 + t)
    y = rng.integers(0, 2, n)
    s = np.clip(rng.normal(0.4 + 0.2 * y, 0.15), 0, 1)
    cl = rng.integers(0, 40, n) if clients else None
    return fe.Federation.from_arrays(s, y, cl)


def _exact_leaves(feds: list[fe.Federation]) -> np.ndarray:
    sk = HierarchySketch(HierarchySpec(HEIGHT, 2, (0.0, 1.0), 2))
    total = sum(sk.encode(f.scores, f.labels, f.client_index) for f in feds)
    return np.asarray(sk.spec.unflatten(np.asarray(total))[-1], dtype=np.float64)


@pytest.mark.parametrize("mechanism", ["tree", "factorization", "per-period"])
def test_exact_sums_decode_to_every_window_of_the_data(mechanism: str) -> None:
    """Secure aggregation: every window's estimate is the exact count of its periods."""
    mon = fe.monitor(
        fe.SecureAggregation(),
        horizon=T,
        examples_per_period=400,
        height=HEIGHT,
        mechanism=mechanism,
    )
    feds = [_period(t) for t in range(T)]
    for t, f in enumerate(feds, 1):
        mon.update(f)
        for stop in range(1, t + 1):
            for start in range(stop):
                ev = mon.evaluation(stop, window=stop - start)
                assert np.allclose(ev.tree.leaves, _exact_leaves(feds[start:stop]), atol=1e-6)
    assert mon.epsilon_spent == 0.0
    pooled = fe.evaluate(
        fe.Federation.from_arrays(
            np.concatenate([f.scores for f in feds]), np.concatenate([f.labels for f in feds])
        ),
        fe.SecureAggregation(),
        height=HEIGHT,
    )
    assert mon.evaluation().roc_auc == pytest.approx(pooled.roc_auc, abs=1e-12)


def test_the_rows_of_every_period_are_the_strategy_applied_to_the_periods_plus_noise() -> None:
    mon = fe.monitor(
        fe.DistributedDP(epsilon=1.0), horizon=8, examples_per_period=400, height=3, rng=4,
        mechanism="tree",
    )  # fmt: skip
    feds = [_period(t) for t in range(8)]
    sk = mon.sketch
    x = np.array([sk.encode(f.scores, f.labels, f.client_index) for f in feds])
    for f in feds:
        mon.update(f)
    true = mon.strategy.matrix @ x
    noise = mon.transcript - true
    # Pólya shares summing to discrete Laplace of scale L1/ε, L1 = h · (log2 T + 1) = 3 · 4
    alpha = math.exp(-1.0 / 12)
    var = 2 * alpha / (1 - alpha) ** 2
    assert noise.shape == (15, sk.length)
    assert abs(noise.mean()) < 5 * math.sqrt(var / noise.size)
    assert noise.var() == pytest.approx(var, rel=0.25)
    assert [p for *_, p in mon.row_periods()] == sorted(p for *_, p in mon.row_periods())


def test_the_horizon_is_charged_once_before_the_first_period() -> None:
    fed = _period(0)
    ctx = fe.Context(fed, budget=fe.Budget(epsilon=2.0), rng=1)
    mon = ctx.monitor(fe.DistributedDP(epsilon=1.5), horizon=T, examples_per_period=400)
    assert mon.periods_released == 0
    assert ctx.spent.epsilon == pytest.approx(1.5)
    entries = len(ctx.ledger.entries)
    for t in range(T):
        mon.update(_period(t))
    assert len(ctx.ledger.entries) == entries and ctx.spent.epsilon == pytest.approx(1.5)
    step = ctx.receipt().steps[-1]
    assert step.what == f"monitor ({T} periods)" and step.epsilon == pytest.approx(1.5)
    assert "fedeval.Context program" in mon.receipt().scope
    assert mon.epsilon_spent == pytest.approx(1.5)
    assert f"continual release over {T} periods" in mon.guarantee.statement


def test_a_monitor_that_does_not_fit_is_refused_before_any_noise(monkeypatch) -> None:
    ctx = fe.Context(_period(0), budget=fe.Budget(epsilon=1.0), rng=2)
    ctx.monitor(fe.DistributedDP(epsilon=0.75), horizon=T, examples_per_period=400)
    before = (list(ctx.ledger.entries), len(ctx.receipt().steps))
    module = importlib.import_module("fedeval.aggregation.continual")
    drawn: list[int] = []
    real = module.draw_from
    monkeypatch.setattr(module, "draw_from", lambda *a, **k: drawn.append(1) or real(*a, **k))
    with pytest.raises(fe.BudgetExceededError):
        ctx.monitor(fe.DistributedDP(epsilon=0.5), horizon=T, examples_per_period=400)
    assert drawn == []
    assert (list(ctx.ledger.entries), len(ctx.receipt().steps)) == before


def test_one_call_monitor_says_its_guarantee_covers_that_monitor_alone() -> None:
    mon = fe.monitor(fe.DistributedDP(epsilon=1.0), horizon=T, examples_per_period=400, rng=0)
    assert mon.receipt().scope == SCOPE_ONE_MONITOR
    assert mon.epsilon_spent == pytest.approx(1.0)
    assert mon.receipt().randomness.startswith("seeded")


def test_sensitivity_over_the_horizon_event_and_client_level() -> None:
    mon = fe.monitor(
        fe.DistributedDP(epsilon=1.0), horizon=16, examples_per_period=400, height=4,
        mechanism="tree",
    )  # fmt: skip
    sens = mon.receipt().sensitivity
    assert sens["l1"] == 4 * 5  # h levels × (log2 16 + 1) tree nodes
    client = fe.monitor(
        fe.DistributedDP(epsilon=1.0, unit="client", contribution_bound=3),
        horizon=16, examples_per_period=400, height=4, mechanism="tree",
    )  # fmt: skip
    s = client.receipt().sensitivity
    assert s["l1"] == 3 * 4 * 5 and s["unit"] == "client"
    assert "over the whole horizon" in s["derivation"]


def test_client_level_bound_holds_over_the_whole_horizon() -> None:
    """A client with 10 examples in each of 3 periods, bound 12: 12 kept in all (ε huge, no noise)."""
    model = fe.DistributedDP(epsilon=1e5, unit="client", contribution_bound=12)
    mon = fe.monitor(model, horizon=3, examples_per_period=100, height=2, mechanism="per-period")
    rng = np.random.default_rng(9)
    kept = []
    for _ in range(3):
        s = rng.random(20)
        y = np.ones(20, dtype=int)
        clients = np.r_[np.zeros(10, dtype=int), np.arange(1, 11)]  # client 0: 10; ten of 1
        mon.update(fe.Federation.from_arrays(s, y, clients))
        kept.append(mon.transcript[-1][:4].sum())  # level 1 (2 classes × 2 nodes): all examples
    # client 0 keeps 10 + 2 + 0, the others all of theirs
    assert [round(k) for k in kept] == [20, 12, 10]


def test_an_empty_period_is_still_released() -> None:
    mon = fe.monitor(fe.SecureAggregation(), horizon=3, examples_per_period=400, height=3)
    mon.update(_period(0))
    out = mon.update(None)
    assert out.period == 2 and mon.periods_released == 2
    assert np.allclose(mon.evaluation(window=1).tree.leaves, 0.0)


def test_auto_picks_per_period_under_pure_dp_and_the_factorization_under_skellam() -> None:
    sk = HierarchySketch(HierarchySpec(10, 2, (0.0, 1.0), 2))
    name, means = choose_mechanism(fe.DistributedDP(epsilon=1.0), sk, 64)
    assert name == "per-period" and means["per-period"] < means["tree"] < means["factorization"]
    skellam = fe.DistributedDP(epsilon=1.0, noise="skellam", delta=1e-6)
    name, means = choose_mechanism(skellam, sk, 64)
    assert name == "factorization" and means["factorization"] < 0.6 * means["tree"]


def test_trend_and_drift_read_every_period() -> None:
    mon = fe.monitor(fe.DistributedDP(epsilon=2.0), horizon=T, examples_per_period=400, rng=5)
    feds = [_period(t) for t in range(T)]
    for f in feds:
        mon.update(f)
    tr = mon.trend("roc_auc")
    assert list(tr.periods) == list(range(1, T + 1))
    assert np.all(tr.lower <= tr.estimate) and np.all(tr.estimate <= tr.upper)
    assert np.all(tr.se > 0) and np.all(np.isfinite(tr.sampling_se))
    exact = roc_auc_score(
        np.concatenate([f.labels for f in feds]), np.concatenate([f.scores for f in feds])
    )
    assert abs(tr.estimate[-1] - exact) < 5 * tr.se[-1] + 0.01
    win = mon.trend("average_precision", window=2)
    assert win.window == 2 and np.all(np.isnan(win.sampling_se))
    d = mon.drift(window=2)
    assert d.window == (T - 1, T) and d.reference == (1, T - 2)
    assert d.looks == T - 2 and d.se >= max(d.privacy_se, d.sampling_se)
    assert d.ci[0] < d.difference < d.ci[1]
    assert d.as_dict()["alarm"] == d.alarm
    assert mon.drift(window=2, reference=2).reference == (1, 2)
    assert mon.drift(window=2, reference=(2, 3)).reference == (2, 3)


def test_scan_and_federation_release_the_same_rows(tmp_path: Path) -> None:
    import pandas as pd

    f = _period(1)
    path = tmp_path / "p.parquet"
    pd.DataFrame({"score": f.scores, "label": f.labels}).to_parquet(path)
    a = fe.monitor(fe.SecureAggregation(), horizon=2, examples_per_period=400, height=4)
    b = fe.monitor(fe.SecureAggregation(), horizon=2, examples_per_period=400, height=4)
    a.update(f)
    b.update(fe.scan(path, progress=False))
    assert np.array_equal(a.transcript, b.transcript)


def test_bad_input_is_refused_with_a_clear_error_and_changes_nothing() -> None:
    dp = fe.DistributedDP(epsilon=1.0)
    with pytest.raises(ValueError, match="examples_per_period"):
        fe.monitor(dp, horizon=4)
    with pytest.raises(ValueError, match="horizon"):
        fe.monitor(dp, horizon=0, examples_per_period=10)
    with pytest.raises(ValueError, match="at most 1024"):
        fe.monitor(dp, horizon=2000, examples_per_period=10)
    with pytest.raises(ValueError, match="mechanism"):
        fe.monitor(dp, horizon=4, examples_per_period=10, mechanism="wavelet")
    with pytest.raises(ValueError, match="plain"):
        fe.monitor(dp, horizon=4, examples_per_period=10, estimator="plain")
    with pytest.raises(TypeError, match="continual"):
        fe.monitor(fe.LocalDP(epsilon=1.0), horizon=4, examples_per_period=10)
    mon = fe.monitor(dp, horizon=2, examples_per_period=10, height=3, rng=1)
    with pytest.raises(ValueError, match="no period"):
        mon.evaluation()
    with pytest.raises(TypeError, match="Federation"):
        mon.update(np.zeros(3))  # type: ignore[arg-type]
    other = fe.Federation.from_arrays([0.5, 2.0], [0, 1], score_range=(0.0, 5.0))
    with pytest.raises(ValueError, match="score domain"):
        mon.update(other)
    multi = fe.Federation.from_arrays(np.array([[0.2, 0.8], [0.6, 0.4]]), [1, 0])
    with pytest.raises(ValueError, match="binary"):
        mon.update(multi)
    assert mon.periods_released == 0 and mon.transcript.shape[0] == 0
    mon.update(_period(0))
    with pytest.raises(ValueError, match="window"):
        mon.evaluation(window=2)
    with pytest.raises(ValueError, match="t must lie"):
        mon.evaluation(2)
    with pytest.raises(ValueError, match="drift test needs"):
        mon.drift(window=1)
    mon.update(_period(1))
    with pytest.raises(ValueError, match="all 2 periods"):
        mon.update(_period(2))
    with pytest.raises(ValueError, match="before the window"):
        mon.drift(window=1, reference=(1, 2))
    with pytest.raises(ValueError, match="roc_auc"):
        mon.drift("average_precision", window=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="alpha"):
        mon.drift(window=1, alpha=1.5)
    ctx = fe.Context(_period(0), budget=fe.Budget(epsilon=1.0))
    with pytest.raises(TypeError, match="rng"):
        ctx.monitor(dp, horizon=2, examples_per_period=10, rng=3)
    assert ctx.spent.epsilon == 0.0


def test_central_dp_and_skellam_monitors_release_and_state_their_noise() -> None:
    central = fe.monitor(fe.CentralDP(epsilon=1.0), horizon=4, examples_per_period=400, rng=3)
    skellam = fe.monitor(
        fe.DistributedDP(epsilon=1.0, noise="skellam", delta=1e-6),
        horizon=4,
        examples_per_period=400,
        rng=3,
    )
    for mon in (central, skellam):
        for t in range(4):
            mon.update(_period(t))
        assert math.isfinite(mon.evaluation().roc_auc)
    assert "curator" in central.receipt().mechanism
    entry = skellam.receipt().entries[0]
    assert entry.rdp is not None and skellam.delta_spent == pytest.approx(1e-6)
