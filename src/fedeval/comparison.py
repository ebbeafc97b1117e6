"""Compare two models on the same examples from one private release.

``fe.compare(fed_a, fed_b, privacy)`` answers "is the challenger A better than
the reference B?" with a paired difference. Running two evaluations instead
spends the budget twice (or halves it for each) and loses the pairing: the
two models' errors on the same examples are strongly correlated, so the
difference of their metrics varies far less than two independent intervals
say (DeLong et al. 1988).

One release of a :class:`~fedeval.sketches.paired.PairedHierarchySketch`
holds both models' per-class hierarchies and a coarse (score A, score B) grid
per class. From it:

* :attr:`Comparison.a` and :attr:`Comparison.b` are full
  :class:`~fedeval.evaluation.Evaluation` objects (curves, AUC, AP, threshold
  metrics, their standard errors), at no extra ε;
* every difference carries a **privacy** standard error (the known noise of
  the two hierarchies, delta method; independent between the models unless
  clients were split over parts, when the split's shared sampling error is
  added, :func:`fedeval.metrics.paired.split_covariance`) and a **paired
  sampling** standard error (how far the difference on these examples may be
  from the population's: DeLong's covariance for the AUC, the influence-value
  covariance for the AP, McNemar's discordant counts at a threshold), read
  from the pair grid (:mod:`fedeval.metrics.paired`); the total is their
  root sum of squares.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.stats import chi2, norm

from fedeval.aggregation import Path, release
from fedeval.data import Federation, Scan
from fedeval.evaluation import Evaluation, resolve_parameters
from fedeval.exceptions import SmallDataWarning
from fedeval.metrics.dense import dense_leaf_weights, dense_se_parts, statistic_gradients
from fedeval.metrics.paired import joint_decisions, paired_covariance, split_covariance
from fedeval.privacy.ledger import BudgetLedger
from fedeval.privacy.models import PrivacyModel
from fedeval.privacy.receipt import Receipt, ReceiptAccessors, compose
from fedeval.privacy.sampling import uniform_seed
from fedeval.public_facts import Public, planning_size
from fedeval.randomness import RNGLike, as_generator
from fedeval.sketches.hierarchy import HierarchySpec, LevelBudget, layout_of
from fedeval.sketches.paired import PairedHierarchySketch, PairGrid
from fedeval.small_data import weak_classes
from fedeval.validation import check_int_at_least, check_scores

__all__ = [
    "PAIR_SHARE",
    "Comparison",
    "NonInferiority",
    "PairedDifference",
    "ThresholdDifference",
    "compare",
    "paired_federation",
]

PAIR_SHARE = 0.15
"""Target share of the budget for the pair grid (the rest is the two hierarchies').

The pair grid is read only through sums over all its cells, so a small share
keeps its noise small beside them; the hierarchies keep 85 %, about what two
evaluations at ε/2 each would get. Realised through the integer pair weight
w (:class:`~fedeval.sketches.paired.PairedHierarchySketch`): under pure-ε
noise w/(2h + w) ≈ PAIR_SHARE, under Gaussian-type noise w²/(2h + w²) ≈ it."""

#: Pair-grid bins per axis (at most), with noise and without.
PAIR_BINS_NOISY = 16
PAIR_BINS_EXACT = 64

_METRICS = ("precision", "recall", "fpr", "accuracy")


# ----------------------------------------------------------------- results
@dataclass(frozen=True)
class PairedDifference:
    """A difference A − B of one metric with its standard errors.

    Attributes
    ----------
    metric : str
    estimate : float
        A's estimate minus B's (each from its own hierarchy of the one release).
    a, b : float
        The two estimates.
    privacy_se : float
        From the release's noise only: covers the difference on *these*
        examples (0 under secure aggregation).
    sampling_se : float
        Paired sampling error: how far the difference on these examples may
        be from the population's (DeLong's covariance, McNemar's table).
    """

    metric: str
    estimate: float
    a: float
    b: float
    privacy_se: float
    sampling_se: float

    @property
    def se(self) -> float:
        """Total standard error, √(privacy² + sampling²): covers the population's difference."""
        return float(math.hypot(self.privacy_se, self.sampling_se))

    def interval(self, level: float = 0.95, *, privacy_only: bool = False) -> tuple[float, float]:
        """Two-sided normal interval at ``level`` (of the population's difference by default;
        of these examples' difference with ``privacy_only=True``)."""
        z = _z_two_sided(level)
        se = self.privacy_se if privacy_only else self.se
        return self.estimate - z * se, self.estimate + z * se

    @property
    def p_value(self) -> float:
        """Two-sided p-value of "no difference in the population" (normal, total SE)."""
        if not (self.se > 0 and math.isfinite(self.estimate)):
            return math.nan
        return float(2.0 * norm.sf(abs(self.estimate) / self.se))

    def as_dict(self) -> dict[str, Any]:
        lo, hi = self.interval()
        return {
            "metric": self.metric,
            "estimate": self.estimate,
            "a": self.a,
            "b": self.b,
            "se": self.se,
            "privacy_se": self.privacy_se,
            "sampling_se": self.sampling_se,
            "ci95": [lo, hi],
            "p_value": self.p_value,
        }


@dataclass(frozen=True)
class ThresholdDifference:
    """Differences A − B of the metrics of ``score >= threshold``, with paired standard errors.

    Attributes
    ----------
    threshold : float
    precision, recall, fpr, accuracy : PairedDifference
    discordant : dict
        Estimated discordant counts: ``"positives"`` (A predicts positive and B
        not, and the reverse), ``"negatives"`` (the same among negatives),
        ``"accuracy"`` (A right and B wrong, and the reverse). Noisy under DP.
    mcnemar_statistic, mcnemar_p_value : float
        McNemar's χ² (1 df) on the accuracy's discordant counts: the
        classical test of equal accuracy, exact in its assumptions only
        without noise (secure aggregation). Under DP use ``accuracy.p_value``,
        whose standard error includes the noise.
    """

    threshold: float
    precision: PairedDifference
    recall: PairedDifference
    fpr: PairedDifference
    accuracy: PairedDifference
    discordant: dict[str, tuple[float, float]]
    mcnemar_statistic: float
    mcnemar_p_value: float

    @property
    def tpr(self) -> PairedDifference:
        return self.recall

    def as_dict(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            **{m: getattr(self, m).as_dict() for m in _METRICS},
            "discordant": {k: list(v) for k, v in self.discordant.items()},
            "mcnemar_statistic": self.mcnemar_statistic,
            "mcnemar_p_value": self.mcnemar_p_value,
        }


@dataclass(frozen=True)
class NonInferiority:
    """Non-inferiority of A to B: H0 "A is worse than B by the margin or more".

    H0: θ_A − θ_B <= −margin against H1: θ_A − θ_B > −margin, by the normal
    test on the paired difference with its total standard error.

    Attributes
    ----------
    metric : str
    margin : float
    estimate, se : float
        The paired difference A − B and its total standard error.
    level : float
        Of the one-sided interval.
    lower : float
        One-sided lower confidence bound on θ_A − θ_B at ``level``.
    p_value : float
        P(Z >= (estimate + margin)/se) under H0 at its boundary.
    noninferior : bool
        ``lower > −margin`` (equivalently p < 1 − level).
    """

    metric: str
    margin: float
    estimate: float
    se: float
    level: float
    lower: float
    p_value: float
    noninferior: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "margin": self.margin,
            "estimate": self.estimate,
            "se": self.se,
            "level": self.level,
            "lower": self.lower,
            "p_value": self.p_value,
            "noninferior": self.noninferior,
        }


