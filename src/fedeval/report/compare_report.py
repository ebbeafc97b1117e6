"""Report of a paired comparison: the differences with their intervals, both curves, the receipt.

Everything shown comes from one :class:`~fedeval.comparison.Comparison` (one
release): under differential privacy that holds no exact count of the data.
The page has the look of the binary report (:mod:`fedeval.report.style`): the
paired-difference plot (every difference A − B with its 95 % interval from the
total standard error, and the narrower one from the privacy noise alone), the
two models' ROC curves from the same release, the tables and the receipt.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib.figure import Figure

from fedeval.report.evaluation_report import plot_roc, png_data_uri, source_lines
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
    from fedeval.comparison import Comparison, PairedDifference

__all__ = ["SCHEMA", "comparison_payload", "plot_paired_differences", "write_compare_report"]

#: Version tag of :func:`comparison_payload` (``fedeval compare --json`` prints it).
SCHEMA = "fedeval.comparison/1"

_LABELS = {
    "roc_auc": "ROC AUC",
    "average_precision": "average precision",
    "precision": "precision",
    "recall": "recall (TPR)",
    "fpr": "FPR",
    "accuracy": "accuracy",
}


def _rows(cmp: Comparison, thresholds: Sequence[float]) -> list[tuple[str, PairedDifference]]:
    rows = [("ROC AUC", cmp.roc_auc), ("average precision", cmp.average_precision)]
    for t in thresholds:
        d = cmp.at_threshold(float(t))
        for metric in ("recall", "fpr", "precision", "accuracy"):
            rows.append((f"{_LABELS[metric]} @ {t:g}", getattr(d, metric)))
    return rows


def plot_paired_differences(
    cmp: Comparison,
    *,
    thresholds: Sequence[float] = (0.5,),
    margin: float | None = None,
    exact: Mapping[str, float] | None = None,
) -> Figure:
    """Every difference A − B with its 95 % interval (total SE; inner: privacy SE alone).

    A vertical line at 0; with ``margin`` a dashed line at −margin (A is
    non-inferior on the AUC when the AUC's interval lies right of it, one-sided
    at 95 %: the lower end of a 90 % two-sided interval). ``exact`` marks the
    exact pooled differences (simulation only), keyed by the row labels.
    """
    rows = _rows(cmp, thresholds)
    height = 1.2 + 0.42 * len(rows)
    fig = Figure(figsize=(7.0, height))
    ax = fig.add_axes((0.32, 0.9 / height, 0.64, (height - 1.5) / height))
    y = np.arange(len(rows))[::-1]
    for yi, (label, d) in zip(y, rows, strict=True):
        if not math.isfinite(d.estimate):
            ax.text(0.0, yi, "  n/a", va="center", fontsize=8, color="0.4")
            continue
        lo, hi = d.interval(0.95)
        plo, phi = d.interval(0.95, privacy_only=True)
        ax.plot([lo, hi], [yi, yi], color="C0", linewidth=2.2, solid_capstyle="butt")
        ax.plot([plo, phi], [yi, yi], color="C1", linewidth=5.0, alpha=0.55)
        ax.plot([d.estimate], [yi], "o", color="C0", markersize=5)
        if exact and label in exact and math.isfinite(exact[label]):
            ax.plot([exact[label]], [yi], "kx", markersize=6)
    ax.axvline(0.0, color="0.4", linewidth=0.8)
    if margin is not None:  # tested on the AUC and the AP only (the top two rows)
        ax.plot([-margin, -margin], [y[1] - 0.45, y[0] + 0.45], color="C3", linestyle="--",
                linewidth=0.9)  # fmt: skip
    ax.set_yticks(y)
    ax.set_yticklabels([label for label, _ in rows], fontsize=8)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xlabel("difference A − B")
    ax.grid(axis="x", alpha=0.3)
    ax.set_title("Paired differences (95 % intervals)", fontsize=10)
    handles = [
        ax.plot([], [], color="C0", linewidth=2.2)[0],
        ax.plot([], [], color="C1", linewidth=5.0, alpha=0.55)[0],
    ]
    names = ["total SE (covers the population)", "privacy SE (covers these examples)"]
    if margin is not None:
        handles.append(ax.plot([], [], color="C3", linestyle="--")[0])
        names.append(f"−margin ({margin:g}), AUC and AP")
    if exact:
        handles.append(ax.plot([], [], "kx")[0])
        names.append("exact pooled (simulation)")
    fig.legend(handles, names, loc="lower left", fontsize=7.5, frameon=False, ncol=2,
               bbox_to_anchor=(0.02, 0.0))  # fmt: skip
    return fig


def _num(x: float) -> float | None:
    return float(x) if math.isfinite(float(x)) else None


def comparison_payload(
    cmp: Comparison,
    *,
    thresholds: Sequence[float] = (0.5,),
    margin: float | None = None,
    exact: Mapping[str, float] | None = None,
    source: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON shape of a comparison (schema ``fedeval.comparison/1``); NaN is null."""
    differences = cmp.summary(thresholds)
    out = {
        "schema": SCHEMA,
        "input": dict(source or {}),
        # The receipt at the top level, as in every other document (results.schema.json).
        "receipt": differences.pop("receipt"),
        "differences": differences,
        "noninferiority": (
            None
            if margin is None
            else {
                m: cmp.noninferiority(margin, metric=m).as_dict()
                for m in ("roc_auc", "average_precision")
            }
        ),
        "exact": dict(exact) if exact else None,
    }
    return dict(json_safe(out))


