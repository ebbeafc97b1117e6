"""Parameter choice and predicted error from the papers' bounds.

The papers give error *rates* (Table 1 of Cormode–Markov; Theorems 2, 4–6 and
8 there; Theorems 4.2–4.5 of Xu–Cormode). The planner turns them into concrete
choices of height, buckets and quantiles, and into order-of-magnitude error
predictions ``constant × rate``.

Constants: every predicted error is ``C × rate`` with ``C`` taken from
:data:`ERROR_CONSTANTS`, keyed by (privacy model, metric), and the rate from
:func:`error_rates` (the bound with constant 1 at the planner's own height,
buckets and quantiles). The constants were fitted once by simulation:

* Task: 10 ``make_classification`` features (5 informative, flip_y = 0.1),
  scored by a logistic regression trained on a disjoint split; balanced
  classes, ROC AUC ≈ 0.86; one example per client.
* Grid: M ∈ {10^4, 3·10^4, 10^5, 3·10^5, 10^6}; SA; DistDP ε ∈ {0.3, 1, 3};
  LDP ε ∈ {1, 3, 8}; b = 2; 30 repetitions per setting (fresh sample of M
  examples and fresh noise), with ``fe.evaluate`` using this planner's choices.
* Observed errors: threshold metrics = the worst of precision, recall and
  accuracy of their mean absolute error over thresholds 1/11..10/11; AUC =
  |estimated − exact ROC AUC|; ROC Area Error = Xu–Cormode Definition 4.1.
* Statistic: C = the largest, over the grid settings (M, ε), of the 90th
  percentile over that setting's repetitions of observed error / rate. A
  prediction is thus an error level that at most about one run in ten
  exceeded at every setting of the grid. The planner uses predictions to
  decide whether there are enough clients, so they should be rarely
  exceeded, not typical. The ratio is not constant across settings (the
  rates drop constants; h is rounded), so a percentile pooled over all runs
  under-predicts where the ratio is high (it did at a held-out DistDP
  setting); a plain maximum would be set by the single worst draw. The 90th
  percentile of 10 repetitions moved by up to 25 % between two seeds of the
  same code, so each setting now has 30 (issue 28 also found the constants out
  of date: with the fit's own seeds, the code then in place gave 3.18 for the
  DistDP threshold metrics where 2.11 was written).
* ECE is not fitted: its constants stay 1 (the bare rate, an order of
  magnitude).

Reproduce (and rewrite the block below) with
``.venv/bin/python benchmarks/fit_planner_constants.py --write``; per-run
errors and the median/max ratios go to ``benchmarks/out/planner/``.
Predictions are for score distributions like the fitting task's; a very
different distribution (spikes, extreme class imbalance) can exceed them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from fedeval.privacy.models import PrivacyModel, Regime, privacy_model
from fedeval.validation import check_int_at_least, check_positive

__all__ = [
    "ERROR_CONSTANTS",
    "MULTICLASS_METRICS",
    "MulticlassPlan",
    "Plan",
    "error_rates",
    "plan",
    "plan_multiclass",
]

#: C in "predicted error = C × rate", per (noise regime, metric); see the module docstring.
#: "exact" is secure aggregation, "central" noise on the aggregate (distributed or
#: central DP), "local" local DP; every privacy model declares its regime.
ERROR_CONSTANTS: dict[tuple[str, str], float] = {
    # FITTED-CONSTANTS-BEGIN (written by benchmarks/fit_planner_constants.py --write)
    ("exact", "threshold_metrics"): 0.911,
    ("exact", "auc"): 2.9,
    ("exact", "ece"): 1.0,  # not fitted
    ("exact", "roc_area_error"): 0.0178,
    ("central", "threshold_metrics"): 2.69,
    ("central", "auc"): 43.5,
    ("central", "ece"): 1.0,  # not fitted
    ("central", "roc_area_error"): 0.563,
    ("local", "threshold_metrics"): 2.11,
    ("local", "auc"): 2.1,
    ("local", "ece"): 1.0,  # not fitted
    ("local", "roc_area_error"): 0.512,
    # FITTED-CONSTANTS-END
}


@dataclass(frozen=True)
class Plan:
    """Chosen parameters and predicted errors for one evaluation.

    Attributes
    ----------
    privacy : str
        The privacy model in words.
    regime : {"exact", "central", "local"}
        The model's noise regime, which the planning rules depend on.
    n_clients : int or None
        The number of participating clients, when it is a public input.
    n_examples : int
        M of the rules and predictions: the public (or privately released)
        number of examples given to :func:`plan`, or ``n_clients`` when none
        was given (a note says so).
    epsilon : float
    height, branching : int
        Of the released hierarchy.
    n_buckets : int
        B for the H_B AUC estimator.
    n_quantiles : int
        Q per class for the ROC/PR curves.
    calibration_bins : int
        B for histogram-binning calibration.
    predicted_error : dict
        Metric → predicted absolute error: C × rate, with C fitted so that
        about 1 run in 10 exceeded it (see module doc; ECE not fitted).
    enough_clients : bool
        Whether every predicted *evaluation* error (threshold metrics, AUC, ROC
        area error) is at most ``target_error``; the calibration ECE rate is
        reported in ``predicted_error`` and ``notes`` but does not decide it.
    notes : list of str
    """

    privacy: str
    regime: Regime
    n_clients: int | None
    n_examples: int
    epsilon: float
    height: int
    branching: int
    n_buckets: int
    n_quantiles: int
    calibration_bins: int
    predicted_error: dict[str, float]
    target_error: float
    enough_clients: bool
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {
            "privacy": self.privacy,
            "regime": self.regime,
            "n_clients": self.n_clients,
            "n_examples": self.n_examples,
            "epsilon": self.epsilon if math.isfinite(self.epsilon) else None,
            "height": self.height,
            "branching": self.branching,
            "n_buckets": self.n_buckets,
            "n_quantiles": self.n_quantiles,
            "calibration_bins": self.calibration_bins,
            "predicted_error": dict(self.predicted_error),
            "target_error": self.target_error,
            "enough_clients": self.enough_clients,
            "notes": list(self.notes),
        }


def plan(
    privacy: PrivacyModel | str = "distdp",
    *,
    n_clients: int | None = None,
    epsilon: float | None = None,
    n_examples: int | None = None,
    branching: int = 2,
    target_error: float = 0.01,
) -> Plan:
    """Choose hierarchy height, buckets and quantiles, and predict the errors.

    Parameters
    ----------
    privacy : privacy model or str
        The model of the release (its regime decides the rules below), or a
        short name ("sa", "distdp", "ldp", ...) together with ``epsilon``.
    n_clients : int, optional
        The number of participating clients, a public input; M in the papers
        (one example per client) unless ``n_examples`` is given. At least one
        of ``n_clients`` and ``n_examples`` is required.
    epsilon : float, optional
        Only with a short name: the privacy budget of the release.
    n_examples : int, optional
        A *public* number of examples (default: ``n_clients``); bounds use the
        number of examples, the papers' M. Pass it only when it is public: the
        chosen parameters are published with every release planned from them.
    branching : int
        b >= 2.
    target_error : float
        Error that counts as "enough clients".

    Returns
    -------
    Plan

    See Also
    --------
    plan_multiclass : the plan (parts, budget split, bins, predicted errors) of a
        multiclass evaluation, from the same public inputs.

    Notes
    -----
    Public inputs only: the plan is a function of its arguments, which must
    all be public (the model, ``n_clients``, a declared or public
    ``n_examples``), because its choices (the height above all, which sets the
    number of receipt rows) are published with the release. Never pass an
    exact private count: :func:`fedeval.evaluate` passes the number of
    examples only when the privacy model makes it public, when the model adds
    no noise, or when the caller declared it.

    Rules (b = 2 unless given; "DistDP" stands for every central-noise model,
    "LDP" for local models):

    * SA: h = 14 (Cormode–Markov §7.1: error < 1e-4 at h = 14).
    * DistDP: B* = (εM)^{2/3} leaves balance bucketization and noise for
      precision/recall/accuracy (Theorem 2), h = ceil(log_b B*) clamped to [4, 16].
    * LDP: B* = ε^{2/3} M^{1/3} (Theorem 2), h = ceil(log_b B*) clamped to [3, 12].
    * AUC buckets: SA B = min(leaves/4, 1000) (error 1/(3B²), Theorem 4);
      DistDP B = sqrt(εM/3) (bucketization 1/(3B²) below the noise term
      1/(εM), Theorem 5); LDP B = sqrt(M/V_ε) with V_ε = h²e^ε/(e^ε−1)²
      (Theorem 6); all clamped to [2, leaves/4].
    * Quantiles: Q = b^(h−2) (Xu–Cormode §3.2: h = ceil(log_b Q) + c, c = 2), at most 1024.
    * Calibration bins: B ∝ M^{1/3} (Theorem 7/8 DistDP), B = sqrt(ε sqrt(M)) for LDP (Theorem 8).
    """
    if n_clients is None and n_examples is None:
        raise ValueError(
            "plan needs a public size: n_clients (the participating clients) or n_examples"
        )
    m_clients = None if n_clients is None else check_int_at_least(n_clients, 1, name="n_clients")
    m = (
        check_int_at_least(n_examples, 1, name="n_examples")
        if n_examples is not None
        else int(m_clients or 1)
    )
    b = check_int_at_least(branching, 2, name="branching")
    target_error = check_positive(target_error, name="target_error")
    m_given = n_examples is not None
    if isinstance(privacy, str):
        model = privacy_model(privacy, epsilon=epsilon)
    else:
        model = privacy
        if epsilon is not None and epsilon != model.epsilon:
            raise ValueError(
                f"epsilon={epsilon} disagrees with the model's ε={model.epsilon}; pass one of them"
            )
    key = model.regime
    notes = [
        "predicted errors are C × rate, C fitted by simulation so that at most about 1 run "
        "in 10 exceeded the prediction at each setting of the fitting grid (see "
        "fedeval.planning); the ECE prediction is the bare rate (C = 1, not fitted), an "
        "order of magnitude"
    ]
    if not m_given:
        notes.append(
            "n_examples not given: planned with M = n_clients (one example per client); "
            "give a public n_examples (a declared size) to plan for more examples"
        )
    eps = float(model.epsilon)
    if key == "exact":
        h = 14 if b == 2 else max(1, math.ceil(14 * math.log(2) / math.log(b)))
    else:
        target_leaves = (eps * m) ** (2 / 3) if key == "central" else eps ** (2 / 3) * m ** (1 / 3)
        h = math.ceil(math.log(max(target_leaves, b), b))
        h = min(max(h, 4 if key == "central" else 3), 16 if key == "central" else 12)
    leaves = b**h
    cap = max(2, leaves // 4)
    if key == "exact":
        n_buckets = min(cap, 1000)
    elif key == "central":
        n_buckets = min(cap, max(2, round(math.sqrt(eps * m / 3))))
    else:
        v_eps = h**2 * math.exp(eps) / math.expm1(eps) ** 2
        n_buckets = min(cap, max(2, round(math.sqrt(m / v_eps))))
    n_quantiles = max(1, min(1024, b ** max(h - 2, 0)))
    if key == "local":
        cal_bins = max(2, round(math.sqrt(eps * math.sqrt(m))))
    else:
        cal_bins = max(2, round(m ** (1 / 3)))
    rates = _rates(key, eps, m, h, leaves, n_buckets, n_quantiles)
    # Every predicted quantity lies in [0, 1]: answering 0.5 without any release errs by
    # at most 0.5, so a larger prediction says only "no signal" (issue 29: plan printed an
    # AUC error of 0.92 for 57 clients). Capped at UNINFORMATIVE_ERROR, with a note.
    raw = {k: ERROR_CONSTANTS[(key, k)] * r for k, r in rates.items()}
    err = {k: min(v, UNINFORMATIVE_ERROR) for k, v in raw.items()}
    for k, v in raw.items():
        if v >= UNINFORMATIVE_ERROR:
            notes.append(
                f"{k}: the predicted error ({v:.2g}) reaches {UNINFORMATIVE_ERROR:g}, the error "
                "of answering 0.5 without data: at this size and ε the release would carry no "
                "usable signal for it (shown capped)"
            )
    # "Enough clients" is about the evaluation this plan is for; the calibration ECE
    # is a bare, unfitted rate of a different task (histogram binning), so it is
    # reported but does not decide the verdict.
    evaluation_err = {k: v for k, v in err.items() if k != "ece"}
    enough = all(v <= target_error for v in evaluation_err.values())
    if key == "exact":
        # SA has no noise: its errors are bucketization, which a taller hierarchy shrinks.
        remedy = "a taller hierarchy (height) or more quantiles needed"
    else:
        remedy = "more clients (or a public count of more examples) or a larger ε needed"
    if not enough:
        worst = max(evaluation_err, key=lambda k: evaluation_err[k])
        notes.append(
            f"{worst} is predicted at {err[worst]:.2g} > target {target_error:g}: {remedy}"
        )
    if err["ece"] > target_error:
        more = "more examples" if key == "exact" else "more examples or a larger ε"
        notes.append(
            f"calibration by binning: ECE rate {err['ece']:.2g} > target {target_error:g} "
            f"(an order of magnitude, not part of enough_clients); {more} would lower it"
        )
    return Plan(
        model.describe(),
        key,
        m_clients,
        m,
        eps,
        h,
        b,
        n_buckets,
        n_quantiles,
        cal_bins,
        err,
        target_error,
        enough,
        notes,
    )


#: Cap of a predicted error: every planned quantity (AUC, threshold metrics, ECE, ROC
#: area error) lies in [0, 1], and answering 0.5 errs by at most this much.
UNINFORMATIVE_ERROR = 0.5


def _rates(
    key: str, eps: float, m: int, h: int, leaves: int, n_buckets: int, n_quantiles: int
) -> dict[str, float]:
    """The papers' error rates (constant 1) for one choice of parameters."""
    if key == "exact":
        return {
            "threshold_metrics": 1 / leaves,
            "auc": 1 / (3 * n_buckets**2),
            "ece": m ** (-1 / 3),
            "roc_area_error": 1 / n_quantiles,
        }
    if key == "central":
        return {
            "threshold_metrics": (eps * m) ** (-2 / 3),
            "auc": (1 / eps + 1 / n_buckets) / m,
            "ece": m ** (-1 / 3) + 1 / (eps * m ** (2 / 3)),
            "roc_area_error": 1 / n_quantiles + 1 / (m * eps),
        }
    return {
        "threshold_metrics": eps ** (-2 / 3) * m ** (-1 / 3),
        "auc": h / (eps * math.sqrt(m)),
        "ece": eps ** (-1 / 2) * m ** (-1 / 4),
        "roc_area_error": 1 / n_quantiles + h / (eps * math.sqrt(m)),
    }


