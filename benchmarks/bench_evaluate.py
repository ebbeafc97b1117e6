"""Benchmark: fe.evaluate (all metrics, DistDP ε=1) on 10M examples / 1M clients.

Prints, from one run on the same arrays:
  * one ``np.bincount`` pass over the leaf indices (computed outside the timing),
  * ``sklearn.metrics.roc_auc_score``,
  * ``fe.evaluate`` + AUC + ROC curve + PR curve + metrics at 9 thresholds
    (standard errors by bootstrap excluded: they are optional post-processing and
    timed separately).
Targets (issue 3): evaluate ≤ 3× the bincount pass and ≤ 0.1× scikit-learn's AUC.
Each timing is the best of ``--repeat`` runs.

Usage: python benchmarks/bench_evaluate.py [--n-examples 10000000] [--n-clients 1000000]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
from sklearn.metrics import roc_auc_score

import fedeval as fe


def best_of(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-examples", type=int, default=10_000_000)
    ap.add_argument("--n-clients", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    n = args.n_examples
    labels = (rng.random(n) < 0.3).astype(np.int8)
    scores = 1 / (1 + np.exp(-(rng.normal(0, 1, n) + 1.2 * (labels - 0.5))))
    clients = rng.integers(0, args.n_clients, n)
    t0 = time.perf_counter()
    fed = fe.Federation.from_arrays(scores, labels, clients)
    t_fed = time.perf_counter() - t0
    _ = fed.client_index
    privacy = fe.DistributedDP(epsilon=1.0)
    height = fe.plan(n_clients=fed.n_clients, n_examples=n, epsilon=1.0, privacy="distdp").height
    leaf = (scores * 2**height).astype(np.int64)
    np.minimum(leaf, 2**height - 1, out=leaf)

    def run_evaluate() -> None:
        ev = fe.evaluate(fed, privacy, rng=1)
        _ = ev.roc_auc, ev.roc_curve(), ev.precision_recall_curve()
        _ = ev.at_threshold(np.linspace(0.1, 0.9, 9))

    t_bincount = best_of(lambda: np.bincount(leaf, minlength=2**height), args.repeat)
    t_sklearn = best_of(lambda: roc_auc_score(labels, scores), max(1, args.repeat - 2))
    t_eval = best_of(run_evaluate, args.repeat)
    ev = fe.evaluate(fed, privacy, rng=1, bootstrap_replicates=200)
    t0 = time.perf_counter()
    _ = ev.roc_auc_se, ev.average_precision_se
    t_se = time.perf_counter() - t0
    auc = roc_auc_score(labels, scores)

    print(
        f"{n:,} examples, {fed.n_clients:,} clients; Federation built in {t_fed:.2f} s (not timed below)"
    )
    print(
        f"height {ev.parameters['height']}, buckets {ev.parameters['n_buckets']}, quantiles {ev.parameters['n_quantiles']}"
    )
    print(f"{'np.bincount pass':40s} {t_bincount * 1e3:9.1f} ms")
    print(f"{'sklearn roc_auc_score':40s} {t_sklearn * 1e3:9.1f} ms")
    print(f"{'fe.evaluate + AUC + curves + thresholds':40s} {t_eval * 1e3:9.1f} ms")
    print(f"{'  bootstrap SEs of AUC and AP (200 reps)':40s} {t_se * 1e3:9.1f} ms")
    r1, r2 = t_eval / t_bincount, t_eval / t_sklearn
    print(f"evaluate / bincount = {r1:.2f}  (target <= 3: {'PASS' if r1 <= 3 else 'FAIL'})")
    print(f"evaluate / sklearn  = {r2:.3f} (target <= 0.1: {'PASS' if r2 <= 0.1 else 'FAIL'})")
    print(
        f"AUC exact {auc:.6f}, DistDP eps=1 {ev.roc_auc:.6f} ± {ev.roc_auc_se:.6f}, error {abs(ev.roc_auc - auc):.2e}"
    )


if __name__ == "__main__":
    main()
