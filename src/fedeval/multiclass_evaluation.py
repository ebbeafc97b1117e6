"""Private evaluation of a multiclass classifier from one release.

:func:`evaluate_multiclass` (also reached through :func:`fedeval.evaluate` for a
multiclass :class:`~fedeval.data.Federation`) plans the release from public
inputs (:func:`fedeval.planning.plan_multiclass`: which parts the requested
``metrics=`` need, the budget split over them, the bins), releases one
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

Post-processing (named steps, no privacy cost)
----------------------------------------------
Under differential privacy the released counts are unbiased but noisy: a cell
can be negative and two parts disagree on the totals they share. Every
published estimate is brought into its range by these steps, in order, and
the result says so (``parameters["postprocess"]``):

1. **Shared rates** (:func:`fedeval.postprocess.tables.combine`). The
   accuracy is released three times (the confusion matrix's trace, the
   true-class rank's first cell, the correct half of the top-label
   histogram) and every class's prevalence twice (a confusion row, the
   positive half of its one-vs-rest histogram). Each part's own ratio
   (its cells over its own total: under local DP that cancels the part's
   scaling to the population) is an unbiased-to-first-order estimate; they
   are combined by inverse-variance weights (the known noise variances,
   delta method at the release's own values), the accuracy clipped to [0, 1]
   and the prevalences projected onto the probability simplex.
2. **Totals.** Under central noise every part's total estimates the same N:
   their inverse-variance combination N̂ is the total of every table. Under
   local DP (clients split over the parts) each part keeps its own total.
3. **Confusion matrix** (:func:`fedeval.postprocess.tables.project_table`):
   the closest table in least squares (every cell has the same noise
   variance, so this is the weighted least squares with the known
   variances) that is non-negative, has the row sums π̂_j·N̂ (the released
   supports) and the trace â·N̂ (the released number of correct
   predictions). Precision, recall and F1 are ratios of its cells, in [0, 1].
4. **Rank, top-label and loss histograms**
   (:func:`fedeval.postprocess.tables.project_to_total`): the closest
   non-negative histogram with the released total (and, for the rank and the
   top label, the released numbers of correct and wrong predictions).
5. **One-vs-rest histograms**: each half shifted to its released total (the
   least-squares adjustment), then read as a two-class tree of its bins
   (:func:`fedeval.sketches.multiclass.class_tree`) and given the binary
   dense curves' Wiener shrinkage and non-negative child projection
   (:func:`fedeval.metrics.dense.boundary_counts`); the per-class AUC, ROC and
   PR curves are those of :mod:`fedeval.metrics.dense`.
6. **ECE** (:func:`_debiased_ece`): |released gap| overstates the absolute
   value of a gap within its noise (a folded normal); each ECE bin's gap is
   lowered by its folded-normal bias at the plug-in |μ̂| = (d² − s²)₊^½ and
   floored at 0; the sum is clipped to [0, 1].

Without noise (secure aggregation) nothing is changed: the counts are exact.

Standard errors carry the post-processing bias
----------------------------------------------
For every metric computed from steps 1–4 (accuracy, precision, recall, F1,
their averages, top-k accuracy, losses) the standard error is

    SE = min( (max(SE_through, ¼·SE_linear)² + D²)^½ , half the range ),

the policy of the binary dense curves (:data:`fedeval.metrics.dense.PINNED_FLOOR`,
:func:`fedeval.metrics.dense.dense_auc_se`): SE_through is the delta method
through the projections (their exact a.e. derivative, by central differences
of the whole pipeline on the known per-coordinate noise variances, step 10⁻³
noise standard deviations; one difference per histogram row that the pipeline
reads only through its sum, :func:`_sum_only_groups`); SE_linear the same
pipeline with the projections replaced by their linear part (the
least-squares shifts, no clipping), whose quarter floors an SE that a
pinned projection would set to 0; D the
difference between the projected and the linear estimates, the projection's
bias as measured on this release (E D² = bias² + Var D). The one-vs-rest
AUCs take the dense SE with the same three terms (through the shrinkage and
the projections); the macro AUC's is (Σ_j SE_j²/k² + (Σ_j D_j/k)²)^½ over
its k defined classes, so a bias the classes share adds up rather than
averaging out. The ECEs' is the delta method of Σ_m d_m (slope ±1 per bin),
which also covers the bias left after step 6 (measured: 95 % coverage
0.90–0.97 over noise levels 3–30 counts per bin and 2–8 bins). Under local DP
the split's sampling covariance between cells of one part is left out (the
per-cell hypergeometric variance is kept); for a ratio of one part's cells
the multinomial covariance is orthogonal to the gradient (Euler's identity
for a degree-0 homogeneous function), so it would not change it.

Undefined values
----------------
A per-class value is NaN only where its class total is 0 after step 1–3
(recall: the support; precision: the predicted count; AUC: the class's
positives or negatives). Macro averages run over the defined classes and
:attr:`MulticlassEvaluation.defined_classes` says which; a warning names the
classes left out.

Bucketization bounds (public, or computed from the release)
-----------------------------------------------------------
* OvR AUC of class j from a histogram vs the exact AUC: at most
  ½ Σ_b P_jb N_jb / (P_j N_j) (pairs in one bin are counted as ties; the exact
  value lies between "all below" and "all above").
* ECE from fine bins grouped into M coarse bins, with each fine bin's
  probability sum taken at its midpoint: within half the widest fine bin of
  the ECE with the same M left-closed bins computed from the raw probabilities.
* Mean log loss and Brier score: within γ/2 of the mean of the clipped
  per-example values (γ = L/B_loss, the fixed-point step).

Public inputs
-------------
The parameters (parts, budget weights, bins, loss levels, ECE bins,
probability floor) depend only on the privacy model, the number of classes,
the number of participating clients, a declared public number of examples
(:mod:`fedeval.public_facts`) and the caller's arguments,
never on the data. Under differential privacy nothing here is an exact count,
and no exception depends on the data: a class that is empty or small against
the noise gives NaN or noisy metrics and a warning without counts.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Generic, TypeVar, overload

import numpy as np
from numpy.typing import NDArray

from fedeval.aggregation import Path, release
from fedeval.data import Federation
from fedeval.exceptions import SmallDataWarning, certainly_ignored
from fedeval.metrics.dense import (
    MAX_SE,
    PINNED_FLOOR,
    BoundaryCounts,
    boundary_counts,
    dense_roc_auc,
    dense_roc_auc_of_leaves,
)
from fedeval.planning import (
    MulticlassPlan,
    check_multiclass_metrics,
    plan_multiclass,
)
from fedeval.postprocess.bootstrap import leaf_replicates
from fedeval.postprocess.tables import combine, project_table, project_to_total
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
from fedeval.privacy.sensitivity import Layout
from fedeval.public_facts import Public, planning_size
from fedeval.randomness import RNGLike, as_generator
from fedeval.sketches.hierarchical_histogram import HierarchicalHistogram
from fedeval.sketches.multiclass import (
    MulticlassCounts,
    MulticlassSketch,
    class_tree,
    probability_edges,
    top_label_edges,
)
from fedeval.validation import check_int_at_least

__all__ = ["MulticlassEvaluation", "evaluate_multiclass", "multiclass_parameters"]

_FD_STEP = 1e-3
_FD_CHUNK = 256

TIES_SHARE = 0.25
"""Share of the Lemma-3 ties bound added in quadrature to the AUCs' SEs (step 7).

The ties' bias measured 0.16–0.27 of the bound (0.36 for the worst class) on
the 20,000-example task of ``tests/statistical/test_multiclass_standard_errors.py``
with the planned grids; ½ made the macro AUC's SE 2.4 times its RMSE there
(mean z² 0.18), ¼ gives 0.53 (DistDP) and 1.48 (LDP), inside the test's
closed-form band.
"""

BIAS_REPLICATES = 40
"""Parametric-bootstrap replicates behind the one-vs-rest AUCs' bias and SE (step 7).