def error_rates(chosen: Plan) -> dict[str, float]:
    """Rates (constant 1) behind ``chosen.predicted_error``.

    ``chosen.predicted_error[k] == min(ERROR_CONSTANTS[(chosen.regime, k)] * error_rates(chosen)[k],
    UNINFORMATIVE_ERROR)``.
    Used to fit the constants (``benchmarks/fit_planner_constants.py``).
    """
    return _rates(
        chosen.regime,
        chosen.epsilon,
        chosen.n_examples,
        chosen.height,
        chosen.branching**chosen.height,
        chosen.n_buckets,
        chosen.n_quantiles,
    )


# ------------------------------------------------------------------ multiclass
#: What every requestable multiclass metric needs released. "accuracy" is served by
#: any of its parts (the true-class rank by default); the others need all theirs.
MULTICLASS_METRICS: dict[str, tuple[str, ...]] = {
    "accuracy": ("rank", "top_label", "confusion"),
    "top_k_accuracy": ("rank",),
    "confusion_matrix": ("confusion",),
    "precision": ("confusion",),
    "recall": ("confusion",),
    "f1": ("confusion",),
    "balanced_accuracy": ("confusion",),
    "macro_f1": ("confusion",),
    "weighted_f1": ("confusion",),
    "roc_auc": ("one_vs_rest",),
    "roc_curve": ("one_vs_rest",),
    "precision_recall_curve": ("one_vs_rest",),
    "ece_classwise": ("one_vs_rest",),
    "ece_top_label": ("top_label",),
    "reliability": ("top_label",),
    "log_loss": ("log_loss",),
    "brier_score": ("brier",),
}

