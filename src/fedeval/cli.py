"""The ``fedeval`` command.

``fedeval demo``       built-in data under SA, DistDP ε=1 and LDP ε=5, table + report
``fedeval evaluate``   a CSV/Parquet file of scores and labels (``--slice``: every slice, one release)
``fedeval compare``    two models' score columns of the same rows: paired differences, one release
``fedeval calibrate``  learn a calibrator, write it as JSON with a before/after report
``fedeval plan``       parameters and predicted errors for a deployment
``fedeval flower-sim`` the Flower apps (SecAgg+) on N simulated clients (needs fedeval[flower])
``fedeval monitor``    a model's metrics every period under one budget (folder of periods or --period)

Exit status 0 on success, 2 with a one-line reason on bad input.

Under differential privacy the commands print only public facts about the
data: the task, the number of clients and the score domain, and the number of
examples only when the privacy model makes it public or it was declared with
``--examples``. Everything else shown comes from the noisy release.

Start-up: this module imports only the standard library at import time (numpy,
pandas, scipy and matplotlib are imported inside the command functions), so
``fedeval --help`` and argument errors answer at once; ``tests/cli`` checks it.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn

from fedeval.cli_common import (
    CLIError,
    add_common_output,
    add_flower_sim_arguments,
    add_hierarchy,
    add_score_domain,
    describe_facts,
    print_json,
    public_facts,
)

if TYPE_CHECKING:
    from fedeval.evaluation import Evaluation
    from fedeval.privacy.models import PrivacyModel

__all__ = ["main"]

#: Version of the JSON that ``demo``, ``evaluate`` and ``results.json`` share.
JSON_SCHEMA = "fedeval.evaluation/1"


# ----------------------------------------------------------------- shared helpers
def _cli_words(message: str) -> str:
    """A library error message in the words of the command line.

    The library names its keyword arguments (``score_range=(low, high)``) and
    may show numpy scalars (``np.float64(1.5)``); the command line has options
    and plain numbers instead.
    """
    message = re.sub(r"np\.(?:float|int|uint|bool_?)\d*\(([^()]*)\)", r"\1", message)
    replacements = {
        "Pass score_range=(low, high) for another domain": (
            "Give --score-min and --score-max for another domain"
        ),
        "score_range=(low, high)": "--score-min/--score-max",
        "score_range": "score domain (--score-min, --score-max)",
        "n_examples=": "--examples ",
        "epsilon=": "--epsilon ",
        "delta must be None": "do not give --delta",
    }
    for old, new in replacements.items():
        message = message.replace(old, new)
    return message


def _check_out(out: str | Path, force: bool) -> None:
    """Refuse, before anything runs, an --out that is not a directory or is not empty."""
    path = Path(out)
    for parent in (path, *path.parents):
        if parent.exists() and not parent.is_dir():
            raise CLIError(f"--out {path}: {parent} exists and is not a directory")
        if parent.exists():
            break
    if not force and path.is_dir() and any(path.iterdir()):
        raise CLIError(
            f"--out {path} is not empty; choose another directory or pass --force to overwrite "
            "the report files in it"
        )


class _Steps:
    """One progress bar over a command's steps, naming the running step and its time.

    A thin layer over tqdm (on stderr, so ``--json`` output stays clean); disabled by
    ``--quiet`` and ``--json``. Use :meth:`step` as a context manager around each
    step; while a step runs, a helper thread redraws the bar twice a second so the
    elapsed time keeps moving through long steps (a release on millions of rows).
    """

    #: Bars drawn and not yet closed: :func:`main` clears them before printing an error,
    #: so the error is one line of its own, never glued to a bar.
    open_bars: ClassVar[list[_Steps]] = []

    def __init__(self, total: int, desc: str, *, disable: bool) -> None:
        from tqdm import tqdm

        self._bar = tqdm(
            total=total,
            desc=desc,
            disable=disable,
            file=sys.stderr,
            bar_format="{desc}: {n}/{total} steps |{bar:20}| {elapsed}{postfix}",
        )
        _Steps.open_bars.append(self)

    @contextmanager
    def step(self, what: str) -> Iterator[None]:
        import threading

        self._bar.set_postfix_str(what)
        start = time.perf_counter()
        stop = threading.Event()

        def redraw() -> None:
            while not stop.wait(0.5):
                self._bar.refresh()

        ticker = threading.Thread(target=redraw, daemon=True)
        if not self._bar.disable:
            ticker.start()
        try:
            yield
        except BaseException:
            self._bar.leave = False  # an error message follows: clear the bar
            self._bar.close()
            raise
        finally:
            stop.set()
            if ticker.is_alive():
                ticker.join()
        self._bar.set_postfix_str(f"{what} ({time.perf_counter() - start:.1f} s)")
        self._bar.update()

    def close(self) -> None:
        self._bar.set_postfix_str("done")
        self._bar.close()
        if self in _Steps.open_bars:
            _Steps.open_bars.remove(self)

    @classmethod
    def clear_all(cls) -> None:
        """Erase every open bar (an error message follows)."""
        while cls.open_bars:
            bar = cls.open_bars.pop()._bar
            bar.leave = False
            bar.close()


def _check_flags(args: argparse.Namespace) -> None:
    """Contradictory or incomplete option combinations, refused before any work."""
    name = args.privacy
    if name == "sa" and args.epsilon is not None:
        raise CLIError(
            "--privacy sa adds no noise and takes no --epsilon; choose --privacy distdp or ldp "
            "for differential privacy"
        )
    if name != "sa" and args.epsilon is None:
        raise CLIError(f"--privacy {name} needs --epsilon")
    if args.epsilon is not None and not args.epsilon > 0:
        raise CLIError(f"--epsilon must be > 0, got {args.epsilon:g}")
    noise = getattr(args, "noise", None)
    if noise is not None and name != "distdp":
        raise CLIError(f"--noise chooses the distdp noise shares; it does not apply to {name}")
    delta = getattr(args, "delta", None)
    takes_delta = (name == "distdp" and noise == "skellam") or name == "userdp"
    if delta is not None and not takes_delta:
        raise CLIError(
            f"--delta applies only to --privacy distdp --noise skellam and --privacy userdp, "
            f"not to --privacy {name}" + (f" --noise {noise}" if noise else "")
        )
    if delta is not None and not 0 < delta < 1:
        raise CLIError(f"--delta must lie in (0, 1), got {delta:g}")
    if name == "userdp" and delta is None:
        raise CLIError("--privacy userdp needs --delta")
    if name == "distdp" and noise == "skellam" and delta is None:
        raise CLIError("--noise skellam needs --delta")
    unit = getattr(args, "unit", "example")
    bound = getattr(args, "contribution_bound", None)
    if unit == "client" and name != "distdp":
        raise CLIError(
            f"--unit client (client-level DP) is offered with --privacy distdp, not {name}"
            + ("; --privacy userdp protects a client by clipping" if name != "sa" else "")
        )
    if unit == "client" and bound is None:
        raise CLIError(
            "--unit client needs --contribution-bound B: a public bound on one client's "
            "examples (clients with more keep a random B of them)"
        )
    if bound is not None and unit != "client":
        raise CLIError("--contribution-bound applies only with --unit client")
    if bound is not None and bound < 1:
        raise CLIError(f"--contribution-bound must be >= 1, got {bound}")
    if getattr(args, "score_min", 0.0) >= getattr(args, "score_max", 1.0):
        raise CLIError(
            f"--score-min ({args.score_min:g}) must be below --score-max ({args.score_max:g})"
        )
    for t in getattr(args, "thresholds", None) or ():
        if not args.score_min <= t <= args.score_max:
            raise CLIError(
                f"threshold {t:g} is outside the score domain "
                f"[{args.score_min:g}, {args.score_max:g}] (--score-min, --score-max)"
            )


def _privacy(args: argparse.Namespace, **kwargs: Any) -> PrivacyModel:
    """The privacy model the flags name (checked first); ``kwargs`` add model options."""
    from fedeval.privacy.models import privacy_model

    _check_flags(args)
    if args.privacy == "distdp" and getattr(args, "noise", None):
        kwargs["noise"] = args.noise
    if getattr(args, "unit", "example") == "client":
        kwargs["unit"] = "client"
        kwargs["contribution_bound"] = args.contribution_bound
    return privacy_model(
        args.privacy, epsilon=args.epsilon, delta=getattr(args, "delta", None), **kwargs
    )


def _source(path: str | None, facts: dict[str, Any], what: str | None = None) -> dict[str, Any]:
    """The report header's input: a name and only public sizes (never a byte count)."""
    return {
        "name": what or (Path(path).name if path else "input"),
        "path": str(path) if path else None,
        **facts,
    }


