"""Report of a multiclass evaluation: confusion heat map, per-class curves, calibration.

Everything shown comes from one :class:`~fedeval.multiclass_evaluation.MulticlassEvaluation`
(one release): under differential privacy that holds no exact count of the
data. Figures are drawn on explicit :class:`matplotlib.figure.Figure` objects
and embedded in ``report.html``; ``report.md`` and ``results.json`` hold the
same numbers.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from fedeval.multiclass_evaluation import MulticlassEvaluation
from fedeval.report.evaluation_report import png_data_uri
from fedeval.report.files import json_safe, prepare_out_dir, write_report_files
from fedeval.report.style import fmt, html_table, md_table, page, receipt_block, receipt_lines

__all__ = [
    "SCHEMA",
    "plot_calibration",
    "plot_class_curves",
    "plot_confusion",
    "results_document",
    "write_multiclass_report",
]

_SCALARS = (
    ("accuracy", "accuracy"),
    ("balanced accuracy", "balanced_accuracy"),
    ("macro precision", "macro_precision"),
    ("macro recall", "macro_recall"),
    ("macro F1", "macro_f1"),
    ("weighted F1", "weighted_f1"),
    ("macro OvR ROC AUC", "roc_auc"),
    ("weighted OvR ROC AUC", "roc_auc_weighted"),
    ("top-label ECE", "ece_top_label"),
    ("classwise ECE", "ece_classwise"),
    ("log loss", "log_loss"),
    ("Brier score", "brier"),
)


def plot_confusion(ev: MulticlassEvaluation, *, normalize: bool = True) -> Figure:
    """Heat map of the confusion matrix (rows = true class), row-normalised by default.

    Under DP it is the evaluation's consistent, non-negative table
    (:meth:`~fedeval.multiclass_evaluation.MulticlassEvaluation.confusion_matrix`,
    a named post-processing step), so every row-normalised share lies in
    [0, 1], the range of the colour bar.
    """
    cm = ev.confusion_matrix()
    shown = cm
    if normalize:
        rows = cm.sum(axis=1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            shown = np.where(rows > 0, cm / rows, np.nan)
    c = ev.n_classes
    fig = Figure(figsize=(1.0 + 0.5 * c, 0.8 + 0.5 * c))
    ax = fig.add_subplot()
    im = ax.imshow(
        shown, cmap="viridis", vmin=0.0 if normalize else None, vmax=1.0 if normalize else None
    )
    fig.colorbar(im, ax=ax, label="share of the true class" if normalize else "count")
    if c <= 20:
        for i in range(c):
            for j in range(c):
                ax.text(j, i, f"{shown[i, j]:.2f}" if normalize else f"{cm[i, j]:.0f}",
                        ha="center", va="center", fontsize=7, color="white")  # fmt: skip
    ax.set_xlabel("predicted class (argmax)")
    ax.set_ylabel("true class")
    ax.set_title(
        "Confusion matrix"
        + (" (row-normalised)" if normalize else "")
        + (" — consistent, non-negative" if ev.private else "")
    )
    fig.tight_layout()
    return fig


def plot_class_curves(ev: MulticlassEvaluation) -> Figure:
    """Per-class one-vs-rest ROC (left) and precision–recall (right) curves."""
    fig = Figure(figsize=(10, 4.5))
    roc_ax, pr_ax = fig.subplots(1, 2)
    auc = ev.roc_auc_per_class
    for j in range(ev.n_classes):
        fpr, tpr, _ = ev.roc_curve(j)
        roc_ax.plot(fpr, tpr, lw=1, label=f"class {j} (AUC {auc[j]:.3f})")
        prec, rec, _ = ev.precision_recall_curve(j)
        pr_ax.step(rec, prec, where="post", lw=1, label=f"class {j}")
    roc_ax.plot([0, 1], [0, 1], color="grey", lw=0.5, ls="--")
    roc_ax.set_xlabel("false positive rate")
    roc_ax.set_ylabel("true positive rate")
    roc_ax.set_title("One-vs-rest ROC curves")
    roc_ax.legend(fontsize=6, loc="lower right")
    pr_ax.set_xlabel("recall")
    pr_ax.set_ylabel("precision")
    pr_ax.set_title("One-vs-rest precision–recall curves")
    pr_ax.set_ylim(0.0, 1.05)
    fig.tight_layout()
    return fig


def plot_calibration(ev: MulticlassEvaluation) -> Figure:
    """Reliability diagrams: top-label (left) and classwise (right), from the release."""
    fig = Figure(figsize=(10, 4.5))
    top_ax, cls_ax = fig.subplots(1, 2)
    top = ev.reliability()
    top_ax.plot([0, 1], [0, 1], color="grey", lw=0.5, ls="--")
    top_ax.plot(top["mean_predicted"], top["observed"], marker="o")
    top_ax.set_title(f"Top-label reliability (ECE {ev.ece_top_label:.4f})")
    top_ax.set_xlabel("confidence")
    top_ax.set_ylabel("accuracy")
    cls_ax.plot([0, 1], [0, 1], color="grey", lw=0.5, ls="--")
    for j in range(ev.n_classes):
        r = ev.reliability(j)
        cls_ax.plot(r["mean_predicted"], r["observed"], marker=".", lw=0.8, label=f"class {j}")
    cls_ax.set_title(f"Classwise reliability (cwECE {ev.ece_classwise:.4f})")
    cls_ax.set_xlabel("predicted probability of the class")
    cls_ax.set_ylabel("observed frequency")
    cls_ax.legend(fontsize=6)
    fig.tight_layout()
    return fig


def _rows(ev: MulticlassEvaluation) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The metrics that were released (``metrics=``), with their SEs."""
    se = ev.standard_errors
    values = ev.values
    scalars: list[dict[str, Any]] = [
        {"metric": label, "value": float(values[key]), "standard error": float(se[key])}
        for label, key in _SCALARS
        if key in values
    ]
    if "top_k_accuracy" in values:
        for k in range(1, min(ev.n_classes, 5) + 1):
            scalars.append(
                {
                    "metric": f"top-{k} accuracy",
                    "value": ev.top_k_accuracy(k),
                    "standard error": ev.top_k_accuracy_se(k),
                }
            )
    columns = (
        ("precision", "precision", None),
        ("recall", "recall", None),
        ("F1", "f1", None),
        ("OvR ROC AUC", "roc_auc_per_class", None),
        ("AUC SE", "roc_auc_per_class", "se"),
        ("classwise ECE", "ece_classwise_per_class", None),
    )
    per_class = [
        {"class": j}
        | {
            label: float((se if kind else values)[key][j])
            for label, key, kind in columns
            if key in values
        }
        for j in range(ev.n_classes)
    ]
    return scalars, per_class


