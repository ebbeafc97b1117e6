"""Plots and the self-contained HTML/Markdown report of an evaluation.

Plot functions return :class:`matplotlib.figure.Figure` objects built without
pyplot's global state, so they are safe in scripts, notebooks and servers.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from numpy.typing import NDArray

from fedeval.evaluation import Evaluation
from fedeval.report.files import write_all_or_nothing

__all__ = ["fmt", "html_table", "md_table", "plot_pr", "plot_roc", "png_data_uri", "write_report"]


def plot_roc(
    evaluations: Mapping[str, Evaluation],
    *,
    exact: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None,
    band: bool = True,
) -> Figure:
    """ROC curves of several evaluations, with pointwise 90 % bands and the exact curve if known."""
    fig = Figure(figsize=(5, 5))
    ax = fig.add_subplot()
    for name, ev in evaluations.items():
        fpr, tpr, _ = ev.roc_curve()
        (line,) = ax.plot(fpr, tpr, label=f"{name} (AUC {ev.roc_auc:.4f})")
        if band and ev.tree.guarantee.unit != "none":
            grid, lo, hi = ev.roc_band()
            ax.fill_between(grid, lo, hi, color=line.get_color(), alpha=0.2, linewidth=0)
    if exact is not None:
        ax.plot(exact[0], exact[1], "k--", linewidth=1, label="exact (pooled)")
    ax.plot([0, 1], [0, 1], color="0.8", linewidth=0.8)
    ax.set(
        xlabel="false positive rate",
        ylabel="true positive rate",
        title="ROC",
        xlim=(0, 1),
        ylim=(0, 1.01),
    )
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    return fig


def plot_pr(
    evaluations: Mapping[str, Evaluation],
    *,
    exact: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None,
    band: bool = True,
) -> Figure:
    """Precision–recall curves (step interpolation, as average precision integrates them),
    with pointwise 90 % bands under differential privacy."""
    fig = Figure(figsize=(5, 5))
    ax = fig.add_subplot()
    for name, ev in evaluations.items():
        p, r, _ = ev.precision_recall_curve()
        (line,) = ax.step(r, p, where="post", label=f"{name} (AP {ev.average_precision:.4f})")
        if band and ev.tree.guarantee.unit != "none":
            grid, lo, hi = ev.pr_band()
            ax.fill_between(grid, lo, hi, color=line.get_color(), alpha=0.2, linewidth=0)
    if exact is not None:
        ax.step(exact[1], exact[0], "k--", where="post", linewidth=1, label="exact (pooled)")
    ax.set(
        xlabel="recall", ylabel="precision", title="Precision–recall", xlim=(0, 1), ylim=(0, 1.01)
    )
    ax.legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    return fig


def png_data_uri(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def fmt(x: Any) -> str:
    if isinstance(x, float):
        if math.isnan(x):
            return "n/a"
        return f"{x:.5f}" if abs(x) < 1e4 else f"{x:.4g}"
    return str(x)


def write_report(
    evaluations: Mapping[str, Evaluation],
    out_dir: str | Path,
    *,
    thresholds: Sequence[float] = (0.25, 0.5, 0.75),
    exact: Mapping[str, Any] | None = None,
    title: str = "fedeval report",
) -> dict[str, Path]:
    """Write ``report.html`` (plots embedded), ``report.md`` and ``results.json``.

    Files are written to temporary names and renamed at the end, so a failure
    leaves no partial report.

    Parameters
    ----------
    evaluations : mapping name → Evaluation
    out_dir : path
    thresholds : sequence of float
        Thresholds for the threshold-metric table.
    exact : mapping, optional
        Exact pooled values (simulation only): keys "roc_auc", "average_precision",
        "roc" = (fpr, tpr), "pr" = (precision, recall), "at_threshold" = {t: {metric: value}}.

    Returns
    -------
    dict of name → path

    Notes
    -----
    Public inputs: the report shows what each :class:`~fedeval.evaluation.Evaluation`
    publishes (metrics from the release, its parameters, its receipt) and the
    public inputs its parameters were planned from; under differential privacy
    that holds no exact count of the data. ``exact`` is the one exception, for
    simulations: whatever the caller passes there is shown as given.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    exact = dict(exact or {})
    roc_fig = plot_roc(evaluations, exact=exact.get("roc"))
    pr_fig = plot_pr(evaluations, exact=exact.get("pr"))

    rows = []
    for name, ev in evaluations.items():
        row = {
            "setting": name,
            "privacy": ev.tree.privacy,
            "epsilon_spent": ev.epsilon_spent,
            "roc_auc": ev.roc_auc,
            "roc_auc_se": ev.roc_auc_se,
            "roc_auc_sampling_se": ev.roc_auc_sampling_se,
            "average_precision": ev.average_precision,
            "average_precision_se": ev.average_precision_se,
            "height": ev.parameters["height"],
            "n_buckets": ev.parameters["n_buckets"],
            "n_quantiles": ev.parameters["n_quantiles"],
        }
        if "roc_auc" in exact:
            row["roc_auc_error"] = abs(ev.roc_auc - exact["roc_auc"])
        if "average_precision" in exact:
            row["average_precision_error"] = abs(ev.average_precision - exact["average_precision"])
        rows.append(row)

    thr_rows = []
    for name, ev in evaluations.items():
        m = ev.at_threshold(np.asarray(thresholds, dtype=np.float64))
        for i, t in enumerate(thresholds):
            r = {"setting": name, "threshold": float(t)}
            for metric in ("precision", "recall", "fpr", "accuracy"):
                r[metric] = float(getattr(m, metric)[i])
                r[f"{metric}_se"] = float(getattr(m, f"{metric}_se")[i])
                ex = exact.get("at_threshold", {}).get(float(t), {}).get(metric)
                if ex is not None:
                    r[f"{metric}_error"] = abs(r[metric] - ex)
            thr_rows.append(r)

    receipts = {name: ev.privacy_receipt() for name, ev in evaluations.items()}
    md = [
        f"# {title}",
        "",
        "## Summary",
        "",
        md_table(rows),
        "",
        "## Threshold metrics",
        "",
        md_table(thr_rows),
        "",
        "## Privacy receipt",
        "",
    ]
    inputs = {name: _public_inputs(ev) for name, ev in evaluations.items()}
    for name, rec in receipts.items():
        md.append(f"**{name}** — {evaluations[name].tree.guarantee}")
        md.append("")
        md.append(f"Public inputs: {inputs[name]}")
        md.append("")
        md.append(md_table(rec))
        md.append("")
    md += [
        "Standard errors (`_se`) are from the privacy noise only (delta method on the exact node",
        "variances, unless the bootstrap was asked for); `roc_auc_sampling_se` is the sampling",
        "uncertainty of the population AUC (DeLong, from the released histograms). Bucketization",
        "error is separate: it vanishes as the hierarchy height grows.",
        "",
    ]
    html_doc = f"""<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;max-width:1100px;margin:2em auto}}table{{border-collapse:collapse;font-size:13px}}
td,th{{border:1px solid #ccc;padding:3px 6px;text-align:right}}th{{background:#f3f3f3}}</style></head><body>
<h1>{html.escape(title)}</h1>
<img alt="ROC curves" src="data:image/png;base64,{png_data_uri(roc_fig)}">
<img alt="PR curves" src="data:image/png;base64,{png_data_uri(pr_fig)}">
<h2>Summary</h2>{html_table(rows)}
<h2>Threshold metrics</h2>{html_table(thr_rows)}
<h2>Privacy receipt</h2>
{"".join(f"<h3>{html.escape(n)}</h3><p>{html.escape(str(evaluations[n].tree.guarantee))}</p><p>Public inputs: {html.escape(inputs[n])}</p>{html_table(r)}" for n, r in receipts.items())}
</body></html>"""
    payload = {
        "summary": rows,
        "threshold_metrics": thr_rows,
        "privacy": receipts,
        "public_inputs": inputs,
    }
    targets = {
        "html": out / "report.html",
        "markdown": out / "report.md",
        "json": out / "results.json",
    }
    contents = {
        "html": html_doc,
        "markdown": "\n".join(md),
        "json": json.dumps(payload, indent=2, default=float),
    }
    write_all_or_nothing({targets[k]: contents[k] for k in targets})
    return targets


def _public_inputs(ev: Evaluation) -> str:
    """The public inputs the evaluation's parameters were planned from, in words."""
    p = ev.parameters
    m = p.get("n_examples")
    source = p.get("public_inputs", {}).get("n_examples", "")
    examples = f"{m} examples ({source})" if m is not None else f"number of examples {source}"
    return f"{p.get('n_clients')} participating clients; {examples}"


def md_table(rows: Sequence[Mapping[str, Any]]) -> str:
    if not rows:
        return ""
    cols = list(dict.fromkeys(k for r in rows for k in r))
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(fmt(r.get(c, "")) for c in cols) + " |" for r in rows]
    return "\n".join(lines)


def html_table(rows: Sequence[Mapping[str, Any]]) -> str:
    if not rows:
        return ""
    cols = list(dict.fromkeys(k for r in rows for k in r))
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(fmt(r.get(c, '')))}</td>" for c in cols) + "</tr>"
        for r in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"
