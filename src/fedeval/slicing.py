"""Evaluate every slice of the examples from one release (parallel composition).

``fe.evaluate(fed, privacy, slices=slice_of_example, slice_values=[...])``
answers "is the model equally good for every group?". Running one evaluation
per group spends the budget k times unless one knows that parallel
composition applies; here it is one release of a
:class:`~fedeval.sketches.sliced.SlicedHierarchySketch`: per slice, the
hierarchy an evaluation releases. Each example is in exactly one slice, so the
release costs one evaluation's ε (the sketch's sensitivity says why, for
every unit).

Slice values are public by declaration: only the declared values are
published; rows with any other value (or none) go to one catch-all slice,
"other", whose name says nothing about the values in it. The structure of the
result (its slices, parameters, receipt) is a function of the declaration and
the noisy release only.

From the one release: a full :class:`~fedeval.evaluation.Evaluation` per slice
(``sev["EU"]``), per-slice intervals that are simultaneous over the slices
(Bonferroni), the worst slice and the gap between the best and the worst
with intervals that account for picking them, and the fairness summaries of
fairlearn's ``MetricFrame`` convention: TPR gap (equal opportunity), FPR gap,
positive-rate gap (demographic parity) at a threshold, and the calibration
error per slice.
"""

from __future__ import annotations

import math
import sys
import warnings
from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fedeval.aggregation import Path, release
from fedeval.data import Federation, Scan
from fedeval.evaluation import Evaluation, resolve_parameters
from fedeval.exceptions import SmallDataWarning
from fedeval.metrics.binned_calibration import binned_calibration_error
from fedeval.metrics.confusion import THRESHOLD_METRICS, ConfusionCounts, sampling_variance
from fedeval.metrics.dense import statistic_gradients
from fedeval.metrics.paired import influence_variance
from fedeval.planning import plan
from fedeval.privacy.ledger import BudgetLedger
from fedeval.privacy.models import PrivacyModel
from fedeval.privacy.receipt import Receipt, ReceiptAccessors, compose
from fedeval.privacy.sampling import uniform_seed
from fedeval.public_facts import Public, planning_size
from fedeval.randomness import RNGLike, as_generator
from fedeval.sketches.hierarchy import HierarchySpec, LevelBudget, layout_of
from fedeval.sketches.sliced import SlicedHierarchySketch, slice_labels
from fedeval.small_data import weak_classes
from fedeval.validation import check_int_at_least

__all__ = [
    "SliceGap",
    "SliceValue",
    "SlicedEvaluation",
    "WorstSlice",
    "evaluate_slices",
    "slice_index",
]

#: Metrics a slice can be compared on, and whether a larger value is better.
HIGHER_IS_BETTER = {
    "roc_auc": True,
    "average_precision": True,
    "tpr": True,
    **{name: m.higher_is_better for name, m in THRESHOLD_METRICS.items()},
    "calibration_error": False,
}
_THRESHOLD_METRICS = ("tpr", *THRESHOLD_METRICS)


# ----------------------------------------------------------------- results
@dataclass(frozen=True)
class SliceValue:
    """One slice's value of a metric with its standard errors.

    Attributes
    ----------
    estimate : float
    privacy_se : float
        From the release's noise (covers the slice's exact pooled value).
    sampling_se : float
        How far the slice's value on these examples may be from its
        population's (DeLong for the AUC, influence values for the AP,
        binomial for rates).
    """

    estimate: float
    privacy_se: float
    sampling_se: float

    @property
    def se(self) -> float:
        """Total: √(privacy² + sampling²), covering the slice's population value."""
        return float(math.hypot(self.privacy_se, self.sampling_se))

    def interval(self, z: float) -> tuple[float, float]:
        return self.estimate - z * self.se, self.estimate + z * self.se