The bias estimate's Monte Carlo error is the replicates' spread over √40
≈ 6.3 (on digits under DistDP ε = 1, 0.003 against a bias of 0.03), added
to the SE; post-processing, seeded from the evaluation's generator, so an
evaluation's values and SEs are fixed.
"""

Batch = dict[str, NDArray[np.float64]]

#: Metrics of the vectorised pipeline (steps 1–4), with half their range: the cap of their SE.
_HALF_RANGE_KEYS = ("log_loss", "brier")


# ---------------------------------------------------------------- the pieces
def _ratio(num: NDArray[np.float64], den: NDArray[np.float64]) -> NDArray[np.float64]:
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.asarray(num / den, dtype=np.float64)
    return np.where(den > 0, out, np.nan)


def _midpoints(n_bins: int, hi: float) -> NDArray[np.float64]:
    return np.asarray((np.arange(n_bins) + 0.5) * (hi / n_bins), dtype=np.float64)


def _split(sketch: MulticlassSketch, vectors: NDArray[np.float64]) -> Batch:
    """Vectors (R, L) → every released part with a leading replicate axis."""
    return sketch.unflatten(vectors)


@dataclass(frozen=True)
class _Sources:
    """The fixed inverse-variance weights of step 1 (from the release itself, module doc).

    ``totals``: part name → variance of the part's total; ``accuracy``:
    source → variance of its accuracy ratio; ``prevalence``: source →
    variances (c,) of its prevalence ratios.
    """

    totals: dict[str, float]
    accuracy: dict[str, float]
    prevalence: dict[str, NDArray[np.float64]]


def _plug(x: float) -> float:
    return float(np.clip(x, 0.0, 1.0)) if math.isfinite(x) else 0.5


def _ratio_variance(rate: float, v_in: float, v_out: float, total: float) -> float:
    """Var(A/(A + B)) ≈ ((1 − r)² Var A + r² Var B)/T² (delta method, independent A, B)."""
    if not total > 0:
        return math.inf
    r = _plug(rate)
    return ((1.0 - r) ** 2 * v_in + r**2 * v_out) / total**2


def _sources(
    sketch: MulticlassSketch, vector: NDArray[np.float64], var: NDArray[np.float64]
) -> _Sources:
    """Variances of every source of step 1 and of every part's total, at the release's values."""
    p = {k: v[0] for k, v in _split(sketch, vector[None, :]).items()}
    q = {k: v[0] for k, v in _split(sketch, var[None, :]).items()}
    c = sketch.n_classes
    totals: dict[str, float] = {}
    acc: dict[str, float] = {}
    prev: dict[str, NDArray[np.float64]] = {}
    for kind in sketch.kinds:
        if kind == "one_vs_rest":
            for j in range(c):
                totals[f"one_vs_rest {j}"] = float(q[kind][j].sum())
        else:
            totals[kind] = float(q[kind].sum())
    if "rank" in p:
        t = float(p["rank"].sum())
        acc["rank"] = _ratio_variance(
            float(p["rank"][0]) / t if t > 0 else math.nan,
            float(q["rank"][0]),
            float(q["rank"][1:].sum()),
            t,
        )
    if "top_label" in p:
        t = float(p["top_label"].sum())
        acc["top_label"] = _ratio_variance(
            float(p["top_label"][1].sum()) / t if t > 0 else math.nan,
            float(q["top_label"][1].sum()),
            float(q["top_label"][0].sum()),
            t,
        )
    if "confusion" in p:
        t = float(p["confusion"].sum())
        v_diag = float(np.trace(q["confusion"]))
        acc["confusion"] = _ratio_variance(
            float(np.trace(p["confusion"])) / t if t > 0 else math.nan,
            v_diag,
            float(q["confusion"].sum()) - v_diag,
            t,
        )
        rows, v_rows = p["confusion"].sum(axis=1), q["confusion"].sum(axis=1)
        prev["confusion"] = np.array(
            [
                _ratio_variance(
                    rows[j] / t if t > 0 else math.nan, v_rows[j], v_rows.sum() - v_rows[j], t
                )
                for j in range(c)
            ]
        )
    if "one_vs_rest" in p:
        ovr, v_ovr = p["one_vs_rest"], q["one_vs_rest"]
        out = np.empty(c)
        for j in range(c):
            t = float(ovr[j].sum())
            out[j] = _ratio_variance(
                float(ovr[j, 1].sum()) / t if t > 0 else math.nan,
                float(v_ovr[j, 1].sum()),
                float(v_ovr[j, 0].sum()),
                t,
            )
        prev["one_vs_rest"] = out
    return _Sources(totals, acc, prev)


def _shift(x: NDArray[np.float64], total: NDArray[np.float64]) -> NDArray[np.float64]:
    """Least-squares adjustment of equal-variance cells to a total: a uniform shift (no clipping)."""
    t = np.asarray(total, dtype=np.float64)
    return np.asarray(x + ((t - x.sum(axis=-1)) / x.shape[-1])[..., None], dtype=np.float64)


def _linear_table(
    y: NDArray[np.float64], rows: NDArray[np.float64], trace: NDArray[np.float64]
) -> NDArray[np.float64]:
    """The least-squares table with given row sums and trace, without non-negativity (closed form).

    x_ij = y_ij − λ_i − μ[i = j]; the constraints give μ = (Y_d − t − (ΣR − Σr)/c)/(c − 1)
    and λ_i = (R_i − μ − r_i)/c, R_i the released row sums and Y_d the released trace.
    """
    c = y.shape[-1]
    big_r = y.sum(axis=-1)
    y_d = np.trace(y, axis1=-2, axis2=-1)
    mu = (y_d - trace - (big_r.sum(axis=-1) - rows.sum(axis=-1)) / c) / (c - 1)
    lam = (big_r - mu[..., None] - rows) / c
    return np.asarray(y - lam[..., :, None] - mu[..., None, None] * np.eye(c), dtype=np.float64)


def _consistent(
    sketch: MulticlassSketch,
    vectors: NDArray[np.float64],
    src: _Sources,
    *,
    local: bool,
    exact: bool,
    nonneg: bool,
) -> Batch:
    """Steps 1–4 of the module docstring on a batch of vectors (R, L).

    Returns the consistent parts ("confusion", "rank", "top_label", "log_loss",
    "brier" as released), the shared rates ("accuracy" (R,), "prevalence"
    (R, c)) and the totals ("total <part>" (R,)). ``nonneg=False`` replaces
    every projection by its linear part (the least-squares shifts, no
    clipping): the reference of the bias term D.
    """
    parts = _split(sketch, vectors)
    c = sketch.n_classes
    r = vectors.shape[0]
    own: dict[str, NDArray[np.float64]] = {}
    for kind, x in parts.items():
        if kind == "one_vs_rest":
            for j in range(c):
                own[f"one_vs_rest {j}"] = x[:, j].sum(axis=(-2, -1))
        else:
            own[kind] = x.reshape(r, -1).sum(axis=1)
    if local or exact:
        totals = own
    else:
        names = list(own)
        n_hat, _ = combine(
            np.stack([own[k] for k in names], axis=-1), np.array([src.totals[k] for k in names])
        )
        totals = dict.fromkeys(names, n_hat)
    out: Batch = {f"total {k}": v for k, v in totals.items()}
    # Step 1: the shared rates.
    acc_est, acc_var = [], []
    if "rank" in parts:
        acc_est.append(_ratio(parts["rank"][:, 0], own["rank"]))
        acc_var.append(src.accuracy["rank"])
    if "top_label" in parts:
        acc_est.append(_ratio(parts["top_label"][:, 1].sum(axis=-1), own["top_label"]))
        acc_var.append(src.accuracy["top_label"])
    if "confusion" in parts:
        acc_est.append(_ratio(np.trace(parts["confusion"], axis1=1, axis2=2), own["confusion"]))
        acc_var.append(src.accuracy["confusion"])
    a = None
    if acc_est:
        a, _ = combine(np.stack(acc_est, axis=-1), np.array(acc_var))
        a = np.where(np.isfinite(a), a, 0.0)
        if nonneg:
            a = np.clip(a, 0.0, 1.0)
        out["accuracy"] = a
    prev_est, prev_var = [], []
    if "confusion" in parts:
        prev_est.append(_ratio(parts["confusion"].sum(axis=2), own["confusion"][:, None]))
        prev_var.append(src.prevalence["confusion"])
    if "one_vs_rest" in parts:
        ovr = parts["one_vs_rest"]
        tot = np.stack([own[f"one_vs_rest {j}"] for j in range(c)], axis=-1)
        prev_est.append(_ratio(ovr[:, :, 1].sum(axis=-1), tot))
        prev_var.append(src.prevalence["one_vs_rest"])
    pi = None
    if prev_est:
        pi, _ = combine(np.stack(prev_est, axis=-1), np.stack(prev_var, axis=-1))
        pi = np.where(np.isfinite(pi), pi, 1.0 / c)
        pi = project_to_total(pi, np.ones(r)) if nonneg else _shift(pi, np.ones(r))
        out["prevalence"] = pi
    if exact:
        # Exact counts are consistent and non-negative already: nothing to change.
        for kind in ("confusion", "rank", "top_label", "log_loss", "brier"):
            if kind in parts:
                out[kind] = parts[kind]
        return out
    # Steps 2–4: every table to its totals and rates, non-negative.
    if "confusion" in parts:
        t = totals["confusion"]
        assert pi is not None and a is not None
        rows, trace = pi * t[:, None], a * t
        out["confusion"] = (
            project_table(parts["confusion"], rows, trace)
            if nonneg
            else _linear_table(parts["confusion"], rows, trace)
        )
    fit = project_to_total if nonneg else _shift
    if "rank" in parts:
        t = totals["rank"]
        assert a is not None
        out["rank"] = np.concatenate(
            ((a * t)[:, None], fit(parts["rank"][:, 1:], (1.0 - a) * t)), axis=1
        )
    if "top_label" in parts:
        t = totals["top_label"]
        assert a is not None
        x = parts["top_label"]
        out["top_label"] = np.stack((fit(x[:, 0], (1.0 - a) * t), fit(x[:, 1], a * t)), axis=1)
    for kind in ("log_loss", "brier"):
        if kind in parts:
            out[kind] = fit(parts[kind], totals[kind])
    return out


def _table_metrics(batch: Batch, sketch: MulticlassSketch) -> Batch:
    """Every metric of steps 1–4, vectorised over the leading replicate axis."""
    out: Batch = {}
    if "accuracy" in batch:
        out["accuracy"] = batch["accuracy"]
    if "confusion" in batch:
        conf = batch["confusion"]
        total = conf.sum(axis=(1, 2))
        diag = np.diagonal(conf, axis1=1, axis2=2)
        support = conf.sum(axis=2)  # true class
        predicted = conf.sum(axis=1)
        precision = _ratio(diag, predicted)
        recall = _ratio(diag, support)
        f1 = _ratio(2.0 * diag, support + predicted)
        weights = _ratio(support, total[:, None])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a class undefined in every replicate
            out.update(
                {
                    "precision": precision,
                    "recall": recall,
                    "f1": f1,
                    "macro_precision": np.nanmean(precision, axis=1),
                    "macro_recall": np.nanmean(recall, axis=1),
                    "macro_f1": np.nanmean(f1, axis=1),
                    "weighted_precision": _weighted(weights, precision),
                    "weighted_recall": _weighted(weights, recall),
                    "weighted_f1": _weighted(weights, f1),
                    "balanced_accuracy": np.nanmean(recall, axis=1),
                }
            )
    if "rank" in batch:
        rank = batch["rank"]
        out["top_k_accuracy"] = _ratio(np.cumsum(rank, axis=1), rank.sum(axis=1, keepdims=True))
    for name, hi in (("log_loss", sketch.log_loss_bound), ("brier", 2.0)):
        if name in batch:
            hist = batch[name]
            out[name] = _ratio(hist @ _midpoints(sketch.loss_bins, hi), hist.sum(axis=1))
    return out


def _weighted(weights: NDArray[np.float64], values: NDArray[np.float64]) -> NDArray[np.float64]:
    """Σ_j w_j v_j over the classes where v_j is defined, the weights renormalised to them."""
    ok = np.isfinite(values) & np.isfinite(weights)
    w = np.where(ok, weights, 0.0)
    return _ratio(np.sum(w * np.where(ok, values, 0.0), axis=1), w.sum(axis=1))


def _delta_method_se(
    vector: NDArray[np.float64],
    variance: NDArray[np.float64],
    statistic: Callable[[NDArray[np.float64]], Batch],
    groups: NDArray[np.intp] | None = None,
) -> Batch:
    """Delta-method standard errors of every output of ``statistic`` (module docstring).

    Central differences of the whole pipeline, coordinate by coordinate (step
    10⁻³ noise standard deviations), weighted by the coordinates' independent
    noise variances: exact a.e. for the piecewise-rational, piecewise-linear
    pipeline here.

    ``groups`` (one id per coordinate, optional) names coordinates that the
    statistic reads only through their sum (:func:`_sum_only_groups`). Such
    coordinates share one partial derivative ∂f/∂s, so their share of the
    variance, Σ_i (∂f/∂x_i)² Var x_i, is (∂f/∂s)² Σ_i Var x_i. One central
    difference of a single member, with the group's standard deviation
    (Σ_i Var x_i)^½ as its scale, gives it: one pair of evaluations per
    group instead of one per coordinate.
    """
    base = statistic(vector[None, :])
    acc = {k: np.zeros(v.shape[1:]) for k, v in base.items()}
    if groups is None:
        active = np.flatnonzero(variance > 0)
        group_var = variance[active]
    else:
        ids, first = np.unique(groups, return_index=True)
        slot = np.searchsorted(ids, groups)
        group_var = np.bincount(slot, weights=variance, minlength=ids.size).astype(np.float64)
        keep = group_var > 0
        active, group_var = first[keep], group_var[keep]
    for start in range(0, active.size, _FD_CHUNK):
        idx = active[start : start + _FD_CHUNK]
        sd = np.sqrt(group_var[start : start + _FD_CHUNK])
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


def _sum_only_groups(sketch: MulticlassSketch) -> NDArray[np.intp]:
    """Group ids of the vector's coordinates for :func:`_delta_method_se` of the table metrics.

    Steps 1–4 followed by :func:`_table_metrics` read a one-vs-rest histogram
    row (class j's negatives, or its positives) only through its sum: class
    j's total and its prevalence ratio. They read the confidence histogram's
    two rows (wrong, right) only through their sums: the part's total and its
    accuracy ratio (its projected cells are not a table metric). Each such
    row is one group; every other coordinate is its own group.
    ``tests/test_multiclass_evaluation.py::test_grouped_delta_method_equals_the_per_coordinate_one``
    checks the grouped SEs against the per-coordinate ones.
    """
    length = sketch.length
    ids = np.arange(length, dtype=np.intp)
    parts = sketch.unflatten(ids[None, :].astype(np.float64))
    groups = ids.copy()
    for kind in ("one_vs_rest", "top_label"):
        if kind in parts:
            block = parts[kind][0]
            rows = block.reshape(-1, block.shape[-1]).astype(np.intp)
            groups[rows] = rows[:, :1]  # the row's first coordinate names its group
    return groups


def _folded_mean(mu: NDArray[np.float64], s: NDArray[np.float64]) -> NDArray[np.float64]:
    """E|X| for X ~ N(μ, s²): s√(2/π) e^(−μ²/2s²) + |μ| (1 − 2Φ(−|μ|/s))."""
    from scipy.special import ndtr  # on first use: scipy.special costs ~0.1 s to import

    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(s > 0, np.abs(mu) / s, np.inf)
    return np.asarray(
        np.where(s > 0, s * np.sqrt(2.0 / np.pi) * np.exp(-0.5 * np.minimum(z, 40.0) ** 2), 0.0)
        + np.abs(mu) * (1.0 - 2.0 * ndtr(-z)),
        dtype=np.float64,
    )


def _debiased_ece(
    events: NDArray[np.float64],
    others: NDArray[np.float64],
    var_events: NDArray[np.float64],
    var_others: NDArray[np.float64],
    coarse: NDArray[np.intp],
    mid: NDArray[np.float64],
    total: float,
    var_total: float,
) -> tuple[float, float]:
    """ECE = Σ_m |d_m| / N from fine histograms of events and non-events, debiased, with its SE.

    d_m = Σ_{b∈m} events_b (1 − mid_b) − others_b mid_b is the gap of ECE bin
    m (its events minus its probability sum, each fine bin at its midpoint),
    with noise variance s_m² = Σ_{b∈m} Var(events_b)(1 − mid_b)² +
    Var(others_b) mid_b² (disjoint noisy cells). |d_m| overstates |μ_m| by
    the folded-normal bias E|d_m| − |μ_m| (up to s_m√(2/π) at μ_m = 0), which
    the sum over M bins multiplies. Named step: each bin's |d_m| is lowered by
    that bias at the plug-in |μ̂_m| = (d_m² − s_m²)₊^½ (d² − s² is unbiased for
    μ²) and floored at 0; the ECE is clipped to [0, 1].

    SE: (Σ_m s_m² + ECE² Var N)^½ / N, the delta method with slope ±1 per
    bin. It also covers the bias the correction leaves: 95 % intervals
    covered 0.90–0.97 in a simulation over 2–8 bins, noise 3–30 counts per bin
    and the gaps of a logistic regression on digits (the folded-normal SE
    covered 0.07–0.92, the uncorrected ECE with this SE 0.45–0.95).
    """
    if not total > 0:
        return math.nan, math.nan
    m = int(coarse.max()) + 1
    d = np.bincount(coarse, weights=events * (1.0 - mid) - others * mid, minlength=m)
    s2 = np.bincount(
        coarse, weights=var_events * (1.0 - mid) ** 2 + var_others * mid**2, minlength=m
    )
    s = np.sqrt(s2)
    mu = np.sqrt(np.maximum(d**2 - s2, 0.0))
    gap = np.maximum(np.abs(d) - (_folded_mean(mu, s) - mu), 0.0)
    ece = float(np.clip(gap.sum() / total, 0.0, 1.0))
    if not np.any(s2 > 0):
        return ece, 0.0
    se = math.sqrt(float(s2.sum()) + ece**2 * max(var_total, 0.0)) / total
    return ece, float(min(se, MAX_SE))


def _coarse_of_fine(edges: NDArray[np.float64], ece_bins: int) -> NDArray[np.intp]:
    """The ECE bin of every fine bin (its left edge's equal-width bin of [0, 1])."""
    left = edges[:-1]
    return np.minimum(np.floor(left * ece_bins + 1e-9).astype(np.intp), ece_bins - 1)


def _se_policy(
    through: NDArray[np.float64] | float,
    linear: NDArray[np.float64] | float,
    value: NDArray[np.float64] | float,
    reference: NDArray[np.float64] | float,
    cap: float,
    *,
    floor: float = PINNED_FLOOR,
) -> NDArray[np.float64]:
    """(max(SE_through, floor·SE_linear)² + D²)^½, capped (module docstring).

    ``floor`` is ¼ (:data:`fedeval.metrics.dense.PINNED_FLOOR`) except for the
    accuracy, a single rate clipped to [0, 1]: a clip onto an interval that
    holds the truth never moves an estimate away from it, so the unclipped
    SE bounds the clipped estimate's error and is used whole (with ¼ the
    accuracy covered 0.70 on digits under DistDP ε = 1, where the clip at 1
    set SE_through to 0 in the runs that needed it most).

    D = value − reference (the projection's bias on this release). Where the
    linear reference is undefined but the value is not (a class total the
    projection made positive from a non-positive raw one), the spread is the cap.
    """
    t, lin = np.asarray(through, dtype=np.float64), np.asarray(linear, dtype=np.float64)
    v, ref = np.asarray(value, dtype=np.float64), np.asarray(reference, dtype=np.float64)
    se = np.maximum(np.nan_to_num(t), floor * np.nan_to_num(lin))
    d = np.where(np.isfinite(ref), v - ref, cap)
    out = np.minimum(np.hypot(se, d), cap)
    return np.asarray(np.where(np.isfinite(v), out, np.nan), dtype=np.float64)


def _bootstrap_aucs(
    tree: HierarchicalHistogram,
    counts: BoundaryCounts,
    gen: np.random.Generator,
    replicates: int,
) -> NDArray[np.float64]:
    """AUC* of parametric-bootstrap replicates around the estimate (NaN where undefined).

    The bootstrap world's truth is the estimate itself, the projected bins
    (:func:`fedeval.postprocess.bootstrap.leaf_replicates`); every replicate
    adds the release's noise to its leaves (the inner nodes are their sums)
    and repeats step 5, all replicates at once
    (:func:`fedeval.metrics.dense.dense_roc_auc_of_leaves`).
    """
    return dense_roc_auc_of_leaves(tree, leaf_replicates(tree, counts.bins, gen, replicates))


def _corrected_aucs(
    area: NDArray[np.float64],
    boots: NDArray[np.float64],
    weights: NDArray[np.float64],
    private: bool,
    ties: NDArray[np.float64] | None = None,
) -> list[tuple[str, Any, Any]]:
    """Step 7: per-class, macro and weighted AUCs, bias-corrected by the bootstrap, with SEs.

    Near AUC = 1 the non-negative projection (step 5) adds the positive part
    of the noise to bins where a class has (almost) no examples: every class's
    area is biased low by a similar amount, and a macro average adds those
    biases up (digits, DistDP ε = 1: each class 0.035 low, the macro 0.037 low
    with a spread of 0.011, so no SE can both carry that bias and give a 95 %
    interval that is not ~100 %). The bias is estimated by the parametric
    bootstrap around the estimate (Efron & Tibshirani 1993, §10.2): b_j =
    mean_r AUC*_rj − area_j, and the published AUC is area_j − b_j, clipped to
    [0, 1] (named step). The macro and weighted AUCs are the (weighted) means
    of the corrected values *before* that clip, then clipped: clipping each
    class first biased the macro AUC low again (−0.021 against −0.008
    unclipped, 60 seeds). The SE is the bootstrap spread of the same
    statistic (per replicate, the macro of the replicate's classes), with the
    Monte Carlo error of the bias estimate (spread/√R) added in quadrature.

    Bucketization: pairs of a positive and a negative in one bin count ½
    (H_B), so the area is off the examples' AUC by at most the Lemma-3 bound
    T_j = ½ Σ_b p_b n_b/(P N) (``ties``, from the projected bins), which the
    bootstrap cannot see (its world is binned). :data:`TIES_SHARE` of it is
    added in quadrature to every SE (per class; for the averages the weighted
    mean of the T_j, since the ties' bias has one sign for a classifier
    better than chance). Measured with the planned grids
    (:func:`fedeval.sketches.multiclass.probability_edges`, 4 fine bins per ECE
    bin): the ties biased the macro AUC by 0.16–0.27 of the bound on a 4-class
    task of 20,000 examples (0.36 for its worst class) and by 0.82–0.86 on
    digits, where the bound is 0.003–0.005, far below the noise.

    So the published per-class AUC is not the area under the published
    (shrunk, projected) ROC curve: it is that area minus the bias estimate.
    """
    if not private:
        zero = np.where(np.isfinite(area), 0.0, np.nan)
        ok = np.isfinite(area)
        macro = float(area[ok].mean()) if ok.any() else math.nan
        weighted = float(np.sum(weights[ok] * area[ok])) if ok.any() else math.nan
        return [
            ("roc_auc_per_class", area, zero),
            ("roc_auc", macro, 0.0 if ok.any() else math.nan),
            ("roc_auc_weighted", weighted, 0.0 if ok.any() else math.nan),
        ]
    reps = boots.shape[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        bias = np.nanmean(boots, axis=0) - area
        spread = np.nanstd(boots, axis=0, ddof=1)
    bias = np.where(np.isfinite(bias), bias, 0.0)
    corrected = area - bias
    ok = np.isfinite(area)
    mc = 1.0 + 1.0 / reps
    half_ties = TIES_SHARE * (np.zeros_like(area) if ties is None else np.nan_to_num(ties))
    per_class_se = np.where(
        ok,
        np.minimum(np.sqrt(np.nan_to_num(spread) ** 2 * mc + half_ties**2), MAX_SE),
        np.nan,
    )
    out: list[tuple[str, Any, Any]] = [
        ("roc_auc_per_class", np.where(ok, np.clip(corrected, 0.0, 1.0), np.nan), per_class_se)
    ]
    if not ok.any():
        return [*out, ("roc_auc", math.nan, math.nan), ("roc_auc_weighted", math.nan, math.nan)]
    k = int(ok.sum())
    for key, w in (("roc_auc", np.where(ok, 1.0 / k, 0.0)), ("roc_auc_weighted", weights)):
        value = float(np.clip(np.sum(w[ok] * corrected[ok]), 0.0, 1.0))
        # Per replicate, the same average over the classes it defines (weights renormalised).
        rep_ok = np.isfinite(boots) & ok[None, :]
        wr = np.where(rep_ok, w[None, :], 0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            rep = np.sum(wr * np.nan_to_num(boots), axis=1) / wr.sum(axis=1)
        rep = rep[np.isfinite(rep)]
        sd = float(np.std(rep, ddof=1)) if rep.size >= 2 else MAX_SE
        tie = float(np.sum(w[ok] * half_ties[ok]) / max(float(np.sum(w[ok])), 1e-300))
        out.append((key, value, float(min(math.hypot(sd * math.sqrt(mc), tie), MAX_SE))))
    return out


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
        return self.convert(obj._value(self.key))


def _plain(v: Any) -> Any:
    """A 0-d value as a float, anything else as an array."""
    return float(v) if np.ndim(v) == 0 else np.asarray(v)


def _scalar(key: str, doc: str) -> _Metric[float]:
    return _Metric(key, doc, float)


def _per_class(key: str, doc: str) -> _Metric[NDArray[np.float64]]:
    return _Metric(key, doc, np.asarray)


#: Metric key → the ``metrics=`` name that releases it (for the error on an unreleased one).
_REQUEST = {
    "accuracy": "accuracy",
    "top_k_accuracy": "top_k_accuracy",
    "log_loss": "log_loss",
    "brier": "brier_score",
    "ece_top_label": "ece_top_label",
    "ece_classwise": "ece_classwise",
    "ece_classwise_per_class": "ece_classwise",
    "roc_auc": "roc_auc",
    "roc_auc_weighted": "roc_auc",
    "roc_auc_per_class": "roc_auc",
}


@dataclass(frozen=True)
class _Base:
    """What :class:`MulticlassEvaluation` computes once without resampling or differences.

    ``values``/``ses``: every metric but the one-vs-rest AUCs (their SEs only
    for the ECEs, which are closed-form); ``tables``: the consistent parts
    (steps 1–4); ``trees``/``class_counts``/``areas``: step 5 per class;
    ``defined``: the classes where every per-class metric is defined.
    """

    src: _Sources
    values: dict[str, Any]
    ses: dict[str, Any]
    tables: dict[str, NDArray[np.float64]]
    linear: dict[str, NDArray[np.float64]]
    trees: tuple[HierarchicalHistogram, ...] | None
    class_counts: tuple[BoundaryCounts, ...] | None
    areas: NDArray[np.float64] | None
    auc_weights: NDArray[np.float64] | None
    defined: dict[str, list[int]]
    support_se: NDArray[np.float64] | None


# ----------------------------------------------------------------- the result
@dataclass(frozen=True)
class MulticlassEvaluation(ReceiptAccessors):
    """Every multiclass metric from one private release, in range, with standard errors.

    Attributes
    ----------
    counts : MulticlassCounts
        The decoded release (the only thing released), as released.
    parameters : dict
        Parts, budget shares, bins, loss levels, ECE bins, probability floor,
        layout and path, the post-processing steps, what the planner chose and
        the public inputs used.
    plan : MulticlassPlan, optional
        The planner's choices and predicted errors, from the same public inputs.

    Notes
    -----
    Scalars are properties (``accuracy``, ``balanced_accuracy``, ``macro_f1``,
    ``roc_auc`` = macro one-vs-rest AUC, ``ece_top_label``, ``log_loss``, ...);
    :attr:`standard_errors` holds the SE of every one of them (0 without
    noise). Per-class arrays: :attr:`precision`, :attr:`recall`, :attr:`f1`,
    :attr:`roc_auc_per_class`. Under differential privacy every published
    estimate is brought into its range by the named post-processing steps of
    the module docstring, and its SE carries their bias. A metric whose part
    was not released (``metrics=``) raises ValueError naming what to request.
    """

    counts: MulticlassCounts
    parameters: dict[str, Any]
    plan: MulticlassPlan | None = field(default=None, repr=False)
    bootstrap_replicates: int = BIAS_REPLICATES
    _bootstrap_seed: int = field(default=0, repr=False)

    def __repr__(self) -> str:
        """One line: accuracy (and the macro AUC once computed), ε, the unit; no arrays.

        The AUCs and every standard error need the bootstrap of step 7, so they
        are shown only once computed: ``repr`` stays instant.
        """
        ses = self.__dict__.get("standard_errors")
        fields = []
        for key in ("accuracy", "roc_auc"):
            try:
                if key == "roc_auc" and "_aucs" not in self.__dict__:
                    continue
                value = float(self._value(key))
            except ValueError:  # that part was not released (metrics=...)
                continue
            se = None if ses is None else float(ses.get(key, math.nan))
            fields.append(f"{key}={format_estimate(value, se)}")
        fields.append(privacy_fields(self.guarantee, self.epsilon_spent))
        fields.append(f"n_classes={self.n_classes}")
        return f"MulticlassEvaluation({', '.join(fields)})"

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
    @property
    def _local(self) -> bool:
        return self.parameters.get("layout") == "assign"

    def _pipeline(self, *, nonneg: bool, src: _Sources) -> Callable[[NDArray[np.float64]], Batch]:
        sk = self.sketch

        def run(vectors: NDArray[np.float64]) -> Batch:
            batch = _consistent(
                sk, vectors, src, local=self._local, exact=not self.private, nonneg=nonneg
            )
            return _table_metrics(batch, sk)

        return run

    @cached_property
    def _base(self) -> _Base:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return self._compute_base()

    @cached_property
    def _projected(self) -> tuple[_Sources, dict[str, NDArray[np.float64]]]:
        """Steps 1–4 on the release: the sources' weights and the projected parts.

        All the small-data warning reads (:func:`_warn_if_degenerate`); the
        linear parts (:attr:`_linear`) wait for a metric's bias term.
        """
        sk = self.sketch
        vec, var = self.counts.vector(), self.counts.variance
        src = _sources(sk, vec, var)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            base = _consistent(
                sk, vec[None, :], src, nonneg=True, local=self._local, exact=not self.private
            )
        return src, {k: v[0] for k, v in base.items()}

    @cached_property
    def _linear(self) -> dict[str, NDArray[np.float64]]:
        """Steps 1–4 with every projection replaced by its linear part (the bias term's reference)."""
        src, _ = self._projected
        vec = self.counts.vector()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            lin = _consistent(
                self.sketch, vec[None, :], src, nonneg=False, local=self._local,
                exact=not self.private,
            )  # fmt: skip
        return {k: v[0] for k, v in lin.items()}

    def _support(self) -> tuple[NDArray[np.float64] | None, NDArray[np.float64] | None]:
        """Released supports π̂_j·N̂ and their SEs (None when no part releases them)."""
        src, base = self._projected
        if "prevalence" not in base:
            return None, None
        t = base.get("total confusion", base.get("total one_vs_rest 0"))
        assert t is not None
        se = np.sqrt(self._prevalence_variance(src)) * float(t)
        return base["prevalence"] * float(t), se

    def _compute_base(self) -> _Base:
        sk = self.sketch
        private = self.private
        src, base = self._projected
        lin = self._linear
        values: dict[str, Any] = {
            k: v[0] for k, v in _table_metrics({k: x[None] for k, x in base.items()}, sk).items()
        }
        ses: dict[str, Any] = {}
        n_var = self._total_variance(src)
        _, support_se = self._support()
        trees = class_counts = areas = weights = None
        if sk.has("one_vs_rest"):
            trees, class_counts, areas = self._one_vs_rest(base, values, ses, n_var)
            ok = np.isfinite(areas)
            w = np.where(ok, base["prevalence"], 0.0)
            weights = w / w.sum() if w.sum() > 0 else np.where(ok, 1.0 / max(int(ok.sum()), 1), 0.0)
        if sk.has("top_label"):
            x = lin["top_label"] if private else base["top_label"]
            v = self.counts.part_variance().top_label
            assert v is not None
            edges = sk.top_grid_edges
            mid = 0.5 * (edges[:-1] + edges[1:])
            ece, se = _debiased_ece(
                x[1], x[0], v[1], v[0], _coarse_of_fine(edges, self.parameters["ece_bins"]),
                mid, float(base["total top_label"]), n_var["top_label"],
            )  # fmt: skip
            values["ece_top_label"], ses["ece_top_label"] = ece, se
        out_values = {
            k: (float(v) if np.ndim(v) == 0 else np.asarray(v)) for k, v in values.items()
        }
        defined: dict[str, list[int]] = {
            name: [int(j) for j in np.flatnonzero(np.isfinite(out_values[name]))]
            for name in ("precision", "recall", "f1")
            if name in out_values
        }
        if areas is not None:
            defined["roc_auc_per_class"] = [int(j) for j in np.flatnonzero(np.isfinite(areas))]
        tables = {k: np.asarray(v) for k, v in base.items() if k in sk.kinds}
        return _Base(
            src, out_values, ses, tables, lin, trees, class_counts, areas, weights, defined,
            support_se,
        )  # fmt: skip

    @cached_property
    def _aucs(self) -> dict[str, tuple[Any, Any]]:
        """Step 7: the bootstrap bias-corrected one-vs-rest AUCs and their SEs."""
        b = self._base
        if b.trees is None or b.class_counts is None or b.areas is None:
            return {}
        assert b.auc_weights is not None
        reps = self.bootstrap_replicates
        boots = np.full((reps, self.n_classes), np.nan)
        if self.private:
            gen = np.random.default_rng(self._bootstrap_seed)
            for j, (tree, counts) in enumerate(zip(b.trees, b.class_counts, strict=True)):
                if counts.defined:
                    boots[:, j] = _bootstrap_aucs(tree, counts, gen, reps)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            ties = np.array(
                [
                    float(_ratio(0.5 * np.sum(k.bins[0] * k.bins[1]), k.totals[0] * k.totals[1]))
                    for k in b.class_counts
                ]
            )
            rows = _corrected_aucs(b.areas, boots, b.auc_weights, self.private, ties)
        return {key: (value, se) for key, value, se in rows}

    def _total_variance(self, src: _Sources) -> dict[str, float]:
        """Variance of the total every part's ratios use (step 2 of the module docstring)."""
        if self._local or not self.private:
            return dict(src.totals)
        _, v = combine(np.zeros(len(src.totals)), np.array(list(src.totals.values())))
        return dict.fromkeys(src.totals, float(v))

    def _prevalence_variance(self, src: _Sources) -> NDArray[np.float64]:
        if not src.prevalence:
            return np.zeros(self.n_classes)
        var = np.stack(list(src.prevalence.values()), axis=-1)
        _, v = combine(np.zeros(var.shape), var)
        return np.asarray(v, dtype=np.float64)

    def _one_vs_rest(
        self,
        base: dict[str, NDArray[np.float64]],
        values: dict[str, Any],
        ses: dict[str, Any],
        n_var: dict[str, float],
    ) -> tuple[tuple[HierarchicalHistogram, ...], tuple[BoundaryCounts, ...], NDArray[np.float64]]:
        """Step 5, the classwise ECE and the areas under the per-class ROC curves."""
        ovr = self.counts.one_vs_rest
        v_ovr = self.counts.part_variance().one_vs_rest
        assert ovr is not None and v_ovr is not None
        c, private = self.n_classes, self.private
        pi = base["prevalence"]
        ovr_edges = self.sketch.ovr_grid_edges
        mid = 0.5 * (ovr_edges[:-1] + ovr_edges[1:])
        coarse = _coarse_of_fine(self.sketch.ovr_grid_edges, self.parameters["ece_bins"])
        area = np.full(c, np.nan)
        ece, ece_se = np.full(c, np.nan), np.full(c, np.nan)
        trees, out = [], []
        for j in range(c):
            t = float(base[f"total one_vs_rest {j}"])
            x = np.array(ovr[j], dtype=np.float64)
            if private:
                x = np.stack((_shift(x[0], (1.0 - pi[j]) * t), _shift(x[1], pi[j] * t)))
            tree = class_tree(x, v_ovr[j], self.receipt)
            counts = boundary_counts(tree)
            trees.append(tree)
            out.append(counts)
            ece[j], ece_se[j] = _debiased_ece(
                x[1], x[0], v_ovr[j, 1], v_ovr[j, 0], coarse, mid, t,
                n_var[f"one_vs_rest {j}"],
            )  # fmt: skip
            if counts.defined:
                area[j] = dense_roc_auc(counts)
        values["ece_classwise_per_class"], ses["ece_classwise_per_class"] = ece, ece_se
        okc = np.isfinite(ece)
        values["ece_classwise"] = float(ece[okc].mean()) if okc.any() else math.nan
        ses["ece_classwise"] = (
            float(np.sqrt(np.sum(ece_se[okc] ** 2)) / okc.sum()) if okc.any() else math.nan
        )
        return tuple(trees), tuple(out), area

    @property
    def values(self) -> dict[str, Any]:
        """Every metric computed (scalars as floats, per-class ones as arrays).

        The one-vs-rest AUCs run the bootstrap of step 7 on first access.
        """
        out = dict(self._base.values)
        out.update({k: _plain(v) for k, (v, _) in self._aucs.items()})
        return out

    @cached_property
    def standard_errors(self) -> dict[str, Any]:
        """SE of every metric in :attr:`values` (module docstring; 0 without noise)."""
        b = self._base
        sk = self.sketch
        vec, var = self.counts.vector(), self.counts.variance
        caps = {"log_loss": sk.log_loss_bound / 2.0, "brier": 1.0}
        table_keys = [k for k in b.values if k not in b.ses]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            if self.private:
                groups = _sum_only_groups(sk)
                through = _delta_method_se(vec, var, self._pipeline(nonneg=True, src=b.src), groups)
                linear = _delta_method_se(vec, var, self._pipeline(nonneg=False, src=b.src), groups)
                lin = {k: x[None] for k, x in b.linear.items()}
                reference = {k: v[0] for k, v in _table_metrics(lin, sk).items()}
                ses: dict[str, Any] = {
                    k: _se_policy(
                        through[k],
                        linear[k],
                        b.values[k],
                        reference[k],
                        caps.get(k, MAX_SE),
                        floor=1.0 if k == "accuracy" else PINNED_FLOOR,
                    )
                    for k in table_keys
                }
            else:
                ses = {k: np.where(np.isnan(b.values[k]), np.nan, 0.0) for k in table_keys}
        ses.update(b.ses)
        ses.update({k: se for k, (_, se) in self._aucs.items()})
        return {k: _plain(v) for k, v in ses.items()}

    @property
    def defined_classes(self) -> dict[str, list[int]]:
        """Per per-class metric, the classes where it is defined: the macro averages run over these.

        ``"recall"`` (support > 0; macro recall and balanced accuracy),
        ``"precision"`` (predicted count > 0), ``"f1"``, ``"roc_auc_per_class"``
        (both one-vs-rest totals > 0; macro and weighted AUC).
        """
        return self._base.defined

    def _value(self, key: str) -> Any:
        if key in self._aucs:
            return _plain(self._aucs[key][0])
        if key not in self._base.values:
            raise ValueError(self._not_released(key))
        return self._base.values[key]

    def _not_released(self, key: str) -> str:
        name = _REQUEST.get(key, "recall" if key in ("precision", "f1") else key)
        return (
            f"{key} was not released: this evaluation released only {list(self.sketch.kinds)}; "
            f"evaluate with metrics=[..., {name!r}] to include it"
        )

    def confusion_matrix(self) -> NDArray[np.float64]:
        """(c, c) consistent, non-negative counts: row = true class, column = argmax prediction.

        sklearn's layout (``sklearn.metrics.confusion_matrix``). Under DP the
        closest non-negative table with the released supports and number of
        correct predictions (module docstring, step 3); the released cells are
        in ``counts.confusion``.
        """
        if not self.sketch.has("confusion"):
            raise ValueError(self._not_released("confusion_matrix"))
        return self._base.tables["confusion"].copy()

    accuracy = _scalar("accuracy", "Share of examples whose argmax is the true class.")
    balanced_accuracy = _scalar("balanced_accuracy", "Mean per-class recall (defined classes).")
    precision = _per_class("precision", "Per-class precision of the argmax prediction.")
    recall = _per_class("recall", "Per-class recall of the argmax prediction.")
    f1 = _per_class("f1", "Per-class F1 of the argmax prediction.")
    macro_f1 = _scalar("macro_f1", "Unweighted mean of the per-class F1 (defined classes).")
    weighted_f1 = _scalar("weighted_f1", "Prevalence-weighted mean of the per-class F1.")
    roc_auc = _scalar(
        "roc_auc",
        'Macro one-vs-rest ROC AUC (``roc_auc_score(multi_class="ovr", average="macro")``) '
        "over the defined classes.",
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
        class index ranks first). Top-1 equals :attr:`accuracy` (step 1).
        """
        return float(self._value("top_k_accuracy")[self._top_k_index(k)])

    def top_k_accuracy_se(self, k: int) -> float:
        self._value("top_k_accuracy")
        return float(self.standard_errors["top_k_accuracy"][self._top_k_index(k)])

    # --------------------------------------------------------------- bounds
    @property
    def bounds(self) -> dict[str, Any]:
        """Bucketization and rounding bounds (module docstring).

        ``roc_auc_per_class`` and ``roc_auc`` are computed from the projected
        one-vs-rest bins (exact under secure aggregation); the others depend
        only on public parameters.
        """
        s = self.sketch
        out: dict[str, Any] = {
            "ece": 0.5 * float(np.max(np.diff(s.top_grid_edges))),
            "ece_classwise": 0.5 * float(np.max(np.diff(s.ovr_grid_edges))),
            "log_loss": 0.5 * s.log_loss_bound / s.loss_bins,
            "brier": 0.5 * 2.0 / s.loss_bins,
        }
        cc = self._base.class_counts
        if cc is not None:
            per_class = np.array(
                [
                    float(_ratio(0.5 * np.sum(k.bins[0] * k.bins[1]), k.totals[0] * k.totals[1]))
                    for k in cc
                ]
            )
            out["roc_auc_per_class"] = per_class
            ok = np.isfinite(per_class)
            out["roc_auc"] = float(per_class[ok].mean()) if ok.any() else math.nan
        return out

    # ---------------------------------------------------------------- curves
    def _class_histograms(self, cls: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        if not 0 <= int(cls) < self.n_classes:
            raise ValueError(f"cls must be in 0..{self.n_classes - 1}, got {cls!r}")
        cc = self._base.class_counts
        if cc is None:
            raise ValueError(self._not_released("roc_auc"))
        # The shrunk, non-negative bins of step 5 (the exact ones without noise).
        bins = cc[int(cls)].bins
        return bins[0], bins[1]

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
        (``drop_intermediate=False``). Under DP from the shrunk, non-negative
        bins (step 5), so the curve is monotone and in [0, 1]².
        """
        neg, pos = self._class_histograms(cls)
        keep = self._kept_bins(neg, pos)[::-1]
        edges = self.sketch.ovr_grid_edges[:-1]
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
        thresholds = self.sketch.ovr_grid_edges[:-1][keep]
        return np.append(precision, 1.0), np.append(recall, 0.0), thresholds

    def reliability(self, cls: int | None = None) -> dict[str, NDArray[np.float64]]:
        """Per ECE bin: count, mean predicted probability and observed frequency.

        ``cls=None`` gives the top-label diagram (confidence vs accuracy), a class
        index that class's one-vs-rest diagram. From the non-negative
        histograms of steps 4–5.
        """
        m = self.parameters["ece_bins"]
        if cls is None:
            if not self.sketch.has("top_label"):
                raise ValueError(self._not_released("ece_top_label"))
            top = self._base.tables["top_label"]
            events, counts = top[1], top.sum(axis=0)
            edges = self.sketch.top_grid_edges
        else:
            neg, pos = self._class_histograms(cls)
            events, counts = pos, neg + pos
            edges = self.sketch.ovr_grid_edges
        mid = 0.5 * (edges[:-1] + edges[1:])
        coarse = _coarse_of_fine(edges, m)
        n = np.bincount(coarse, weights=counts, minlength=m).astype(np.float64)
        probs = np.bincount(coarse, weights=counts * mid, minlength=m).astype(np.float64)
        hits = np.bincount(coarse, weights=events, minlength=m).astype(np.float64)
        return {
            "edges": np.linspace(0.0, 1.0, m + 1),
            "count": n,
            "mean_predicted": _ratio(probs, n),
            "observed": _ratio(hits, n),
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
        """Scalars with SEs, per-class metrics, bounds, receipt and parameters (JSON-safe).

        Only the metrics whose parts were released appear.
        """
        out: dict[str, Any] = {"task": "multiclass", "n_classes": self.n_classes}
        for name in self._SCALARS:
            if name in self.values:
                out[name] = float(self.values[name])
                out[f"{name}_se"] = float(self.standard_errors[name])
        if "top_k_accuracy" in self.values:
            ks = range(1, min(self.n_classes, 5) + 1)
            out["top_k_accuracy"] = {str(k): self.top_k_accuracy(k) for k in ks}
            out["top_k_accuracy_se"] = {str(k): self.top_k_accuracy_se(k) for k in ks}
        for name in ("precision", "recall", "f1", "roc_auc_per_class", "ece_classwise_per_class"):
            if name in self.values:
                out[name] = np.asarray(self.values[name]).tolist()
                out[f"{name}_se"] = np.asarray(self.standard_errors[name]).tolist()
        if self.sketch.has("confusion"):
            out["confusion_matrix"] = self.confusion_matrix().tolist()
        out["defined_classes"] = {k: list(v) for k, v in self.defined_classes.items()}
        out["bounds"] = {
            k: (np.asarray(v).tolist() if np.ndim(v) else float(v)) for k, v in self.bounds.items()
        }
        out["epsilon_spent"] = self.epsilon_spent
        out["delta_spent"] = self.delta_spent
        out["guarantee"] = self.guarantee_line
        out["guarantee_details"] = self.guarantee_details
        out["receipt"] = self.receipt.as_dict()
        out["parameters"] = dict(self.parameters)
        if self.plan is not None:
            out["plan"] = self.plan.as_dict()
        return out


# ----------------------------------------------------------------- the entry
_POSTPROCESS = (
    "shared rates: accuracy and class prevalences combined over the parts that release them "
    "(inverse-variance weights), the accuracy clipped to [0, 1], the prevalences projected onto "
    "the simplex",
    "totals: one inverse-variance total for every part (central noise), or each part's own "
    "(local DP)",
    "confusion matrix: closest non-negative table (least squares) with the released row sums "
    "and trace",
    "rank, top-label and loss histograms: closest non-negative histograms with the released totals",
    "one-vs-rest histograms: shifted to the released totals, Wiener-shrunk and split into "
    "non-negative children as the binary dense curves (fedeval.metrics.dense)",
    "ECE: each bin's |gap| lowered by its folded-normal noise bias, floored at 0; clipped to [0, 1]",
)


def multiclass_parameters(
    privacy: PrivacyModel,
    *,
    n_classes: int,
    n_clients: int | None,
    n_examples: int | None = None,
    n_examples_source: str | None = None,
    metrics: Any = None,
    n_bins: int | None = None,
    loss_bins: int | None = None,
    ece_bins: int | None = None,
    prob_floor: float = 1e-4,
    layout: Layout = "whole",
    path: str = "fast",
) -> tuple[MulticlassPlan, dict[str, Any]]:
    """The release's parameters from public inputs only (:func:`fedeval.planning.plan_multiclass`).

    Without noise the histograms are fine (64 fine bins per ECE bin, 16 ECE
    bins, 1024 loss levels) so that only bucketization error remains, bounded
    as in the module docstring. Under DP the planner chooses the parts, the
    budget weights and the bins from the number of clients and a declared
    number of examples.

    Returns
    -------
    plan : MulticlassPlan
    parameters : dict
        What :attr:`MulticlassEvaluation.parameters` holds.
    """
    if not (isinstance(prob_floor, float | int) and 0.0 < prob_floor < 1.0):
        raise ValueError(f"prob_floor must lie in (0, 1), got {prob_floor!r}")
    if layout not in ("whole", "assign"):
        raise ValueError(f"layout must be 'whole' or 'assign', got {layout!r}")
    if n_bins is not None:
        check_int_at_least(n_bins, 2, name="n_bins")
    if ece_bins is not None:
        check_int_at_least(ece_bins, 1, name="ece_bins")
    if n_bins is not None and ece_bins is not None and n_bins % ece_bins:
        raise ValueError(f"n_bins ({n_bins}) must be a multiple of ece_bins ({ece_bins})")
    names = check_multiclass_metrics(metrics)
    regime = getattr(privacy, "regime", None)
    effective_layout = "assign" if regime == "local" else layout
    plan = plan_multiclass(
        privacy,
        n_classes=n_classes,
        n_clients=n_clients,
        n_examples=n_examples,
        metrics=names,
        n_bins=n_bins,
        ece_bins=ece_bins,
        loss_bins=loss_bins,
        prob_floor=float(prob_floor),
        layout=effective_layout,
    )
    nb, m = plan.n_bins, plan.ece_bins
    if nb % m:
        raise ValueError(f"n_bins ({nb}) must be a multiple of ece_bins ({m})")
    top_edges = None if regime == "exact" else top_label_edges(m, plan.top_sub_bins)
    # Under noise the one-vs-rest bins are the ECE bins cut K = n_bins/M ways, the end
    # bins geometrically; without noise (or bins that do not split so) equal widths.
    ovr_edges = (
        None if regime == "exact" or nb % m or nb // m < 2 else probability_edges(m, nb // m)
    )
    if n_examples_source is None:
        n_examples_source = (
            "given by the caller as public"
            if n_examples is not None
            else "not given: parameters planned from the number of clients"
        )
    return plan, {
        "metrics": list(names),
        "kinds": list(plan.kinds),
        "budget_shares": dict(plan.budget_shares),
        "weights": None if plan.weights is None else list(plan.weights),
        "split_one_vs_rest": plan.split_one_vs_rest,
        "n_bins": nb,
        "loss_bins": plan.loss_bins,
        "ece_bins": m,
        "top_sub_bins": None if top_edges is None else plan.top_sub_bins,
        "top_edges": None if top_edges is None else [float(x) for x in top_edges],
        "ovr_edges": None if ovr_edges is None else [float(x) for x in ovr_edges],
        "prob_floor": float(prob_floor),
        "log_loss_bound": -math.log(prob_floor),
        "layout": effective_layout,
        "path": path,
        "planned": {
            "n_bins": n_bins is None,
            "loss_bins": loss_bins is None,
            "ece_bins": ece_bins is None,
            "budget": plan.weights is not None,
        },
        "n_clients": n_clients,
        "n_examples": n_examples,
        "public_inputs": {
            "n_clients": "public under the model or declared (fedeval.public_facts)",
            "n_examples": n_examples_source,
            "prob_floor": "the log-loss clipping bound −log p_min, public",
        },
        "postprocess": [] if regime == "exact" else list(_POSTPROCESS),
    }


def evaluate_multiclass(
    fed: Federation,
    privacy: PrivacyModel,
    *,
    metrics: Any = None,
    n_examples: int | None = None,
    n_bins: int | None = None,
    loss_bins: int | None = None,
    ece_bins: int | None = None,
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
    metrics : sequence of str, optional
        Names from :data:`fedeval.planning.MULTICLASS_METRICS` (default all):
        only the parts they need are released, and the budget split over those
        parts follows them (:func:`fedeval.planning.plan_multiclass`).
    n_examples : int, optional
        A number of examples the caller declares public, used only to plan
        (see :mod:`fedeval.public_facts`); without it the
        true count is used only where the privacy model makes it public.
    n_bins : int, optional
        Fine bins of the one-vs-rest histograms, a multiple of ``ece_bins``
        (default planned).
    loss_bins : int, optional
        Fixed-point levels of the per-example log loss and Brier score.
    ece_bins : int, optional
        M equal-width bins of the ECEs (default planned: 16 without noise).
    prob_floor : float
        p_min: the log loss of one example is clipped to −log p_min (public).
    layout : {"whole", "assign"}
        Distributed/central DP: every client encodes every part (ε split over
        the parts by the planner's weights) or clients are split across parts
        (full ε each). Local DP always splits (see
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
        A binary federation, an unknown metric or bad parameters (never a
        data-dependent condition).
    BudgetExceededError
        The ledger cannot afford the release; nothing is released.

    Warns
    -----
    UserWarning
        When a class's released support is not clearly above its noise (3 SEs)
        or zero, or a macro average leaves classes out: the message names the
        classes and holds no counts.

    Notes
    -----
    Privacy: exactly one release of a
    :class:`~fedeval.sketches.multiclass.MulticlassSketch`; the receipt lists the
    budget of every part. Everything else is post-processing (module docstring).
    """
    if not isinstance(fed, Federation):
        raise TypeError(f"fed must be a Federation, got {type(fed).__name__}")
    if fed.kind == "binary":
        raise ValueError("evaluate_multiclass() needs a multiclass federation; use evaluate()")
    pub = public or Public()
    if n_examples is not None:
        if pub.n_examples is not None and pub.n_examples != n_examples:
            raise ValueError("n_examples disagrees with public.n_examples; declare one")
        pub = Public(pub.n_clients, n_examples, pub.score_range)
    pub.check_domain(fed)
    gen = as_generator(rng)
    # The bins, parts and budget weights are planned from a public size, or from a
    # noisy count released first (public_facts); without noise every count is public.
    size = planning_size(
        fed,
        privacy,
        public=pub,
        needed=getattr(privacy, "regime", None) != "exact",
        path=path,
        rng=gen,
        ledger=ledger,
    )
    chosen, params = multiclass_parameters(
        size.remaining,
        n_classes=fed.n_classes,
        n_clients=size.n_clients,
        n_examples=size.n_examples,
        n_examples_source=size.source["n_examples"],
        metrics=metrics,
        n_bins=n_bins,
        loss_bins=loss_bins,
        ece_bins=ece_bins,
        prob_floor=prob_floor,
        layout=layout,
        path=path,
    )
    size_parameters = size.parameters()
    params["public_inputs"].update(size_parameters.pop("public_inputs"))
    params.update(size_parameters)
    sketch = MulticlassSketch(
        fed.n_classes,
        params["n_bins"],
        params["loss_bins"],
        params["prob_floor"],
        logits=fed.kind == "logits",
        kinds=tuple(params["kinds"]),
        split_one_vs_rest=params["split_one_vs_rest"],
        weights=None if params["weights"] is None else tuple(params["weights"]),
        top_edges=None if params["top_edges"] is None else tuple(params["top_edges"]),
        ovr_edges=None if params["ovr_edges"] is None else tuple(params["ovr_edges"]),
    )
    rel = release(fed, sketch, size.remaining, layout=layout, path=path, rng=gen, ledger=ledger)
    counts = rel.decode()
    if size.receipt is not None:
        counts = replace(
            counts,
            receipt=replace(
                compose([size.receipt, counts.receipt], "multiclass evaluation"),
                sensitivity=dict(counts.receipt.sensitivity),
            ),
        )
    result = MulticlassEvaluation(counts, params, chosen, BIAS_REPLICATES, uniform_seed(gen))
    if not certainly_ignored(SmallDataWarning):  # its only output is a warning
        _warn_if_degenerate(result)
    return result


def _warn_if_degenerate(result: MulticlassEvaluation) -> None:
    """Warn (without counts) about weak or undefined classes and the classes a macro leaves out.

    Reads steps 1–4 only (no curves, no bootstrap), so an evaluation stays
    cheap until a metric is asked for.
    """
    c = result.n_classes
    messages = []
    supports, se = result._support()
    if supports is not None:
        se = se if (result.private and se is not None) else np.zeros(c)
        weak = np.flatnonzero(~(supports > 3.0 * se) | ~(supports > 0))
        if weak.size:
            messages.append(
                f"class(es) {weak.tolist()} have a released number of examples that is zero "
                "or not clearly above the privacy noise (3 standard errors); their "
                "per-class metrics are NaN or unreliable"
            )
        _, base = result._projected
        left_out: dict[str, list[int]] = {}
        if "confusion" in base:
            conf = base["confusion"]
            for name, total in (("recall", conf.sum(axis=1)), ("precision", conf.sum(axis=0))):
                out = [int(j) for j in np.flatnonzero(~(total > 0))]
                if out:
                    left_out[name] = out
        if result.sketch.has("one_vs_rest"):
            pi = base["prevalence"]
            out = [int(j) for j in np.flatnonzero(~((pi > 0) & (pi < 1)))]
            if out:
                left_out["roc_auc_per_class"] = out
        if left_out:
            messages.append(
                "macro averages run over the defined classes only; left out: "
                + "; ".join(f"{k}: {v}" for k, v in left_out.items())
            )
    if messages:
        warnings.warn("; ".join(messages), SmallDataWarning, stacklevel=3)
