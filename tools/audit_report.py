"""Run every end-to-end privacy audit and print one table: the closing note's audit table.

Runs ``pytest tests/privacy/audits`` (all audits, the slow full-size ones
included unless ``--fast``) with ``FEDEVAL_AUDIT_LOG`` set, so that every call
of :func:`dp_audit.audit` appends its result, then prints one Markdown row per
audit: the test (entry point and case), claimed ε (and δ), the empirical ε
(plug-in on the event the pilot fixed), the one-sided 95% Clopper–Pearson lower
bound, the lower bound at the confidence the test asserts, trials per dataset
and the event. Rows whose test id contains "power", "half" or "broken" audit a
deliberately broken mechanism: their lower bound must exceed the claim.

Usage::

    .venv/bin/python tools/audit_report.py [--fast] [-k EXPRESSION]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _fmt(x: float) -> str:
    return "∞" if math.isinf(x) and x > 0 else ("−∞" if math.isinf(x) else f"{x:.3f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fast", action="store_true", help="only the default (not slow) audits")
    ap.add_argument("-k", default=None, help="pytest -k expression")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "audits.jsonl"
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            str(ROOT / "tests" / "privacy" / "audits"),
            "-m",
            "privacy and not slow" if args.fast else "privacy",
        ]
        if args.k:
            cmd += ["-k", args.k]
        env = {**os.environ, "FEDEVAL_AUDIT_LOG": str(log)}
        done = subprocess.run(cmd, cwd=ROOT, env=env, check=False)
        rows = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    print(
        "| audit (test) | claimed ε (δ) | empirical ε | 95% lower bound | lower bound (asserted) "
        "| trials | event |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        name = r["test"].split("::", 1)[-1]
        claim = f"{r['claimed']:g}" + (f" ({r['delta']:g})" if r["delta"] else "")
        print(
            f"| {name} | {claim} | {_fmt(r['epsilon_hat'])} | {_fmt(r['lower_95'])} | "
            f"{_fmt(r['lower'])} @ {r['confidence']:g} | {r['trials']:,} | {r['event']} |"
        )
    print(f"\n{len(rows)} audits; pytest exit status {done.returncode}")
    return done.returncode


if __name__ == "__main__":
    raise SystemExit(main())
