"""Continual evaluation: a model's metrics every period, under one budget charged up front.

A deployed model is evaluated every day or week on fresh client data, for
months. Giving each period's re-evaluation ε/T makes the noise grow like T;
composing the releases makes ε grow like T (or √T under zCDP). A continual
mechanism (:mod:`fedeval.privacy.mechanisms.continual`) releases every
period's per-class hierarchy, every coordinate through one strategy over the
periods, under one ε for the whole horizon, and answers every prefix (the
data so far) and every window (the last w periods) at a cost that grows only
polylogarithmically in T::

    mon = fe.monitor(fe.DistributedDP(epsilon=1.0), horizon=52, examples_per_period=5_000)
    for fed_t in weekly_federations:
        mon.update(fed_t)                       # period t: rows of the strategy close
        alarm = mon.drift("roc_auc", window=8)  # last 8 weeks against the weeks before
    mon.evaluation()                  # everything so far: an Evaluation, with SEs
    mon.evaluation(window=8)          # the last 8 periods
    mon.trend("roc_auc")              # the metric at every period, with bands
    mon.epsilon_spent, mon.receipt()  # ε of the whole horizon, charged before period 1

In a program, ``ctx.monitor(privacy, horizon=T, ...)`` charges the horizon to
the context's budget.

Choices made once, before the first period, from public inputs only
-------------------------------------------------------------------
* **The mechanism** (``mechanism="auto"``): among the binary tree (Honaker's
  estimator), the square-root factorization and per-period release, the one
  with the smallest mean variance of the cumulative count over the horizon,
  computed in closed form from the noise the privacy model calibrates for
  each (its column norms and the noise's norm: L1 for Pólya/discrete Laplace,
  L2 for Skellam). Measured in ``benchmarks/bench_monitor.py``; which one
  wins where, and why, is below.
* **The hierarchy** (height, buckets): planned by :func:`fedeval.plan` for the
  declared ``examples_per_period`` times ⌈T/2⌉ examples (the cumulative size at
  mid-horizon) at the ε whose single release has the monitor's mean noise.
  A size must be declared: under add/remove DP the number of examples is not
  public (:mod:`fedeval.public_facts`), and a monitor fixes its hierarchy
  before it sees any period.

Which mechanism wins where
--------------------------
The noise of a strategy R is calibrated to its largest column norm (what one
example in one period moves the rows by): L1 for pure ε (Pólya shares,
discrete Laplace), L2 for Skellam (and Gaussian-type noise). The variance of
the prefix count at t is that norm² times a factor of the strategy
(:meth:`~fedeval.privacy.mechanisms.continual.ContinualStrategy.prefix_variance_factors`).
At T = 64 (per unit of per-period sensitivity):

================================  ======  ======  ==========================  =============
strategy                          L1      L2      prefix factor               (t = T; mean)
================================  ======  ======  ==========================  =============
binary tree + Honaker             7       √7      ≈ ½ at t = 2^k, ≤ 3.8       (0.50; 1.91)
square-root factorization         9.01    1.55    Σ_{k<t} c_k² ≤ 2.39         (2.39; 2.08)
per-period                        1       1       t                           (64; 32.5)
================================  ======  ======  ==========================  =============

* **Pure ε (Pólya):** the factorization's column L1 norm Σ_{k<T} c_k ≈
  2√(T/π) grows like √T, the tree's like log₂ T, so the factorization loses
  to the tree at *every* t (variance 1.04× at best, 7.9× at t = T: SD 2.8×).
  It is a factorization for L2 noise (Fichtenberger, Henzinger & Upadhyay
  2023 analyse it with Gaussian noise). Per-period release wins the mean
  over t for T up to ≈ 400 (T = 64: 32.5 against the tree's 93; T = 1024:
  512 against 351), because the tree's L1 norm enters squared; ``"auto"``
  picks it.
* **Skellam (L2):** the factorization's L2 norm √Σ c_k² = O(√log T) beats
  the tree's √(log₂ T + 1), and it wins the mean prefix variance over
  t = 1..T (4.97 against 13.3: SD 0.61×) and the worst t (0.46×); ``"auto"``
  picks it. It loses only at t = 8, 16, 32, 64 (SD 1.05–1.27×): at a power
  of two the prefix is one tree node, estimated from its whole subtree, the
  tree's best case (plain dyadic tree: the factorization is ≤ 0.90× at every t).
* Measured (``python benchmarks/bench_monitor.py --part accuracy --seeds 60
  --noise skellam``, and ``--noise polya``; T = 64, 5,000 examples a period,
  ε = 1): RMSE of the square-root factorization ÷ the tree with Honaker's
  estimator (÷ the plain dyadic tree), 95% seed-bootstrap intervals in
  brackets:

  ===========================  ====================  ==============================
  quantity                     Pólya (pure ε)        Skellam (δ = 1e-6)
  ===========================  ====================  ==============================
  cumulative AUC, t = 64       2.76 (1.92)           1.18 [0.90, 1.63] (0.81)
  cumulative AUC, all t        1.43 (1.11)           0.80 [0.67, 0.96] (0.66)
  cumulative AUC, t ≥ 8        1.43 (1.20)           0.63 [0.57, 0.71] (0.53)
  AUC of the last 8 periods    1.52 (1.00)           0.69 [0.66, 0.73] (0.42)
  positives count, all t       1.46 (1.13)           0.60 [0.55, 0.65] (0.46)
  ===========================  ====================  ==============================

  So the factorization is the one to use with Skellam noise (``"auto"`` picks
  it), judged by the error over the horizon rather than at its last period;
  with Pólya noise it is never the better one.

Uncertainty
-----------
Each window's hierarchy has independent noise across its coordinates with
one variance, ‖u‖² σ² (u the window's row weights), exactly the model of one
release, so :class:`~fedeval.evaluation.Evaluation` gives its standard errors
as for one release. Across windows the noise is correlated (the rows are
shared): the covariance of two windows' coordinates is u_A · u_B σ²
(:meth:`fedeval.aggregation.continual.ContinualRelease.covariance`), and
:meth:`Monitor.drift` carries it into the covariance of the two windows'
AUCs through the delta method's leaf weights
(:func:`fedeval.metrics.dense.dense_leaf_weights`) and the shared
consistency map.

References
----------
Dwork, Naor, Pitassi & Rothblum (STOC 2010); Chan, Shi & Song (TISSEC 2011);
Honaker (TPDP 2015); Fichtenberger, Henzinger & Upadhyay (ICML 2023);
Henzinger, Upadhyay & Upadhyay (SODA 2023); DeLong, DeLong & Clarke-Pearson
(Biometrics 1988) for the sampling variance of the AUC.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from fedeval.aggregation.continual import (
    ContinualRelease,
    PeriodRelease,
    check_continual_model,
    nominal_contributors,
    periodic_sketch,
)
from fedeval.data import Federation, Scan
from fedeval.evaluation import Evaluation, resolve_parameters
from fedeval.metrics.dense import dense_leaf_weights
from fedeval.privacy.guarantee import Guarantee
from fedeval.privacy.ledger import BudgetLedger
from fedeval.privacy.mechanism_for import mechanism_for
from fedeval.privacy.mechanisms.continual import (
    MAX_HORIZON,
    STRATEGIES,
    ContinualStrategy,
    Estimator,
    continual_strategy,
)
from fedeval.privacy.models import PrivacyModel
from fedeval.privacy.receipt import Receipt
from fedeval.privacy.sampling import uniform_seed
from fedeval.randomness import RNGLike, as_generator
from fedeval.sketches.grid import UniformGrid
from fedeval.sketches.hierarchy import HierarchySketch, HierarchySpec
from fedeval.validation import check_int_at_least

__all__ = [
    "SCOPE_ONE_MONITOR",
    "DriftTest",
    "Monitor",
    "MonitorMechanism",
    "Trend",
    "choose_mechanism",
    "mean_prefix_variance",
    "monitor",
]

MonitorMechanism = Literal["auto", "tree", "factorization", "per-period"]
TrendMetric = Literal["roc_auc", "average_precision"]

SCOPE_ONE_MONITOR = (
    "this monitor alone: every period's release of one continual mechanism over the horizon, "
    "charged once before the first period; other releases on the same clients compose with it "
    "(run them in one fedeval.Context to have the total accounted)"
)

#: Height used to compare the mechanisms before the hierarchy is planned (the
#: comparison scales the same way with the height for every mechanism).
_PROVISIONAL_HEIGHT = 10


# --------------------------------------------------------------- mechanism choice
def choose_mechanism(
    privacy: PrivacyModel,
    sketch: HierarchySketch,
    horizon: int,
    *,
    estimator: Estimator = "gls",
) -> tuple[str, dict[str, float]]:
    """The strategy with the smallest mean variance of a cumulative count over the horizon.

    For each strategy the privacy model calibrates its noise (the one dispatch,
    :func:`~fedeval.privacy.mechanism_for.mechanism_for`, on the strategy's
    sensitivity over the horizon); the mean over t = 1..T of the variance of
    one coordinate's prefix sum, estimated from the rows published by t, is
    σ² times the strategy's closed-form factors. A function of public inputs
    only (the model, T, the sketch's geometry).

    Returns
    -------
    name : str
    mean_variance : dict
        Strategy → mean prefix variance of one coordinate (counts²).
    """
    out = {
        name: mean_prefix_variance(privacy, sketch, name, horizon, estimator=estimator)
        for name in STRATEGIES
    }
    best = min(out, key=lambda k: out[k])
    return best, out


def mean_prefix_variance(
    privacy: PrivacyModel,
    sketch: HierarchySketch,
    name: str,
    horizon: int,
    *,
    estimator: Estimator = "gls",
) -> float:
    """Mean over t = 1..T of the noise variance of one coordinate's count of periods 1..t.

    The strategy's noise as the model calibrates it for ``sketch`` over the
    horizon, times its closed-form prefix variance factors (0 without noise).
    """
    strategy = continual_strategy(name, horizon, estimator=estimator if name == "tree" else "gls")
    n = nominal_contributors(privacy)
    mech = mechanism_for(privacy, periodic_sketch(sketch, strategy), n_clients=n)
    unit = 0.0 if mech.noise is None else float(np.mean(mech.noise.variance(n)))
    return unit * float(np.mean(strategy.prefix_variance_factors()))


# --------------------------------------------------------------------- results
@dataclass(frozen=True)
class Trend:
    """A metric at every period, with pointwise bands.

    Attributes
    ----------
    metric : str
    periods : ndarray of int64
        1-based periods t.
    window : int or None
        None: the data of periods 1..t; w: of the last min(w, t) periods.
    estimate, se : ndarray of float64
        The metric and its standard error from the privacy noise.
    sampling_se : ndarray of float64
        The AUC's sampling standard error (DeLong); NaN for other metrics.
    lower, upper : ndarray of float64
        Pointwise band at ``level`` from the privacy noise (clipped to [0, 1]).
    level : float
    """

    metric: str
    periods: NDArray[np.int64]
    window: int | None
    estimate: NDArray[np.float64]
    se: NDArray[np.float64]
    sampling_se: NDArray[np.float64]
    lower: NDArray[np.float64]
    upper: NDArray[np.float64]
    level: float

    def as_dict(self) -> dict[str, Any]:
        """JSON-safe columns (NaN as None)."""

        def col(a: NDArray[Any]) -> list[Any]:
            return [None if not math.isfinite(float(x)) else float(x) for x in a]

        return {
            "metric": self.metric,
            "window": self.window,
            "level": self.level,
            "periods": [int(t) for t in self.periods],
            "estimate": col(self.estimate),
            "se": col(self.se),
            "sampling_se": col(self.sampling_se),
            "lower": col(self.lower),
            "upper": col(self.upper),
        }


@dataclass(frozen=True)
class DriftTest:
    """Did the metric change between a reference window and the last ``window`` periods?

    Attributes
    ----------
    metric : str
    period : int
        The current period t (the test uses every row published by t).
    window, reference : (int, int)
        1-based inclusive periods of the recent window and of the reference.
    recent, before : float
        The metric on each (NaN when a class's released total is not positive).
    difference : float
        recent − before.
    se : float
        √(privacy variance + sampling variance) of the difference.
    privacy_se, sampling_se : float
        The two parts: the privacy noise of both windows with their
        covariance (the rows are shared), and DeLong's sampling variances of
        the two (disjoint) sets of examples.
    z : float
        difference / se.
    critical_z : float
        Φ⁻¹(1 − α/(2·looks)): Bonferroni over the ``looks`` tests of the horizon.
    alpha, looks : float, int
    ci : (float, float)
        difference ± critical_z · se (simultaneous over the looks).
    p_value : float
        Two-sided, of this one test; ``min(1, p · looks)`` is the adjusted one.
    alarm : bool
        |z| > critical_z.
    """

    metric: str
    period: int
    window: tuple[int, int]
    reference: tuple[int, int]
    recent: float
    before: float
    difference: float
    se: float
    privacy_se: float
    sampling_se: float
    z: float
    critical_z: float
    alpha: float
    looks: int
    ci: tuple[float, float]
    p_value: float
    alarm: bool

    @property
    def adjusted_p_value(self) -> float:
        """The p-value times the number of looks (Bonferroni), at most 1."""
        return min(1.0, self.p_value * self.looks) if math.isfinite(self.p_value) else math.nan

    def as_dict(self) -> dict[str, Any]:
        def num(x: float) -> float | None:
            return float(x) if math.isfinite(float(x)) else None

        return {
            "metric": self.metric,
            "period": self.period,
            "window": list(self.window),
            "reference": list(self.reference),
            "recent": num(self.recent),
            "before": num(self.before),
            "difference": num(self.difference),
            "se": num(self.se),
            "privacy_se": num(self.privacy_se),
            "sampling_se": num(self.sampling_se),
            "z": num(self.z),
            "critical_z": self.critical_z,
            "alpha": self.alpha,
            "looks": self.looks,
            "ci": [num(self.ci[0]), num(self.ci[1])],
            "p_value": num(self.p_value),
            "adjusted_p_value": num(self.adjusted_p_value),
            "alarm": self.alarm,
        }


# ---------------------------------------------------------------------- monitor
class Monitor:
    """Continual private evaluation of one model over ``horizon`` periods.

    Use :func:`monitor` or :meth:`fedeval.Context.monitor` to make one.

    Parameters
    ----------
    privacy : DistributedDP, CentralDP or SecureAggregation
        The guarantee of the whole horizon: ε (and δ) for all periods together.
        ``unit="example"`` (default) is event-level: each example belongs to
        one period. ``DistributedDP(unit="client", contribution_bound=B)`` is
        client-level across periods: each client contributes at most B
        examples over the *whole horizon* (it keeps count on its device; the
        monitor simulates the count by client id), and the noise covers all
        of them at once.
    horizon : int
        T, the number of periods (1 ≤ T ≤ 1024).
    examples_per_period : int
        A size you declare public (a typical or planned number of examples per
        period): used only to plan the hierarchy, never checked.
    height, branching : int, optional
        The hierarchy; the height is planned unless given.
    mechanism : {"auto", "tree", "factorization", "per-period"}
        The continual strategy; "auto" picks the one with the smallest mean
        cumulative variance for this model and horizon (:func:`choose_mechanism`).
    estimator : {"gls", "plain"}
        "gls" (default): every estimate uses every row published so far
        (Honaker's estimator on the tree), so the estimates of past periods
        sharpen as later rows arrive. "plain": the tree's dyadic decomposition.
    score_range : (float, float)
        The public score domain every period's data must declare.
    curve, level, standard_errors, bootstrap_replicates
        As in :func:`fedeval.evaluate`, for every evaluation.
    rng : int, Generator or None
        Source of all the noise (fresh OS entropy by default).
    ledger : BudgetLedger, optional
        Charged once, here, for all T periods (before any noise is drawn).
    scope : str, optional
        What the guarantee covers, for the receipt.

    Raises
    ------
    ValueError
        Bad horizon, mechanism, estimator or parameters; no declared size.
    TypeError
        A privacy model without a continual form here (local, label or user-level DP).
    BudgetExceededError
        The ledger cannot afford the horizon (nothing is charged).

    Notes
    -----
    Privacy: one continual mechanism, charged once for the horizon
    (:class:`~fedeval.aggregation.continual.ContinualRelease`); every
    evaluation, trend and drift test is post-processing of its rows.
    """

    def __init__(
        self,
        privacy: PrivacyModel,
        *,
        horizon: int,
        examples_per_period: int | None = None,
        height: int | None = None,
        branching: int = 2,
        mechanism: MonitorMechanism = "auto",
        estimator: Estimator = "gls",
        score_range: tuple[float, float] = (0.0, 1.0),
        curve: str = "dense",
        level: int | None = None,
        standard_errors: str = "delta",
        bootstrap_replicates: int = 200,
        rng: RNGLike = None,
        ledger: BudgetLedger | None = None,
        scope: str | None = None,
    ) -> None:
        t = check_int_at_least(horizon, 1, name="horizon")
        if t > MAX_HORIZON:
            raise ValueError(f"horizon must be at most {MAX_HORIZON} periods, got {t}")
        if mechanism not in ("auto", *STRATEGIES):
            raise ValueError(
                f"mechanism must be 'auto', 'tree', 'factorization' or 'per-period', "
                f"got {mechanism!r}"
            )
        if estimator not in ("gls", "plain"):
            raise ValueError(f"estimator must be 'gls' or 'plain', got {estimator!r}")
        if estimator == "plain" and mechanism != "tree":
            raise ValueError("estimator='plain' is the binary tree's; pass mechanism='tree'")
        if examples_per_period is None:
            raise ValueError(
                "a monitor plans its hierarchy once, before the first period, from a size you "
                "declare public: pass examples_per_period= (a typical number of examples per "
                "period; used only to plan, never checked against the data)"
            )
        m = check_int_at_least(examples_per_period, 1, name="examples_per_period")
        check_int_at_least(bootstrap_replicates, 2, name="bootstrap_replicates")
        UniformGrid(1, score_range)  # validates the domain
        self.horizon = t
        self.privacy = privacy
        self.score_range = (float(score_range[0]), float(score_range[1]))
        self.examples_per_period = m
        provisional = HierarchySketch(
            HierarchySpec(height or _PROVISIONAL_HEIGHT, branching, self.score_range, 2)
        )
        check_continual_model(privacy, provisional)
        if mechanism == "auto":
            name, mean_variance = choose_mechanism(privacy, provisional, t, estimator=estimator)
        else:
            name, mean_variance = mechanism, {}
        self.mechanism_name = name
        self.mechanism_comparison = mean_variance
        planned_for = m * math.ceil(t / 2)
        effective = self._effective_model(privacy, provisional, name, t, estimator, mean_variance)
        chosen, params = resolve_parameters(
            effective,
            n_clients=None,
            n_examples=planned_for,
            n_examples_source=(
                f"declared public: examples_per_period={m} × ⌈T/2⌉ = {planned_for} (the "
                "cumulative size at mid-horizon), at the ε whose single release has the "
                "monitor's mean noise"
            ),
            height=height,
            branching=branching,
            curve=curve,
            level=level,
            standard_errors=standard_errors,
        )
        params["public_inputs"]["n_clients"] = "not used"
        self.sketch = HierarchySketch(
            HierarchySpec(params["height"], branching, self.score_range, 2)
        )
        strategy = continual_strategy(name, t, estimator=estimator if name == "tree" else "gls")
        gen = as_generator(rng)
        self._release = ContinualRelease(
            self.sketch, strategy, privacy, rng=gen, ledger=ledger, scope=scope
        )
        params["monitor"] = {
            "horizon": t,
            "mechanism": name,
            "estimator": strategy.estimator,
            "strategy": strategy.describe(),
            "examples_per_period": m,
            "mean_prefix_variance": {k: float(v) for k, v in mean_variance.items()},
        }
        self.parameters = params
        self.plan = chosen
        self.bootstrap_replicates = int(bootstrap_replicates)
        self._seed = uniform_seed(gen)
        self._evaluations: dict[tuple[int, int, int], Evaluation] = {}

    @staticmethod
    def _effective_model(
        privacy: PrivacyModel,
        sketch: HierarchySketch,
        name: str,
        horizon: int,
        estimator: Estimator,
        mean_variance: dict[str, float],
    ) -> PrivacyModel:
        """The model whose single release of ``sketch`` has the monitor's mean prefix noise."""
        if getattr(privacy, "regime", None) == "exact":
            return privacy
        n = nominal_contributors(privacy)
        single = mechanism_for(privacy, sketch, n_clients=n)
        one = 0.0 if single.noise is None else float(np.mean(single.noise.variance(n)))
        mean = mean_variance.get(name)
        if mean is None:
            mean = mean_prefix_variance(privacy, sketch, name, horizon, estimator=estimator)
        if one <= 0 or mean <= 0:
            return privacy
        return privacy.scaled(math.sqrt(one / mean))

    # ------------------------------------------------------------- read-outs
    @property
    def strategy(self) -> ContinualStrategy:
        return self._release.strategy

    @property
    def periods_released(self) -> int:
        """How many periods have been released (0 before the first update)."""
        return self._release.periods_done

    def receipt(self) -> Receipt:
        """The guarantee of the whole horizon, its ledger entries, noise and randomness."""
        return self._release.mechanism.receipt

    @property
    def guarantee(self) -> Guarantee:
        return self.receipt().guarantee

    @property
    def epsilon_spent(self) -> float:
        """ε charged for the whole horizon (before the first period)."""
        return self.receipt().epsilon_spent

    @property
    def delta_spent(self) -> float:
        return self.receipt().delta_spent

    @property
    def transcript(self) -> NDArray[np.int64]:
        """Every noisy row published so far (rows × sketch length), in publication order."""
        return self._release.transcript

    def row_periods(self) -> list[tuple[int, int, int]]:
        """(first period read, last period read, period published) of every published row."""
        s = self.strategy
        n = s.n_released(self.periods_released)
        return [(*s.row_periods(i), int(s.release_period[i])) for i in range(n)]

    # --------------------------------------------------------------- update
    def update(self, data: Federation | Scan | None) -> PeriodRelease:
        """Release the next period: its clients' hierarchy goes through the continual mechanism.

        Parameters
        ----------
        data : Federation, Scan or None
            The period's clients (binary task, the monitor's score domain);
            None for a period without data (its rows are still published).

        Returns
        -------
        PeriodRelease
            The rows published at the end of this period.

        Raises
        ------
        ValueError
            The horizon is used up, a multiclass task, another score domain.
        TypeError
            ``data`` is not a Federation, a Scan or None.

        Notes
        -----
        Privacy: no charge here; the horizon was charged when the monitor was made.
        """
        if data is not None:
            if not isinstance(data, Federation | Scan):
                raise TypeError(
                    "a period's data must be a Federation, a Scan or None, got "
                    f"{type(data).__name__}"
                )
            if data.kind != "binary":
                raise ValueError("a monitor evaluates a binary task; this period is multiclass")
            if tuple(float(v) for v in data.score_range) != self.score_range:
                raise ValueError(
                    f"this period's score domain {tuple(data.score_range)} differs from the "
                    f"monitor's {self.score_range}; declare one domain"
                )
        out = self._release.update(data)
        self._evaluations.clear()
        return out

    # ------------------------------------------------------------- evaluate
    def _span(self, t: int | None, window: int | None) -> tuple[int, int]:
        now = self.periods_released
        if now == 0:
            raise ValueError("no period has been released yet: call update() first")
        stop = now if t is None else int(t)
        if not 1 <= stop <= now:
            raise ValueError(f"t must lie in 1..{now} (the periods released so far), got {t}")
        if window is None:
            return 0, stop
        w = check_int_at_least(window, 1, name="window")
        if w > stop:
            raise ValueError(f"window must lie in 1..t = {stop}, got {w}")
        return stop - w, stop

    def _evaluation_of(self, start: int, stop: int) -> Evaluation:
        key = (self.periods_released, start, stop)
        if key not in self._evaluations:
            tree = self._release.estimate(start, stop).decode().consistent()
            params = dict(self.parameters)
            params["monitor"] = {
                **self.parameters["monitor"],
                "periods": [start + 1, stop],
                "periods_released": self.periods_released,
                "node_variance": float(tree.node_variance[0].flat[0]),
            }
            self._evaluations[key] = Evaluation(
                tree, params, self.plan, self.bootstrap_replicates, self._seed
            )
        return self._evaluations[key]

    def evaluation(self, t: int | None = None, *, window: int | None = None) -> Evaluation:
        """Every binary metric of the data of periods 1..t, or of the last ``window`` periods to t.

        Parameters
        ----------
        t : int, optional
            The last period (default: the latest released).
        window : int, optional
            None: periods 1..t (cumulative); w: periods t−w+1..t.

        Returns
        -------
        Evaluation
            With standard errors from the known noise of this window
            (``parameters["monitor"]`` names the periods and their node variance).

        Raises
        ------
        ValueError
            Nothing released yet, or t/window out of range.

        Notes
        -----
        Privacy: post-processing of the published rows (no budget). Every
        estimate uses every row published so far (with ``estimator="gls"``),
        so an evaluation of a past period may change as later rows arrive.
        """
        return self._evaluation_of(*self._span(t, window))

    def trend(
        self, metric: TrendMetric = "roc_auc", *, window: int | None = None, level: float = 0.9
    ) -> Trend:
        """``metric`` at every period released so far, with pointwise bands.

        Parameters
        ----------
        metric : {"roc_auc", "average_precision"}
        window : int, optional
            None: the cumulative metric (periods 1..t); w: of the last min(w, t) periods.
        level : float
            Of the pointwise band from the privacy noise.

        Returns
        -------
        Trend
        """
        if metric not in ("roc_auc", "average_precision"):
            raise ValueError(f"metric must be 'roc_auc' or 'average_precision', got {metric!r}")
        if not 0 < level < 1:
            raise ValueError(f"level must lie in (0, 1), got {level}")
        if window is not None:
            check_int_at_least(window, 1, name="window")
        from scipy.stats import norm

        now = self.periods_released
        if now == 0:
            raise ValueError("no period has been released yet: call update() first")
        est, se, samp = np.empty(now), np.empty(now), np.full(now, np.nan)
        for t in range(1, now + 1):
            w = None if window is None else min(window, t)
            ev = self.evaluation(t, window=w)
            est[t - 1] = getattr(ev, metric)
            se[t - 1] = getattr(ev, f"{metric}_se")
            if metric == "roc_auc":
                samp[t - 1] = ev.roc_auc_sampling_se
        z = float(norm.ppf(0.5 + level / 2))
        return Trend(
            metric,
            np.arange(1, now + 1, dtype=np.int64),
            window,
            est,
            se,
            samp,
            np.clip(est - z * se, 0.0, 1.0),
            np.clip(est + z * se, 0.0, 1.0),
            level,
        )

    def drift(
        self,
        metric: Literal["roc_auc"] = "roc_auc",
        *,
        window: int = 8,
        reference: int | tuple[int, int] | None = None,
        alpha: float = 0.05,
        looks: int | None = None,
    ) -> DriftTest:
        """Test whether ``metric`` changed: the last ``window`` periods against a reference.

        The difference recent − before has two independent sources of error:
        the privacy noise of the two windows, correlated because they are read
        from the same rows (covariance from the delta method's leaf weights of
        both AUCs and the rows' covariance, see the module docstring), and the
        sampling of their examples (DeLong, the windows hold disjoint
        examples). The test is two-sided at α / looks (Bonferroni), so that
        testing at every period of the horizon keeps the probability of any
        false alarm at most α when nothing changes.

        Parameters
        ----------
        metric : {"roc_auc"}
            The AUC (the metric with a sampling standard error).
        window : int
            w ≥ 1: periods t−w+1..t, t the latest released.
        reference : int, (int, int) or None
            None: every period before the window (1..t−w); r: periods 1..r;
            (a, b): periods a..b (1-based, inclusive). Must end before the window.
        alpha : float
            Probability of a false alarm over all ``looks`` tests.
        looks : int, optional
            How many tests share α; default T − w (a test at every period
            from w + 1 on).

        Returns
        -------
        DriftTest

        Raises
        ------
        ValueError
            Fewer than w + 1 periods released, a reference overlapping the
            window, a bad α or metric.

        Notes
        -----
        Privacy: post-processing of the published rows (no budget).
        """
        if metric != "roc_auc":
            raise ValueError(
                f"drift tests metric='roc_auc' (the metric with a sampling standard error); "
                f"got {metric!r}"
            )
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
        w = check_int_at_least(window, 1, name="window")
        now = self.periods_released
        if now <= w:
            raise ValueError(
                f"a drift test needs the window ({w} periods) and at least one earlier period; "
                f"{now} released"
            )
        n_looks = (
            max(self.horizon - w, 1)
            if looks is None
            else check_int_at_least(looks, 1, name="looks")
        )
        a = self._reference(reference, now - w)
        b = (now - w, now)
        ev_a, ev_b = self._evaluation_of(*a), self._evaluation_of(*b)
        from scipy.stats import norm

        crit = float(norm.ppf(1.0 - alpha / (2.0 * n_looks)))
        before, recent = ev_a.roc_auc, ev_b.roc_auc
        diff = recent - before
        privacy_var = math.nan
        if math.isfinite(diff):
            cov = self._auc_covariance(ev_a, ev_b, a, b)
            privacy_var = max(ev_a.roc_auc_se**2 + ev_b.roc_auc_se**2 - 2.0 * cov, 0.0)
        sampling_var = ev_a.roc_auc_sampling_se**2 + ev_b.roc_auc_sampling_se**2
        se = math.sqrt(privacy_var + sampling_var) if math.isfinite(privacy_var) else math.nan
        z = diff / se if se > 0 else math.nan
        p = float(2.0 * norm.sf(abs(z))) if math.isfinite(z) else math.nan
        return DriftTest(
            metric,
            now,
            (b[0] + 1, b[1]),
            (a[0] + 1, a[1]),
            float(recent),
            float(before),
            float(diff),
            float(se),
            math.sqrt(privacy_var) if math.isfinite(privacy_var) else math.nan,
            math.sqrt(sampling_var) if math.isfinite(sampling_var) else math.nan,
            float(z),
            crit,
            float(alpha),
            n_looks,
            (diff - crit * se, diff + crit * se),
            p,
            bool(math.isfinite(z) and abs(z) > crit),
        )

    def _reference(self, reference: int | tuple[int, int] | None, end: int) -> tuple[int, int]:
        if reference is None:
            return 0, end
        if isinstance(reference, int | np.integer):
            r = check_int_at_least(int(reference), 1, name="reference")
            lo, hi = 0, r
        else:
            first, last = (int(v) for v in reference)
            if first < 1 or last < first:
                raise ValueError(
                    f"reference must be (first, last) with 1 <= first <= last, got {reference}"
                )
            lo, hi = first - 1, last
        if hi > end:
            raise ValueError(
                f"the reference must end before the window, at period {end} or earlier; got {hi}"
            )
        return lo, hi

    def _auc_covariance(
        self, ev_a: Evaluation, ev_b: Evaluation, a: tuple[int, int], b: tuple[int, int]
    ) -> float:
        """Delta-method covariance of two windows' AUCs from the privacy noise.

        Both windows' trees have one noise variance on every node (v_A, v_B)
        and hence the same consistency map K; their raw nodes' noise has
        covariance c_AB per coordinate (and none across coordinates). With
        w_A, w_B the AUCs' consistent-leaf weights, Cov = c_AB (Kᵀw_A)·(Kᵀw_B),
        which is c_AB / v_A times the cross term of tree A's
        :meth:`~fedeval.sketches.hierarchical_histogram.HierarchicalHistogram.leaf_query_covariance`.
        """
        c_ab = self._release.covariance(a, b)
        v_a = float(ev_a.tree.node_variance[0].flat[0])
        if c_ab == 0.0 or v_a <= 0.0 or not (ev_a.counts.defined and ev_b.counts.defined):
            return 0.0
        wa = dense_leaf_weights(ev_a.tree, ev_a.counts, "roc_auc")
        wb = dense_leaf_weights(ev_b.tree, ev_b.counts, "roc_auc")
        cross = sum(
            ev_a.tree.leaf_query_covariance(np.vstack([wa[c], wb[c]]), c)[0, 1] for c in (0, 1)
        )
        return float(c_ab / v_a * cross)


def monitor(
    privacy: PrivacyModel,
    *,
    horizon: int,
    examples_per_period: int | None = None,
    rng: RNGLike = None,
    ledger: BudgetLedger | None = None,
    **options: Any,
) -> Monitor:
    """Continual private evaluation over ``horizon`` periods, its budget charged now.

    Parameters
    ----------
    privacy : DistributedDP, CentralDP or SecureAggregation
        The guarantee of the whole horizon (see :class:`Monitor`).
    horizon : int
        T, the number of periods.
    examples_per_period : int
        A size you declare public, used only to plan the hierarchy.
    rng : int, Generator or None
    ledger : BudgetLedger, optional
        Charged once for the horizon (default: the model's own budget).
    **options
        :class:`Monitor`'s (``mechanism``, ``estimator``, ``height``,
        ``branching``, ``score_range``, ...).

    Returns
    -------
    Monitor

    Notes
    -----
    Privacy: (ε, δ) of ``privacy`` for the whole horizon, charged before the
    first period; its receipt says the guarantee covers this monitor alone
    (:data:`SCOPE_ONE_MONITOR`). Run it in a :class:`fedeval.Context`
    (``ctx.monitor``) to compose it with other releases.

    References
    ----------
    Dwork, Naor, Pitassi & Rothblum 2010; Chan, Shi & Song 2011; Honaker 2015;
    Fichtenberger, Henzinger & Upadhyay 2023; Henzinger, Upadhyay & Upadhyay 2023.
    """
    scope = options.pop("scope", None)
    if scope is None and ledger is None:
        scope = SCOPE_ONE_MONITOR
    return Monitor(
        privacy,
        horizon=horizon,
        examples_per_period=examples_per_period,
        rng=rng,
        ledger=ledger,
        scope=scope,
        **options,
    )
