"""``fedeval monitor``: continual private evaluation over periods, from files.

The periods come from a folder of per-period CSV/Parquet files (one period per
file, in file-name order), or from one file with an integer period column
(``--period``, values 1..``--horizon``). One monitor (:func:`fedeval.monitor`)
releases every period under one budget for the whole horizon, charged before
the first period; after each period from ``--window`` + 1 on, a drift test
compares the last ``--window`` periods with all earlier ones. The trend page
(``report.html``), ``report.md`` and ``results.json`` go to ``--out``.

Public inputs: the schedule (the files, or the declared horizon), the score
domain and ``--examples-per-period`` (declared, used only to plan). A period
without rows (an empty file, or a period value with no row) is released all
the same, with its noise: which periods hold data is never published.

This module imports only the standard library at import time (like
:mod:`fedeval.cli`), so ``fedeval --help`` stays fast.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from fedeval.cli_common import print_json, seed_value

__all__ = ["add_monitor_arguments", "cmd_monitor"]

_SUFFIXES = (".csv", ".csv.gz", ".parquet", ".pq")


def add_monitor_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``fedeval monitor``."""
    p.add_argument(
        "source",
        help="a folder of per-period CSV/Parquet files (one period per file, in name order), "
        "or one file with a --period column",
    )
    p.add_argument("--score", required=True, help="score column (binary, in the score domain)")
    p.add_argument("--label", required=True, help="label column (0/1)")
    p.add_argument("--client", default=None, help="client id column (default: one row each)")
    p.add_argument(
        "--period",
        default=None,
        help="with one file: the integer period column (values 1..--horizon)",
    )
    p.add_argument(
        "--horizon",
        type=int,
        default=None,
        help="periods the budget covers (required with --period; default: the number of files)",
    )
    p.add_argument(
        "--examples-per-period",
        type=int,
        required=True,
        help="a typical number of examples per period, declared public; used only to plan "
        "the hierarchy (never checked against the data)",
    )
    p.add_argument(
        "--privacy",
        choices=["sa", "distdp", "central"],
        required=True,
        help="sa: exact sums, no DP; distdp: distributed DP, clients add noise shares; central: "
        "a trusted curator adds discrete Laplace noise",
    )
    p.add_argument(
        "--epsilon", type=float, default=None, help="ε for the whole horizon (required unless sa)"
    )
    p.add_argument(
        "--noise",
        choices=["polya", "skellam"],
        default=None,
        help="distdp noise shares: polya (pure ε, the default) or skellam (needs --delta)",
    )
    p.add_argument("--delta", type=float, default=None, help="δ, with --noise skellam only")
    p.add_argument(
        "--contribution-bound",
        type=int,
        default=None,
        help="distdp only: protect one client across all periods, who contributes at most this "
        "many examples over the whole horizon (needs --client)",
    )
    p.add_argument(
        "--mechanism",
        choices=["auto", "tree", "factorization", "per-period"],
        default="auto",
        help="continual mechanism (auto: the smallest mean variance for this model and horizon)",
    )
    p.add_argument("--height", type=int, default=None, help="hierarchy height (default: planned)")
    p.add_argument(
        "--metric",
        choices=["roc_auc", "average_precision"],
        default="roc_auc",
        help="the metric drawn over time",
    )
    p.add_argument(
        "--window",
        type=int,
        default=None,
        help="periods of the windowed trend and the drift test (default: 8, or the horizon "
        "if shorter)",
    )
    p.add_argument(
        "--alpha",
        type=float,
        default=0.05,
        help="probability of a false drift alarm over the whole horizon (Bonferroni)",
    )
    p.add_argument("--score-min", type=float, default=0.0, help="lower end of the score domain")
    p.add_argument("--score-max", type=float, default=1.0, help="upper end of the score domain")
    p.add_argument(
        "--compare-exact",
        action="store_true",
        help="simulation only: also compute the exact metric at every period",
    )
    p.add_argument(
        "--seed", type=seed_value, default=None, help="random seed (default: fresh randomness)"
    )
    p.add_argument(
        "--out", default="fedeval-monitor", help="report directory (must be empty or new)"
    )
    p.add_argument("--force", action="store_true", help="write into --out even if it is not empty")
    p.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    p.add_argument("--quiet", action="store_true", help="no progress lines")