def _exact(scores: Any, labels: Any, thresholds: Sequence[float]) -> dict[str, Any]:
    from sklearn.metrics import (
        average_precision_score,
        precision_recall_curve,
        roc_auc_score,
        roc_curve,
    )

    from fedeval.metrics.confusion import exact_threshold_metrics

    fpr, tpr, _ = roc_curve(labels, scores)
    prec, rec, _ = precision_recall_curve(labels, scores)
    at = {float(t): exact_threshold_metrics(scores, labels, float(t)) for t in thresholds}
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
        if v != v:
            return "n/a"
        return f"{v:.4f}" if abs(v) >= 1e-4 or v == 0 else f"{v:.1e}"
    return str(v)


def _with_se(value: dict[str, Any]) -> str:
    est, se = value["estimate"], value["se"]
    if est is None:
        return "n/a"
    return _cell(float(est)) + (f" ± {_cell(float(se))}" if se else "")


def _metric_rows(payload: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Console tables from the JSON payload: one summary row per setting, one row per
    setting and threshold; ``estimate ± standard error``, plus |error| with exact values."""
    from fedeval.metrics.confusion import THRESHOLD_METRICS

    summary: list[dict[str, Any]] = []
    at_rows: list[dict[str, Any]] = []
    for name, ev in payload["evaluations"].items():
        row: dict[str, Any] = {"setting": name}
        for metric, label in (("roc_auc", "ROC AUC"), ("average_precision", "avg precision")):
            value = ev["metrics"][metric]
            row[label] = _with_se(value)
            if "abs_error" in value:
                row[f"|error| {label}"] = value["abs_error"]
        summary.append(row)
        for at in ev["at_threshold"]:
            r: dict[str, Any] = {"setting": name, "threshold": f"{at['threshold']:g}"}
            errors = []
            for metric, spec in THRESHOLD_METRICS.items():
                r[spec.label] = _with_se(at[metric])
                if at[metric].get("abs_error") is not None:
                    errors.append(at[metric]["abs_error"])
            if errors:
                r["max |error|"] = max(errors)
            at_rows.append(r)
    return summary, at_rows


def _receipt_line(receipt: Any) -> str:
    """The privacy receipt in one line (the report and --json have it in full)."""
    from fedeval.report.style import fmt_privacy, unit_in_words

    g = receipt.guarantee
    if not g.is_private:
        return f"privacy: {receipt.model}"
    delta = f", δ {fmt_privacy(receipt.delta_spent)}" if receipt.delta_spent else ""
    return (
        f"privacy: {receipt.model}; protects {unit_in_words(g.unit)}; neighbours: "
        f"{g.relation}; ε spent {fmt_privacy(receipt.epsilon_spent)}{delta}"
    )


def _emit(payload: dict[str, Any], as_json: bool, header: Sequence[str] = ()) -> None:
    if as_json:
        print_json(payload)
        return
    for line in header:
        print(line)
    summary, at_rows = _metric_rows(payload)
    print()
    _print_table(summary)
    print()
    _print_table(at_rows)
    paths = payload["report"]
    print(f"\nreport: {paths['html']}  (markdown: {paths['markdown']}, JSON: {paths['json']})")


# ----------------------------------------------------------------------- commands
def _binary(ev: object) -> Evaluation:
    """The binary :class:`Evaluation` that ``fe.evaluate`` returns for one --score column."""
    from fedeval.evaluation import Evaluation

    if not isinstance(ev, Evaluation):
        raise TypeError(f"expected a binary evaluation, got {type(ev).__name__}")
    return ev


def cmd_demo(args: argparse.Namespace) -> int:
    _check_out(args.out, args.force)
    args.score_min, args.score_max = 0.0, 1.0
    _check_flags_thresholds_only(args)
    import fedeval as fe
    from fedeval.report.evaluation_report import evaluation_payload

    steps = _Steps(6, "fedeval demo", disable=args.quiet or args.json)
    with steps.step("building demo data (cached after the first run)"):
        df = fe.demo.demo_frame(args.cache_dir)
        fed = fe.Federation.from_frame(df, score="score", label="label", client="client")
    settings: dict[str, PrivacyModel] = {
        "SA": fe.SecureAggregation(),
        "DistDP eps=1": fe.DistributedDP(epsilon=1.0),
        "LDP eps=5": fe.LocalDP(epsilon=5.0),
    }
    # The demo is a simulation whose cohort size is announced, as a deployment that
    # publishes how many clients it enrolled would: declared public, used to plan.
    public = fe.Public(n_clients=fed.n_clients)
    evs = {}
    for i, (name, priv) in enumerate(settings.items()):
        with steps.step(f"evaluating under {name}"):
            seed = None if args.seed is None else args.seed + i  # a seed is for simulation
            ev = _binary(fe.evaluate(fed, priv, public=public, rng=seed))
            _ = ev.roc_auc_se, ev.average_precision_se  # computed here, inside the progress bar
            evs[name] = ev
    with steps.step("exact pooled metrics (the demo is a simulation)"):
        exact = _exact(fed.scores, fed.labels, args.thresholds)
    facts = public_facts(fed, list(settings.values()), declared_clients=public.n_clients)
    source = _source(None, facts, "built-in demo data (gradient boosting on a generated task)")
    with steps.step("writing report"):
        paths = fe.report.write_report(
            evs,
            args.out,
            thresholds=args.thresholds,
            exact=exact,
            title="fedeval demo: gradient boosting on a generated task",
            source=source,
            force=args.force,
        )
    steps.close()
    payload = evaluation_payload(evs, thresholds=args.thresholds, exact=exact, source=source)
    payload["report"] = {k: str(v) for k, v in paths.items()}
    _emit(payload, args.json, [describe_facts(facts)])
    return 0


def _check_flags_thresholds_only(args: argparse.Namespace) -> None:
    for t in args.thresholds:
        if not args.score_min <= t <= args.score_max:
            raise CLIError(
                f"threshold {t:g} is outside the score domain [{args.score_min:g}, "
                f"{args.score_max:g}]"
            )


def _read_input(args: argparse.Namespace, steps: _Steps) -> Any:
    """Read ``args.file`` as a Federation, one progress step.

    One --score column means binary scores; several, one probability (or
    logit) column per class.
    """
    import fedeval as fe

    score: str | list[str] = args.score[0] if len(args.score) == 1 else list(args.score)
    with steps.step(f"reading {Path(args.file).name}"):
        return fe.read(
            args.file,
            score=score,
            label=args.label,
            client=args.client,
            kind=args.kind,
            score_range=(args.score_min, args.score_max),
        )


def cmd_evaluate(args: argparse.Namespace) -> int:
    privacy = _privacy(args)
    if (args.slice is None) != (args.slice_values is None):
        raise CLIError("--slice and --slice-values go together: the column and its public values")
    _check_out(args.out, args.force)
    import fedeval as fe
    from fedeval.privacy.models import model_label
    from fedeval.report.evaluation_report import evaluation_payload

    steps = _Steps(
        5 if args.compare_exact else 4, "fedeval evaluate", disable=args.quiet or args.json
    )
    fed = _read_input(args, steps)
    name = model_label(privacy)
    if fed.kind != "binary":
        if args.slice is not None:
            raise CLIError("--slice applies to binary scores (one --score column)")
        return _evaluate_multiclass(args, fed, privacy, name, steps)
    if args.slice is not None:
        return _evaluate_slices(args, fed, privacy, name, steps)
    with steps.step(f"release under {name}"):
        ev = fe.evaluate(
            fed,
            privacy,
            public=fe.Public(n_clients=args.public_clients, n_examples=args.examples),
            height=args.height,
            branching=args.branching,
            n_buckets=args.buckets,
            n_quantiles=args.quantiles,
            interpolation=args.interpolation,
            pr_strategy=args.pr_strategy,
            rng=args.seed,
        )
        ev = _binary(ev)
    with steps.step("standard errors"):
        _ = ev.roc_auc_se, ev.average_precision_se
    exact = None
    if args.compare_exact:
        with steps.step("exact pooled metrics (--compare-exact)"):
            exact = _exact(fed.scores, fed.labels, args.thresholds)
    facts = public_facts(fed, [privacy], args.examples, args.public_clients)
    source = _source(args.file, facts)
    with steps.step("writing report"):
        paths = fe.report.write_report(
            {name: ev},
            args.out,
            thresholds=args.thresholds,
            exact=exact,
            title=f"fedeval evaluation of {source['name']}",
            source=source,
            force=args.force,
        )
    steps.close()
    payload = evaluation_payload({name: ev}, thresholds=args.thresholds, exact=exact, source=source)
    payload["report"] = {k: str(v) for k, v in paths.items()}
    _emit(payload, args.json, [describe_facts(facts), _receipt_line(ev.receipt)])
    return 0


def _exact_multiclass(fed: Any, parameters: dict[str, Any]) -> dict[str, float]:
    """The metrics of the console table on the clear data (simulation: ``--compare-exact``).

    Same definitions as the release: top-label ECE over ``ece_bins`` equal-width
    left-closed bins of the top probability, log loss of the true-class probability
    clipped at p_min = exp(−log_loss_bound), Brier Σ_j (p_j − y_j)², macro
    one-vs-rest AUC over the classes present.
    """
    import numpy as np
    from sklearn import metrics as skm

    from fedeval.sketches.multiclass import softmax

    scores = np.asarray(fed.scores, dtype=np.float64)
    p = softmax(scores.copy()) if fed.kind == "logits" else scores
    y = np.asarray(fed.labels, dtype=np.int64)
    n, k = p.shape
    pred = p.argmax(axis=1)
    top = p[np.arange(n), pred]
    m = int(parameters["ece_bins"])
    bins = np.minimum((top * m).astype(np.int64), m - 1)
    hits = np.bincount(bins, weights=(pred == y).astype(np.float64), minlength=m)
    conf = np.bincount(bins, weights=top, minlength=m)
    present = [j for j in range(k) if 0 < np.count_nonzero(y == j) < n]
    floor = math.exp(-float(parameters["log_loss_bound"]))
    onehot = np.eye(k)[y]
    return {
        "accuracy": float(np.mean(pred == y)),
        "balanced_accuracy": float(skm.balanced_accuracy_score(y, pred)),
        "macro_f1": float(skm.f1_score(y, pred, average="macro", labels=np.arange(k))),
        "roc_auc": float(np.mean([skm.roc_auc_score(y == j, p[:, j]) for j in present])),
        "ece_top_label": float(np.abs(hits - conf).sum() / n),
        "log_loss": float(np.mean(-np.log(np.maximum(p[np.arange(n), y], floor)))),
        "brier": float(np.mean(((p - onehot) ** 2).sum(axis=1))),
        "top_2_accuracy": float(skm.top_k_accuracy_score(y, p, k=2, labels=np.arange(k))),
    }


def _evaluate_multiclass(
    args: argparse.Namespace, fed: Any, privacy: PrivacyModel, name: str, steps: _Steps
) -> int:
    """``evaluate`` on several --score columns: one release of the multiclass sketch."""
    import fedeval as fe
    from fedeval.report.multiclass_report import results_document, write_multiclass_report

    binary_only = [
        flag
        for flag, value, default in (
            ("--examples", args.examples, None),
            ("--height", args.height, None),
            ("--buckets", args.buckets, None),
            ("--quantiles", args.quantiles, None),
        )
        if value != default
    ]
    if binary_only:
        raise CLIError(
            f"{', '.join(binary_only)} apply to binary scores (one --score column), "
            f"not to {fed.n_classes} class columns"
        )
    with steps.step(f"release under {name}"):
        mev = fe.evaluate_multiclass(
            fed, privacy, rng=args.seed, public=fe.Public(n_clients=args.public_clients)
        )
        _ = mev.standard_errors
    facts = public_facts(fed, [privacy], None, args.public_clients)
    exact = _exact_multiclass(fed, mev.parameters) if args.compare_exact else None
    with steps.step("writing report"):
        paths = write_multiclass_report(
            mev, args.out, name=name, force=args.force, source=facts, exact=exact
        )
    steps.close()
    if args.json:
        payload = results_document(mev, source=facts, exact=exact)
        payload["report"] = {k: str(v) for k, v in paths.items()}
        print_json(payload)
        return 0
    print(f"{describe_facts(facts)}, {fed.n_classes} classes")
    print(_receipt_line(mev.receipt))
    se = mev.standard_errors
    rows: list[dict[str, Any]] = [
        {"metric": k, "estimate": float(mev.values[k]), "se": float(se[k])}
        for k in ("accuracy", "balanced_accuracy", "macro_f1", "roc_auc", "ece_top_label",
                  "ece_classwise", "log_loss", "brier")
    ]  # fmt: skip
    rows.append(
        {"metric": "top_2_accuracy", "estimate": mev.top_k_accuracy(2),
         "se": mev.top_k_accuracy_se(2)}
    )  # fmt: skip
    if exact is not None:  # simulation: the clear data's values beside the release's
        for row in rows:
            if row["metric"] in exact:
                row["exact"] = exact[row["metric"]]
                row["|error|"] = abs(row["estimate"] - exact[row["metric"]])
    print()
    _print_table(rows)
    print(f"\nreport: {paths['html']}")
    return 0


def _read_column(path: str, column: str) -> Any:
    """One column of a CSV/Parquet file as an array (the file was read once already)."""
    import numpy as np
    import pandas as pd

    p = Path(path)
    if "".join(p.suffixes).lower().endswith((".parquet", ".pq")):
        import pyarrow.parquet as pq

        names = pq.read_schema(p).names
        if column not in names:
            raise CLIError(f"--slice column {column!r} not found; available columns: {names}")
        return pq.read_table(p, columns=[column]).to_pandas()[column].to_numpy()
    names = list(pd.read_csv(p, nrows=0).columns)
    if column not in names:
        raise CLIError(f"--slice column {column!r} not found; available columns: {names}")
    return np.asarray(pd.read_csv(p, usecols=[column])[column].to_numpy())


def _typed_values(raw: Sequence[str], column: Any, flag: str) -> list[Any]:
    """The declared values in the column's type (numbers for a numeric column)."""
    kind = getattr(column, "dtype", None)
    kind = "O" if kind is None else column.dtype.kind
    out: list[Any] = []
    for v in raw:
        try:
            out.append(int(v) if kind in "iu" else float(v) if kind == "f" else v)
        except ValueError:
            raise CLIError(f"{flag} {v!r} is not a value of a numeric column") from None
    return out


def _evaluate_slices(
    args: argparse.Namespace, fed: Any, privacy: PrivacyModel, name: str, steps: _Steps
) -> int:
    """``evaluate --slice COL --slice-values ...``: every declared slice from one release."""
    import fedeval as fe
    from fedeval.report.slice_report import slice_payload, write_slice_report

    column = _read_column(args.file, args.slice)
    values = _typed_values(args.slice_values, column, "--slice-values")
    with steps.step(f"release of {len(values) + 1} slices under {name}"):
        sev = fe.evaluate(
            fed, privacy, slices=column, slice_values=values,
            public=fe.Public(n_clients=args.public_clients, n_examples=args.examples),
            height=args.height, branching=args.branching, rng=args.seed,
        )  # fmt: skip
    with steps.step("standard errors"):
        worst = sev.worst("roc_auc")
    exact = None
    if args.compare_exact:
        with steps.step("exact pooled AUC per slice (--compare-exact)"):
            from sklearn.metrics import roc_auc_score

            exact = {}
            for v in values:
                mask = column == v
                y = fed.labels[mask]
                if 0 < y.sum() < y.size:
                    exact[v] = float(roc_auc_score(y, fed.scores[mask]))
    facts = public_facts(fed, [privacy], args.examples, args.public_clients)
    source = _source(args.file, facts)
    t = float(args.thresholds[0])
    with steps.step("writing report"):
        paths = write_slice_report(
            sev, args.out, threshold=t, exact=exact, source=source, slice_name=args.slice,
            title=f"fedeval evaluation of {source['name']} by {args.slice}",
        )  # fmt: skip
    steps.close()
    payload = slice_payload(sev, threshold=t, exact=exact, source=source)
    payload["report"] = {k: str(v) for k, v in paths.items()}
    if args.json:
        print_json(payload)
        return 0
    print(describe_facts(facts))
    print(_receipt_line(sev.receipt) + f" (one release for {len(sev)} slices)")
    iv = sev.intervals("roc_auc", include_other=True)
    rows = []
    for k, ev in sev.items():
        row: dict[str, Any] = {
            args.slice: str(k),
            "ROC AUC": _with_se(
                {"estimate": ev.roc_auc, "se": ev.uncertainty()["roc_auc_total_se"]}
            ),
            "simultaneous 95%": f"[{_cell(iv[k][0])}, {_cell(iv[k][1])}]",
            f"TPR@{t:g}": _cell(float(ev.at_threshold(t).recall)),
            f"FPR@{t:g}": _cell(float(ev.at_threshold(t).fpr)),
        }
        if exact is not None:
            row["exact AUC"] = exact.get(k)
        rows.append(row)
    print()
    _print_table(rows)
    print(
        f"\nworst slice: {worst.slice} (AUC {_cell(worst.estimate)}; its true AUC in "
        f"[{_cell(worst.lower)}, {_cell(worst.upper)}]); AUC gap "
        f"{_cell(sev.gap('roc_auc').estimate)}, TPR gap {_cell(sev.tpr_gap(t).estimate)}"
    )
    print(f"report: {paths['html']}  (markdown: {paths['markdown']}, JSON: {paths['json']})")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    privacy = _privacy(args)
    if args.margin is not None and not (args.margin >= 0 and args.margin < float("inf")):
        raise CLIError(f"--margin must be a finite number >= 0, got {args.margin:g}")
    if args.score_a == args.score_b:
        raise CLIError(
            f"--score-a and --score-b name the same column {args.score_a!r}: a comparison "
            "needs the scores of two models"
        )
    _check_out(args.out, args.force)
    import fedeval as fe
    from fedeval.privacy.models import model_label
    from fedeval.report.compare_report import comparison_payload, write_compare_report

    steps = _Steps(
        5 if args.compare_exact else 4, "fedeval compare", disable=args.quiet or args.json
    )
    common = {
        "label": args.label,
        "client": args.client,
        "score_range": (args.score_min, args.score_max),
    }
    with steps.step(f"reading {Path(args.file).name}"):
        fed_a = fe.read(args.file, score=args.score_a, **common)
        fed_b = fe.read(args.file, score=args.score_b, **common)
    name = model_label(privacy)
    with steps.step(f"one release of both models under {name}"):
        cmp = fe.compare(
            fed_a, fed_b, privacy,
            public=fe.Public(n_clients=args.public_clients, n_examples=args.examples),
            height=args.height, branching=args.branching, pair_bins=args.pair_bins,
            rng=args.seed,
        )  # fmt: skip
    with steps.step("paired standard errors"):
        _ = cmp.roc_auc, cmp.average_precision
    exact = None
    if args.compare_exact:
        with steps.step("exact pooled differences (--compare-exact)"):
            exact = _exact_differences(fed_a, fed_b, args.thresholds)
    facts = public_facts(fed_a, [privacy], args.examples, args.public_clients)
    source = _source(args.file, facts)
    with steps.step("writing report"):
        paths = write_compare_report(
            cmp, args.out, thresholds=args.thresholds, margin=args.margin,
            names=(args.score_a, args.score_b), exact=exact, source=source,
            title=f"fedeval comparison on {source['name']}: {args.score_a} vs {args.score_b}",
        )  # fmt: skip
    steps.close()
    payload = comparison_payload(
        cmp, thresholds=args.thresholds, margin=args.margin, exact=exact, source=source
    )
    payload["report"] = {k: str(v) for k, v in paths.items()}
    if args.json:
        print_json(payload)
        return 0
    print(describe_facts(facts))
    print(_receipt_line(cmp.receipt) + " (one release for both models)")
    print(f"A = {args.score_a}, B = {args.score_b}; differences A − B")
    rows = []
    for label, d in [("ROC AUC", cmp.roc_auc), ("avg precision", cmp.average_precision)] + [
        (f"{m}@{t:g}", getattr(cmp.at_threshold(t), m))
        for t in args.thresholds
        for m in ("recall", "fpr", "precision", "accuracy")
    ]:
        lo, hi = d.interval(0.95)
        row: dict[str, Any] = {
            "metric": label,
            "A": d.a,
            "B": d.b,
            "A − B": d.estimate,
            "privacy SE": d.privacy_se,
            "sampling SE": d.sampling_se,
            "95% interval": f"[{_cell(lo)}, {_cell(hi)}]",
        }
        if exact is not None:
            row["exact A − B"] = exact.get(
                label if label != "avg precision" else "average precision"
            )
        rows.append(row)
    print()
    _print_table(rows)
    if args.margin is not None:
        ni = cmp.noninferiority(args.margin)
        verdict = "non-inferior" if ni.noninferior else "not shown non-inferior"
        print(
            f"\nnon-inferiority (AUC, margin {args.margin:g}): lower 95% bound of A − B "
            f"{_cell(ni.lower)}, p = {_cell(ni.p_value)}: A is {verdict}"
        )
    print(f"\nreport: {paths['html']}  (markdown: {paths['markdown']}, JSON: {paths['json']})")
    return 0


def _exact_differences(fed_a: Any, fed_b: Any, thresholds: Sequence[float]) -> dict[str, float]:
    """Exact pooled differences A − B (simulation only), keyed as the report's rows."""
    ea = _exact(fed_a.scores, fed_a.labels, thresholds)
    eb = _exact(fed_b.scores, fed_b.labels, thresholds)
    out = {
        "ROC AUC": ea["roc_auc"] - eb["roc_auc"],
        "average precision": ea["average_precision"] - eb["average_precision"],
    }
    labels = {
        "recall": "recall (TPR)",
        "fpr": "FPR",
        "precision": "precision",
        "accuracy": "accuracy",
    }
    for t in thresholds:
        for m, label in labels.items():
            out[f"{label} @ {t:g}"] = (
                ea["at_threshold"][float(t)][m] - eb["at_threshold"][float(t)][m]
            )
            out[f"{m}@{t:g}"] = out[f"{label} @ {t:g}"]
    return out


def cmd_plan(args: argparse.Namespace) -> int:
    _check_flags(args)
    import fedeval as fe
    from fedeval.planning import UNINFORMATIVE_ERROR

    p = fe.plan(
        n_clients=args.clients,
        n_examples=args.examples,
        epsilon=args.epsilon,
        privacy=args.privacy,
        branching=args.branching,
        target_error=args.target_error,
    )
    if args.json:
        print_json({"schema": "fedeval.plan/1", **p.as_dict()})
        return 0
    d = p.as_dict()
    labels = {
        "privacy": "privacy",
        **({"epsilon": "ε"} if d["epsilon"] is not None else {}),
        "n_clients": "clients",
        "n_examples": "examples",
        "height": "hierarchy height",
        "branching": "branching",
        "n_buckets": "AUC buckets",
        "n_quantiles": "quantiles",
        "calibration_bins": "calibration bins",
    }
    for k, label in labels.items():
        v = d[k]
        print(f"{label:>18}: {v:,}" if isinstance(v, int) else f"{label:>18}: {v}")
    words = {
        "threshold_metrics": "precision/recall",
        "auc": "ROC AUC",
        "roc_area_error": "ROC area error",
        "ece": "calibration ECE",
    }
    print("predicted errors (about 1 run in 10 exceeds them):")
    for k, v in p.predicted_error.items():
        mark = "ok" if v <= p.target_error else f"above the target {p.target_error:g}"
        shown = f"{v:.1e}" if v < UNINFORMATIVE_ERROR else f">= {UNINFORMATIVE_ERROR:g} (no signal)"
        print(f"{words.get(k, k):>18}: {shown}  {mark}")
    verdict = "yes" if p.enough_clients else "no"
    print(
        f"{'enough clients':>18}: {verdict} (every evaluation error within "
        f"--target-error {p.target_error:g})"
    )
    for n in p.notes:
        print(f"note: {n}")
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    if args.privacy != "userdp" and args.clip is not None:
        raise CLIError(f"--clip bounds user-level DP updates; it does not apply to {args.privacy}")
    multiclass = len(args.score) > 1
    if multiclass and args.privacy == "ldp":
        raise CLIError(
            "local DP calibrates binary scores (one --score column); for several class "
            "columns use --privacy distdp or central (--method binning or bbq), or userdp"
        )
    scaling = args.method not in ("binning", "bbq")
    if multiclass and scaling and args.privacy in ("distdp", "central"):
        raise CLIError(
            f"multiclass --method {args.method} learns from clipped model updates over "
            f"rounds, which --privacy userdp accounts for; under {args.privacy} use --method "
            "binning or bbq"
        )
    kwargs: dict[str, Any] = {}
    if args.privacy == "userdp":
        clip = args.clip or [1.0]
        kwargs["clip"] = clip[0] if len(clip) == 1 else tuple(clip)
    privacy = _privacy(args, **kwargs)
    _check_out(args.out, args.force)
    if not 0.0 < args.test_fraction < 1.0:
        raise CLIError(f"--test-fraction must lie in (0, 1), got {args.test_fraction:g}")
    import fedeval as fe
    from fedeval.report.calibration_report import heldout_comparison, write_calibration_report

    steps = _Steps(5, "fedeval calibrate", disable=args.quiet or args.json)
    fed = _read_input(args, steps)
    if fed.kind == "binary" and (args.rounds is not None or args.sampling_rate is not None):
        raise CLIError("--rounds and --sampling-rate apply to multiclass calibration only")
    import numpy as np

    present = np.unique(fed.labels)
    if present.size < 2 and privacy.regime == "exact":
        # Without DP the labels are not protected, so saying so leaks nothing: a calibrator
        # learned from one class would be a constant. Under DP this refusal would depend on
        # the data (neighbouring files would give output versus an error), so the release
        # runs and its noisy result says what it can.
        only = present[0] if present.size else "none"
        raise CLIError(
            f"every example in {args.file} has label {only}: calibration needs examples of "
            "at least two classes"
        )
    # Simulation: hold out whole clients to check the calibrator afterwards.
    holdout_note = ""
    with steps.step("holding out clients"):
        try:
            train, test = fe.partition.split_clients(fed, args.test_fraction, rng=args.seed)
        except ValueError as exc:
            if privacy.regime == "exact":
                raise CLIError(str(exc)) from None
            # Under DP a refusal that depends on the number of clients would leak it:
            # calibrate on every client and check on the same data (simulation output,
            # not covered by the receipt either way).
            train, test = fed, fed
            holdout_note = (
                " (too few clients to hold any out: the check uses the calibration data itself)"
            )
    options: dict[str, Any] = {}
    if fed.kind != "binary":
        options = {"sampling_rate": 1.0 if args.sampling_rate is None else args.sampling_rate}
        if args.rounds is not None:
            options["rounds"] = args.rounds
    with steps.step(f"learning the {args.method} calibrator"):
        cal = fe.calibrate(train, privacy, method=args.method, rng=args.seed, **options)
    with steps.step("held-out ECE and NLL"):
        heldout = heldout_comparison(cal, test.scores, test.labels)
    applied = getattr(cal, "procedure", {}).get("applied", True)
    with steps.step("writing report"):
        paths = write_calibration_report(
            cal,
            test.scores,
            test.labels,
            args.out,
            privacy=privacy.describe(),
            source=Path(args.file).name,
            title=f"fedeval calibration of {Path(args.file).name}",
            force=args.force,
        )
    steps.close()
    # results.json: the same document --json prints (issue 29: calibrate wrote none).
    paths["json"] = Path(paths["html"]).parent / "results.json"
    out: dict[str, Any] = {
        "schema": "fedeval.calibration/1",
        "input": public_facts(fed, [privacy]),
        "method": args.method,
        "applied": bool(applied),
        "heldout": heldout,
        "heldout_note": (
            "simulation check: exact metrics of the held-out clients, computed from their "
            "data, not covered by the privacy receipt" + holdout_note
        ),
        "receipt": cal.receipt,
        "report": {k: str(v) for k, v in paths.items()},
    }
    from fedeval.report.files import json_text

    paths["json"].write_text(json_text(out, indent=2), encoding="utf-8")
    if args.json:
        print_json(out)
    else:
        print(
            f"{describe_facts(public_facts(fed, [privacy]))}\n"
            + (
                f"calibrated by {args.method}"
                if applied
                else f"{args.method} declined: the identity map was kept"
            )
            + f" on the clients not held out ({privacy.describe()})"
        )
        print(
            f"simulation check on a held-out {args.test_fraction:g} of the clients: EXACT "
            "held-out metrics, computed here from the held-out data, not covered by the "
            "privacy receipt" + holdout_note
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
    _check_out(args.out, args.force)
    from fedeval.flower.simulate import run_flower_sim_command

    return run_flower_sim_command(args)


# ------------------------------------------------------------------------ parser
class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Defaults shown on every option; descriptions keep their line breaks."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        help_text = action.help or ""
        if action.default is None or isinstance(action, argparse._StoreTrueAction):
            return help_text  # "(default: None/False)" says nothing
        return super()._get_help_string(action)


def _add_privacy_arguments(p: argparse.ArgumentParser, choices: Sequence[str]) -> None:
    p.add_argument(
        "--privacy",
        choices=list(choices),
        required=True,
        help="sa: secure aggregation, exact sums, no DP; distdp: distributed DP, clients add "
        "noise shares that sum to discrete Laplace (unit: one example, or one client with "
        "--unit client)"
        + (
            "; central: central DP, a trusted curator adds the noise"
            if "central" in choices
            else ""
        )
        + "; ldp: local DP, each client randomises its own examples"
        + (" (binary scores)" if "userdp" in choices else "")
        + (
            "; userdp: user-level DP (unit: one client) by clipping + Gaussian"
            if "userdp" in choices
            else ""
        ),
    )
    p.add_argument(
        "--epsilon", type=float, default=None, help="ε of the DP guarantee (required unless sa)"
    )
    if "distdp" in choices:
        p.add_argument(
            "--unit",
            choices=["example", "client"],
            default="example",
            help="what distdp protects: one example, or one client's whole data (needs "
            "--contribution-bound)",
        )
        p.add_argument(
            "--contribution-bound",
            type=int,
            default=None,
            help="with --unit client: public bound B on one client's examples (a client with "
            "more keeps a random B)",
        )


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error (the usage block stays in ``--help``)."""

    def error(self, message: str) -> NoReturn:
        _Steps.clear_all()
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    from fedeval import __version__

    fmt = _HelpFormatter
    parser = _Parser(
        prog="fedeval",
        description="Private federated evaluation and calibration of classifiers: ROC AUC, "
        "ROC/PR curves, threshold metrics and calibrators from secure-aggregated, "
        "differentially private client summaries.",
        epilog="Run 'fedeval COMMAND --help' for a command's options. Start with 'fedeval demo'.",
        formatter_class=fmt,
    )
    parser.add_argument("--version", action="version", version=f"fedeval {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = sub.add_parser(
        "demo",
        help="evaluate built-in demo data under SA, DistDP and LDP",
        description="Evaluate 300,000 generated examples on ~30,000 clients under secure "
        "aggregation, distributed DP (ε=1) and local DP (ε=5), and write a report.",
        formatter_class=fmt,
    )
    demo.add_argument(
        "--cache-dir", default=None, help="where the demo data are cached (default: user cache)"
    )
    demo.add_argument(
        "--thresholds",
        type=float,
        nargs="+",
        default=[0.25, 0.5, 0.75],
        help="thresholds for precision/recall/FPR/accuracy",
    )
    add_common_output(demo, "fedeval-report")
    demo.set_defaults(func=cmd_demo)

    ev = sub.add_parser(
        "evaluate",
        help="evaluate a CSV/Parquet file of scores and labels",
        description="Evaluate a classifier from a CSV/Parquet file with one row per "
        "example: a score in the score domain and a 0/1 label (binary), or one probability "
        "or logit column per class and a class label 0..c-1 (multiclass); optionally a "
        "client id. Without --client every row is its own client.",
        formatter_class=fmt,
    )
    ev.add_argument("file", help="CSV or Parquet file, one row per example")
    ev.add_argument(
        "--score",
        nargs="+",
        required=True,
        help="score column (binary, values in the score domain), or one column per class "
        "(multiclass probabilities or logits, in class order)",
    )
    ev.add_argument(
        "--kind",
        choices=["auto", "binary", "probabilities", "logits"],
        default="auto",
        help="what the --score columns hold (auto: one column is binary scores, several are "
        "class probabilities; say logits for raw logits)",
    )
    ev.add_argument("--label", required=True, help="label column (0/1 binary, or the class 0..c-1)")
    ev.add_argument(
        "--client", default=None, help="client id column (default: every row is its own client)"
    )
    _add_privacy_arguments(ev, ["sa", "distdp", "central", "ldp"])
    ev.add_argument(
        "--noise",
        choices=["polya", "skellam"],
        default=None,
        help="distdp noise shares: polya (pure ε-DP, the default) or skellam (needs --delta)",
    )
    ev.add_argument("--delta", type=float, default=None, help="δ, with --noise skellam only")
    ev.add_argument(
        "--examples",
        type=int,
        default=None,
        help="a number of examples you declare public (used to choose the parameters)",
    )
    ev.add_argument(
        "--public-clients",
        type=int,
        default=None,
        help="a number of participating clients you declare public (used to choose the "
        "parameters and shown as given; under add/remove DP it is otherwise not public)",
    )
    add_hierarchy(ev)
    ev.add_argument(
        "--interpolation",
        choices=["pchip", "linear"],
        default="pchip",
        help="how ROC/PR curves interpolate between released quantiles",
    )
    ev.add_argument(
        "--pr-strategy",
        choices=["separate", "combine"],
        default="separate",
        help="PR curve from per-class quantiles (separate) or pooled ones (combine)",
    )
    add_score_domain(ev)
    ev.add_argument(
        "--thresholds",
        type=float,
        nargs="+",
        default=[0.5],
        help="thresholds for precision/recall/FPR/accuracy",
    )
    ev.add_argument(
        "--compare-exact",
        action="store_true",
        help="simulation only: also compute the exact pooled metrics and the errors",
    )
    ev.add_argument(
        "--slice",
        default=None,
        help="evaluate every slice of this column from one release (parallel composition: "
        "one evaluation's ε); needs --slice-values",
    )
    ev.add_argument(
        "--slice-values",
        nargs="+",
        default=None,
        help="the column's public values, one slice each; rows with any other value form "
        "one 'other' slice (undeclared values are never shown)",
    )
    add_common_output(ev, "fedeval-evaluation")
    ev.set_defaults(func=cmd_evaluate)

    co = sub.add_parser(
        "compare",
        help="compare two models' scores of the same rows (paired, one release)",
        description="Compare model A with model B on the same examples: two score columns of "
        "one CSV/Parquet file. One release holds both models' hierarchies and a pair grid; "
        "every difference A − B gets a privacy SE and a paired sampling SE (DeLong, McNemar).",
        formatter_class=fmt,
    )
    co.add_argument("file", help="CSV or Parquet file, one row per example")
    co.add_argument("--score-a", required=True, help="model A's score column (the challenger)")
    co.add_argument("--score-b", required=True, help="model B's score column (the reference)")
    co.add_argument("--label", required=True, help="label column (0/1)")
    co.add_argument(
        "--client", default=None, help="client id column (default: every row is its own client)"
    )
    _add_privacy_arguments(co, ["sa", "distdp", "central", "ldp"])
    co.add_argument(
        "--noise",
        choices=["polya", "skellam"],
        default=None,
        help="distdp noise shares: polya (pure ε-DP, the default) or skellam (needs --delta)",
    )
    co.add_argument("--delta", type=float, default=None, help="δ, with --noise skellam only")
    co.add_argument(
        "--examples",
        type=int,
        default=None,
        help="a number of examples you declare public (used to choose the parameters)",
    )
    co.add_argument(
        "--public-clients",
        type=int,
        default=None,
        help="a number of participating clients you declare public",
    )
    co.add_argument(
        "--height", type=int, default=None, help="hierarchy height h (default: planned)"
    )
    co.add_argument("--branching", type=int, default=2, help="branching factor b")
    co.add_argument(
        "--pair-bins",
        type=int,
        default=None,
        help="bins per axis of the pair grid (b**g; default 16 under DP, 64 without)",
    )
    co.add_argument(
        "--margin",
        type=float,
        default=None,
        help="non-inferiority margin on the AUC (and AP): is A worse than B by less than this?",
    )
    add_score_domain(co)
    co.add_argument(
        "--thresholds",
        type=float,
        nargs="+",
        default=[0.5],
        help="thresholds for the differences of precision/recall/FPR/accuracy",
    )
    co.add_argument(
        "--compare-exact",
        action="store_true",
        help="simulation only: also compute the exact pooled differences",
    )
    add_common_output(co, "fedeval-comparison")
    co.set_defaults(func=cmd_compare)

    ca = sub.add_parser(
        "calibrate",
        help="learn a calibrator from a file of scores and labels",
        description="Learn a calibrator on 1 - --test-fraction of the clients, write it as "
        "calibrator.json and draw reliability diagrams before/after on the held-out clients.",
        formatter_class=fmt,
    )
    ca.add_argument("file", help="CSV or Parquet file, one row per example")
    ca.add_argument(
        "--score",
        nargs="+",
        required=True,
        help="one column (binary), or one column per class (multiclass)",
    )
    ca.add_argument("--label", required=True, help="label column (0/1, or 0..C-1)")
    ca.add_argument(
        "--client", default=None, help="client id column (default: every row is its own client)"
    )
    ca.add_argument(
        "--kind",
        choices=["auto", "binary", "probabilities", "logits"],
        default="auto",
        help="what the score columns hold",
    )
    _add_privacy_arguments(ca, ["sa", "distdp", "central", "ldp", "userdp"])
    ca.add_argument("--delta", type=float, default=None, help="δ, with --privacy userdp")
    ca.add_argument(
        "--clip",
        type=float,
        nargs="+",
        default=None,
        help="userdp only: clipping bound C, or C+ C- for histograms (default: 1.0)",
    )
    ca.add_argument(
        "--method",
        default="bbq",
        choices=["binning", "bbq", "temperature", "vector", "matrix", "op-vector", "fedcal"],
        help="calibration method",
    )
    ca.add_argument(
        "--rounds",
        type=int,
        default=None,
        help="multiclass only: federated rounds (default: 10 for the scaling methods, 1 otherwise)",
    )
    ca.add_argument(
        "--sampling-rate",
        type=float,
        default=None,
        help="multiclass only: fraction of clients sampled per round (default: 1.0)",
    )
    ca.add_argument(
        "--test-fraction",
        type=float,
        default=0.3,
        help="fraction of clients held out to draw the before/after diagrams",
    )
    add_score_domain(ca)
    add_common_output(ca, "fedeval-calibration")
    ca.set_defaults(func=cmd_calibrate)

    pl = sub.add_parser(
        "plan",
        help="parameters and predicted errors for a deployment",
        description="Choose the hierarchy height, buckets and quantiles from public inputs "
        "only, and predict the errors.",
        formatter_class=fmt,
    )
    pl.add_argument("--clients", type=int, required=True, help="number of participating clients")
    pl.add_argument(
        "--examples",
        type=int,
        default=None,
        help="a public number of examples (default: one per client)",
    )
    pl.add_argument(
        "--privacy",
        choices=["sa", "distdp", "ldp"],
        default="distdp",
        help="privacy model (see fedeval evaluate --help)",
    )
    pl.add_argument("--epsilon", type=float, default=None, help="ε (required unless sa)")
    pl.add_argument("--branching", type=int, default=2, help="branching factor b")
    pl.add_argument(
        "--target-error",
        type=float,
        default=0.01,
        help="absolute error that counts as enough clients",
    )
    pl.add_argument("--json", action="store_true", help="print the plan as JSON")
    pl.set_defaults(func=cmd_plan)

    fs = sub.add_parser(
        "flower-sim",
        help="partition a file over N simulated Flower clients and evaluate (needs fedeval[flower])",
        description="Run fedeval's Flower ClientApp and ServerApp (SecAgg+) in Flower's "
        "simulation engine. Exits non-zero if the run fails.",
        formatter_class=fmt,
    )
    add_flower_sim_arguments(fs)
    fs.set_defaults(func=cmd_flower_sim)

    from fedeval.cli_monitor import add_monitor_arguments, cmd_monitor

    mo = sub.add_parser(
        "monitor",
        help="evaluate a model every period under one budget (continual release, drift alarms)",
        description="Release every period's evaluation through one continual mechanism whose "
        "budget covers the whole horizon, test for drift after every period, and write a trend "
        "page. Periods: a folder of per-period files, or one file with a --period column.",
        formatter_class=fmt,
    )
    add_monitor_arguments(mo)
    mo.set_defaults(func=cmd_monitor)
    return parser


def _print_line(text: str) -> None:
    """One line on stderr, on a line of its own even while a progress bar is drawn."""
    tqdm_module = sys.modules.get("tqdm")
    if tqdm_module is not None:
        tqdm_module.tqdm.write(text, file=sys.stderr)  # clears the bar, prints, redraws
    else:
        print(text, file=sys.stderr)


@contextmanager
def _warnings_as_lines() -> Iterator[None]:
    """Every warning printed as one line, ``fedeval: warning: <message>``.

    Python's default prints the source path, the line number and the code line,
    glued onto the progress bar's line; a command-line user needs the message
    only. Each distinct message is printed once per command.
    """
    import warnings

    seen: set[str] = set()

    def show(message: Warning | str, *_: object, **__: object) -> None:
        text = " ".join(str(message).split())
        if text not in seen:
            seen.add(text)
            _print_line(f"fedeval: warning: {text}")

    from fedeval.exceptions import FedevalWarning

    with warnings.catch_warnings():
        # Every fedeval warning of this command, even if the process showed it before (the
        # "default" action shows one once per code location per process; ``seen`` dedupes).
        warnings.simplefilter("always", FedevalWarning)
        warnings.showwarning = show
        yield


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``fedeval`` command."""
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        with _warnings_as_lines():
            return int(func(args))
    except (CLIError, ValueError, TypeError, FileNotFoundError) as exc:
        _Steps.clear_all()
        print(f"fedeval: error: {_cli_words(str(exc))}", file=sys.stderr)
        return 2
    finally:
        _Steps.open_bars.clear()


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
