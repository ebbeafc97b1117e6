"""Federated calibration: calibrators learned from private releases.

``calibrate(fed, privacy, method=...)`` is the entry point; binary binning,
BBQ, temperature and Platt scaling post-process one hierarchical-histogram
release (Cormode–Markov §6; user-level DP: federated Newton), "auto" picks
among them by their released NLL estimates, the
multiclass methods run federated rounds (multiclass calibration paper). Nothing
here draws noise or charges a budget: releases come from
:mod:`fedeval.aggregation`.
"""

from __future__ import annotations

from fedeval.calibration.api import METHODS, calibrate
from fedeval.calibration.base import Calibrator, calibrator_from_json
from fedeval.calibration.bbq import BBQCalibrator, bbq, bbq_from_hierarchy
from fedeval.calibration.binary_scaling import BinaryScalingCalibrator, binary_scaling
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
    "BinaryScalingCalibrator",
    "Calibrator",
    "FedCalCalibrator",
    "HistogramBinningCalibrator",
    "IdentityCalibrator",
    "MulticlassBinningCalibrator",
    "MulticlassIdentityCalibrator",
    "ScalingCalibrator",
    "bbq",
    "bbq_from_hierarchy",
    "binary_scaling",
    "binning_from_hierarchy",
    "calibrate",
    "calibrate_multiclass",
    "calibrator_from_json",
    "default_n_bins",
    "histogram_binning",
]
