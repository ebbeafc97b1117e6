"""Plots and reports of fedeval results.

Submodules draw on explicit :class:`matplotlib.figure.Figure` objects (never
the pyplot state machine), so they work under any backend, including Agg on
servers and in CI. :class:`RocCurveDisplay`, :class:`PrecisionRecallDisplay` and
:class:`CalibrationDisplay` mirror scikit-learn's Display objects
(``from_evaluation(ev)``, ``plot(ax=None, name=None, **kwargs)``).
"""

from fedeval.report.displays import CalibrationDisplay, PrecisionRecallDisplay, RocCurveDisplay
from fedeval.report.evaluation_report import plot_pr, plot_roc, write_report
from fedeval.report.reliability import reliability_diagram

__all__ = [
    "CalibrationDisplay",
    "PrecisionRecallDisplay",
    "RocCurveDisplay",
    "plot_pr",
    "plot_roc",
    "reliability_diagram",
    "write_report",
]
