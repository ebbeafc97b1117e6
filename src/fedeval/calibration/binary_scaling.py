"""Binary temperature and Platt scaling, with do no harm.

A binary score s is mapped to σ(a·x + b), x = logit(s) for scores that are
probabilities (domain [0, 1]; s clipped to [prob_floor, 1 − prob_floor]
first), x = s otherwise:

* ``"temperature"``: b = 0, a = 1/T (Guo et al. 2017 for two classes);
* ``"platt"``: a and b free (Platt 1999, scikit-learn's
  ``CalibratedClassifierCV(method="sigmoid")`` default, fitted here to the
  logit of probability scores).

The identity map is a = 1, b = 0. Two ways to learn it, by privacy model:

* **SecureAggregation, DistributedDP, LocalDP** (the models binary binning
  supports): one release of the per-class score hierarchy
  (:func:`fedeval.calibration.binning.release_scores_hierarchy`, height 10 by
  default, as BBQ), then post-processing: a weighted logistic regression of
  the leaf counts (negative noisy counts clamped at 0, a named step) on the
  leaf midpoints' x, with a ridge (λ/2)·M̂·‖θ − θ₀‖² towards the identity
  (λ = :data:`DEFAULT_L2`, M̂ the released total). Without noise this is the
  maximum-likelihood fit of the scores quantised to their leaves.
* **UserLevelDP**: federated Newton on the pooled NLL
  (:mod:`fedeval.calibration.newton`) of the two-class logits (0, x), with
  the "temperature" family or the two-parameter "platt" family.

Do no harm (default): from the hierarchy, the held-out NLL change is the
in-sample change on the released leaves plus the optimism of a d-parameter
logistic fit, d + tr(I⁻¹J) (:func:`~fedeval.calibration.do_no_harm.glm_optimism`:
Akaike's d plus the release's noise); the map is kept only if it lowers the
estimated ECE and its NLL gain exceeds z_{1−a} standard errors
(:func:`~fedeval.calibration.do_no_harm.keep_or_decline`). Under user-level DP
Newton's own test decides (released in-sample change plus d·q/n̂, the same
one-sided level). A declined map is an
:class:`~fedeval.calibration.do_no_harm.IdentityCalibrator` carrying the
reason.

Predictions are floored at the public ``prob_floor`` (1e-4).

References
----------
.. [1] J. Platt, "Probabilistic outputs for support vector machines and
   comparisons to regularized likelihood methods", 1999.
.. [2] C. Guo, G. Pleiss, Y. Sun and K. Weinberger, "On calibration of modern
   neural networks", ICML 2017 (temperature scaling).
.. [3] cormode-markov-2023-federated-calibration-evaluation §6 (the released
   per-class score hierarchy); private-federated-multiclass-calibration §4.3
   (user-level DP by clipping and Gaussian noise).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import minimize

from fedeval.aggregation import Path
from fedeval.calibration.base import (
    PROBABILITY_FLOOR,
    Calibrator,
    check_prob_floor,
    check_raw_scores,
    register,
)
from fedeval.calibration.binning import (
    DEFAULT_HEIGHT,
    BinaryPrivacy,
    check_binary_inputs,
    receipt_record,
    release_scores_hierarchy,
)
from fedeval.calibration.do_no_harm import (
    HARM_LEVEL,
    IdentityCalibrator,
    glm_optimism,
    harm_threshold,
    keep_or_decline,
)
from fedeval.data import Federation
from fedeval.privacy.ledger import BudgetLedger
from fedeval.privacy.mechanism_for import client_clip
from fedeval.randomness import RNGLike, as_generator
from fedeval.sketches.hierarchical_histogram import HierarchicalHistogram
from fedeval.sketches.hierarchy import LevelBudget
from fedeval.validation import check_positive

__all__ = [
    "DEFAULT_L2",
    "FAMILIES",
    "BinaryScalingCalibrator",
    "binary_scaling",
    "features",
    "scaling_from_hierarchy",
    "scaling_input",
]

BinaryFamily = Literal["temperature", "platt"]
FAMILIES: tuple[str, ...] = ("temperature", "platt")

#: Per-example ridge λ towards the identity map (as the multiclass temperature's).
DEFAULT_L2 = 1e-4


def _sigmoid(v: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.asarray(0.5 * (1.0 + np.tanh(0.5 * v)), dtype=np.float64)


def scaling_input(
    scores: Any, score_range: tuple[float, float], prob_floor: float
) -> NDArray[np.float64]:
    """x of every score: logit(clip(s, f, 1 − f)) on [0, 1], the score itself otherwise."""
    if tuple(score_range) == (0.0, 1.0):
        s = np.clip(np.asarray(scores, dtype=np.float64), prob_floor, 1.0 - prob_floor)
        return np.asarray(np.log(s) - np.log1p(-s), dtype=np.float64)
    return np.asarray(scores, dtype=np.float64)


@register
@dataclass(frozen=True, eq=False)
class BinaryScalingCalibrator(Calibrator):
    """σ(a·x + b) of a binary score (module docstring).

    Attributes
    ----------
    family : {"temperature", "platt"}
    slope, intercept : float
        a and b (temperature: a = 1/T, b = 0).
    score_range : list of float
        The federation's score domain; [0, 1] means x = logit(s).
    prob_floor : float
        Public floor: predictions lie in [prob_floor, 1 − prob_floor] (also
        the clip of s before its logit).
    post_processing : list of str
        Named post-processing steps (hierarchy route).
    procedure : dict
        How it was learned (route, ridge, rounds under user-level DP, ...).
    harm_estimates : dict
        The do-no-harm estimates that kept the map.
    receipt : dict
    """

    kind: ClassVar[str] = "binary-scaling"

    family: str
    slope: float
    intercept: float
    score_range: list[float] = field(default_factory=lambda: [0.0, 1.0])
    prob_floor: float = PROBABILITY_FLOOR
    post_processing: list[str] = field(default_factory=list)
    procedure: dict[str, Any] = field(default_factory=dict)
    harm_estimates: dict[str, Any] = field(default_factory=dict)

    @property
    def temperature(self) -> float:
        """T = 1/a."""
        return 1.0 / self.slope if self.slope != 0 else math.inf

    def predict_proba(self, scores: Any) -> NDArray[np.float64]:
        """Calibrated P(y = 1), shape (n,), in [prob_floor, 1 − prob_floor].

        Raises
        ------
        ValueError
            NaN/inf scores or a shape other than (n,).
        TypeError
            Non-numeric scores.
        """
        s = check_raw_scores(scores)
        rng = (float(self.score_range[0]), float(self.score_range[1]))
        x = scaling_input(s, rng, self.prob_floor)
        p = _sigmoid(self.slope * x + self.intercept)
        return np.clip(p, self.prob_floor, 1.0 - self.prob_floor)


def _check_family(family: Any) -> str:
    if family not in FAMILIES:
        raise ValueError(f"binary scaling family must be one of {FAMILIES}, got {family!r}")
    return str(family)


def features(family: str, x: NDArray[np.float64]) -> NDArray[np.float64]:
    """The logistic map's features of x: (x) for temperature, (x, 1) for Platt."""
    return x[:, None] if family == "temperature" else np.column_stack([x, np.ones_like(x)])


