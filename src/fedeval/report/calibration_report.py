"""Report of a federated calibration run: reliability diagrams before/after and ECE table."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from numpy.typing import NDArray

from fedeval.calibration.base import Calibrator
from fedeval.metrics.calibration_error import calibration_summary, maximum_calibration_error
from fedeval.report.evaluation_report import html_table, md_table, png_data_uri
from fedeval.report.files import write_all_or_nothing
from fedeval.report.reliability import reliability_diagram

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
        row: dict[str, Any] = {
            "probabilities": name,
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
    guarantee = receipt_of.guarantee
    model = privacy or receipt_of.model
    receipt = (
        f"privacy: {model}; ε spent: {receipt_of.epsilon_spent:.6g}, "
        f"δ spent: {receipt_of.delta_spent:.3g}; guarantee: {guarantee.statement}"
    )
    budget_rows = receipt_of.rows()
    md = "\n".join(
        [
            f"# {title}",
            "",
            receipt,
            "",
            md_table(rows),
            "",
            "## Privacy receipt",
            "",
            md_table(budget_rows),
            "",
            f"Held-out examples: {labels.shape[0]}; {n_bins} equal-width bins.",
            "",
        ]
    )
    doc = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}</style></head><body>"
        f"<h1>{html.escape(title)}</h1><p>{html.escape(receipt)}</p>"
        f"<img alt='reliability diagrams' src='data:image/png;base64,{png_data_uri(fig)}'>"
        f"{html_table(rows)}<h2>Privacy receipt</h2>{html_table(budget_rows)}"
        f"<p>Held-out examples: {labels.shape[0]}; {n_bins} equal-width bins.</p>"
        "</body></html>"
    )
    out.mkdir(parents=True, exist_ok=True)
    targets = {
        "calibrator": out / "calibrator.json",
        "html": out / "calibration-report.html",
        "markdown": out / "calibration-report.md",
    }
    contents = {"calibrator": calibrator.to_json(), "html": doc, "markdown": md}
    write_all_or_nothing({targets[k]: contents[k] for k in targets})
    return targets