@dataclass(frozen=True)
class WorstSlice:
    """The worst slice for a metric, with an interval for the worst slice's true value.

    If every slice's interval covers its value (simultaneous intervals, at
    least ``level`` jointly), the true worst value lies in
    [min of the lower ends, min of the upper ends] (for a metric where
    smaller is worse; the mirror image otherwise), whichever slice is truly
    the worst: the interval accounts for picking it.

    Attributes
    ----------
    metric, level : str, float
    slice : hashable
        The slice with the worst estimate.
    estimate, lower, upper : float
    intervals : dict
        Every compared slice's simultaneous interval.
    undefined : tuple
        Slices left out because their value is NaN (too few examples).
    """

    metric: str
    level: float
    slice: Hashable
    estimate: float
    lower: float
    upper: float
    intervals: dict[Hashable, tuple[float, float]]
    undefined: tuple[Hashable, ...] = ()


@dataclass(frozen=True)
class SliceGap:
    """Best slice minus worst slice (absolute gap) with a simultaneous interval.

    The interval [max(0, max lower − min upper), max upper − min lower] holds
    with at least ``level`` probability: it contains the true gap whenever
    every slice's simultaneous interval covers its value.
    """

    metric: str
    level: float
    estimate: float
    lower: float
    upper: float
    best: Hashable
    worst: Hashable
    intervals: dict[Hashable, tuple[float, float]]
    undefined: tuple[Hashable, ...] = ()


