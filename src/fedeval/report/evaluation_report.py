"""Plots, the JSON payload and the self-contained HTML/Markdown report of an evaluation.

Plot functions return :class:`matplotlib.figure.Figure` objects built without
pyplot's global state, so they are safe in scripts, notebooks and servers.
:func:`evaluation_payload` is the one JSON shape of an evaluation: ``fedeval demo
--json``, ``fedeval evaluate --json`` and every ``results.json`` use it.
"""

from __future__ import annotations

import base64
import html
import io
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib.figure import Figure
from numpy.typing import NDArray

from fedeval.metrics.confusion import THRESHOLD_METRICS
from fedeval.report.files import json_safe, prepare_out_dir, write_report_files
from fedeval.report.style import (
    fmt,
    fmt_privacy,
    html_table,
    md_table,
    page,
    receipt_block,
    receipt_lines,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from fedeval.evaluation import Evaluation

__all__ = [
    "evaluation_payload",
    "fmt",
    "html_table",
    "md_table",
    "plot_pr",
    "plot_roc",
    "png_data_uri",
    "pr_band",
    "receipt_html",
    "source_lines",
    "write_report",
]

#: Version tag of :func:`evaluation_payload` (``fedeval.cli.JSON_SCHEMA`` is the same).
SCHEMA = "fedeval.evaluation/1"
_GRID = np.linspace(0.0, 1.0, 201)
_BAND_LEVEL = 0.9


# ------------------------------------------------------------------ uncertainty bands
def pr_band(
    ev: Evaluation, recall_grid: Any = None, *, level: float = _BAND_LEVEL
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Pointwise band of precision over the report's recall grid (:meth:`Evaluation.pr_band`)."""
    return ev.pr_band(_GRID if recall_grid is None else recall_grid, level=level)


def _bands(
    evaluations: Mapping[str, Evaluation], kind: str
) -> dict[str, tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]]:
    out = {}
    for name, ev in evaluations.items():
        if not ev.tree.guarantee.is_private or not ev.defined:
            continue
        out[name] = ev.roc_band(_GRID, level=_BAND_LEVEL) if kind == "roc" else pr_band(ev)
    return out


#: A band narrower than this (in axis units) cannot be seen at the figure's size.
_VISIBLE_WIDTH = 0.004


def _note_thin_bands(
    labels: dict[str, str],
    bands: Mapping[str, tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]],
) -> None:
    """Say in the legend when a band is narrower than the line, instead of drawing nothing."""
    for name, (_, lo, hi) in bands.items():
        width = hi - lo
        typical = float(np.nanmedian(width)) if np.isfinite(width).any() else float("nan")
        if typical < _VISIBLE_WIDTH:
            labels[name] += f"; band ~{typical:.0e}, thinner than the line"


def _zoom_window(
    curves: Mapping[str, tuple[NDArray[np.float64], NDArray[np.float64]]],
    bands: Mapping[str, tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]],
    centre_x: float,
) -> tuple[float, float, float, float]:
    """An inset window around ``centre_x`` large enough to show every band and curve there.

    Half-width: four times the widest band (or the spread of the curves) at that
    point, kept within [0.01, 0.2] so that the inset magnifies 2.5× to 50×.
    """
    ys, spreads = [], [0.0]
    for x, y in curves.values():
        order = np.argsort(x, kind="stable")
        ys.append(float(np.interp(centre_x, x[order], y[order])))
    for grid, lo, hi in bands.values():
        spreads.append(float(np.nanmax([np.interp(centre_x, grid, hi - lo), 0.0])))
    if len(ys) > 1:
        spreads.append(max(ys) - min(ys))
    half = min(max(4 * max(spreads), 0.01), 0.2)
    cy = float(np.mean(ys)) if ys else 0.5
    x0 = min(max(centre_x - half, 0.0), 1.0 - 2 * half)
    y0 = min(max(cy - half, 0.0), 1.0 - 2 * half)
    return x0, x0 + 2 * half, y0, y0 + 2 * half


