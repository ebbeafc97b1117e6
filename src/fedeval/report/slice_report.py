"""Report of a sliced evaluation: the per-slice table, a forest plot, the gaps and the receipt.

Everything shown comes from one :class:`~fedeval.slicing.SlicedEvaluation`
(one release, one evaluation's ε): under differential privacy that holds no
exact count of any slice, and no undeclared slice value. The page has the
look of the binary report (:mod:`fedeval.report.style`). The forest plot
shows every declared slice's estimate with its interval, simultaneous over
the slices (Bonferroni), for the AUC, the TPR and FPR at a threshold and the
calibration error; the worst slice is marked.
"""

from __future__ import annotations

import html
import math
from collections.abc import Hashable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib.figure import Figure

from fedeval.report.evaluation_report import png_data_uri, source_lines
from fedeval.report.files import json_safe, write_report_files
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
    from fedeval.slicing import SlicedEvaluation

__all__ = ["SCHEMA", "plot_slice_forest", "slice_payload", "write_slice_report"]

#: Version tag of :func:`slice_payload` (``fedeval evaluate --slice ... --json`` prints it).
SCHEMA = "fedeval.slices/1"


def _panels(threshold: float) -> list[tuple[str, str, float | None]]:
    return [
        ("ROC AUC", "roc_auc", None),
        (f"TPR @ {threshold:g}", "recall", threshold),
        (f"FPR @ {threshold:g}", "fpr", threshold),
        ("calibration error (ECE)", "calibration_error", None),
    ]


def plot_slice_forest(
    sev: SlicedEvaluation,
    *,
    threshold: float = 0.5,
    level: float = 0.95,
    exact: Mapping[Hashable, float] | None = None,
) -> Figure:
    """Forest plot: one row per declared slice, one panel per metric, simultaneous intervals.

    The worst slice of each panel is drawn in red, and its interval for the
    true worst value (:meth:`~fedeval.slicing.SlicedEvaluation.worst`) is the
    shaded band. ``exact`` marks the slices' exact pooled AUCs (simulation only).
    """
    keys = list(sev.declared)
    panels = _panels(threshold)
    height = 1.6 + 0.34 * len(keys)
    fig = Figure(figsize=(10.5, height))
    axes = fig.subplots(1, len(panels), sharey=True)
    y = np.arange(len(keys))[::-1]
    for ax, (title, metric, t) in zip(axes, panels, strict=True):
        vals = sev.values(metric, threshold=t)
        iv = sev.intervals(metric, threshold=t, level=level)
        worst = sev.worst(metric, threshold=t, level=level)
        if math.isfinite(worst.lower) and math.isfinite(worst.upper):
            ax.axvspan(worst.lower, worst.upper, color="C3", alpha=0.12, linewidth=0)
        for yi, k in zip(y, keys, strict=True):
            v = vals[k]
            if not math.isfinite(v.estimate):
                continue
            color = "C3" if k == worst.slice else "C0"
            lo, hi = iv[k]
            if metric == "calibration_error":
                lo = max(lo, 0.0)
            ax.plot([lo, hi], [yi, yi], color=color, linewidth=2.0, solid_capstyle="butt")
            ax.plot([v.estimate], [yi], "s", color=color, markersize=5)
            if metric == "roc_auc" and exact and k in exact:
                ax.plot([exact[k]], [yi], "kx", markersize=6)
        ax.set_title(title, fontsize=9)
        ax.grid(axis="x", alpha=0.3)
        ax.tick_params(labelsize=7)
    axes[0].set_yticks(y)
    axes[0].set_yticklabels([str(k) for k in keys], fontsize=8)
    axes[0].set_ylim(-0.7, len(keys) - 0.3)
    fig.suptitle(
        f"Per-slice estimates with {level:.0%} intervals, simultaneous over the "
        f"{len(keys)} slices (red: worst slice; band: interval of the worst slice's value)",
        fontsize=9,
    )
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    return fig


