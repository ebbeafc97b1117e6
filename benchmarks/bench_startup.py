"""Start-up cost: the first ``fe.evaluate`` in a fresh process, and the CLI's ``--help`` and ``plan`` (issue 28).

Every case is a fresh Python process, started ``--rounds`` times (default 5),
the cases taking turns in each round so that a change of the machine's speed
reaches the baseline and the cases alike:

* ``import numpy``: ``python -c "import numpy"``, the baseline (wall time);
* ``first fe.evaluate``: import fedeval, build a 1,000-example federation and
  run one ``fe.evaluate`` under distributed DP (wall time; the target is ≤ 5×
  the baseline on an idle machine);
* ``fedeval --help`` and ``fedeval plan --clients 100000 --privacy ldp
  --epsilon 5``: the console script's entry point (``fedeval.cli:main``), CPU
  time (user + system of the child, from ``getrusage``; the target is
  ≤ 0.5 s each).

Each child also reports whether it imported pandas, scipy.stats or
dp_accounting (the target: only when needed, and none of these cases needs
them).

Bytecode. An installed package ships compiled bytecode (pip compiles on
install), so its imports do not compile fedeval's ~48,000 lines of source.
A source checkout run with ``PYTHONDONTWRITEBYTECODE=1`` (as some CI images
set) compiles them in every process: 0.15 s of CPU on this 2-core machine.
The targets are read on the first figure (``bytecode cached``): the children
run with ``PYTHONPYCACHEPREFIX`` set to a temporary directory, warmed by one
untimed run of each case, so nothing is written into the source tree. When
the environment sets ``PYTHONDONTWRITEBYTECODE`` the script also reports the
same cases as this environment runs them (``as inherited``), for comparison.

Run: ``PYTHONPATH=src .venv/bin/python benchmarks/bench_startup.py [--rounds R]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

_REPORT_IMPORTS = (
    "import json, sys; print(json.dumps({m: m in sys.modules for m in "
    "('pandas', 'scipy.stats', 'dp_accounting')}), file=sys.stderr)"
)
_EVALUATE = (
    "import numpy as np, fedeval as fe\n"
    "rng = np.random.default_rng(0)  # a simulation: seeded data and noise\n"
    "s = rng.random(1000)\n"
    "y = (rng.random(1000) < s).astype(int)\n"
    "ev = fe.evaluate(fe.Federation.from_arrays(s, y), fe.DistributedDP(1.0), rng=1)\n"
    "assert 0.0 <= ev.roc_auc <= 1.0\n"
)
_CLI = "import sys\nfrom fedeval.cli import main\nsys.argv[0] = 'fedeval'\ncode = main()\n"
CASES: dict[str, tuple[str, list[str], str]] = {
    # name: (code, arguments, what is measured)
    "import numpy": ("import numpy\n", [], "wall"),
    "first fe.evaluate": (_EVALUATE, [], "wall"),
    "fedeval --help": (_CLI, ["--help"], "cpu"),
    "fedeval plan": (
        _CLI,
        ["plan", "--clients", "100000", "--privacy", "ldp", "--epsilon", "5"],
        "cpu",
    ),
}


def _run(code: str, args: list[str], env: dict[str, str]) -> tuple[float, float, dict[str, bool]]:
    """Wall and CPU seconds of one fresh process running ``code``, and what it imported."""
    # SystemExit from argparse's --help still reports the imports (try/finally).
    script = f"try:\n{_indent(code)}\nfinally:\n    {_REPORT_IMPORTS}\n"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", script, *args], env=env, capture_output=True, text=True
    )
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"the child failed ({done.returncode}):\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    imported = json.loads(done.stderr.strip().splitlines()[-1])
    return wall, cpu, imported


def _indent(code: str) -> str:
    return "\n".join("    " + line for line in code.splitlines())


def _measure(env: dict[str, str], rounds: int) -> dict[str, dict[str, object]]:
    """Every case once untimed (warms the bytecode cache, if any), then ``rounds`` in turn."""
    for code, args, _ in CASES.values():
        _run(code, args, env)
    walls: dict[str, list[float]] = {name: [] for name in CASES}
    cpus: dict[str, list[float]] = {name: [] for name in CASES}
    imported: dict[str, dict[str, bool]] = {}
    for _ in range(rounds):
        for name, (code, args, _) in CASES.items():
            wall, cpu, imported[name] = _run(code, args, env)
            walls[name].append(wall)
            cpus[name].append(cpu)
    return {
        name: {"wall": walls[name], "cpu": cpus[name], "imported": imported[name]} for name in CASES
    }


def _report(title: str, results: dict[str, dict[str, object]]) -> None:
    base = statistics.median(results["import numpy"]["wall"])  # type: ignore[arg-type]
    print(f"{title}")
    print(f"  {'case':20s} {'wall s (min-max)':>18s} {'CPU s (min-max)':>18s}  target")
    for name, r in results.items():
        wall, cpu = r["wall"], r["cpu"]
        assert isinstance(wall, list) and isinstance(cpu, list)
        what = CASES[name][2]
        if name == "import numpy":
            verdict = "baseline"
        elif what == "wall":
            ratio_lo, ratio_hi = min(wall) / base, max(wall) / base
            verdict = (
                f"≤ 5× import numpy: {ratio_lo:.1f}-{ratio_hi:.1f}× of its median "
                f"({'meets' if statistics.median(wall) / base <= 5 else 'MISSES'} at the median)"
            )
        else:
            verdict = (
                f"≤ 0.5 s CPU: {'meets' if statistics.median(cpu) <= 0.5 else 'MISSES'} "
                "at the median"
            )
        heavy = [m for m, yes in r["imported"].items() if yes]  # type: ignore[union-attr]
        print(
            f"  {name:20s} {min(wall):8.3f}-{max(wall):<8.3f} {min(cpu):8.3f}-{max(cpu):<8.3f}"
            f"  {verdict}; imports {', '.join(heavy) if heavy else 'none of pandas, scipy.stats, dp_accounting'}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    print(f"load average {os.getloadavg()}")
    with tempfile.TemporaryDirectory(prefix="fedeval-pycache-") as cache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = cache
        _report(
            f"bytecode cached (as an installed package; the targets are read here), {args.rounds} rounds",
            _measure(env, args.rounds),
        )
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        _report(
            f"as inherited (PYTHONDONTWRITEBYTECODE set: every process compiles fedeval; "
            f"for comparison, not a target), {args.rounds} rounds",
            _measure(dict(os.environ), args.rounds),
        )
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