def _draw(
    ax: Axes,
    curves: Mapping[str, tuple[NDArray[np.float64], NDArray[np.float64]]],
    bands: Mapping[str, tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]],
    colors: Mapping[str, str],
    labels: Mapping[str, str] | None,
    exact: tuple[NDArray[np.float64], NDArray[np.float64]] | None,
    *,
    step: bool,
) -> None:
    for name, (x, y) in curves.items():
        c = colors[name]
        if name in bands:
            grid, lo, hi = bands[name]
            ax.fill_between(grid, lo, hi, color=c, alpha=0.28, linewidth=0)
            ax.plot(grid, lo, color=c, linewidth=0.6, alpha=0.8)
            ax.plot(grid, hi, color=c, linewidth=0.6, alpha=0.8)
        label = labels[name] if labels else None
        if step:
            ax.step(x, y, where="post", color=c, linewidth=1.2, label=label)
        else:
            ax.plot(x, y, color=c, linewidth=1.2, label=label)
    if exact is not None:
        label = "exact (pooled)" if labels else None
        if step:
            ax.step(exact[0], exact[1], "k--", where="post", linewidth=0.9, label=label)
        else:
            ax.plot(exact[0], exact[1], "k--", linewidth=0.9, label=label)


def _plot_curves(
    curves: Mapping[str, tuple[NDArray[np.float64], NDArray[np.float64]]],
    bands: Mapping[str, tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]],
    labels: Mapping[str, str],
    exact: tuple[NDArray[np.float64], NDArray[np.float64]] | None,
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    step: bool,
    centre_x: float,
    inset_at: tuple[float, float, float, float],
    diagonal: bool,
) -> Figure:
    n_entries = len(curves) + (exact is not None)
    legend_in = 0.16 * n_entries + 0.55  # inches below the axes: tick labels, xlabel, legend
    height = 4.3 + legend_in
    fig = Figure(figsize=(5.0, height))
    ax = fig.add_axes((0.13, legend_in / height, 0.82, 3.95 / height))
    colors = {name: f"C{i}" for i, name in enumerate(curves)}
    _draw(ax, curves, bands, colors, labels, exact, step=step)
    if diagonal:
        ax.plot([0, 1], [0, 1], color="0.8", linewidth=0.8)
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title, xlim=(0, 1), ylim=(0, 1.01))
    ax.grid(alpha=0.3)
    finite = {k: v for k, v in curves.items() if np.isfinite(v[1]).any()}
    if finite:
        x0, x1, y0, y1 = _zoom_window(finite, bands, centre_x)
        inset = ax.inset_axes(inset_at)
        _draw(inset, finite, bands, colors, None, exact, step=step)
        inset.set(xlim=(x0, x1), ylim=(y0, y1))
        inset.tick_params(labelsize=6)
        inset.set_title(f"zoom ×{1 / (x1 - x0):.0f}", fontsize=7, pad=2)
        ax.indicate_inset_zoom(inset, edgecolor="0.3")
    fig.legend(loc="lower left", fontsize=7.5, ncol=1, frameon=False, bbox_to_anchor=(0.1, 0.0))
    return fig


def plot_roc(
    evaluations: Mapping[str, Evaluation],
    *,
    exact: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None,
    band: bool = True,
) -> Figure:
    """ROC curves with their 90 % pointwise bands from the privacy noise, the exact curve if known,
    and an inset zoomed on the knee of the curves where they overlap."""
    curves, labels = {}, {}
    for name, ev in evaluations.items():
        fpr, tpr, _ = ev.roc_curve()
        curves[name] = (fpr, tpr)
        labels[name] = f"{name} (AUC {fmt(ev.roc_auc)})"
    bands = _bands(evaluations, "roc") if band else {}
    _note_thin_bands(labels, bands)
    knee = 0.1
    for fpr, tpr in curves.values():
        if np.isfinite(tpr).any():
            knee = float(fpr[int(np.nanargmax(tpr - fpr))])
            break
    return _plot_curves(
        curves,
        bands,
        labels,
        exact,
        title="ROC (bands: 90 % from the privacy noise)",
        xlabel="false positive rate",
        ylabel="true positive rate",
        step=False,
        centre_x=knee,
        inset_at=(0.5, 0.06, 0.46, 0.46),
        diagonal=True,
    )


