"""``method="auto"``: choose a binary calibrator by its released NLL estimate, within one budget.

Candidates and budget
---------------------
* **SecureAggregation, DistributedDP, LocalDP**: one release of the per-class
  score hierarchy (height 10, as BBQ) carries the whole budget; histogram
  binning, BBQ, temperature and Platt scaling are all post-processing of it
  (:func:`~fedeval.calibration.binning.binning_from_hierarchy`,
  :func:`~fedeval.calibration.bbq.bbq_from_hierarchy`,
  :func:`~fedeval.calibration.binary_scaling.scaling_from_hierarchy`), so
  trying them costs nothing more. The split, stated in ``procedure``: 100% to
  the one hierarchy.
* **UserLevelDP**: the candidates are temperature and Platt scaling by
  federated Newton (binning needs a hierarchy release, which user-level DP
  does not offer here); each run gets half of ε and of δ, fixed before
  anything is released, and the receipt composes the two (basic composition:
  ε and δ add up to the model's).

Choice
------
Every candidate's held-out NLL change Δ̂_k is estimated from its own release
with its standard error (:func:`~fedeval.calibration.do_no_harm.binary_harm_estimates`,
or Newton's released change plus its optimism). Choosing the best of K noisy
estimates is itself optimistic, so each candidate is tested at level a/K
(Bonferroni): a candidate is admissible if it lowers the estimated ECE and
−Δ̂_k > z_{1−a/K}·SE_k; the admissible candidate of smallest Δ̂_k is returned.
If none is admissible, the probability that a map which does not help is
returned is at most a (the union bound), and the result is an
:class:`~fedeval.calibration.do_no_harm.IdentityCalibrator` whose reason lists
every candidate's estimate. The chosen calibrator's ``harm_estimates`` holds
``"selection"``: every candidate's estimates.

References
----------
.. [1] C. E. Bonferroni (1936); the union bound for K one-sided tests.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from fedeval.aggregation import Path
from fedeval.calibration.base import (
    PROBABILITY_FLOOR,
    Calibrator,
    check_prob_floor,
    warn_degenerate,
)
from fedeval.calibration.bbq import bbq_from_hierarchy
from fedeval.calibration.binary_scaling import (
    DEFAULT_L2,
    binary_scaling,
    features,
    scaling_from_hierarchy,
    scaling_input,
)
from fedeval.calibration.binning import (
    DEFAULT_HEIGHT,
    BinaryPrivacy,
    binning_from_hierarchy,
    check_binary_inputs,
    release_scores_hierarchy,
)
from fedeval.calibration.do_no_harm import (
    HARM_LEVEL,
    IdentityCalibrator,
    binary_harm_estimates,
    bucket_optimism,
    glm_optimism,
    harm_threshold,
)
from fedeval.data import Federation
from fedeval.privacy.ledger import BudgetExceededError, BudgetLedger
from fedeval.privacy.mechanism_for import client_clip
from fedeval.privacy.receipt import Receipt, compose
from fedeval.randomness import RNGLike, as_generator
from fedeval.sketches.hierarchical_histogram import HierarchicalHistogram
from fedeval.sketches.hierarchy import LevelBudget

__all__ = ["HIERARCHY_CANDIDATES", "USER_LEVEL_CANDIDATES", "auto_calibrate"]

HIERARCHY_CANDIDATES: tuple[str, ...] = ("binning", "bbq", "temperature", "platt")
USER_LEVEL_CANDIDATES: tuple[str, ...] = ("temperature", "platt")


def _hierarchy_candidates(
    hist: HierarchicalHistogram, prob_floor: float, l2: float
) -> dict[str, tuple[Calibrator, float, float]]:
    """Each candidate with its optimism (nats) and number of fitted values."""
    out: dict[str, tuple[Calibrator, float, float]] = {}
    binning = binning_from_hierarchy(hist, prob_floor=prob_floor)
    out["binning"] = (
        binning,
        bucket_optimism(hist, [(binning.edges, binning.probabilities)], np.ones(1)),
        float(binning.n_bins),
    )
    bq = bbq_from_hierarchy(hist, prob_floor=prob_floor)
    models = [
        (np.asarray(e, dtype=np.float64), np.asarray(p, dtype=np.float64))
        for e, p in zip(bq.edges, bq.probabilities, strict=True)
    ]
    out["bbq"] = (
        bq,
        bucket_optimism(hist, models, bq.weights, prior_strength=2.0),
        float(np.dot(bq.weights, np.asarray(bq.n_bins, dtype=np.float64))),
    )
    lo, hi = hist.spec.score_range
    mids = lo + (np.arange(hist.spec.n_leaves) + 0.5) * hist.spec.leaf_width
    x = scaling_input(mids, (lo, hi), prob_floor)
    for fam, d in (("temperature", 1), ("platt", 2)):
        cal = scaling_from_hierarchy(hist, family=fam, l2=l2, prob_floor=prob_floor)  # type: ignore[arg-type]
        out[fam] = (cal, glm_optimism(hist, features(fam, x), cal.predict_proba(mids)), float(d))
    return out


def _choose(estimates: dict[str, dict[str, float]], level: float) -> tuple[str | None, float]:
    """The admissible candidate of smallest estimated change (module docstring), and z."""
    z = harm_threshold(level / len(estimates))
    admissible = {
        name: est["nll_change"]
        for name, est in estimates.items()
        if est.get("ece_after", -math.inf) < est.get("ece_before", math.inf)
        and -est["nll_change"] > z * est["nll_change_se"]
    }
    if not admissible:
        return None, z
    return min(admissible, key=lambda k: admissible[k]), z


def _summary(estimates: dict[str, dict[str, float]]) -> str:
    return "; ".join(
        f"{name}: {est['nll_change']:+.4f} ± {est['nll_change_se']:#.2g}"
        for name, est in estimates.items()
    )


def auto_calibrate(
    fed: Federation,
    privacy: BinaryPrivacy,
    *,
    height: int = DEFAULT_HEIGHT,
    branching: int = 2,
    level_budget: LevelBudget = "split",
    path: Path = "fast",
    l2: float = DEFAULT_L2,
    rounds: int | None = None,
    sampling_rate: float = 1.0,
    rng: RNGLike = None,
    ledger: BudgetLedger | None = None,
    prob_floor: float = PROBABILITY_FLOOR,
    harm_level: float = HARM_LEVEL,
) -> Calibrator:
    """Binary calibration by the candidate with the best released NLL estimate (module docstring).

    Parameters
    ----------
    fed : Federation
        Binary task.
    privacy : SecureAggregation, DistributedDP, LocalDP or UserLevelDP
    height, branching, level_budget, path
        The one score hierarchy (not UserLevelDP).
    l2 : float
        Ridge of the scaling candidates.
    rounds, sampling_rate
        UserLevelDP: each Newton run's T (default 10) and q.
    rng : int, Generator or None
    ledger : BudgetLedger, optional
        Must afford the whole budget before anything is released.
    prob_floor : float
        Public floor of every candidate's predictions.
    harm_level : float
        a: the probability of returning a map that does not help is at most a
        (each of the K candidates tested at a/K).

    Returns
    -------
    Calibrator
        The chosen calibrator (``harm_estimates["selection"]`` lists every
        candidate), or an IdentityCalibrator with the reason.

    Raises
    ------
    TypeError, ValueError
        As the candidates' own functions.
    BudgetExceededError
        The ledger cannot afford the whole budget (nothing is released).

    Privacy
    -------
    The model's (ε, δ) in total: one hierarchy release (SA, DistDP, LDP), or
    two user-level DP Newton runs of (ε/2, δ/2) each, composed in the receipt.
    The selection is post-processing of the released estimates.
    """
    check_binary_inputs(fed, privacy)
    floor = check_prob_floor(prob_floor)
    harm_threshold(harm_level)
    if client_clip(privacy) is not None:  # user-level DP: federated Newton
        return _user_level(
            fed, privacy, l2=l2, rounds=rounds, sampling_rate=sampling_rate, rng=rng,
            ledger=ledger, prob_floor=floor, level=harm_level,
        )  # fmt: skip
    if rounds is not None or sampling_rate != 1.0:
        raise ValueError("rounds and sampling_rate apply to user-level DP only")
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
    hist = hist if hist.is_consistent else hist.consistent()
    candidates = _hierarchy_candidates(hist, floor, l2)
    split = {
        "budget_split": "100% to one release of the per-class score hierarchy; every "
        f"candidate ({', '.join(candidates)}) is post-processing of it"
    }
    if tuple(hist.spec.score_range) != (0.0, 1.0):
        # No identity to compare with: the in-sample NLL of each candidate decides.
        raise ValueError(
            "method='auto' compares calibrators with the scores themselves, which must be "
            f"probabilities (score_range (0, 1)); got {hist.spec.score_range}"
        )
    estimates = {
        name: binary_harm_estimates(hist, cal, optimism=opt, n_params=k, level=harm_level)
        for name, (cal, opt, k) in candidates.items()
    }
    return _decide(candidates, estimates, harm_level, split, dict(hist.receipt.as_dict()))


def _decide(
    candidates: dict[str, tuple[Calibrator, float, float]],
    estimates: dict[str, dict[str, float]],
    level: float,
    split: dict[str, Any],
    receipt: dict[str, Any],
) -> Calibrator:
    chosen, z = _choose(estimates, level)
    selection = {
        "candidates": {k: dict(v) for k, v in estimates.items()},
        "rule": (
            f"each of {len(estimates)} candidates tested at level {level:g}/{len(estimates)} "
            f"(z = {z:.4g}); the admissible one of smallest estimated held-out NLL change"
        ),
        **split,
    }
    if chosen is None:
        reason = (
            f"no candidate's release shows it helps on new data (estimated held-out change of "
            f"the NLL per example ± standard error: {_summary(estimates)}); a candidate is kept "
            f"only if it lowers the ECE and its gain exceeds {z:.3g} standard errors (one-sided "
            f"level {level:g}, split over {len(estimates)} candidates)"
        )
        warn_degenerate(
            f"auto calibration was not applied: {reason}; returning the identity map (the "
            "scores as they are)."
        )
        return IdentityCalibrator(
            declined="auto",
            reason=reason,
            estimates={"selection": selection},
            receipt=receipt,
            procedure={"applied": False, "selection": selection},
        )
    cal = candidates[chosen][0]
    est = {**estimates[chosen], "method": chosen, "selection": selection}
    out = replace(cal, harm_estimates=est)  # type: ignore[call-arg]
    if receipt and out.receipt != receipt:
        out = replace(out, receipt=receipt)
    return out


def _user_level(
    fed: Federation,
    privacy: BinaryPrivacy,
    *,
    l2: float,
    rounds: int | None,
    sampling_rate: float,
    rng: RNGLike,
    ledger: BudgetLedger | None,
    prob_floor: float,
    level: float,
) -> Calibrator:
    """Temperature and Platt by federated Newton, each with half of (ε, δ)."""
    share = 1.0 / len(USER_LEVEL_CANDIDATES)
    if ledger is not None and not ledger.can_afford(
        float(privacy.epsilon), float(privacy.delta or 0.0)
    ):
        raise BudgetExceededError(
            f"auto calibration needs ε={privacy.epsilon:.4g}, δ={privacy.delta:.3g} up front "
            f"(split {share:.0%} per candidate) but only ε={ledger.remaining_epsilon:.4g}, "
            f"δ={ledger.remaining_delta:.3g} remain"
        )
    gen = as_generator(rng)
    part = privacy.scaled(share)
    candidates: dict[str, tuple[Calibrator, float, float]] = {}
    estimates: dict[str, dict[str, float]] = {}
    receipts: list[Receipt] = []
    for fam in USER_LEVEL_CANDIDATES:
        cal = binary_scaling(
            fed,
            part,
            family=fam,  # type: ignore[arg-type]
            l2=l2,
            rounds=rounds,
            sampling_rate=sampling_rate,
            rng=gen,
            ledger=ledger,
            do_no_harm=False,
            prob_floor=prob_floor,
        )
        receipts.append(cal.privacy_receipt)
        est = {k: float(v) for k, v in getattr(cal, "harm_estimates", {}).items()}
        candidates[fam] = (cal, 0.0, 1.0 if fam == "temperature" else 2.0)
        estimates[fam] = est
    receipt = compose(
        receipts,
        f"auto calibration under user-level DP: {len(receipts)} federated Newton runs "
        f"({', '.join(USER_LEVEL_CANDIDATES)}), {share:.0%} of ε and δ each, fixed up front",
    )
    split = {
        "budget_split": dict.fromkeys(USER_LEVEL_CANDIDATES, f"{share:.0%} of ε and δ"),
    }
    return _decide(candidates, estimates, level, split, receipt.as_dict())
