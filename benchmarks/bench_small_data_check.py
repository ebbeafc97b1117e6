"""Benchmark: the small-data warning's check on tiny releases, and whether O(height) could decide it (issue 28).

Issue 28 asks ``fe.evaluate`` on ≤ 100 examples for ≤ 2 ms and "the
small-data warning's check costs O(1), not an SE computation".
``bench_tiny.py`` measures the calls; this benchmark measures the check's
parts and tests the one cheap criterion there is.

Part 1, the check's cost (``--sizes``, default 100 examples, one per client;
distributed DP ε = 1 and local DP ε = 5): ``--calls`` releases are drawn with
the warnings ignored (the check skipped), then each part of
:func:`fedeval.evaluation._warn_if_unreliable` is timed on them in the order
the check runs them, so that each figure is what the part adds to those
before it (they share cached results), in milliseconds per release (best of
3 rounds, fresh releases each round):

* the release itself (``fe.evaluate``, warnings ignored);
* the raw tree's screen (O(height) bounds, :func:`~fedeval.evaluation._raw_noise_screen`);
* the effective examples (:func:`~fedeval.metrics.dense.effective_examples`,
  O(height): the class ECDFs' noise at their released medians);
* the projected, shrunk bin counts (``ev.counts``);
* the delta-method SE of the AUC once those are there (``ev.roc_auc_se``).

Part 2, an O(height) criterion against the SE (``--study``): the warning
decides on the release's own delta-method SE of the AUC (> 0.05). The one
quantity the check already has without the counts is the class ECDFs' noise
at their medians, v_F per class (from the effective examples: n_eff =
1/(1/T + 4 v_F)); √(v_F⁻ + v_F⁺) is the AUC's noise SE if every threshold's
prefix error were as at the median and nothing were shrunk. Over data kinds
(uniform scores with P(y = 1) = score, a separable task, 10 % positives, and
breast_cancer's first feature as a score), sizes and models, ``--releases``
releases each (seeded: a simulation), it prints the SE's median, the
proxy/SE ratio's 5/50/95 % quantiles, and how often "proxy > 0.05" agrees
with "SE > 0.05" (the warning's decision).

Run: ``PYTHONPATH=src .venv/bin/python benchmarks/bench_small_data_check.py
[--calls 300] [--sizes 100] [--study] [--releases 60]``.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

import fedeval as fe
from fedeval.evaluation import AUC_ERROR_TOLERANCE, _raw_noise_screen
from fedeval.metrics.dense import effective_examples

MODELS = {"distributed DP ε=1": fe.DistributedDP(1.0), "local DP ε=5": fe.LocalDP(5.0)}


def task(kind: str, n: int, gen: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Scores in [0, 1] and labels of ``n`` examples of one data kind."""
    if kind == "uniform":
        s = gen.random(n)
        return s, (gen.random(n) < s).astype(int)
    if kind == "separable":
        y = (gen.random(n) < 0.3).astype(int)
        return np.clip(gen.normal(0.3 + 0.4 * y, 0.1), 0.0, 1.0), y
    if kind == "rare":
        y = (gen.random(n) < 0.1).astype(int)
        return np.clip(gen.normal(0.4 + 0.2 * y, 0.2), 0.0, 1.0), y
    from sklearn.datasets import load_breast_cancer

    x, labels = load_breast_cancer(return_X_y=True)
    rows = gen.choice(labels.size, min(n, labels.size), replace=False)
    z = (x[rows, 0] - x[:, 0].mean()) / x[:, 0].std()
    return 1.0 / (1.0 + np.exp(z)), labels[rows]


def releases(fed: fe.Federation, model: Any, count: int, seed: int) -> list[Any]:
    gen = np.random.default_rng(seed)  # a simulation: seeded noise is fine here
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [fe.evaluate(fed, model, rng=gen) for _ in range(count)]


def per_release_ms(part: Callable[[Any], Any], evs: list[Any]) -> float:
    t0 = time.perf_counter()
    for ev in evs:
        part(ev)
    return (time.perf_counter() - t0) / len(evs) * 1e3


