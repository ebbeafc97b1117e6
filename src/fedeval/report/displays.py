"""scikit-learn Display objects for private evaluations.

:class:`RocCurveDisplay`, :class:`PrecisionRecallDisplay` and
:class:`CalibrationDisplay` mirror :class:`sklearn.metrics.RocCurveDisplay`,
:class:`sklearn.metrics.PrecisionRecallDisplay` and
:class:`sklearn.calibration.CalibrationDisplay`: build one with
``from_evaluation(ev)`` (which plots, as sklearn's ``from_predictions``), or
from arrays and call :meth:`plot`; ``plot`` returns the display and sets
``figure_``, ``ax_`` and ``line_``. What sklearn's displays do not have: the
pointwise uncertainty band of the privacy noise (``band_``), drawn when the
evaluation has one (differential privacy and a defined release).

Everything drawn is post-processing of the evaluation's one release: no
privacy cost. Matplotlib is imported when a display draws, and a new figure is
a :class:`matplotlib.figure.Figure` built without pyplot, so displays work under
any backend (Agg on servers and in CI). To show one in a notebook, pass an
``ax`` from ``plt.subplots()`` or display ``disp.figure_``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.collections import PolyCollection
    from matplotlib.figure import Figure, SubFigure
    from matplotlib.lines import Line2D

    from fedeval.evaluation import Evaluation

__all__ = ["CalibrationDisplay", "PrecisionRecallDisplay", "RocCurveDisplay"]

Band = tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]

#: Confidence level of the bands drawn by ``from_evaluation`` (as the HTML report).
BAND_LEVEL = 0.9


def _axes(ax: Axes | None) -> tuple[Axes, Figure | SubFigure]:
    """``ax`` and its figure, or a new pyplot-free figure with one axes."""
    if ax is None:
        from matplotlib.figure import Figure

        fig = Figure(figsize=(4.5, 4.5), layout="constrained")
        ax = fig.add_subplot()
    figure = ax.get_figure()
    if figure is None:  # pragma: no cover - axes made by matplotlib belong to a figure
        raise ValueError("ax must belong to a matplotlib Figure")
    return ax, figure


def _usable_band(ev: Evaluation, band: Band) -> Band | None:
    """The band when it says something: a private, defined release and finite bounds."""
    if not ev.guarantee.is_private or not ev.defined:
        return None
    grid, lo, hi = band
    ok = np.isfinite(lo) & np.isfinite(hi)
    if not ok.any():
        return None
    return grid[ok], lo[ok], hi[ok]


def _with_se(value: float | None, se: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "nan"
    if se is None or not math.isfinite(se) or se == 0:
        return f"{value:.2f}"
    return f"{value:.2f} ± {se:.2g}"


def _draw_band(ax: Axes, band: Band | None, color: Any, kwargs: dict[str, Any] | None) -> Any:
    if band is None:
        return None
    grid, lo, hi = band
    style = {"color": color, "alpha": 0.25, "linewidth": 0, **(kwargs or {})}
    return ax.fill_between(grid, lo, hi, **style)


class RocCurveDisplay:
    """ROC curve of a private evaluation, as :class:`sklearn.metrics.RocCurveDisplay`.

    Parameters
    ----------
    fpr, tpr : ndarray, shape (k,)
        The curve (:meth:`fedeval.Evaluation.roc_curve`).
    roc_auc : float, optional
        Shown in the legend.
    roc_auc_se : float, optional
        Its standard error from the privacy noise, shown after "±" when positive.
    name : str, optional
        Legend name of the curve.
    band : (grid, lower, upper), optional
        Pointwise band of TPR over a grid of FPR (:meth:`fedeval.Evaluation.roc_band`).

    Attributes
    ----------
    line_ : matplotlib Line2D
    band_ : matplotlib PolyCollection or None
    chance_level_ : matplotlib Line2D or None
    ax_ : matplotlib Axes
    figure_ : matplotlib Figure
        Set by :meth:`plot`.
    """

    line_: Line2D
    band_: PolyCollection | None
    chance_level_: Line2D | None
    ax_: Axes
    figure_: Figure | SubFigure

    def __init__(
        self,
        *,
        fpr: Any,
        tpr: Any,
        roc_auc: float | None = None,
        roc_auc_se: float | None = None,
        name: str | None = None,
        band: Band | None = None,
    ) -> None:
        self.fpr = np.asarray(fpr, dtype=np.float64)
        self.tpr = np.asarray(tpr, dtype=np.float64)
        self.roc_auc = roc_auc
        self.roc_auc_se = roc_auc_se
        self.name = name
        self.band = band

    @classmethod
    def from_evaluation(
        cls,
        ev: Evaluation,
        *,
        name: str | None = None,
        ax: Axes | None = None,
        band: bool = True,
        level: float = BAND_LEVEL,
        plot_chance_level: bool = False,
        **kwargs: Any,
    ) -> RocCurveDisplay:
        """Plot the ROC curve of an evaluation, with its uncertainty band under DP.

        Parameters
        ----------
        ev : Evaluation
            A binary evaluation (:func:`fedeval.evaluate`).
        name : str, optional
            Legend name; default "fedeval".
        ax : matplotlib Axes, optional
            Draw here; by default on a new figure.
        band : bool
            Draw the pointwise band of :meth:`fedeval.Evaluation.roc_band` when the
            release is private and defined (no band without noise).
        level : float
            Confidence level of the band, in (0, 1).
        plot_chance_level : bool
            Draw the diagonal.
        **kwargs
            Passed to :meth:`matplotlib.axes.Axes.plot` for the curve.

        Returns
        -------
        RocCurveDisplay
            Plotted: ``line_``, ``ax_`` and ``figure_`` are set; ``fpr`` and ``tpr``
            are those of ``ev.roc_curve()``.

        Notes
        -----
        Privacy: post-processing of the evaluation's release, no privacy cost.
        """
        fpr, tpr, _ = ev.roc_curve()
        drawn = _usable_band(ev, ev.roc_band(level=level)) if band else None
        disp = cls(
            fpr=fpr,
            tpr=tpr,
            roc_auc=ev.roc_auc,
            roc_auc_se=ev.roc_auc_se,
            name=name or "fedeval",
            band=drawn,
        )
        return disp.plot(ax=ax, plot_chance_level=plot_chance_level, **kwargs)

    def plot(
        self,
        ax: Axes | None = None,
        *,
        name: str | None = None,
        plot_chance_level: bool = False,
        band_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> RocCurveDisplay:
        """Draw the curve (and its band, when the display has one).

        Parameters
        ----------
        ax : matplotlib Axes, optional
            Draw here; by default on a new :class:`matplotlib.figure.Figure` (no pyplot).
        name : str, optional
            Legend name; default the display's ``name``.
        plot_chance_level : bool
            Draw the diagonal.
        band_kwargs : dict, optional
            Passed to :meth:`matplotlib.axes.Axes.fill_between` for the band.
        **kwargs
            Passed to :meth:`matplotlib.axes.Axes.plot` for the curve.

        Returns
        -------
        RocCurveDisplay
            ``self``, with ``line_``, ``band_``, ``chance_level_``, ``ax_`` and ``figure_`` set.
        """
        ax, figure = _axes(ax)
        name = self.name if name is None else name
        label = None
        if self.roc_auc is not None:
            auc = f"AUC = {_with_se(self.roc_auc, self.roc_auc_se)}"
            label = f"{name} ({auc})" if name else auc
        elif name:
            label = name
        style = {"drawstyle": "default", **({"label": label} if label else {}), **kwargs}
        (self.line_,) = ax.plot(self.fpr, self.tpr, **style)
        self.band_ = _draw_band(ax, self.band, self.line_.get_color(), band_kwargs)
        self.chance_level_ = None
        if plot_chance_level:
            (self.chance_level_,) = ax.plot(
                (0, 1), (0, 1), linestyle="--", color="k", label="Chance level (AUC = 0.5)"
            )
        ax.set(
            xlabel="False Positive Rate",
            ylabel="True Positive Rate",
            xlim=(-0.01, 1.01),
            ylim=(-0.01, 1.01),
            aspect="equal",
        )
        if label or plot_chance_level:
            ax.legend(loc="lower right")
        self.ax_, self.figure_ = ax, figure
        return self


class PrecisionRecallDisplay:
    """Precision–recall curve of a private evaluation, as sklearn's ``PrecisionRecallDisplay``.

    Parameters
    ----------
    precision, recall : ndarray, shape (k,)
        The curve (:meth:`fedeval.Evaluation.precision_recall_curve`).
    average_precision : float, optional
        Shown in the legend.
    average_precision_se : float, optional
        Its standard error from the privacy noise.
    name : str, optional
    prevalence_pos_label : float, optional
        Released share of positives: the chance level.
    band : (grid, lower, upper), optional
        Pointwise band of precision over a grid of recall (:meth:`fedeval.Evaluation.pr_band`).

    Attributes
    ----------
    line_, band_, chance_level_, ax_, figure_
        As :class:`RocCurveDisplay`, set by :meth:`plot`.
    """

    line_: Line2D
    band_: PolyCollection | None
    chance_level_: Line2D | None
    ax_: Axes
    figure_: Figure | SubFigure

    def __init__(
        self,
        precision: Any,
        recall: Any,
        *,
        average_precision: float | None = None,
        average_precision_se: float | None = None,
        name: str | None = None,
        prevalence_pos_label: float | None = None,
        band: Band | None = None,
    ) -> None:
        self.precision = np.asarray(precision, dtype=np.float64)
        self.recall = np.asarray(recall, dtype=np.float64)
        self.average_precision = average_precision
        self.average_precision_se = average_precision_se
        self.name = name
        self.prevalence_pos_label = prevalence_pos_label
        self.band = band

    @classmethod
    def from_evaluation(
        cls,
        ev: Evaluation,
        *,
        name: str | None = None,
        ax: Axes | None = None,
        band: bool = True,
        level: float = BAND_LEVEL,
        plot_chance_level: bool = False,
        **kwargs: Any,
    ) -> PrecisionRecallDisplay:
        """Plot the precision–recall curve of an evaluation, with its band under DP.

        Parameters
        ----------
        ev : Evaluation
        name : str, optional
            Legend name; default "fedeval".
        ax : matplotlib Axes, optional
        band : bool
            Draw :meth:`fedeval.Evaluation.pr_band` when private, defined and finite
            (the dense curve has one).
        level : float
            Confidence level of the band.
        plot_chance_level : bool
            Draw the released prevalence as a horizontal line.
        **kwargs
            Passed to :meth:`matplotlib.axes.Axes.plot`.

        Returns
        -------
        PrecisionRecallDisplay
            Plotted; ``precision`` and ``recall`` are those of ``ev.precision_recall_curve()``.

        Notes
        -----
        Privacy: post-processing of the evaluation's release, no privacy cost.
        """
        precision, recall, _ = ev.precision_recall_curve()
        drawn = _usable_band(ev, ev.pr_band(level=level)) if band else None
        total = ev.n_positives + ev.n_negatives
        disp = cls(
            precision,
            recall,
            average_precision=ev.average_precision,
            average_precision_se=ev.average_precision_se,
            name=name or "fedeval",
            prevalence_pos_label=ev.n_positives / total if total > 0 else None,
            band=drawn,
        )
        return disp.plot(ax=ax, plot_chance_level=plot_chance_level, **kwargs)

    def plot(
        self,
        ax: Axes | None = None,
        *,
        name: str | None = None,
        plot_chance_level: bool = False,
        band_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> PrecisionRecallDisplay:
        """Draw the curve as steps (sklearn's convention), and its band when there is one.

        Parameters
        ----------
        ax : matplotlib Axes, optional
        name : str, optional
        plot_chance_level : bool
            Needs ``prevalence_pos_label``.
        band_kwargs : dict, optional
            Passed to :meth:`matplotlib.axes.Axes.fill_between`.
        **kwargs
            Passed to :meth:`matplotlib.axes.Axes.plot`.

        Returns
        -------
        PrecisionRecallDisplay
            ``self``, plotted.

        Raises
        ------
        ValueError
            ``plot_chance_level`` without a prevalence.
        """
        if plot_chance_level and self.prevalence_pos_label is None:
            raise ValueError(
                "plot_chance_level needs prevalence_pos_label (from_evaluation sets it)"
            )
        ax, figure = _axes(ax)
        name = self.name if name is None else name
        label = None
        if self.average_precision is not None:
            ap = f"AP = {_with_se(self.average_precision, self.average_precision_se)}"
            label = f"{name} ({ap})" if name else ap
        elif name:
            label = name
        style = {"drawstyle": "steps-post", **({"label": label} if label else {}), **kwargs}
        (self.line_,) = ax.plot(self.recall, self.precision, **style)
        self.band_ = _draw_band(ax, self.band, self.line_.get_color(), band_kwargs)
        self.chance_level_ = None
        if plot_chance_level:
            p = float(self.prevalence_pos_label)  # type: ignore[arg-type]
            (self.chance_level_,) = ax.plot(
                (0, 1), (p, p), linestyle="--", color="k", label=f"Chance level (AP = {p:.2f})"
            )
        ax.set(
            xlabel="Recall",
            ylabel="Precision",
            xlim=(-0.01, 1.01),
            ylim=(-0.01, 1.01),
            aspect="equal",
        )
        if label or plot_chance_level:
            ax.legend(loc="lower left")
        self.ax_, self.figure_ = ax, figure
        return self


class CalibrationDisplay:
    """Reliability curve of a private evaluation, as :class:`sklearn.calibration.CalibrationDisplay`.

    Parameters
    ----------
    prob_true, prob_pred : ndarray, shape (k,)
        Observed frequency and mean prediction per bin
        (:meth:`fedeval.Evaluation.reliability_curve`).
    name : str, optional
    ece : float, optional
        Expected calibration error, shown in the legend.
    ece_se : float, optional
        Its standard error.

    Attributes
    ----------
    line_ : matplotlib Line2D
    ax_ : matplotlib Axes
    figure_ : matplotlib Figure
        Set by :meth:`plot`.
    """

    line_: Line2D
    ax_: Axes
    figure_: Figure | SubFigure

    def __init__(
        self,
        prob_true: Any,
        prob_pred: Any,
        *,
        name: str | None = None,
        ece: float | None = None,
        ece_se: float | None = None,
    ) -> None:
        self.prob_true = np.asarray(prob_true, dtype=np.float64)
        self.prob_pred = np.asarray(prob_pred, dtype=np.float64)
        self.name = name
        self.ece = ece
        self.ece_se = ece_se

    @classmethod
    def from_evaluation(
        cls,
        ev: Evaluation,
        *,
        n_bins: int = 5,
        name: str | None = None,
        ax: Axes | None = None,
        ref_line: bool = True,
        **kwargs: Any,
    ) -> CalibrationDisplay:
        """Plot the reliability curve of an evaluation whose scores are probabilities.

        Parameters
        ----------
        ev : Evaluation
            Scores in [0, 1] (score domain (0, 1)).
        n_bins : int
            Equal-width bins of [0, 1] (sklearn's default 5).
        name : str, optional
            Legend name; default "fedeval".
        ax : matplotlib Axes, optional
        ref_line : bool
            Draw the diagonal of perfect calibration.
        **kwargs
            Passed to :meth:`matplotlib.axes.Axes.plot`.

        Returns
        -------
        CalibrationDisplay
            Plotted; the legend shows the ECE with the same bins.

        Raises
        ------
        ValueError
            The score domain is not [0, 1], or ``n_bins`` < 1.

        Notes
        -----
        Privacy: post-processing of the evaluation's release, no privacy cost.
        """
        prob_true, prob_pred = ev.reliability_curve(n_bins)
        ce = ev.calibration_error(n_bins=n_bins)
        disp = cls(prob_true, prob_pred, name=name or "fedeval", ece=ce.estimate, ece_se=ce.se)
        return disp.plot(ax=ax, ref_line=ref_line, **kwargs)

    def plot(
        self,
        *,
        ax: Axes | None = None,
        name: str | None = None,
        ref_line: bool = True,
        **kwargs: Any,
    ) -> CalibrationDisplay:
        """Draw observed frequency against mean prediction (markers joined by lines).

        Parameters
        ----------
        ax : matplotlib Axes, optional
            Keyword-only, as in sklearn's ``CalibrationDisplay.plot``.
        name : str, optional
        ref_line : bool
            Draw the diagonal of perfect calibration.
        **kwargs
            Passed to :meth:`matplotlib.axes.Axes.plot`.

        Returns
        -------
        CalibrationDisplay
            ``self``, plotted.
        """
        ax, figure = _axes(ax)
        name = self.name if name is None else name
        label = name
        if self.ece is not None:
            ece = f"ECE = {_with_se(self.ece, self.ece_se)}"
            label = f"{name} ({ece})" if name else ece
        style = {"marker": "s", "linestyle": "-", **({"label": label} if label else {}), **kwargs}
        if ref_line:
            ax.plot((0, 1), (0, 1), "k:", label="Perfectly calibrated")
        (self.line_,) = ax.plot(self.prob_pred, self.prob_true, **style)
        ax.set(
            xlabel="Mean predicted probability (Positive class: 1)",
            ylabel="Fraction of positives (Positive class: 1)",
            xlim=(-0.01, 1.01),
            ylim=(-0.01, 1.01),
            aspect="equal",
        )
        ax.legend(loc="upper left")
        self.ax_, self.figure_ = ax, figure
        return self
