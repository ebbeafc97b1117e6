"""Federated Bayesian Binning into Quantiles (BBQ) for binary scores.

BBQ (Naeini, Cooper and Hauskrecht 2015) averages histogram-binning models with
different numbers of equi-depth buckets B, each weighted by its Bayesian score.
Cormode–Markov §7.3 run it on federated data by building every candidate
bucketing from **one** high-resolution private score hierarchy: the candidates
are post-processing of that release, so trying many B costs no extra privacy.

Model
-----
For a bucketing M with B buckets, bucket b holding m_b positives and n_b
negatives (N_b = m_b + n_b) and spanning scores whose midpoint, as a fraction of
the score domain, is p_b, BBQ places a Beta(α_b, β_b) prior on the bucket's
positive rate with

    α_b = (N'/B) p_b,    β_b = (N'/B) (1 − p_b),    N' = 2 (equivalent sample size),

and the marginal likelihood is the product of Beta–Binomial evidences

    P(D | M) = Π_b  Γ(N'/B) / Γ(N_b + N'/B) · Γ(m_b + α_b) / Γ(α_b) · Γ(n_b + β_b) / Γ(β_b).

With a uniform prior over the candidate models, the weight of M is
``P(D|M) / Σ_M' P(D|M')`` (computed in log space with ``gammaln``), and the
calibrated probability of a score s is the weighted average over models of the
posterior mean of its bucket's rate, ``(m_b + α_b) / (N_b + N'/B)``.

Candidates
----------
B ranges from ``M^{1/3}/10`` to ``10 M^{1/3}`` (Naeini et al.; Cormode–Markov
§7.3), M the released total; by default ``n_candidates`` distinct integers
spaced geometrically over that range (all integers if fewer), capped at the
number of leaves. Every candidate's boundaries are the private equi-depth
quantiles snapped to leaf edges, exactly as
:func:`fedeval.calibration.binning.binning_from_hierarchy`.

Noise
-----
Noisy counts are clamped at 0 before entering the Gamma functions (a named
post-processing step). As Cormode–Markov note, BBQ is not tuned to noisy counts;
under heavy noise it tends to favour bucketings with more buckets.

Floor
-----
Predictions are clipped to [prob_floor, 1 − prob_floor] (public, default
:data:`~fedeval.calibration.base.PROBABILITY_FLOOR` = 1e-4, a named
post-processing step): a bucket's posterior mean (m_b + α_b)/(N_b + N'/B) of a
bucket without positives is α_b/(N_b + N'/B), which can be 1e-5 or less.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray
from scipy.special import gammaln

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
    bucket_counts,
    bucket_of,
    check_binary_inputs,
    equi_depth_is_defined,
    receipt_record,
    release_scores_hierarchy,
    snapped_equi_depth_leaf_edges,
    warn_no_mass,
)
from fedeval.calibration.do_no_harm import HARM_LEVEL, harm_threshold
from fedeval.data import Federation
from fedeval.privacy.ledger import BudgetLedger
from fedeval.randomness import RNGLike
from fedeval.sketches.hierarchical_histogram import HierarchicalHistogram
from fedeval.sketches.hierarchy import LevelBudget
from fedeval.validation import check_int_at_least, check_positive

__all__ = ["BBQCalibrator", "bbq", "bbq_candidate_bins", "bbq_from_hierarchy", "bbq_log_score"]

#: Equivalent sample size N' of the BBQ prior (Naeini et al. 2015).
PRIOR_STRENGTH = 2.0


@register
@dataclass(frozen=True, eq=False)
class BBQCalibrator(Calibrator):
    """Bayesian average of histogram-binning models.

    Attributes
    ----------
    edges : list of list of float
        For each model, its increasing bucket boundaries (left-closed buckets,
        the last closed).
    probabilities : list of list of float
        For each model, the posterior-mean positive rate of each bucket.
    weights : ndarray, shape (n_models,)
        Normalised model weights (sum to 1).
    log_scores : ndarray, shape (n_models,)
        log P(D | M) of each model (the log Bayesian score).
    n_bins : list of int
        Number of buckets of each model (after merging coincident boundaries).
    post_processing : list of str
    prob_floor : float
        The public floor: every prediction lies in [prob_floor, 1 − prob_floor].
    harm_estimates : dict
        The do-no-harm estimates that kept the map (empty when it was off).
    receipt : dict
        The receipt of the one hierarchy release.
    """

    kind: ClassVar[str] = "bbq"
    array_fields: ClassVar[tuple[str, ...]] = ("weights", "log_scores")

    edges: list[list[float]]
    probabilities: list[list[float]]
    weights: NDArray[np.float64]
    log_scores: NDArray[np.float64]
    n_bins: list[int]
    post_processing: list[str] = field(default_factory=list)
    prob_floor: float = PROBABILITY_FLOOR
    harm_estimates: dict[str, Any] = field(default_factory=dict)

    def predict_proba(self, scores: Any) -> NDArray[np.float64]:
        """Calibrated P(y = 1): the weight-averaged bucket probabilities of all models.

        Parameters
        ----------
        scores : array-like of float, shape (n,)
            Scores outside the domain go to the end buckets.

        Returns
        -------
        ndarray of float64, shape (n,)

        Raises
        ------
        ValueError
            NaN/inf scores or a shape other than (n,).
        """
        s = check_raw_scores(scores)
        out = np.zeros(s.shape)
        for e, p, w in zip(self.edges, self.probabilities, self.weights, strict=True):
            if w > 0:
                out += w * np.asarray(p, dtype=np.float64)[bucket_of(np.asarray(e), s)]
        return np.clip(out, self.prob_floor, 1.0 - self.prob_floor)


def bbq_log_score(
    positives: Any, negatives: Any, midpoints: Any, *, prior_strength: float = PRIOR_STRENGTH
) -> tuple[float, NDArray[np.float64]]:
    """Log Bayesian score of one bucketing, and its buckets' posterior-mean rates.

    Parameters
    ----------
    positives, negatives : array-like of float, shape (B,)
        Per-bucket counts (non-negative; they may be non-integer estimates).
    midpoints : array-like of float in (0, 1), shape (B,)
        Prior mean p_b of each bucket (the bucket midpoint as a fraction of the
        score domain).
    prior_strength : float
        Equivalent sample size N' > 0 (2 in Naeini et al.).

    Returns
    -------
    log_score : float
        log P(D | M) (see the module docstring).
    rates : ndarray, shape (B,)
        ``(m_b + α_b) / (N_b + N'/B)``.

    References
    ----------
    Naeini, Cooper and Hauskrecht, "Obtaining well calibrated probabilities
    using Bayesian binning", AAAI 2015, §"BBQ", eq. for Score(M);
    private-federated-multiclass-calibration Appendix B.4.
    """
    m = np.asarray(positives, dtype=np.float64)
    n = np.asarray(negatives, dtype=np.float64)
    p = np.asarray(midpoints, dtype=np.float64)
    if (m < 0).any() or (n < 0).any():
        raise ValueError("bucket counts must be >= 0 (clamp noisy counts first)")
    if (p <= 0).any() or (p >= 1).any():
        raise ValueError("bucket midpoints must lie strictly inside (0, 1)")
    ns = check_positive(prior_strength, name="prior_strength")
    b = m.size
    a0 = ns / b
    alpha = a0 * p
    beta = a0 * (1.0 - p)
    total = m + n
    log_score = float(
        np.sum(
            gammaln(a0)
            - gammaln(total + a0)
            + gammaln(m + alpha)
            - gammaln(alpha)
            + gammaln(n + beta)
            - gammaln(beta)
        )
    )
    return log_score, (m + alpha) / (total + a0)


def bbq_candidate_bins(
    n_examples: float, *, n_candidates: int = 20, max_bins: int | None = None
) -> list[int]:
    """Candidate numbers of buckets: geometric grid over [M^{1/3}/10, 10 M^{1/3}].

    Returns at most ``n_candidates`` distinct integers >= 1 (all integers of
    the range when there are fewer), each at most ``max_bins``.

    References
    ----------
    Naeini et al., AAAI 2015 (range of B); cormode-markov-2023 §7.3.
    """
    nc = check_int_at_least(n_candidates, 1, name="n_candidates")
    c = max(float(n_examples), 1.0) ** (1.0 / 3.0)
    # The tolerance keeps exact cubes exact (1e6 ** (1/3) = 99.99999999999997).
    lo = max(1, math.ceil(c / 10.0 - 1e-9))
    hi = max(lo, math.floor(10.0 * c + 1e-9))
    if max_bins is not None:
        hi = min(hi, max_bins)
        lo = min(lo, hi)
    if hi - lo + 1 <= nc:
        return list(range(lo, hi + 1))
    grid = np.unique(np.rint(np.geomspace(lo, hi, nc)).astype(int))
    return [int(x) for x in grid]


def bbq_from_hierarchy(
    hist: HierarchicalHistogram,
    *,
    candidate_bins: list[int] | None = None,
    n_candidates: int = 20,
    prior_strength: float = PRIOR_STRENGTH,
    prob_floor: float = PROBABILITY_FLOOR,
) -> BBQCalibrator:
    """BBQ calibrator from one released score hierarchy (post-processing only).

    Parameters
    ----------
    hist : HierarchicalHistogram
        Binary per-class release; made consistent here if it is not.
    candidate_bins : list of int, optional
        The numbers of buckets B to average over; default
        :func:`bbq_candidate_bins` of the released total.
    n_candidates : int
        Size of the default grid.
    prior_strength : float
        N' of the Beta prior.
    prob_floor : float
        Public floor in (0, 0.5) of every prediction.

    Returns
    -------
    BBQCalibrator

    Privacy
    -------
    None consumed: post-processing of ``hist`` (whose ledger entries are
    recorded in the calibrator).

    References
    ----------
    Naeini et al., AAAI 2015; cormode-markov-2023-federated-calibration-evaluation §7.3.
    """
    if hist.spec.n_classes != 2:
        raise ValueError(f"BBQ needs a two-class hierarchy, got {hist.spec.n_classes} classes")
    floor = check_prob_floor(prob_floor)
    steps: list[str] = []
    if not hist.is_consistent:
        hist = hist.consistent()
    steps.append("consistency (Hay et al. 2010)")
    n_leaves = hist.spec.n_leaves
    m_hat = float(np.maximum(hist.totals(), 0.0).sum())
    if candidate_bins is None:
        from fedeval.calibration.binning import noise_aware_n_bins

        # Never finer than the noise supports (binning.noise_aware_n_bins).
        _, supported = noise_aware_n_bins(hist, m_hat)
        cands = bbq_candidate_bins(
            m_hat, n_candidates=n_candidates, max_bins=min(n_leaves, supported)
        )
    else:
        if len(candidate_bins) == 0:
            raise ValueError("candidate_bins must hold at least one number of buckets")
        cands = [
            min(check_int_at_least(b, 1, name="candidate_bins entry"), n_leaves)
            for b in candidate_bins
        ]
    lo, hi = hist.spec.score_range
    width = hist.spec.leaf_width
    all_edges: list[list[float]] = []
    all_probs: list[list[float]] = []
    scores: list[float] = []
    sizes: list[int] = []
    n_clamped = 0
    for b in cands:
        leaf_edges = snapped_equi_depth_leaf_edges(hist, b)
        neg, pos = bucket_counts(hist, leaf_edges)
        n_clamped += int(np.count_nonzero(neg < 0) + np.count_nonzero(pos < 0))
        neg, pos = np.maximum(neg, 0.0), np.maximum(pos, 0.0)
        mid = (leaf_edges[:-1] + leaf_edges[1:]) / (2.0 * n_leaves)
        log_score, rates = bbq_log_score(pos, neg, mid, prior_strength=prior_strength)
        edges = lo + leaf_edges.astype(np.float64) * width
        edges[-1] = hi
        all_edges.append([float(x) for x in edges])
        all_probs.append([float(x) for x in rates])
        scores.append(log_score)
        sizes.append(int(leaf_edges.size - 1))
    if equi_depth_is_defined(hist):
        steps.append(
            f"equi-depth boundaries from private quantiles, snapped to leaf edges, for B in {cands}"
        )
    else:
        warn_no_mass(steps)
    steps.append(f"clamp negative bucket counts to 0 ({n_clamped} counts changed)")
    steps.append(
        f"floor predictions at prob_floor = {floor:g} (public): [{floor:g}, {1.0 - floor:g}]"
    )
    log_scores = np.asarray(scores)
    w = np.exp(log_scores - log_scores.max())
    w /= w.sum()
    return BBQCalibrator(
        edges=all_edges,
        probabilities=all_probs,
        weights=w,
        log_scores=log_scores,
        n_bins=sizes,
        post_processing=steps,
        prob_floor=floor,
        **receipt_record(hist),
    )


def bbq(
    fed: Federation,
    privacy: BinaryPrivacy,
    *,
    candidate_bins: list[int] | None = None,
    n_candidates: int = 20,
    prior_strength: float = PRIOR_STRENGTH,
    height: int = DEFAULT_HEIGHT,
    branching: int = 2,
    level_budget: LevelBudget = "split",
    path: Path = "fast",
    rng: RNGLike = None,
    ledger: BudgetLedger | None = None,
    do_no_harm: bool = True,
    prob_floor: float = PROBABILITY_FLOOR,
    harm_level: float = HARM_LEVEL,
) -> Calibrator:
    """Federated BBQ calibration of a binary score from one private hierarchy.

    Parameters
    ----------
    fed : Federation
        Binary task.
    privacy : SecureAggregation, DistributedDP or LocalDP
    candidate_bins : list of int, optional
        Numbers of buckets to average over; default a geometric grid of
        ``n_candidates`` values over [M^{1/3}/10, 10 M^{1/3}].
    n_candidates : int
    prior_strength : float
        Equivalent sample size N' of the Beta prior (Naeini et al.: 2).
    height : int
        Height of the high-resolution hierarchy (default 10, i.e. 1024 leaves
        with b = 2, as Cormode–Markov §7).
    branching : int
    level_budget : {"split", "assign"}
    path : {"fast", "faithful"}
    rng : int, Generator or None
    ledger : BudgetLedger, optional
        Charged once, for the one release.
    do_no_harm : bool
        Keep the map only if its own release shows it helps (see
        :func:`~fedeval.calibration.binning.histogram_binning`).
    prob_floor : float
        Public floor in (0, 0.5) of every prediction (default 1e-4).
    harm_level : float
        One-sided level a of the do-no-harm test (default 0.05).

    Returns
    -------
    BBQCalibrator or IdentityCalibrator

    Raises
    ------
    TypeError
        ``fed`` is not a Federation, or an unsupported privacy model.
    ValueError
        Multiclass federation, bad candidates, bad hierarchy parameters.
    BudgetExceededError
        The ledger cannot afford the release.

    Privacy
    -------
    One release (the per-class score hierarchy), with the guarantee of
    ``privacy``; all candidate bucketings and their scores are post-processing.

    References
    ----------
    cormode-markov-2023-federated-calibration-evaluation §7.3; Naeini et al.,
    AAAI 2015.
    """
    check_binary_inputs(fed, privacy)
    check_positive(prior_strength, name="prior_strength")
    floor = check_prob_floor(prob_floor)
    harm_threshold(harm_level)  # validates the level before the release
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
    cal = bbq_from_hierarchy(
        hist,
        candidate_bins=candidate_bins,
        n_candidates=n_candidates,
        prior_strength=prior_strength,
        prob_floor=floor,
    )
    if not do_no_harm:
        return cal
    from fedeval.calibration.do_no_harm import bucket_optimism, keep_or_decline

    # BBQ's effective number of bins: the posterior mean over its models.
    bins = float(np.dot(cal.weights, np.asarray(cal.n_bins, dtype=np.float64)))
    models = [
        (np.asarray(e, dtype=np.float64), np.asarray(p, dtype=np.float64))
        for e, p in zip(cal.edges, cal.probabilities, strict=True)
    ]
    optimism = bucket_optimism(hist, models, cal.weights, prior_strength=prior_strength)
    return keep_or_decline(
        cal, hist, method="bbq", optimism=optimism, n_params=bins, level=harm_level
    )
