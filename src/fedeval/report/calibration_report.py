"""Report of a federated calibration run: reliability diagrams before/after and ECE table."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from numpy.typing import NDArray

from fedeval.calibration.base import Calibrator
from fedeval.metrics.calibration_error import (
    calibration_summary,
    expected_calibration_error,
    maximum_calibration_error,
)
from fedeval.report.evaluation_report import png_data_uri
from fedeval.report.files import prepare_out_dir, write_all_or_nothing
from fedeval.report.reliability import ece_name, reliability_diagram
from fedeval.report.style import html_table, md_table, page, receipt_block, receipt_lines

__all__ = ["heldout_comparison", "write_calibration_report"]


def _uncalibrated(scores: NDArray[np.float64]) -> NDArray[np.float64]:
    """Probabilities of the raw scores: 1-D as is; rows that are probabilities as is, else softmax."""
    if scores.ndim == 1:
        return scores
    if bool(np.all(scores >= 0) and np.allclose(scores.sum(axis=1), 1.0)):
        return scores
    z = scores - scores.max(axis=1, keepdims=True)
    e = np.exp(z)
    return np.asarray(e / e.sum(axis=1, keepdims=True), dtype=np.float64)


def heldout_comparison(
    calibrator: Calibrator, test_scores: Any, test_labels: Any, *, n_bins: int = 15
) -> dict[str, dict[str, float]]:
    """Held-out top-label ECE, classwise ECE, NLL and accuracy before and after, with SEs.

    Returns
    -------
    dict
        ``{"before": summary, "after": summary}``, each summary as
        :func:`fedeval.metrics.calibration_error.calibration_summary`.
    """
    scores = np.asarray(test_scores, dtype=np.float64)
    labels = np.asarray(test_labels)
    return {
        "before": calibration_summary(_uncalibrated(scores), labels, n_bins=n_bins),
        "after": calibration_summary(calibrator.predict_proba(scores), labels, n_bins=n_bins),
    }


def write_calibration_report(
    calibrator: Calibrator,
    test_scores: Any,
    test_labels: Any,
    out_dir: str | Path,
    *,
    n_bins: int = 15,
    title: str = "fedeval calibration report",
    privacy: str = "",
    source: str | None = None,
    force: bool = False,
) -> dict[str, Path]:
    """Write ``calibrator.json``, ``calibration-report.html`` and ``calibration-report.md``.

    The diagrams and errors compare the uncalibrated scores with the calibrated
    probabilities on held-out examples (in simulation, where labels of the test
    clients are available for checking). Files are written to temporary names
    and renamed at the end, so a failure leaves no partial output.

    Parameters
    ----------
    calibrator : Calibrator
    test_scores : ndarray, shape (n,) or (n, c)
        Raw scores/probabilities/logits as the calibrator accepts them.
    test_labels : ndarray, shape (n,)
    out_dir : path
    privacy : str, optional
        The privacy model in words; default: the one in the calibrator's receipt.
    source : str, optional
        The input's name for the header (e.g. the file name).
    """
    out = Path(out_dir)
    scores = np.asarray(test_scores, dtype=np.float64)
    labels = np.asarray(test_labels)
    after = calibrator.predict_proba(scores)
    before = _uncalibrated(scores)
    fig = Figure(figsize=(10, 4.6))
    ax1, ax2 = fig.subplots(1, 2)
    reliability_diagram(before, labels, n_bins=n_bins, ax=ax1, label="uncalibrated")
    reliability_diagram(
        after, labels, n_bins=n_bins, ax=ax2, label=f"calibrated ({calibrator.kind})"
    )
    ax1.set_title("before")
    ax2.set_title("after")
    fig.tight_layout()

    rows = []
    for name, p in (("uncalibrated", before), ("calibrated", after)):
        s = calibration_summary(p, labels, n_bins=n_bins)
        row: dict[str, Any] = {"probabilities": name}
        if p.ndim == 1:  # the reliability diagram's ECE, under the name its legend uses
            row[ece_name(1)] = f"{expected_calibration_error(p, labels, n_bins=n_bins):.4f}"
        row |= {
            "top-label ECE": f"{s['ece_top']:.4f} ± {s['ece_top_se']:.4f}",
            "classwise ECE": f"{s['cwece']:.4f} ± {s['cwece_se']:.4f}",
            "NLL": f"{s['nll']:.4f} ± {s['nll_se']:.4f}",
            "accuracy": f"{s['accuracy']:.4f} ± {s['accuracy_se']:.4f}",
            "MCE": maximum_calibration_error(p, labels, n_bins=n_bins),
        }
        rows.append(row)
    # The calibrator carries the receipt of the release(s) it was learned from:
    # its guarantee and one row per ledger entry (budget splits stay visible).
    receipt_of = calibrator.privacy_receipt
    model = privacy or receipt_of.model
    held_out = (
        f"held-out examples: {labels.shape[0]:,} (simulation check); {n_bins} equal-width bins"
    )
    header = [f"privacy: {html.escape(model)}", html.escape(held_out)]
    if source:
        header.insert(0, f"input: <b>{html.escape(str(source))}</b>")
    md = "\n".join(
        [
            f"# {title}",
            "",
            *(line.replace("<b>", "**").replace("</b>", "**") + "\n" for line in header),
            md_table(rows),
            "",
            "## Privacy receipt",
            "",
            *receipt_lines(receipt_of),
        ]
    )
    body = (
        "<section class='figures wide'><figure>"
        f"<img alt='reliability diagrams' src='data:image/png;base64,{png_data_uri(fig)}'>"
        "<figcaption>Reliability diagrams on the held-out clients, before and after "
        "calibration: bars are the observed frequency per bin (number of examples above "
        "each bar), the step line the fraction of examples per bin.</figcaption></figure>"
        f"</section><h2>Calibration error</h2>{html_table(rows)}"
        f"<h2>Privacy receipt</h2>{receipt_block(receipt_of)}"
    )
    doc = page(title, header, body)
    out = prepare_out_dir(out, force=force)
    targets = {
        "calibrator": out / "calibrator.json",
        "html": out / "calibration-report.html",
        "markdown": out / "calibration-report.md",
    }
    contents = {"calibrator": calibrator.to_json(), "html": doc, "markdown": md}
    write_all_or_nothing({targets[k]: contents[k] for k in targets})
    return targets