@dataclass(frozen=True)
class SlicedEvaluation(ReceiptAccessors):
    """One Evaluation per declared slice value (and the "other" slice), from one release.

    Attributes
    ----------
    evaluations : dict
        Declared value → :class:`~fedeval.evaluation.Evaluation`, in the
        declared order, then the catch-all slice (key :attr:`other`).
    other : str
        The catch-all slice's key ("other", unless that is a declared value).
    parameters : dict
        Shared by every slice's evaluation.
    """

    evaluations: dict[Hashable, Evaluation]
    other: str
    parameters: dict[str, Any]
    count_receipt: Receipt | None = field(default=None, repr=False)

    # ---------------------------------------------------------------- mapping
    @cached_property
    def receipt(self) -> Receipt:
        """The one release's receipt (composed with the noisy count it was planned from)."""
        first = next(iter(self.evaluations.values()))
        if self.count_receipt is None:
            return first.tree.receipt
        return compose([self.count_receipt, first.tree.receipt], "sliced evaluation")

    @property
    def declared(self) -> tuple[Hashable, ...]:
        """The declared slice values, in order."""
        return tuple(k for k in self.evaluations if k != self.other)

    def __getitem__(self, value: Hashable) -> Evaluation:
        try:
            return self.evaluations[value]
        except KeyError:
            raise KeyError(
                f"{value!r} is not a declared slice value; declared: {list(self.declared)} "
                f"(undeclared values are in {self.other!r})"
            ) from None

    def __iter__(self) -> Iterator[Hashable]:
        return iter(self.evaluations)

    def __len__(self) -> int:
        return len(self.evaluations)

    def keys(self) -> list[Hashable]:
        return list(self.evaluations)

    def items(self) -> list[tuple[Hashable, Evaluation]]:
        """(value, Evaluation) for every declared value, then the "other" slice."""
        return list(self.evaluations.items())

    # ----------------------------------------------------------- per slice
    def values(
        self, metric: str, *, threshold: float | None = None, include_other: bool = False
    ) -> dict[Hashable, SliceValue]:
        """Every slice's value of ``metric`` with its privacy and sampling standard errors.

        Parameters
        ----------
        metric : str
            "roc_auc", "average_precision", "calibration_error", or, at a
            ``threshold``, "recall" (= "tpr"), "fpr", "precision", "accuracy",
            "positive_rate".
        threshold : float, optional
            Required for the threshold metrics.
        include_other : bool
            Also the catch-all slice.
        """
        _check_metric(metric, threshold)
        keys = self.keys() if include_other else list(self.declared)
        return {k: _slice_value(self.evaluations[k], metric, threshold) for k in keys}

    def intervals(
        self,
        metric: str,
        *,
        threshold: float | None = None,
        level: float = 0.95,
        simultaneous: bool = True,
        include_other: bool = False,
    ) -> dict[Hashable, tuple[float, float]]:
        """Every slice's interval for ``metric``: simultaneous over the slices (Bonferroni) by default."""
        vals = self.values(metric, threshold=threshold, include_other=include_other)
        z = _z(level, len(vals) if simultaneous else 1)
        return {k: v.interval(z) for k, v in vals.items()}

    def worst(
        self,
        metric: str = "roc_auc",
        *,
        threshold: float | None = None,
        level: float = 0.95,
        include_other: bool = False,
    ) -> WorstSlice:
        """The worst slice for ``metric`` and an interval for the true worst slice's value.

        See :class:`WorstSlice`. NaN estimates (slices too small for the
        metric) are left out and listed in ``undefined``.
        """
        vals = self.values(metric, threshold=threshold, include_other=include_other)
        defined = {k: v for k, v in vals.items() if math.isfinite(v.estimate)}
        undefined = tuple(k for k in vals if k not in defined)
        if not defined:
            return WorstSlice(metric, level, None, math.nan, math.nan, math.nan, {}, undefined)
        z = _z(level, len(defined))
        iv = {k: v.interval(z) for k, v in defined.items()}
        higher = HIGHER_IS_BETTER[metric]
        pick = min if higher else max
        key = pick(defined, key=lambda k: defined[k].estimate)
        lows = [lo for lo, _ in iv.values()]
        highs = [hi for _, hi in iv.values()]
        lower, upper = (min(lows), min(highs)) if higher else (max(lows), max(highs))
        return WorstSlice(metric, level, key, defined[key].estimate, lower, upper, iv, undefined)

    def gap(
        self,
        metric: str = "roc_auc",
        *,
        threshold: float | None = None,
        level: float = 0.95,
        include_other: bool = False,
    ) -> SliceGap:
        """Largest minus smallest slice value of ``metric``, with a simultaneous interval.

        See :class:`SliceGap`; ``best`` and ``worst`` name the slices (by the
        metric's direction).
        """
        vals = self.values(metric, threshold=threshold, include_other=include_other)
        defined = {k: v for k, v in vals.items() if math.isfinite(v.estimate)}
        undefined = tuple(k for k in vals if k not in defined)
        if len(defined) < 2:
            return SliceGap(metric, level, math.nan, math.nan, math.nan, None, None, {}, undefined)
        z = _z(level, len(defined))
        iv = {k: v.interval(z) for k, v in defined.items()}
        hi_key = max(defined, key=lambda k: defined[k].estimate)
        lo_key = min(defined, key=lambda k: defined[k].estimate)
        estimate = defined[hi_key].estimate - defined[lo_key].estimate
        lower = max(0.0, max(lo for lo, _ in iv.values()) - min(hi for _, hi in iv.values()))
        upper = max(hi for _, hi in iv.values()) - min(lo for lo, _ in iv.values())
        best, worst = (hi_key, lo_key) if HIGHER_IS_BETTER[metric] else (lo_key, hi_key)
        return SliceGap(metric, level, estimate, lower, upper, best, worst, iv, undefined)

    # ------------------------------------------------------------- fairness
    def tpr_gap(self, threshold: float, *, level: float = 0.95) -> SliceGap:
        """Equal opportunity: the largest difference of true-positive rates between slices."""
        return self.gap("recall", threshold=threshold, level=level)

    def fpr_gap(self, threshold: float, *, level: float = 0.95) -> SliceGap:
        """The largest difference of false-positive rates between slices."""
        return self.gap("fpr", threshold=threshold, level=level)

    def positive_rate_gap(self, threshold: float, *, level: float = 0.95) -> SliceGap:
        """Demographic parity: the largest difference of predicted-positive rates between slices."""
        return self.gap("positive_rate", threshold=threshold, level=level)

    def calibration_error(
        self, *, level: float = 0.95, include_other: bool = False
    ) -> dict[Hashable, tuple[float, float, float]]:
        """Binned ECE of every slice, (estimate, lower, upper), simultaneous intervals.

        :func:`fedeval.metrics.binned_calibration.binned_calibration_error` of
        each slice's hierarchy (lower ends clipped at 0).
        """
        iv = self.intervals("calibration_error", level=level, include_other=include_other)
        vals = self.values("calibration_error", include_other=include_other)
        return {k: (vals[k].estimate, max(iv[k][0], 0.0), iv[k][1]) for k in vals}

    def summary(self, *, threshold: float = 0.5) -> dict[str, Any]:
        """Per-slice metrics with standard errors and simultaneous intervals, the gaps, the receipt."""
        rows = {}
        for k, ev in self.items():
            row: dict[str, Any] = {}
            for metric in ("roc_auc", "average_precision", "calibration_error"):
                v = _slice_value(ev, metric, None)
                row[metric] = {
                    "estimate": v.estimate,
                    "privacy_se": v.privacy_se,
                    "sampling_se": v.sampling_se,
                    "se": v.se,
                }
            for metric in ("recall", "fpr", "positive_rate"):
                v = _slice_value(ev, metric, threshold)
                row[f"{metric}@{threshold:g}"] = {"estimate": v.estimate, "se": v.se}
            row["n_positives_released"] = ev.n_positives
            row["n_negatives_released"] = ev.n_negatives
            rows[str(k)] = row
        gaps = {
            "roc_auc": self.gap("roc_auc"),
            f"tpr@{threshold:g}": self.tpr_gap(threshold),
            f"fpr@{threshold:g}": self.fpr_gap(threshold),
            f"positive_rate@{threshold:g}": self.positive_rate_gap(threshold),
        }
        worst = self.worst("roc_auc")
        return {
            "slices": rows,
            "declared": [str(k) for k in self.declared],
            "other": self.other,
            "gaps": {
                k: {
                    "estimate": g.estimate,
                    "lower": g.lower,
                    "upper": g.upper,
                    "best": None if g.best is None else str(g.best),
                    "worst": None if g.worst is None else str(g.worst),
                }
                for k, g in gaps.items()
            },
            "worst_roc_auc": {
                "slice": None if worst.slice is None else str(worst.slice),
                "estimate": worst.estimate,
                "lower": worst.lower,
                "upper": worst.upper,
            },
            "epsilon_spent": self.epsilon_spent,
            "delta_spent": self.delta_spent,
            "receipt": self.receipt.as_dict(),
            "parameters": dict(self.parameters),
        }