def slice_payload(
    sev: SlicedEvaluation,
    *,
    threshold: float = 0.5,
    exact: Mapping[Hashable, float] | None = None,
    source: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON shape of a sliced evaluation (schema ``fedeval.slices/1``); NaN is null."""
    out = {
        "schema": SCHEMA,
        "input": dict(source or {}),
        "threshold": float(threshold),
        **sev.summary(threshold=threshold),
        "exact_roc_auc": None if not exact else {str(k): v for k, v in exact.items()},
    }
    return dict(json_safe(out))


def write_slice_report(
    sev: SlicedEvaluation,
    out_dir: str | Path,
    *,
    threshold: float = 0.5,
    exact: Mapping[Hashable, float] | None = None,
    title: str = "fedeval evaluation by slice",
    source: Mapping[str, Any] | None = None,
    slice_name: str = "slice",
) -> dict[str, Path]:
    """Write ``report.html`` (self-contained), ``report.md`` and ``results.json``.

    Parameters
    ----------
    sev : SlicedEvaluation
    out_dir : path
    threshold : float
        For the TPR, FPR and positive-rate columns and gaps.
    exact : mapping, optional
        Exact pooled AUC per slice (simulation only).
    title : str
    source : mapping, optional
        The input's public facts for the header.
    slice_name : str
        What the slices are (e.g. the column's name).

    Returns
    -------
    dict of "html", "markdown", "json" → path

    Notes
    -----
    Public inputs: the declared slice values, what ``sev`` publishes (the
    release's estimates, their standard errors, parameters and receipt), and
    ``source`` and ``exact`` as given. Files are written all-or-nothing.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    payload = slice_payload(sev, threshold=threshold, exact=exact, source=source)
    forest_png = png_data_uri(plot_slice_forest(sev, threshold=threshold, exact=exact))
    t = threshold
    auc_iv = sev.intervals("roc_auc", include_other=True)
    ce = sev.calibration_error(include_other=True)
    metrics = {
        m: sev.values(m, threshold=th, include_other=True)
        for m, th in (
            ("roc_auc", None),
            ("average_precision", None),
            ("recall", t),
            ("fpr", t),
            ("positive_rate", t),
        )
    }
    # Two tables, so that each fits the page (issue 29: a 12-column table was cut off).
    rows, threshold_rows = [], []
    for k, ev in sev.items():
        auc = metrics["roc_auc"][k]
        lo, hi = auc_iv[k]
        name = str(k) + (" (undeclared values)" if k == sev.other else "")
        row: dict[str, Any] = {
            slice_name: name,
            "positives (released)": f"{ev.n_positives:,.1f}",
            "negatives (released)": f"{ev.n_negatives:,.1f}",
            "ROC AUC": auc.estimate,
            "privacy SE": auc.privacy_se,
            "sampling SE": auc.sampling_se,
            "simultaneous 95 %": f"[{fmt(lo)}, {fmt(hi)}]",
            "avg precision": metrics["average_precision"][k].estimate,
        }
        if exact and k in exact:
            row["exact AUC"] = exact[k]
        rows.append(row)
        threshold_rows.append(
            {
                slice_name: name,
                f"TPR@{t:g}": metrics["recall"][k].estimate,
                f"FPR@{t:g}": metrics["fpr"][k].estimate,
                f"positive rate@{t:g}": metrics["positive_rate"][k].estimate,
                "ECE [interval]": f"{fmt(ce[k][0])} [{fmt(ce[k][1])}, {fmt(ce[k][2])}]",
            }
        )
    gap_rows = []
    for label, g in (
        ("ROC AUC", sev.gap("roc_auc")),
        (f"TPR@{t:g} (equal opportunity)", sev.tpr_gap(t)),
        (f"FPR@{t:g}", sev.fpr_gap(t)),
        (f"positive rate@{t:g} (demographic parity)", sev.positive_rate_gap(t)),
    ):
        gap_rows.append(
            {
                "gap (largest − smallest)": label,
                "estimate": g.estimate,
                "95 % interval": f"[{fmt(g.lower)}, {fmt(g.upper)}]",
                "best": str(g.best),
                "worst": str(g.worst),
            }
        )
    worst = sev.worst("roc_auc")
    worst_text = (
        f"worst slice by ROC AUC: {worst.slice} ({fmt(worst.estimate)}); the worst slice's "
        f"true AUC lies in [{fmt(worst.lower)}, {fmt(worst.upper)}] (95 %, accounting for "
        "picking it)"
    )
    note = (
        "One release for all slices: each example is in exactly one slice, so the spend is "
        "one evaluation's ε (parallel composition). Intervals over slices are simultaneous "
        "(Bonferroni); each combines the privacy SE and the sampling SE (DeLong for the "
        f"AUC). Rows whose {slice_name} is not a declared value are pooled in "
        f"'{sev.other}'; no undeclared value is published. Under DP the counts are noisy."
    )
    header = [
        *source_lines(source),
        f"slices: <b>{html.escape(slice_name)}</b>, declared values "
        f"{html.escape(', '.join(str(k) for k in sev.declared))}; one release for every "
        "slice, ε spent "
        + (fmt_privacy(sev.epsilon_spent) if sev.guarantee.is_private else "0 (no DP)"),
    ]
    body = (
        "<section class='figures wide'>"
        f"<figure><img alt='forest plot of the slices' "
        f"src='data:image/png;base64,{forest_png}'>"
        "<figcaption>Per-slice estimates with simultaneous 95 % intervals; the worst slice in "
        "red and the interval of its true value shaded.</figcaption></figure></section>"
        f"<h2>Slices</h2>{html_table(rows)}<p>{html.escape(worst_text)}</p>"
        f"<h3>At threshold {t:g}, and calibration</h3>{html_table(threshold_rows)}"
        f"<h2>Gaps between slices</h2>{html_table(gap_rows)}"
        f"<p class='note'>{html.escape(note)}</p>"
        f"<h2>Privacy receipt</h2>{receipt_block(sev.receipt)}"
    )
    html_doc = page(title, header, body)
    md = [f"# {title}", ""]
    md += [line.replace("<b>", "**").replace("</b>", "**") + "\n" for line in header]
    md += ["## Slices", "", md_table(rows), "", worst_text, ""]
    md += [f"### At threshold {t:g}, and calibration", "", md_table(threshold_rows), ""]
    md += ["## Gaps between slices", "", md_table(gap_rows), "", note, ""]
    md += ["## Privacy receipt", "", *receipt_lines(sev.receipt)]
    return write_report_files(out, html_doc, "\n".join(md), payload)
