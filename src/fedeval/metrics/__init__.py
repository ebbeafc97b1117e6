"""Metrics computed from released aggregates (and exact references for tests).

Binary evaluation: :mod:`~fedeval.metrics.confusion` (threshold metrics),
:mod:`~fedeval.metrics.auc` (H_B), :mod:`~fedeval.metrics.roc`,
:mod:`~fedeval.metrics.precision_recall`, :mod:`~fedeval.metrics.area_error`.
"""

from __future__ import annotations

from fedeval.metrics.area_error import pr_area_error, roc_area_error
from fedeval.metrics.auc import auc_from_bucket_counts, histogram_auc
from fedeval.metrics.confusion import ThresholdMetrics, threshold_metrics

__all__ = [
    "ThresholdMetrics",
    "auc_from_bucket_counts",
    "histogram_auc",
    "pr_area_error",
    "roc_area_error",
    "threshold_metrics",
]
