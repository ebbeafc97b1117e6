"""Private evaluation of a multiclass classifier from one release.

:func:`evaluate_multiclass` (also reached through :func:`fedeval.evaluate` for a
multiclass :class:`~fedeval.data.Federation`) releases one
:class:`~fedeval.sketches.multiclass.MulticlassSketch` under the privacy model
and answers everything from it:

* confusion matrix at argmax → accuracy, per-class precision / recall / F1,
  their macro and support-weighted averages, balanced accuracy;
* one-vs-rest ROC AUC per class, macro and prevalence-weighted (the
  conventions of ``sklearn.metrics.roc_auc_score(multi_class="ovr")``), and
  per-class ROC and precision–recall curves in scikit-learn's layout;
* top-k accuracy from the true class's rank;
* top-label and classwise ECE (private-federated-multiclass-calibration,
  Definition 3.3 and §3);
* mean log loss and Brier score from per-example values clipped to a public bound.

Every ratio uses its own part's released total as denominator (a ratio
estimator: under local DP each part is estimated from a different random
subset of clients, and a part's own total cancels its scaling).

Standard errors
---------------
The ECEs' standard errors are folded-normal (:func:`_folded_ece_se`): a sum of
absolute values of independent noisy bin differences. Every other scalar's
standard error is the delta method on the released vector:
``SE² = Σ_i (∂f/∂v_i)² Var(v_i)`` with the known per-coordinate noise variance
(discrete Laplace / Pólya sums, or the oracle's plus the split's sampling
variance under local DP) and the derivative by central differences (step 10⁻³
noise standard deviations, exact for the piecewise-rational metrics here away
from their kinks). It is deterministic (no resampling) and 0 without noise.
The noise of different coordinates is taken as independent, which it is for
additive noise; under local DP the split's sampling covariance between cells of
one part is left out (the per-cell hypergeometric variance is kept), which the
statistical tests check is immaterial for these ratios.

Bucketization bounds (public, or computed from the release)
-----------------------------------------------------------
* OvR AUC of class j from a histogram vs the exact AUC: at most
  ½ Σ_b P_jb N_jb / (P_j N_j) (pairs in one bin are counted as ties; the exact
  value lies between "all below" and "all above").
* ECE from B fine bins grouped into M coarse bins, with each fine bin's
  probability sum taken at its midpoint: within width/2 = 1/(2B) of the ECE
  with the same M left-closed bins computed from the raw probabilities.
* Mean log loss and Brier score: within γ/2 of the mean of the clipped
  per-example values (γ = L/B_loss, the fixed-point step).

Public inputs
-------------
The parameters (bins, loss levels, ECE bins, probability floor) depend only on
the privacy model's regime and the caller's arguments, never on the data.
Under differential privacy nothing here is an exact count, and no exception
depends on the data: a class that is empty or small against the noise gives NaN
or noisy metrics and a warning without counts.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Generic, TypeVar, overload

import numpy as np
from numpy.typing import NDArray

from fedeval.aggregation import Path, release
from fedeval.data import Federation
from fedeval.exceptions import SmallDataWarning
from fedeval.privacy.ledger import BudgetLedger
from fedeval.privacy.models import PrivacyModel
from fedeval.privacy.receipt import Receipt, ReceiptAccessors
from fedeval.privacy.sensitivity import Layout
from fedeval.public_facts import Public, public_counts
from fedeval.randomness import RNGLike, as_generator
from fedeval.sketches.multiclass import MulticlassCounts, MulticlassSketch
from fedeval.validation import check_int_at_least

__all__ = ["MulticlassEvaluation", "evaluate_multiclass", "multiclass_parameters"]

_FD_STEP = 1e-3
_FD_CHUNK = 256

Batch = dict[str, NDArray[np.float64]]


# ---------------------------------------------------------------- the metrics
def _ratio(num: NDArray[np.float64], den: NDArray[np.float64]) -> NDArray[np.float64]:
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.asarray(num / den, dtype=np.float64)
    return np.where(den > 0, out, np.nan)


def _midpoints(n_bins: int, hi: float) -> NDArray[np.float64]:
    return np.asarray((np.arange(n_bins) + 0.5) * (hi / n_bins), dtype=np.float64)


def _split(sketch: MulticlassSketch, vectors: NDArray[np.float64]) -> Batch:
    """Vectors (R, L) → every part with a leading replicate axis."""
    c, b, lb = sketch.n_classes, sketch.n_bins, sketch.loss_bins
    o = sketch.part_offsets()
    r = vectors.shape[0]
    return {
        "confusion": vectors[:, : o[1]].reshape(r, c, c),
        "ovr": vectors[:, o[1] : o[c + 1]].reshape(r, c, 2, b),
        "rank": vectors[:, o[c + 1] : o[c + 2]],
        "top": vectors[:, o[c + 2] : o[c + 3]].reshape(r, 2, b),
        "log_loss": vectors[:, o[c + 3] : o[c + 3] + lb],
        "brier": vectors[:, o[c + 4] : o[c + 4] + lb],
    }


def _ece(
    events: NDArray[np.float64], counts: NDArray[np.float64], ece_bins: int
) -> NDArray[np.float64]:
    """Σ_m |events_m − Σ p in m| / n over M coarse bins, from fine (..., B) counts.

    A fine bin's probability sum is its count times its midpoint.
    """
    b = counts.shape[-1]
    mid = _midpoints(b, 1.0)
    shape = (*counts.shape[:-1], ece_bins, b // ece_bins)
    ev = events.reshape(shape).sum(axis=-1)
    ps = (counts * mid).reshape(shape).sum(axis=-1)
    return _ratio(np.abs(ev - ps).sum(axis=-1), counts.sum(axis=-1))


def _metrics(batch: Batch, sketch: MulticlassSketch, ece_bins: int) -> Batch:
    """Every scalar and per-class metric, vectorised over the leading replicate axis."""
    conf = batch["confusion"]
    total = conf.sum(axis=(1, 2))
    diag = np.diagonal(conf, axis1=1, axis2=2)
    support = conf.sum(axis=2)  # true class
    predicted = conf.sum(axis=1)
    precision = _ratio(diag, predicted)
    recall = _ratio(diag, support)
    f1 = _ratio(2.0 * diag, support + predicted)
    weights = _ratio(support, total[:, None])
    out: Batch = {
        "accuracy": _ratio(diag.sum(axis=1), total),
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "macro_precision": precision.mean(axis=1),
        "macro_recall": recall.mean(axis=1),
        "macro_f1": f1.mean(axis=1),
        "weighted_precision": (weights * precision).sum(axis=1),
        "weighted_recall": (weights * recall).sum(axis=1),
        "weighted_f1": (weights * f1).sum(axis=1),
        "balanced_accuracy": recall.mean(axis=1),
    }
    ovr = batch["ovr"]
    neg, pos = ovr[:, :, 0, :], ovr[:, :, 1, :]
    n_pos, n_neg = pos.sum(axis=-1), neg.sum(axis=-1)
    below = np.cumsum(neg, axis=-1) - neg
    # Undefined (NaN) unless both released class totals are positive.
    auc = _ratio(
        (pos * below).sum(axis=-1) + 0.5 * (pos * neg).sum(axis=-1),
        np.where(n_neg > 0, n_pos, np.nan) * n_neg,
    )
    prevalence = _ratio(n_pos, n_pos.sum(axis=1, keepdims=True))
    out["roc_auc_per_class"] = auc
    out["roc_auc"] = auc.mean(axis=1)
    out["roc_auc_weighted"] = (prevalence * auc).sum(axis=1)
    rank = batch["rank"]
    out["top_k_accuracy"] = _ratio(np.cumsum(rank, axis=1), rank.sum(axis=1, keepdims=True))
    top = batch["top"]
    out["ece_top_label"] = _ece(top[:, 1, :], top.sum(axis=1), ece_bins)
    per_class = _ece(pos, neg + pos, ece_bins)
    out["ece_classwise_per_class"] = per_class
    out["ece_classwise"] = per_class.mean(axis=1)
    for name, hi in (("log_loss", sketch.log_loss_bound), ("brier", 2.0)):
        hist = batch[name]
        out[name] = _ratio(hist @ _midpoints(sketch.loss_bins, hi), hist.sum(axis=1))
    return out


def _delta_method_se(
    vector: NDArray[np.float64],
    variance: NDArray[np.float64],
    statistic: Callable[[NDArray[np.float64]], Batch],
) -> Batch:
    """Delta-method standard errors of every output of ``statistic`` (module docstring)."""
    base = statistic(vector[None, :])
    acc = {k: np.zeros(v.shape[1:]) for k, v in base.items()}
    active = np.flatnonzero(variance > 0)
    for start in range(0, active.size, _FD_CHUNK):
        idx = active[start : start + _FD_CHUNK]
        sd = np.sqrt(variance[idx])
        h = _FD_STEP * sd
        k = idx.size
        batch = np.repeat(vector[None, :], 2 * k, axis=0)
        batch[np.arange(k), idx] += h
        batch[k + np.arange(k), idx] -= h
        values = statistic(batch)
        for name, v in values.items():
            slope = (v[:k] - v[k:]) / (2.0 * h.reshape((k,) + (1,) * (v.ndim - 1)))
            contrib = slope * sd.reshape((k,) + (1,) * (v.ndim - 1))
            acc[name] += np.nansum(np.square(contrib), axis=0)
    return {
        k: np.where(np.isnan(base[k][0]), np.nan, np.sqrt(acc[k])) for k in base
    }  # NaN metric → NaN SE


def _folded_ece_se(
    events: NDArray[np.float64],
    others: NDArray[np.float64],
    var_events: NDArray[np.float64],
    var_others: NDArray[np.float64],
    ece_bins: int,
) -> float:
    """SE of an ECE from fine histograms of events and non-events, each with its noise variance.

    ECE = Σ_m |d_m| / n with d_m = Σ_{b∈m} events_b (1 − mid_b) − others_b mid_b.
    The coarse bins use disjoint noisy cells, so the d_m are independent
    normals (approximately) with known variances s_m²; each |d_m| is folded
    normal, Var|X| = μ² + s² − (E|X|)² with E|X| = s√(2/π) e^(−μ²/2s²) +
    |μ| (1 − 2Φ(−|μ|/s)), evaluated at |μ| = √max(d_m² − s_m², 0) (d_m² − s_m²
    is unbiased for μ²; the released |d_m| itself overstates a small |μ|). The delta method
    (slope ±1) would overstate the SE of bins whose |d_m| is within its
    noise. The noise of n adds (ECE/n)² Var(n).
    """
    from scipy.special import ndtr

    mid = _midpoints(events.size, 1.0)
    d = (events * (1.0 - mid) - others * mid).reshape(ece_bins, -1).sum(axis=1)
    s2 = (var_events * (1.0 - mid) ** 2 + var_others * mid**2).reshape(ece_bins, -1).sum(axis=1)
    n = float(events.sum() + others.sum())
    if not n > 0:
        return math.nan
    s = np.sqrt(s2)
    # |μ| from the unbiased estimate of μ²: the released |d_m| overstates a small |μ_m|.
    mu = np.sqrt(np.maximum(d**2 - s2, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(s > 0, mu / s, np.inf)
    mean_abs = np.where(
        s > 0, s * np.sqrt(2.0 / np.pi) * np.exp(-0.5 * np.minimum(z, 40.0) ** 2), 0.0
    ) + mu * (1.0 - 2.0 * ndtr(-z))
    var_abs = np.maximum(mu**2 + s2 - mean_abs**2, 0.0)
    ece = float(np.abs(d).sum() / n)
    var_n = float(var_events.sum() + var_others.sum())
    return float(np.sqrt(var_abs.sum() / n**2 + (ece / n) ** 2 * var_n))


_T = TypeVar("_T")


class _Metric(Generic[_T]):
    """A read-only metric of :attr:`MulticlassEvaluation.values`, typed for users."""

    def __init__(self, key: str, doc: str, convert: Callable[[Any], _T]) -> None:
        self.key = key
        self.convert = convert
        self.__doc__ = doc

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> _Metric[_T]: ...

    @overload
    def __get__(self, obj: MulticlassEvaluation, owner: type | None = None) -> _T: ...

    def __get__(
        self, obj: MulticlassEvaluation | None, owner: type | None = None
    ) -> _Metric[_T] | _T:
        if obj is None:
            return self
        return self.convert(obj.values[self.key])


def _scalar(key: str, doc: str) -> _Metric[float]:
    return _Metric(key, doc, float)


def _per_class(key: str, doc: str) -> _Metric[NDArray[np.float64]]:
    return _Metric(key, doc, np.asarray)


# ----------------------------------------------------------------- the result
@dataclass(frozen=True)
class MulticlassEvaluation(ReceiptAccessors):
    """Every multiclass metric from one private release, with standard errors.

    Attributes
    ----------
    counts : MulticlassCounts
        The decoded release (the only thing released).
    parameters : dict
        Bins, loss levels, ECE bins, probability floor, layout and path, what
        the planner chose and the public inputs used.

    Notes
    -----
    Scalars are properties (``accuracy``, ``balanced_accuracy``, ``macro_f1``,
    ``roc_auc`` = macro one-vs-rest AUC, ``ece_top_label``, ``log_loss``, ...);
    :attr:`standard_errors` holds the SE of every one of them (0 without
    noise). Per-class arrays: :attr:`precision`, :attr:`recall`, :attr:`f1`,
    :attr:`roc_auc_per_class`. Under differential privacy the counts are noisy
    and unbiased: a metric may fall slightly outside [0, 1] and is not clipped.
    """

    counts: MulticlassCounts
    parameters: dict[str, Any]

    # --------------------------------------------------------------- privacy
    @property
    def sketch(self) -> MulticlassSketch:
        return self.counts.sketch

    @property
    def n_classes(self) -> int:
        return self.sketch.n_classes

    @property
    def receipt(self) -> Receipt:
        return self.counts.receipt

    @property
    def private(self) -> bool:
        return bool(np.any(self.counts.variance > 0))

    # --------------------------------------------------------------- metrics
    def _statistic(self, vectors: NDArray[np.float64]) -> Batch:
        return _metrics(_split(self.sketch, vectors), self.sketch, self.parameters["ece_bins"])

    @cached_property
    def values(self) -> dict[str, Any]:
        """Every metric (scalars as floats, per-class ones as arrays)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            raw = self._statistic(self.counts.vector()[None, :])
        return {k: (float(v[0]) if v.ndim == 1 else v[0].copy()) for k, v in raw.items()}

    @cached_property
    def standard_errors(self) -> dict[str, Any]:
        """Delta-method SE of every metric in :attr:`values` (0 without noise)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            se = _delta_method_se(self.counts.vector(), self.counts.variance, self._statistic)
            if self.private:
                se.update(self._ece_standard_errors())
        return {k: (float(v) if np.ndim(v) == 0 else np.asarray(v)) for k, v in se.items()}

    def _ece_standard_errors(self) -> dict[str, Any]:
        """Folded-normal SEs of the ECEs (:func:`_folded_ece_se`), replacing the delta method."""
        m = self.parameters["ece_bins"]
        c = self.counts
        v = self.sketch.counts_from(c.variance, c.variance, c.receipt)
        top = _folded_ece_se(c.top_label[1], c.top_label[0], v.top_label[1], v.top_label[0], m)
        per_class = np.array(
            [
                _folded_ece_se(
                    c.one_vs_rest[j, 1],
                    c.one_vs_rest[j, 0],
                    v.one_vs_rest[j, 1],
                    v.one_vs_rest[j, 0],
                    m,
                )
                for j in range(self.n_classes)
            ]
        )
        return {
            "ece_top_label": np.array(top),
            "ece_classwise_per_class": per_class,
            "ece_classwise": np.array(np.sqrt(np.sum(per_class**2)) / self.n_classes),
        }

    def confusion_matrix(self) -> NDArray[np.float64]:
        """(c, c): row = true class, column = argmax prediction (``sklearn.metrics.confusion_matrix``)."""
        return self.counts.confusion.copy()

    accuracy = _scalar("accuracy", "Share of examples whose argmax is the true class.")
    balanced_accuracy = _scalar("balanced_accuracy", "Mean per-class recall.")
    precision = _per_class("precision", "Per-class precision of the argmax prediction.")
    recall = _per_class("recall", "Per-class recall of the argmax prediction.")
    f1 = _per_class("f1", "Per-class F1 of the argmax prediction.")
    macro_f1 = _scalar("macro_f1", "Unweighted mean of the per-class F1.")
    weighted_f1 = _scalar("weighted_f1", "Prevalence-weighted mean of the per-class F1.")
    roc_auc = _scalar(
        "roc_auc",
        'Macro one-vs-rest ROC AUC (``roc_auc_score(multi_class="ovr", average="macro")``).',
    )
    roc_auc_weighted = _scalar(
        "roc_auc_weighted", 'Prevalence-weighted one-vs-rest AUC (``average="weighted"``).'
    )
    roc_auc_per_class = _per_class("roc_auc_per_class", "One-vs-rest ROC AUC of every class.")
    ece_top_label = _scalar("ece_top_label", "Top-label expected calibration error.")
    ece_classwise = _scalar("ece_classwise", "Classwise expected calibration error.")
    log_loss = _scalar(
        "log_loss", "Mean per-example log loss, the true-class probability clipped to ≥ p_min."
    )
    brier_score = _scalar("brier", "Mean per-example multiclass Brier score Σ_j (p_j − y_j)².")

    def _top_k_index(self, k: int) -> int:
        kk = check_int_at_least(k, 1, name="k")
        if kk > self.n_classes:
            raise ValueError(f"k must be at most the number of classes {self.n_classes}, got {k}")
        return kk - 1

    def top_k_accuracy(self, k: int) -> float:
        """Share of examples whose true class is among the k highest probabilities.

        Ties are broken as ``sklearn.metrics.top_k_accuracy_score`` does (a
        stable ascending sort, reversed: among equal probabilities the higher
        class index ranks first).
        """
        return float(self.values["top_k_accuracy"][self._top_k_index(k)])

    def top_k_accuracy_se(self, k: int) -> float:
        return float(self.standard_errors["top_k_accuracy"][self._top_k_index(k)])

    # --------------------------------------------------------------- bounds
    @property
    def bounds(self) -> dict[str, Any]:
        """Bucketization and rounding bounds (module docstring).

        ``roc_auc_per_class`` and ``roc_auc`` are computed from the released
        histograms (exact under secure aggregation, a noisy estimate under DP);
        the others depend only on public parameters.
        """
        ovr = np.clip(self.counts.one_vs_rest, 0.0, None)
        neg, pos = ovr[:, 0, :], ovr[:, 1, :]
        per_class = _ratio(0.5 * (pos * neg).sum(axis=1), pos.sum(axis=1) * neg.sum(axis=1))
        s = self.sketch
        return {
            "roc_auc_per_class": per_class,
            "roc_auc": float(per_class.mean()),
            "ece": 0.5 / s.n_bins,
            "log_loss": 0.5 * s.log_loss_bound / s.loss_bins,
            "brier": 0.5 * 2.0 / s.loss_bins,
        }

    # ---------------------------------------------------------------- curves
    def _class_histograms(self, cls: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        if not 0 <= int(cls) < self.n_classes:
            raise ValueError(f"cls must be in 0..{self.n_classes - 1}, got {cls!r}")
        # Named post-processing step: counts clamped at 0 so the curves are monotone.
        ovr = np.clip(self.counts.one_vs_rest[int(cls)], 0.0, None)
        return ovr[0], ovr[1]

    def _kept_bins(self, neg: NDArray[np.float64], pos: NDArray[np.float64]) -> NDArray[np.intp]:
        # Without noise, thresholds only where some example lies (sklearn's distinct
        # scores); under DP every bin, so the layout does not depend on the data.
        if self.private:
            return np.arange(neg.size)
        return np.flatnonzero(neg + pos > 0)

    def roc_curve(
        self, cls: int
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """(fpr, tpr, thresholds) of class ``cls`` against the rest, sklearn's layout.

        Thresholds are the left edges of the bins (rule ``p ≥ t``, exact at edges),
        decreasing, with ``inf`` first as in ``sklearn.metrics.roc_curve``
        (``drop_intermediate=False``).
        """
        neg, pos = self._class_histograms(cls)
        keep = self._kept_bins(neg, pos)[::-1]
        edges = self.sketch.grid.edges[:-1]
        tp = np.concatenate(([0.0], np.cumsum(pos[::-1])[::-1][keep]))
        fp = np.concatenate(([0.0], np.cumsum(neg[::-1])[::-1][keep]))
        thresholds = np.concatenate(([np.inf], edges[keep]))
        return (
            _ratio(fp, np.full_like(fp, neg.sum())),
            _ratio(tp, np.full_like(tp, pos.sum())),
            thresholds,
        )

    def precision_recall_curve(
        self, cls: int
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """(precision, recall, thresholds) of class ``cls``, sklearn's layout.

        Thresholds increase; the last point is (precision 1, recall 0) with no
        threshold, as ``sklearn.metrics.precision_recall_curve`` gives it.
        """
        neg, pos = self._class_histograms(cls)
        keep = self._kept_bins(neg, pos)
        tp = np.cumsum(pos[::-1])[::-1][keep]
        fp = np.cumsum(neg[::-1])[::-1][keep]
        with np.errstate(divide="ignore", invalid="ignore"):
            precision = np.where(tp + fp > 0, tp / (tp + fp), 1.0)
        recall = _ratio(tp, np.full_like(tp, pos.sum()))
        thresholds = self.sketch.grid.edges[:-1][keep]
        return np.append(precision, 1.0), np.append(recall, 0.0), thresholds

    def reliability(self, cls: int | None = None) -> dict[str, NDArray[np.float64]]:
        """Per ECE bin: count, mean predicted probability and observed frequency.

        ``cls=None`` gives the top-label diagram (confidence vs accuracy), a class
        index that class's one-vs-rest diagram. Counts clamped at 0 (named step).
        """
        m = self.parameters["ece_bins"]
        b = self.sketch.n_bins
        if cls is None:
            top = np.clip(self.counts.top_label, 0.0, None)
            events, counts = top[1], top.sum(axis=0)
        else:
            neg, pos = self._class_histograms(cls)
            events, counts = pos, neg + pos
        mid = _midpoints(b, 1.0)
        n = counts.reshape(m, -1).sum(axis=1)
        return {
            "edges": np.linspace(0.0, 1.0, m + 1),
            "count": n,
            "mean_predicted": _ratio((counts * mid).reshape(m, -1).sum(axis=1), n),
            "observed": _ratio(events.reshape(m, -1).sum(axis=1), n),
        }

    # --------------------------------------------------------------- summary
    _SCALARS = (
        "accuracy",
        "balanced_accuracy",
        "macro_precision",
        "macro_recall",
        "macro_f1",
        "weighted_precision",
        "weighted_recall",
        "weighted_f1",
        "roc_auc",
        "roc_auc_weighted",
        "ece_top_label",
        "ece_classwise",
        "log_loss",
        "brier",
    )

    def summary(self) -> dict[str, Any]:
        """Scalars with SEs, per-class metrics, bounds, receipt and parameters (JSON-safe)."""
        out: dict[str, Any] = {"task": "multiclass", "n_classes": self.n_classes}
        for name in self._SCALARS:
            out[name] = float(self.values[name])
            out[f"{name}_se"] = float(self.standard_errors[name])
        ks = range(1, min(self.n_classes, 5) + 1)
        out["top_k_accuracy"] = {str(k): self.top_k_accuracy(k) for k in ks}
        out["top_k_accuracy_se"] = {str(k): self.top_k_accuracy_se(k) for k in ks}
        for name in ("precision", "recall", "f1", "roc_auc_per_class", "ece_classwise_per_class"):
            out[name] = np.asarray(self.values[name]).tolist()
            out[f"{name}_se"] = np.asarray(self.standard_errors[name]).tolist()
        out["confusion_matrix"] = self.confusion_matrix().tolist()
        out["bounds"] = {
            k: (np.asarray(v).tolist() if np.ndim(v) else float(v)) for k, v in self.bounds.items()
        }
        out["epsilon_spent"] = self.epsilon_spent
        out["delta_spent"] = self.delta_spent
        out["guarantee"] = str(self.guarantee)
        out["receipt"] = self.receipt.as_dict()
        out["parameters"] = dict(self.parameters)
        return out


# ----------------------------------------------------------------- the entry
def multiclass_parameters(
    privacy: PrivacyModel,
    *,
    n_bins: int | None = None,
    loss_bins: int | None = None,
    ece_bins: int = 16,
    prob_floor: float = 1e-4,
    layout: Layout = "whole",
    path: str = "fast",
) -> dict[str, Any]:
    """The release's parameters from public inputs only (the privacy regime and the arguments).

    Without noise the histograms are fine (64 fine bins per ECE bin, 1024
    loss levels) so that only bucketization error remains, bounded as in the
    module docstring. Under DP they are coarser (4 fine bins per ECE bin, 64
    loss levels): every extra bin adds noise to the AUC, the ECE and the losses'
    sums (the loss mean's variance grows linearly with the levels, its bias
    bound shrinks as 1/levels).
    """
    m = check_int_at_least(ece_bins, 1, name="ece_bins")
    exact = getattr(privacy, "regime", None) == "exact"
    nb = (
        m * (64 if exact else 4) if n_bins is None else check_int_at_least(n_bins, 1, name="n_bins")
    )
    if nb % m:
        raise ValueError(f"n_bins ({nb}) must be a multiple of ece_bins ({m})")
    lb = (
        (1024 if exact else 64)
        if loss_bins is None
        else check_int_at_least(loss_bins, 1, name="loss_bins")
    )
    if not (isinstance(prob_floor, float | int) and 0.0 < prob_floor < 1.0):
        raise ValueError(f"prob_floor must lie in (0, 1), got {prob_floor!r}")
    if layout not in ("whole", "assign"):
        raise ValueError(f"layout must be 'whole' or 'assign', got {layout!r}")
    return {
        "n_bins": nb,
        "loss_bins": lb,
        "ece_bins": m,
        "prob_floor": float(prob_floor),
        "log_loss_bound": -math.log(prob_floor),
        "layout": layout,
        "path": path,
        "planned": {"n_bins": n_bins is None, "loss_bins": loss_bins is None},
        "public_inputs": {
            "regime": "the privacy model (noise or not) chooses the default resolution",
            "prob_floor": "the log-loss clipping bound −log p_min, public",
        },
        "postprocess": "counts clamped at 0 for the curves and reliability diagrams only",
    }


def evaluate_multiclass(
    fed: Federation,
    privacy: PrivacyModel,
    *,
    n_bins: int | None = None,
    loss_bins: int | None = None,
    ece_bins: int = 16,
    prob_floor: float = 1e-4,
    layout: Layout = "whole",
    path: Path = "fast",
    rng: RNGLike = None,
    ledger: BudgetLedger | None = None,
    public: Public | None = None,
) -> MulticlassEvaluation:
    """Evaluate a multiclass classifier on federated probabilities or logits, privately.

    Parameters
    ----------
    fed : Federation
        ``kind="probabilities"`` (rows summing to 1) or ``"logits"`` (softmax
        applied by each client), c ≥ 2 classes.
    privacy : SecureAggregation, DistributedDP, CentralDP or LocalDP
    n_bins : int, optional
        Fine bins of the probability histograms, a multiple of ``ece_bins``
        (default from the regime, :func:`multiclass_parameters`).
    loss_bins : int, optional
        Fixed-point levels of the per-example log loss and Brier score.
    ece_bins : int
        M equal-width bins of the ECEs.
    prob_floor : float
        p_min: the log loss of one example is clipped to −log p_min (public).
    layout : {"whole", "assign"}
        Distributed/central DP: every client encodes every part (ε split
        evenly over the c + 5 parts) or clients are split across parts (full
        ε each). Local DP always splits (see
        :mod:`fedeval.sketches.multiclass`).
    path : {"fast", "faithful"}
    rng : int, Generator or None
    ledger : BudgetLedger, optional
        Charged once, before any noise, for the one release.
    public : Public, optional
        Declared public facts; only public counts are published
        (:mod:`fedeval.public_facts`).

    Returns
    -------
    MulticlassEvaluation

    Raises
    ------
    TypeError
        Not a Federation, or a privacy model the sketch cannot be released
        under (label DP, user-level DP).
    ValueError
        A binary federation or bad parameters (never a data-dependent condition).
    BudgetExceededError
        The ledger cannot afford the release; nothing is released.

    Warns
    -----
    UserWarning
        When a class's released support is not clearly above its noise (3 SEs)
        or zero: its metrics are NaN or unreliable. The message holds no counts.

    Notes
    -----
    Privacy: exactly one release of a
    :class:`~fedeval.sketches.multiclass.MulticlassSketch`; the receipt lists the
    budget of every part. Everything else is post-processing.
    """
    if not isinstance(fed, Federation):
        raise TypeError(f"fed must be a Federation, got {type(fed).__name__}")
    if fed.kind == "binary":
        raise ValueError("evaluate_multiclass() needs a multiclass federation; use evaluate()")
    params = multiclass_parameters(
        privacy,
        n_bins=n_bins,
        loss_bins=loss_bins,
        ece_bins=ece_bins,
        prob_floor=prob_floor,
        layout=layout,
        path=path,
    )
    pub = public or Public()
    pub.check_domain(fed)
    counts = public_counts(privacy, fed, pub)
    params["n_clients"] = counts.n_clients  # None unless public (never the exact private count)
    params["public_inputs"]["n_clients"] = counts.n_clients_source
    sketch = MulticlassSketch(
        fed.n_classes,
        params["n_bins"],
        params["loss_bins"],
        params["prob_floor"],
        logits=fed.kind == "logits",
    )
    rel = release(
        fed, sketch, privacy, layout=layout, path=path, rng=as_generator(rng), ledger=ledger
    )
    result = MulticlassEvaluation(rel.decode(), params)
    _warn_if_degenerate(result)
    return result


def _warn_if_degenerate(result: MulticlassEvaluation) -> None:
    """Warn (without counts) when a class's released support is not clearly above the noise."""
    counts = result.counts
    c = result.n_classes
    support = counts.confusion.sum(axis=1)
    var = counts.variance[: c * c].reshape(c, c).sum(axis=1)
    weak = np.flatnonzero(~(support > 3.0 * np.sqrt(var)) | ~(support > 0))
    if weak.size == 0:
        return
    warnings.warn(
        f"class(es) {weak.tolist()} have a released number of examples that is zero or not "
        "clearly above the privacy noise (3 standard errors); their per-class metrics and "
        "the averages that include them are NaN or unreliable",
        SmallDataWarning,
        stacklevel=3,
    )