def _check_metric(metric: str, threshold: float | None) -> None:
    if metric not in HIGHER_IS_BETTER:
        raise ValueError(f"metric must be one of {sorted(HIGHER_IS_BETTER)}, got {metric!r}")
    if metric in _THRESHOLD_METRICS and threshold is None:
        raise ValueError(f"{metric} is a metric at a threshold: pass threshold=")
    if metric not in _THRESHOLD_METRICS and threshold is not None:
        raise ValueError(f"{metric} takes no threshold")


def _z(level: float, k: int) -> float:
    """Two-sided normal quantile for ``k`` simultaneous intervals at joint ``level`` (Bonferroni)."""
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    from scipy.stats import norm  # on first use: scipy.stats costs ~0.3 s to import

    return float(norm.ppf(1.0 - (1.0 - level) / (2.0 * max(k, 1))))


def _slice_value(ev: Evaluation, metric: str, threshold: float | None) -> SliceValue:
    totals = np.maximum(ev.tree.totals(), 0.0)
    if metric == "roc_auc":
        return SliceValue(ev.roc_auc, ev.roc_auc_se, ev.roc_auc_sampling_se)
    if metric == "average_precision":
        if not ev.defined:
            return SliceValue(math.nan, math.nan, math.nan)
        _, grad = statistic_gradients(ev.counts, "average_precision")
        sampling = math.sqrt(influence_variance(grad, ev.counts.bins, ev.counts.totals))
        return SliceValue(ev.average_precision, ev.average_precision_se, sampling)
    if metric == "calibration_error":
        ce = binned_calibration_error(ev)
        return SliceValue(ce.estimate, ce.privacy_se, ce.sampling_se)
    assert threshold is not None
    m = ev.at_threshold(float(threshold))
    name = "recall" if metric == "tpr" else metric
    value = float(np.asarray(getattr(m, name)))
    se = float(np.asarray(getattr(m, f"{name}_se")))
    tp, fp = float(np.asarray(m.tp)), float(np.asarray(m.fp))
    counts = ConfusionCounts(*(np.array([v]) for v in (tp, fp, totals[1] - tp, totals[0] - fp)))
    var = float(sampling_variance(THRESHOLD_METRICS[name], counts)[0])
    sampling = math.sqrt(max(var, 0.0)) if math.isfinite(value) and math.isfinite(var) else math.nan
    return SliceValue(value, se, sampling)