@dataclass(frozen=True)
class Comparison(ReceiptAccessors):
    """Two models on the same examples, from one release: their evaluations and paired differences.

    Attributes
    ----------
    a, b : Evaluation
        Model A's and model B's full evaluations, decoded from the same
        release (their receipts are that release's: reading both costs
        nothing more).
    pair : PairGrid
        The released per-class (A bin, B bin) histogram that carries the pairing.
    parameters : dict
        The evaluations' parameters plus ``pair_bins``, ``pair_weight`` and the
        budget shares (``"budget_split"``).

    Notes
    -----
    A is the challenger, B the reference: every difference is A − B.
    """

    a: Evaluation
    b: Evaluation
    pair: PairGrid
    parameters: dict[str, Any]
    count_receipt: Receipt | None = field(default=None, repr=False)

    @cached_property
    def receipt(self) -> Receipt:
        """The one release's receipt (composed with the noisy count it was planned from)."""
        if self.count_receipt is None:
            return self.a.tree.receipt
        return compose([self.count_receipt, self.a.tree.receipt], "paired comparison")

    # ------------------------------------------------------------ internals
    @cached_property
    def _totals(self) -> NDArray[np.float64]:
        """Class totals (negatives, positives): the mean of the two hierarchies' released ones."""
        return np.asarray(
            0.5 * (np.maximum(self.a.tree.totals(), 0.0) + np.maximum(self.b.tree.totals(), 0.0)),
            dtype=np.float64,
        )

    def _check_grid(self) -> None:
        if self.a.counts.bins.shape[1] % self.pair.n_bins:
            raise ValueError(
                f"the curves' level ({self.a.counts.bins.shape[1]} bins) does not split into the "
                f"pair grid's {self.pair.n_bins} bins"
            )

    def _dense(self, metric: str) -> PairedDifference:
        value_a = float(self.a.roc_auc if metric == "roc_auc" else self.a.average_precision)
        value_b = float(self.b.roc_auc if metric == "roc_auc" else self.b.average_precision)
        if not (self.a.defined and self.b.defined):
            return PairedDifference(metric, math.nan, value_a, value_b, math.nan, math.nan)
        self._check_grid()
        ca, cb = self.a.counts, self.b.counts
        _, grad_a = statistic_gradients(ca, metric)
        _, grad_b = statistic_gradients(cb, metric)
        var_a, var_b, cov = paired_covariance(
            self.pair, grad_a, ca.bins, grad_b, cb.bins, self._totals
        )
        sampling = _difference_variance(var_a, var_b, cov)
        split = 0.0
        if self.a.tree.part_fractions is not None and self.b.tree.part_fractions is not None:
            split = split_covariance(
                self.pair,
                self.a.tree,
                dense_leaf_weights(self.a.tree, ca, metric),
                self.b.tree,
                dense_leaf_weights(self.b.tree, cb, metric),
            )
        # The shrinkage biases of two similar models largely cancel in their difference:
        # the allowance is for the difference's bias, not the sum of the two.
        se_a, bias_a = dense_se_parts(self.a.tree, ca, metric)
        se_b, bias_b = dense_se_parts(self.b.tree, cb, metric)
        privacy = _difference_variance(se_a**2, se_b**2, split) + (bias_a - bias_b) ** 2
        return PairedDifference(
            metric,
            value_a - value_b,
            value_a,
            value_b,
            math.sqrt(privacy),
            math.sqrt(sampling),
        )

    # -------------------------------------------------------------- the AUC
    @cached_property
    def roc_auc(self) -> PairedDifference:
        """ROC AUC of A minus that of B, with its privacy and paired sampling standard errors."""
        return self._dense("roc_auc")

    @property
    def roc_auc_diff(self) -> float:
        """AUC_A − AUC_B (each the dense AUC of its hierarchy)."""
        return self.roc_auc.estimate

    @property
    def roc_auc_diff_se(self) -> float:
        """Total standard error of :attr:`roc_auc_diff`: √(privacy² + paired sampling²).

        The 95 % interval ±1.96 × this covers the population's difference.
        """
        return self.roc_auc.se

    @property
    def roc_auc_diff_privacy_se(self) -> float:
        """Standard error of :attr:`roc_auc_diff` from the privacy noise alone.

        The interval ±1.96 × this covers the difference on these very examples
        (the exact pooled ΔAUC); 0 under secure aggregation.
        """
        return self.roc_auc.privacy_se

    @property
    def roc_auc_diff_sampling_se(self) -> float:
        """Paired sampling standard error of :attr:`roc_auc_diff` (DeLong's covariance).

        Var = (S10_A + S10_B − 2 S10_AB)/P + (S01_A + S01_B − 2 S01_AB)/N, the
        placement values' variances from each model's hierarchy and their
        covariance from the pair grid (:mod:`fedeval.metrics.paired`), floored
        at (SE_A − SE_B)² (Cauchy–Schwarz).

        References
        ----------
        DeLong, DeLong and Clarke-Pearson, Biometrics 44(3), 1988, eqs. (3)–(5).
        """
        return self.roc_auc.sampling_se

    # --------------------------------------------------------------- the AP
    @cached_property
    def average_precision(self) -> PairedDifference:
        """Average precision of A minus that of B, with standard errors (influence values)."""
        return self._dense("average_precision")

    @property
    def average_precision_diff(self) -> float:
        """AP_A − AP_B."""
        return self.average_precision.estimate

    @property
    def average_precision_diff_se(self) -> float:
        """Total standard error of :attr:`average_precision_diff`."""
        return self.average_precision.se

    @property
    def average_precision_diff_privacy_se(self) -> float:
        return self.average_precision.privacy_se

    @property
    def average_precision_diff_sampling_se(self) -> float:
        return self.average_precision.sampling_se

    # --------------------------------------------------------- thresholds
    def at_threshold(self, threshold: float) -> ThresholdDifference:
        """Differences of precision, recall, FPR and accuracy of ``score >= threshold``.

        Each model's estimate and privacy SE is its evaluation's
        (:meth:`Evaluation.at_threshold`). The paired sampling SE comes from
        the per-class 2 × 2 table of the two models' decisions
        (:func:`fedeval.metrics.paired.joint_decisions`): the multinomial delta
        method on its cells, which for the recall, the FPR and the accuracy is
        McNemar's variance of a paired difference of proportions,
        [b + c − (b − c)²/n]/n², b and c the discordant counts.

        Raises
        ------
        ValueError
            A threshold outside the score domain, or not a single number.
        """
        t = np.asarray(threshold, dtype=np.float64)
        if t.ndim != 0:
            raise ValueError("at_threshold takes one threshold; call it once per threshold")
        ma, mb = self.a.at_threshold(float(t)), self.b.at_threshold(float(t))
        predicted_a = np.array([float(ma.fp), float(ma.tp)])
        predicted_b = np.array([float(mb.fp), float(mb.tp)])
        totals = self._totals
        joint = joint_decisions(
            self.pair, self.a.tree, self.b.tree, float(t), predicted_a, predicted_b, totals
        )
        m = np.clip(joint.cells, 0.0, None)
        grads = _threshold_gradients(m)
        assigned = self.a.tree.part_fractions is not None and self.b.tree.part_fractions is not None
        big_n = max(float(m.sum()), 2.0)
        diffs = {}
        for metric in _METRICS:
            ga, gb = grads[metric]
            sampling = joint.sampling_variance(ga - gb)
            split = 0.0
            if assigned:
                cross = joint.cross_sum(ga, gb)
                split = -(big_n * cross - float(np.sum(m * ga)) * float(np.sum(m * gb))) / (
                    big_n - 1.0
                )
            va = float(np.asarray(getattr(ma, f"{metric}_se"))) ** 2
            vb = float(np.asarray(getattr(mb, f"{metric}_se"))) ** 2
            value_a = float(np.asarray(getattr(ma, metric)))
            value_b = float(np.asarray(getattr(mb, metric)))
            diffs[metric] = PairedDifference(
                metric,
                value_a - value_b,
                value_a,
                value_b,
                math.sqrt(_difference_variance(va, vb, split)),
                math.sqrt(sampling),
            )
        right_wrong = float(m[1, 1, 0] + m[0, 0, 1])
        wrong_right = float(m[1, 0, 1] + m[0, 1, 0])
        discordant = right_wrong + wrong_right
        stat = (right_wrong - wrong_right) ** 2 / discordant if discordant > 0 else math.nan
        return ThresholdDifference(
            float(t),
            diffs["precision"],
            diffs["recall"],
            diffs["fpr"],
            diffs["accuracy"],
            {
                "positives": (float(m[1, 1, 0]), float(m[1, 0, 1])),
                "negatives": (float(m[0, 1, 0]), float(m[0, 0, 1])),
                "accuracy": (right_wrong, wrong_right),
            },
            float(stat),
            float(chi2.sf(stat, 1)) if math.isfinite(stat) else math.nan,
        )

    # ---------------------------------------------------------- inference
    def noninferiority(
        self, margin: float, *, metric: str = "roc_auc", level: float = 0.95
    ) -> NonInferiority:
        """Is A non-inferior to B by ``margin``? (one-sided test on the paired difference)

        Parameters
        ----------
        margin : float
            >= 0, on the metric's scale: A is called non-inferior when its
            metric is, with confidence ``level``, above B's minus the margin.
        metric : {"roc_auc", "average_precision"}
        level : float
            In (0, 1), of the one-sided lower bound.

        Returns
        -------
        NonInferiority

        Notes
        -----
        At the margin (θ_A − θ_B = −margin in the population) the test rejects
        with probability 1 − level when the total standard error is right;
        measured in ``benchmarks/bench_compare_coverage.py``.
        """
        m = float(margin)
        if not (math.isfinite(m) and m >= 0):
            raise ValueError(f"margin must be a finite number >= 0, got {margin!r}")
        if metric not in ("roc_auc", "average_precision"):
            raise ValueError(f"metric must be 'roc_auc' or 'average_precision', got {metric!r}")
        if not 0 < level < 1:
            raise ValueError(f"level must lie in (0, 1), got {level!r}")
        d = self.roc_auc if metric == "roc_auc" else self.average_precision
        se = d.se
        z = float(norm.ppf(level))
        if not (math.isfinite(d.estimate) and math.isfinite(se)):
            return NonInferiority(metric, m, d.estimate, se, level, math.nan, math.nan, False)
        lower = d.estimate - z * se
        p = float(norm.sf((d.estimate + m) / se)) if se > 0 else float(d.estimate <= -m)
        return NonInferiority(metric, m, d.estimate, se, level, lower, p, bool(lower > -m))

    def summary(self, thresholds: Any = (0.5,)) -> dict[str, Any]:
        """Every difference with its standard errors, for tables and JSON."""
        return {
            "roc_auc": self.roc_auc.as_dict(),
            "average_precision": self.average_precision.as_dict(),
            "at_threshold": [self.at_threshold(float(t)).as_dict() for t in thresholds],
            "epsilon_spent": self.epsilon_spent,
            "delta_spent": self.delta_spent,
            "privacy": self.a.tree.privacy,
            "guarantee": self.guarantee_line,
            "guarantee_details": self.guarantee_details,
            "receipt": self.receipt.as_dict(),
            "parameters": dict(self.parameters),
        }


