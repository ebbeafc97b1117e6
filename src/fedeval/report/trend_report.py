"""The trend page of a monitor: a metric over time with its bands, and the drift alarms.

One self-contained HTML page (inline stylesheet, figures as ``data:`` PNGs, no
script), styled like the evaluation report, plus ``report.md`` and
``results.json`` (schema ``fedeval.monitor/1``). Everything on the page is
post-processing of the monitor's published rows, its public parameters and
its receipt; ``exact`` values are shown only when given (simulation).
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from fedeval.report.evaluation_report import png_data_uri
from fedeval.report.files import write_report_files
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
    from fedeval.monitoring import DriftTest, Monitor, Trend

__all__ = ["SCHEMA", "monitor_payload", "plot_drift", "plot_trend", "write_trend_report"]

SCHEMA = "fedeval.monitor/1"
_NAMES = {"roc_auc": "ROC AUC", "average_precision": "average precision"}
_ALARM = "#c62828"


def plot_trend(
    cumulative: Trend,
    windowed: Trend | None = None,
    *,
    alarms: Sequence[int] = (),
    exact: Mapping[str, Sequence[float]] | None = None,
) -> Figure:
    """The metric at every period: cumulative and windowed, 90 % bands, alarms marked.

    The darker band is the privacy noise alone; for the AUC a lighter one adds
    the sampling error (DeLong). Periods where a drift test alarmed are shaded
    and marked with a red triangle on the windowed line.
    """
    fig = Figure(figsize=(9.6, 4.4))
    ax = fig.add_axes((0.08, 0.25, 0.9, 0.66))
    name = _NAMES.get(cumulative.metric, cumulative.metric)
    series = [("cumulative (periods 1..t)", cumulative, "C0")]
    if windowed is not None:
        series.append((f"last {windowed.window} periods", windowed, "C1"))
    z_level = _z(cumulative.level)
    for label, tr, color in series:
        t = tr.periods
        if np.isfinite(tr.sampling_se).any():
            total = np.hypot(tr.se, np.nan_to_num(tr.sampling_se))
            ax.fill_between(
                t,
                np.clip(tr.estimate - z_level * total, 0, 1),
                np.clip(tr.estimate + z_level * total, 0, 1),
                color=color,
                alpha=0.12,
                linewidth=0,
            )
        ax.fill_between(t, tr.lower, tr.upper, color=color, alpha=0.3, linewidth=0)
        ax.plot(t, tr.estimate, color=color, linewidth=1.4, marker="o", markersize=2.5, label=label)
    for key, style, label in (
        ("cumulative", "k--", "exact, cumulative"),
        ("window", "k:", "exact, window"),
    ):
        if exact and exact.get(key) is not None:
            values = np.asarray(exact[key], dtype=np.float64)
            ax.plot(cumulative.periods[: values.size], values, style, linewidth=0.9, label=label)
    if alarms:
        for period in alarms:
            ax.axvspan(int(period) - 0.5, int(period) + 0.5, color=_ALARM, alpha=0.12, linewidth=0)
        ref = windowed if windowed is not None else cumulative
        idx = [int(p) - 1 for p in alarms if 1 <= int(p) <= ref.periods.size]
        ax.plot(
            ref.periods[idx],
            ref.estimate[idx],
            linestyle="none",
            marker="v",
            markersize=7,
            color=_ALARM,
            label="drift alarm",
        )
    finite = np.concatenate(
        [np.r_[tr.lower, tr.upper][np.isfinite(np.r_[tr.lower, tr.upper])] for _, tr, _ in series]
    )
    if finite.size:
        lo, hi = float(finite.min()), float(finite.max())
        pad = max(0.1 * (hi - lo), 0.002)
        ax.set_ylim(max(lo - pad, 0.0), min(hi + pad, 1.0))
    ax.set(
        xlabel="period",
        ylabel=name,
        title=f"{name} over time (bands: {cumulative.level:.0%}; darker: privacy noise, "
        "lighter: + sampling)",
    )
    ax.set_xlim(0.5, max(float(cumulative.periods[-1]), 1.0) + 0.5)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(alpha=0.3)
    fig.legend(loc="lower left", fontsize=8, ncol=4, frameon=False, bbox_to_anchor=(0.07, 0.0))
    return fig


def plot_drift(tests: Sequence[DriftTest]) -> Figure:
    """The drift test's z at every period it ran, with the critical value; alarms in red."""
    fig = Figure(figsize=(9.6, 3.0))
    ax = fig.add_axes((0.08, 0.2, 0.9, 0.68))
    t = np.array([d.period for d in tests])
    z = np.array([d.z for d in tests])
    crit = tests[0].critical_z if tests else 3.0
    ax.axhspan(-crit, crit, color="0.9", linewidth=0)
    ax.axhline(crit, color=_ALARM, linewidth=0.8, linestyle="--")
    ax.axhline(-crit, color=_ALARM, linewidth=0.8, linestyle="--")
    ax.plot(t, z, color="C2", linewidth=1.2, marker="o", markersize=2.5)
    alarm = np.array([d.alarm for d in tests], dtype=bool)
    if alarm.any():
        ax.plot(t[alarm], z[alarm], linestyle="none", marker="v", markersize=7, color=_ALARM)
    window = tests[0].window[1] - tests[0].window[0] + 1 if tests else 0
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set(
        xlabel="period",
        ylabel="z",
        title=f"drift test: last {window} periods against all earlier ones "
        f"(alarm beyond ±{crit:.2f}: α = {tests[0].alpha if tests else 0:g} over "
        f"{tests[0].looks if tests else 0} looks)",
    )
    ax.grid(alpha=0.3)
    return fig


