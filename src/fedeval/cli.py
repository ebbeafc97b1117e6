"""The ``fedeval`` command.

``fedeval demo``      built-in data under SA, DistDP ε=1 and LDP ε=5, table + report
``fedeval evaluate``  a CSV/Parquet file of scores and labels
``fedeval calibrate`` learn a calibrator, write it as JSON with a before/after report
``fedeval plan``      parameters and predicted errors for a deployment
``fedeval flower-sim`` the Flower apps (SecAgg+) on N simulated clients (needs fedeval[flower])

Exit status 0 on success, 2 with a one-line reason on bad input.

Under differential privacy the commands print only public facts about the
data: the task, the number of clients and the score domain, and the number of
examples only when the privacy model makes it public or it was declared with
``--examples``. Everything else shown comes from the noisy release.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from fedeval.privacy.models import PrivacyModel, model_label

__all__ = ["main"]


class CLIError(Exception):
    """Bad input reported as one line on stderr with exit status 2."""


def _privacy(args: argparse.Namespace) -> PrivacyModel:
    from fedeval.privacy.models import privacy_model

    name = args.privacy
    if name != "sa" and args.epsilon is None:
        raise CLIError(f"--privacy {name} needs --epsilon")
    kwargs: dict[str, Any] = {}
    if name == "distdp" and getattr(args, "noise", None):
        kwargs["noise"] = args.noise
    return privacy_model(name, epsilon=args.epsilon, delta=getattr(args, "delta", None), **kwargs)


def _public_facts(
    fed: Any, models: Sequence[PrivacyModel], declared: int | None = None
) -> dict[str, Any]:
    """What may be printed about a federation evaluated under all of ``models``.

    The task, the number of clients and the score domain are public; the
    number of examples only if it was declared or every model makes it public
    (see :func:`fedeval.planning.public_example_count`).
    """
    from fedeval.planning import public_example_count

    facts: dict[str, Any] = {
        "kind": fed.kind,
        "n_clients": int(fed.n_clients),
        "n_classes": int(fed.n_classes),
        "score_range": [float(v) for v in fed.score_range],
    }
    counts = [public_example_count(m, fed.n_examples, declared=declared) for m in models]
    if counts and all(c is not None for c, _ in counts):
        facts["n_examples"] = counts[0][0]
        facts["n_examples_source"] = counts[0][1]
    else:
        facts["n_examples"] = None
        facts["n_examples_source"] = next(s for c, s in counts if c is None)
    return facts


def _describe(facts: dict[str, Any]) -> str:
    lo, hi = facts["score_range"]
    m = facts["n_examples"]
    examples = f"{m} examples" if m is not None else "number of examples not public"
    return (
        f"federation: {facts['kind']} task, {facts['n_clients']} clients, "
        f"score domain [{lo:g}, {hi:g}], {examples}"
    )


def _exact(scores: np.ndarray, labels: np.ndarray, thresholds: Sequence[float]) -> dict[str, Any]:
    from sklearn.metrics import (
        average_precision_score,
        precision_recall_curve,
        roc_auc_score,
        roc_curve,
    )

    fpr, tpr, _ = roc_curve(labels, scores)
    prec, rec, _ = precision_recall_curve(labels, scores)
    at: dict[float, dict[str, float]] = {}
    pos = labels == 1
    for t in thresholds:
        pred = scores >= t
        tp = float(np.sum(pred & pos))
        fp = float(np.sum(pred & ~pos))
        at[float(t)] = {
            "precision": tp / (tp + fp) if tp + fp else float("nan"),
            "recall": tp / pos.sum(),
            "fpr": fp / (~pos).sum(),
            "accuracy": float(np.mean(pred == pos)),
        }
    return {
        "roc_auc": float(roc_auc_score(labels, scores)),
        "average_precision": float(average_precision_score(labels, scores)),
        "roc": (fpr, tpr),
        "pr": (prec, rec),
        "at_threshold": at,
    }


def _print_table(rows: list[dict[str, Any]], file: Any = None) -> None:
    cols = list(dict.fromkeys(k for r in rows for k in r))
    widths = [max(len(c), *(len(_cell(r.get(c))) for r in rows)) for c in cols]
    out = file or sys.stdout
    print("  ".join(c.rjust(w) for c, w in zip(cols, widths, strict=True)), file=out)
    for r in rows:
        print(
            "  ".join(_cell(r.get(c)).rjust(w) for c, w in zip(cols, widths, strict=True)), file=out
        )


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.5f}" if abs(v) >= 1e-4 or v == 0 else f"{v:.1e}"
    return str(v)


def _metric_rows(
    evs: dict[str, Any], exact: dict[str, Any] | None, threshold: float
) -> list[dict[str, Any]]:
    rows = []
    for name, ev in evs.items():
        m = ev.at_threshold(threshold)
        values = {
            "roc_auc": (ev.roc_auc, ev.roc_auc_se),
            "average_precision": (ev.average_precision, ev.average_precision_se),
            f"precision@{threshold:g}": (float(m.precision), float(m.precision_se)),
            f"recall@{threshold:g}": (float(m.recall), float(m.recall_se)),
            f"accuracy@{threshold:g}": (float(m.accuracy), float(m.accuracy_se)),
        }
        ex_map = {}
        if exact is not None:
            at = exact["at_threshold"][float(threshold)]
            ex_map = {
                "roc_auc": exact["roc_auc"],
                "average_precision": exact["average_precision"],
                f"precision@{threshold:g}": at["precision"],
                f"recall@{threshold:g}": at["recall"],
                f"accuracy@{threshold:g}": at["accuracy"],
            }
        for metric, (value, se) in values.items():
            row: dict[str, Any] = {
                "setting": name,
                "metric": metric,
                "estimate": value,
                "se": se,
            }
            if metric in ex_map:
                row["exact"] = ex_map[metric]
                row["abs_error"] = abs(value - ex_map[metric])
            rows.append(row)
    return rows


def cmd_demo(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    import fedeval as fe

    steps = tqdm(total=5, desc="fedeval demo", disable=args.quiet or args.json, file=sys.stderr)
    steps.set_postfix_str("building demo data (cached after the first run)")
    df = fe.demo.demo_frame(args.cache_dir)
    steps.update()
    fed = fe.Federation.from_frame(df, score="score", label="label", client="client")
    settings: dict[str, PrivacyModel] = {
        "SA": fe.SecureAggregation(),
        "DistDP eps=1": fe.DistributedDP(epsilon=1.0),
        "LDP eps=5": fe.LocalDP(epsilon=5.0),
    }
    evs = {}
    for i, (name, priv) in enumerate(settings.items()):
        steps.set_postfix_str(f"evaluating under {name}")
        ev = fe.evaluate(fed, priv, rng=args.seed + i)
        _ = ev.roc_auc_se, ev.average_precision_se  # computed here, inside the progress bar
        evs[name] = ev
        steps.update()
    steps.set_postfix_str("writing report")
    exact = _exact(fed.scores, fed.labels, args.thresholds)
    paths = fe.report.write_report(
        evs,
        args.out,
        thresholds=args.thresholds,
        exact=exact,
        title="fedeval demo: gradient boosting on a generated task",
    )
    steps.update()
    steps.close()
    rows = _metric_rows(evs, exact, 0.5)
    facts = _public_facts(fed, list(settings.values()))
    if args.json:
        print(
            json.dumps(
                {"federation": facts, "rows": rows, "report": str(paths["html"])}, default=float
            )
        )
    else:
        print(_describe(facts))
        _print_table(rows)
        print(f"\nreport: {paths['html']}  (markdown: {paths['markdown']})")
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    import fedeval as fe

    privacy = _privacy(args)
    fed = fe.read(
        args.file,
        score=args.score,
        label=args.label,
        client=args.client,
        score_range=(args.score_min, args.score_max),
    )
    for t in args.thresholds:
        if not args.score_min <= t <= args.score_max:
            raise CLIError(
                f"threshold {t} is outside the score domain [{args.score_min}, {args.score_max}]"
            )
    ev = fe.evaluate(
        fed,
        privacy,
        n_examples=args.examples,
        height=args.height,
        branching=args.branching,
        n_buckets=args.buckets,
        n_quantiles=args.quantiles,
        interpolation=args.interpolation,
        pr_strategy=args.pr_strategy,
        rng=args.seed,
    )
    name = model_label(privacy)
    exact = _exact(fed.scores, fed.labels, args.thresholds) if args.compare_exact else None
    paths = fe.report.write_report({name: ev}, args.out, thresholds=args.thresholds, exact=exact)
    facts = _public_facts(fed, [privacy], args.examples)
    if args.json:
        print(
            json.dumps(
                {"federation": facts, "summary": ev.summary(), "report": str(paths["html"])},
                default=float,
            )
        )
    else:
        print(f"{_describe(facts)}\n{ev.tree.guarantee}")
        _print_table(_metric_rows({name: ev}, exact, args.thresholds[0]))
        print(f"\nreport: {paths['html']}")
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    import fedeval as fe

    p = fe.plan(
        n_clients=args.clients,
        n_examples=args.examples,
        epsilon=args.epsilon,
        privacy=args.privacy,
        branching=args.branching,
        target_error=args.target_error,
    )
    if args.json:
        print(json.dumps(p.as_dict(), default=float))
        return 0
    d = p.as_dict()
    for k in (
        "privacy",
        "n_clients",
        "n_examples",
        "epsilon",
        "height",
        "branching",
        "n_buckets",
        "n_quantiles",
        "calibration_bins",
    ):
        print(f"{k:>18}: {d[k]}")
    for k, v in p.predicted_error.items():
        print(f"{'error ' + k:>18}: {v:.2e}")
    print(f"{'enough clients':>18}: {p.enough_clients} (target error {p.target_error:g})")
    for n in p.notes:
        print(f"note: {n}")
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    import fedeval as fe
    from fedeval.privacy.models import privacy_model
    from fedeval.report.calibration_report import heldout_comparison, write_calibration_report

    if args.privacy != "sa" and args.epsilon is None:
        raise CLIError(f"--privacy {args.privacy} needs --epsilon")
    kwargs: dict[str, Any] = {}
    if args.privacy == "userdp":
        if args.delta is None:
            raise CLIError("--privacy userdp needs --delta")
        kwargs["clip"] = args.clip if len(args.clip) == 1 else tuple(args.clip)
        if len(args.clip) == 1:
            kwargs["clip"] = args.clip[0]
    privacy = privacy_model(args.privacy, epsilon=args.epsilon, delta=args.delta, **kwargs)
    score: str | list[str] = args.score[0] if len(args.score) == 1 else list(args.score)
    fed = fe.read(
        args.file,
        score=score,
        label=args.label,
        client=args.client,
        kind=args.kind,
        score_range=(args.score_min, args.score_max),
    )
    if not 0.0 < args.test_fraction < 1.0:
        raise CLIError(f"--test-fraction must lie in (0, 1), got {args.test_fraction}")
    present = np.unique(fed.labels)
    if present.size < 2:
        # As `evaluate` refuses one-class files: a calibrator learned from one class
        # would be a constant, and the held-out errors are undefined.
        only = present[0] if present.size else "none"
        raise CLIError(
            f"every example in {args.file} has label {only}: calibration needs examples of "
            "at least two classes"
        )
    # Simulation: hold out whole clients to check the calibrator afterwards.
    try:
        train, test = fe.partition.split_clients(fed, args.test_fraction, rng=args.seed)
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    options: dict[str, Any] = {}
    if fed.kind != "binary":
        options = {"sampling_rate": args.sampling_rate}
        if args.rounds is not None:
            options["rounds"] = args.rounds
    cal = fe.calibrate(train, privacy, method=args.method, rng=args.seed, **options)
    paths = write_calibration_report(
        cal, test.scores, test.labels, args.out, privacy=privacy.describe()
    )
    heldout = heldout_comparison(cal, test.scores, test.labels)
    applied = getattr(cal, "procedure", {}).get("applied", True)
    if args.json:
        out: dict[str, Any] = {k: str(v) for k, v in paths.items()}
        out["heldout"] = heldout
        out["applied"] = bool(applied)
        print(json.dumps(out))
    else:
        print(
            f"{_describe(_public_facts(fed, [privacy]))}\n"
            f"calibrated by {args.method} on {train.n_clients} clients, "
            f"checked on {test.n_clients} held-out clients"
            + ("" if applied else " (declined: the identity map was kept)")
        )
        print(f"{'held-out':>14}  {'top-label ECE':>17}  {'classwise ECE':>17}  {'NLL':>17}")
        for name in ("before", "after"):
            h = heldout[name]
            print(
                f"{name:>14}  {h['ece_top']:8.4f} ± {h['ece_top_se']:.4f}  "
                f"{h['cwece']:8.4f} ± {h['cwece_se']:.4f}  {h['nll']:8.4f} ± {h['nll_se']:.4f}"
            )
        print("(± one standard error on the held-out clients)")
        print(f"calibrator: {paths['calibrator']}\nreport: {paths['html']}")
    return 0


def cmd_flower_sim(args: argparse.Namespace) -> int:
    from fedeval.flower.simulate import run_flower_sim_command

    return run_flower_sim_command(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fedeval", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="evaluate built-in demo data under SA, DistDP and LDP")
    demo.add_argument("--out", default="fedeval-report", help="report directory")
    demo.add_argument("--cache-dir", default=None, help="where the demo data are cached")
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--thresholds", type=float, nargs="+", default=[0.25, 0.5, 0.75])
    demo.add_argument("--json", action="store_true", help="machine-readable output")
    demo.add_argument("--quiet", action="store_true", help="no progress bar")
    demo.set_defaults(func=cmd_demo)

    ev = sub.add_parser("evaluate", help="evaluate a CSV/Parquet file of scores and labels")
    ev.add_argument("file")
    ev.add_argument("--score", required=True)
    ev.add_argument("--label", required=True)
    ev.add_argument("--client", default=None)
    ev.add_argument("--privacy", choices=["sa", "distdp", "ldp"], required=True)
    ev.add_argument("--epsilon", type=float, default=None)
    ev.add_argument("--noise", choices=["polya", "skellam"], default=None)
    ev.add_argument("--delta", type=float, default=None)
    ev.add_argument(
        "--examples",
        type=int,
        default=None,
        help="a number of examples you declare public (used to choose the parameters)",
    )
    ev.add_argument("--height", type=int, default=None)
    ev.add_argument("--branching", type=int, default=2)
    ev.add_argument("--buckets", type=int, default=None)
    ev.add_argument("--quantiles", type=int, default=None)
    ev.add_argument("--interpolation", choices=["pchip", "linear"], default="pchip")
    ev.add_argument("--pr-strategy", choices=["separate", "combine"], default="separate")
    ev.add_argument("--score-min", type=float, default=0.0)
    ev.add_argument("--score-max", type=float, default=1.0)
    ev.add_argument("--thresholds", type=float, nargs="+", default=[0.5])
    ev.add_argument(
        "--compare-exact",
        action="store_true",
        help="simulation only: also compute the exact pooled metrics",
    )
    ev.add_argument("--seed", type=int, default=None)
    ev.add_argument("--out", default="fedeval-report")
    ev.add_argument("--json", action="store_true")
    ev.set_defaults(func=cmd_evaluate)

    ca = sub.add_parser("calibrate", help="learn a calibrator from a file of scores and labels")
    ca.add_argument("file")
    ca.add_argument("--score", nargs="+", required=True, help="one column, or one per class")
    ca.add_argument("--label", required=True)
    ca.add_argument("--client", default=None)
    ca.add_argument("--kind", choices=["auto", "binary", "probabilities", "logits"], default="auto")
    ca.add_argument("--privacy", choices=["sa", "distdp", "ldp", "userdp"], required=True)
    ca.add_argument("--epsilon", type=float, default=None)
    ca.add_argument("--delta", type=float, default=None)
    ca.add_argument(
        "--clip", type=float, nargs="+", default=[1.0], help="C, or C+ C- for histograms"
    )
    ca.add_argument(
        "--method",
        default="bbq",
        choices=["binning", "bbq", "temperature", "vector", "matrix", "op-vector", "fedcal"],
    )
    ca.add_argument(
        "--rounds",
        type=int,
        default=None,
        help="rounds (default: 10 for scaling methods, 1 otherwise)",
    )
    ca.add_argument("--sampling-rate", type=float, default=1.0)
    ca.add_argument(
        "--test-fraction",
        type=float,
        default=0.3,
        help="fraction of clients held out to draw the before/after diagrams",
    )
    ca.add_argument("--score-min", type=float, default=0.0)
    ca.add_argument("--score-max", type=float, default=1.0)
    ca.add_argument("--seed", type=int, default=None)
    ca.add_argument("--out", default="fedeval-calibration")
    ca.add_argument("--json", action="store_true")
    ca.set_defaults(func=cmd_calibrate)

    pl = sub.add_parser("plan", help="parameters and predicted errors for a deployment")
    pl.add_argument("--clients", type=int, required=True)
    pl.add_argument("--examples", type=int, default=None)
    pl.add_argument("--privacy", choices=["sa", "distdp", "ldp"], default="distdp")
    pl.add_argument("--epsilon", type=float, default=None)
    pl.add_argument("--branching", type=int, default=2)
    pl.add_argument("--target-error", type=float, default=0.01)
    pl.add_argument("--json", action="store_true")
    pl.set_defaults(func=cmd_plan)

    from fedeval.flower.simulate import add_flower_sim_arguments

    fs = sub.add_parser(
        "flower-sim",
        help="partition a file over N simulated Flower clients and evaluate (needs fedeval[flower])",
    )
    add_flower_sim_arguments(fs)
    fs.set_defaults(func=cmd_flower_sim)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``fedeval`` command."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except (CLIError, ValueError, TypeError, FileNotFoundError) as exc:
        print(f"fedeval: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