def _difference_variance(var_a: float, var_b: float, cov: float) -> float:
    """Var(A − B) = var_a + var_b − 2 cov, floored at (sd_a − sd_b)² (Cauchy–Schwarz).

    The covariance is an estimate (from a noisy grid); the floor keeps the
    result a variance two such quantities can have.
    """
    if not (math.isfinite(var_a) and math.isfinite(var_b) and math.isfinite(cov)):
        return math.nan
    floor = (math.sqrt(max(var_a, 0.0)) - math.sqrt(max(var_b, 0.0))) ** 2
    return max(var_a + var_b - 2.0 * cov, floor)


def _threshold_gradients(
    m: NDArray[np.float64],
) -> dict[str, tuple[NDArray[np.float64], NDArray[np.float64]]]:
    """Influence of one example in cell (class c, A decides i, B decides j) on each metric of A and B."""
    c = np.arange(2)[:, None, None] * np.ones((2, 2, 2))
    i = np.arange(2)[None, :, None] * np.ones((2, 2, 2))
    j = np.arange(2)[None, None, :] * np.ones((2, 2, 2))
    n = max(float(m.sum()), 1.0)
    pos = max(float(m[1].sum()), 1.0)
    neg = max(float(m[0].sum()), 1.0)
    out: dict[str, tuple[NDArray[np.float64], NDArray[np.float64]]] = {}
    rec = [float(m[1, 1, :].sum()) / pos, float(m[1, :, 1].sum()) / pos]
    out["recall"] = ((c == 1) * (i - rec[0]) / pos, (c == 1) * (j - rec[1]) / pos)
    fpr = [float(m[0, 1, :].sum()) / neg, float(m[0, :, 1].sum()) / neg]
    out["fpr"] = ((c == 0) * (i - fpr[0]) / neg, (c == 0) * (j - fpr[1]) / neg)
    pred_a, pred_b = max(float(m[:, 1, :].sum()), 1.0), max(float(m[:, :, 1].sum()), 1.0)
    prec_a, prec_b = float(m[1, 1, :].sum()) / pred_a, float(m[1, :, 1].sum()) / pred_b
    out["precision"] = (i * (c - prec_a) / pred_a, j * (c - prec_b) / pred_b)
    right_a, right_b = (i == c).astype(float), (j == c).astype(float)
    acc_a, acc_b = float(np.sum(m * right_a)) / n, float(np.sum(m * right_b)) / n
    out["accuracy"] = ((right_a - acc_a) / n, (right_b - acc_b) / n)
    return out


