"""Every benchmark behind issue 28's targets, in rounds, with the machine's load: raw logs and one summary.

Issue 28 asks for each target as a range over at least 3 runs, every ratio to
a baseline measured in the same run. Each benchmark already measures its own
baseline; this script runs them all, ``--rounds`` times (default 3), every
round running each benchmark once in the order below, so that a change of
the machine's speed during the session reaches every benchmark in turn:

==============  =====================================================  =========================
name            command (under ``benchmarks/``)                        targets it prints
==============  =====================================================  =========================
scale           ``bench_scale.py --dir DATA`` (cases a–h)              arrays → metrics 10M/30M,
                                                                       scans, LDP 30M, DistDP
                                                                       h = 22, faithful, Dask
evaluate        ``bench_evaluate.py --repeat 3``                       10M examples, all metrics
multiclass      ``bench_multiclass_evaluation.py --reps 3``            10 classes × 1M
tiny            ``bench_tiny.py --calls 300 --sizes 3 100``            ≤ 2 ms per tiny release
calibration     ``bench_calibration_scaling_speed.py``                 user-level DP ≤ 3× SA
startup         ``bench_startup.py --rounds 3``                        first evaluate, CLI CPU
billion         ``bench_billion.py --rows 1e9 --repeats 3 --dir DATA``  only with ``--billion``
==============  =====================================================  =========================

Each benchmark is its own process, with this interpreter and this
environment (``PYTHONPATH`` included, so a checkout measures its own code).
Its output goes to ``OUT/round-K/NAME.txt`` under a header with the start
time, the wall time and the load average before and after. ``OUT/summary.txt``
collects, per benchmark, every round's lines that state a target or a verdict
(containing "target", "PASS", "FAIL", "meets" or "MISSES"), each under its
round's time and load. Nothing is parsed into numbers: the summary quotes what
each benchmark printed.

The billion-row benchmark writes a 14.5 GB data set and runs for about 10
minutes, so it runs once, after the rounds, and only when asked
(``--billion``).

Run: ``PYTHONPATH=src .venv/bin/python benchmarks/run_issue28.py [--rounds 3]
[--only scale,tiny] [--out DIR] [--data DIR] [--billion]``; nothing else should
run on the machine meanwhile (a full set of rounds takes about 10 minutes each).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
VERDICT = re.compile(r"target|PASS|FAIL|meets|MISSES")


def commands(data: Path) -> dict[str, list[str]]:
    """Each benchmark's arguments, by name, in the order a round runs them."""
    return {
        "scale": ["bench_scale.py", "--dir", str(data)],
        "evaluate": ["bench_evaluate.py", "--repeat", "3"],
        "multiclass": ["bench_multiclass_evaluation.py", "--reps", "3"],
        "tiny": ["bench_tiny.py", "--calls", "300", "--sizes", "3", "100"],
        "calibration": ["bench_calibration_scaling_speed.py"],
        "startup": ["bench_startup.py", "--rounds", "3"],
    }


def _stamp() -> str:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"{dt.datetime.now().isoformat(timespec='seconds')}, load average {load}"


def run_one(argv: list[str], out: Path, started: str) -> list[str]:
    """Run one benchmark, write its log, and return its verdict lines (the log's, on failure)."""
    t = time.perf_counter()
    done = subprocess.run(
        [sys.executable, str(HERE / argv[0]), *argv[1:]],
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - t
    header = (
        f"$ {' '.join(['python', 'benchmarks/' + argv[0], *argv[1:]])}\n"
        f"started {started}; ended {_stamp()}; {wall:.1f} s; exit {done.returncode}\n\n"
    )
    out.write_text(
        header + done.stdout + ("\n--- stderr ---\n" + done.stderr if done.stderr else "")
    )
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-5:]
        return [f"FAILED (exit {done.returncode}): see {out}", *tail]
    return [line for line in done.stdout.splitlines() if VERDICT.search(line)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", default=None, help="comma-separated names (default: all)")
    ap.add_argument(
        "--out",
        default=None,
        help="where logs go (default benchmarks/out/issue28-<time>)",
    )
    ap.add_argument(
        "--data",
        default=None,
        help="where data sets are written (default OUT/data; scale needs ~10 GB, billion ~15 GB)",
    )
    ap.add_argument("--billion", action="store_true", help="also run bench_billion.py once")
    args = ap.parse_args()
    when = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = Path(args.out) if args.out else HERE / "out" / f"issue28-{when}"
    data = Path(args.data) if args.data else out / "data"
    data.mkdir(parents=True, exist_ok=True)
    cmds = commands(data)
    names = list(cmds) if args.only is None else args.only.split(",")
    unknown = [n for n in names if n not in cmds and n != "billion"]
    if unknown:
        raise SystemExit(f"unknown benchmark(s) {unknown}; choose from {[*cmds, 'billion']}")
    verdicts: dict[str, list[str]] = {n: [] for n in names}
    runs: list[tuple[str, list[str]]] = [
        (f"round-{k}", [n for n in names if n != "billion"]) for k in range(1, args.rounds + 1)
    ]
    if args.billion or "billion" in names:
        cmds["billion"] = [
            "bench_billion.py", "--rows", "1000000000", "--repeats", "3", "--dir", str(data),
        ]  # fmt: skip
        verdicts["billion"] = []
        runs.append(("billion", ["billion"]))
    print(f"{sys.executable}; logs in {out}; {_stamp()}", flush=True)
    for label, batch in runs:
        (out / label).mkdir(parents=True, exist_ok=True)
        for name in batch:
            started = _stamp()
            print(f"{label} {name}: {started}", flush=True)
            found = run_one(cmds[name], out / label / f"{name}.txt", started)
            verdicts[name].append(f"  [{label}, started {started}]")
            verdicts[name].extend("    " + line.strip() for line in found)
    summary = [f"issue 28 benchmarks, {args.rounds} rounds; {sys.executable}; ended {_stamp()}"]
    for name, lines in verdicts.items():
        summary.append(f"\n{name}: python benchmarks/{' '.join(cmds[name])}")
        summary.extend(lines)
    text = "\n".join(summary) + "\n"
    (out / "summary.txt").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
