"""One call: release one set of histograms, answer every binary metric from it.

``evaluate`` charges the privacy budget once (one hierarchical-histogram
release); AUC, curves, threshold metrics and all standard errors are
post-processing of that release.

Public inputs
-------------
Everything :func:`evaluate` publishes depends on the data only through the
noisy release. The parameters of the release (height, buckets, quantiles) are
chosen from public inputs only (:func:`fedeval.planning.public_example_count`): the number of
participating clients, the number of examples when the privacy model makes it
public or adds no noise, or a number the caller declares. Under differential
privacy there is no refusal that depends on the data: a class that is empty,
or small against the noise, gives NaN or noisy metrics and a warning.
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
from fedeval.metrics.auc import BucketStrategy, roc_auc_score
from fedeval.metrics.confusion import ThresholdMetrics, threshold_metrics
from fedeval.metrics.precision_recall import (
    PRStrategy,
    average_precision_score,
    precision_recall_curve,
)
from fedeval.metrics.quantile_ecdf import Interpolation
from fedeval.metrics.roc import roc_curve
from fedeval.planning import Plan, plan, public_example_count
from fedeval.postprocess.bootstrap import bootstrap_values
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

_CLASS_NAMES = ("negatives", "positives")


def _defined(tree: HierarchicalHistogram) -> bool:
    """Whether both classes' released ECDFs exist (some level-1 count above zero).

    A function of the release only: the curve-based metrics are NaN where it is
    False (instead of an exception that would depend on the noisy counts).
    """
    probe = np.array([0.5])
    return not any(np.isnan(tree.quantiles(probe, cls=c)).any() for c in (0, 1))


@dataclass(frozen=True)
class Evaluation:
    """Every binary metric from one private release.

    Attributes
    ----------
    tree : HierarchicalHistogram
        The consistent per-class hierarchy (the only thing released).
    parameters : dict
        Height, branching, buckets, quantiles, interpolation, PR strategy,
        whether each was chosen by the planner, and the public inputs the
        planner used: ``"n_clients"``, ``"n_examples"`` (None unless the number
        of examples is public, see :func:`fedeval.planning.public_example_count`) and
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
        """Released number of positives (noisy under DP), floored at 0."""
        return float(max(self.tree.totals()[1], 0.0))

    @property
    def n_negatives(self) -> float:
        """Released number of negatives (noisy under DP), floored at 0."""
        return float(max(self.tree.totals()[0], 0.0))

    @cached_property
    def defined(self) -> bool:
        """Whether both classes have released counts above zero (else the curves are NaN)."""
        return _defined(self.tree)

    # ---------------------------------------------------------- the metrics
    def _auc_of(self, tree: HierarchicalHistogram) -> float:
        if not _defined(tree):
            return math.nan
        return roc_auc_score(
            tree, n_buckets=self.parameters["n_buckets"], strategy=self.parameters["auc_buckets"]
        )

    def _curve_options(self) -> dict[str, Any]:
        return {
            "n_quantiles": self.parameters["n_quantiles"],
            "interpolation": self.parameters["interpolation"],
        }

    def _ap_of(self, tree: HierarchicalHistogram) -> float:
        if not _defined(tree):
            return math.nan
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
        """Standard error of :attr:`average_precision` (parametric bootstrap)."""
        return self._se(self._ap_of)

    def roc_band(
        self, fpr_grid: Any = None, *, level: float = 0.9
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """Pointwise uncertainty band of TPR over a grid of FPR (parametric bootstrap).

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


def _undefined_curve() -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    nan = np.full(1, np.nan)
    return nan, nan.copy(), nan.copy()


def _warn_if_degenerate(tree: HierarchicalHistogram, *, stacklevel: int) -> None:
    """Warn when a class's released count is not clearly above its noise (a function of the release)."""
    totals = tree.totals()
    # The raw level-1 variance bounds the consistent one (consistency never
    # increases a range query's variance): the exact one is computed only when needed.
    raw_se = np.sqrt(np.maximum(np.asarray(tree.node_variance[0]).sum(axis=-1), 0.0))
    if np.all(totals > 3.0 * raw_se) and _defined(tree):
        return
    se = np.sqrt(np.maximum(tree.total_variance(), 0.0))
    weak = [
        f"{_CLASS_NAMES[c]} ≈ {totals[c]:.3g} ± {se[c]:.2g}"
        for c in (0, 1)
        if not totals[c] > 3.0 * se[c]
    ]
    if not weak and _defined(tree):
        return
    warnings.warn(
        "released class count not clearly above the privacy noise (3 standard errors): "
        + "; ".join(weak or ["a class has no released examples"])
        + ". The class is empty or small against the noise; the AUC, average precision and "
        "curves are NaN where the released counts leave them undefined, unreliable otherwise",
        UserWarning,
        stacklevel=stacklevel,
    )


def resolve_parameters(
    privacy: PrivacyModel,
    *,
    n_clients: int,
    n_examples: int | None = None,
    n_examples_source: str | None = None,
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

    Parameters
    ----------
    privacy : privacy model
    n_clients : int
        The number of participating clients (public).
    n_examples : int, optional
        A *public* number of examples (see :func:`fedeval.planning.public_example_count`), or a
        count decoded from a release; None plans from ``n_clients``. It is
        published in the parameters, so never pass an exact private count.
    n_examples_source : str, optional
        Where ``n_examples`` came from, in words, for ``parameters["public_inputs"]``.
    height, branching, n_buckets, n_quantiles, interpolation, pr_strategy, auc_buckets, level_budget, path
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
        "public_inputs": {
            "n_clients": "the number of participating clients (public in federated learning)",
            "n_examples": n_examples_source,
        },
    }
    return chosen, params


def evaluate(
    fed: Federation | Scan,
    privacy: PrivacyModel,
    *,
    n_examples: int | None = None,
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
    fed : Federation or Scan
        Binary task, in memory or streamed (:func:`fedeval.scan`).
    privacy : SecureAggregation, DistributedDP, CentralDP or LocalDP
    n_examples : int, optional
        A number of examples the caller declares public (a published size or
        a public bound), used only to choose the parameters and published with
        them. Without it the true count is used only where the privacy model
        makes it public (see Notes), and otherwise the parameters are planned
        from the number of clients.
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
        Multiclass data, bad parameters; without differential privacy
        (secure aggregation) also a class with no examples (AUC undefined).
    BudgetExceededError
        The ledger cannot afford the release; nothing is released.

    Warns
    -----
    UserWarning
        Under differential privacy, when a class's released count is not
        clearly above its noise (3 standard errors) or not positive: the class
        is empty or small, and the metrics are NaN or unreliable. The decision
        and the message use released values only.

    Notes
    -----
    Privacy: exactly one hierarchical-histogram release under ``privacy``;
    everything else is post-processing.

    Public inputs (what the parameters, the plan, the summary, the receipt
    and the report may depend on besides the noisy release):

    * the score domain ``fed.score_range`` and the parameters given here;
    * the number of participating clients ``fed.n_clients`` (public in
      federated learning; the guarantees list it; neighbouring datasets under
      example-level DP are taken with the same clients). When every client
      holds one example (``Federation.from_arrays(..., clients=None)``) this
      is also the number of examples: which clients take part is then public,
      and the guarantee protects each one's score and label;
    * the number of examples ``fed.n_examples`` only when the model makes it
      public (``privacy.example_count_public``: local DP, replacement of one
      example) or adds no noise (secure aggregation), or the declared
      ``n_examples``.

    Planning from a privately released count (a share of ε spent on the count
    first) is not offered: it would split one release into two with their own
    receipts; the release's own class totals are noisy counts, available after
    it (:attr:`Evaluation.n_positives`).

    Under differential privacy no exception depends on the data: a class that
    is empty gives NaN or noisy metrics with a warning. Format errors
    (multiclass data, bad parameters) still raise.
    """
    if not isinstance(fed, Federation | Scan):
        raise TypeError(f"fed must be a Federation or a Scan, got {type(fed).__name__}")
    if fed.kind != "binary":
        raise ValueError(
            "evaluate() needs a binary task; multiclass evaluation is not supported yet"
        )
    check_int_at_least(bootstrap_replicates, 2, name="bootstrap_replicates")
    private = getattr(privacy, "regime", None) != "exact"
    if not private:
        # No differential privacy: the exact counts are what the release shows anyway.
        n_pos = fed.n_positives() if isinstance(fed, Scan) else int(fed.labels.sum())
        if n_pos == 0 or n_pos == fed.n_examples:
            only = "negative" if n_pos == 0 else "positive"
            raise ValueError(
                f"all {fed.n_examples} examples are {only}: ROC AUC and curves are undefined"
            )
    m_public, source = public_example_count(privacy, fed.n_examples, declared=n_examples)
    chosen, params = resolve_parameters(
        privacy,
        n_clients=fed.n_clients,
        n_examples=m_public,
        n_examples_source=source,
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
    if private:
        _warn_if_degenerate(tree, stacklevel=3)
    return Evaluation(tree, params, chosen, bootstrap_replicates, seed)
