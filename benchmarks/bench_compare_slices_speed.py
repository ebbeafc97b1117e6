"""Benchmark (issue 25): ``fe.compare`` and a 50-slice evaluation against one ``fe.evaluate``, 10M examples.

Same arrays, same run, DistDP ε = 1, 1M clients; each timing is the best of
``--repeat`` runs and includes what a user reads:

* evaluate: ``fe.evaluate`` + ``roc_auc`` + its privacy and sampling SEs;
* compare: ``fe.compare`` (model B = A + noise) + ``roc_auc_diff`` + its total SE
  (both models' AUCs, privacy SEs and the paired DeLong SE);
* 50 slices: ``fe.evaluate(..., slices=, slice_values=50 values)`` + every
  slice's AUC with its privacy and sampling SEs (51 slices with "other").

Targets: compare ≤ 3× evaluate; 50 slices ≤ 3× evaluate (ratios printed).

Usage: python benchmarks/bench_compare_slices_speed.py [--n-examples 10000000] [--repeat 3] [--quick]
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from collections.abc import Callable

import numpy as np

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
    ap.add_argument("--slices", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="1M examples, 100K clients, 2 repeats")
    args = ap.parse_args()
    if args.quick:
        args.n_examples, args.n_clients, args.repeat = 1_000_000, 100_000, 2
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    n = args.n_examples
    labels = (rng.random(n) < 0.3).astype(np.int8)
    z = rng.normal(0, 1, n) + 1.2 * (labels - 0.5)
    a = 1 / (1 + np.exp(-z))
    b = 1 / (1 + np.exp(-(z + rng.normal(0, 0.4, n))))
    clients = rng.integers(0, args.n_clients, n)
    slices = rng.integers(0, args.slices, n)
    values = list(range(args.slices))
    fed_a = fe.Federation.from_arrays(a, labels, clients)
    fed_b = fe.Federation.from_arrays(b, labels, clients)
    _ = fed_a.client_index, fed_b.client_index
    privacy = fe.DistributedDP(epsilon=1.0)
    info: dict[str, object] = {}

    def run_evaluate() -> None:
        ev = fe.evaluate(fed_a, privacy, rng=1)
        _ = ev.roc_auc, ev.roc_auc_se, ev.roc_auc_sampling_se
        info["evaluate height"] = ev.parameters["height"]

    def run_compare() -> None:
        cmp = fe.compare(fed_a, fed_b, privacy, rng=1)
        _ = cmp.roc_auc_diff, cmp.roc_auc_diff_se
        info["compare height"] = cmp.parameters["height"]

    def run_slices() -> None:
        sev = fe.evaluate(fed_a, privacy, slices=slices, slice_values=values, rng=1)
        _ = [(ev.roc_auc, ev.roc_auc_se, ev.roc_auc_sampling_se) for _, ev in sev.items()]
        info["slices height"] = sev.parameters["height"]

    run_evaluate(), run_compare(), run_slices()  # warm-up (imports, caches)
    t_ev = best_of(run_evaluate, args.repeat)
    t_cmp = best_of(run_compare, args.repeat)
    t_sl = best_of(run_slices, args.repeat)
    print(f"{n:,} examples, {args.n_clients:,} clients, DistDP ε = 1, best of {args.repeat}; "
          f"load average {os.getloadavg()[0]:.2f}; heights {info}")  # fmt: skip
    print("| what | seconds | × evaluate | target |")
    print("|---|---|---|---|")
    print(f"| evaluate (+ AUC, SEs) | {t_ev:.3f} | 1.00 | |")
    print(f"| compare (+ ΔAUC, total SE) | {t_cmp:.3f} | {t_cmp / t_ev:.2f} | ≤ 3 |")
    print(
        f"| {args.slices} slices (+ every slice's AUC, SEs) | {t_sl:.3f} | {t_sl / t_ev:.2f} | ≤ 3 |"
    )


if __name__ == "__main__":
    main()
