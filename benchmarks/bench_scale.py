"""Benchmark: from arrays and files to metrics at the speed of one pass (issue 15).

Every case runs in a fresh subprocess and is printed next to its baseline,
measured in the same process on the same n: time (best of ``--repeats``) and
peak RSS (the kernel's high-water mark ``VmHWM``, reset through
``/proc/self/clear_refs`` before each measurement, so each peak is that step's
own, inputs included).

Baselines: one ``np.bincount`` pass over precomputed (class, leaf) indices of
the same n (and "score→leaf→bincount": computing those indices too), or the
pyarrow read the case replaces.

Cases and targets (printed with PASS/FAIL, not asserted):

* (a) arrays → ``Federation.from_arrays`` → ``evaluate(DistributedDP(1))`` with
  AUC, ROC and PR curves and 10 thresholds, n = 10M and 30M, n/10 clients:
  time ≤ 5× the bincount pass;
* (b) the same from a 10M-row Parquet file through ``fe.scan``: time ≤ 2×
  ``pyarrow.parquet.read_table`` of the two columns;
* (c) a 200M-row Parquet dataset (written first, deleted afterwards) through
  ``fe.scan``: peak RSS ≤ 1.5 GB and time ≤ 2× a pyarrow batch scan that bins
  and counts every batch;
* (d) local DP ε = 5 at 30M (one example per client): time ≤ 5× the bincount pass;
* (e) the hierarchy release at height 22 (10M examples, SA and DistDP): time ≤ 3×
  the bincount pass over its 2·2^22 (class, leaf) indices (the three timed
  interleaved, ≥ 3 rounds, best of each; the peak RSS of each alone);
* (f) ``fe.scan`` of 30M Parquet rows with a client column (3M client ids, each
  client's rows spread over the 3 files), ``evaluate`` under example-level
  ``DistributedDP(1)``: time ≤ 2× and peak RSS ≤ 600 MB; and under
  ``DistributedDP(1, unit="client", contribution_bound=B)`` (``--bound``, default 5,
  binding for most clients): time ≤ 3×, both against a pyarrow batch scan of the three
  columns that bins and counts every batch (the scan of score and label alone is
  printed too). The steps run interleaved, ≥ 3 rounds, best time of each; the peak
  RSS of each is taken in a fresh process (imports included);
* (g) the faithful path (every client's encoder and its own Pólya share, in blocks of
  clients) of ``evaluate`` under ``DistributedDP(1)``, one example per client: 1M
  clients at heights 4 and 7, and 10K clients at the planner's height (9): ≥ 1M
  clients per minute, printed as a ratio to drawing every client's share alone (the
  floor the sampler sets: the draws grow with clients × vector length) and to the
  fast path;
* (h) ``fe.scan`` of a Dask DataFrame of 30M rows (30 partitions) on a local cluster:
  1 worker × 1 thread ≤ 1.3× the in-process scan, 2 workers × 1 thread ≤ 0.7× the
  1-worker time (on 2 otherwise idle cores); 1 worker × 2 threads and a one-pass
  Dask floor (a bincount per partition) are printed too. Needs ``fedeval[dask]``.

Run: ``PYTHONPATH=src python benchmarks/bench_scale.py`` (all cases) or
``--cases a,e --scale 0.1`` (sizes × 0.1, for a quick look). ``--dir`` is where
the Parquet files are written (default: a temporary directory under /tmp); the
200M-row dataset needs about 2 GB of free disk, case (f) 0.4 GB. Every case prints
the load average (``uptime``) after it: figures taken on a loaded machine are noisy.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

TARGETS = {"a": 5.0, "b": 2.0, "c": 2.0, "d": 5.0, "e": 3.0, "f": 2.0}
RSS_TARGET_C_MB = 1536.0
RSS_TARGET_F_MB = 600.0
TARGET_F_BOUND = 3.0
TARGETS["g"] = float("inf")  # the faithful path is held to clients per minute
CLIENTS_PER_MINUTE_G = 1e6
TARGET_H_ONE = 1.3
TARGET_H_TWO = 0.7
SEED = 0


# --------------------------------------------------------------- measurement
def _reset_peak() -> None:
    # not Linux, or not allowed: the peaks then include earlier steps
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def _peak_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def measure(fn: Callable[[], Any], repeats: int) -> tuple[float, float]:
    """Best wall time over ``repeats`` runs, and the peak RSS (MB) over them."""
    best = float("inf")
    _reset_peak()
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best, _peak_mb()


def interleaved(steps: dict[str, Callable[[], Any]], rounds: int) -> dict[str, Any]:
    """Every step once per round, in turn, so that all see the same machine load.

    Returns, per step ``k``: ``k_s`` (best time), ``k_all_s`` (every round's time)
    and ``k_rss_mb`` (the highest peak).
    """
    times: dict[str, list[float]] = {k: [] for k in steps}
    peak = dict.fromkeys(steps, 0.0)
    for _ in range(rounds):
        for k, fn in steps.items():
            t, rss = measure(fn, 1)
            times[k].append(t)
            peak[k] = max(peak[k], rss)
    out: dict[str, Any] = {}
    for k in steps:
        out[f"{k}_s"], out[f"{k}_all_s"], out[f"{k}_rss_mb"] = min(times[k]), times[k], peak[k]
    return out


def spread(row: dict[str, Any], case: str, base: str) -> str:
    """``min–max`` over the rounds of ``case / base`` (same round), when both were interleaved."""
    a, b = row.get(f"{case}_all_s"), row.get(f"{base}_all_s")
    if not a or not b or len(a) != len(b):
        return ""
    ratios = [x / y for x, y in zip(a, b, strict=True)]
    return f" [rounds: {min(ratios):.2f}–{max(ratios):.2f}×, {len(ratios)} rounds]"


# --------------------------------------------------------------------- data
def make_arrays(n: int, seed: int = SEED) -> tuple[Any, Any]:
    """Scores (float64) and int8 labels: Beta(2, 5) negatives, Beta(5, 2) positives (30%)."""
    gen = np.random.default_rng(seed)
    labels = (gen.random(n) < 0.3).astype(np.int8)
    scores = np.where(labels == 1, gen.beta(5.0, 2.0, n), gen.beta(2.0, 5.0, n))
    return scores, labels


def leaf_keys(scores: Any, labels: Any, height: int) -> Any:
    """(class, leaf) index of every example in a binary tree of ``height`` over [0, 1]."""
    leaves = 1 << height
    leaf = np.minimum((scores * leaves).astype(np.int64), leaves - 1)
    return leaf + labels.astype(np.int64) * leaves


def bincount_baseline(scores: Any, labels: Any, height: int, repeats: int) -> dict[str, float]:
    keys = [leaf_keys(scores, labels, height)]
    size = 2 << height
    t_bc, rss_bc = measure(lambda: np.bincount(keys[0], minlength=size), repeats)
    keys.clear()
    t_full, _ = measure(
        lambda: np.bincount(leaf_keys(scores, labels, height), minlength=size), repeats
    )
    return {"bincount_s": t_bc, "bincount_rss_mb": rss_bc, "score_leaf_bincount_s": t_full}


def all_metrics(ev: Any) -> None:
    """AUC, ROC and PR curves, and 10 thresholds (what case (a) asks of one evaluation).

    The 10 thresholds are asked in one call, as ``fedeval evaluate --thresholds``
    and the report do (``at_threshold`` is vectorised; ten separate calls add
    ~1.5 ms of per-call overhead each, ~1× the 10M bincount baseline).
    """
    _ = ev.roc_auc
    ev.roc_curve()
    ev.precision_recall_curve()
    ev.at_threshold(np.linspace(0.05, 0.95, 10))


def write_parquet(
    path: Path,
    n: int,
    *,
    files: int = 1,
    row_group: int = 1 << 20,
    n_clients: int | None = None,
) -> None:
    """``n`` rows of (score, label) in ``files`` Parquet files, plus a ``client`` column
    (int64 ids uniform on 0..n_clients-1, so every client's rows are spread over the
    files) when ``n_clients`` is given."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.mkdir(parents=True, exist_ok=True)
    per_file = -(-n // files)
    chunk = 10_000_000
    written = 0
    fields = [("score", pa.float64()), ("label", pa.int8())]
    if n_clients is not None:
        fields.append(("client", pa.int64()))
    for f in range(files):
        rows = min(per_file, n - written)
        with pq.ParquetWriter(
            path / f"part-{f:04d}.parquet", pa.schema(fields), compression="snappy"
        ) as w:
            done = 0
            while done < rows:
                m = min(chunk, rows - done)
                s, y = make_arrays(m, seed=written + done)
                columns: dict[str, Any] = {"score": s, "label": y}
                if n_clients is not None:
                    ids = np.random.default_rng(SEED + 7 + written + done).integers(0, n_clients, m)
                    columns["client"] = ids
                w.write_table(pa.table(columns), row_group_size=row_group)
                done += m
        written += rows


def pyarrow_floor(path: Path, columns: list[str], height: int) -> Callable[[], None]:
    """A pyarrow batch scan of ``columns`` that bins and counts (score, label) of every batch."""
    import pyarrow.dataset as pads

    def scan() -> None:
        counts = np.zeros(2 << height, dtype=np.int64)
        for rb in pads.dataset(path).to_batches(columns=columns):
            s = rb.column(columns.index("score")).to_numpy()
            y = rb.column(columns.index("label")).to_numpy()
            counts += np.bincount(leaf_keys(s, y, height), minlength=2 << height)

    return scan


# -------------------------------------------------------------------- cases
def case_a(n: int, repeats: int) -> dict[str, Any]:
    import fedeval as fe

    scores, labels = make_arrays(n)
    clients = np.random.default_rng(SEED + 1).integers(0, n // 10, n)
    heights: list[int] = []

    def run() -> None:
        fed = fe.Federation.from_arrays(scores, labels, clients)
        ev = fe.evaluate(fed, fe.DistributedDP(1.0), rng=0)
        all_metrics(ev)
        heights.append(int(ev.parameters["height"]))

    t, rss = measure(run, repeats)
    base = bincount_baseline(scores, labels, heights[-1], repeats)
    return {
        "case_s": t,
        "case_rss_mb": rss,
        "height": heights[-1],
        **base,
        **encode_threads(scores, labels, heights[-1], repeats),
    }


def encode_threads(scores: Any, labels: Any, height: int, repeats: int) -> dict[str, float]:
    """Threads where they pay? The leaf encoding (``count_bins``) on 1 thread and on
    ``ENCODE_THREADS`` (2 on this machine): fedeval keeps the threads only if they win."""
    grid_module = importlib.import_module("fedeval.sketches.grid")
    grid = grid_module.UniformGrid(1 << height)
    threads = grid_module.ENCODE_THREADS

    def encode() -> Any:
        return grid_module.count_bins(grid, scores, labels, 2)

    try:
        grid_module.ENCODE_THREADS = 1
        t_one, _ = measure(encode, repeats)
    finally:
        grid_module.ENCODE_THREADS = threads
    t_two, _ = measure(encode, repeats)
    return {"encode_1_thread_s": t_one, f"encode_{threads}_threads_s": t_two}


def case_b(n: int, repeats: int, workdir: Path) -> dict[str, Any]:
    import pyarrow.parquet as pq

    import fedeval as fe

    path = workdir / "b"
    write_parquet(path, n)
    file = path / "part-0000.parquet"
    t_read, rss_read = measure(lambda: pq.read_table(file, columns=["score", "label"]), repeats)

    def run() -> None:
        all_metrics(fe.evaluate(fe.scan(file), fe.DistributedDP(1.0), rng=0))

    # Threads where they pay: the scan with its reader thread (the default) and
    # without it, interleaved so both see the same machine load.
    scan_module = importlib.import_module("fedeval.data.scan")  # `import fedeval` is lazy
    depth = scan_module.PREFETCH_DEPTH
    t, rss, t_seq = float("inf"), 0.0, float("inf")
    for _ in range(max(repeats, 3)):
        scan_module.PREFETCH_DEPTH = depth
        t_i, rss_i = measure(run, 1)
        scan_module.PREFETCH_DEPTH = 0
        t_j, _ = measure(run, 1)
        t, rss, t_seq = min(t, t_i), max(rss, rss_i), min(t_seq, t_j)
    scan_module.PREFETCH_DEPTH = depth
    # Floors for the target, same run: the same evaluation from arrays already in
    # memory (no file at all), and the in-memory route a user would otherwise take.
    table = pq.read_table(file, columns=["score", "label"])
    scores, labels = table["score"].to_numpy(), table["label"].to_numpy()
    t_mem, _ = measure(
        lambda: all_metrics(
            fe.evaluate(fe.Federation.from_arrays(scores, labels), fe.DistributedDP(1.0), rng=0)
        ),
        repeats,
    )

    def read_then_evaluate() -> None:
        tab = pq.read_table(file, columns=["score", "label"])
        fed = fe.Federation.from_arrays(tab["score"].to_numpy(), tab["label"].to_numpy())
        all_metrics(fe.evaluate(fed, fe.DistributedDP(1.0), rng=0))

    t_read_eval, rss_read_eval = measure(read_then_evaluate, repeats)
    shutil.rmtree(path)
    return {
        "case_s": t,
        "case_rss_mb": rss,
        "read_table_s": t_read,
        "read_table_rss_mb": rss_read,
        "no_reader_thread_s": t_seq,
        "in_memory_evaluate_s": t_mem,
        "read_table_then_evaluate_s": t_read_eval,
        "read_table_then_evaluate_rss_mb": rss_read_eval,
    }


def case_c(n: int, repeats: int, workdir: Path) -> dict[str, Any]:
    import fedeval as fe

    path = workdir / "c"
    t0 = time.perf_counter()
    write_parquet(path, n, files=max(1, n // 10_000_000))
    t_write = time.perf_counter() - t0
    heights: list[int] = []

    def run() -> None:
        ev = fe.evaluate(fe.scan(path, progress=False), fe.DistributedDP(1.0), rng=0)
        all_metrics(ev)
        heights.append(int(ev.parameters["height"]))

    try:
        t, rss = measure(run, repeats)
        h = heights[-1]

        t_scan, rss_scan = measure(pyarrow_floor(path, ["score", "label"], h), repeats)
    finally:
        shutil.rmtree(path)
    return {
        "case_s": t,
        "case_rss_mb": rss,
        "height": h,
        "pyarrow_scan_s": t_scan,
        "pyarrow_scan_rss_mb": rss_scan,
        "write_s": t_write,
    }


def case_d(n: int, repeats: int) -> dict[str, Any]:
    import fedeval as fe

    scores, labels = make_arrays(n)
    heights: list[int] = []

    def run() -> None:
        fed = fe.Federation.from_arrays(scores, labels)
        ev = fe.evaluate(fed, fe.LocalDP(5.0), rng=0)
        all_metrics(ev)
        heights.append(int(ev.parameters["height"]))

    t, rss = measure(run, repeats)
    base = bincount_baseline(scores, labels, heights[-1], repeats)
    return {"case_s": t, "case_rss_mb": rss, "height": heights[-1], **base}


def case_e(n: int, repeats: int) -> dict[str, Any]:
    import fedeval as fe
    from fedeval.aggregation import release
    from fedeval.sketches.hierarchy import HierarchySketch, HierarchySpec

    scores, labels = make_arrays(n)
    fed = fe.Federation.from_arrays(scores, labels)
    sketch = HierarchySketch(HierarchySpec(22))

    def sa() -> None:
        release(fed, sketch, fe.SecureAggregation())

    def dp() -> None:
        release(fed, sketch, fe.DistributedDP(1.0), rng=0)

    # Peak RSS of each alone (also the warm calls), then the times interleaved with the
    # bincount over precomputed keys, so that all three see the same machine load.
    _, rss_sa = measure(sa, 1)
    _, rss_dp = measure(dp, 1)
    base = bincount_baseline(scores, labels, 22, 1)
    keys = [leaf_keys(scores, labels, 22)]
    timed = interleaved(
        {"sa": sa, "dp": dp, "bincount": lambda: np.bincount(keys[0], minlength=2 << 22)},
        max(repeats, 3),
    )
    keys.clear()
    return {
        **base,
        "case_s": timed["sa_s"],
        "case_rss_mb": rss_sa,
        "distdp_s": timed["dp_s"],
        "distdp_all_s": timed["dp_all_s"],
        "distdp_rss_mb": rss_dp,
        "height": 22,
        "bincount_s": timed["bincount_s"],
        "bincount_all_s": timed["bincount_all_s"],
    }


def case_f(n: int, repeats: int, workdir: Path, bound: int) -> dict[str, Any]:
    """``fe.scan`` with a client column (n/10 clients, ids spread over every file)."""
    import fedeval as fe

    path = workdir / "f"
    t0 = time.perf_counter()
    write_parquet(path, n, files=max(1, n // 10_000_000), n_clients=max(1, n // 10))
    t_write = time.perf_counter() - t0
    heights: list[int] = []

    def example_level() -> None:
        src = fe.scan(path, client="client", progress=False)
        ev = fe.evaluate(src, fe.DistributedDP(1.0), rng=0)
        all_metrics(ev)
        heights.append(int(ev.parameters["height"]))

    def client_level() -> None:
        src = fe.scan(path, client="client", progress=False)
        privacy = fe.DistributedDP(1.0, unit="client", contribution_bound=bound)
        all_metrics(fe.evaluate(src, privacy, rng=0))

    try:
        example_level()  # warm: imports, and the height of the floor's bincount
        h = heights[-1]
        steps = {
            "case": example_level,
            "client_bound": client_level,
            "pyarrow_scan": pyarrow_floor(path, ["score", "label", "client"], h),
            "pyarrow_scan_no_client": pyarrow_floor(path, ["score", "label"], h),
        }
        out: dict[str, Any] = {"height": h, "bound": bound, "write_s": t_write}
        out.update(interleaved(steps, max(repeats, 3)))
        # Peaks in one process include what earlier steps left in the allocators
        # (writing the data, pyarrow's read-ahead): each is taken again in a fresh one.
        for key in ("case", "client_bound", "pyarrow_scan"):
            out[f"{key}_rss_mb"] = fresh_peak_mb(key, path, h, bound)
    finally:
        shutil.rmtree(path)
    return out


def fresh_peak_mb(step: str, path: Path, height: int, bound: int) -> float:
    """Peak RSS (MB) of one case-(f) step run alone in a fresh process, imports included."""
    cmd = [sys.executable, __file__, "--rss-of", step, "--dir", str(path)]
    cmd += ["--height", str(height), "--bound", str(bound)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def run_step_for_peak(step: str, path: Path, height: int, bound: int) -> float:
    import fedeval as fe

    if step == "pyarrow_scan":
        pyarrow_floor(path, ["score", "label", "client"], height)()
    else:
        privacy = (
            fe.DistributedDP(1.0)
            if step == "case"
            else fe.DistributedDP(1.0, unit="client", contribution_bound=bound)
        )
        all_metrics(fe.evaluate(fe.scan(path, client="client", progress=False), privacy, rng=0))
    return _peak_mb()


def case_g(n_clients: int, height: int | None, repeats: int) -> dict[str, Any]:
    """The faithful path (every client's encoder and Pólya share), one example per client.

    Floors in the same process: the fast path; drawing every client's share
    alone, in blocks of 2^21 cells as the faithful path does (``shares_only``:
    ``shares_sum`` per block, the sampler the faithful path uses, which draws a
    block's shares as compound-Poisson jumps), the work the faithful path
    cannot avoid with that sampler; and the same blocks drawn cell by cell
    (``shares_cellwise``: numpy's negative binomial per cell, the sampler the
    faithful path used before issue 28's jump sampler).
    """
    import fedeval as fe
    from fedeval.privacy.mechanism_for import mechanism_for
    from fedeval.sketches.hierarchy import HierarchySketch, HierarchySpec

    scores, labels = make_arrays(n_clients)
    fed = fe.Federation.from_arrays(scores, labels)
    h = height or int(fe.evaluate(fed, fe.DistributedDP(1.0), rng=0).parameters["height"])
    sketch = HierarchySketch(HierarchySpec(h))
    noise = mechanism_for(fe.DistributedDP(1.0), sketch, n_clients=n_clients).noise
    assert noise is not None
    size = sketch.noise_size
    per_block = max(1, (1 << 21) // size)

    def shares_only() -> None:
        gen = np.random.default_rng(0)
        for lo in range(0, n_clients, per_block):
            noise.shares_sum(min(per_block, n_clients - lo), size, gen)

    def shares_cellwise() -> None:
        gen = np.random.default_rng(0)
        for lo in range(0, n_clients, per_block):
            noise.share(min(per_block, n_clients - lo) * size, gen)

    def run(path: str) -> Callable[[], None]:
        return lambda: all_metrics(
            fe.evaluate(fed, fe.DistributedDP(1.0), path=path, rng=0, height=h)
        )

    steps = {
        "case": run("faithful"),
        "shares_only": shares_only,
        "fast_path": run("fast"),
        "shares_cellwise": shares_cellwise,
    }
    out: dict[str, Any] = {"height": h, "noise_size": size, "n_clients": n_clients}
    out.update(interleaved(steps, max(repeats, 3)))
    out["clients_per_minute"] = [n_clients / t * 60.0 for t in out["case_all_s"]]
    return out


def case_h(n: int, repeats: int, workdir: Path) -> dict[str, Any]:
    """``fe.scan`` of a Dask DataFrame (one partition per 1M-row row group) on a local
    cluster of 1 worker × 1 thread, 1 × 2 and 2 × 1, against the in-process scan of the
    same files and a one-pass Dask floor (a bincount per partition, summed)."""
    import dask
    import dask.dataframe as dd
    import distributed

    import fedeval as fe

    path = workdir / "h"
    write_parquet(path, n, files=max(1, n // 10_000_000))
    heights: list[int] = []

    def evaluate(source: Any) -> None:
        ev = fe.evaluate(fe.scan(source, progress=False), fe.DistributedDP(1.0), rng=0)
        all_metrics(ev)
        heights.append(int(ev.parameters["height"]))

    out: dict[str, Any] = {}
    try:
        evaluate(path)  # warm, and the height
        out.update(interleaved({"case": partial(evaluate, path)}, max(repeats, 3)))
        h = heights[-1]

        def dask_floor(ddf: Any) -> None:
            def count(df: Any) -> Any:
                s = df["score"].to_numpy()
                y = df["label"].to_numpy()
                return np.bincount(leaf_keys(s, y, h), minlength=2 << h)

            parts = [dask.delayed(count)(p) for p in ddf[["score", "label"]].to_delayed()]
            dask.compute(dask.delayed(sum)(parts))

        for workers, threads in ((1, 1), (1, 2), (2, 1)):
            cluster = distributed.LocalCluster(
                n_workers=workers,
                threads_per_worker=threads,
                processes=True,
                dashboard_address=None,
            )
            try:
                with distributed.Client(cluster):
                    ddf = dd.read_parquet(str(path), split_row_groups=True)
                    evaluate(ddf)  # warm the workers
                    key = f"dask_{workers}x{threads}"
                    steps = {key: partial(evaluate, ddf), f"{key}_floor": partial(dask_floor, ddf)}
                    out.update(interleaved(steps, max(repeats, 3)))
                    out["partitions"] = int(ddf.npartitions)
            finally:
                cluster.close()
    finally:
        shutil.rmtree(path)
    out["height"] = heights[-1]
    return out


def run_case(
    name: str, scale: float, repeats: int, workdir: Path, bound: int = 5
) -> list[dict[str, Any]]:
    m = 1_000_000
    if name == "a":
        return [
            {"case": f"a n={int(k * scale)}", **case_a(int(k * scale), repeats)}
            for k in (10 * m, 30 * m)
        ]
    if name == "b":
        return [
            {"case": f"b n={int(10 * m * scale)}", **case_b(int(10 * m * scale), repeats, workdir)}
        ]
    if name == "c":
        n = int(200 * m * scale)
        return [{"case": f"c n={n}", **case_c(n, 1, workdir)}]
    if name == "d":
        return [{"case": f"d n={int(30 * m * scale)}", **case_d(int(30 * m * scale), repeats)}]
    if name == "e":
        return [{"case": f"e n={int(10 * m * scale)}", **case_e(int(10 * m * scale), repeats)}]
    if name == "f":
        n = int(30 * m * scale)
        return [{"case": f"f n={n}", **case_f(n, repeats, workdir, bound)}]
    if name == "g":
        rows = []
        for clients, height in (
            (int(m * scale), 4),
            (int(m * scale), 7),
            (int(10_000 * scale), None),
        ):
            rows.append({"case": f"g n_clients={clients}", **case_g(clients, height, repeats)})
        return rows
    if name == "h":
        n = int(30 * m * scale)
        return [{"case": f"h n={n}", **case_h(n, repeats, workdir)}]
    raise ValueError(f"unknown case {name!r}")


def report_dask(row: dict[str, Any]) -> str:
    """Best times; ranges are over the rounds (the configurations do not run interleaved)."""
    one, two = row["dask_1x1_s"], row["dask_2x1_s"]
    r1 = one / row["case_s"]
    r2 = two / one

    def rng(key: str) -> str:
        t = row[f"{key}_all_s"]
        return f" ({min(t):.3f}–{max(t):.3f} s over {len(t)} rounds)"

    lines = [
        f"({row['case']}) in-process scan {row['case_s']:.3f} s{rng('case')}, peak RSS "
        f"{row['case_rss_mb']:.0f} MB; {row['partitions']} partitions, h={row['height']}",
        f"      1 worker × 1 thread: {one:.3f} s{rng('dask_1x1')} → {r1:.2f}× the in-process scan "
        f"(target ≤ {TARGET_H_ONE:g}×) {'PASS' if r1 <= TARGET_H_ONE else 'FAIL'}; "
        f"{one / row['dask_1x1_floor_s']:.2f}× its one-pass Dask floor",
        f"      1 worker × 2 threads: {row['dask_1x2_s']:.3f} s{rng('dask_1x2')} → "
        f"{row['dask_1x2_s'] / row['case_s']:.2f}× the in-process scan; "
        f"{row['dask_1x2_s'] / row['dask_1x2_floor_s']:.2f}× its floor",
        f"      2 workers × 1 thread: {two:.3f} s{rng('dask_2x1')} → {r2:.2f}× the 1-worker time "
        f"(target ≤ {TARGET_H_TWO:g}× on 2 idle cores) {'PASS' if r2 <= TARGET_H_TWO else 'FAIL'}; "
        f"{two / row['dask_2x1_floor_s']:.2f}× its floor",
    ]
    return "\n".join(lines)


# ------------------------------------------------------------------- driver
def _load() -> str:
    """The 1, 5 and 15 minute load averages (``uptime``), to read a figure by."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def report(row: dict[str, Any]) -> str:
    name = row["case"][0]
    if name in "ade":
        base, what = row["bincount_s"], "bincount"
    elif name == "b":
        base, what = row["read_table_s"], "read_table(2 cols)"
    elif name == "f":
        base, what = row["pyarrow_scan_s"], "pyarrow scan(score, label, client)+bincount"
    elif name == "g":
        base, what = row["shares_only_s"], "every client's share drawn alone"
    elif name == "h":
        base, what = row["case_s"], "in-process scan"
    else:
        base, what = row["pyarrow_scan_s"], "pyarrow scan+bincount"
    if name == "h":
        return report_dask(row)
    ratio = row["case_s"] / base
    ok = "PASS" if ratio <= TARGETS[name] else "FAIL"
    lines = [
        f"({row['case']}) {row['case_s']:.3f} s, peak RSS {row['case_rss_mb']:.0f} MB | "
        f"{what} {base:.3f} s → {ratio:.2f}× (target ≤ {TARGETS[name]:g}×) {ok}"
    ]
    lines[0] += spread(row, "case", "pyarrow_scan" if name == "f" else "shares_only")
    if name == "g":
        per_min = row["clients_per_minute"]
        ok_g = "PASS" if max(per_min) >= CLIENTS_PER_MINUTE_G else "FAIL"
        lines[0] += (
            f"\n      h={row['height']} ({row['noise_size']} noise variables per client): "
            f"{min(per_min):,.0f}–{max(per_min):,.0f} clients per minute "
            f"(target ≥ {CLIENTS_PER_MINUTE_G:,.0f}) {ok_g}; "
            f"{row['case_s'] / row['fast_path_s']:.1f}× the fast path"
            f"{spread(row, 'case', 'fast_path')}"
        )
        cellwise = row["shares_cellwise_s"]
        lines[0] += (
            f"\n      the same shares drawn cell by cell (the former sampler): {cellwise:.3f} s, "
            f"{row['n_clients'] / cellwise * 60.0:,.0f} clients per minute at best; "
            f"the faithful path takes {row['case_s'] / cellwise:.3f}× that"
            f"{spread(row, 'case', 'shares_cellwise')}"
        )
    extra = {
        k: v
        for k, v in row.items()
        if k not in {"case", "case_s", "case_rss_mb"} and not isinstance(v, list)
    }
    lines.append(
        "      "
        + ", ".join(
            f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in extra.items()
        )
    )
    if name == "c":
        ok_rss = "PASS" if row["case_rss_mb"] <= RSS_TARGET_C_MB else "FAIL"
        lines.append(f"      peak RSS target ≤ {RSS_TARGET_C_MB:.0f} MB: {ok_rss}")
    if name == "e":
        lines.append(
            f"      DistDP at h=22: {row['distdp_s'] / base:.2f}× the bincount"
            f"{spread(row, 'distdp', 'bincount')}"
        )
    if name == "f":
        ok_rss = "PASS" if row["case_rss_mb"] <= RSS_TARGET_F_MB else "FAIL"
        lines.append(f"      peak RSS target ≤ {RSS_TARGET_F_MB:.0f} MB: {ok_rss}")
        ratio_b = row["client_bound_s"] / base
        ok_b = "PASS" if ratio_b <= TARGET_F_BOUND else "FAIL"
        lines.append(
            f"      client-level, contribution bound {row['bound']}: "
            f"{row['client_bound_s']:.3f} s, peak RSS {row['client_bound_rss_mb']:.0f} MB → "
            f"{ratio_b:.2f}× (target ≤ {TARGET_F_BOUND:g}×) {ok_b}"
            f"{spread(row, 'client_bound', 'pyarrow_scan')}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", default="a,b,c,d,e,f,g,h")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every n by this")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--dir", default=None, help="where Parquet files are written")
    parser.add_argument(
        "--bound", type=int, default=5, help="case f: the client-level contribution bound"
    )
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--rss-of", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--height", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rss_of:
        print(run_step_for_peak(args.rss_of, Path(args.dir), args.height, args.bound))
        return
    if args.child:
        workdir = Path(args.dir)
        print(json.dumps(run_case(args.child, args.scale, args.repeats, workdir, args.bound)))
        return
    base_dir = Path(args.dir) if args.dir else Path(tempfile.gettempdir())
    workdir = Path(tempfile.mkdtemp(prefix="fedeval-bench-scale-", dir=base_dir))
    free_gb = shutil.disk_usage(workdir).free / 1e9
    print(
        f"numpy {np.__version__}, {os.cpu_count()} CPUs, scale {args.scale:g}, "
        f"repeats {args.repeats}, {free_gb:.0f} GB free at {workdir}, load average {_load()}"
    )
    try:
        for name in args.cases.split(","):
            out = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--child",
                    name,
                    "--scale",
                    str(args.scale),
                    "--repeats",
                    str(args.repeats),
                    "--dir",
                    str(workdir),
                    "--bound",
                    str(args.bound),
                ],
                capture_output=True,
                text=True,
                check=False,
            )
            if out.returncode != 0:
                print(f"({name}) failed:\n{out.stderr[-3000:]}")
                continue
            for row in json.loads(out.stdout.strip().splitlines()[-1]):
                print(report(row), flush=True)
            print(f"      load average after ({name}): {_load()}", flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