def check_cost(calls: int, sizes: list[int]) -> None:
    parts: dict[str, Callable[[Any], Any]] = {
        "raw tree's screen": lambda ev: _raw_noise_screen(ev.tree, ev.tree.totals()),
        "effective examples": lambda ev: effective_examples(ev.tree),
        "projected, shrunk counts": lambda ev: ev.counts,
        "AUC SE (after the two above)": lambda ev: ev.roc_auc_se,
    }
    for n in sizes:
        gen = np.random.default_rng(n)
        fed = fe.Federation.from_arrays(*task("uniform", n, gen))
        print(f"\n{n} examples: milliseconds per release, best of 3 rounds of {calls}")
        print(f"  {'part':32s} " + " ".join(f"{name:>20s}" for name in MODELS))
        table: dict[str, list[float]] = {"release, warnings ignored": []}
        table.update({name: [] for name in parts})
        for model in MODELS.values():
            releases(fed, model, 10, 0)  # warm
            best = dict.fromkeys(table, float("inf"))
            for r in range(3):
                t0 = time.perf_counter()
                evs = releases(fed, model, calls, 1 + r)
                best["release, warnings ignored"] = min(
                    best["release, warnings ignored"], (time.perf_counter() - t0) / calls * 1e3
                )
                for name, part in parts.items():  # in the check's order, on the same releases
                    best[name] = min(best[name], per_release_ms(part, evs))
            for name in table:
                table[name].append(best[name])
        for name, row in table.items():
            print(f"  {name:32s} " + " ".join(f"{ms:20.3f}" for ms in row))
        check = [sum(table[name][i] for name in parts) for i in range(len(MODELS))]
        print(
            f"  {'the check when nothing settles':32s} " + " ".join(f"{ms:20.3f}" for ms in check)
        )


def proxy_study(n_releases: int) -> None:
    print(
        f"\nproxy √(v_F⁻ + v_F⁺) against the AUC's SE, {n_releases} releases each; "
        f"'agree': the share of releases where proxy > {AUC_ERROR_TOLERANCE} iff SE > "
        f"{AUC_ERROR_TOLERANCE}"
    )
    print(
        f"  {'data':10s} {'n':>6s} {'model':>8s} {'SE med':>7s} {'proxy/SE q5':>12s} "
        f"{'q50':>6s} {'q95':>6s} {'agree':>6s}"
    )
    models = {"DistDP 1": fe.DistributedDP(1.0), "LDP 5": fe.LocalDP(5.0), "LDP 2": fe.LocalDP(2.0)}
    for kind in ("uniform", "separable", "rare", "breast"):
        for n in (30, 100, 300, 1000, 10_000):
            if kind == "breast" and n > 569:
                continue
            fed = fe.Federation.from_arrays(*task(kind, n, np.random.default_rng(n)))
            for label, model in models.items():
                se, proxy = [], []
                for ev in releases(fed, model, n_releases, 1):
                    totals = ev.tree.totals()[:2]
                    n_eff = effective_examples(ev.tree)
                    with np.errstate(divide="ignore", invalid="ignore"):
                        v_f = (1.0 / n_eff - 1.0 / totals) / 4.0
                    se.append(ev.roc_auc_se)
                    proxy.append(float(np.sqrt(np.sum(v_f))) if np.all(n_eff > 0) else np.nan)
                s, p = np.array(se), np.array(proxy)
                ok = np.isfinite(s) & np.isfinite(p) & (s > 0)
                if not ok.any():
                    print(f"  {kind:10s} {n:6d} {label:>8s}  (no release with both defined)")
                    continue
                q5, q50, q95 = np.quantile(p[ok] / s[ok], [0.05, 0.5, 0.95])
                agree = np.mean((p[ok] > AUC_ERROR_TOLERANCE) == (s[ok] > AUC_ERROR_TOLERANCE))
                print(
                    f"  {kind:10s} {n:6d} {label:>8s} {np.median(s[ok]):7.3f} {q5:12.2f} "
                    f"{q50:6.2f} {q95:6.2f} {agree:6.2f}"
                )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--sizes", type=int, nargs="+", default=[100])
    ap.add_argument("--study", action="store_true", help="also run part 2 (about half a minute)")
    ap.add_argument("--releases", type=int, default=60)
    args = ap.parse_args()
    print(f"load average {os.getloadavg()}")
    check_cost(args.calls, args.sizes)
    if args.study:
        proxy_study(args.releases)
    print(f"\nload average {os.getloadavg()}")


if __name__ == "__main__":
    main()
