"""Plots and reports of fedeval results.

Submodules draw on explicit :class:`matplotlib.figure.Figure` objects (never
the pyplot state machine), so they work under any backend, including Agg on
servers and in CI.
"""

from fedeval.report.evaluation_report import plot_pr, plot_roc, write_report
from fedeval.report.reliability import reliability_diagram

__all__ = ["plot_pr", "plot_roc", "reliability_diagram", "write_report"]