# ------------------------------------------------------------------- inputs
def _other_name(declared: Sequence[Hashable]) -> str:
    for name in ("other", "(other)", "(undeclared)"):
        if name not in declared:
            return name
    return f"(other: none of the {len(declared)} declared values)"


def _is_pandas_index(values: Any) -> bool:
    """Whether ``values`` is a pandas Index (a user holding one has imported pandas already)."""
    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(values, pd.Index)


def _declared(slice_values: Any) -> list[Hashable]:
    if slice_values is None:
        raise ValueError(
            "slice_values must declare the public slice values (rows with any other value "
            "go to the 'other' slice); got None"
        )
    if isinstance(slice_values, str | bytes) or not (
        isinstance(slice_values, Sequence | np.ndarray) or _is_pandas_index(slice_values)
    ):
        raise TypeError(
            "slice_values must be a sequence of the declared values, e.g. ['EU', 'US'], got "
            f"{type(slice_values).__name__}"
        )
    values = list(np.asarray(slice_values, dtype=object).tolist())
    if not values:
        raise ValueError("slice_values is empty: declare at least one public slice value")
    seen: set[Any] = set()
    for v in values:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            raise ValueError("slice_values contains a missing value (None or NaN)")
        if not isinstance(v, Hashable):
            raise TypeError(f"slice values must be hashable, got {type(v).__name__}")
        if v in seen:
            raise ValueError(f"slice value {v!r} is declared twice")
        seen.add(v)
    return values


def slice_index(
    fed: Federation, slices: Any, slice_values: Any
) -> tuple[NDArray[np.signedinteger[Any]], list[Hashable], str]:
    """Every example's slice: the position of its value among the declared ones, else "other".

    Parameters
    ----------
    fed : Federation
    slices : array-like of shape (n_examples,), or mapping
        Each example's slice value, or a mapping client id → value (a
        per-client cohort: every example of a client is in its slice; clients
        not in the mapping are "other").
    slice_values : sequence
        The declared public values.

    Returns
    -------
    index : ndarray of int, shape (n_examples,)
        0..k−1 for the declared values, k for "other" (int16 up to 16,383 values).
    declared : list
    other : str
        The catch-all slice's name.

    Raises
    ------
    ValueError, TypeError
        No or duplicate declared values, or slices of the wrong length.
    """
    declared = _declared(slice_values)
    k = len(declared)
    other = _other_name(declared)
    if isinstance(slices, Mapping):
        lookup = {v: i for i, v in enumerate(declared)}
        per_client = np.array(
            [lookup.get(slices.get(cid, None), k) if slices.get(cid, None) is not None else k
             for cid in fed.client_ids.tolist()],
            dtype=_code_type(k),
        )  # fmt: skip
        return per_client[fed.client_index], declared, other
    arr = np.asarray(slices)
    if arr.ndim != 1 or arr.shape[0] != fed.n_examples:
        raise ValueError(
            f"slices must give one value per example: got shape {arr.shape}, expected "
            f"({fed.n_examples},); for per-client cohorts pass a mapping client id → value"
        )
    return _codes(arr, declared), declared, other


