"""Federated calibration: calibrators learned from private aggregates.

``calibrate(fed, privacy, method=...)`` is the entry point; binary binning and
BBQ post-process one hierarchical-histogram release (Cormode–Markov §6), the
multiclass methods run federated rounds (multiclass calibration paper).
"""

from __future__ import annotations

from fedeval.calibration.api import METHODS, calibrate
from fedeval.calibration.base import Calibrator, calibrator_from_json
from fedeval.calibration.bbq import BBQCalibrator, bbq, bbq_from_hierarchy
from fedeval.calibration.binning import (
    HistogramBinningCalibrator,
    binning_from_hierarchy,
    default_n_bins,
    histogram_binning,
)

__all__ = [
    "METHODS",
    "BBQCalibrator",
    "Calibrator",
    "HistogramBinningCalibrator",
    "bbq",
    "bbq_from_hierarchy",
    "binning_from_hierarchy",
    "calibrate",
    "calibrator_from_json",
    "default_n_bins",
    "histogram_binning",
]
