"""Benchmark: the DistDP hierarchical histogram release against simple baselines.

Releases the hierarchy sketch with ``fedeval.aggregation.release(fed, HierarchySketch(spec),
DistributedDP(1.0), rng=...)`` (height 14, b = 2,
both classes, fast path) for ``--n-examples`` examples (default 10 million) held
by ``--n-clients`` clients (default 1 million), and prints, best of
``--repeats`` runs each:

* the release's wall time,
* (a) one ``np.bincount`` pass over the same (class, leaf) indices, computed
  outside the timed region -- the floor for any histogram of this data,
* (b) ``sklearn.metrics.roc_auc_score`` on the same arrays (the centralised,
  non-private computation the release replaces),
* the peak memory of one release measured with ``tracemalloc`` (numpy reports
  its allocations to it), relative to the total ``nbytes`` of the input arrays.

Targets (printed with PASS/FAIL, not asserted): release <= 2x the bincount pass,
peak memory <= 3x the input arrays.

Run: ``.venv/bin/python benchmarks/bench_histograms.py [--n-examples 1000000]``.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from collections.abc import Callable

import numpy as np
from sklearn.metrics import roc_auc_score

from fedeval.aggregation import release
from fedeval.data import Federation
from fedeval.privacy.models import DistributedDP
from fedeval.sketches.hierarchical_histogram import HierarchicalHistogram
from fedeval.sketches.hierarchy import HierarchySketch, HierarchySpec

HEIGHT = 14
BRANCHING = 2
TIME_TARGET = 2.0  # release / bincount
MEMORY_TARGET = 3.0  # peak release memory / input nbytes


def make_data(
    n_examples: int, n_clients: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Deterministic synthetic scores, labels and client ids.

    Labels are Bernoulli(0.3); scores are Beta(2, 5) for negatives and Beta(5, 2)
    for positives (an AUC of about 0.9), so both classes fill the tree unevenly.
    """
    gen = np.random.default_rng(seed)
    labels = (gen.random(n_examples) < 0.3).astype(np.int64)
    scores = np.where(labels == 1, gen.beta(5.0, 2.0, n_examples), gen.beta(2.0, 5.0, n_examples))
    clients = gen.integers(0, n_clients, n_examples)
    return scores, labels, clients


def release_hierarchy(fed: Federation, model: DistributedDP, rng: int) -> HierarchicalHistogram:
    """The per-class hierarchy of ``fed`` through the one release function."""
    sketch = HierarchySketch(HierarchySpec(HEIGHT, BRANCHING, fed.score_range, 2))
    tree: HierarchicalHistogram = release(fed, sketch, model, rng=rng).decode()
    return tree


def best_of(fn: Callable[[], object], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-examples", type=int, default=10_000_000)
    parser.add_argument("--n-clients", type=int, default=None, help="default n_examples // 10")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=20231)
    args = parser.parse_args()
    n = args.n_examples
    n_clients = args.n_clients if args.n_clients is not None else max(1, n // 10)

    scores, labels, clients = make_data(n, n_clients, args.seed)

    t0 = time.perf_counter()
    fed = Federation.from_arrays(scores, labels, clients)
    t_build = time.perf_counter() - t0
    del scores, labels, clients  # the federation holds its own (grouped) copies

    # Input arrays: what the federation stores per example (scores, labels,
    # client index) plus the client offsets.
    input_bytes = (
        fed.scores.nbytes + fed.labels.nbytes + fed.client_index.nbytes + fed.offsets.nbytes
    )

    model = DistributedDP(1.0)
    seeds = iter(range(1_000_000))

    def timed_release() -> object:
        return release_hierarchy(fed, model, rng=next(seeds))

    n_leaves = BRANCHING**HEIGHT
    key = np.minimum((fed.scores * n_leaves).astype(np.int64), n_leaves - 1) + fed.labels * n_leaves

    def bincount() -> object:
        return np.bincount(key, minlength=2 * n_leaves)

    def auc() -> object:
        return roc_auc_score(fed.labels, fed.scores)

    # Sanity: the release's leaves (minus noise) agree with the bincount.
    hist = release_hierarchy(fed, model, rng=0)
    direct = bincount().reshape(2, n_leaves)  # type: ignore[union-attr]
    noise_sd = float(np.sqrt(hist.node_variance[-1][0, 0]))
    max_dev = float(np.abs(hist.leaves - direct).max())

    t_release = best_of(timed_release, args.repeats)
    t_bincount = best_of(bincount, args.repeats)
    t_auc = best_of(auc, args.repeats)

    tracemalloc.start()
    tracemalloc.reset_peak()
    base, _ = tracemalloc.get_traced_memory()
    timed_release()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    peak_release = peak - base

    time_ratio = t_release / t_bincount
    mem_ratio = peak_release / input_bytes
    print(f"fedeval hierarchical histogram benchmark (h={HEIGHT}, b={BRANCHING}, DistDP eps=1)")
    print(f"  examples            {n:>14,d}")
    print(f"  clients             {fed.n_clients:>14,d}")
    print(f"  input arrays        {input_bytes / 2**20:>14.1f} MiB")
    print(f"  Federation build    {t_build:>14.3f} s   (outside the timed region)")
    print(f"  release_hierarchy   {t_release:>14.3f} s   (best of {args.repeats})")
    print(f"  np.bincount pass    {t_bincount:>14.3f} s   (best of {args.repeats})")
    print(f"  roc_auc_score       {t_auc:>14.3f} s   (best of {args.repeats})")
    print(f"  release peak memory {peak_release / 2**20:>14.1f} MiB (tracemalloc)")
    print(f"  sanity: max |leaf - bincount| = {max_dev:.0f} (noise sd per node {noise_sd:.1f})")
    print(
        f"  target time   release <= {TIME_TARGET:g} x bincount: {time_ratio:6.2f} x  "
        f"{'PASS' if time_ratio <= TIME_TARGET else 'FAIL'}"
    )
    print(
        f"  target memory peak <= {MEMORY_TARGET:g} x input arrays: {mem_ratio:6.2f} x  "
        f"{'PASS' if mem_ratio <= MEMORY_TARGET else 'FAIL'}"
    )


if __name__ == "__main__":
    main()
