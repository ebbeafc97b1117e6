"""Calibration error metrics: worked examples, bad input (sklearn reference: tests/reference/)."""

from __future__ import annotations

import io
import math

import numpy as np
import pytest
from matplotlib.figure import Figure

from fedeval.metrics.calibration_error import (
    classwise_calibration_error,
    expected_calibration_error,
    maximum_calibration_error,
    top_label_calibration_error,
)
from fedeval.report.reliability import reliability_diagram

# Worked examples (computed by hand in the comments; bins are right-closed).
P4 = np.array([0.2, 0.3, 0.8, 0.9])
Y4 = np.array([0, 1, 1, 1])
# n_bins=2: [0, .5] = {.2, .3}: mean .25, positives 1/2, gap .25, weight 1/2;
#           (.5, 1] = {.8, .9}: mean .85, positives 1,   gap .15, weight 1/2.

MC_PROBS = np.array([[0.7, 0.2, 0.1], [0.4, 0.5, 0.1], [0.3, 0.3, 0.4]])
MC_LABELS = np.array([0, 0, 2])


def test_binary_ece_worked_example() -> None:
    assert expected_calibration_error(P4, Y4, n_bins=2) == pytest.approx(0.5 * 0.25 + 0.5 * 0.15)


def test_binary_rms_and_mce_worked_example() -> None:
    rms = math.sqrt(0.5 * 0.25**2 + 0.5 * 0.15**2)
    assert expected_calibration_error(P4, Y4, n_bins=2, norm=2) == pytest.approx(rms)
    assert maximum_calibration_error(P4, Y4, n_bins=2) == pytest.approx(0.25)
    assert expected_calibration_error(P4, Y4, n_bins=2, norm="max") == pytest.approx(0.25)


def test_value_on_inner_edge_goes_to_lower_bin() -> None:
    # 0.5 lies on the inner edge of 2 uniform bins. Right-closed: bins {.5 (y=0)}
    # and {.9 (y=1)}: gaps .5 and .1, ECE .3. (Left-closed would give |.7-.5| = .2.)
    assert expected_calibration_error([0.5, 0.9], [0, 1], n_bins=2) == pytest.approx(0.3)


def test_top_label_worked_example() -> None:
    # Confidences .7 (correct), .5 (wrong), .4 (correct). Two bins:
    # [0, .5] = {.5, .4}: mean .45, accuracy .5, gap .05, weight 2/3;
    # (.5, 1] = {.7}: gap .3, weight 1/3.  ECE = .05*2/3 + .3/3 = 0.1333...
    expected = 0.05 * 2 / 3 + 0.3 / 3
    assert expected_calibration_error(MC_PROBS, MC_LABELS, n_bins=2) == pytest.approx(expected)
    assert top_label_calibration_error(MC_PROBS, MC_LABELS, n_bins=2) == pytest.approx(expected)
    assert maximum_calibration_error(MC_PROBS, MC_LABELS, n_bins=2) == pytest.approx(0.3)


def test_classwise_worked_example() -> None:
    # class 0: p = [.7, .4, .3], y = [1, 1, 0]: [0,.5]={.4,.3} gap |.35-.5|=.15 (w 2/3),
    #          (.5,1]={.7} gap .3 (w 1/3)  -> .2
    # class 1: p = [.2, .5, .3], y = [0, 0, 0]: all in [0,.5], gap 1/3   -> 1/3
    # class 2: p = [.1, .1, .4], y = [0, 0, 1]: all in [0,.5], |.2-1/3|  -> 2/15
    expected = (0.2 + 1 / 3 + 2 / 15) / 3
    got = classwise_calibration_error(MC_PROBS, MC_LABELS, n_bins=2)
    assert got == pytest.approx(expected)


