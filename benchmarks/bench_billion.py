"""Benchmark: one billion predictions, evaluated privately end to end (issue 28).

Writes a partitioned Parquet data set of ``--rows`` rows (default 10^9): a score
(float64, Beta(2, 5) for negatives and Beta(5, 2) for positives), a 0/1 label
(int8, 30% positive) and a client id (int64, uniform over ``--rows / 10``
clients, so every client's rows are spread over the files), in files of 10M rows
with 1M-row row groups. Then, each in a fresh process (so its peak RSS is its
own), interleaved ``--repeats`` times:

* the evaluation: ``fe.evaluate(fe.scan(dir, client="client"),
  fe.DistributedDP(epsilon=1.0))``, then the AUC, the ROC and PR curves and 10
  thresholds, timed after a first evaluate of 100 examples (the start-up:
  imports), which is timed too and counts in the end-to-end wall;
* the floor: a pyarrow batch scan of the three columns that bins and counts
  (score, label) at the height the evaluation chose.

Targets (printed with PASS/FAIL, not asserted): start-up + evaluation ≤ 60 s
wall, ≤ 1 GB peak RSS, evaluation ≤ 2× the floor of the same round. Every line carries the load
average (``uptime``): on a machine shared with other work the figures are noisy.

Disk: about 13 GB per 10^9 rows (check ``df -h`` first). Not part of CI.

Run: ``PYTHONPATH=src python benchmarks/bench_billion.py --rows 100000000 --dir
/path/with/space`` (10^8 first); ``--keep`` keeps the data set for another run
(found again by ``--dir`` and ``--rows``), otherwise it is deleted at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

ROWS_PER_FILE = 10_000_000
ROW_GROUP = 1 << 20
TARGET_WALL_S = 60.0
TARGET_RSS_MB = 1024.0
TARGET_RATIO = 2.0
SEED = 0


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


# --------------------------------------------------------------------- data
def write_file(path: Path, rows: int, n_clients: int, seed: int) -> None:
    """One file of ``rows`` rows, written in 1M-row row groups."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([("score", pa.float64()), ("label", pa.int8()), ("client", pa.int64())])
    gen = np.random.default_rng([SEED, seed])
    tmp = path.with_suffix(".tmp")
    with pq.ParquetWriter(tmp, schema, compression="snappy") as w:
        for lo in range(0, rows, ROW_GROUP):
            m = min(ROW_GROUP, rows - lo)
            labels = (gen.random(m) < 0.3).astype(np.int8)
            scores = np.where(labels == 1, gen.beta(5.0, 2.0, m), gen.beta(2.0, 5.0, m))
            clients = gen.integers(0, n_clients, m)
            w.write_table(
                pa.table({"score": scores, "label": labels, "client": clients}, schema=schema)
            )
    tmp.rename(path)  # a file is there only once it is whole


def generate(directory: Path, rows: int, n_clients: int, jobs: int) -> float:
    """Write the data set (files already there, from an earlier ``--keep``, are kept)."""
    directory.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    todo = []
    for k, lo in enumerate(range(0, rows, ROWS_PER_FILE)):
        path = directory / f"part-{k:05d}.parquet"
        if not path.exists():
            todo.append((path, min(ROWS_PER_FILE, rows - lo), n_clients, k))
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for f in [pool.submit(write_file, *args) for args in todo]:
            f.result()
    return time.perf_counter() - t0


# -------------------------------------------------------------------- steps
def run_evaluation(directory: Path) -> dict[str, Any]:
    import fedeval as fe

    # Start-up (imports on the first evaluate, issue 28's start-up item) is timed apart
    # from the data pass, on a 100-example federation.
    t0 = time.perf_counter()
    tiny = np.linspace(0.01, 0.99, 100)
    fe.evaluate(fe.Federation.from_arrays(tiny, tiny > 0.5), fe.DistributedDP(epsilon=1.0))
    startup = time.perf_counter() - t0
    t0 = time.perf_counter()
    src = fe.scan(directory, client="client", progress=False)
    ev = fe.evaluate(src, fe.DistributedDP(epsilon=1.0))
    _ = ev.roc_auc
    ev.roc_curve()
    ev.precision_recall_curve()
    ev.at_threshold(np.linspace(0.05, 0.95, 10))
    return {
        "wall_s": time.perf_counter() - t0,
        "startup_s": startup,
        "height": int(ev.parameters["height"]),
        "n_clients": int(src.n_clients),
        "roc_auc": float(ev.roc_auc),
    }