def plot_pr(
    evaluations: Mapping[str, Evaluation],
    *,
    exact: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None,
    band: bool = True,
) -> Figure:
    """Precision–recall curves (step interpolation, as average precision integrates them),
    with 90 % pointwise bands and an inset zoomed on the middle of the curves."""
    curves, labels = {}, {}
    for name, ev in evaluations.items():
        p, r, _ = ev.precision_recall_curve()
        curves[name] = (r, p)
        labels[name] = f"{name} (AP {fmt(ev.average_precision)})"
    bands = _bands(evaluations, "pr") if band else {}
    _note_thin_bands(labels, bands)
    ex = None if exact is None else (exact[1], exact[0])
    return _plot_curves(
        curves,
        bands,
        labels,
        ex,
        title="Precision–recall (bands: 90 %)",
        xlabel="recall",
        ylabel="precision",
        step=True,
        centre_x=0.5,
        inset_at=(0.06, 0.06, 0.46, 0.46),
        diagonal=False,
    )


def png_data_uri(fig: Figure) -> str:
    """The figure as base64 PNG (the payload of a ``data:image/png;base64,`` URI)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return base64.b64encode(buf.getvalue()).decode("ascii")


# ---------------------------------------------------------------------- payload
def _num(x: Any) -> float | None:
    """JSON-safe number: NaN and infinities become null."""
    v = float(x)
    return v if math.isfinite(v) else None


def _value(estimate: Any, se: Any, exact: float | None) -> dict[str, float | None]:
    out = {"estimate": _num(estimate), "se": _num(se)}
    if exact is not None:
        out["exact"] = _num(exact)
        out["abs_error"] = _num(abs(float(estimate) - float(exact)))
    return out


def evaluation_payload(
    evaluations: Mapping[str, Evaluation],
    *,
    thresholds: Sequence[float] = (0.5,),
    exact: Mapping[str, Any] | None = None,
    source: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The one JSON shape of evaluation results (schema ``fedeval.evaluation/1``).

    ``{"schema", "input", "thresholds", "evaluations": {name: {"privacy", "guarantee",
    "metrics": {"roc_auc"|"average_precision": {"estimate", "se"[, "exact",
    "abs_error"]}}`` (``roc_auc`` also has ``"sampling_se"``, DeLong), ``, "at_threshold": [{"threshold", "precision"|"recall"|"fpr"|"accuracy":
    {...}, "bucketization_bound"}], "parameters", "public_inputs", "receipt"}}}``.
    NaN (an undefined estimate) is written as null. ``exact`` values appear only when
    given (simulation, ``--compare-exact``); under DP ``input`` holds only public facts.
    When ``source`` says the number of examples is not public for the whole run (one
    setting is DP), no setting shows it, not even one where it would be public alone.
    """
    exact = dict(exact or {})
    at_exact = exact.get("at_threshold", {})
    count_public = _count_public(source)
    out: dict[str, Any] = {}
    for name, ev in evaluations.items():
        m = ev.at_threshold(np.asarray(thresholds, dtype=np.float64))
        at = []
        for i, t in enumerate(thresholds):
            row: dict[str, Any] = {"threshold": float(t)}
            for metric in THRESHOLD_METRICS:
                ex = at_exact.get(float(t), {}).get(metric)
                row[metric] = _value(
                    np.asarray(getattr(m, metric))[i], np.asarray(getattr(m, f"{metric}_se"))[i], ex
                )
            row["bucketization_bound"] = _num(np.asarray(m.bucketization_bound).reshape(-1)[0])
            at.append(row)
        out[name] = {
            "privacy": ev.tree.privacy,
            "guarantee": ev.guarantee_line,
            "guarantee_details": ev.guarantee_details,
            "metrics": {
                "roc_auc": {
                    **_value(ev.roc_auc, ev.roc_auc_se, exact.get("roc_auc")),
                    "sampling_se": _num(ev.roc_auc_sampling_se),
                },
                "average_precision": _value(
                    ev.average_precision, ev.average_precision_se, exact.get("average_precision")
                ),
            },
            "at_threshold": at,
            "parameters": json_safe(_shown_parameters(ev, count_public)),
            "public_inputs": _public_inputs(ev, count_public),
            "receipt": json_safe(ev.receipt.as_dict()),
        }
    return {
        "schema": SCHEMA,
        "input": json_safe(dict(source or {})),
        "thresholds": [float(t) for t in thresholds],
        "evaluations": out,
    }


# ------------------------------------------------------------------------ receipt
def receipt_html(ev: Evaluation, *, count_public: bool = True) -> str:
    """The privacy receipt of one evaluation as a readable block (see :func:`receipt_block`)."""
    return receipt_block(ev.receipt, [_public_inputs(ev, count_public)])


