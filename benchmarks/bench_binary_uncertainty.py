"""Benchmark (issue 13): closed-form standard errors and many thresholds at 10M examples.

One DistDP ε=1 release with height 16 (65,536 leaves) of 10M examples (one per
client). Times, each the best of ``--repeat`` runs on a fresh ``Evaluation`` of
the same release (so no cached result is reused):

* every standard error together: AUC (privacy and sampling), AP, the ROC and
  PR bands, and the threshold metrics at the midpoint (delta method);
* ``at_threshold`` at 1,000 thresholds, with its peak memory (tracemalloc);
* the baseline in the same run: the parametric-bootstrap AUC standard error
  (``--boot`` replicates, scaled to the default 200) and the old (k+1)² covariance
  path for 300 thresholds (``leaf_query_covariance``), with its peak memory.

Targets: all SEs <= 0.3 s; 1,000 thresholds <= 1 s with memory O(thresholds + leaves).

Usage: python benchmarks/bench_binary_uncertainty.py [--n-examples 10000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

import fedeval as fe
from fedeval.sketches.tree import prefix_leaf_weights


def best_of(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def peak_mb(fn: Callable[[], object]) -> float:
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-examples", type=int, default=10_000_000)
    ap.add_argument("--height", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--boot", type=int, default=10)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    n = args.n_examples
    labels = (rng.random(n) < 0.3).astype(np.int8)
    scores = 1 / (1 + np.exp(-(rng.normal(0, 1, n) + 1.2 * (labels - 0.5))))
    fed = fe.Federation.from_arrays(scores, labels)
    t0 = time.perf_counter()
    ev0 = fe.evaluate(fed, fe.DistributedDP(epsilon=1.0), height=args.height, rng=1)
    print(f"release + consistency: {time.perf_counter() - t0:.2f} s (h={args.height}, n={n:,})")
    fresh: Callable[[], Any] = lambda: replace(ev0)  # noqa: E731  (new object, empty caches)
    _ = fresh().counts  # warm imports

    def all_ses() -> None:
        ev = fresh()
        _ = ev.roc_auc_se, ev.roc_auc_sampling_se, ev.average_precision_se
        _ = ev.roc_band(), ev.pr_band(), ev.at_threshold(0.5)

    t_se = best_of(all_ses, args.repeat)
    ev = fresh()
    parts = {
        "roc_auc_se": lambda: fresh().roc_auc_se,
        "roc_auc_sampling_se": lambda: fresh().roc_auc_sampling_se,
        "average_precision_se": lambda: fresh().average_precision_se,
        "roc_band": lambda: fresh().roc_band(),
        "pr_band": lambda: fresh().pr_band(),
    }
    print(f"all standard errors together: {t_se:.3f} s (target <= 0.3 s)")
    for name, fn in parts.items():
        print(f"  {name}: {best_of(fn, args.repeat):.3f} s (includes the dense counts)")
    print(
        f"  values: AUC {ev.roc_auc:.5f} ± {ev.roc_auc_se:.2e} (privacy) ± "
        f"{ev.roc_auc_sampling_se:.2e} (sampling), AP {ev.average_precision:.5f} ± "
        f"{ev.average_precision_se:.2e}"
    )
    thr = np.linspace(0.0005, 0.9995, 1000)
    t_thr = best_of(lambda: ev.at_threshold(thr), args.repeat)
    m_thr = peak_mb(lambda: ev.at_threshold(thr))
    print(f"at_threshold, 1000 thresholds: {t_thr:.3f} s, peak {m_thr:.1f} MB (target <= 1 s)")

    # Baselines, same run.
    boot = fe.evaluate(
        fed,
        fe.DistributedDP(epsilon=1.0),
        height=args.height,
        rng=1,
        standard_errors="bootstrap",
        bootstrap_replicates=args.boot,
    )
    t_boot = best_of(lambda: replace(boot).roc_auc_se, 1)
    print(
        f"baseline: bootstrap AUC SE, {args.boot} replicates: {t_boot:.2f} s "
        f"(≈ {t_boot * 200 / args.boot:.1f} s at 200); delta/bootstrap(200) time ratio "
        f"{t_se / (t_boot * 200 / args.boot):.4f}"
    )
    tree = ev.tree
    thr300 = np.linspace(0.001, 0.999, 300)

    def old_cov() -> None:
        r, frac = tree.spec.grid.locate(thr300)
        w = prefix_leaf_weights(r, frac, tree.spec.n_leaves)
        tree.leaf_query_covariance(np.vstack([w, np.ones((1, tree.spec.n_leaves))]), 1)

    t_old = best_of(old_cov, 1)
    m_old = peak_mb(old_cov)
    t_new300 = best_of(lambda: ev.at_threshold(thr300), args.repeat)
    print(
        f"baseline: (k+1)² covariance, one class, 300 thresholds: {t_old:.2f} s, peak "
        f"{m_old:.0f} MB; new at_threshold (both classes, all metrics) at 300: "
        f"{t_new300:.3f} s (ratio {t_new300 / t_old:.4f})"
    )


if __name__ == "__main__":
    main()