def _codes(arr: NDArray[Any], declared: list[Hashable]) -> NDArray[np.signedinteger[Any]]:
    """Positions of the values among the declared ones (k for any other value)."""
    k = len(declared)
    ints = [v for v in declared if isinstance(v, int | np.integer) and not isinstance(v, bool)]
    if arr.dtype.kind in "iu" and len(ints) == k and arr.size:
        lo, hi = int(arr.min()), int(arr.max())
        if lo >= 0 and hi < 4 * arr.size + 1024:
            # Small non-negative integers: one table lookup per example (no hashing).
            table = np.full(hi + 1, k, dtype=_code_type(k))
            for i, v in enumerate(declared):
                if isinstance(v, int | np.integer) and 0 <= int(v) <= hi:
                    table[int(v)] = i
            return table[arr]
    import pandas as pd  # hashing of arbitrary values, only on this path

    codes = pd.Index(declared, dtype=object).get_indexer(pd.Index(arr, dtype=object))
    out = np.asarray(codes).astype(_code_type(k))
    out[out < 0] = k
    return out


def _code_type(k: int) -> type[np.signedinteger[Any]]:
    """The narrowest signed integer type for slice codes 0..k."""
    return np.int16 if k < 2**14 else np.int32


# ---------------------------------------------------------------- the call
def evaluate_slices(
    fed: Federation | Scan,
    privacy: PrivacyModel,
    *,
    slices: Any,
    slice_values: Any,
    public: Public | None = None,
    n_examples: int | None = None,
    height: int | None = None,
    branching: int = 2,
    level_budget: LevelBudget = "split",
    path: Path = "fast",
    bootstrap_replicates: int = 200,
    rng: RNGLike = None,
    ledger: BudgetLedger | None = None,
    **options: Any,
) -> SlicedEvaluation:
    """Evaluate every declared slice of the examples from one private release.

    Called by :func:`fedeval.evaluate` when ``slices`` is given.

    Parameters
    ----------
    fed : Federation or Scan
        A binary task (a Scan is read into memory).
    privacy : SecureAggregation, DistributedDP, CentralDP or LocalDP
    slices : array-like of shape (n_examples,), or mapping client id → value
        Each example's slice value, or a per-client cohort (:func:`slice_index`).
    slice_values : sequence
        The public slice values. Only these are published; any other value
        (and a missing one) goes to the "other" slice.
    public, n_examples, height, branching, level_budget, path, bootstrap_replicates, rng, ledger
        As in :func:`fedeval.evaluate`. One height for every slice, planned
        for the average declared slice (the planning size over the number of
        declared values) and at most log_b(k + 1) levels below one
        evaluation's planned height, so that the k + 1 slices' vector (what
        every client sends, and the server decodes) is no longer than one
        evaluation's.
    **options
        The curve options of :func:`fedeval.evaluate` (``interpolation``,
        ``pr_strategy``, ``auc_buckets``, ``curve``, ``level``,
        ``standard_errors``, ``n_buckets``, ``n_quantiles``), the same for
        every slice.

    Returns
    -------
    SlicedEvaluation

    Raises
    ------
    ValueError, TypeError
        Multiclass data; undeclared, duplicate or empty slice values; slices
        of the wrong length; bad parameters.
    BudgetExceededError
        The ledger cannot afford the release; nothing is released.

    Warns
    -----
    SmallDataWarning
        Slices whose released class count is not clearly above the noise
        (their metrics are NaN or unreliable); released values only.

    Notes
    -----
    Privacy: exactly one release of a
    :class:`~fedeval.sketches.sliced.SlicedHierarchySketch` under ``privacy``
    (after a noisy count of the examples when the height must be planned and
    no size is public, as in :func:`fedeval.evaluate`). Parallel
    composition: each example is in exactly one slice and changes only its
    slice's hierarchy, so the sensitivity over all slices is that of one
    hierarchy and the spend is the model's ε, not k·ε. Under client-level
    units the sensitivity counts every slice a bounded client can touch: a
    client of at most B examples adds one node per level per example,
    L1 = B·h over all slices however its examples spread. Published: the
    declared values and the noisy release; never an undeclared value, and no
    exact count of any slice under DP.

    References
    ----------
    McSherry, "Privacy integrated queries", SIGMOD 2009 (parallel
    composition); fairlearn ``MetricFrame`` (per-group metrics and their
    differences); cormode-markov-2023-federated-calibration-evaluation §2.3.
    """
    if isinstance(fed, Scan):
        fed = fed.to_federation()
    if not isinstance(fed, Federation):
        raise TypeError(f"fed must be a Federation or a Scan, got {type(fed).__name__}")
    if fed.kind != "binary":
        raise ValueError(
            f"sliced evaluation needs a binary task; this Federation is {fed.kind} "
            f"({fed.n_classes} classes)"
        )
    check_int_at_least(bootstrap_replicates, 2, name="bootstrap_replicates")
    index, declared, other = slice_index(fed, slices, slice_values)
    n_slices = len(declared) + 1
    pub = public or Public()
    if n_examples is not None:
        if pub.n_examples is not None and pub.n_examples != n_examples:
            raise ValueError("n_examples disagrees with public.n_examples; declare one")
        pub = Public(pub.n_clients, n_examples, pub.score_range)
    pub.check_domain(fed)
    layout = layout_of(level_budget)
    private = getattr(privacy, "regime", None) != "exact"
    gen = as_generator(rng)
    planned = (
        height is None
        or (options.get("curve") == "quantile" and options.get("n_quantiles") is None)
        or (options.get("auc_buckets", "dense") != "dense" and options.get("n_buckets") is None)
    )
    size = planning_size(
        fed, privacy, public=pub, needed=planned, path=path, rng=gen, ledger=ledger
    )
    # One height for every slice: planned for the average declared slice, and no
    # deeper than keeps the whole sliced vector (what every client sends) as long
    # as one evaluation's of the same data.
    per_slice = max(1, size.n_examples // len(declared))
    h = height
    if h is None:
        whole = plan(
            size.remaining, n_clients=size.n_clients, n_examples=size.n_examples,
            branching=branching,
        ).height  # fmt: skip
        own = plan(
            size.remaining, n_clients=size.n_clients, n_examples=per_slice, branching=branching
        ).height
        h = max(1, min(own, whole - math.ceil(math.log(n_slices, branching) - 1e-9)))
    chosen, params = resolve_parameters(
        size.remaining,
        n_clients=size.n_clients,
        n_examples=per_slice,
        height=h,
        branching=branching,
        level_budget=level_budget,
        path=path,
        **options,
    )
    for key in ("n_clients", "n_examples", "public_inputs"):
        params.pop(key, None)
    params["planned"]["height"] = height is None
    params.update(size.parameters())
    params["slices"] = {
        "declared": [str(v) for v in declared],
        "other": other,
        "planned_for": (
            "the average declared slice (the planning size over the declared values), at most "
            "as deep as keeps the sliced vector no longer than one evaluation's"
        ),
    }
    spec = HierarchySpec(int(params["height"]), branching, fed.score_range, 2)
    sketch = SlicedHierarchySketch.of(spec, n_slices)
    coded = replace(fed, labels=slice_labels(fed.labels, index))
    decoded = release(
        coded, sketch, size.remaining, layout=layout, path=path, rng=gen, ledger=ledger
    ).decode()
    keys: list[Hashable] = [*declared, other]
    evaluations = {
        key: Evaluation(
            tree.consistent(), params, chosen, bootstrap_replicates, uniform_seed(gen),
            size.receipt,
        )
        for key, tree in zip(keys, decoded.trees, strict=True)
    }  # fmt: skip
    out = SlicedEvaluation(evaluations, other, params, size.receipt)
    _warn_small(out, private)
    return out


def _warn_small(sev: SlicedEvaluation, private: bool) -> None:
    """One warning naming the slices whose metrics are NaN or unreliable (released values only)."""
    if private:
        weak = [
            f"{k!s}: {msg}" for k, ev in sev.items() if (msg := weak_classes(ev.tree)) is not None
        ]
        what = "released class count not clearly above the privacy noise (3 standard errors)"
    else:
        weak = [f"{k!s}" for k, ev in sev.items() if k != sev.other and not ev.defined]
        what = "a class with no examples (the AUC and curves are NaN)"
    if weak:
        warnings.warn(
            f"slice(s) with {what}: " + "; ".join(weak),
            SmallDataWarning,
            stacklevel=4,  # the caller of fe.evaluate
        )