_KIND_ORDER = ("confusion", "one_vs_rest", "rank", "top_label", "log_loss", "brier")

#: Total of the integer budget weights (multiplicities) of a weighted release:
#: shares of ε in steps of at most 1/240 of it.
MULTICLASS_WEIGHT_TOTAL = 240

#: Fine bins per ECE bin of the top-label histogram under noise (the last ECE bin is
#: cut geometrically towards 1, :func:`fedeval.sketches.multiclass.top_label_edges`).
TOP_LABEL_SUB_BINS = 4

_Z90 = 1.6448536269514722  # two-sided 90 %: "about 1 run in 10 exceeds the prediction"


@dataclass(frozen=True)
class MulticlassPlan:
    """Parts, budget split, resolution and predicted errors of a multiclass evaluation.

    Attributes
    ----------
    privacy : str
    regime : {"exact", "central", "local"}
    n_clients, n_examples, n_classes : int
        Public inputs (``n_examples`` is ``n_clients`` when no public count was given).
    epsilon : float
    metrics : tuple of str
        The metrics asked for (all of :data:`MULTICLASS_METRICS` by default).
    kinds : tuple of str
        The parts released (see :mod:`fedeval.sketches.multiclass`).
    budget_shares : dict
        Share of ε of every released part (empty without noise); under local DP
        every part gets the whole ε from its own clients, and the shares say
        which fraction of the clients report it.
    weights : tuple of int or None
        Integer multiplicities that realise the shares, one per part of the
        sketch (central noise, layout "whole").
    split_one_vs_rest : bool
        The one-vs-rest histograms go as two parts, every class's negatives and
        every class's positives (central noise, layout "whole").
    n_bins, ece_bins, top_sub_bins, loss_bins : int
        Resolution (public).
    predicted_error : dict
        Metric → error that about 1 run in 10 exceeds (1.645 predicted
        standard errors of the noise, plus the fixed-point bound of the
        losses); an order of magnitude from the closed forms in
        :func:`plan_multiclass`, not fitted.
    notes : list of str
    """

    privacy: str
    regime: Regime
    n_clients: int | None
    n_examples: int
    n_classes: int
    epsilon: float
    metrics: tuple[str, ...]
    kinds: tuple[str, ...]
    budget_shares: dict[str, float]
    weights: tuple[int, ...] | None
    split_one_vs_rest: bool
    n_bins: int
    ece_bins: int
    top_sub_bins: int
    loss_bins: int
    predicted_error: dict[str, float]
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {
            "privacy": self.privacy,
            "regime": self.regime,
            "n_clients": self.n_clients,
            "n_examples": self.n_examples,
            "n_classes": self.n_classes,
            "epsilon": self.epsilon if math.isfinite(self.epsilon) else None,
            "metrics": list(self.metrics),
            "kinds": list(self.kinds),
            "budget_shares": dict(self.budget_shares),
            "weights": None if self.weights is None else list(self.weights),
            "split_one_vs_rest": self.split_one_vs_rest,
            "n_bins": self.n_bins,
            "ece_bins": self.ece_bins,
            "top_sub_bins": self.top_sub_bins,
            "loss_bins": self.loss_bins,
            "predicted_error": dict(self.predicted_error),
            "notes": list(self.notes),
        }