def write_compare_report(
    cmp: Comparison,
    out_dir: str | Path,
    *,
    thresholds: Sequence[float] = (0.5,),
    margin: float | None = None,
    names: tuple[str, str] = ("A", "B"),
    exact: Mapping[str, float] | None = None,
    title: str = "fedeval comparison",
    source: Mapping[str, Any] | None = None,
) -> dict[str, Path]:
    """Write ``report.html`` (self-contained), ``report.md`` and ``results.json``.

    Parameters
    ----------
    cmp : Comparison
    out_dir : path
    thresholds : sequence of float
        For the threshold differences.
    margin : float, optional
        Non-inferiority margin (shown on the plot and tested on the AUC and AP).
    names : (str, str)
        What to call model A and model B (e.g. the score columns).
    exact : mapping, optional
        Exact pooled differences by row label (simulation only).
    title : str
    source : mapping, optional
        The input's public facts for the header (as in
        :func:`fedeval.report.write_report`).

    Returns
    -------
    dict of "html", "markdown", "json" → path

    Notes
    -----
    Public inputs: only what ``cmp`` publishes (the release's estimates, their
    standard errors, the parameters and the receipt), and ``source`` and
    ``exact`` as given. Files are written all-or-nothing.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    a_name, b_name = names
    payload = comparison_payload(
        cmp, thresholds=thresholds, margin=margin, exact=exact, source=source
    )
    diff_png = png_data_uri(
        plot_paired_differences(cmp, thresholds=thresholds, margin=margin, exact=exact)
    )
    roc_png = png_data_uri(plot_roc({f"A: {a_name}": cmp.a, f"B: {b_name}": cmp.b}))
    rows = []
    for label, d in _rows(cmp, thresholds):
        lo, hi = d.interval(0.95)
        row: dict[str, Any] = {
            "metric": label,
            f"A ({a_name})": d.a,
            f"B ({b_name})": d.b,
            "A − B": d.estimate,
            "privacy SE": d.privacy_se,
            "sampling SE": d.sampling_se,
            "total SE": d.se,
            "95 % interval": f"[{fmt(lo)}, {fmt(hi)}]",
            "p (no difference)": d.p_value,
        }
        if exact and label in exact:
            row["exact A − B"] = exact[label]
        rows.append(row)
    disc_rows = []
    for t in thresholds:
        td = cmp.at_threshold(float(t))
        disc_rows.append(
            {
                "threshold": f"{t:g}",
                "positives: A only / B only": "{} / {}".format(
                    *(f"{v:,.1f}" for v in td.discordant["positives"])
                ),
                "negatives: A only / B only": "{} / {}".format(
                    *(f"{v:,.1f}" for v in td.discordant["negatives"])
                ),
                "A right, B wrong / A wrong, B right": "{} / {}".format(
                    *(f"{v:,.1f}" for v in td.discordant["accuracy"])
                ),
                "McNemar χ²": td.mcnemar_statistic,
            }
        )
    ni_rows = []
    if margin is not None:
        for metric in ("roc_auc", "average_precision"):
            ni = cmp.noninferiority(margin, metric=metric)
            ni_rows.append(
                {
                    "metric": _LABELS[metric],
                    "margin": margin,
                    "A − B": ni.estimate,
                    "95 % lower bound": ni.lower,
                    "p-value": ni.p_value,
                    "A non-inferior": "yes" if ni.noninferior else "no",
                }
            )
    split = cmp.parameters.get("budget_split", {})
    split_text = ", ".join(f"{k}: {fmt_privacy(v)} of ε" for k, v in split.items())
    params = (
        f"height {cmp.parameters['height']}, branching {cmp.parameters['branching']}, "
        f"pair grid {cmp.parameters['pair_bins']}×{cmp.parameters['pair_bins']} per class "
        f"(weight {cmp.parameters['pair_weight']}); budget split: {split_text}"
    )
    note = (
        "Every difference is A − B, from one release of both models' hierarchies and a "
        "pair grid. The privacy SE is the noise's (its interval covers the difference on "
        "these examples); the sampling SE is paired (DeLong's covariance for the AUC, "
        "McNemar's discordant counts at a threshold), read from the pair grid; the total SE "
        "√(privacy² + sampling²) covers the population's difference. Under DP the "
        "discordant counts are noisy estimates."
    )
    spent = fmt_privacy(cmp.epsilon_spent) if cmp.guarantee.is_private else "0 (no DP)"
    header = [*source_lines(source), f"A = <b>{html.escape(a_name)}</b>, B = "
              f"<b>{html.escape(b_name)}</b>; one release of both models, ε spent {spent}"]  # fmt: skip
    ni_html = (
        f"<h2>Non-inferiority of A to B</h2>{html_table(ni_rows)}"
        "<p class='note'>H0: A is worse than B by the margin or more; A is called "
        "non-inferior when the one-sided 95 % lower bound of A − B is above −margin.</p>"
        if ni_rows
        else ""
    )
    body = (
        "<section class='figures'>"
        f"<figure><img alt='paired differences' src='data:image/png;base64,{diff_png}'>"
        "<figcaption>Every difference A − B with its 95 % interval: thin, from the total SE; "
        "thick, from the privacy noise alone.</figcaption></figure>"
        f"<figure><img alt='ROC curves of both models' src='data:image/png;base64,{roc_png}'>"
        "<figcaption>Both models' ROC curves from the same release, with their 90 % bands "
        "from the privacy noise.</figcaption></figure></section>"
        f"<h2>Differences</h2>{html_table(rows)}<p class='note'>{html.escape(note)}</p>"
        f"{ni_html}"
        f"<h2>Discordant examples (McNemar)</h2>{html_table(disc_rows)}"
        f"<h2>Parameters</h2><p>{html.escape(params)}</p>"
        f"<h2>Privacy receipt</h2>{receipt_block(cmp.receipt)}"
    )
    html_doc = page(title, header, body)
    md = [f"# {title}", ""]
    md += [line.replace("<b>", "**").replace("</b>", "**") + "\n" for line in header]
    md += ["## Differences", "", md_table(rows), "", note, ""]
    if ni_rows:
        md += ["## Non-inferiority of A to B", "", md_table(ni_rows), ""]
    md += ["## Discordant examples (McNemar)", "", md_table(disc_rows), ""]
    md += ["## Parameters", "", params, "", "## Privacy receipt", ""]
    md += [f"- {r['release']}: ε={fmt_privacy(r['epsilon'])}" for r in cmp.privacy_receipt()]
    md += ["", *receipt_lines(cmp.receipt)]
    return write_report_files(out, html_doc, "\n".join(md), payload)
