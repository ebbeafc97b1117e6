"""scikit-learn-style Display objects of an evaluation (report/displays.py), drawn with Agg."""

from __future__ import annotations

import warnings

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure

import fedeval as fe
from fedeval.report.displays import CalibrationDisplay, PrecisionRecallDisplay, RocCurveDisplay


def _fed() -> fe.Federation:
    rng = np.random.default_rng(4)
    y = (rng.random(3000) < 0.35).astype(int)
    s = 1 / (1 + np.exp(-(rng.normal(0, 1, y.size) + 1.8 * (y - 0.5))))
    return fe.Federation.from_arrays(s, y)


@pytest.fixture(scope="module")
def sa() -> fe.Evaluation:
    ev = fe.evaluate(_fed(), fe.SecureAggregation(), height=10)
    assert isinstance(ev, fe.Evaluation)
    return ev


@pytest.fixture(scope="module")
def dp() -> fe.Evaluation:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ev = fe.evaluate(_fed(), fe.DistributedDP(epsilon=1.0), rng=0)
    assert isinstance(ev, fe.Evaluation)
    return ev


def test_the_displays_are_exported_as_fe_report() -> None:
    assert fe.report.RocCurveDisplay is RocCurveDisplay
    assert fe.report.PrecisionRecallDisplay is PrecisionRecallDisplay
    assert fe.report.CalibrationDisplay is CalibrationDisplay


def test_roc_display_draws_the_evaluation_curve_and_its_band(dp) -> None:
    disp = RocCurveDisplay.from_evaluation(dp, plot_chance_level=True)
    fpr, tpr, _ = dp.roc_curve()
    np.testing.assert_array_equal(disp.fpr, fpr)
    np.testing.assert_array_equal(disp.tpr, tpr)
    assert disp.roc_auc == dp.roc_auc
    assert isinstance(disp.figure_, Figure) and disp.ax_.figure is disp.figure_
    np.testing.assert_array_equal(disp.line_.get_xdata(), fpr)
    assert isinstance(disp.band_, PolyCollection)  # DP: the band of roc_band is drawn
    grid, lo, hi = dp.roc_band()
    assert disp.band is not None
    np.testing.assert_array_equal(disp.band[0], grid)
    np.testing.assert_array_equal(disp.band[1], lo)
    np.testing.assert_array_equal(disp.band[2], hi)
    assert disp.chance_level_ is not None
    legend = [t.get_text() for t in disp.ax_.get_legend().get_texts()]
    assert legend[0].startswith(f"fedeval (AUC = {dp.roc_auc:.2f} ± ")
    disp.figure_.canvas.draw()  # renders under Agg


def test_no_band_without_noise_and_plot_returns_self_on_a_given_axes(sa) -> None:
    disp = RocCurveDisplay.from_evaluation(sa, name="model A")
    assert disp.band is None and disp.band_ is None
    fig = Figure()
    ax = fig.add_subplot()
    again = disp.plot(ax=ax, name="B", color="red")
    assert again is disp and disp.ax_ is ax and disp.figure_ is fig
    assert disp.line_.get_color() == "red" and "B (AUC = " in disp.line_.get_label()
    # A display from arrays, as sklearn's constructor.
    bare = RocCurveDisplay(fpr=[0, 0.5, 1], tpr=[0, 0.8, 1]).plot()
    assert bare.line_.get_label().startswith("_")  # no name, no AUC: no legend entry


def test_pr_display_draws_steps_with_the_band_and_chance_level(dp) -> None:
    disp = PrecisionRecallDisplay.from_evaluation(dp, plot_chance_level=True)
    precision, recall, _ = dp.precision_recall_curve()
    np.testing.assert_array_equal(disp.precision, precision)
    np.testing.assert_array_equal(disp.recall, recall)
    assert disp.line_.get_drawstyle() == "steps-post"
    assert disp.average_precision == dp.average_precision
    assert isinstance(disp.band_, PolyCollection)
    prevalence = dp.n_positives / (dp.n_positives + dp.n_negatives)
    assert disp.chance_level_ is not None
    assert disp.chance_level_.get_ydata()[0] == pytest.approx(prevalence)
    disp.figure_.canvas.draw()
    with pytest.raises(ValueError, match="prevalence"):
        PrecisionRecallDisplay([1, 0.5], [0, 1]).plot(plot_chance_level=True)