def multiclass_kinds(metrics: tuple[str, ...]) -> tuple[str, ...]:
    """The parts that the metrics need (:data:`MULTICLASS_METRICS`), in vector order.

    Accuracy comes from whichever of the true-class rank, the top-label
    histogram and the confusion matrix is released for another metric (all
    of them are combined), and from the rank alone otherwise.
    """
    needed: set[str] = set()
    for m in metrics:
        if m != "accuracy":
            needed.update(MULTICLASS_METRICS[m])
    if "accuracy" in metrics and not needed & set(MULTICLASS_METRICS["accuracy"]):
        needed.add("rank")
    return tuple(k for k in _KIND_ORDER if k in needed)


def check_multiclass_metrics(metrics: object) -> tuple[str, ...]:
    """Validate ``metrics=`` (None: all); returns the names in a canonical order."""
    if metrics is None:
        return tuple(MULTICLASS_METRICS)
    if isinstance(metrics, str):
        metrics = (metrics,)
    try:
        names = tuple(str(m) for m in metrics)  # type: ignore[attr-defined]
    except TypeError:
        raise TypeError(f"metrics must be a sequence of names, got {metrics!r}") from None
    unknown = sorted(set(names) - set(MULTICLASS_METRICS))
    if unknown or not names:
        raise ValueError(
            f"metrics must be names among {sorted(MULTICLASS_METRICS)}, got {list(names)!r}"
        )
    return tuple(m for m in MULTICLASS_METRICS if m in names)