def _error(message: str) -> Exception:
    from fedeval.cli_common import CLIError

    return CLIError(message)


def _check(args: argparse.Namespace) -> None:
    if args.privacy == "sa" and args.epsilon is not None:
        raise _error("--privacy sa adds no noise and takes no --epsilon")
    if args.privacy != "sa" and args.epsilon is None:
        raise _error(f"--privacy {args.privacy} needs --epsilon (for the whole horizon)")
    if args.epsilon is not None and not args.epsilon > 0:
        raise _error(f"--epsilon must be > 0, got {args.epsilon:g}")
    if args.noise is not None and args.privacy != "distdp":
        raise _error("--noise applies to --privacy distdp only")
    skellam = args.privacy == "distdp" and args.noise == "skellam"
    if skellam and args.delta is None:
        raise _error("--noise skellam needs --delta")
    if args.delta is not None and not skellam:
        raise _error("--delta applies only to --privacy distdp --noise skellam")
    if args.contribution_bound is not None:
        if args.privacy != "distdp":
            raise _error("--contribution-bound applies to --privacy distdp only")
        if args.client is None:
            raise _error("--contribution-bound protects clients: give their --client column")
    if args.score_min >= args.score_max:
        raise _error("--score-min must be below --score-max")
    if args.window is None:
        args.window = min(8, args.horizon) if args.horizon else 8
    if args.window < 1:
        raise _error(f"--window must be >= 1, got {args.window}")
    if not 0 < args.alpha < 1:
        raise _error(f"--alpha must lie in (0, 1), got {args.alpha:g}")
    if args.horizon is not None and args.window > args.horizon:
        raise _error(
            f"--window ({args.window}) is longer than --horizon ({args.horizon}): the window "
            "is the last periods of the horizon"
        )
    if args.period is not None and args.horizon is None:
        raise _error("--period needs --horizon: the schedule is declared, never read from the data")


def _check_out(out: Path, force: bool) -> None:
    """Refuse a non-empty --out unless --force (as every fedeval command does)."""
    if out.exists() and not out.is_dir():
        raise _error(f"--out {out} exists and is not a directory")
    if not force and out.is_dir() and any(out.iterdir()):
        raise _error(
            f"--out {out} is not empty; choose another directory or pass --force to overwrite "
            "the report files in it"
        )


def _privacy(args: argparse.Namespace) -> Any:
    import fedeval as fe

    if args.privacy == "sa":
        return fe.SecureAggregation()
    if args.privacy == "central":
        return fe.CentralDP(epsilon=args.epsilon)
    kwargs: dict[str, Any] = {"epsilon": args.epsilon}
    if args.noise == "skellam":
        kwargs.update(noise="skellam", delta=args.delta)
    if args.contribution_bound is not None:
        kwargs.update(unit="client", contribution_bound=args.contribution_bound)
    return fe.DistributedDP(**kwargs)


def _read_frame(path: Path, columns: list[str]) -> Any:
    """The named columns of one CSV/Parquet file (zero rows allowed: an empty period)."""
    import pandas as pd

    name = path.name.lower()
    try:
        if name.endswith((".parquet", ".pq")):
            import pyarrow.parquet as pq

            available = pq.read_schema(path).names
            _need(columns, available, path)
            return pq.read_table(path, columns=columns).to_pandas()
        header = pd.read_csv(path, nrows=0)
        _need(columns, list(header.columns), path)
        return pd.read_csv(path, usecols=columns)
    except (OSError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path} could not be read: {exc}") from None
    except pd.errors.EmptyDataError:
        raise ValueError(f"{path} is empty (not even a header)") from None
    except Exception as exc:
        if type(exc).__module__.startswith("pyarrow"):
            raise ValueError(f"{path} is not a readable Parquet file: {exc}") from None
        raise