def monitor_payload(
    mon: Monitor,
    *,
    cumulative: Trend,
    windowed: Trend | None,
    drift: Sequence[DriftTest],
    exact: Mapping[str, Any] | None = None,
    source: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The one JSON shape of a monitor's results (schema ``fedeval.monitor/1``)."""
    receipt = mon.receipt()
    params = {
        k: v for k, v in mon.parameters.items() if k not in ("planned",)
    }  # everything here is public
    return _clean(
        {
            "schema": SCHEMA,
            "input": dict(source or {}),
            "monitor": {
                "horizon": mon.horizon,
                "periods_released": mon.periods_released,
                "mechanism": mon.mechanism_name,
                "mean_prefix_variance": mon.mechanism_comparison,
                "epsilon_spent": mon.epsilon_spent,
                "delta_spent": mon.delta_spent,
                "parameters": params,
            },
            "trend": cumulative.as_dict(),
            "window_trend": None if windowed is None else windowed.as_dict(),
            "drift": [d.as_dict() for d in drift],
            "exact": dict(exact or {}),
            "receipt": receipt.as_dict(),
        }
    )


def write_trend_report(
    mon: Monitor,
    out_dir: str | Path,
    *,
    metric: str = "roc_auc",
    window: int | None = 8,
    drift: Sequence[DriftTest] = (),
    exact: Mapping[str, Sequence[float]] | None = None,
    title: str = "fedeval monitor",
    source: Mapping[str, Any] | None = None,
) -> dict[str, Path]:
    """Write the trend page (``report.html``), ``report.md`` and ``results.json``.

    Parameters
    ----------
    mon : Monitor
        At least one period released.
    out_dir : path
    metric : {"roc_auc", "average_precision"}
    window : int or None
        Also draw the metric of the last ``window`` periods (None: cumulative only).
    drift : sequence of DriftTest
        The tests made as the periods were released (one per period, as
        :meth:`~fedeval.monitoring.Monitor.drift` returned them then); their
        alarms are marked.
    exact : mapping, optional
        Simulation only: ``"cumulative"`` and ``"window"``, the exact metric at
        every period.
    title : str
    source : mapping, optional
        Public facts about the input, for the header.

    Returns
    -------
    dict of name → path

    Notes
    -----
    Privacy: post-processing of the monitor's rows; the page shows its
    receipt. Files are written all-or-nothing.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cumulative = mon.trend(metric, level=0.9)  # type: ignore[arg-type]
    w = None if window is None else min(int(window), mon.periods_released)
    windowed = None if w is None else mon.trend(metric, window=w, level=0.9)  # type: ignore[arg-type]
    alarms = [d.period for d in drift if d.alarm]
    trend_png = png_data_uri(plot_trend(cumulative, windowed, alarms=alarms, exact=exact))
    payload = monitor_payload(
        mon, cumulative=cumulative, windowed=windowed, drift=drift, exact=exact, source=source
    )
    name = _NAMES.get(metric, metric)
    by_period = {d.period: d for d in drift}
    rows = []
    for i, t in enumerate(cumulative.periods):
        row: dict[str, Any] = {
            "period": int(t),
            f"{name}, cumulative": _with_se(cumulative.estimate[i], cumulative.se[i]),
        }
        if windowed is not None:
            row[f"last {windowed.window}"] = _with_se(windowed.estimate[i], windowed.se[i])
        if exact and exact.get("cumulative") is not None and i < len(exact["cumulative"]):
            row["exact (cumulative)"] = float(exact["cumulative"][i])
        d = by_period.get(int(t))
        if drift:
            row["change (recent − before)"] = "" if d is None else _with_se(d.difference, d.se)
            row["z"] = "" if d is None else fmt(float(d.z))
            row["alarm"] = "" if d is None else ("ALARM" if d.alarm else "—")
        rows.append(row)
    receipt = mon.receipt()
    summary = [
        {
            "horizon": mon.horizon,
            "periods released": mon.periods_released,
            "mechanism": mon.mechanism_name,
            "height": mon.parameters["height"],
            "ε spent (whole horizon)": fmt_privacy(mon.epsilon_spent)
            if receipt.guarantee.is_private
            else "— (no DP)",
            "alarms": len(alarms),
        }
    ]
    figures = [
        f"<figure><img alt='{html.escape(name)} over time' src='data:image/png;base64,"
        f"{trend_png}'><figcaption>{html.escape(name)} at every period: cumulative and over "
        "the last periods, 90 % bands (darker: privacy noise; lighter: with the sampling "
        "error); red: periods where the drift test alarmed.</figcaption></figure>"
    ]
    if drift:
        drift_png = png_data_uri(plot_drift(drift))
        figures.append(
            "<figure><img alt='drift test z over time' src='data:image/png;base64,"
            f"{drift_png}'><figcaption>The drift test at every period: z of the last "
            "periods against all earlier ones; outside the dashed lines it alarms.</figcaption>"
            "</figure>"
        )
    note = (
        "Every value is read from one continual release whose budget for the whole horizon "
        "was charged before the first period. Estimates use every row published so far, so "
        "the values of past periods may sharpen as later rows arrive; the drift tests are as "
        "they were made at their period. Standard errors: privacy noise (delta method on the "
        "exact noise of each window); the change's SE adds the sampling error of both windows "
        "and the covariance of their noise."
    )
    body = (
        "<section class='figures wide'>" + "".join(figures) + "</section>"
        f"<h2>Summary</h2>{html_table(summary)}"
        f"<h2>Every period</h2>{html_table(rows)}"
        f"<p class='note'>{html.escape(note)}</p>"
        f"<h2>Privacy receipt</h2>{receipt_block(receipt)}"
    )
    header = _header(source, mon)
    html_doc = page(title, header, body)
    md = [f"# {title}", "", *[h + "\n" for h in header]]
    md += ["## Summary", "", md_table(summary), "", "## Every period", "", md_table(rows), ""]
    md += [note, "", "## Privacy receipt", "", *receipt_lines(receipt)]
    return write_report_files(out, html_doc, "\n".join(md), payload)


def _header(source: Mapping[str, Any] | None, mon: Monitor) -> list[str]:
    lo, hi = mon.score_range
    what = html.escape(str((source or {}).get("name", "input")))
    return [
        f"input: <b>{what}</b> — {mon.periods_released} of {mon.horizon} periods, score "
        f"domain [{lo:g}, {hi:g}], {mon.examples_per_period:,} examples per period declared "
        "(used only to plan)"
    ]


def _with_se(value: float, se: float) -> str:
    if not math.isfinite(float(value)):
        return "n/a"
    return fmt(float(value)) + (
        "" if not math.isfinite(float(se)) or not se else f" ± {fmt(float(se))}"
    )


def _z(level: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(0.5 + level / 2))


def _clean(obj: Any) -> Any:
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, Mapping):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    if isinstance(obj, np.generic):
        return _clean(obj.item())
    if isinstance(obj, np.ndarray):
        return _clean(obj.tolist())
    return obj