def _noise_variance(regime: str, eps_part: float, n_parts: int, m: int) -> float:
    """Noise variance of one released count of a part (planning, before any data).

    Central: discrete Laplace of scale 1/ε_k, 2α/(1 − α)² with α = e^(−ε_k).
    Local: an ε-report from the part's M/K examples (OUE, 4e^ε/(e^ε − 1)² per
    report), scaled by K to the population: K·M·4e^ε/(e^ε − 1)². The split's
    sampling error is added to the ratios (:func:`_predicted_multiclass`).
    """
    if regime == "exact":
        return 0.0
    if regime == "central":
        a = math.exp(-eps_part)
        return 2.0 * a / (1.0 - a) ** 2
    e = math.exp(-eps_part)
    per_report = 4.0 * e / (-math.expm1(-eps_part)) ** 2
    return n_parts * m * per_report


def _predicted_multiclass(
    kinds: tuple[str, ...],
    var: dict[str, float],
    c: int,
    m: int,
    n_bins: int,
    top_bins: int,
    loss_bins: int,
    log_loss_bound: float,
    sampling_parts: int = 0,
    *,
    cap: bool = True,
) -> dict[str, float]:
    """Predicted noise SE of the headline metric of every kind (closed forms, worst case).

    With N = M examples, c classes and a noise variance σ² per released
    count of each part (``var``: per kind, the one-vs-rest positives and
    negatives as "ovr_pos" and "ovr_neg"):

    * accuracy from the rank (r_0/T), the top-label halves and the confusion
      trace: at most (c − 1)σ², Tσ² and c(c − 1)σ² over N² (ratio estimators,
      the worst over the accuracy), combined by inverse variance;
    * macro recall: (c − 1)σ²/s_j² per class with s_j = N/c, averaged;
    * macro one-vs-rest AUC: per class Σ_b (F_b − AUC)² σ² ≤ Bσ²/4 over P² (the
      positives' σ²) plus over N² (the negatives');
    * top-label ECE: (Σ_m s_m²)^½/N with s_m² ≤ (cells of bin m)σ²;
    * mean log loss / Brier: (B_loss/12)^½ σ L / N plus the fixed-point bound L/(2B_loss);
    * local DP (``sampling_parts`` = K parts): each ratio adds the split's K/(4N).

    Capped at the metric's range (1; L for the log loss, 2 for the Brier score)
    unless ``cap`` is False (the budget split needs the uncapped 1/ε_k² scaling).
    """
    n = float(m)
    out: dict[str, float] = {}
    # Local DP: a ratio read from 1/K of the clients has sampling variance ≈ K p(1 − p)/N.
    samp = sampling_parts / (4.0 * n)
    acc_vars = []
    if "rank" in kinds:
        acc_vars.append(max(c - 1, 1) * var["rank"] / n**2)
    if "top_label" in kinds:
        acc_vars.append(top_bins * var["top_label"] / n**2)
    if "confusion" in kinds:
        acc_vars.append(c * (c - 1) * var["confusion"] / n**2)
    if acc_vars:
        combined = 1.0 / sum(1.0 / max(v, 1e-300) for v in acc_vars)
        out["accuracy"] = _Z90 * math.sqrt(combined + samp)
    if "rank" in kinds:
        out["top_k_accuracy"] = _Z90 * math.sqrt(max(c - 1, 1) * var["rank"] / n**2 + samp)
    if "confusion" in kinds:
        s = n / c
        out["macro_recall"] = _Z90 * math.sqrt((c - 1) * var["confusion"] / s**2 / c + samp)
    if "one_vs_rest" in kinds:
        p, q = n / c, n * (c - 1) / c
        per_class = n_bins / 4.0 * (var["ovr_pos"] / p**2 + var["ovr_neg"] / q**2)
        out["roc_auc"] = _Z90 * math.sqrt(per_class / c + samp)
        ece_var = n_bins * (var["ovr_pos"] + var["ovr_neg"]) / c / n**2
        out["ece_classwise"] = _Z90 * math.sqrt(ece_var + samp)
    if "top_label" in kinds:
        out["ece_top_label"] = _Z90 * math.sqrt(2 * top_bins * var["top_label"] / n**2 + samp)
    ranges = {"log_loss": log_loss_bound, "brier_score": 2.0}
    for kind, hi in (("log_loss", log_loss_bound), ("brier", 2.0)):
        if kind in kinds:
            noise = _Z90 * math.sqrt(loss_bins / 12.0 * var[kind] / n**2 + samp) * hi
            out["brier_score" if kind == "brier" else kind] = noise + hi / (2.0 * loss_bins)
    if not cap:
        return out
    return {k: float(min(v, ranges.get(k, 1.0))) for k, v in out.items()}