def _need(columns: list[str], available: list[str], path: Path) -> None:
    missing = [c for c in columns if c not in available]
    if missing:
        raise ValueError(f"column(s) {missing} not found in {path}; available: {available}")


def _periods(args: argparse.Namespace) -> tuple[list[Any], int, str]:
    """(one data frame or None per period to release, horizon, what the source is)."""
    src = Path(args.source)
    columns = [args.score, args.label] + ([args.client] if args.client else [])
    if src.is_dir():
        if args.period is not None:
            raise _error("--period reads one file; a folder holds one period per file")
        files = sorted(
            p for p in src.iterdir() if p.is_file() and p.name.lower().endswith(_SUFFIXES)
        )
        if not files:
            raise _error(f"{src} holds no .csv or .parquet file")
        horizon = len(files) if args.horizon is None else int(args.horizon)
        if horizon < len(files):
            raise _error(f"--horizon {horizon} is shorter than the {len(files)} period files")
        return [_read_frame(f, columns) for f in files], horizon, f"{len(files)} period files"
    if not src.is_file():
        raise FileNotFoundError(f"no such file or folder: {src}")
    if args.period is None:
        raise _error("one file holds several periods: name its period column with --period")
    frame = _read_frame(src, [*columns, args.period])
    horizon = int(args.horizon)
    values = frame[args.period]
    import numpy as np

    as_int = np.asarray(values)
    if as_int.dtype.kind not in "iu" and not (
        as_int.dtype.kind == "f" and np.all(np.isfinite(as_int) & (as_int == np.round(as_int)))
    ):
        raise _error(f"--period column {args.period!r} must hold integers 1..{horizon}")
    as_int = as_int.astype(np.int64)
    if as_int.size and (as_int.min() < 1 or as_int.max() > horizon):
        raise _error(f"--period column {args.period!r} has values outside 1..{horizon}")
    frames = [frame.loc[as_int == t, columns] for t in range(1, horizon + 1)]
    return frames, horizon, f"{src.name} (period column {args.period!r})"


def cmd_monitor(args: argparse.Namespace) -> int:
    """Run ``fedeval monitor`` (see the module docstring)."""
    _check(args)
    _check_out(Path(args.out), args.force)
    privacy = _privacy(args)
    import numpy as np

    import fedeval as fe
    from fedeval.report.trend_report import monitor_payload, write_trend_report

    frames, horizon, what = _periods(args)
    mon = fe.monitor(
        privacy,
        horizon=horizon,
        examples_per_period=args.examples_per_period,
        height=args.height,
        mechanism=args.mechanism,
        score_range=(args.score_min, args.score_max),
        rng=args.seed,
    )
    log = (
        (lambda msg: None) if args.quiet or args.json else (lambda msg: print(msg, file=sys.stderr))
    )
    log(
        f"monitor: {horizon} periods, {mon.mechanism_name} mechanism, height {mon.parameters['height']}"
    )
    tests = []
    kept: list[tuple[Any, Any]] = []
    exact: dict[str, list[float]] = {"cumulative": [], "window": []}
    for t, frame in enumerate(frames, 1):
        fed = None
        if frame is not None and len(frame):
            fed = fe.Federation.from_frame(
                frame,
                score=args.score,
                label=args.label,
                client=args.client,
                score_range=(args.score_min, args.score_max),
            )
        mon.update(fed)
        if args.compare_exact:
            kept.append(
                (np.asarray([]), np.asarray([])) if fed is None else (fed.scores, fed.labels)
            )
            exact["cumulative"].append(_exact(kept, args.metric))
            exact["window"].append(_exact(kept[-args.window :], args.metric))
        if t > args.window:
            tests.append(mon.drift("roc_auc", window=args.window, alpha=args.alpha))
        log(
            f"period {t}/{len(frames)} released"
            + (" — drift ALARM" if tests and tests[-1].period == t and tests[-1].alarm else "")
        )
    source = {
        "name": what,
        "path": str(args.source),
        "score_range": [args.score_min, args.score_max],
    }
    paths = write_trend_report(
        mon,
        args.out,
        metric=args.metric,
        window=args.window,
        drift=tests,
        exact=exact if args.compare_exact else None,
        title=f"fedeval monitor of {what}",
        source=source,
    )
    if args.json:
        cumulative = mon.trend(args.metric)
        windowed = mon.trend(args.metric, window=min(args.window, mon.periods_released))
        payload = monitor_payload(
            mon,
            cumulative=cumulative,
            windowed=windowed,
            drift=tests,
            exact=exact if args.compare_exact else None,
            source=source,
        )
        payload["report"] = {k: str(v) for k, v in paths.items()}
        print_json(payload)
        return 0
    _print_summary(mon, tests, args)
    print(f"\nreport: {paths['html']}  (markdown: {paths['markdown']}, JSON: {paths['json']})")
    return 0