def _fit(
    family: str,
    x: NDArray[np.float64],
    pos: NDArray[np.float64],
    neg: NDArray[np.float64],
    l2: float,
) -> NDArray[np.float64]:
    """Weighted logistic regression with the ridge towards the identity (a = 1, b = 0)."""
    feats = features(family, x)
    theta0 = np.array([1.0] if family == "temperature" else [1.0, 0.0])
    m = max(float(np.sum(pos + neg)), 1.0)

    def objective(theta: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        v = feats @ theta
        # −log σ(v) = softplus(−v); −log(1 − σ(v)) = softplus(v)
        loss = float(np.sum(pos * np.logaddexp(0.0, -v) + neg * np.logaddexp(0.0, v)))
        r = _sigmoid(v) * (pos + neg) - pos
        d = theta - theta0
        return loss + 0.5 * l2 * m * float(d @ d), feats.T @ r + l2 * m * d

    res = minimize(objective, theta0, jac=True, method="L-BFGS-B", options={"maxiter": 500})
    theta = np.asarray(res.x, dtype=np.float64)
    return theta if np.isfinite(theta).all() else theta0


def scaling_from_hierarchy(
    hist: HierarchicalHistogram,
    *,
    family: BinaryFamily = "platt",
    l2: float = DEFAULT_L2,
    prob_floor: float = PROBABILITY_FLOOR,
) -> BinaryScalingCalibrator:
    """Temperature or Platt scaling fitted to a released score hierarchy (post-processing).

    Parameters
    ----------
    hist : HierarchicalHistogram
        Binary per-class release; made consistent here if it is not.
    family : {"temperature", "platt"}
    l2 : float
        Ridge λ ≥ 0 per example towards the identity map.
    prob_floor : float
        Public floor in (0, 0.5).

    Returns
    -------
    BinaryScalingCalibrator

    Privacy
    -------
    None consumed: post-processing of ``hist`` (whose receipt it carries).
    """
    fam = _check_family(family)
    floor = check_prob_floor(prob_floor)
    if hist.spec.n_classes != 2:
        raise ValueError(f"binary scaling needs a two-class hierarchy, got {hist.spec.n_classes}")
    steps = []
    if not hist.is_consistent:
        hist = hist.consistent()
    steps.append("consistency (Hay et al. 2010)")
    neg, pos = hist.leaves[0], hist.leaves[1]
    n_clamped = int(np.count_nonzero(neg < 0) + np.count_nonzero(pos < 0))
    steps.append(f"clamp negative leaf counts to 0 ({n_clamped} counts changed)")
    lo, hi = hist.spec.score_range
    mids = lo + (np.arange(hist.spec.n_leaves) + 0.5) * hist.spec.leaf_width
    x = scaling_input(mids, (lo, hi), floor)
    theta = _fit(fam, x, np.maximum(pos, 0.0), np.maximum(neg, 0.0), l2)
    steps.append(
        f"weighted logistic regression of the leaf counts on the leaf midpoints' "
        f"{'logit' if (lo, hi) == (0.0, 1.0) else 'score'} (ridge λ = {l2:g} per example "
        "towards the identity)"
    )
    steps.append(f"floor predictions at prob_floor = {floor:g} (public)")
    return BinaryScalingCalibrator(
        family=fam,
        slope=float(theta[0]),
        intercept=0.0 if fam == "temperature" else float(theta[1]),
        score_range=[float(lo), float(hi)],
        prob_floor=floor,
        post_processing=steps,
        procedure={"route": "one release of the per-class score hierarchy", "l2": l2},
        **receipt_record(hist),
    )


def binary_scaling(
    fed: Federation,
    privacy: BinaryPrivacy,
    *,
    family: BinaryFamily = "platt",
    height: int = DEFAULT_HEIGHT,
    branching: int = 2,
    level_budget: LevelBudget = "split",
    path: Path = "fast",
    l2: float = DEFAULT_L2,
    rounds: int | None = None,
    sampling_rate: float = 1.0,
    max_step: float = 1.0,
    rng: RNGLike = None,
    ledger: BudgetLedger | None = None,
    do_no_harm: bool = True,
    prob_floor: float = PROBABILITY_FLOOR,
    harm_level: float = HARM_LEVEL,
) -> Calibrator:
    """Federated binary temperature or Platt scaling (module docstring).

    Parameters
    ----------
    fed : Federation
        Binary task.
    privacy : SecureAggregation, DistributedDP, LocalDP or UserLevelDP
    family : {"temperature", "platt"}
    height, branching, level_budget, path
        The score hierarchy (not UserLevelDP): as
        :func:`~fedeval.calibration.bbq.bbq` (height 10 by default).
    l2 : float
        Ridge λ ≥ 0 per example towards the identity map.
    rounds, sampling_rate, max_step
        UserLevelDP only: federated Newton's T (default 10), q and trust
        radius.
    rng : int, Generator or None
    ledger : BudgetLedger, optional
        Charged once, before any noise (the hierarchy, or all T rounds).
    do_no_harm : bool
        Return an :class:`~fedeval.calibration.do_no_harm.IdentityCalibrator`
        carrying the reason unless the release shows the map helps.
    prob_floor : float
        Public floor in (0, 0.5) of every prediction (and of s before its logit).
    harm_level : float
        One-sided level a in (0, 0.5) of the do-no-harm test (hierarchy route;
        the Newton route uses ``do_no_harm.HARM_LEVEL``).

    Returns
    -------
    BinaryScalingCalibrator or IdentityCalibrator

    Raises
    ------
    TypeError
        ``fed`` is not a Federation; a privacy model that can release neither
        the hierarchy nor clipped sums.
    ValueError
        Multiclass federation, unknown family, bad options.
    BudgetExceededError
        The ledger cannot afford the release(s).

    Privacy
    -------
    SA / DistDP / LDP: one release (the per-class score hierarchy), with the
    guarantee of ``privacy``; the fit and the do-no-harm estimates are
    post-processing. UserLevelDP: T Poisson-subsampled rounds of clipped
    per-client sums with Gaussian noise, (ε, δ)-DP per client by RDP
    accounting (:mod:`fedeval.calibration.newton`). Public inputs: the score
    domain, the family, the height (or T, q, C), ``l2`` and ``prob_floor``.
    """
    check_binary_inputs(fed, privacy)
    fam = _check_family(family)
    floor = check_prob_floor(prob_floor)
    ridge = float(l2)
    if not (math.isfinite(ridge) and ridge >= 0):
        raise ValueError(f"l2 must be a finite number >= 0, got {l2!r}")
    harm_threshold(harm_level)
    if client_clip(privacy) is not None:  # user-level DP: clients clip their own sums
        return _newton_route(
            fed,
            privacy,
            fam,
            l2=ridge,
            rounds=rounds,
            sampling_rate=sampling_rate,
            max_step=check_positive(max_step, name="max_step"),
            rng=rng,
            ledger=ledger,
            do_no_harm=do_no_harm,
            prob_floor=floor,
        )
    if rounds is not None or sampling_rate != 1.0:
        raise ValueError(
            "rounds and sampling_rate apply to user-level DP (federated Newton) only; "
            f"{type(privacy).__name__} learns the map from one score-hierarchy release"
        )
    hist = release_scores_hierarchy(
        fed,
        privacy,
        height=height,
        branching=branching,
        level_budget=level_budget,
        path=path,
        rng=rng,
        ledger=ledger,
    )
    cal = scaling_from_hierarchy(hist, family=fam, l2=ridge, prob_floor=floor)  # type: ignore[arg-type]
    if not do_no_harm:
        return cal
    consistent = hist if hist.is_consistent else hist.consistent()
    lo, hi = consistent.spec.score_range
    mids = lo + (np.arange(consistent.spec.n_leaves) + 0.5) * consistent.spec.leaf_width
    x = scaling_input(mids, (lo, hi), floor)
    optimism = glm_optimism(consistent, features(fam, x), cal.predict_proba(mids))
    d = 1 if fam == "temperature" else 2
    return keep_or_decline(
        cal, consistent, method=fam, optimism=optimism, n_params=d, level=harm_level
    )


def _newton_route(
    fed: Federation,
    privacy: BinaryPrivacy,
    family: str,
    *,
    l2: float,
    rounds: int | None,
    sampling_rate: float,
    max_step: float,
    rng: RNGLike,
    ledger: BudgetLedger | None,
    do_no_harm: bool,
    prob_floor: float,
) -> Calibrator:
    """Federated Newton on the two-class logits (0, x) (user-level DP)."""
    from fedeval.calibration.multiclass import check_procedure
    from fedeval.calibration.newton import federated_newton, pooled_procedure

    x = scaling_input(fed.scores, fed.score_range, prob_floor)
    logits = np.column_stack([np.zeros_like(x), x])
    source = replace(fed, scores=logits, kind="logits")
    t, q = check_procedure(source, 10 if rounds is None else rounds, sampling_rate)
    run = federated_newton(
        source,
        logits,
        family,
        privacy,
        rounds=t,
        sampling_rate=q,
        l2=l2,
        max_step=max_step,
        gen=as_generator(rng),
        ledger=ledger,
        do_no_harm=bool(do_no_harm),
        progress=False,
    )
    rec = pooled_procedure(
        run,
        f"per-example means of the loss change, NLL gradient and Hessian of the binary {family} "
        "map, and a count of 1, from every client (clipped)",
        clip=client_clip(privacy),
        optimizer="newton",
        l2=l2,
    )
    rec["route"] = "federated Newton under user-level DP"
    receipt = run.schedule.mechanism.receipt.as_dict()
    # Released values only: the last accepted round's change, its optimism and SE.
    est = {
        "nll_change": run.nll_change + run.optimism,
        "nll_change_in_sample": run.nll_change,
        "optimism": run.optimism,
        "nll_change_se": run.nll_change_se,
        "harm_level": HARM_LEVEL,
        "threshold": harm_threshold(HARM_LEVEL),
    }
    if not run.applied:
        return IdentityCalibrator(
            declined=family, reason=run.reason, estimates=est, receipt=receipt, procedure=rec
        )
    theta = run.theta
    return BinaryScalingCalibrator(
        family=family,
        slope=float(theta[0]),
        intercept=0.0 if family == "temperature" else float(theta[1]),
        score_range=[float(fed.score_range[0]), float(fed.score_range[1])],
        prob_floor=prob_floor,
        procedure=rec,
        harm_estimates=est,
        receipt=receipt,
    )
