"""Reliability diagrams (calibration plots)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from fedeval.metrics.calibration_error import (
    BinStrategy,
    calibration_bins,
    expected_calibration_error,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["reliability_diagram"]


def ece_name(ndim: int) -> str:
    """What :func:`reliability_diagram`'s ECE measures: P(y=1) for 1-D probabilities, else top-label."""
    return "ECE of P(y=1)" if ndim == 1 else "top-label ECE"


def reliability_diagram(
    probs: Any,
    labels: Any,
    *,
    n_bins: int = 15,
    strategy: BinStrategy = "uniform",
    ax: Axes | None = None,
    label: str | None = None,
    show_counts: bool = True,
) -> Figure:
    """Plot observed frequency against mean prediction per bin.

    Each non-empty bin is drawn as a bar spanning the bin, of height the
    observed frequency of the event, with a marker at (mean prediction,
    observed frequency); the diagonal is perfect calibration. The legend gives
    the ECE with the same bins. Bins, events and the edge convention are those
    of :func:`fedeval.metrics.calibration_error.calibration_bins` (1-D probs:
    P(y = 1); (n, c) probs: top-label confidence).

    Parameters
    ----------
    probs : array-like, shape (n,) or (n, c)
    labels : array-like of int, shape (n,)
    n_bins : int
    strategy : {"uniform", "quantile"}
    ax : matplotlib Axes, optional
        Draw into this axes (several calibrators can share one). By default a
        new :class:`matplotlib.figure.Figure` is created, without pyplot.
    label : str, optional
        Legend label of this curve.
    show_counts : bool
        Add a twin axis with the fraction of examples per bin, and write each
        non-empty bin's number of examples above its bar.

    Returns
    -------
    matplotlib.figure.Figure
        The figure holding the axes.

    Raises
    ------
    ValueError, TypeError
        As :func:`~fedeval.metrics.calibration_error.calibration_bins`.

    References
    ----------
    DeGroot and Fienberg, "The comparison and evaluation of forecasters",
    The Statistician 32, 1983; Guo et al., ICML 2017, Figure 1.
    """
    from matplotlib.figure import Figure

    bins = calibration_bins(probs, labels, n_bins=n_bins, strategy=strategy)
    ece = expected_calibration_error(probs, labels, n_bins=n_bins, strategy=strategy)
    if ax is None:
        fig = Figure(figsize=(4.5, 4.5), layout="constrained")
        ax = fig.add_subplot()
    figure = ax.get_figure()
    if figure is None:  # pragma: no cover - axes always belong to a figure here
        raise ValueError("ax must belong to a matplotlib Figure")
    nonempty = bins.counts > 0
    left = bins.edges[:-1][nonempty]
    width = np.diff(bins.edges)[nonempty]
    name = label if label is not None else "observed"
    ax.bar(
        left,
        bins.fraction_positive[nonempty],
        width=width,
        align="edge",
        alpha=0.35,
        edgecolor="black",
        linewidth=0.5,
    )
    ax.plot(
        bins.mean_predicted[nonempty],
        bins.fraction_positive[nonempty],
        marker="o",
        markersize=3,
        # Say which ECE: binary (1-D) probabilities are binned on P(y=1), rows on the
        # top-label confidence; a report's table names its ECEs the same way.
        label=f"{name} ({ece_name(np.ndim(probs))}={ece:.4f})",
    )
    ax.plot([0, 1], [0, 1], linestyle="--", color="gray", linewidth=1, label="perfect")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("mean predicted probability")
    ax.set_ylabel("observed frequency")
    ax.legend(loc="upper left", fontsize="small")
    if show_counts:
        tops = bins.fraction_positive[nonempty]
        for x, w, top, n in zip(left, width, tops, bins.counts[nonempty], strict=True):
            ax.text(
                x + w / 2,
                min(float(top) + 0.02, 0.97),
                f"{int(n):,}",
                ha="center",
                va="bottom",
                fontsize=6,
                rotation=90,
                color="0.25",
            )
        twin = ax.twinx()
        twin.step(
            bins.edges,
            np.concatenate([bins.counts / bins.counts.sum(), [0.0]]),
            where="post",
            color="black",
            linewidth=0.7,
            alpha=0.6,
        )
        twin.set_ylim(0, 1)
        twin.set_ylabel("fraction of examples")
    return figure  # type: ignore[return-value]
