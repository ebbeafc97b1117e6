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
  LDP ε ∈ {1, 3, 8}; b = 2; 10 repetitions per setting (fresh sample of M
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
  setting); a plain maximum would be set by the single worst draw.
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

__all__ = ["ERROR_CONSTANTS", "Plan", "error_rates", "plan"]

#: C in "predicted error = C × rate", per (noise regime, metric); see the module docstring.
#: "exact" is secure aggregation, "central" noise on the aggregate (distributed or
#: central DP), "local" local DP; every privacy model declares its regime.
ERROR_CONSTANTS: dict[tuple[str, str], float] = {
    # FITTED-CONSTANTS-BEGIN (written by benchmarks/fit_planner_constants.py --write)
    ("exact", "threshold_metrics"): 0.911,
    ("exact", "auc"): 1.79,
    ("exact", "ece"): 1.0,  # not fitted
    ("exact", "roc_area_error"): 0.0178,
    ("central", "threshold_metrics"): 2.11,
    ("central", "auc"): 41.8,
    ("central", "ece"): 1.0,  # not fitted
    ("central", "roc_area_error"): 0.448,
    ("local", "threshold_metrics"): 1.95,
    ("local", "auc"): 1.78,
    ("local", "ece"): 1.0,  # not fitted
    ("local", "roc_area_error"): 0.614,
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
    err = {k: ERROR_CONSTANTS[(key, k)] * r for k, r in rates.items()}
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

    ``chosen.predicted_error[k] == ERROR_CONSTANTS[(chosen.regime, k)] * error_rates(chosen)[k]``.
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
