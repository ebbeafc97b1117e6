"""What every ``fedeval`` subcommand module shares, kept free of heavy imports.

:mod:`fedeval.cli` (the entry point) imports the subcommand modules
(:mod:`fedeval.cli_monitor`, :mod:`fedeval.flower.simulate`), and they need the
same error type, argument definitions and public-fact helpers; defining those
here keeps the imports one-way (no ``cli`` ↔ subcommand loop) and ``--help``
fast. This module imports only the standard library at import time (no numpy,
no pandas, no flwr); :func:`public_facts` imports :mod:`fedeval.public_facts`
when called.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fedeval.privacy.models import PrivacyModel

__all__ = [
    "CLIError",
    "add_common_output",
    "add_flower_sim_arguments",
    "add_hierarchy",
    "add_score_domain",
    "describe_facts",
    "print_json",
    "public_facts",
]


class CLIError(Exception):
    """Bad input reported as one line on stderr with exit status 2."""


# ------------------------------------------------------------------ public facts
def public_facts(
    fed: Any,
    models: Sequence[PrivacyModel],
    declared: int | None = None,
    declared_clients: int | None = None,
) -> dict[str, Any]:
    """What may be printed about a federation evaluated under all of ``models``.

    The task and the score domain are public; the numbers of clients and of
    examples only if declared or public under every model
    (:func:`fedeval.public_facts.public_counts`).
    """
    from fedeval.public_facts import Public, public_counts

    pub = Public(n_clients=declared_clients, n_examples=declared)
    counts = [public_counts(m, fed, pub) for m in models]
    facts: dict[str, Any] = {
        "kind": fed.kind,
        "n_classes": int(fed.n_classes),
        "score_range": [float(v) for v in fed.score_range],
    }
    for key in ("n_clients", "n_examples"):
        values = [getattr(c, key) for c in counts]
        sources = [getattr(c, f"{key}_source") for c in counts]
        public = bool(values) and all(v is not None for v in values)
        facts[key] = values[0] if public else None
        facts[f"{key}_source"] = (
            sources[0]
            if public
            else next(s for v, s in zip(values, sources, strict=True) if v is None)
        )
    return facts


def describe_facts(facts: dict[str, Any]) -> str:
    lo, hi = facts["score_range"]
    m = facts["n_examples"]
    k = facts["n_clients"]
    examples = f"{m:,} examples" if m is not None else "number of examples not public"
    clients = f"{k:,} clients" if k is not None else "number of clients not public"
    return f"federation: {facts['kind']} task, {clients}, score domain [{lo:g}, {hi:g}], {examples}"


# --------------------------------------------------------------------- arguments
def seed_value(text: str) -> int:
    """``--seed``: a non-negative integer (numpy's seeds), checked when the line is parsed."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {value}")
    return value


def add_common_output(p: argparse.ArgumentParser, out: str) -> None:
    p.add_argument(
        "--seed", type=seed_value, default=None, help="random seed (default: fresh randomness)"
    )
    p.add_argument("--out", default=out, help="report directory (must be empty or new)")
    p.add_argument("--force", action="store_true", help="write into --out even if it is not empty")
    p.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def add_score_domain(p: argparse.ArgumentParser) -> None:
    p.add_argument("--score-min", type=float, default=0.0, help="lower end of the score domain")
    p.add_argument("--score-max", type=float, default=1.0, help="upper end of the score domain")


def add_hierarchy(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--height", type=int, default=None, help="hierarchy height h (default: from fedeval plan)"
    )
    p.add_argument("--branching", type=int, default=2, help="branching factor b of the hierarchy")
    p.add_argument(
        "--buckets", type=int, default=None, help="AUC buckets B (default: from fedeval plan)"
    )
    p.add_argument(
        "--quantiles",
        type=int,
        default=None,
        help="quantiles Q for the ROC/PR curves (default: from fedeval plan)",
    )


def add_flower_sim_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``fedeval flower-sim`` (here, not in flower/, so that --help imports no flwr)."""
    parser.add_argument("file", help="CSV/Parquet file of scores and labels")
    parser.add_argument(
        "--clients",
        type=int,
        required=True,
        help="number of simulated Flower clients (>= 3), declared public as the cohort size "
        "(the file's rows, or its clients, are split over them)",
    )
    parser.add_argument("--score", default="score", help="score column")
    parser.add_argument("--label", default="label", help="label column (0/1)")
    parser.add_argument(
        "--client", default=None, help="client column (default: rows split over --clients)"
    )
    parser.add_argument(
        "--privacy",
        nargs="+",
        choices=["sa", "distdp", "ldp"],
        default=["sa"],
        help="one or more privacy models, each evaluated on the same clients",
    )
    parser.add_argument("--epsilon", type=float, default=None, help="ε of each DP setting")
    parser.add_argument(
        "--noise", choices=["polya", "skellam"], default="polya", help="distdp noise shares"
    )
    parser.add_argument("--delta", type=float, default=None, help="δ (with --noise skellam only)")
    add_hierarchy(parser)
    parser.add_argument(
        "--max-dropouts", type=int, default=1, help="clients that may drop out of SecAgg+"
    )
    parser.add_argument(
        "--min-clients", type=int, default=3, help="fewest clients a round may run with"
    )
    parser.add_argument(
        "--clip-probability",
        type=float,
        default=1e-9,
        help="allowed probability that a noise share exceeds the SecAgg+ clipping range",
    )
    parser.add_argument(
        "--max-examples-per-client",
        type=int,
        default=None,
        help="public bound on one client's examples (required under DP: every client keeps "
        "at most this many, at random; SA alone defaults to the largest client)",
    )
    parser.add_argument(
        "--no-secagg",
        action="store_true",
        help="plaintext sums instead of SecAgg+ (benchmarking only: the server sees every "
        "client's vector; DistDP also needs --allow-plaintext-shares)",
    )
    parser.add_argument(
        "--allow-plaintext-shares",
        action="store_true",
        help="with --no-secagg, run DistDP anyway: its receipt states the (much larger) ε "
        "of one noise share seen alone",
    )
    parser.add_argument(
        "--allow-sa-with-dp",
        action="store_true",
        help="evaluate SA and DP settings on the same clients anyway (the DP receipts do "
        "not protect against the exact SA release)",
    )
    parser.add_argument(
        "--total-epsilon", type=float, default=None, help="the run's ε budget over all settings"
    )
    parser.add_argument(
        "--total-delta", type=float, default=None, help="the run's δ budget over all settings"
    )
    add_score_domain(parser)
    parser.add_argument(
        "--thresholds", type=float, nargs="+", default=[0.5], help="thresholds for the table"
    )
    add_common_output(parser, "fedeval-flower-report")


def print_json(obj: Any) -> None:
    """Print one strict JSON document (NaN and infinities as null) on stdout."""
    from fedeval.report.files import json_text

    print(json_text(obj))
