"""Federated calibration: calibrators learned from private releases.

``calibrate(fed, privacy, method=...)`` is the entry point; binary binning and
BBQ post-process one hierarchical-histogram release (Cormode–Markov §6), the
multiclass methods run federated rounds (multiclass calibration paper). Nothing
here draws noise or charges a budget: releases come from
:mod:`fedeval.aggregation`.
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
from fedeval.calibration.do_no_harm import IdentityCalibrator, MulticlassIdentityCalibrator
from fedeval.calibration.fedcal import FedCalCalibrator
from fedeval.calibration.federated import calibrate_multiclass
from fedeval.calibration.multiclass_binning import MulticlassBinningCalibrator
from fedeval.calibration.scaling import ScalingCalibrator

__all__ = [
    "METHODS",
    "BBQCalibrator",
    "Calibrator",
    "FedCalCalibrator",
    "HistogramBinningCalibrator",
    "IdentityCalibrator",
    "MulticlassBinningCalibrator",
    "MulticlassIdentityCalibrator",
    "ScalingCalibrator",
    "bbq",
    "bbq_from_hierarchy",
    "binning_from_hierarchy",
    "calibrate",
    "calibrate_multiclass",
    "calibrator_from_json",
    "default_n_bins",
    "histogram_binning",
]