def _z_two_sided(level: float) -> float:
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    return float(norm.ppf(0.5 + level / 2))


# ------------------------------------------------------------------- inputs
def _as_federation(data: Federation | Scan, name: str) -> Federation:
    if isinstance(data, Scan):
        return data.to_federation()
    if not isinstance(data, Federation):
        raise TypeError(f"{name} must be a Federation or a Scan, got {type(data).__name__}")
    return data


def paired_federation(fed_a: Federation | Scan, fed_b: Federation | Scan | Any) -> Federation:
    """One federation whose scores are the two models' (shape (n, 2)), after checking the pairing.

    Parameters
    ----------
    fed_a : Federation or Scan
        The examples scored by model A.
    fed_b : Federation, Scan or array-like
        The same examples, in the same order and on the same clients, scored
        by model B; or just B's scores of ``fed_a``'s examples (shape (n,)).

    Raises
    ------
    TypeError
        Not a Federation (or scores).
    ValueError
        Multiclass data; different numbers of examples, labels, clients, client
        order or score domains: the message says which, and where first.
    """
    a = _as_federation(fed_a, "fed_a")
    if a.kind != "binary":
        raise ValueError(f"compare needs binary tasks; fed_a is {a.kind} ({a.n_classes} classes)")
    if isinstance(fed_b, Federation | Scan):
        b = _as_federation(fed_b, "fed_b")
        if b.kind != "binary":
            raise ValueError(
                f"compare needs binary tasks; fed_b is {b.kind} ({b.n_classes} classes)"
            )
        _check_same_examples(a, b)
        scores_b = b.scores
    else:
        scores_b = np.asarray(fed_b)
        if scores_b.shape != (a.n_examples,):
            raise ValueError(
                f"model B's scores must have one entry per example of fed_a: got shape "
                f"{scores_b.shape}, expected ({a.n_examples},)"
            )
        scores_b = check_scores(scores_b, score_range=a.score_range)
    return replace(a, scores=np.column_stack((a.scores, scores_b)))


