"""Benchmark: fedeval on Flower — wall time per evaluation and bytes sent per client.

For 20 and 100 simulated clients, with and without SecAgg+, one Flower
simulation each (in a subprocess, so every run starts Ray afresh) evaluating
under SA and DistDP (Pólya, ε = 1) with a height-8 binary hierarchy (1,020
integers per DistDP reply, 512 per SA reply). Reported per evaluation:

* wall time of the evaluation round inside the ServerApp (SecAgg+'s four stages,
  or one plaintext round), excluding Ray start-up and the client hand-shake;
* bytes each client sent (serialized reply contents, summed over the stages);
* the whole simulation's wall time, Ray start-up included.

"Without SecAgg+" sends every client's vector in plaintext: it is a baseline for
cost only (under DistDP each share would be visible to the server).

Usage: python benchmarks/bench_flower.py [--clients 20 100] [--examples-per-client 200]
                                         [--num-shares K] [--secagg-only]
Needs the flower extra: pip install 'fedeval[flower]'.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def one_run(
    n_clients: int, secagg: bool, per_client: int, height: int, num_shares: int | None = None
) -> dict:
    import fedeval as fe
    from fedeval.flower.simulate import quiet_flower_environment, simulate

    quiet_flower_environment()
    rng = np.random.default_rng(0)
    n = n_clients * per_client
    y = rng.integers(0, 2, n)
    s = np.clip(rng.normal(0.4 + 0.25 * y, 0.15), 0.0, 1.0)
    fed = fe.Federation.from_arrays(s, y)
    out = Path(tempfile.mkdtemp(prefix="bench-flower-"))
    t0 = time.perf_counter()
    result = simulate(
        fed,
        n_clients,
        privacy=("sa", "distdp"),
        out_dir=out / "report",
        data_dir=out / "parts",
        rng=0,
        epsilon=1.0,
        height=height,
        secagg=secagg,
        max_dropouts=1,
        num_shares=num_shares,
    )
    total = time.perf_counter() - t0
    rows = []
    for name, ev in result["evaluations"].items():
        rows.append(
            {
                "clients": n_clients,
                "secagg": secagg,
                "num_shares": ev["facts"]["secagg"].get("num_shares"),
                "threshold": ev["facts"]["secagg"].get("reconstruction_threshold"),
                "setting": name,
                "vector_length": len(ev["released_sum"]),
                "wall_s": round(ev["wall_seconds"], 3),
                "bytes_per_client": round(ev["bytes_sent_per_client"]),
                "clients_used": ev["facts"]["n_used"],
                "simulation_s": round(total, 1),
                "handshake_s": round(result["describe_seconds"], 3),
            }
        )
    return {"rows": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, nargs="+", default=[20, 100])
    ap.add_argument("--examples-per-client", type=int, default=200)
    ap.add_argument("--height", type=int, default=8)
    ap.add_argument(
        "--num-shares",
        type=int,
        default=None,
        help="SecAgg+ neighbours per client (default: all clients; fewer is faster, but the "
        "DistDP noise grows by clients/threshold)",
    )
    ap.add_argument("--secagg-only", action="store_true")
    ap.add_argument("--one", nargs=2, metavar=("N", "SECAGG"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        res = one_run(
            int(args.one[0]),
            args.one[1] == "1",
            args.examples_per_client,
            args.height,
            args.num_shares,
        )
        print("RESULT " + json.dumps(res))
        return
    rows = []
    for n in args.clients:
        for secagg in (True,) if args.secagg_only else (True, False):
            proc = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--one",
                    str(n),
                    "1" if secagg else "0",
                    "--examples-per-client",
                    str(args.examples_per_client),
                    "--height",
                    str(args.height),
                ]
                + ([] if args.num_shares is None else ["--num-shares", str(args.num_shares)]),
                capture_output=True,
                text=True,
                check=False,
            )
            line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
            if proc.returncode != 0 or not line:
                print(proc.stdout[-2000:], proc.stderr[-4000:], file=sys.stderr)
                raise SystemExit(f"run with {n} clients, secagg={secagg} failed")
            rows += json.loads(line[0][len("RESULT ") :])["rows"]
    cols = list(rows[0])
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(str(r[c]) for c in cols) + " |")


if __name__ == "__main__":
    main()
