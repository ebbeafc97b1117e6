"""Plots and reports of fedeval results.

Submodules draw on explicit :class:`matplotlib.figure.Figure` objects (never
the pyplot state machine), so they work under any backend, including Agg on
servers and in CI. :class:`RocCurveDisplay`, :class:`PrecisionRecallDisplay` and
:class:`CalibrationDisplay` mirror scikit-learn's Display objects
(``from_evaluation(ev)``, ``plot(ax=None, name=None, **kwargs)``) and add the
noise's band; ``ev.roc_display()`` and its siblings return scikit-learn's own.
:func:`validate_results` checks a ``results.json`` or ``--json`` document
against the one schema every command follows (``results.schema.json``).
"""

from fedeval.report.displays import CalibrationDisplay, PrecisionRecallDisplay, RocCurveDisplay
from fedeval.report.evaluation_report import plot_pr, plot_roc, write_report
from fedeval.report.reliability import reliability_diagram
from fedeval.report.schema import results_schema, validate_results

__all__ = [
    "CalibrationDisplay",
    "PrecisionRecallDisplay",
    "RocCurveDisplay",
    "plot_pr",
    "plot_roc",
    "reliability_diagram",
    "results_schema",
    "validate_results",
    "write_report",
]