def run_floor(directory: Path, height: int) -> dict[str, Any]:
    import pyarrow.dataset as pads

    t0 = time.perf_counter()
    leaves = 1 << height
    counts = np.zeros(2 * leaves, dtype=np.int64)
    for rb in pads.dataset(directory).to_batches(columns=["score", "label", "client"]):
        s = rb.column(0).to_numpy()
        y = rb.column(1).to_numpy()
        keys = np.minimum((s * leaves).astype(np.int64), leaves - 1) + y.astype(np.int64) * leaves
        counts += np.bincount(keys, minlength=2 * leaves)
    return {"wall_s": time.perf_counter() - t0}


def child(step: str, directory: Path, height: int) -> None:
    out = run_evaluation(directory) if step == "evaluate" else run_floor(directory, height)
    out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps(out))


def in_child(step: str, directory: Path, height: int = 0) -> dict[str, Any]:
    env = dict(os.environ)
    # the caller's PYTHONPATH first (to measure another checkout), then this one's src
    src = str(Path(__file__).resolve().parents[1] / "src")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), src) if p)
    cmd = [sys.executable, __file__, "--child", step, "--dir", str(directory)]
    cmd += ["--height", str(height)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"{step} failed:\n{out.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


# ------------------------------------------------------------------- driver
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=float, default=1e9, help="rows to write (default 10^9)")
    parser.add_argument("--clients", type=float, default=None, help="default rows / 10")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="writer processes")
    parser.add_argument("--dir", default=None, help="where the data set is written")
    parser.add_argument("--keep", action="store_true", help="keep the data set afterwards")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--height", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, Path(args.dir), args.height)
        return
    rows = int(args.rows)
    n_clients = int(args.clients or max(1, rows // 10))
    base = Path(args.dir) if args.dir else Path(tempfile.gettempdir())
    directory = base / f"fedeval-billion-{rows}-{n_clients}"
    free_gb = shutil.disk_usage(base).free / 1e9
    print(
        f"{rows:,} rows, {n_clients:,} clients at {directory} ({free_gb:.0f} GB free), "
        f"{os.cpu_count()} CPUs, load average {_load()}",
        flush=True,
    )
    try:
        t_write = generate(directory, rows, n_clients, args.jobs)
        size_gb = sum(f.stat().st_size for f in directory.glob("*.parquet")) / 1e9
        print(f"written in {t_write:.0f} s ({size_gb:.1f} GB); load average {_load()}", flush=True)
        for r in range(args.repeats):
            ev = in_child("evaluate", directory)
            fl = in_child("floor", directory, ev["height"])
            ratio = ev["wall_s"] / fl["wall_s"]
            end_to_end = ev["startup_s"] + ev["wall_s"]
            verdict = [
                "PASS" if end_to_end <= TARGET_WALL_S else "FAIL",
                "PASS" if ev["rss_mb"] <= TARGET_RSS_MB else "FAIL",
                "PASS" if ratio <= TARGET_RATIO else "FAIL",
            ]
            print(
                f"round {r + 1}: evaluate {ev['wall_s']:.1f} s + start-up {ev['startup_s']:.1f} s "
                f"(≤ {TARGET_WALL_S:g} s {verdict[0]}), "
                f"peak RSS {ev['rss_mb']:.0f} MB (≤ {TARGET_RSS_MB:g} MB {verdict[1]}); "
                f"pyarrow floor {fl['wall_s']:.1f} s, {fl['rss_mb']:.0f} MB → {ratio:.2f}× "
                f"(≤ {TARGET_RATIO:g}× {verdict[2]}); h={ev['height']}, "
                f"{ev['n_clients']:,} clients, AUC {ev['roc_auc']:.4f}; load average {_load()}",
                flush=True,
            )
    finally:
        if not args.keep:
            shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
