"""Benchmark (issue 26): continual evaluation under one budget — accuracy, drift alarms, cost.

Task: T = 64 periods of 5,000 examples, one example per client, labels
Bernoulli(0.3), score sigmoid(a·(2y − 1) + N(0, 1)); a = 1 gives a population
AUC of Φ(√2) ≈ 0.921. Privacy: DistributedDP(ε = 1) for the whole horizon
(Pólya shares, pure ε; ``--noise skellam`` for Skellam shares, δ = 1e-6).
Every monitor declares ``examples_per_period=5000`` (public); all mechanisms
of a seed share the height that ``mechanism="auto"`` plans.

Parts (``--part``):

``accuracy``
    Per seed, each mechanism is run online: after period t's update, the
    cumulative AUC (periods 1..t) and the last-8 windowed AUC are read and
    compared with the exact AUC of the same examples (scikit-learn). The
    baselines re-evaluate from scratch every period: the cumulative data with
    ε/T (an example is in every later release: basic composition over T
    releases) and the last 8 periods with ε/8 (an example is in 8 windows),
    each planned by ``fe.evaluate`` for its declared size. Tables: RMSE over
    seeds at t = 8, 16, 32, 64, the RMSE pooled over every t (and its worst t)
    of the cumulative AUC, the windowed AUC and the released number of
    positives (a level-1 count: its error is the noise's, growing with t as
    the mechanism's), and the closed-form noise SD of one cumulative node count
    (with its RMS and maximum over t). Each table ends with the RMSE ratios
    sqrt factorization ÷ tree (Honaker's, and the plain dyadic one) in every
    column, and has a column pooled over t ≥ 8. A NaN AUC (a released class
    total ≤ 0: the ε/64 re-evaluation of one period, once in 60 seeds with
    Skellam) is left out of its row and counted in the row's name.

    Which mechanism wins (60 seeds each, load average 2–5 on 2 cores,
    10 and 18 minutes)::

        python benchmarks/bench_monitor.py --part accuracy --seeds 60 --noise polya
        python benchmarks/bench_monitor.py --part accuracy --seeds 60 --noise skellam

    factorization ÷ Honaker tree RMSE  Pólya   Skellam
    cumulative AUC at t = 64           2.76    1.18
    cumulative AUC pooled over all t   1.43    0.80
    cumulative AUC pooled over t ≥ 8   1.43    0.63
    last-8-periods AUC, pooled         1.52    0.69
    positives count, pooled            1.46    0.60

    Pure ε calibrates to the column L1 norm (factorization ≈ 2√(T/π) = 9.0,
    tree log₂ T + 1 = 7): the factorization loses at every t, and
    per-period release (L1 norm 1) has the lowest mean error at T = 64
    (``mechanism="auto"`` picks it). Skellam calibrates to the L2 norm
    (1.55 against √7): the factorization wins except at t = 8, 16, 32, 64,
    the powers of two where the tree's prefix is one node read from its
    whole subtree (its best case), so "≤ 0.8× the tree" holds over the
    horizon, not at t = 64 (``"auto"`` picks the factorization). Closed
    forms and their reasons: the ``fedeval.monitoring`` docstring.
``drift``
    Per seed, the default monitor; after every period t ≥ 9,
    ``mon.drift("roc_auc", window=8)`` (the last 8 periods against all
    earlier ones, Bonferroni over the T − 8 looks at α = 0.05). Null: a = 1
    throughout, any alarm is false. Change: a drops at period 41 (to 0.8:
    AUC 0.921 → 0.871; and to 0.9: → 0.898); detected by t = 48 if an alarm
    is raised at some t in 41..48 (and none before).

    Measured, 40 seeds per scenario (``--part drift --seeds 40``, load
    average ≈ 3 on 2 cores): Pólya (auto = per-period): no change 1/40 with
    any alarm; a → 0.9 flagged by t = 48 in 40/40, a → 0.8 in 37/40 (the
    other 3 alarmed before t = 41, on data not yet changed). Skellam
    (``--noise skellam``, auto = factorization): no change 2/40; both
    changes flagged by t = 48 in 40/40, none before t = 41. Alarms before
    the change, all scenarios: 3/120 seeds (Pólya), 2/120 (Skellam).
``cost``
    Seconds per ``mon.update`` (encoding 5,000 examples, the running rows,
    the noise) against one ``fedeval.aggregation.release`` of the same
    hierarchy on the same data, for T = 16..1024 and heights 8..12.

Usage::

    python benchmarks/bench_monitor.py --quick            # minutes
    python benchmarks/bench_monitor.py --part accuracy --seeds 40 --noise polya
    python benchmarks/bench_monitor.py --part drift --seeds 100
    python benchmarks/bench_monitor.py --part cost

Results: printed as Markdown tables and written to
``benchmarks/out/monitor/<part>-<noise>.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.metrics import roc_auc_score

import fedeval as fe
from fedeval.aggregation import release
from fedeval.privacy.mechanisms.continual import continual_strategy
from fedeval.sketches.hierarchy import HierarchySketch, HierarchySpec

OUT = Path(__file__).parent / "out" / "monitor"
T = 64
N = 5_000
WINDOW = 8
TABLE_T = (8, 16, 32, 64)
MECHANISMS = (  # (label, mechanism, estimator)
    ("per-period", "per-period", "gls"),
    ("binary tree", "tree", "plain"),
    ("tree + Honaker", "tree", "gls"),
    ("sqrt factorization", "factorization", "gls"),
)


def model(noise: str, epsilon: float = 1.0) -> Any:
    if noise == "skellam":
        return fe.DistributedDP(epsilon=epsilon, noise="skellam", delta=1e-6)
    return fe.DistributedDP(epsilon=epsilon)


def periods(
    seed: int, *, separation_after: float = 1.0, change_at: int = T, n: int = N, horizon: int = T
) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    out = []
    for t in range(1, horizon + 1):
        a = 1.0 if t <= change_at else separation_after
        y = (rng.random(n) < 0.3).astype(np.int64)
        s = 1.0 / (1.0 + np.exp(-(a * (2 * y - 1) + rng.normal(0.0, 1.0, n))))
        out.append((s, y))
    return out


def fed_of(parts: list[tuple[np.ndarray, np.ndarray]]) -> fe.Federation:
    return fe.Federation.from_arrays(
        np.concatenate([s for s, _ in parts]), np.concatenate([y for _, y in parts])
    )


# ------------------------------------------------------------------- accuracy
def accuracy_seed(seed: int, noise: str) -> dict[str, Any]:
    privacy = model(noise)
    data = periods(seed)
    feds = [fe.Federation.from_arrays(s, y) for s, y in data]
    exact_cum = [roc_auc_score(*_labels_scores(data[:t])) for t in range(1, T + 1)]
    exact_win = [
        roc_auc_score(*_labels_scores(data[max(0, t - WINDOW) : t])) for t in range(1, T + 1)
    ]
    positives = np.cumsum([int(y.sum()) for _, y in data])
    auto = fe.monitor(privacy, horizon=T, examples_per_period=N, rng=seed)
    height = int(auto.parameters["height"])
    out: dict[str, Any] = {"seed": seed, "height": height, "auto": auto.mechanism_name}
    node_sd: dict[str, list[float]] = {}
    for k, (label, mech, est) in enumerate(MECHANISMS):
        mon = fe.monitor(
            privacy,
            horizon=T,
            examples_per_period=N,
            height=height,
            mechanism=mech,  # type: ignore[arg-type]
            estimator=est,  # type: ignore[arg-type]
            rng=np.random.default_rng([seed, k]),
        )
        cum, win, count = [], [], []
        for t, f in enumerate(feds, 1):
            mon.update(f)
            ev = mon.evaluation()
            cum.append(ev.roc_auc - exact_cum[t - 1])
            count.append(float(ev.tree.totals()[1]) - positives[t - 1])
            if t >= WINDOW:
                win.append(mon.evaluation(window=WINDOW).roc_auc - exact_win[t - 1])
        out[label] = {"cumulative": cum, "window": win, "positives": count}
        rel = mon._release
        node_sd[label] = [
            math.sqrt(rel.row_variance * mon.strategy.variance_factor(t, 0, t)) for t in TABLE_T
        ]
    base_cum, base_win, base_count = [], [], []
    for t in range(1, T + 1):
        gen = np.random.default_rng([seed, 100, t])
        ev = fe.evaluate(
            fed_of(data[:t]),
            privacy.scaled(1.0 / T),
            public=fe.Public(n_examples=N * t),
            rng=gen,
            bootstrap_replicates=2,
        )
        base_cum.append(ev.roc_auc - exact_cum[t - 1])  # type: ignore[union-attr]
        base_count.append(float(ev.tree.totals()[1]) - positives[t - 1])  # type: ignore[union-attr]
        if t >= WINDOW:
            ev = fe.evaluate(
                fed_of(data[t - WINDOW : t]),
                privacy.scaled(1.0 / WINDOW),
                public=fe.Public(n_examples=N * WINDOW),
                rng=gen,
                bootstrap_replicates=2,
            )
            base_win.append(ev.roc_auc - exact_win[t - 1])  # type: ignore[union-attr]
    out["re-evaluate (ε/T, ε/8)"] = {
        "cumulative": base_cum,
        "window": base_win,
        "positives": base_count,
    }
    out["node_sd"] = node_sd
    return out


def _labels_scores(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    return np.concatenate([y for _, y in parts]), np.concatenate([s for s, _ in parts])


def accuracy_tables(runs: list[dict[str, Any]]) -> str:
    labels = [m[0] for m in MECHANISMS] + ["re-evaluate (ε/T, ε/8)"]
    lines = []
    what = {
        "cumulative": "cumulative AUC RMSE",
        "window": f"AUC of the last {WINDOW} periods, RMSE",
        "positives": "cumulative number of positives (level-1 count), RMSE",
    }
    for kind, first in (("cumulative", 1), ("window", WINDOW), ("positives", 1)):
        head = " | ".join(f"t={t}" for t in TABLE_T)
        lines += [
            f"\n{what[kind]} ({len(runs)} seeds)\n",
            f"| mechanism | {head} | all t (pooled) | t ≥ {WINDOW} (pooled) | worst t |",
            "|---|" + "---|" * (len(TABLE_T) + 3),
        ]
        f = "{:.1f}" if kind == "positives" else "{:.2e}"
        summary: dict[str, NDArray[np.float64]] = {}
        for label in labels:
            err = np.array([r[label][kind] for r in runs], dtype=np.float64)  # seeds × periods
            # A NaN AUC is a released class total ≤ 0 (fedeval's documented answer under
            # heavy noise, e.g. re-evaluating 5,000 examples with ε/64): left out, and counted.
            n_nan = int(np.sum(~np.isfinite(err)))
            rmse_t = np.sqrt(np.nanmean(err**2, axis=0))
            late = err[:, WINDOW - first :]
            # per table t, pooled over all t, pooled over t ≥ WINDOW, worst t
            summary[label] = np.array(
                [
                    *(rmse_t[t - first] for t in TABLE_T),
                    math.sqrt(float(np.nanmean(err**2))),
                    math.sqrt(float(np.nanmean(late**2))),
                    rmse_t.max(),
                ]
            )
            cells = " | ".join(f.format(v) for v in summary[label][:-1])
            worst = int(np.argmax(rmse_t)) + first
            name = f"{label} ({n_nan} NaN left out)" if n_nan else label
            lines.append(f"| {name} | {cells} | {f.format(rmse_t.max())} (t={worst}) |")
        # Issue 26 asks for the factorization at ≤ 0.8× the tree's RMSE: the ratios,
        # at each t and pooled over t (the literature's mean error over the horizon).
        for tree in ("tree + Honaker", "binary tree"):
            ratio = summary["sqrt factorization"] / summary[tree]
            cells = " | ".join(f"{v:.2f}" for v in ratio)
            lines.append(f"| ratio: sqrt factorization ÷ {tree} | {cells} |")
    lines += [
        "\nclosed-form noise SD of one cumulative node count (online estimate at t)\n",
        "| mechanism | "
        + " | ".join(f"t={t}" for t in TABLE_T)
        + " | RMS over t = 1..T | max over t |",
        "|---|" + "---|" * (len(TABLE_T) + 2),
    ]
    closed: dict[str, NDArray[np.float64]] = {}
    for label, mech, est in MECHANISMS:
        sd = np.asarray(runs[0]["node_sd"][label], dtype=np.float64)
        # the stored SDs are σ·√(factor at t); the other t follow from the closed-form factors
        factors = continual_strategy(mech, T, estimator=est).prefix_variance_factors()  # type: ignore[arg-type]
        scale = sd[-1] / math.sqrt(factors[TABLE_T[-1] - 1])
        closed[label] = np.array(
            [*sd, scale * math.sqrt(factors.mean()), scale * math.sqrt(factors.max())]
        )
        lines.append(f"| {label} | " + " | ".join(f"{v:.1f}" for v in closed[label]) + " |")
    for tree in ("tree + Honaker", "binary tree"):
        ratio = closed["sqrt factorization"] / closed[tree]
        lines.append(
            f"| ratio: sqrt factorization ÷ {tree} | "
            + " | ".join(f"{v:.2f}" for v in ratio)
            + " |"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------------- drift
def drift_seed(seed: int, noise: str, separation_after: float, mechanism: str) -> dict[str, Any]:
    data = periods(seed, separation_after=separation_after, change_at=40)
    mon = fe.monitor(
        model(noise),
        horizon=T,
        examples_per_period=N,
        mechanism=mechanism,  # type: ignore[arg-type]
        rng=np.random.default_rng([seed, 7]),
    )
    z, alarms = [], []
    for t, (s, y) in enumerate(data, 1):
        mon.update(fe.Federation.from_arrays(s, y))
        if t > WINDOW:
            d = mon.drift("roc_auc", window=WINDOW)
            z.append(d.z)
            if d.alarm:
                alarms.append(t)
    return {
        "seed": seed,
        "separation_after": separation_after,
        "mechanism": mon.mechanism_name,
        "z": z,
        "alarms": alarms,
        "critical_z": d.critical_z,
    }


def drift_table(runs: list[dict[str, Any]]) -> str:
    lines = [
        "| scenario | seeds | any alarm | first alarm by t = 48 | alarm before t = 41 | "
        "median first alarm |",
        "|---|---|---|---|---|---|",
    ]
    for a in sorted({r["separation_after"] for r in runs}, reverse=True):
        rs = [r for r in runs if r["separation_after"] == a]
        first = [min(r["alarms"]) if r["alarms"] else None for r in rs]
        any_ = np.mean([f is not None for f in first])
        early = np.mean([f is not None and f <= 40 for f in first])
        by48 = np.mean([f is not None and 41 <= f <= 48 for f in first])
        med = np.median([f for f in first if f is not None]) if any(first) else float("nan")
        name = "no change (a = 1)" if a == 1.0 else f"a: 1 → {a:g} at t = 41"
        lines.append(f"| {name} | {len(rs)} | {any_:.0%} | {by48:.0%} | {early:.0%} | {med:g} |")
    return "\n".join(lines)


# ----------------------------------------------------------------------- cost
def cost(horizons: list[int], heights: list[int], noise: str) -> list[dict[str, Any]]:
    privacy = model(noise)
    rows = []
    s, y = periods(0, horizon=1)[0]
    fed = fe.Federation.from_arrays(s, y)
    for h in heights:
        sketch = HierarchySketch(HierarchySpec(h, 2, (0.0, 1.0), 2))
        times = []
        for _ in range(20):
            t0 = time.perf_counter()
            release(fed, sketch, privacy, rng=np.random.default_rng(0))
            times.append(time.perf_counter() - t0)
        one = float(np.median(times))
        for horizon in horizons:
            for mech in ("per-period", "tree", "factorization"):
                mon = fe.monitor(
                    privacy,
                    horizon=horizon,
                    examples_per_period=N,
                    height=h,
                    mechanism=mech,  # type: ignore[arg-type]
                    rng=np.random.default_rng(1),
                )
                per = []
                for _ in range(horizon):
                    t0 = time.perf_counter()
                    mon.update(fed)
                    per.append(time.perf_counter() - t0)
                rows.append(
                    {
                        "height": h,
                        "sketch_length": sketch.length,
                        "horizon": horizon,
                        "mechanism": mech,
                        "update_s": float(np.mean(per)),
                        "update_max_s": float(np.max(per)),
                        "release_s": one,
                        "ratio": float(np.mean(per)) / one,
                        "rows_read_per_period": float(
                            np.mean(
                                [mon.strategy.rows_reading(t).size for t in range(1, horizon + 1)]
                            )
                        ),
                    }
                )
    return rows


def cost_table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| height (L) | T | mechanism | rows a period adds to (mean) | update ms (mean, max) | "
        "one release ms | update / release |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['height']} ({r['sketch_length']:,}) | {r['horizon']} | {r['mechanism']} | "
            f"{r['rows_read_per_period']:.1f} | {1e3 * r['update_s']:.2f}, "
            f"{1e3 * r['update_max_s']:.2f} | {1e3 * r['release_s']:.2f} | {r['ratio']:.2f} |"
        )
    return "\n".join(lines)


def _save(name: str, payload: Any) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / name).write_text(json.dumps(payload, default=float))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=["accuracy", "drift", "cost", "all"], default="all")
    ap.add_argument("--seeds", type=int, default=None)
    ap.add_argument("--noise", choices=["polya", "skellam"], default="polya")
    ap.add_argument("--mechanism", default="auto", help="drift part: the monitor's mechanism")
    ap.add_argument("--quick", action="store_true", help="a few seeds, small cost grid")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    started = time.perf_counter()
    print(f"load: {os.getloadavg()}")
    if args.part in ("accuracy", "all"):
        seeds = args.seeds or (2 if args.quick else 40)
        runs = [accuracy_seed(s, args.noise) for s in range(seeds)]
        _save(f"accuracy-{args.noise}.json", runs)
        print(
            f"\n## accuracy, DistributedDP ε = 1 ({args.noise}), height {runs[0]['height']}, "
            f"auto = {runs[0]['auto']}"
        )
        print(accuracy_tables(runs))
    if args.part in ("drift", "all"):
        seeds = args.seeds or (3 if args.quick else 100)
        runs = [
            drift_seed(1000 * k + s, args.noise, a, args.mechanism)
            for k, a in enumerate((1.0, 0.8, 0.9))
            for s in range(seeds)
        ]
        _save(f"drift-{args.noise}-{args.mechanism}.json", runs)
        print(
            f"\n## drift, window 8 against all earlier periods, α = 0.05 over {T - WINDOW} "
            f"looks (critical z {runs[0]['critical_z']:.3f}), mechanism {runs[0]['mechanism']}"
        )
        print(drift_table(runs))
    if args.part in ("cost", "all"):
        horizons = [16, 64] if args.quick else [16, 64, 256, 1024]
        heights = [8] if args.quick else [8, 10, 12]
        rows = cost(horizons, heights, args.noise)
        _save(f"cost-{args.noise}.json", rows)
        print(f"\n## cost per period, 5,000 examples ({args.noise})")
        print(cost_table(rows))
    print(f"\n{time.perf_counter() - started:.0f} s; load: {os.getloadavg()}")


if __name__ == "__main__":
    main()
