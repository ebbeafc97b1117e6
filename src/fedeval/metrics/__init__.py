"""Metrics computed from released aggregates (and exact references for tests).

Binary evaluation: :mod:`~fedeval.metrics.confusion` (threshold metrics),
:mod:`~fedeval.metrics.auc` (H_B), :mod:`~fedeval.metrics.roc`,
:mod:`~fedeval.metrics.precision_recall`, :mod:`~fedeval.metrics.area_error`.
"""

from __future__ import annotations

from fedeval.metrics.area_error import pr_area_error, roc_area_error
from fedeval.metrics.auc import auc_from_bucket_counts, histogram_auc
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

__all__ = [
    "CalibrationBins",
    "HosmerLemeshowResult",
    "ThresholdMetrics",
    "auc_from_bucket_counts",
    "calibration_bins",
    "classwise_calibration_error",
    "expected_calibration_error",
    "histogram_auc",
    "hosmer_lemeshow",
    "maximum_calibration_error",
    "pr_area_error",
    "roc_area_error",
    "threshold_metrics",
    "top_label_calibration_error",
]
