"""One call: release one set of histograms, answer every binary metric from it.

``evaluate`` charges the privacy budget once (one hierarchical-histogram
release); AUC, curves, threshold metrics and all standard errors are
post-processing of that release.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fedeval.aggregation import Path
from fedeval.data import Federation
from fedeval.metrics.auc import BucketStrategy, histogram_auc
from fedeval.metrics.confusion import ThresholdMetrics, threshold_metrics
from fedeval.metrics.precision_recall import (
    PRStrategy,
    average_precision_from_curve,
    precision_recall_from_ecdfs,
)
from fedeval.metrics.quantile_ecdf import Interpolation, QuantileECDF, quantile_ecdf
from fedeval.metrics.roc import curve_thresholds, roc_curve_from_ecdfs
from fedeval.planning import Plan, plan
from fedeval.privacy.ledger import BudgetLedger
from fedeval.privacy.models import DistributedDP, LocalDP, PrivacyModel, SecureAggregation
from fedeval.randomness import RNGLike, as_generator
from fedeval.sketches.hierarchy import HierarchicalHistogram, LevelBudget, release_hierarchy
from fedeval.validation import check_int_at_least

__all__ = ["Evaluation", "evaluate", "resolve_parameters"]


@dataclass(frozen=True)
class Evaluation:
    """Every binary metric from one private release.

    Attributes
    ----------
    tree : HierarchicalHistogram
        The consistent per-class hierarchy (the only thing released).
    parameters : dict
        Height, branching, buckets, quantiles, interpolation, PR strategy, and
        whether each was chosen by the planner.
    plan : Plan
    """

    tree: HierarchicalHistogram
    parameters: dict[str, Any]
    plan: Plan
    bootstrap_replicates: int = 200
    _bootstrap_seed: int = field(default=0, repr=False)

    # --------------------------------------------------------------- privacy
    @property
    def epsilon_spent(self) -> float:
        """ε charged by this evaluation (0 under secure aggregation)."""
        return math.fsum(e.epsilon for e in self.tree.ledger_entries)

    @property
    def delta_spent(self) -> float:
        return math.fsum(e.delta for e in self.tree.ledger_entries)

    @property
    def guarantee(self) -> Any:
        return self.tree.guarantee

    def privacy_receipt(self) -> list[dict[str, Any]]:
        """Model, ε per release and unit: one row per ledger entry."""
        if not self.tree.ledger_entries:
            return [
                {
                    "release": "leaf counts",
                    "epsilon": 0.0,
                    "delta": 0.0,
                    "unit": "none",
                    "model": self.tree.privacy,
                }
            ]
        return [
            {
                "release": e.label,
                "epsilon": e.epsilon,
                "delta": e.delta,
                "unit": e.unit,
                "model": self.tree.privacy,
            }
            for e in self.tree.ledger_entries
        ]

    @property
    def n_positives(self) -> float:
        return float(max(self.tree.totals()[1], 0.0))

    @property
    def n_negatives(self) -> float:
        return float(max(self.tree.totals()[0], 0.0))

    # ------------------------------------------------------------------- AUC
    @cached_property
    def roc_auc(self) -> float:
        """ROC AUC by the H_B estimator over equi-depth buckets (Cormode–Markov eq. 5)."""
        return _auc(self.tree, self.parameters["n_buckets"], self.parameters["auc_buckets"])

    def roc_auc_uniform(self) -> float:
        """The uniform-bucket baseline of Cormode–Markov Figure 4."""
        return histogram_auc(self.tree, self.parameters["n_buckets"], strategy="uniform")

    @cached_property
    def roc_auc_se(self) -> float:
        """Standard error of :attr:`roc_auc` from the privacy noise (parametric bootstrap).

        0 under secure aggregation, where the only error is bucketization
        (bounded by 1/(2B), and O(1/B²) for well-behaved scores).
        """
        return self._bootstrap_se(
            lambda t: _auc(t, self.parameters["n_buckets"], self.parameters["auc_buckets"])
        )

    # ---------------------------------------------------------------- curves
    @cached_property
    def _ecdfs(self) -> tuple[QuantileECDF, QuantileECDF]:
        return _class_ecdfs(
            self.tree, self.parameters["n_quantiles"], self.parameters["interpolation"]
        )

    def roc_curve(self) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """(fpr, tpr, thresholds) as ``sklearn.metrics.roc_curve`` lays them out."""
        neg, pos = self._ecdfs
        return roc_curve_from_ecdfs(
            neg, pos, curve_thresholds(neg, pos, self.tree.spec.score_range)
        )

    def precision_recall_curve(
        self,
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """(precision, recall, thresholds) as ``sklearn.metrics.precision_recall_curve`` lays them out."""
        return _pr(self.tree, self._ecdfs, self.parameters)

    @cached_property
    def average_precision(self) -> float:
        """Step-sum average precision of the estimated PR curve."""
        p, r, _ = self.precision_recall_curve()
        return average_precision_from_curve(p, r)

    @cached_property
    def average_precision_se(self) -> float:
        """Standard error of :attr:`average_precision` (parametric bootstrap)."""

        def ap(t: HierarchicalHistogram) -> float:
            e = _class_ecdfs(t, self.parameters["n_quantiles"], self.parameters["interpolation"])
            p, r, _ = _pr(t, e, self.parameters)
            return average_precision_from_curve(p, r)

        return self._bootstrap_se(ap)

    def roc_band(
        self, fpr_grid: Any = None, *, level: float = 0.9
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """Pointwise uncertainty band of TPR over a grid of FPR (parametric bootstrap).

        Returns
        -------
        fpr_grid, lower, upper : ndarray
        """
        grid = (
            np.linspace(0, 1, 101) if fpr_grid is None else np.asarray(fpr_grid, dtype=np.float64)
        )
        if self.tree.guarantee.unit == "none":
            fpr, tpr, _ = self.roc_curve()
            exact_tpr = np.interp(grid, fpr, tpr)
            return grid, exact_tpr, exact_tpr
        gen = np.random.default_rng(self._bootstrap_seed)
        rows = []
        for _ in range(self.bootstrap_replicates):
            t = self.tree.perturbed(gen)
            neg, pos = _class_ecdfs(
                t, self.parameters["n_quantiles"], self.parameters["interpolation"]
            )
            f, tp, _ = roc_curve_from_ecdfs(
                neg, pos, curve_thresholds(neg, pos, t.spec.score_range)
            )
            rows.append(np.interp(grid, f, tp))
        arr = np.array(rows)
        a = (1 - level) / 2
        return grid, np.quantile(arr, a, axis=0), np.quantile(arr, 1 - a, axis=0)

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
            "at_threshold": fixed.as_dict(),
            "n_positives": self.n_positives,
            "n_negatives": self.n_negatives,
            "epsilon_spent": self.epsilon_spent,
            "delta_spent": self.delta_spent,
            "privacy": self.tree.privacy,
            "guarantee": str(self.tree.guarantee),
            "parameters": dict(self.parameters),
        }

    def _bootstrap_se(self, fn: Any) -> float:
        if self.tree.guarantee.unit == "none":
            return 0.0
        gen = np.random.default_rng(self._bootstrap_seed)
        vals = [fn(self.tree.perturbed(gen)) for _ in range(self.bootstrap_replicates)]
        return float(np.nanstd(vals, ddof=1))


def _auc(tree: HierarchicalHistogram, n_buckets: int, strategy: BucketStrategy) -> float:
    return histogram_auc(tree, n_buckets, strategy=strategy)


def _class_ecdfs(
    tree: HierarchicalHistogram, q: int, interp: Interpolation
) -> tuple[QuantileECDF, QuantileECDF]:
    return quantile_ecdf(tree, q, cls=0, interpolation=interp), quantile_ecdf(
        tree, q, cls=1, interpolation=interp
    )


def _pr(
    tree: HierarchicalHistogram, ecdfs: tuple[QuantileECDF, QuantileECDF], params: dict[str, Any]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    neg, pos = ecdfs
    strategy: PRStrategy = params["pr_strategy"]
    combined = (
        quantile_ecdf(tree, params["n_quantiles"], cls=None, interpolation=params["interpolation"])
        if strategy == "combine"
        else None
    )
    totals = np.maximum(tree.totals(), 0.0)
    return precision_recall_from_ecdfs(
        neg,
        pos,
        curve_thresholds(neg, pos, tree.spec.score_range),
        float(totals[1]),
        float(totals[0]),
        strategy=strategy,
        combined=combined,
    )


def resolve_parameters(
    privacy: PrivacyModel,
    *,
    n_clients: int,
    n_examples: int,
    height: int | None = None,
    branching: int = 2,
    n_buckets: int | None = None,
    n_quantiles: int | None = None,
    interpolation: str = "pchip",
    pr_strategy: str = "separate",
    auc_buckets: str = "equi-depth",
    level_budget: str = "split",
    path: str = "fast",
) -> tuple[Plan, dict[str, Any]]:
    """The planner's choices, overridden where the caller gave a value, validated.

    Shared by :func:`evaluate` and the Flower server so both release and decode
    with the same parameters.

    Returns
    -------
    plan : Plan
    parameters : dict
        What :attr:`Evaluation.parameters` holds.
    """
    chosen = plan(
        n_clients=n_clients,
        n_examples=n_examples,
        epsilon=None if isinstance(privacy, SecureAggregation) else privacy.epsilon,
        privacy=privacy.name,
        branching=branching,
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
    if auc_buckets not in ("equi-depth", "uniform"):
        raise ValueError(f"auc_buckets must be 'equi-depth' or 'uniform', got {auc_buckets!r}")
    params: dict[str, Any] = {
        "height": h,
        "branching": branching,
        "n_buckets": nb,
        "n_quantiles": q,
        "interpolation": interpolation,
        "pr_strategy": pr_strategy,
        "auc_buckets": auc_buckets,
        "level_budget": level_budget,
        "path": path,
        "planned": {
            "height": height is None,
            "n_buckets": n_buckets is None,
            "n_quantiles": n_quantiles is None,
        },
        "n_clients": n_clients,
        "n_examples": n_examples,
    }
    return chosen, params


def evaluate(
    fed: Federation,
    privacy: PrivacyModel,
    *,
    height: int | None = None,
    branching: int = 2,
    n_buckets: int | None = None,
    n_quantiles: int | None = None,
    interpolation: Interpolation = "pchip",
    pr_strategy: PRStrategy = "separate",
    auc_buckets: BucketStrategy = "equi-depth",
    level_budget: LevelBudget = "split",
    path: Path = "fast",
    bootstrap_replicates: int = 200,
    rng: RNGLike = None,
    ledger: BudgetLedger | None = None,
) -> Evaluation:
    """Evaluate a binary classifier on federated scores and labels, privately.

    Parameters
    ----------
    fed : Federation
        Binary task.
    privacy : SecureAggregation, DistributedDP or LocalDP
    height, n_buckets, n_quantiles : int, optional
        Chosen by :func:`fedeval.plan` unless given.
    branching : int
    interpolation : {"pchip", "linear"}
        ECDF reconstruction from quantiles (Xu–Cormode §3.1).
    pr_strategy : {"separate", "combine"}
    auc_buckets : {"equi-depth", "uniform"}
    level_budget : {"split", "assign"}
        Distributed DP budget over levels (see :func:`release_hierarchy`).
    path : {"fast", "faithful"}
    bootstrap_replicates : int
        Replicates for bootstrap standard errors (post-processing, no privacy cost).
    rng : int, Generator or None
    ledger : BudgetLedger, optional
        Charged once, atomically, for the single release.

    Returns
    -------
    Evaluation

    Raises
    ------
    ValueError
        Multiclass data, a class with no examples (AUC undefined), bad parameters.
    BudgetExceededError
        The ledger cannot afford the release; nothing is released.

    Privacy
    -------
    Exactly one hierarchical-histogram release under ``privacy``; everything
    else is post-processing.
    """
    if not isinstance(fed, Federation):
        raise TypeError(f"fed must be a Federation, got {type(fed).__name__}")
    if fed.kind != "binary":
        raise ValueError(
            "evaluate() needs a binary task; multiclass evaluation is not supported yet"
        )
    n_pos = int(fed.labels.sum())
    if n_pos == 0 or n_pos == fed.n_examples:
        only = "negative" if n_pos == 0 else "positive"
        raise ValueError(
            f"all {fed.n_examples} examples are {only}: ROC AUC and curves are undefined"
        )
    if not isinstance(privacy, SecureAggregation | DistributedDP | LocalDP):
        raise TypeError(
            "evaluate() supports SecureAggregation, DistributedDP and LocalDP, "
            f"not {type(privacy).__name__}"
        )
    check_int_at_least(bootstrap_replicates, 2, name="bootstrap_replicates")
    chosen, params = resolve_parameters(
        privacy,
        n_clients=fed.n_clients,
        n_examples=fed.n_examples,
        height=height,
        branching=branching,
        n_buckets=n_buckets,
        n_quantiles=n_quantiles,
        interpolation=interpolation,
        pr_strategy=pr_strategy,
        auc_buckets=auc_buckets,
        level_budget=level_budget,
        path=path,
    )
    gen = as_generator(rng)
    tree = release_hierarchy(
        fed,
        privacy,
        height=params["height"],
        branching=branching,
        level_budget=level_budget,
        path=path,
        rng=gen,
        ledger=ledger,
    ).consistent()
    seed = int(gen.integers(2**31))
    return Evaluation(tree, params, chosen, bootstrap_replicates, seed)
