"""One call: release one set of histograms, answer every binary metric from it.

``evaluate`` charges the privacy budget once (one hierarchical-histogram
release); AUC, curves, threshold metrics and all standard errors are
post-processing of that release.

Public inputs
-------------
Everything :func:`evaluate` publishes depends on the data only through the
noisy release. The parameters of the release (height, buckets, quantiles) are
chosen from public inputs only (:mod:`fedeval.public_facts`): facts the caller
declares (:class:`fedeval.Public`), counts the privacy model makes public, or
else a noisy count of the examples released first with a small share of the
budget. Under differential privacy there is no refusal that depends on the
data: a class that is empty, or small against the noise, gives NaN or noisy
metrics and a warning.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fedeval.aggregation import Path, release
from fedeval.data import Federation, Scan
from fedeval.exceptions import SmallDataWarning, certainly_ignored
from fedeval.metrics.auc import BucketStrategy, mcclish_partial_auc, roc_auc_score
from fedeval.metrics.binned_calibration import (
    BinnedCalibrationError,
    BinnedScore,
    binned_brier_score,
    binned_calibration_error,
    binned_log_loss,
    binned_reliability_curve,
    check_probability_scores,
)
from fedeval.metrics.confusion import ThresholdMetrics, threshold_metrics
from fedeval.metrics.dense import (
    RARE_CLASS_EXAMPLES,
    BoundaryCounts,
    auc_bucketization_bound,
    boundary_counts,
    delong_auc_se,
    dense_ap_se,
    dense_auc_se,
    dense_band_se,
    dense_roc_auc,
    effective_examples,
)
from fedeval.metrics.precision_recall import (
    PRStrategy,
    average_precision_score,
    precision_recall_curve,
)
from fedeval.metrics.quantile_ecdf import Interpolation
from fedeval.metrics.roc import CurveMethod, roc_curve
from fedeval.multiclass_evaluation import MulticlassEvaluation, evaluate_multiclass
from fedeval.planning import Plan, plan
from fedeval.postprocess.bootstrap import bootstrap_values
from fedeval.privacy.ledger import BudgetLedger
from fedeval.privacy.models import PrivacyModel
from fedeval.privacy.receipt import (
    Receipt,
    ReceiptAccessors,
    compose,
    format_estimate,
    privacy_fields,
)
from fedeval.privacy.sampling import uniform_seed
from fedeval.public_facts import Public, planning_size
from fedeval.randomness import RNGLike, as_generator
from fedeval.sketches.hierarchical_histogram import HierarchicalHistogram
from fedeval.sketches.hierarchy import HierarchySketch, HierarchySpec, LevelBudget, layout_of
from fedeval.validation import check_int_at_least

__all__ = ["Evaluation", "evaluate", "resolve_parameters"]

_CLASS_NAMES = ("negatives", "positives")


def _defined(tree: HierarchicalHistogram) -> bool:
    """Whether both classes' released ECDFs exist (some level-1 count above zero).

    A function of the release only: the curve-based metrics are NaN where it is
    False (instead of an exception that would depend on the noisy counts).
    """
    return tree.has_mass(cls=0) and tree.has_mass(cls=1)


@dataclass(frozen=True)
class Evaluation(ReceiptAccessors):
    """Every binary metric from one private release.

    Attributes
    ----------
    tree : HierarchicalHistogram
        The consistent per-class hierarchy (the only thing released).
    parameters : dict
        Height, branching, buckets, quantiles, interpolation, PR strategy,
        whether each was chosen by the planner, and the public inputs the
        planner used: ``"n_clients"`` and ``"n_examples"`` (None unless public
        or declared, see :mod:`fedeval.public_facts`), ``"n_examples_released"``
        (the noisy count planned from, when one was released) and
        ``"public_inputs"`` (where each came from).
    plan : Plan
        The planner's choices from the same public inputs.
    bootstrap_replicates : int
        Replicates of the parametric bootstrap behind the standard errors of
        the curve-based metrics (post-processing, no privacy cost).

    Notes
    -----
    Under differential privacy nothing here holds an exact count of the data:
    class counts (:attr:`n_positives`, :attr:`n_negatives`) are read from the
    release. When a class's released counts are not positive its ECDF is
    undefined, and the AUC, average precision and curves are NaN (a function
    of the release, never of the data).
    """

    tree: HierarchicalHistogram
    parameters: dict[str, Any]
    plan: Plan
    bootstrap_replicates: int = 200
    _bootstrap_seed: int = field(default=0, repr=False)
    count_receipt: Receipt | None = field(default=None, repr=False)

    # --------------------------------------------------------------- privacy
    @cached_property
    def receipt(self) -> Receipt:
        """The receipt of the release, composed with the noisy count it was planned from."""
        if self.count_receipt is None:
            return self.tree.receipt
        return compose([self.count_receipt, self.tree.receipt], "binary evaluation")

    @property
    def n_positives(self) -> float:
        """Released number of positives (noisy under DP), floored at 0."""
        return float(max(self.tree.totals()[1], 0.0))

    @property
    def n_negatives(self) -> float:
        """Released number of negatives (noisy under DP), floored at 0."""
        return float(max(self.tree.totals()[0], 0.0))

    @cached_property
    def defined(self) -> bool:
        """Whether both classes have released counts above zero (else the curves are NaN)."""
        if self._method == "dense":
            return self.counts.defined
        return _defined(self.tree)

    def __repr__(self) -> str:
        """One line: the AUC and AP with their standard errors, ε, the unit; no arrays.

        A standard error that needs the bootstrap (``standard_errors="bootstrap"``)
        is shown only once computed, so that ``repr`` stays instant.
        """
        cheap = self._closed_form and self._method == "dense"
        auc_se = self.roc_auc_se if cheap or "roc_auc_se" in self.__dict__ else None
        ap_se = (
            self.average_precision_se if cheap or "average_precision_se" in self.__dict__ else None
        )
        return (
            f"Evaluation(roc_auc={format_estimate(self.roc_auc, auc_se)}, "
            f"average_precision={format_estimate(self.average_precision, ap_se)}, "
            f"{privacy_fields(self.guarantee, self.epsilon_spent)}, n_classes=2)"
        )

    # ---------------------------------------------------------- the metrics
    @property
    def _method(self) -> str:
        return str(self.parameters.get("curve", "quantile"))

    @cached_property
    def counts(self) -> BoundaryCounts:
        """Monotone per-class counts at every boundary of the dense curves' level."""
        return boundary_counts(self.tree, self.parameters.get("level"))

    def _auc_of(self, tree: HierarchicalHistogram) -> float:
        # The dense AUC is NaN by itself when a class total is not positive.
        if self.parameters["auc_buckets"] != "dense" and not _defined(tree):
            return math.nan
        return roc_auc_score(
            tree,
            n_buckets=self.parameters["n_buckets"],
            strategy=self.parameters["auc_buckets"],
            level=self.counts.level,
        )

    def _curve_options(self) -> dict[str, Any]:
        return {
            "method": self._method,
            "level": self.counts.level,
            "n_quantiles": self.parameters["n_quantiles"],
            "interpolation": self.parameters["interpolation"],
        }

    def _ap_of(self, tree: HierarchicalHistogram) -> float:
        if self._method != "dense" and not _defined(tree):
            return math.nan
        return average_precision_score(
            tree, strategy=self.parameters["pr_strategy"], **self._curve_options()
        )

    @property
    def _closed_form(self) -> bool:
        return self.parameters.get("standard_errors", "delta") == "delta"

    @cached_property
    def roc_auc(self) -> float:
        """ROC AUC; by default the trapezoid area of :meth:`roc_curve` (H_B over every bin of
        the curves' level, Cormode–Markov eq. 5), see :func:`fedeval.metrics.roc_auc_score`."""
        if self.parameters["auc_buckets"] == "dense":
            # The same projected counts as the curves and the SEs (computed once).
            return dense_roc_auc(self.counts)
        return self._auc_of(self.tree)

    @cached_property
    def roc_auc_se(self) -> float:
        """Standard error of :attr:`roc_auc` from the privacy noise.

        Delta method on the exact node variances (:func:`fedeval.metrics.dense.dense_auc_se`)
        for the dense AUC, or the parametric bootstrap (``standard_errors="bootstrap"``, and
        for the equi-depth/uniform bucket AUCs). 0 under secure aggregation, where the only
        error is bucketization (:attr:`roc_auc_bucketization_bound`); never 0 under DP.
        The sampling uncertainty of the population AUC is :attr:`roc_auc_sampling_se`.
        """
        if self._closed_form and self.parameters["auc_buckets"] == "dense":
            return dense_auc_se(self.tree, self.counts)
        return self._se(self._auc_of)

    @cached_property
    def roc_auc_sampling_se(self) -> float:
        """Sampling standard error of the population AUC (DeLong, from the released bins).

        Separate from the privacy noise (:attr:`roc_auc_se`): this is how far the
        AUC of these examples may be from the AUC of the population they were
        drawn from. :meth:`uncertainty` says which dominates.
        """
        return delong_auc_se(self.counts)

    @cached_property
    def roc_auc_bucketization_bound(self) -> float:
        """½ Σ p_i n_i / (PN): the AUC of the examples lies within this of the dense AUC's
        bin counts (Cormode–Markov Lemma 3). A bound, not a standard error."""
        return auc_bucketization_bound(self.counts)

    def uncertainty(self) -> dict[str, Any]:
        """Privacy-noise and sampling standard errors of the AUC side by side, and which dominates."""
        noise, sampling = self.roc_auc_se, self.roc_auc_sampling_se
        dominant = (
            "undefined"
            if not (math.isfinite(noise) and math.isfinite(sampling))
            else ("privacy noise" if noise > sampling else "sampling")
        )
        return {
            "roc_auc_privacy_se": noise,
            "roc_auc_sampling_se": sampling,
            "roc_auc_total_se": math.hypot(noise, sampling)
            if math.isfinite(noise) and math.isfinite(sampling)
            else math.nan,
            "dominant": dominant,
            "roc_auc_bucketization_bound": self.roc_auc_bucketization_bound,
        }

    def roc_curve(self) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """(fpr, tpr, thresholds) as ``sklearn.metrics.roc_curve`` lays them out.

        One NaN point when a class's released counts are not positive (:attr:`defined`).
        """
        if not self.defined:
            return _undefined_curve()
        return roc_curve(self.tree, **self._curve_options())

    def precision_recall_curve(
        self,
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """(precision, recall, thresholds) as ``sklearn.metrics.precision_recall_curve`` lays them out.

        One NaN point when a class's released counts are not positive (:attr:`defined`).
        """
        if not self.defined:
            return _undefined_curve()
        return precision_recall_curve(
            self.tree, strategy=self.parameters["pr_strategy"], **self._curve_options()
        )

    @cached_property
    def average_precision(self) -> float:
        """Step-sum average precision of the estimated PR curve."""
        return self._ap_of(self.tree)

    @cached_property
    def average_precision_se(self) -> float:
        """Standard error of :attr:`average_precision` from the privacy noise.

        Delta method (:func:`fedeval.metrics.dense.dense_ap_se`) for the dense curve, the
        parametric bootstrap otherwise (or with ``standard_errors="bootstrap"``).
        """
        if self._closed_form and self._method == "dense":
            return dense_ap_se(self.tree, self.counts)
        return self._se(self._ap_of)

    def roc_band(
        self, fpr_grid: Any = None, *, level: float = 0.9
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """Pointwise uncertainty band of TPR over a grid of FPR.

        Delta method through the dense curve's shrinkage and projections, with
        its bias (:func:`fedeval.metrics.dense.dense_band_se`); the parametric bootstrap with
        ``standard_errors="bootstrap"`` or the quantile curve.

        Returns
        -------
        fpr_grid, lower, upper : ndarray
            ``lower`` and ``upper`` are NaN when the release is not :attr:`defined`;
            bootstrap replicates with an undefined class are left out.
        """
        grid = (
            np.linspace(0, 1, 101) if fpr_grid is None else np.asarray(fpr_grid, dtype=np.float64)
        )
        nan = np.full(grid.shape, np.nan)
        if not self.defined:
            return grid, nan, nan.copy()
        if self._closed_form and self._method == "dense":
            fpr, tpr, _ = self.roc_curve()
            se = dense_band_se(self.tree, self.counts, grid, kind="roc")
            centre = np.interp(grid, fpr, tpr)
            z = _z(level)
            return grid, np.clip(centre - z * se, 0.0, 1.0), np.clip(centre + z * se, 0.0, 1.0)

        def tpr_on_grid(tree: HierarchicalHistogram) -> NDArray[np.float64]:
            if not _defined(tree):
                return np.full(grid.shape, np.nan)
            f, tp, _ = roc_curve(tree, **self._curve_options())
            return np.asarray(np.interp(grid, f, tp), dtype=np.float64)

        if not self.tree.guarantee.is_private:
            exact = tpr_on_grid(self.tree)
            return grid, exact, exact
        rows = np.array(
            bootstrap_values(
                self.tree,
                tpr_on_grid,
                replicates=self.bootstrap_replicates,
                rng=self._bootstrap_seed,
            )
        ).reshape(-1, grid.size)
        rows = rows[~np.isnan(rows).any(axis=1)]
        if rows.shape[0] == 0:
            return grid, nan, nan.copy()
        a = (1 - level) / 2
        return grid, np.quantile(rows, a, axis=0), np.quantile(rows, 1 - a, axis=0)

    def pr_band(
        self, recall_grid: Any = None, *, level: float = 0.9
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """Pointwise uncertainty band of precision over a grid of recall (delta method).

        The SE of precision at fixed recall through the dense curve's shrinkage
        and projections, with its bias (:func:`fedeval.metrics.dense.dense_band_se`);
        NaN when the release is
        not :attr:`defined` or the curve is not the dense one. Zero width without noise.
        """
        grid = (
            np.linspace(0, 1, 101)
            if recall_grid is None
            else np.asarray(recall_grid, dtype=np.float64)
        )
        nan = np.full(grid.shape, np.nan)
        if not self.defined or self._method != "dense":
            return grid, nan, nan.copy()
        precision, recall, _ = self.precision_recall_curve()
        order = np.argsort(recall, kind="stable")
        se = dense_band_se(self.tree, self.counts, grid, kind="pr")
        centre = np.interp(grid, recall[order], precision[order])
        z = _z(level)
        return grid, np.clip(centre - z * se, 0.0, 1.0), np.clip(centre + z * se, 0.0, 1.0)

    def partial_roc_auc(self, max_fpr: float) -> float:
        """McClish-standardised partial ROC AUC up to ``max_fpr``, as ``roc_auc_score(max_fpr=...)``.

        Computed from :meth:`roc_curve` by
        :func:`fedeval.metrics.auc.mcclish_partial_auc`: post-processing of the
        release, no privacy cost.

        Parameters
        ----------
        max_fpr : float
            In (0, 1]; 1 gives the full AUC of :meth:`roc_curve`.

        Returns
        -------
        float
            In [0, 1] (clipped: a noisy curve may leave the range); 0.5 is chance.
            NaN when the release is not :attr:`defined`.

        Raises
        ------
        ValueError
            ``max_fpr`` outside (0, 1].

        Notes
        -----
        Binning error: the released curve joins the points at the bin edges of
        its level by straight lines, and the examples' staircase lies in each
        bin's rectangle. The partial area is therefore within
        ``roc_auc_bucketization_bound`` (½ Σ p_i n_i / PN) plus half of the
        largest rectangle cut by ``max_fpr`` (together at most twice the bound)
        of the examples', and the standardised value within
        ``2 · roc_auc_bucketization_bound · ½ / (max_fpr − max_fpr²/2)``
        under secure aggregation.
        """
        m = float(max_fpr)
        if not 0.0 < m <= 1.0:
            raise ValueError(f"max_fpr must lie in (0, 1], got {max_fpr!r}")
        fpr, tpr, _ = self.roc_curve()
        return mcclish_partial_auc(fpr, tpr, max_fpr=m)

    # ------------------------------------------------------------ calibration
    def _probability_tree(self) -> HierarchicalHistogram:
        check_probability_scores(self.tree)
        return self.tree

    def calibration_error(self, *, n_bins: int | None = None) -> BinnedCalibrationError:
        """Binned expected calibration error with its privacy and sampling standard errors.

        See :func:`fedeval.metrics.binned_calibration.binned_calibration_error`.

        Parameters
        ----------
        n_bins : int, optional
            Equal-width bins of [0, 1]; default the first level of the release with
            at least 10 nodes (16 bins for a binary tree), whose bins are exact
            unions of leaves.

        Returns
        -------
        BinnedCalibrationError

        Raises
        ------
        ValueError
            The score domain is not [0, 1] (scores must be probabilities).
        """
        return binned_calibration_error(self._probability_tree(), n_bins=n_bins)

    def expected_calibration_error(self, *, n_bins: int | None = None) -> float:
        """Binned ECE, Σ_j (n_j/n)·|observed_j − predicted_j|, from the released hierarchy.

        Post-processing, no privacy cost; the uncertainty is in
        :meth:`calibration_error`. A leaf that straddles a bin edge goes to the
        bin of its midpoint (exact when ``n_bins`` is a power of the branching).

        Parameters
        ----------
        n_bins : int, optional
            As in :meth:`calibration_error`.

        Returns
        -------
        float

        Raises
        ------
        ValueError
            The score domain is not [0, 1].
        """
        return self.calibration_error(n_bins=n_bins).estimate

    @property
    def ece(self) -> float:
        """:meth:`expected_calibration_error` with its default bins."""
        return self.expected_calibration_error()

    @property
    def ece_se(self) -> float:
        """Standard error of :attr:`ece` (privacy noise and sampling of labels, combined)."""
        return self.calibration_error().se

    @cached_property
    def _brier(self) -> BinnedScore:
        return binned_brier_score(self._probability_tree())

    @cached_property
    def _log_loss(self) -> BinnedScore:
        return binned_log_loss(self._probability_tree())

    def brier_score(self) -> float:
        """Brier score, mean (s − y)², every example read at its leaf's midpoint.

        Post-processing, no privacy cost. Within the leaf width
        (:attr:`brier_binning_bound`) of ``sklearn.metrics.brier_score_loss``
        under secure aggregation; see
        :func:`fedeval.metrics.binned_calibration.binned_brier_score`.

        Returns
        -------
        float
            In [0, 1] (clipped under noise); NaN when the released total is not positive.

        Raises
        ------
        ValueError
            The score domain is not [0, 1].
        """
        return self._brier.estimate

    @property
    def brier(self) -> float:
        """:meth:`brier_score`."""
        return self.brier_score()

    @property
    def brier_se(self) -> float:
        """Standard error of :attr:`brier` from the privacy noise (0 without DP)."""
        return self._brier.privacy_se

    @property
    def brier_binning_bound(self) -> float:
        """Largest move of the Brier score from reading scores at leaf midpoints (the leaf width)."""
        return self._brier.binning_bound

    @property
    def log_loss(self) -> float:
        """Log loss (cross-entropy), every example at its leaf's midpoint, probabilities
        clipped to [eps, 1 − eps] as ``sklearn.metrics.log_loss``.

        Post-processing, no privacy cost; within :attr:`log_loss_binning_bound`
        of the examples' log loss under secure aggregation (see
        :func:`fedeval.metrics.binned_calibration.binned_log_loss`).

        Raises
        ------
        ValueError
            The score domain is not [0, 1].
        """
        return self._log_loss.estimate

    @property
    def log_loss_se(self) -> float:
        """Standard error of :attr:`log_loss` from the privacy noise (0 without DP)."""
        return self._log_loss.privacy_se

    @property
    def log_loss_binning_bound(self) -> float:
        """Largest move of the log loss from reading scores at leaf midpoints (released counts)."""
        return self._log_loss.binning_bound

    def reliability_curve(self, n_bins: int = 5) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(prob_true, prob_pred) per bin, as ``sklearn.calibration.calibration_curve``.

        Post-processing of the release, no privacy cost; see
        :func:`fedeval.metrics.binned_calibration.binned_reliability_curve`.

        Parameters
        ----------
        n_bins : int
            Equal-width bins of [0, 1] (sklearn's default strategy and default 5).

        Returns
        -------
        prob_true, prob_pred : ndarray, shape (k,)
            Observed frequency and mean prediction of the bins with a positive
            released count (k ≤ ``n_bins``).

        Raises
        ------
        ValueError
            The score domain is not [0, 1], or ``n_bins`` < 1.
        """
        return binned_reliability_curve(self._probability_tree(), n_bins=n_bins)

    # ------------------------------------------------- scikit-learn displays
    def roc_display(self, *, name: str | None = None) -> Any:
        """The released ROC curve as a :class:`sklearn.metrics.RocCurveDisplay` (not yet drawn).

        ``fpr`` and ``tpr`` are :meth:`roc_curve`'s and ``roc_auc`` is
        :attr:`roc_auc`: post-processing of the one release, no privacy cost.
        Call ``.plot(ax=...)`` as with any scikit-learn display. For the noise's
        uncertainty band as well, use :class:`fedeval.report.RocCurveDisplay`.

        Parameters
        ----------
        name : str, optional
            The legend's label (scikit-learn's ``name``).

        Returns
        -------
        sklearn.metrics.RocCurveDisplay
        """
        from sklearn.metrics import RocCurveDisplay

        fpr, tpr, _ = self.roc_curve()
        return RocCurveDisplay(fpr=fpr, tpr=tpr, roc_auc=self.roc_auc, name=name, pos_label=1)

    def pr_display(self, *, name: str | None = None) -> Any:
        """The released precision–recall curve as a :class:`sklearn.metrics.PrecisionRecallDisplay`.

        ``precision`` and ``recall`` are :meth:`precision_recall_curve`'s,
        ``average_precision`` is :attr:`average_precision`, and the chance
        level (``prevalence_pos_label``) is the released positive fraction
        ``n_positives / (n_positives + n_negatives)`` (a noisy count under DP,
        published by the same release). No privacy cost.

        Parameters
        ----------
        name : str, optional
            The legend's label.

        Returns
        -------
        sklearn.metrics.PrecisionRecallDisplay
        """
        from sklearn.metrics import PrecisionRecallDisplay

        precision, recall, _ = self.precision_recall_curve()
        total = self.n_positives + self.n_negatives
        prevalence = self.n_positives / total if total > 0 else math.nan
        return PrecisionRecallDisplay(
            precision,
            recall,
            average_precision=self.average_precision,
            name=name,
            pos_label=1,
            prevalence_pos_label=prevalence,
        )

    def calibration_display(self, n_bins: int = 5, *, name: str | None = None) -> Any:
        """The released reliability curve as a :class:`sklearn.calibration.CalibrationDisplay`.

        ``prob_true`` and ``prob_pred`` are :meth:`reliability_curve`'s. The
        display's ``y_prob`` (per-example probabilities in scikit-learn) is the
        bins' mean predictions ``prob_pred``: individual scores never leave
        their clients, and scikit-learn's ``plot`` draws only the curve.

        Parameters
        ----------
        n_bins : int
            Equal-width bins of [0, 1] (scikit-learn's default 5).
        name : str, optional
            The legend's label.

        Returns
        -------
        sklearn.calibration.CalibrationDisplay

        Raises
        ------
        ValueError
            The score domain is not [0, 1], or ``n_bins`` < 1.
        """
        from sklearn.calibration import CalibrationDisplay

        prob_true, prob_pred = self.reliability_curve(n_bins)
        return CalibrationDisplay(
            prob_true, prob_pred, prob_pred.copy(), estimator_name=name, pos_label=1
        )

    # ------------------------------------------------------------ thresholds
    def at_threshold(self, threshold: Any) -> ThresholdMetrics:
        """Precision, recall, FPR and accuracy of ``score >= threshold``, with standard errors."""
        return threshold_metrics(self.tree, threshold)

    # -------------------------------------------------------------- summary
    def summary(self) -> dict[str, Any]:
        """All scalar results with their standard errors, for tables and JSON."""
        fixed = self.at_threshold(0.5 * sum(self.tree.spec.score_range))
        return {
            "roc_auc": self.roc_auc,
            "roc_auc_se": self.roc_auc_se,
            "average_precision": self.average_precision,
            "average_precision_se": self.average_precision_se,
            "uncertainty": self.uncertainty(),
            "at_threshold": fixed.as_dict(),
            "n_positives": self.n_positives,
            "n_negatives": self.n_negatives,
            "epsilon_spent": self.epsilon_spent,
            "delta_spent": self.delta_spent,
            "privacy": self.tree.privacy,
            "guarantee": self.guarantee_line,
            "guarantee_details": self.guarantee_details,
            "receipt": self.receipt.as_dict(),
            "parameters": dict(self.parameters),
        }

    def _se(self, statistic: Any) -> float:
        """Standard error of any statistic of the release (one bootstrap, shared by all metrics).

        0 without noise; NaN when the release is not :attr:`defined` or fewer than
        two replicates give a number (replicates with an undefined class are left out).
        """
        if not self.tree.guarantee.is_private:
            return 0.0
        if not self.defined:
            return math.nan
        values = np.asarray(
            bootstrap_values(
                self.tree, statistic, replicates=self.bootstrap_replicates, rng=self._bootstrap_seed
            ),
            dtype=np.float64,
        )
        values = values[np.isfinite(values)]
        return float(np.std(values, ddof=1)) if values.size >= 2 else math.nan


def _z(level: float) -> float:
    """Two-sided normal quantile of a confidence level in (0, 1)."""
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    from scipy.stats import norm

    return float(norm.ppf(0.5 + level / 2))


def _undefined_curve() -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    nan = np.full(1, np.nan)
    return nan, nan.copy(), nan.copy()


AUC_ERROR_TOLERANCE = 0.05
"""Standard error of the AUC from the privacy noise above which :func:`evaluate` warns."""


def _raw_noise_screen(
    tree: HierarchicalHistogram, totals: NDArray[np.float64]
) -> tuple[float, NDArray[np.float64]]:
    """O(height) bounds from the raw tree: the AUC's noise SE (above) and effective examples (below).

    A prefix of the raw tree is a sum of at most b − 1 nodes per level, so its
    noise variance is at most S_c = (b − 1)·Σ_levels max node variance of class
    c; consistency (a best linear unbiased estimate) only lowers it. The AUC
    moves by δF_neg averaged over the positives and δF_pos over the negatives,
    each a normalised prefix error, so its noise SE is at most
    √(S₀/N² + S₁/P²) to first order (N, P the released totals); the dense
    AUC's shrinkage lowers the variance further, and measured on DistDP, LDP and
    central DP releases of 64 to 200,000 examples the delta-method SE
    (:attr:`Evaluation.roc_auc_se`) is 3–12× below it. Likewise
    :func:`~fedeval.metrics.dense.effective_examples` is at least
    1/(1/T + 4(√S + √v_T/2)²/T²) (the variance of X − T/2 bounded by its
    parts). Released values only.

    Returns
    -------
    auc_se_bound : float
        ``inf`` where a class total is not positive.
    effective_floor : ndarray, shape (2,)
    """
    spread = float(tree.spec.branching - 1)
    s = spread * np.sum([np.max(np.asarray(v)[:2], axis=-1) for v in tree.node_variance], axis=0)
    v_total = np.asarray(tree.node_variance[0]).sum(axis=-1)[:2]
    t = np.asarray(totals, dtype=np.float64)[:2]
    if not np.all(t > 0):
        return math.inf, np.zeros(2)
    auc_bound = math.sqrt(float(s[0]) / t[0] ** 2 + float(s[1]) / t[1] ** 2)
    var_f = (np.sqrt(s) + np.sqrt(v_total) / 2.0) ** 2 / t**2
    return auc_bound, 1.0 / (1.0 / t + 4.0 * var_f)


def _warn_if_unreliable(ev: Evaluation, *, stacklevel: int) -> None:
    """Warn when the release's AUC is imprecise or a class's released count is weak.

    The precision is the release's own delta-method standard error of the AUC
    (:attr:`Evaluation.roc_auc_se`, from the known node variances: budget-free
    post-processing). The planner's prediction is not used here: it plans from
    public inputs only, and without a declared size it assumes one example per
    client, so it overstates the error of a release that holds more examples.
    The message holds released values only (the SE and the noisy class totals
    with their standard errors), never an exact count.

    The check is O(height) for a release that is clearly fine
    (:func:`_raw_noise_screen`): the SE and the effective examples are computed
    only when the raw tree's bounds do not already settle them.
    """
    tree = ev.tree
    totals = tree.totals()
    reasons = []
    defined = _defined(tree)
    auc_bound, n_eff_floor = _raw_noise_screen(tree, totals)
    # The information the release holds about each class (metrics.dense.effective_examples):
    # exact only where the raw floor does not already clear the rare-class threshold.
    resolved = defined and float(np.min(n_eff_floor)) >= RARE_CLASS_EXAMPLES
    n_eff = effective_examples(tree) if defined and not resolved else n_eff_floor
    rare = defined and float(np.min(n_eff)) < RARE_CLASS_EXAMPLES
    # A rare class warns whatever the SE is (and the SE is floored wide there): the
    # delta-method SE is computed only when neither bound settles the decision.
    settled = defined and (auc_bound <= AUC_ERROR_TOLERANCE or rare)
    se_auc = ev.roc_auc_se if defined and not settled else float("nan")
    if math.isfinite(se_auc) and se_auc > AUC_ERROR_TOLERANCE:
        reasons.append(
            f"the AUC standard error from the privacy noise is {se_auc:.3g} "
            f"(tolerance {AUC_ERROR_TOLERANCE:g})"
        )
    # The raw level-1 variance bounds the consistent one (consistency never
    # increases a range query's variance): the exact one is computed only when needed.
    raw_se = np.sqrt(np.maximum(np.asarray(tree.node_variance[0]).sum(axis=-1), 0.0))
    if not (np.all(totals > 3.0 * raw_se) and defined):
        se = np.sqrt(np.maximum(tree.total_variance(), 0.0))
        weak = [c for c in (0, 1) if not totals[c] > 3.0 * se[c]]
        if weak or not defined:
            reasons.append(
                "released class count not clearly above the privacy noise (3 standard errors): "
                + "; ".join(
                    f"{_CLASS_NAMES[c]} ≈ {totals[c]:.1f} ± {se[c]:.2g}" for c in (weak or (0, 1))
                )
            )
    if rare:
        reasons.append(
            "the release holds about "
            + " and ".join(f"{n_eff[c]:.1f} effective {_CLASS_NAMES[c]}" for c in (1, 0))
            + " (noise-free examples that would pin the class's ECDF as well); below "
            f"{RARE_CLASS_EXAMPLES:g} the AUC and AP mostly reflect the other class and their "
            "standard errors (ev.roc_auc_se, ev.average_precision_se) are widened to cover that"
        )
    elif reasons and defined:
        if resolved:
            n_eff = effective_examples(tree)  # only the floor so far: the message states it
        reasons.append(
            f"effective positives ≈ {n_eff[1]:.1f}, effective negatives ≈ {n_eff[0]:.1f}"
        )
    if not reasons:
        return
    warnings.warn(
        "; ".join(reasons)
        # One decimal: a noisy total is not an integer, and is never printed as one.
        + f" (released class totals: negatives ≈ {totals[0]:.1f}, positives ≈ {totals[1]:.1f})."
        " Estimates are clipped to their valid range and carry their standard errors"
        " (capped at 0.5); the AUC, average precision and curves are NaN where a released"
        " class total is not positive",
        SmallDataWarning,
        stacklevel=stacklevel,
    )


def resolve_parameters(
    privacy: PrivacyModel,
    *,
    n_clients: int | None,
    n_examples: int | None = None,
    n_examples_source: str | None = None,
    height: int | None = None,
    branching: int = 2,
    n_buckets: int | None = None,
    n_quantiles: int | None = None,
    interpolation: str = "pchip",
    pr_strategy: str = "separate",
    auc_buckets: str = "dense",
    level_budget: str = "split",
    path: str = "fast",
    curve: str = "dense",
    level: int | None = None,
    standard_errors: str = "delta",
) -> tuple[Plan, dict[str, Any]]:
    """The planner's choices, overridden where the caller gave a value, validated.

    Shared by :func:`evaluate` and the Flower server so both release and decode
    with the same parameters.

    Parameters
    ----------
    privacy : privacy model
    n_clients : int or None
        The number of participating clients when public (see
        :mod:`fedeval.public_facts`), else None.
    n_examples : int, optional
        A *public* number of examples, or a count decoded from a release;
        None plans from ``n_clients``. It is published in the parameters, so
        never pass an exact private count.
    n_examples_source : str, optional
        Where ``n_examples`` came from, in words, for ``parameters["public_inputs"]``.
    height, branching, n_buckets, n_quantiles, interpolation, pr_strategy, auc_buckets, level_budget, path, curve, level, standard_errors
        As in :func:`evaluate`.

    Returns
    -------
    plan : Plan
    parameters : dict
        What :attr:`Evaluation.parameters` holds.

    Notes
    -----
    Public inputs: ``n_clients`` and ``n_examples`` (when given) are published
    in the parameters and decide the height, buckets and quantiles.

    Raises
    ------
    ValueError
        A bad parameter, or one that does nothing for the chosen curve.
    """
    chosen = plan(privacy, n_clients=n_clients, n_examples=n_examples, branching=branching)
    if n_examples_source is None:
        n_examples_source = (
            "given by the caller as public"
            if n_examples is not None
            else "not given: parameters planned from the number of clients"
        )
    h = chosen.height if height is None else check_int_at_least(height, 1, name="height")
    leaves = branching**h
    q = (
        min(chosen.n_quantiles, leaves)
        if n_quantiles is None
        else check_int_at_least(n_quantiles, 1, name="n_quantiles")
    )
    nb = (
        min(chosen.n_buckets, max(2, leaves // 4))
        if n_buckets is None
        else check_int_at_least(n_buckets, 1, name="n_buckets")
    )
    if interpolation not in ("pchip", "linear"):
        raise ValueError(f"interpolation must be 'pchip' or 'linear', got {interpolation!r}")
    if pr_strategy not in ("separate", "combine"):
        raise ValueError(f"pr_strategy must be 'separate' or 'combine', got {pr_strategy!r}")
    if auc_buckets not in ("dense", "equi-depth", "uniform"):
        raise ValueError(
            f"auc_buckets must be 'dense', 'equi-depth' or 'uniform', got {auc_buckets!r}"
        )
    if curve not in ("dense", "quantile"):
        raise ValueError(f"curve must be 'dense' or 'quantile', got {curve!r}")
    if standard_errors not in ("delta", "bootstrap"):
        raise ValueError(f"standard_errors must be 'delta' or 'bootstrap', got {standard_errors!r}")
    if level is not None and not 1 <= check_int_at_least(level, 1, name="level") <= h:
        raise ValueError(f"level must lie in 1..{h} (the height), got {level}")
    params: dict[str, Any] = {
        "height": h,
        "branching": branching,
        "n_buckets": nb,
        "n_quantiles": q,
        "interpolation": interpolation,
        "pr_strategy": pr_strategy,
        "auc_buckets": auc_buckets,
        "curve": curve,
        "level": level,
        "standard_errors": standard_errors,
        "level_budget": level_budget,
        "path": path,
        "planned": {
            "height": height is None,
            "n_buckets": n_buckets is None,
            "n_quantiles": n_quantiles is None,
        },
        "n_clients": n_clients,
        "n_examples": n_examples,
        "public_inputs": {
            "n_clients": "the number of participating clients (public in federated learning)",
            "n_examples": n_examples_source,
        },
    }
    return chosen, params


def _refuse_unused_curve_options(
    curve: str, n_quantiles: int | None, interpolation: str, pr_strategy: str
) -> None:
    """ValueError for a quantile-curve option given with the dense curve, which ignores it.

    ``n_quantiles`` counts as given when it is not None; ``interpolation`` and
    ``pr_strategy`` when they differ from their defaults ("pchip", "separate"),
    which callers such as the command line pass whatever the curve.
    """
    if curve != "dense":
        return
    given = [
        name
        for name, value, default in (
            ("n_quantiles", n_quantiles, None),
            ("interpolation", interpolation, "pchip"),
            ("pr_strategy", pr_strategy, "separate"),
        )
        if value != default
    ]
    if given:
        raise ValueError(
            f"{', '.join(given)} only shape(s) the quantile curves (Xu-Cormode); the dense "
            "curve (curve='dense', the default) does not use it and would ignore it: pass "
            "curve='quantile' to use it, or leave it out"
        )


def evaluate(
    fed: Federation | Scan,
    privacy: PrivacyModel,
    *,
    public: Public | None = None,
    n_examples: int | None = None,
    height: int | None = None,
    branching: int = 2,
    n_buckets: int | None = None,
    n_quantiles: int | None = None,
    interpolation: Interpolation = "pchip",
    pr_strategy: PRStrategy = "separate",
    auc_buckets: BucketStrategy = "dense",
    level_budget: LevelBudget = "split",
    path: Path = "fast",
    curve: CurveMethod = "dense",
    level: int | None = None,
    standard_errors: str = "delta",
    bootstrap_replicates: int = 200,
    rng: RNGLike = None,
    ledger: BudgetLedger | None = None,
) -> Evaluation | MulticlassEvaluation:
    """Evaluate a classifier on federated scores and labels, privately.

    A multiclass Federation is evaluated by
    :func:`fedeval.multiclass_evaluation.evaluate_multiclass` (one release of
    the multiclass sketch; passing a binary-only argument below is an error) and
    gives a :class:`~fedeval.multiclass_evaluation.MulticlassEvaluation`.

    Parameters
    ----------
    fed : Federation or Scan
        Binary or multiclass task in memory, or a binary task streamed
        (:func:`fedeval.scan`).
    privacy : SecureAggregation, DistributedDP, CentralDP or LocalDP
    public : Public, optional
        Facts declared public (the number of clients, of examples, the score
        domain): used to plan and published as given (:mod:`fedeval.public_facts`).
    n_examples : int, optional
        Shorthand for ``public=Public(n_examples=...)``: a number of examples
        the caller declares public (a published size or a public bound).
    height, n_buckets, n_quantiles : int, optional
        Chosen by :func:`fedeval.plan` unless given; ``n_quantiles`` only for
        ``curve="quantile"`` (an error with the dense curve, which ignores it).
    branching : int
    interpolation : {"pchip", "linear"}
        ECDF reconstruction from quantiles (Xu–Cormode §3.1), for ``curve="quantile"``
        only: "linear" with the dense curve is an error.
    pr_strategy : {"separate", "combine"}
        For ``curve="quantile"`` only: "combine" with the dense curve is an error.
    auc_buckets : {"dense", "equi-depth", "uniform"}
        "dense" (default): the AUC is the trapezoid area of the dense ROC curve
        (H_B over every bin of its level); the others are H_B over ``n_buckets``
        buckets (Cormode–Markov §5).
    level_budget : {"split", "assign"}
        Distributed DP budget over levels (see :func:`fedeval.sketches.hierarchy.layout_of`).
    path : {"fast", "faithful"}
    curve : {"dense", "quantile"}
        "dense" (default): ROC/PR curves and AP from consistent, monotone prefix
        counts at every boundary of one level (:mod:`fedeval.metrics.dense`).
        "quantile": Xu–Cormode's construction from Q quantiles per class.
    level : int, optional
        Level of the dense curves; default chosen from the release
        (:func:`fedeval.metrics.dense.choose_level`).
    standard_errors : {"delta", "bootstrap"}
        Closed-form delta-method standard errors on the exact node variances
        (default), or the parametric bootstrap.
    bootstrap_replicates : int
        Replicates for bootstrap standard errors (post-processing, no privacy cost).
    rng : int, Generator or None
    ledger : BudgetLedger, optional
        Charged once, atomically, for the single release.

    Returns
    -------
    Evaluation

    See Also
    --------
    fedeval.evaluate : the public entry point, which also takes ``slices``
        (:func:`fedeval.entry_points.evaluate`).

    Raises
    ------
    ValueError
        Multiclass data, bad parameters, a quantile-curve option (``n_quantiles``,
        a non-default ``interpolation`` or ``pr_strategy``) with the dense curve;
        without differential privacy
        (secure aggregation) also a class with no examples (AUC undefined).
    BudgetExceededError
        The ledger cannot afford the release; nothing is released.

    Warns
    -----
    SmallDataWarning
        Under differential privacy, when a class's released count is not
        clearly above its noise (3 standard errors) or not positive: the class
        is empty or small, and the metrics are NaN or unreliable. The decision
        and the message use released values only. When the warnings filters
        ignore it (:func:`fedeval.exceptions.certainly_ignored`), the check is
        skipped: it has no other output.

    Notes
    -----
    Privacy: exactly one hierarchical-histogram release under ``privacy``;
    everything else is post-processing.

    Public inputs (what the parameters, the plan, the summary, the receipt
    and the report may depend on besides the noisy release), decided by
    :func:`fedeval.public_facts.public_counts`:

    * the score domain ``fed.score_range`` and the parameters given here;
    * declared facts (``public``, ``n_examples``);
    * the number of participating clients only where neighbouring datasets
      have the same clients (replacement of one unit's data) or the model
      adds no noise; never under add/remove of a client, nor of an example
      (a client may hold just that example);
    * the number of examples only when the model makes it public
      (``privacy.example_count_public``: local DP, replacement of one
      example) or adds no noise.

    When the parameters must be planned and no size is public, a noisy count
    of the examples is released first with
    :data:`~fedeval.public_facts.COUNT_SHARE` of ε, the hierarchy gets the
    rest, and the receipt lists both (they compose to ε).

    Under differential privacy no exception depends on the data: a class that
    is empty gives NaN or noisy metrics with a warning. Format errors
    (bad parameters) still raise.
    """
    if not isinstance(fed, Federation | Scan):
        raise TypeError(f"fed must be a Federation or a Scan, got {type(fed).__name__}")
    if fed.kind != "binary":  # multiclass: one release of the multiclass sketch
        assert isinstance(fed, Federation)  # a Scan is always binary
        given = {
            "height": height is not None,
            "branching": branching != 2,
            "n_buckets": n_buckets is not None,
            "n_quantiles": n_quantiles is not None,
            "interpolation": interpolation != "pchip",
            "pr_strategy": pr_strategy != "separate",
            "auc_buckets": auc_buckets != "dense",
            "level_budget": level_budget != "split",
            "curve": curve != "dense",
            "level": level is not None,
            "standard_errors": standard_errors != "delta",
            "bootstrap_replicates": bootstrap_replicates != 200,
        }
        binary_only = [name for name, set_ in given.items() if set_]
        if binary_only:
            raise ValueError(
                f"{', '.join(binary_only)}: binary-evaluation argument(s), not used for a "
                f"multiclass Federation ({fed.n_classes} classes); use "
                "fedeval.evaluate_multiclass(fed, privacy, n_bins=..., ...) for its options"
            )
        return evaluate_multiclass(
            fed, privacy, n_examples=n_examples, path=path, rng=rng, ledger=ledger, public=public
        )
    check_int_at_least(bootstrap_replicates, 2, name="bootstrap_replicates")
    _refuse_unused_curve_options(curve, n_quantiles, interpolation, pr_strategy)
    private = getattr(privacy, "regime", None) != "exact"
    if not private:
        # No differential privacy: the exact counts are what the release shows anyway.
        n_pos = fed.n_positives() if isinstance(fed, Scan) else int(fed.labels.sum())
        if n_pos == 0 or n_pos == fed.n_examples:
            only = "negative" if n_pos == 0 else "positive"
            raise ValueError(
                f"all {fed.n_examples} examples are {only}: ROC AUC and curves are undefined"
            )
    pub = public or Public()
    if n_examples is not None:
        if pub.n_examples is not None and pub.n_examples != n_examples:
            raise ValueError("n_examples disagrees with public.n_examples; declare one")
        pub = Public(pub.n_clients, n_examples, pub.score_range)
    pub.check_domain(fed)
    gen = as_generator(rng)
    planned = (
        height is None
        or (curve == "quantile" and n_quantiles is None)
        or (auc_buckets != "dense" and n_buckets is None)
    )
    size = planning_size(
        fed, privacy, public=pub, needed=planned, path=path, rng=gen, ledger=ledger
    )
    chosen, params = resolve_parameters(
        size.remaining,
        n_clients=size.n_clients,
        n_examples=size.n_examples,
        height=height,
        branching=branching,
        n_buckets=n_buckets,
        n_quantiles=n_quantiles,
        interpolation=interpolation,
        pr_strategy=pr_strategy,
        auc_buckets=auc_buckets,
        level_budget=level_budget,
        path=path,
        curve=curve,
        level=level,
        standard_errors=standard_errors,
    )
    for key in ("n_clients", "n_examples", "public_inputs"):
        params.pop(key, None)
    params.update(size.parameters())
    sketch = HierarchySketch(HierarchySpec(params["height"], branching, fed.score_range, 2))
    tree = (
        release(
            fed,
            sketch,
            size.remaining,
            layout=layout_of(level_budget),
            path=path,
            rng=gen,
            ledger=ledger,
        )
        .decode()
        .consistent()
    )
    seed = uniform_seed(gen)
    ev = Evaluation(tree, params, chosen, bootstrap_replicates, seed, size.receipt)
    if private and not certainly_ignored(SmallDataWarning):  # its only output is a warning
        _warn_if_unreliable(ev, stacklevel=3)
    return ev