def _exact(kept: list[tuple[Any, Any]], metric: str) -> float:
    import numpy as np
    from sklearn.metrics import average_precision_score, roc_auc_score

    s = np.concatenate([k[0] for k in kept])
    y = np.concatenate([k[1] for k in kept])
    if y.size == 0 or y.min() == y.max():
        return float("nan")
    f = roc_auc_score if metric == "roc_auc" else average_precision_score
    return float(f(y, s))


def _print_summary(mon: Any, tests: list[Any], args: argparse.Namespace) -> None:
    from fedeval.report.style import fmt, fmt_privacy

    receipt = mon.receipt()
    g = receipt.guarantee
    print(
        f"monitor: {mon.periods_released} of {mon.horizon} periods, mechanism "
        f"{mon.mechanism_name}, height {mon.parameters['height']}"
    )
    print(
        f"privacy: {receipt.model}; ε spent for the whole horizon "
        f"{fmt_privacy(mon.epsilon_spent) if g.is_private else '— (no DP)'}"
        + (f", δ {fmt_privacy(mon.delta_spent)}" if mon.delta_spent else "")
    )
    cumulative = mon.trend(args.metric)
    w = min(args.window, mon.periods_released)
    windowed = mon.trend(args.metric, window=w)
    by_period = {d.period: d for d in tests}
    rows = []
    for i, t in enumerate(cumulative.periods):
        d = by_period.get(int(t))
        rows.append(
            [
                str(int(t)),
                f"{fmt(float(cumulative.estimate[i]))} ± {fmt(float(cumulative.se[i]))}",
                f"{fmt(float(windowed.estimate[i]))} ± {fmt(float(windowed.se[i]))}",
                "" if d is None else f"{d.z:+.2f}",
                "" if d is None else ("ALARM" if d.alarm else "-"),
            ]
        )
    head = ["period", f"{args.metric} (1..t)", f"last {w}", "drift z", "alarm"]
    widths = [max(len(h), *(len(r[j]) for r in rows)) for j, h in enumerate(head)]
    print()
    print("  ".join(h.rjust(wd) for h, wd in zip(head, widths, strict=True)))
    for r in rows:
        print("  ".join(c.rjust(wd) for c, wd in zip(r, widths, strict=True)))
    alarms = [d.period for d in tests if d.alarm]
    crit = tests[0].critical_z if tests else float("nan")
    print(
        f"\ndrift alarms (|z| > {crit:.2f}, α = {args.alpha:g} over the horizon): "
        + (", ".join(map(str, alarms)) if alarms else "none")
    )