def test_calibration_display_draws_the_reliability_curve(sa) -> None:
    disp = CalibrationDisplay.from_evaluation(sa, n_bins=8)
    true, pred = sa.reliability_curve(8)
    np.testing.assert_array_equal(disp.prob_true, true)
    np.testing.assert_array_equal(disp.line_.get_xdata(), pred)
    assert disp.ece == sa.expected_calibration_error(n_bins=8)
    labels = [t.get_text() for t in disp.ax_.get_legend().get_texts()]
    assert labels[0] == "Perfectly calibrated" and labels[1].startswith("fedeval (ECE = ")
    disp.figure_.canvas.draw()


def test_calibration_display_refuses_scores_that_are_not_probabilities() -> None:
    rng = np.random.default_rng(1)
    y = np.tile([0, 1], 100)
    ev = fe.evaluate(
        fe.Federation.from_arrays(rng.uniform(0, 5, y.size), y, score_range=(0.0, 5.0)),
        fe.SecureAggregation(),
    )
    with pytest.raises(ValueError, match="score domain"):
        CalibrationDisplay.from_evaluation(ev)


# ------------------------------------------- ev.*_display(): scikit-learn's own objects
def test_evaluation_returns_scikit_learn_display_objects() -> None:
    """Issue 29: ``ev.roc_display()``, ``ev.pr_display()``, ``ev.calibration_display()``."""
    from sklearn.calibration import CalibrationDisplay as SkCalibrationDisplay
    from sklearn.metrics import PrecisionRecallDisplay as SkPrecisionRecallDisplay
    from sklearn.metrics import RocCurveDisplay as SkRocCurveDisplay
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(5)
    y = (rng.random(4_000) < 0.3).astype(int)
    s = np.clip(rng.normal(0.35 + 0.3 * y, 0.15), 0, 1)
    ev = fe.evaluate(fe.Federation.from_arrays(s, y), fe.SecureAggregation())

    roc = ev.roc_display(name="SA")
    assert type(roc) is SkRocCurveDisplay
    fpr, tpr, _ = ev.roc_curve()
    np.testing.assert_array_equal(roc.fpr, fpr)
    np.testing.assert_array_equal(roc.tpr, tpr)
    assert roc.roc_auc == ev.roc_auc
    assert abs(roc.roc_auc - roc_auc_score(y, s)) < 2e-3  # the release's bucketization only

    pr = ev.pr_display()
    assert type(pr) is SkPrecisionRecallDisplay
    precision, recall, _ = ev.precision_recall_curve()
    np.testing.assert_array_equal(pr.precision, precision)
    np.testing.assert_array_equal(pr.recall, recall)
    assert pr.average_precision == ev.average_precision
    assert pr.prevalence_pos_label == pytest.approx(y.mean())  # exact counts under SA

    cal = ev.calibration_display(n_bins=8)
    assert type(cal) is SkCalibrationDisplay
    prob_true, prob_pred = ev.reliability_curve(8)
    np.testing.assert_array_equal(cal.prob_true, prob_true)
    np.testing.assert_array_equal(cal.prob_pred, prob_pred)

    for disp in (roc, pr, cal):  # scikit-learn draws them on any axes, without pyplot
        ax = Figure().add_subplot()
        drawn = disp.plot(ax=ax)
        assert drawn.ax_ is ax and len(ax.lines) >= 1


def test_displays_of_a_private_release_plot_its_noisy_curve() -> None:
    rng = np.random.default_rng(6)
    y = (rng.random(3_000) < 0.4).astype(int)
    s = np.clip(rng.normal(0.4 + 0.25 * y, 0.15), 0, 1)
    ev = fe.evaluate(fe.Federation.from_arrays(s, y), fe.DistributedDP(1.0), rng=7)
    pr = ev.pr_display(name="DistDP ε=1")
    assert pr.prevalence_pos_label == pytest.approx(
        ev.n_positives / (ev.n_positives + ev.n_negatives)
    )
    assert pr.prevalence_pos_label != y.mean()  # the released (noisy) share, not the exact one
    np.testing.assert_array_equal(ev.roc_display().tpr, ev.roc_curve()[1])