def _pow2(x: float, lo: int, hi: int) -> int:
    return int(min(max(2 ** round(math.log2(max(x, 1.0))), lo), hi))


def plan_multiclass(
    privacy: PrivacyModel | str = "distdp",
    *,
    n_classes: int,
    n_clients: int | None,
    epsilon: float | None = None,
    n_examples: int | None = None,
    metrics: object = None,
    n_bins: int | None = None,
    ece_bins: int | None = None,
    loss_bins: int | None = None,
    prob_floor: float = 1e-4,
    layout: str = "whole",
) -> MulticlassPlan:
    """Parts, budget split, bins and predicted errors of a multiclass evaluation, from public inputs.

    Parameters
    ----------
    privacy : privacy model or str
        As in :func:`plan` (a short name needs ``epsilon``).
    n_classes : int
        c ≥ 2.
    n_clients : int or None
        The number of participating clients (public); M unless ``n_examples``
        is given.
    epsilon : float, optional
        Only with a short name.
    n_examples : int, optional
        A *public* number of examples (never an exact private count: the plan
        is published with the release).
    metrics : sequence of str, optional
        Names from :data:`MULTICLASS_METRICS` (default all). Only the parts
        they need are released (:func:`multiclass_kinds`).
    n_bins, ece_bins, loss_bins : int, optional
        Fix a resolution instead of planning it.
    prob_floor : float
        p_min of the log loss (public).
    layout : {"whole", "assign"}
        Under central noise: every client encodes every part (the budget is
        split by weights), or clients are split over the parts.

    Returns
    -------
    MulticlassPlan

    Notes
    -----
    Rules (N = ``n_examples`` or ``n_clients``; σ_k² the noise variance of one
    count of part k, :func:`_noise_variance`):

    * Without noise: today's fine resolution (1024 probability bins, 16 ECE
      bins, 1024 loss levels); every requested part, no split.
    * Central noise, layout "whole": the one-vs-rest histograms are released
      as two parts, every class's negatives (m = c − 1 cells per example) and
      every class's positives (m = 1: an example is a positive of one class
      only). The predicted variance of the headline metric of part k is
      A_k m_k²/ε_k² (:func:`_predicted_multiclass`; the macro AUC's is split
      into its positives' and negatives' terms), and Σ_k A_k m_k²/ε_k² under
      Σ ε_k = ε is smallest at ε_k ∝ (A_k m_k²)^{1/3}; part k's share
      ε_k/ε = r_k m_k/Σ r m is rounded to integer multiplicities r_k with
      Σ r m ≈ :data:`MULTICLASS_WEIGHT_TOTAL`. One pass from an even split and
      one from the shares it gives. For the AUC this gives the positives and
      the negatives equal shares; one part per class would put noise c/ε_ovr on
      a positive count where the split puts 2/ε_ovr.
    * Local DP (and layout "assign"): clients are split evenly over the
      released parts (each part the whole ε, one part per one-vs-rest class);
      the split follows the request through which parts are released.
    * One-vs-rest bins: the power of two in [4, 64] minimising the predicted
      AUC error 1.645·(B/4 · (σ_+²/P² + σ_−²/Q²))^½ + 0.1/B (noise grows with
      the bins, bucketization falls: the ties' bias of H_B measured 0.1/B on
      a 4-class task of 20,000 examples with equal-width bins, at most the
      Lemma-3 bound ½ Σ p_b n_b/(PN)); at least 4 per ECE bin and a multiple
      of them, cut as :func:`fedeval.sketches.multiclass.probability_edges`
      (with one fine bin per ECE bin, 4 equal-width bins biased the macro AUC
      of a 4-class task by −0.043; with 16 cut so, −0.006).
    * ECE bins: M = 2^round(log2((N/σ_top)^{1/3})) in [2, 16] (the cube-root
      rule of histogram binning, Cormode–Markov Theorem 7, with N/σ the
      count-to-noise ratio in place of εN), with :data:`TOP_LABEL_SUB_BINS`
      fine bins each for the top label.
    * Loss levels: B_loss = (2.1 N/σ)^{2/3} in [4, 64] (fixed-point bound
      L/(2B_loss) against the noise (B_loss/12)^½ σL/N).
    """
    c = check_int_at_least(n_classes, 2, name="n_classes")
    if n_clients is None and n_examples is None:
        raise ValueError(
            "plan_multiclass needs a public size: n_clients (the participating clients) or "
            "n_examples"
        )
    m_clients = None if n_clients is None else check_int_at_least(n_clients, 1, name="n_clients")
    m = (
        check_int_at_least(n_examples, 1, name="n_examples")
        if n_examples is not None
        else int(m_clients or 1)
    )
    if isinstance(privacy, str):
        model = privacy_model(privacy, epsilon=epsilon)
    else:
        model = privacy
        if epsilon is not None and epsilon != model.epsilon:
            raise ValueError(
                f"epsilon={epsilon} disagrees with the model's ε={model.epsilon}; pass one of them"
            )
    if layout not in ("whole", "assign"):
        raise ValueError(f"layout must be 'whole' or 'assign', got {layout!r}")
    regime = model.regime
    names = check_multiclass_metrics(metrics)
    kinds = multiclass_kinds(names)
    eps = float(model.epsilon)
    log_loss_bound = -math.log(prob_floor)
    notes: list[str] = []
    if n_examples is None:
        notes.append(
            "n_examples not given: planned with N = n_clients; give a public n_examples "
            "(a declared size) to plan for more examples"
        )
    if regime == "exact":
        m_ece = 16 if ece_bins is None else check_int_at_least(ece_bins, 1, name="ece_bins")
        nb = m_ece * 64 if n_bins is None else check_int_at_least(n_bins, 1, name="n_bins")
        lb = 1024 if loss_bins is None else check_int_at_least(loss_bins, 1, name="loss_bins")
        zero = {**dict.fromkeys(kinds, 0.0), "ovr_pos": 0.0, "ovr_neg": 0.0}
        predicted = _predicted_multiclass(kinds, zero, c, m, nb, nb, lb, log_loss_bound)
        return MulticlassPlan(
            model.describe(), regime, m_clients, m, c, eps, names, kinds, {}, None, False,
            nb, m_ece, nb // m_ece, lb, predicted, notes,
        )  # fmt: skip
    weighted = regime == "central" and layout == "whole"
    # Parts: (name, kind, cells one example changes).
    specs: list[tuple[str, str, int]] = []
    for kind in kinds:
        if kind != "one_vs_rest":
            specs.append((kind, kind, 1))
        elif weighted:
            specs += [("one_vs_rest negatives", kind, c - 1), ("one_vs_rest positives", kind, 1)]
        else:
            specs += [(f"one_vs_rest class {j}", kind, 1) for j in range(c)]
    n_parts = len(specs)

    def variances(eps_part: dict[str, float]) -> dict[str, float]:
        var: dict[str, float] = {}
        for name, kind, cells in specs:
            v = _noise_variance(regime, eps_part[name] / cells, n_parts, m)
            if kind != "one_vs_rest":
                var[kind] = v
            elif name.endswith("negatives"):
                var["ovr_neg"] = v
            elif name.endswith("positives"):
                var["ovr_pos"] = v
            else:
                var["ovr_pos"] = var["ovr_neg"] = v
        return var

    def resolution(var: dict[str, float]) -> tuple[int, int, int]:
        var_top = var.get("top_label", var.get("ovr_pos", next(iter(var.values()))))
        m_ece = (
            check_int_at_least(ece_bins, 1, name="ece_bins")
            if ece_bins is not None
            else _pow2((m / math.sqrt(max(var_top, 1e-12))) ** (1 / 3), 2, 16)
        )
        if n_bins is not None:
            nb = check_int_at_least(n_bins, 1, name="n_bins")
        else:
            nb = 16
            if "one_vs_rest" in kinds:
                p, q = m / c, m * (c - 1) / c
                noise = var["ovr_pos"] / p**2 + var["ovr_neg"] / q**2
                candidates = [2**j for j in range(2, 7)]
                err = [_Z90 * math.sqrt(b / 4.0 * noise) + 0.1 / b for b in candidates]
                nb = candidates[int(min(range(len(err)), key=lambda i: err[i]))]
            # At least 4 fine bins per ECE bin, so the end bins are cut geometrically.
            nb = max(nb, 4 * m_ece)
            if nb % m_ece:
                nb = m_ece * math.ceil(nb / m_ece)
        sigma = math.sqrt(max(var.get("log_loss", var.get("brier", 1.0)), 1e-12))
        lb = (
            check_int_at_least(loss_bins, 1, name="loss_bins")
            if loss_bins is not None
            else _pow2((2.1 * m / sigma) ** (2 / 3), 4, 64)
        )
        return nb, m_ece, lb

    if not weighted:
        # Each part: the whole ε from its 1/K of the clients (parallel composition).
        var = variances(dict.fromkeys((s for s, _, _ in specs), eps))
        nb, m_ece, lb = resolution(var)
        shares = {name: 1.0 / n_parts for name, _, _ in specs}
        weights = None
        notes.append(
            "clients are split evenly over the released parts, each part with the whole ε; "
            "budget_shares are the fractions of the clients"
        )
    else:
        eps_part = {name: eps * cells / sum(x for *_, x in specs) for name, _, cells in specs}
        for _ in range(2):
            var = variances(eps_part)
            nb, m_ece, lb = resolution(var)
            top_bins = m_ece * TOP_LABEL_SUB_BINS
            # A_k m_k²: the part's share of its metric's variance at ε_k = 1.
            load: dict[str, float] = {}
            p, q = m / c, m * (c - 1) / c
            pred = _predicted_multiclass(
                kinds, var, c, m, nb, top_bins, lb, log_loss_bound, cap=False
            )
            for name, kind, _ in specs:
                if name == "one_vs_rest negatives":
                    v = nb / 4.0 * var["ovr_neg"] / q**2 / c
                elif name == "one_vs_rest positives":
                    v = nb / 4.0 * var["ovr_pos"] / p**2 / c
                else:
                    key = {
                        "confusion": "macro_recall",
                        "rank": "top_k_accuracy",
                        "top_label": "ece_top_label",
                        "log_loss": "log_loss",
                        "brier": "brier_score",
                    }[kind]
                    err = pred[key]
                    if kind in ("log_loss", "brier"):
                        hi = log_loss_bound if kind == "log_loss" else 2.0
                        err = max(err - hi / (2.0 * lb), 0.0) / hi
                    v = (err / _Z90) ** 2
                load[name] = v * eps_part[name] ** 2
            cube = {name: max(load[name], 1e-300) ** (1 / 3) for name in load}
            total = sum(cube.values())
            eps_part = {name: eps * cube[name] / total for name in cube}
        ints = {
            name: max(1, round(MULTICLASS_WEIGHT_TOTAL * eps_part[name] / eps / cells))
            for name, _, cells in specs
        }
        denom = sum(ints[name] * cells for name, _, cells in specs)
        shares = {name: ints[name] * cells / denom for name, _, cells in specs}
        var = variances({name: eps * shares[name] for name in shares})
        nb, m_ece, lb = resolution(var)
        weights = tuple(int(ints[name]) for name, _, _ in specs)
    top_bins = m_ece * TOP_LABEL_SUB_BINS
    predicted = _predicted_multiclass(
        kinds, var, c, m, nb, top_bins, lb, log_loss_bound, 0 if weighted else n_parts
    )
    notes.append(
        "predicted errors: 1.645 × the closed-form noise standard error (about 1 run in 10 "
        "above), worst case over the unknown rates, not fitted; the losses add their "
        "fixed-point bound"
    )
    return MulticlassPlan(
        model.describe(), regime, m_clients, m, c, eps, names, kinds, shares, weights,
        weighted and "one_vs_rest" in kinds, nb, m_ece, TOP_LABEL_SUB_BINS, lb, predicted, notes,
    )  # fmt: skip
