"""One call: release one set of histograms, answer every binary metric from it.

``evaluate`` charges the privacy budget once (one hierarchical-histogram
release); AUC, curves, threshold metrics and all standard errors are
post-processing of that release.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fedeval.aggregation import Path, release
from fedeval.data import Federation
from fedeval.metrics.auc import BucketStrategy, roc_auc_score
from fedeval.metrics.confusion import ThresholdMetrics, threshold_metrics
from fedeval.metrics.precision_recall import (
    PRStrategy,
    average_precision_score,
    precision_recall_curve,
)
from fedeval.metrics.quantile_ecdf import Interpolation
from fedeval.metrics.roc import roc_curve
from fedeval.planning import Plan, plan
from fedeval.postprocess.bootstrap import bootstrap_se, bootstrap_values
from fedeval.privacy.guarantee import Guarantee
from fedeval.privacy.ledger import BudgetLedger
from fedeval.privacy.models import PrivacyModel
from fedeval.privacy.receipt import Receipt
from fedeval.privacy.sampling import uniform_seed
from fedeval.randomness import RNGLike, as_generator
from fedeval.sketches.hierarchical_histogram import HierarchicalHistogram
from fedeval.sketches.hierarchy import HierarchySketch, HierarchySpec, LevelBudget, layout_of
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
    bootstrap_replicates : int
        Replicates of the parametric bootstrap behind the standard errors of
        the curve-based metrics (post-processing, no privacy cost).
    """

    tree: HierarchicalHistogram
    parameters: dict[str, Any]
    plan: Plan
    bootstrap_replicates: int = 200
    _bootstrap_seed: int = field(default=0, repr=False)

    # --------------------------------------------------------------- privacy
    @property
    def receipt(self) -> Receipt:
        return self.tree.receipt

    @property
    def epsilon_spent(self) -> float:
        """ε charged by this evaluation (0 under secure aggregation)."""
        return self.receipt.epsilon_spent

    @property
    def delta_spent(self) -> float:
        return self.receipt.delta_spent

    @property
    def guarantee(self) -> Guarantee:
        return self.receipt.guarantee

    def privacy_receipt(self) -> list[dict[str, Any]]:
        """Model, ε per release, unit and neighbouring relation: one row per ledger entry."""
        return self.receipt.rows()

    @property
    def n_positives(self) -> float:
        return float(max(self.tree.totals()[1], 0.0))

    @property
    def n_negatives(self) -> float:
        return float(max(self.tree.totals()[0], 0.0))

    # ---------------------------------------------------------- the metrics
    def _auc_of(self, tree: HierarchicalHistogram) -> float:
        return roc_auc_score(
            tree, n_buckets=self.parameters["n_buckets"], strategy=self.parameters["auc_buckets"]
        )

    def _curve_options(self) -> dict[str, Any]:
        return {
            "n_quantiles": self.parameters["n_quantiles"],
            "interpolation": self.parameters["interpolation"],
        }

    def _ap_of(self, tree: HierarchicalHistogram) -> float:
        return average_precision_score(
            tree, strategy=self.parameters["pr_strategy"], **self._curve_options()
        )

    @cached_property
    def roc_auc(self) -> float:
        """ROC AUC by the H_B estimator (Cormode–Markov eq. 5); see :func:`fedeval.metrics.roc_auc_score`."""
        return self._auc_of(self.tree)

    @cached_property
    def roc_auc_se(self) -> float:
        """Standard error of :attr:`roc_auc` from the privacy noise (parametric bootstrap).

        0 under secure aggregation, where the only error is bucketization
        (bounded by 1/(2B), and O(1/B²) for well-behaved scores).
        """
        return self._se(self._auc_of)

    def roc_curve(self) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """(fpr, tpr, thresholds) as ``sklearn.metrics.roc_curve`` lays them out."""
        return roc_curve(self.tree, **self._curve_options())

    def precision_recall_curve(
        self,
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """(precision, recall, thresholds) as ``sklearn.metrics.precision_recall_curve`` lays them out."""
        return precision_recall_curve(
            self.tree, strategy=self.parameters["pr_strategy"], **self._curve_options()
        )

    @cached_property
    def average_precision(self) -> float:
        """Step-sum average precision of the estimated PR curve."""
        return self._ap_of(self.tree)

    @cached_property
    def average_precision_se(self) -> float:
        """Standard error of :attr:`average_precision` (parametric bootstrap)."""
        return self._se(self._ap_of)

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

        def tpr_on_grid(tree: HierarchicalHistogram) -> NDArray[np.float64]:
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
        )
        a = (1 - level) / 2
        return grid, np.quantile(rows, a, axis=0), np.quantile(rows, 1 - a, axis=0)

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
            "receipt": self.receipt.as_dict(),
            "parameters": dict(self.parameters),
        }

    def _se(self, statistic: Any) -> float:
        """Standard error of any statistic of the release (one bootstrap, shared by all metrics)."""
        return bootstrap_se(
            self.tree, statistic, replicates=self.bootstrap_replicates, rng=self._bootstrap_seed
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
    chosen = plan(privacy, n_clients=n_clients, n_examples=n_examples, branching=branching)
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
        Distributed DP budget over levels (see :func:`fedeval.sketches.hierarchy.layout_of`).
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
    sketch = HierarchySketch(HierarchySpec(params["height"], branching, fed.score_range, 2))
    tree = (
        release(
            fed,
            sketch,
            privacy,
            layout=layout_of(level_budget),
            path=path,
            rng=gen,
            ledger=ledger,
        )
        .decode()
        .consistent()
    )
    seed = uniform_seed(gen)
    return Evaluation(tree, params, chosen, bootstrap_replicates, seed)