SCHEMA = "fedeval.multiclass_evaluation/1"


def results_document(
    ev: MulticlassEvaluation,
    *,
    source: Mapping[str, Any] | None = None,
    exact: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """The JSON shape of a multiclass evaluation (schema ``fedeval.multiclass_evaluation/1``).

    ``{"schema", "input", "receipt", "summary"}``: ``summary`` is
    :meth:`~fedeval.multiclass_evaluation.MulticlassEvaluation.summary` (every
    metric with its standard error, the bounds, the parameters) without its
    receipt, which stands at the top level as in every fedeval document
    (``results.schema.json``). ``exact`` (simulations, ``--compare-exact``)
    holds the clear data's values of the same metrics. NaN is null.
    """
    summary = ev.summary()
    receipt = summary.pop("receipt")
    out = {"schema": SCHEMA, "input": dict(source or {}), "receipt": receipt, "summary": summary}
    if exact is not None:
        out["exact"] = dict(exact)
    return dict(json_safe(out))


def write_multiclass_report(
    ev: MulticlassEvaluation,
    out_dir: str | Path,
    *,
    name: str = "",
    title: str = "fedeval multiclass report",
    force: bool = False,
    source: Mapping[str, Any] | None = None,
    exact: Mapping[str, float] | None = None,
) -> dict[str, Path]:
    """Write ``report.html`` (figures embedded), ``report.md`` and ``results.json``.

    Parameters
    ----------
    ev : MulticlassEvaluation
    out_dir : path
    name : str
        The privacy model's label, shown in the title.
    title : str
    force : bool
        Overwrite the report files in a non-empty ``out_dir``.
    source : mapping, optional
        Public facts about the input (``results.json``'s ``input``).
    exact : mapping, optional
        Simulations only: the clear data's values of the summary's metrics, shown
        beside the release's with their absolute errors.

    Returns
    -------
    dict of "html", "markdown", "json" → path

    Notes
    -----
    Public inputs: only what ``ev`` publishes (metrics from the release, their
    standard errors, the bounds, the parameters and the receipt). Files are
    written all-or-nothing.
    """
    out = Path(out_dir)
    out = prepare_out_dir(out, force=force)
    scalars, per_class = _rows(ev)
    if exact is not None:  # simulation: the clear data's values beside the release's
        keys = dict(_SCALARS) | {"top-2 accuracy": "top_2_accuracy"}
        for row in scalars:
            key = keys.get(row["metric"])
            if key is not None and key in exact:
                row["exact"] = exact[key]
                row["|error|"] = abs(row["value"] - exact[key])
    receipt = ev.privacy_receipt()
    bounds = ev.bounds
    bound_rows = [
        {"quantity": label, "bound": bounds[key]}
        for label, key in (
            ("macro OvR AUC (bucketization, from the release)", "roc_auc"),
            ("top-label ECE (fine bins at their midpoints)", "ece"),
            ("mean log loss (fixed point)", "log_loss"),
            ("Brier score (fixed point)", "brier"),
        )
        if key in bounds
    ]
    p = ev.parameters
    params_text = (
        f"{p['n_bins']} probability bins, {p['ece_bins']} ECE bins, {p['loss_bins']} loss levels, "
        f"log loss clipped at −log p_min = {p['log_loss_bound']:.4g} (public), layout {p['layout']}; "
        f"parts released: {', '.join(p['kinds'])}"
        + (
            "; budget shares: " + ", ".join(f"{k} {v:.3f}" for k, v in p["budget_shares"].items())
            if p.get("budget_shares")
            else ""
        )
    )
    heading = f"{title}" + (f": {name}" if name else "")
    figures = {}
    if ev.sketch.has("confusion"):
        figures["Confusion matrix"] = plot_confusion(ev)
    if ev.sketch.has("one_vs_rest"):
        figures["Per-class curves"] = plot_class_curves(ev)
    if ev.sketch.has("top_label") and ev.sketch.has("one_vs_rest"):
        figures["Calibration"] = plot_calibration(ev)
    images = "".join(
        f"<section class='figures wide'><figure><img alt=\"{html.escape(k)}\" "
        f"src='data:image/png;base64,{png_data_uri(f)}'><figcaption>{html.escape(k)}"
        "</figcaption></figure></section>"
        for k, f in figures.items()
    )
    # The house style of every report (report/style.page): header, tables, the receipt block.
    header = [
        html.escape(str(getattr(ev.receipt, "guarantee_line", "") or ev.guarantee)),
        f"Parameters: {html.escape(params_text)}",
    ]
    body = (
        f"<h2>Summary (one release)</h2>{html_table(scalars)}"
        f"<h2>Per class</h2>{html_table(per_class)}"
        f"{images}"
        f"<h2>Bounds</h2>{html_table(bound_rows)}"
        f"<h2>Privacy receipt</h2>{receipt_block(ev.receipt)}{html_table(receipt)}"
    )
    html_doc = page(heading, header, body)
    md = [
        f"# {heading}",
        "",
        f"Guarantee: {ev.guarantee_line}",
        "",
        f"Parameters: {params_text}",
        "",
        "## Summary (one release)",
        md_table(scalars),
        "",
        "## Per class",
        md_table(per_class),
        "",
        "## Confusion matrix (rows = true class; under DP the consistent, non-negative table)",
        md_table(
            [
                {"true": i, **{str(j): fmt(float(v)) for j, v in enumerate(row)}}
                for i, row in enumerate(ev.confusion_matrix())
            ]
        )
        if ev.sketch.has("confusion")
        else "(not released)",
        "",
        "## Bounds",
        md_table(bound_rows),
        "",
        "## Privacy receipt",
        *receipt_lines(ev.receipt),
        md_table(receipt),
        "",
        ev.guarantee_details,
    ]
    return write_report_files(
        out, html_doc, "\n".join(md), results_document(ev, source=source, exact=exact)
    )
