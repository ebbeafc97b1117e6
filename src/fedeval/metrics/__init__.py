"""Metrics: functions of a release, with scikit-learn's names; exact reference metrics.

From a release of the per-class score hierarchy (or its decoded histogram, or
an :class:`~fedeval.evaluation.Evaluation`):

* :func:`roc_curve`, :func:`precision_recall_curve` — curves in scikit-learn's layout,
  by default dense (a point at every leaf boundary, :mod:`fedeval.metrics.dense`),
  or Xu–Cormode's quantile construction (``method="quantile"``);
* :func:`roc_auc_score` — by default the trapezoid area of the dense ROC curve (H_B
  over every leaf, Cormode–Markov eq. 5), or H_B over equi-depth/uniform buckets;
* :func:`average_precision_score` — the step sum of the PR curve;
* :func:`mcclish_partial_auc` — scikit-learn's standardised partial AUC of a curve;
* :func:`binned_calibration_error`, :func:`binned_brier_score`, :func:`binned_log_loss`,
  :func:`binned_reliability_curve` — binary calibration metrics of the released
  leaves (scores in [0, 1]), :mod:`fedeval.metrics.binned_calibration`;
* :func:`threshold_metrics` — precision, recall, FPR, accuracy at any threshold,
  with delta-method standard errors (O(b·h) per threshold);
* :mod:`fedeval.metrics.dense` — the dense counts, their delta-method standard
  errors, DeLong's sampling standard error and pointwise bands.

Exact metrics on arrays (references, and the quality of calibrators):
:func:`roc_area_error`, :func:`pr_area_error`, the calibration errors, and the
Hosmer–Lemeshow statistic (exact or private).
"""

from __future__ import annotations

from fedeval.metrics.area_error import pr_area_error, roc_area_error
from fedeval.metrics.auc import mcclish_partial_auc, roc_auc_score
from fedeval.metrics.binned_calibration import (
    binned_brier_score,
    binned_calibration_error,
    binned_log_loss,
    binned_reliability_curve,
)
from fedeval.metrics.calibration_error import (
    CalibrationBins,
    calibration_bins,
    classwise_calibration_error,
    expected_calibration_error,
    maximum_calibration_error,
    top_label_calibration_error,
)
from fedeval.metrics.confusion import ThresholdMetrics, threshold_metrics
from fedeval.metrics.hosmer_lemeshow import HosmerLemeshowResult, hosmer_lemeshow
from fedeval.metrics.precision_recall import average_precision_score, precision_recall_curve
from fedeval.metrics.roc import roc_curve

__all__ = [
    "CalibrationBins",
    "HosmerLemeshowResult",
    "ThresholdMetrics",
    "average_precision_score",
    "binned_brier_score",
    "binned_calibration_error",
    "binned_log_loss",
    "binned_reliability_curve",
    "calibration_bins",
    "classwise_calibration_error",
    "expected_calibration_error",
    "hosmer_lemeshow",
    "maximum_calibration_error",
    "mcclish_partial_auc",
    "pr_area_error",
    "precision_recall_curve",
    "roc_area_error",
    "roc_auc_score",
    "roc_curve",
    "threshold_metrics",
    "top_label_calibration_error",
]