def _receipt_md(ev: Evaluation, count_public: bool) -> list[str]:
    return receipt_lines(ev.receipt, [_public_inputs(ev, count_public)])


# ------------------------------------------------------------------------- report
def source_lines(source: Mapping[str, Any] | None) -> list[str]:
    """The report header's input line(s) from ``source`` (a name and public sizes only)."""
    return _source_lines(source)


def _source_lines(source: Mapping[str, Any] | None) -> list[str]:
    if not source:
        return []
    name = html.escape(str(source.get("name", "input")))
    parts = []
    if source.get("n_clients") is not None:
        parts.append(f"{int(source['n_clients']):,} clients")
    m = source.get("n_examples")
    parts.append(f"{int(m):,} examples" if m is not None else "number of examples not public")
    lo, hi = source.get("score_range", (0.0, 1.0))
    parts.append(f"score domain [{float(lo):g}, {float(hi):g}]")
    task = source.get("kind")
    if task:
        parts.insert(0, f"{task} task")
    return [f"input: <b>{name}</b> — {html.escape(', '.join(parts))}"]


def write_report(
    evaluations: Mapping[str, Evaluation],
    out_dir: str | Path,
    *,
    thresholds: Sequence[float] = (0.25, 0.5, 0.75),
    exact: Mapping[str, Any] | None = None,
    title: str = "fedeval report",
    source: Mapping[str, Any] | None = None,
    force: bool = False,
) -> dict[str, Path]:
    """Write ``report.html`` (self-contained), ``report.md`` and ``results.json``.

    Files are written to temporary names and renamed at the end, so a failure
    leaves no partial report. A non-empty ``out_dir`` is refused unless
    ``force`` (:func:`fedeval.report.files.prepare_out_dir`).

    Parameters
    ----------
    evaluations : mapping name → Evaluation
    out_dir : path
    thresholds : sequence of float
        Thresholds for the threshold-metric table.
    exact : mapping, optional
        Exact pooled values (simulation only): keys "roc_auc", "average_precision",
        "roc" = (fpr, tpr), "pr" = (precision, recall), "at_threshold" = {t: {metric: value}}.
    title : str
    source : mapping, optional
        The input for the header: ``name`` and the public facts of
        ``fedeval.cli.public_facts`` (``kind``, ``n_clients``, ``n_examples`` or
        None when not public, ``score_range``).

    Returns
    -------
    dict of name → path

    Notes
    -----
    Public inputs: the report shows what each :class:`~fedeval.evaluation.Evaluation`
    publishes (metrics from the release, its parameters, its receipt) and the
    public inputs its parameters were planned from; under differential privacy
    that holds no exact count of the data. ``exact`` and ``source`` are shown as
    given: the caller passes only public facts there (``exact`` only in simulations).
    The HTML page is one file: inline stylesheet, figures as ``data:`` PNGs.
    """
    out = Path(out_dir)
    out = prepare_out_dir(out, force=force)
    exact = dict(exact or {})
    payload = evaluation_payload(evaluations, thresholds=thresholds, exact=exact, source=source)
    roc_png = png_data_uri(plot_roc(evaluations, exact=exact.get("roc")))
    pr_png = png_data_uri(plot_pr(evaluations, exact=exact.get("pr")))

    def with_se(v: Mapping[str, Any]) -> str:
        est, se = v["estimate"], v["se"]
        if est is None:
            return "n/a"
        return fmt(float(est)) + ("" if not se else f" ± {fmt(float(se))}")

    rows = []
    for name, ev in payload["evaluations"].items():
        row: dict[str, Any] = {"setting": name}
        for metric, label in (("roc_auc", "ROC AUC"), ("average_precision", "average precision")):
            v = ev["metrics"][metric]
            row[label] = with_se(v)
            if metric == "roc_auc":
                row["AUC sampling SE"] = (
                    "n/a" if v["sampling_se"] is None else fmt(v["sampling_se"])
                )
            if "exact" in v:
                row[f"{label} |error|"] = v["abs_error"]
        rec = evaluations[name].receipt
        row["ε spent"] = fmt_privacy(rec.epsilon_spent) if rec.guarantee.is_private else "— (no DP)"
        p = ev["parameters"]
        row["height"] = p["height"]
        row["AUC buckets"] = p["n_buckets"]
        row["quantiles"] = p["n_quantiles"]
        rows.append(row)
    thr_rows, err_rows = [], []
    for name, ev in payload["evaluations"].items():
        for at in ev["at_threshold"]:
            r: dict[str, Any] = {"setting": name, "threshold": f"{at['threshold']:g}"}
            e: dict[str, Any] = dict(r)
            for metric, spec in THRESHOLD_METRICS.items():
                r[spec.label] = with_se(at[metric])
                if "exact" in at[metric]:
                    e[f"{spec.label} |error|"] = at[metric]["abs_error"]
            thr_rows.append(r)
            if len(e) > 2:
                err_rows.append(e)
    errors_html = (
        f"<h3>Absolute errors against the exact pooled values (simulation; exact values in results.json)</h3>{html_table(err_rows)}"
        if err_rows
        else ""
    )
    note = (
        "Estimates are shown as value ± standard error from the privacy noise (delta method "
        "on the exact node variances, for every metric and the 90 % bands). The AUC sampling "
        "SE (DeLong, from the released histograms) is how far these examples' AUC may be from "
        "the population's; it is separate from the privacy noise. Bucketization error is "
        "separate too: it vanishes as the hierarchy height grows."
    )
    receipts = "".join(
        f"<h3>{html.escape(n)}</h3>{receipt_html(ev, count_public=_count_public(source))}"
        for n, ev in evaluations.items()
    )
    body = (
        "<section class='figures'>"
        f"<figure><img alt='ROC curves' src='data:image/png;base64,{roc_png}'>"
        "<figcaption>ROC curves; shaded: 90 % pointwise band from the privacy noise; "
        "inset: zoom on the knee of the curves.</figcaption></figure>"
        f"<figure><img alt='precision-recall curves' src='data:image/png;base64,{pr_png}'>"
        "<figcaption>Precision–recall curves; shaded: 90 % pointwise band; inset: zoom on "
        "mid recall.</figcaption></figure></section>"
        f"<h2>Summary</h2>{html_table(rows)}"
        f"<h2>Threshold metrics</h2>{html_table(thr_rows)}{errors_html}"
        f"<p class='note'>{note}</p>"
        f"<h2>Privacy receipt</h2>{receipts}"
    )
    html_doc = page(title, _source_lines(source), body)
    md = [f"# {title}", ""]
    md += [line.replace("<b>", "**").replace("</b>", "**") + "\n" for line in _source_lines(source)]
    md += ["## Summary", "", md_table(rows), "", "## Threshold metrics", "", md_table(thr_rows)]
    if err_rows:
        md += ["", "Against the exact pooled values (simulation):", "", md_table(err_rows)]
    md += ["", note, "", "## Privacy receipt", ""]
    for name, ev in evaluations.items():
        md += [f"### {name}", "", *_receipt_md(ev, _count_public(source))]
    return write_report_files(out, html_doc, "\n".join(md), payload)


def _count_public(source: Mapping[str, Any] | None) -> bool:
    """Whether the run may show a number of examples (False when its input says it is not public)."""
    return source is None or "n_examples" not in source or source["n_examples"] is not None


_HIDDEN = "not shown: not public under every setting of this run"


def _shown_parameters(ev: Evaluation, count_public: bool = True) -> dict[str, Any]:
    p = dict(ev.parameters)
    if not count_public and p.get("n_examples") is not None:
        p["n_examples"] = None
        p["public_inputs"] = {**p.get("public_inputs", {}), "n_examples": _HIDDEN}
    return p


def _public_inputs(ev: Evaluation, count_public: bool = True) -> str:
    """The public inputs the evaluation's parameters were planned from, in words."""
    p = _shown_parameters(ev, count_public)
    m = p.get("n_examples")
    source = p.get("public_inputs", {}).get("n_examples", "")
    examples = f"{m:,} examples ({source})" if m is not None else f"number of examples {source}"
    k = p.get("n_clients")
    clients = f"{k:,} participating clients" if k is not None else "number of clients not public"
    released = p.get("n_examples_released")
    if released is not None:
        examples += f"; planned from a released noisy count ≈ {released:,.0f}"
    return f"{clients}; {examples}"