def test_binary_forms_agree() -> None:
    rng = np.random.default_rng(3)
    p = rng.random(500)
    y = (rng.random(500) < p**1.5).astype(int)
    two = np.column_stack([1 - p, p])
    assert top_label_calibration_error(p, y, n_bins=10) == pytest.approx(
        expected_calibration_error(two, y, n_bins=10)
    )
    assert classwise_calibration_error(p, y, n_bins=10) == pytest.approx(
        classwise_calibration_error(two, y, n_bins=10)
    )
    # The binary ECE is the class-1 one-vs-rest ECE, written out: ten uniform bins
    # of p (right-closed, scikit-learn's calibration_curve convention), weighted
    # |mean label - mean p| per bin.
    bins = np.searchsorted(np.linspace(0, 1, 11)[1:-1], p, side="left")
    direct = sum(
        abs(y[bins == b].mean() - p[bins == b].mean()) * np.mean(bins == b)
        for b in range(10)
        if np.any(bins == b)
    )
    assert expected_calibration_error(p, y, n_bins=10) == pytest.approx(direct, rel=1e-12)


def test_perfect_calibration_has_small_ece() -> None:
    rng = np.random.default_rng(11)
    p = rng.random(200_000)
    y = (rng.random(p.size) < p).astype(int)
    # per-bin sampling error ~ sqrt(p(1-p)/n_bin) ≈ 0.004 with 15 bins
    assert expected_calibration_error(p, y) < 0.01
    assert expected_calibration_error(np.clip(p + 0.1, 0, 1), y) > 0.08


@pytest.mark.parametrize(
    ("probs", "labels", "kwargs", "exc", "match"),
    [
        ([0.1, np.nan], [0, 1], {}, ValueError, "NaN"),
        ([0.1, np.inf], [0, 1], {}, ValueError, "NaN or inf"),
        ([0.1, 1.2], [0, 1], {}, ValueError, r"\[0, 1\]"),
        ([0.1, 0.4], [0, 2], {}, ValueError, "0 or 1"),
        ([0.1, 0.4], [0, 1, 1], {}, ValueError, "entries"),
        ([0.1, 0.4], [0, 1], {"n_bins": 0}, ValueError, "n_bins"),
        ([0.1, 0.4], [0, 1], {"n_bins": 2.5}, TypeError, "n_bins"),
        ([0.1, 0.4], [0, 1], {"strategy": "equal"}, ValueError, "strategy"),
        ([0.1, 0.4], [0, 1], {"norm": 0.5}, ValueError, "norm"),
        ([], [], {}, ValueError, "empty"),
        (["a", "b"], [0, 1], {}, TypeError, "numeric"),
        ([[0.5, 0.3, 0.2], [0.2, 0.7, 0.1]], [0, 3], {}, ValueError, "0..2"),
    ],
)
def test_bad_input(probs: object, labels: object, kwargs: dict, exc: type, match: str) -> None:
    with pytest.raises(exc, match=match):
        expected_calibration_error(probs, labels, **kwargs)


def test_bad_input_other_metrics() -> None:
    with pytest.raises(ValueError, match="NaN"):
        classwise_calibration_error([0.1, np.nan], [0, 1])
    with pytest.raises(ValueError, match="0 or 1"):
        top_label_calibration_error([0.1, 0.3], [0, 5])
    with pytest.raises(ValueError, match="n_bins"):
        maximum_calibration_error([0.1, 0.3], [0, 1], n_bins=0)


def test_reliability_diagram_builds_figure() -> None:
    rng = np.random.default_rng(0)
    p = rng.random(1000)
    y = (rng.random(1000) < p**2).astype(int)
    fig = reliability_diagram(p, y, n_bins=10, label="raw")
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    fig2 = reliability_diagram(p**2, y, n_bins=10, ax=ax, label="calibrated", show_counts=False)
    assert fig2 is fig
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    assert buf.getvalue()[:4] == b"\x89PNG"
    legend = ax.get_legend()
    assert legend is not None
    texts = [t.get_text() for t in legend.get_texts()]
    assert any("ECE of P(y=1)=" in t for t in texts)  # says which ECE (binary probabilities)
    with pytest.raises(ValueError, match="NaN"):
        reliability_diagram([np.nan], [0])