def _check_same_examples(a: Federation, b: Federation) -> None:
    hint = (
        "fed_a and fed_b must hold the same examples (same labels, same clients, same order), "
        "scored by the two models"
    )
    if a.n_examples != b.n_examples:
        raise ValueError(f"fed_a holds {a.n_examples} examples and fed_b {b.n_examples}: {hint}")
    if tuple(a.score_range) != tuple(b.score_range):
        raise ValueError(
            f"the score domains differ: {tuple(a.score_range)} for fed_a, "
            f"{tuple(b.score_range)} for fed_b; declare one domain for both models"
        )
    diff = np.flatnonzero(np.asarray(a.labels) != np.asarray(b.labels))
    if diff.size:
        raise ValueError(
            f"the labels differ at {diff.size} example(s) (first at row {int(diff[0])}): {hint}"
        )
    if a.n_clients != b.n_clients or not np.array_equal(a.client_ids, b.client_ids):
        raise ValueError(
            f"the clients differ: fed_a has {a.n_clients} client(s) and fed_b {b.n_clients}, "
            f"or their ids differ: {hint}"
        )
    moved = np.flatnonzero(a.client_index != b.client_index)
    if moved.size:
        raise ValueError(
            f"{moved.size} example(s) sit on different clients or in a different order (first "
            f"at row {int(moved[0])}): {hint}"
        )


def default_pair_bins(branching: int, height: int, *, exact: bool) -> int:
    """The pair grid's bins per axis: the finest level with at most 16 (noisy) or 64 (exact) bins."""
    limit = PAIR_BINS_EXACT if exact else PAIR_BINS_NOISY
    g = 1
    while g < height and branching ** (g + 1) <= limit:
        g += 1
    return int(branching**g)


def default_pair_weight(privacy: PrivacyModel, height: int, *, layout: str) -> int:
    """The integer weight giving the pair grid about :data:`PAIR_SHARE` of the budget.

    1 without noise, under local DP and with clients assigned to parts (the
    parts are then released with the whole budget each).
    """
    regime = getattr(privacy, "regime", None)
    if regime in ("exact", "local") or layout == "assign":
        return 1
    k = 2 * height
    ratio = PAIR_SHARE / (1.0 - PAIR_SHARE)
    gaussian = float(getattr(privacy, "delta", 0.0) or 0.0) > 0.0
    w = math.sqrt(k * ratio) if gaussian else k * ratio
    return max(1, round(w))


# ---------------------------------------------------------------- the call
def compare(
    fed_a: Federation | Scan,
    fed_b: Federation | Scan | Any,
    privacy: PrivacyModel,
    *,
    public: Public | None = None,
    n_examples: int | None = None,
    height: int | None = None,
    branching: int = 2,
    pair_bins: int | None = None,
    pair_weight: int | None = None,
    level_budget: LevelBudget = "split",
    path: Path = "fast",
    bootstrap_replicates: int = 200,
    rng: RNGLike = None,
    ledger: BudgetLedger | None = None,
) -> Comparison:
    """Compare model A with model B on the same examples, from one private release.

    Parameters
    ----------
    fed_a : Federation or Scan
        The examples scored by model A (the challenger). A Scan is read into memory.
    fed_b : Federation, Scan or array-like
        The same examples scored by model B (the reference): same labels,
        clients and order (checked), or B's scores of ``fed_a``'s examples.
    privacy : SecureAggregation, DistributedDP, CentralDP or LocalDP
    public : Public, optional
        Facts declared public (:mod:`fedeval.public_facts`).
    n_examples : int, optional
        Shorthand for ``public=Public(n_examples=...)``.
    height : int, optional
        Of both hierarchies; planned (for half the budget each) unless given.
    branching : int
    pair_bins : int, optional
        Bins per axis of the pair grid, b^g for a level g of the hierarchy;
        default the finest level with at most 16 bins under noise (64 without).
    pair_weight : int, optional
        The pair grid's integer weight (its budget share); default about
        :data:`PAIR_SHARE` of the budget (1 under local DP, level assignment
        and secure aggregation).
    level_budget : {"split", "assign"}
        Distributed DP: every client reports every part (the budget split over
        them), or each client one part (parallel composition).
    path : {"fast", "faithful"}
    bootstrap_replicates : int
        For the bootstrap standard errors of the evaluations (not used by
        the differences).
    rng : int, Generator or None
    ledger : BudgetLedger, optional

    Returns
    -------
    Comparison

    Raises
    ------
    ValueError
        The two federations do not hold the same examples (the message says
        how they differ), bad parameters, or without differential privacy a
        class with no examples.
    TypeError
        Not Federations, or a privacy model the sketch cannot be released
        under (label DP, user-level DP).
    BudgetExceededError
        The ledger cannot afford the release; nothing is released.

    Warns
    -----
    SmallDataWarning
        Under DP, when a released class count of either model is not clearly
        above its noise; the message uses released values only.

    Notes
    -----
    Privacy: exactly one release of a
    :class:`~fedeval.sketches.paired.PairedHierarchySketch` under ``privacy``
    (after a noisy count of the examples with a small share of ε when the
    height must be planned and no size is public, as in
    :func:`fedeval.evaluate`); both evaluations, every difference and every
    standard error are post-processing. Budget split (every client reporting
    every part): one example changes one node in each of the 2h levels and w
    in one pair cell, so each level gets ε/(2h + w) and the pair grid
    w·ε/(2h + w): the two hierarchies keep 2h/(2h + w) of ε (85 % by default),
    about what two evaluations at ε/2 each would have, and the pairing they
    cannot provide costs the rest. The split is in the receipt, one row per part.

    Why the pairing: two evaluations at ε/2 give Var(Δ) = Var_A + Var_B; the
    paired release subtracts 2·Cov_AB, DeLong's covariance of the two AUCs on
    the same examples, which for two correlated models is most of it. Under
    local DP (and level assignment) each client reports one part, so model A
    and model B are estimated from different clients: the pair grid still
    gives the paired sampling covariance, but the split's sampling error of
    the two estimates is negatively correlated and adds the same amount to
    the privacy part (:func:`fedeval.metrics.paired.split_covariance`).

    References
    ----------
    DeLong, DeLong and Clarke-Pearson, Biometrics 44(3), 1988 (paired AUC
    covariance, eqs. (3)–(5)); McNemar, Psychometrika 12(2), 1947;
    cormode-markov-2023-federated-calibration-evaluation §2.3, §5 (the
    hierarchies and H_B).
    """
    joint = paired_federation(fed_a, fed_b)
    check_int_at_least(bootstrap_replicates, 2, name="bootstrap_replicates")
    private = getattr(privacy, "regime", None) != "exact"
    if not private:
        n_pos = int(np.sum(joint.labels))
        if n_pos == 0 or n_pos == joint.n_examples:
            only = "negative" if n_pos == 0 else "positive"
            raise ValueError(
                f"all {joint.n_examples} examples are {only}: ROC AUC and curves are undefined"
            )
    pub = public or Public()
    if n_examples is not None:
        if pub.n_examples is not None and pub.n_examples != n_examples:
            raise ValueError("n_examples disagrees with public.n_examples; declare one")
        pub = Public(pub.n_clients, n_examples, pub.score_range)
    pub.check_domain(joint)
    layout = layout_of(level_budget)
    if pair_bins is not None:
        check_int_at_least(pair_bins, 2, name="pair_bins")
    if pair_weight is not None:
        check_int_at_least(pair_weight, 1, name="pair_weight")
        assigned = layout == "assign" or getattr(privacy, "regime", None) == "local"
        if assigned and pair_weight != 1:
            raise ValueError(
                "pair_weight must be 1 when clients are assigned to parts (local DP or "
                f"level_budget='assign'), got {pair_weight}"
            )
    gen = as_generator(rng)
    size = planning_size(
        joint, privacy, public=pub, needed=height is None, path=path, rng=gen, ledger=ledger
    )
    # Each model's hierarchy gets about half of the budget (every client reporting
    # every part), or half of the clients with the whole budget (clients assigned to
    # parts, local DP): plan it for that.
    halved_clients = layout == "assign" or getattr(privacy, "regime", None) == "local"
    chosen, params = resolve_parameters(
        size.remaining if halved_clients else size.remaining.scaled(0.5),
        n_clients=size.n_clients,
        n_examples=max(1, size.n_examples // 2) if halved_clients else size.n_examples,
        height=height,
        branching=branching,
        level_budget=level_budget,
        path=path,
    )
    for key in ("n_clients", "n_examples", "public_inputs"):
        params.pop(key, None)
    params.update(size.parameters())
    h = int(params["height"])
    spec = HierarchySpec(h, branching, joint.score_range, 2)
    g = default_pair_bins(branching, h, exact=not private) if pair_bins is None else pair_bins
    w = (
        default_pair_weight(size.remaining, h, layout=layout)
        if pair_weight is None
        else int(pair_weight)
    )
    sketch = PairedHierarchySketch(spec, g, w)
    rel = release(joint, sketch, size.remaining, layout=layout, path=path, rng=gen, ledger=ledger)
    decoded = rel.decode()
    k = 2 * h
    params.update(
        {
            "pair_bins": g,
            "pair_weight": w,
            "planned": {**params["planned"], "pair_bins": pair_bins is None},
            "budget_split": (
                {"each level": 1.0 / (k + w), "pair grid": w / (k + w)}
                if not halved_clients and private
                else {"each part": 1.0}
            ),
        }
    )
    a = Evaluation(
        decoded.a.consistent(), params, chosen, bootstrap_replicates, uniform_seed(gen),
        size.receipt,
    )  # fmt: skip
    b = Evaluation(
        decoded.b.consistent(), params, chosen, bootstrap_replicates, uniform_seed(gen),
        size.receipt,
    )  # fmt: skip
    out = Comparison(a, b, decoded.pair, params, size.receipt)
    if private:
        weak = [
            f"model {name}: {msg}"
            for name, ev in (("A", a), ("B", b))
            if (msg := weak_classes(ev.tree)) is not None
        ]
        if weak:
            warnings.warn(
                "released class count not clearly above the privacy noise (3 standard errors): "
                + "; ".join(weak)
                + ". The differences are NaN where a released class total is not positive",
                SmallDataWarning,
                stacklevel=2,
            )
    return out
