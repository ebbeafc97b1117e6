"""Do no harm: keep the identity map unless the release shows a calibrator helps.

A binary calibrator is learned from one released per-class score hierarchy.
The same release also estimates, at no extra privacy cost (post-processing),
how well calibrated the *uncalibrated* scores are and how well the learned map
is expected to do on new data. When the map is not expected to lower both the
ECE and the NLL, :func:`keep_or_decline` returns an :class:`IdentityCalibrator`
and warns with the numbers.

Estimates (all from the consistent released leaf counts; documented choices):

* Groups: G = clip(round(M̂^{1/3}), 2, #leaves) equal-width groups of leaves,
  M̂ the released total (Cormode–Markov's B ≈ M^{1/3}, Theorem 7).
* ECE before: Σ_g |P̂_g − Σ_{ℓ∈g} s_ℓ N̂_ℓ| / M̂ with s_ℓ the leaf midpoint,
  each |gap| debiased for the noise as √max(gap² − Var, 0) (Var from the
  release's known noise).
* ECE after (predicted, held-out): the debiased in-sample gap of the map per
  group, plus the map's estimation error √(2/π)·√(q̄(1−q̄)/n_b + v_b(q̄² + (1−q̄)²)/n_b²),
  n_b = M̂/B the examples per bin of a map with B bins and v_b the noise
  variance of one released bucket count; the mean absolute error of a
  normal estimate is √(2/π) times its standard deviation.
* NLL before / after: Σ_ℓ P̂_ℓ(−log p_ℓ) + N̂⁻_ℓ(−log(1 − p_ℓ)) over M̂ (linear
  in the counts, hence unbiased), p clipped to [1e-12, 1 − 1e-12], plus B/M̂
  for the map (AIC's optimism of an in-sample log-likelihood with B fitted
  parameters, per example). The map must lower it by more than one standard
  error of the change (``nll_change_se``: the release's noise on the linear
  combination of leaf counts, propagated through the consistent tree, plus
  the sampling second moment Σ P̂⁺Δ⁺² + N̂⁺Δ⁻²): the noisy counts of a few
  leaves can otherwise hide examples the map gives extreme probabilities
  (breast_cancer, DistDP ε = 1: a map with ECE 0.026 → 0.017 had held-out NLL
  0.078 → 0.161).

Multiclass FedBin / FedBBQ (:func:`multiclass_harm_estimates`,
:func:`keep_or_decline_multiclass`) are judged from their own released
one-vs-rest histograms P_j[b], N_j[b] (class j, fine bin b of the class-j
confidence) and the known noise variances v⁺, v⁻ of every count (T times one
round's): classwise ECE and the one-vs-rest Brier score before and after, see
:func:`multiclass_harm_estimates`. The declined map is a
:class:`MulticlassIdentityCalibrator` (the input probabilities; softmax of
logits).

References
----------
.. [1] cormode-markov-2023-federated-calibration-evaluation §6, Theorem 7.
.. [2] H. Akaike (1974), "A new look at the statistical model identification"
   (AIC: in-sample log-likelihood is optimistic by the number of parameters).
.. [3] private-federated-multiclass-calibration, Algorithm 1, Appendices
   B.3–B.5 (the one-vs-rest histograms, FedBin, FedBBQ, the α_j weighting),
   Definition 3.3 (classwise ECE).
.. [4] B. Efron (1986), "How biased is the apparent error rate of a prediction
   rule?", JASA 81 (optimism = 2 Σ Cov(ŷ_i, y_i), here for the Brier score).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from fedeval.calibration.base import (
    PROBABILITY_FLOOR,
    Calibrator,
    check_raw_scores,
    register,
    warn_degenerate,
)
from fedeval.calibration.multiclass import MulticlassCalibrator
from fedeval.sketches.hierarchical_histogram import HierarchicalHistogram

__all__ = [
    "HARM_LEVEL",
    "IdentityCalibrator",
    "MulticlassIdentityCalibrator",
    "binary_harm_estimates",
    "harm_threshold",
    "keep_or_decline",
    "keep_or_decline_multiclass",
    "multiclass_harm_estimates",
    "multiclass_harm_estimates_in_range",
]

_P_FLOOR = 1e-12

#: One-sided level a of every do-no-harm decision: a map is kept only if its
#: estimated held-out NLL gain exceeds z_{1-a} standard errors, so a map that
#: does not help (true gain ≤ 0) is kept with probability at most about a.
HARM_LEVEL = 0.05


def harm_threshold(level: float) -> float:
    """z_{1−a}, the standard normal quantile a one-sided test at level a compares with."""
    from scipy.stats import norm

    if not 0.0 < float(level) < 0.5:
        raise ValueError(f"harm_level must lie in (0, 0.5), got {level!r}")
    return float(norm.ppf(1.0 - float(level)))


def _declined_repr(cls: str, declined: str, reason: str) -> str:
    return f"{cls}(declined={declined!r}, reason={reason!r})"


def _declined_summary(what: str, declined: str, reason: str) -> str:
    head = f"{what}: {declined or 'calibration'} declined (do no harm)"
    return f"{head}; {reason}" if reason else head


@register
@dataclass(frozen=True)
class IdentityCalibrator(Calibrator):
    """The identity map on probability scores, returned when calibrating would not help.

    Attributes
    ----------
    declined : str
        The method that was learned and declined.
    reason : str
        Why, in words, with the released estimates that decided (no count);
        shown by ``repr`` and :meth:`summary`.
    estimates : dict
        The release's estimates that decided (:func:`binary_harm_estimates`).
    procedure : dict
        ``{"applied": False, ...}``: the same record a learned calibrator
        carries, so that readers of ``procedure["applied"]`` see the decline.
    """

    kind: ClassVar[str] = "identity"

    declined: str = ""
    reason: str = ""
    estimates: dict[str, Any] = field(default_factory=dict)
    procedure: dict[str, Any] = field(default_factory=lambda: {"applied": False})

    def predict_proba(self, scores: Any) -> NDArray[np.float64]:
        """The scores themselves, clipped to [0, 1] (they are probabilities)."""
        return np.clip(check_raw_scores(scores), 0.0, 1.0)

    def summary(self) -> str:
        """One line: which method was declined, and why."""
        return _declined_summary("identity map", self.declined, self.reason)

    def __repr__(self) -> str:
        return _declined_repr(type(self).__name__, self.declined, self.reason)


def _nll(pos: NDArray[np.float64], neg: NDArray[np.float64], p: NDArray[np.float64]) -> float:
    q = np.clip(p, _P_FLOOR, 1.0 - _P_FLOOR)
    return float(np.sum(pos * -np.log(q) + neg * -np.log1p(-q)))


def _bernoulli_loss(pi: Any, q: Any) -> NDArray[np.float64]:
    """ℓ(π, q) = −π log q − (1 − π) log(1 − q): the expected log loss of q at rate π."""
    qq = np.clip(np.asarray(q, dtype=np.float64), _P_FLOOR, 1.0 - _P_FLOOR)
    pp = np.asarray(pi, dtype=np.float64)
    return np.asarray(-pp * np.log(qq) - (1.0 - pp) * np.log1p(-qq), dtype=np.float64)


#: Prior strength κ (in examples) of the empirical-Bayes rate of a bucket in
#: :func:`bucket_optimism`: Beta prior of mean the bucket's uncalibrated score.
PRIOR_EXAMPLES = 2.0


def bucket_optimism(
    hist: HierarchicalHistogram,
    models: list[tuple[NDArray[np.float64], NDArray[np.float64]]],
    weights: NDArray[np.float64],
    *,
    prior_strength: float = 0.0,
) -> float:
    """Optimism (nats, in total) of the in-sample NLL of a piecewise-constant map.

    The map of a binning model is constant on buckets whose released counts
    it was fitted to, so its in-sample NLL on those counts is lower than its
    held-out NLL. Per bucket b with released total n_b (floored at 1),
    released positives P_b (clipped to [0, n_b]), q̂_b = P_b/n_b, map value
    q_b and noise variances v⁺_b, v⁻_b of the two counts, the held-out loss of
    the bucket is estimated by n_b ℓ(π̃_b, q_b), with ℓ(π, q) = −π log q −
    (1 − π) log(1 − q) the expected log loss of q at rate π (linear in π) and
    π̃_b the posterior mean of the bucket's rate:

    * the data's estimate is Jeffreys' π̄_b = (P_b + ½)/(n_b + 1), with
      variance σ²_b = (n_b π̄(1 − π̄) + v⁺_b(1 − π̄)² + v⁻_b π̄²)/n_b²
      (sampling, and the release's noise by the delta method);
    * the prior is the bucket's mean uncalibrated score m_b (leaf midpoints
      weighted by the released totals), with the variance m(1 − m)/(κ + 1)
      of a Beta prior of κ = :data:`PRIOR_EXAMPLES` examples;
    * π̃_b is their precision-weighted mean.

    The optimism of the bucket is max(1, n_b [ℓ(π̃_b, q_b) − ℓ(q̂_b, q_b)]).
    Where the counts are precise, π̃ ≈ q̂ and the optimism is Akaike's 1 per
    fitted value (the held-out loss of a maximum-likelihood rate exceeds its
    in-sample loss by 1 in expectation); at the boundary (no positive seen, q
    at the floor) Jeffreys' ½ pseudo-positive prices the unseen positives,
    which Akaike's expansion misses; where the noise swamps the counts, π̃
    falls back on the uncalibrated score, so the map is credited with no gain
    there and charged for moving away from it (a map fitted to noise near 0 or
    1 is declined). The estimate is bounded: ℓ ≤ −log(floor) per example.

    BBQ averages several binnings (``models``) with ``weights``; each of its
    bucket values (m + α)/(n + N'/B) moves with the counts by n/(n + N'/B)
    only, which scales that bucket's optimism (``prior_strength`` = N').

    Parameters
    ----------
    hist : HierarchicalHistogram
        The release the maps were learned from (made consistent here).
    models : list of (edges, values)
        Each binning: its B + 1 edges (on leaf edges) and its B map values.
    weights : ndarray, shape (len(models),)
        Model weights summing to 1.
    prior_strength : float
        N' of the BBQ prior (0 for plain binning).

    Returns
    -------
    float
        The optimism in nats (divide by the released total for per example).

    References
    ----------
    .. [1] H. Akaike (1974); B. Efron (1986) (optimism of an apparent error).
    .. [2] H. Jeffreys (1946), the Beta(½, ½) prior; empirical Bayes shrinkage
       of a noisy rate towards a prior mean (precision weighting).
    """
    if not hist.is_consistent:
        hist = hist.consistent()
    lo_d, _ = hist.spec.score_range
    width = hist.spec.leaf_width
    mids = lo_d + (np.arange(hist.spec.n_leaves) + 0.5) * width
    mass = np.maximum(hist.leaves[0] + hist.leaves[1], 0.0)
    cum_mass = np.concatenate([[0.0], np.cumsum(mass)])
    cum_score = np.concatenate([[0.0], np.cumsum(mass * mids)])
    total = 0.0
    for (edges, values), w in zip(models, np.asarray(weights, dtype=np.float64), strict=True):
        if w <= 0:
            continue
        e = np.asarray(edges, dtype=np.float64)
        lo, hi = e[:-1], e[1:]
        pos, v_pos = hist.range_counts(lo, hi, cls=1)
        neg, v_neg = hist.range_counts(lo, hi, cls=0)
        n = np.maximum(np.asarray(pos) + np.asarray(neg), 1.0)
        p_plus = np.clip(np.asarray(pos), 0.0, n)
        q = np.clip(np.asarray(values, dtype=np.float64), _P_FLOOR, 1.0 - _P_FLOOR)
        # The buckets' mean uncalibrated score (leaf midpoints; the leaf edges of the map).
        i0 = np.clip(np.rint((lo - lo_d) / width).astype(np.intp), 0, mids.size)
        i1 = np.clip(np.rint((hi - lo_d) / width).astype(np.intp), 0, mids.size)
        m_b = np.where(
            cum_mass[i1] - cum_mass[i0] > 0,
            (cum_score[i1] - cum_score[i0]) / np.maximum(cum_mass[i1] - cum_mass[i0], 1e-300),
            0.5 * (lo + hi),
        )
        shrink = n / (n + prior_strength / max(len(values), 1))
        each = rate_optimism(n, p_plus, np.asarray(v_pos), np.asarray(v_neg), q, m_b)
        total += float(w) * float(np.sum(shrink * each))
    return total


def rate_optimism(
    n: NDArray[np.float64],
    positives: NDArray[np.float64],
    var_positive: NDArray[np.float64],
    var_negative: NDArray[np.float64],
    q: NDArray[np.float64],
    prior_mean: NDArray[np.float64],
) -> NDArray[np.float64]:
    """Per bucket: max(1, n [ℓ(π̃, q) − ℓ(P/n, q)]), π̃ the empirical-Bayes rate.

    ``n`` ≥ 1 and ``positives`` in [0, n] are the bucket's released total and
    positives, ``var_*`` their noise variances, ``q`` the map's value and
    ``prior_mean`` the bucket's uncalibrated score (see :func:`bucket_optimism`).
    """
    qq = np.clip(q, _P_FLOOR, 1.0 - _P_FLOOR)
    m = np.clip(prior_mean, _P_FLOOR, 1.0 - _P_FLOOR)
    jeffreys = (positives + 0.5) / (n + 1.0)
    var_data = (
        n * jeffreys * (1.0 - jeffreys)
        + var_positive * (1.0 - jeffreys) ** 2
        + var_negative * jeffreys**2
    ) / n**2
    var_prior = m * (1.0 - m) / (PRIOR_EXAMPLES + 1.0)
    rate = (jeffreys * var_prior + m * var_data) / (var_prior + var_data)
    gap = n * (_bernoulli_loss(rate, qq) - _bernoulli_loss(positives / n, qq))
    return np.asarray(np.maximum(1.0, gap), dtype=np.float64)


def glm_optimism(
    hist: HierarchicalHistogram, features: NDArray[np.float64], q: NDArray[np.float64]
) -> float:
    """Optimism (nats, in total) of a logistic map fitted to the released leaf counts.

    For q_ℓ = σ(θᵀx_ℓ) with d parameters (Platt: x = (z, 1); temperature:
    x = (z)), fitted by maximum likelihood to the leaf counts, the optimism of
    its in-sample NLL is tr(I⁻¹(I + J)) = d + tr(I⁻¹J) (Takeuchi's correction
    with the model's Fisher information I = Σ_ℓ n_ℓ q_ℓ(1 − q_ℓ) x_ℓ x_ℓᵀ and J
    the covariance of the release's noise in the score Σ_ℓ (P̂_ℓ − q_ℓ n̂_ℓ) x_ℓ,
    computed exactly on the consistent tree): sampling gives Akaike's d, the
    noise the rest.

    Parameters
    ----------
    hist : HierarchicalHistogram
    features : ndarray, shape (n_leaves, d)
        x_ℓ of every leaf (at its midpoint).
    q : ndarray, shape (n_leaves,)
        The map's value at every leaf midpoint.

    Returns
    -------
    float

    References
    ----------
    .. [1] K. Takeuchi (1976), TIC; H. Akaike (1974).
    """
    if not hist.is_consistent:
        hist = hist.consistent()
    x = np.asarray(features, dtype=np.float64)
    d = x.shape[1]
    n = np.maximum(hist.leaves[0] + hist.leaves[1], 0.0)
    qq = np.clip(np.asarray(q, dtype=np.float64), _P_FLOOR, 1.0 - _P_FLOOR)
    info = (x * (n * qq * (1.0 - qq))[:, None]).T @ x
    info += 1e-9 * max(float(np.trace(info)), 1.0) * np.eye(d)

    def var(u: NDArray[np.float64]) -> float:
        # Noise variance of uᵀ Σ_ℓ (P̂_ℓ (1 − q_ℓ) − N̂_ℓ q_ℓ) x_ℓ.
        proj = x @ u
        return hist.linear_variance(proj * (1.0 - qq), cls=1) + hist.linear_variance(
            -proj * qq, cls=0
        )

    jac = np.zeros((d, d))
    eye = np.eye(d)
    for i in range(d):
        jac[i, i] = var(eye[i])
    for i in range(d):
        for j in range(i + 1, d):
            jac[i, j] = jac[j, i] = 0.25 * (var(eye[i] + eye[j]) - var(eye[i] - eye[j]))
    return float(d + np.trace(np.linalg.solve(info, jac)))


def binary_harm_estimates(
    hist: HierarchicalHistogram,
    calibrator: Calibrator,
    *,
    optimism: float,
    n_params: float,
    level: float = HARM_LEVEL,
) -> dict[str, float]:
    """Held-out ECE before/after and NLL change of a binary map, from its own release.

    Parameters
    ----------
    hist : HierarchicalHistogram
        The release the map was learned from.
    calibrator : Calibrator
        The learned map.
    optimism : float
        Optimism of the map's in-sample NLL, in nats (:func:`bucket_optimism`,
        :func:`glm_optimism`).
    n_params : float
        The map's number of fitted values (buckets, or parameters), for the
        ECE's estimation error.
    level : float
        One-sided level a of the decision (recorded).

    Returns
    -------
    dict
        ``ece_before``, ``ece_after`` (≥ 0), ``nll_change`` (estimated held-out
        change per example, in-sample change plus optimism: negative is
        better), ``nll_change_in_sample``, ``optimism`` (per example),
        ``unseen`` (the small-sample guard: the loss one unseen positive and
        one unseen negative would add where the map raises it most, per
        example), ``nll_change_se``, ``harm_level``, ``threshold`` (z_{1−a}),
        ``groups``. Released values only, no count; see the module docstring.
    """
    if not hist.is_consistent:
        hist = hist.consistent()
    neg, pos = hist.leaves[0], hist.leaves[1]
    n_leaves = neg.size
    lo, hi = hist.spec.score_range
    width = hist.spec.leaf_width
    mids = lo + (np.arange(n_leaves) + 0.5) * width
    total = neg + pos
    m_hat = max(float(np.sum(total)), 1.0)
    q = np.asarray(calibrator.predict_proba(mids), dtype=np.float64)
    g = int(min(max(round(m_hat ** (1.0 / 3.0)), 2), n_leaves))
    cuts = np.linspace(0, n_leaves, g + 1).round().astype(np.intp)
    g_lo = lo + cuts[:-1] * width
    g_hi = lo + cuts[1:] * width
    g_hi[-1] = hi
    _, var_pos = hist.range_counts(g_lo, g_hi, cls=1)
    _, var_neg = hist.range_counts(g_lo, g_hi, cls=0)
    b = max(float(n_params), 1.0)
    n_b = max(m_hat / b, 1.0)
    # A map bucket spans about G/B groups; its count's noise variance is about theirs.
    v_b = float(np.mean(var_pos + var_neg))
    ece_before = 0.0
    ece_after = 0.0
    for k in range(g):
        sl = slice(cuts[k], cuts[k + 1])
        n_g = float(np.sum(total[sl]))
        p_g = float(np.sum(pos[sl]))
        s_bar = float(np.sum(mids[sl] * total[sl]) / n_g) if n_g > 0 else float(np.mean(mids[sl]))
        q_bar = float(np.sum(q[sl] * total[sl]) / n_g) if n_g > 0 else float(np.mean(q[sl]))
        q_bar = min(max(q_bar, 0.0), 1.0)
        s_bar = min(max(s_bar, 0.0), 1.0)
        var_b = var_pos[k] * (1 - s_bar) ** 2 + var_neg[k] * s_bar**2
        var_a = var_pos[k] * (1 - q_bar) ** 2 + var_neg[k] * q_bar**2
        gap_b = p_g - s_bar * n_g
        gap_a = p_g - q_bar * n_g
        ece_before += math.sqrt(max(gap_b**2 - var_b, 0.0))
        weight = max(n_g, 0.0)
        est_sd = math.sqrt(q_bar * (1 - q_bar) / n_b + v_b * (q_bar**2 + (1 - q_bar) ** 2) / n_b**2)
        ece_after += (
            math.sqrt(max(gap_a**2 - var_a, 0.0)) + weight * math.sqrt(2 / math.pi) * est_sd
        )
    # The in-sample NLL change is linear in the leaf counts (unbiased for it): its
    # standard error from the release's noise (propagated through the consistent
    # tree) and from sampling (second moment of the per-example change, counts
    # clamped at 0).
    s_c = np.clip(mids, _P_FLOOR, 1.0 - _P_FLOOR)
    q_c = np.clip(q, _P_FLOOR, 1.0 - _P_FLOOR)
    d_pos = np.log(s_c) - np.log(q_c)
    d_neg = np.log1p(-s_c) - np.log1p(-q_c)
    var_change = hist.linear_variance(d_pos, cls=1) + hist.linear_variance(d_neg, cls=0)
    var_change += float(np.sum(np.maximum(pos, 0.0) * d_pos**2 + np.maximum(neg, 0.0) * d_neg**2))
    in_sample = (_nll(pos, neg, q) - _nll(pos, neg, mids)) / m_hat
    # Laplace's guard: one unseen positive and one unseen negative where the map
    # raises the loss most (heavy-tailed per-example changes: a few misclassified
    # extreme scores the calibration sample happened not to hold).
    unseen = (max(float(d_pos.max()), 0.0) + max(float(d_neg.max()), 0.0)) / m_hat
    return {
        "ece_before": ece_before / m_hat,
        "ece_after": ece_after / m_hat,
        "nll_change": in_sample + float(optimism) / m_hat,
        "nll_change_in_sample": in_sample,
        "optimism": float(optimism) / m_hat,
        "unseen": unseen,
        "nll_change_se": math.sqrt(var_change) / m_hat,
        "harm_level": float(level),
        "threshold": harm_threshold(level),
        "groups": float(g),
    }


def keep_or_decline(
    calibrator: Calibrator,
    hist: HierarchicalHistogram,
    *,
    method: str,
    optimism: float,
    n_params: float,
    level: float = HARM_LEVEL,
) -> Calibrator:
    """``calibrator`` if its release shows it lowers the held-out ECE and NLL, else the identity.

    The map is kept when its estimated held-out ECE is below the uncalibrated
    one and its estimated held-out NLL gain −Δ̂, less the small-sample guard
    (``unseen``: one unseen positive and one unseen negative where the map
    hurts most, which vanishes as 1/M̂), exceeds z_{1−a} standard errors
    (one-sided test at level a = ``level``): under the normal approximation a
    map whose true held-out change is ≥ 0 is kept with probability at most a,
    and the guard makes it smaller.
    The estimates (:func:`binary_harm_estimates`) are post-processing of
    ``hist``: no budget. Only for scores that are probabilities (domain
    [0, 1]); other domains keep the calibrator (the identity is no probability
    there).

    Returns
    -------
    Calibrator
        ``calibrator`` with its ``harm_estimates`` recorded, or an
        :class:`IdentityCalibrator` carrying the reason (and the same receipt:
        the release happened), after a ``UserWarning`` with the numbers.
    """
    if tuple(hist.spec.score_range) != (0.0, 1.0):
        return calibrator
    est = binary_harm_estimates(hist, calibrator, optimism=optimism, n_params=n_params, level=level)
    z = est["threshold"]
    helps = (
        est["ece_after"] < est["ece_before"]
        and -(est["nll_change"] + est["unseen"]) > z * est["nll_change_se"]
    )
    if helps:
        if any(f.name == "harm_estimates" for f in fields(calibrator)):
            return replace(calibrator, harm_estimates=est)  # type: ignore[call-arg]
        return calibrator
    reason = (
        f"from its own release the uncalibrated scores have ECE ≈ {est['ece_before']:.4f} and "
        f"the learned map is expected to give ECE ≈ {est['ece_after']:.4f} on new data; its "
        f"estimated held-out change of the NLL is {est['nll_change']:+.4f} "
        f"± {est['nll_change_se']:#.2g} per example (standard error; in-sample "
        f"{est['nll_change_in_sample']:+.4f} plus {est['optimism']:#.2g} optimism). A map is "
        f"kept only if it lowers the ECE and its NLL gain, less {est['unseen']:#.2g} for one "
        f"unseen example of each class where it hurts most, exceeds {z:.3g} standard errors "
        f"(one-sided level {level:g})"
    )
    warn_degenerate(
        f"{method} calibration was not applied: {reason}; returning the identity map (the "
        "scores as they are). More clients or budget would let the map be learned; pass "
        "do_no_harm=False to keep it anyway."
    )
    return IdentityCalibrator(
        declined=method,
        reason=reason,
        estimates=est,
        receipt=dict(calibrator.receipt),
        procedure={"applied": False, "harm_estimates": est},
    )


@register
@dataclass(frozen=True)
class MulticlassIdentityCalibrator(MulticlassCalibrator):
    """The identity map on class probabilities, returned when a multiclass map would not help.

    :meth:`predict_proba` returns the input probabilities (the softmax of
    logits), validated as the declined calibrator would have validated them.

    Attributes
    ----------
    declined : str
        The method that was learned and declined ("binning", "bbq",
        "temperature", "vector", "matrix", "op-vector").
    reason : str
        Why, in words, with the released estimates that decided; shown by
        ``repr`` and :meth:`summary`.
    estimates : dict
        The release's estimates that decided (:func:`multiclass_harm_estimates`,
        or the scaling rounds' released NLL change).
    n_classes, input_kind, receipt, procedure
        See :class:`~fedeval.calibration.multiclass.MulticlassCalibrator`; the
        receipt is the declined release's (its budget was spent).
    """

    kind: ClassVar[str] = "multiclass-identity"

    declined: str = ""
    reason: str = ""
    estimates: dict[str, Any] = field(default_factory=dict)

    def predict_proba(self, scores: Any) -> NDArray[np.float64]:
        """The input probabilities (softmax of logits), shape (n, c)."""
        return self._probabilities(scores)

    def summary(self) -> str:
        """One line: which method was declined, and why."""
        return _declined_summary("identity map", self.declined, self.reason)

    def __repr__(self) -> str:
        return _declined_repr(type(self).__name__, self.declined, self.reason)


def multiclass_harm_estimates(
    positive: NDArray[np.float64],
    negative: NDArray[np.float64],
    var_positive: NDArray[np.float64],
    var_negative: NDArray[np.float64],
    mapped: NDArray[np.float64],
    alpha: NDArray[np.float64],
    map_bins: int,
    *,
    scheme_weights: NDArray[np.float64] | None = None,
    prior_strength: float = 0.0,
    design_effect: float = math.inf,
    rounds_positive: NDArray[np.float64] | None = None,
    rounds_negative: NDArray[np.float64] | None = None,
) -> dict[str, float]:
    """Classwise ECE and Brier score before/after a one-vs-rest binning map, from its release.

    Parameters
    ----------
    positive, negative : ndarray, shape (c, F)
        The released (noisy, possibly negative) one-vs-rest counts P_j[b],
        N_j[b] on F fine equal-width bins of the class-j confidence.
    var_positive, var_negative : ndarray, shape (c, F)
        The known noise variance of each released count (0 without DP).
    mapped : ndarray, shape (c, F)
        The map's value q_j[b] on each fine bin, with its weighting applied
        (α_j g_j + (1 − α_j) s_b, s_b the bin midpoint, for "all").
    alpha : ndarray, shape (c,)
        How much of the estimated table the map uses (1 for the unweighted map).
    map_bins : int
        B, the number of equal-width bins the map is estimated on (divides F):
        its estimation error is per such bin, and the ECE groups are never
        finer.
    scheme_weights : ndarray, shape (c, M), optional
        FedBBQ: the BBQ weight w_jℓ of the 2^ℓ-bin binning, ℓ = 1..M
        (F = 2^M). Without it the map is one binning of ``map_bins`` bins.
    prior_strength : float
        FedBBQ's N': a 2^ℓ-bin value (m + α_b)/(n + N'/2^ℓ) moves with the
        counts by n/(n + N'/2^ℓ) only.
    design_effect : float
        ≥ 1, an upper bound on how much client sampling inflates the variance
        of a mean over the released examples relative to independent examples
        (:func:`client_sampling_design_effect`; ``inf`` when nothing public
        bounds it).
    rounds_positive, rounds_negative : ndarray, shape (T, c, F), optional
        Each round's released counts (they sum to ``positive``, ``negative``):
        with T ≥ ``MIN_ROUNDS_FOR_SPREAD`` rounds, their spread estimates the
        design effect.

    Returns
    -------
    dict
        ``cwece_before``, ``cwece_after``, ``brier_before``, ``brier_after``,
        ``brier_change_se``, ``logloss_change``, ``logloss_unseen``,
        ``logloss_change_se``: released values only, no count.

    Notes
    -----
    Everything is post-processing of the release. With P⁺, N⁺ the counts
    clamped at 0 (used only as weights), n_k = max(Σ_{b∈k} P_b + N_b, 0) the
    released total of map bin k, q̄_k the (P⁺ + N⁺)-weighted mean map value
    of bin k, and M̂ = Σ_{j,b}(P + N)/c the released number of examples:

    * **Groups**: G = clip(round(M̂^{1/3}), 2, B) equal-width groups of fine
      bins (Cormode–Markov's B ≈ M^{1/3}, as the binary estimate): finer
      groups would let the noise of each |gap| dominate the sum.
    * **cwECE before** (Definition 3.3): Σ_{j,g} √max(D_jg² − V_jg, 0) / (c M̂),
      D_jg = Σ_{b∈g} P_jb − s_b(P_jb + N_jb) (linear in the raw counts, so
      unbiased), each |gap| debiased for its noise variance
      V = Σ_{b∈g} v⁺(1 − s_b)² + v⁻ s_b² as in the binary estimate.
    * **cwECE after** (predicted, held-out): the in-sample gap with q_jb for
      s_b, debiased alike, plus the map's estimation error √(2/π)·√(Σ_k E_jk)
      over the map bins k in the group, E_jk = α_j²(n_k q̄(1 − q̄) + v⁺_k(1 − q̄)²
      + v⁻_k q̄²) the variance of n_k(q̄_k − π_k) (the mean absolute value of
      a normal error is √(2/π) times its standard deviation; v_k the summed
      noise variance of the bin; a map bin straddling groups is split evenly).
    * **Brier** (one-vs-rest, summed over classes, per example):
      Σ_{j,b} P_jb (1 − q)² + N_jb q², over M̂, with q = s_b before and q_jb
      after. Linear in the raw (unclamped) counts, hence unbiased for the
      binned scores (and, under heavy noise, possibly negative: only the
      change after − before is meaningful, and the warning gives that). A proper score whose optimism has a closed form at any
      noise level (the log loss's does not near 0 and 1, where the noise puts
      the bins of a DP release), which is why it decides rather than the NLL.
    * **Optimism** of the in-sample Brier of the map (Efron 1986: 2 Σ Cov(q̂, y)),
      added to ``brier_after``: per map bin 2α(q̄(1 − q̄) + (v⁺(1 − q̄)² +
      v⁻ q̄²)/n) (sampling, and the noise the fitted value follows), capped at
      n (no example's Brier term exceeds 1). For FedBBQ the covariance is
      linear in the averaged values, so the optimism is Σ_ℓ w_jℓ times that of
      the 2^ℓ-bin binning, each shrunk by n/(n + N'/2^ℓ) (the BBQ weights
      treated as fixed).
    * ``brier_change_se``: the standard error of the change, from
      Σ (P⁺ + v⁺)Δ⁺² + (N⁺ + v⁻)Δ⁻² over M̂², Δ the per-example change of the
      loss of a positive / negative (sampling bounded by the second moment,
      plus the noise).
    * **Client sampling**: both the optimism and the sampling part of the
      variance are for independent examples; the examples of a round come
      in clients (label-skewed clients are far from an i.i.d. sample), so
      both are multiplied by a design effect D ≥ 1. With T ≥
      ``MIN_ROUNDS_FOR_SPREAD`` rounds, the rounds are independent samples of
      clients, and D is the between-round variance of the per-round changes,
      T/(T − 1) Σ_t (Δ_t − r m_t)² (r the pooled change per example), over
      the variance the independent-example model gives the total, kept in
      [1, ``design_effect``]; with fewer rounds, D = ``design_effect`` (at
      most 1e6: the change's sampling part then swamps any gain).

    * **One-vs-rest log loss** Σ_j [P_jb(−log q) + N_jb(−log(1 − q))] with q
      floored at ``PROBABILITY_FLOOR`` as the calibrator predicts: its change
      from the uncalibrated loss (in-sample, linear in the raw counts; the
      uncalibrated loss of a fine bin at its midpoint, but in the two end bins
      [lo, hi), where confident models' confidences crowd and the loss is
      unbounded, at its best case −log hi for a positive and −log(1 − lo) for
      a negative, so that no gain is credited that those bins cannot show)
      plus the optimism of every map bin
      (:func:`rate_optimism`: Akaike's 1, or the empirical-Bayes price of
      positives the bin did not show, times α_j), ``logloss_change``; the
      small-sample guard ``logloss_unseen`` (one unseen positive and negative
      of each class where the map raises the loss most); its standard error as
      the Brier score's. The multiclass NLL of a renormalised row is not a
      function of the one-vs-rest histograms; this is its proxy, and it sees
      what the Brier score does not: a held-out example in a bin whose map
      value is at the floor (digits, 10 classes, 720 examples: held-out NLL
      +120-180% with a better Brier score).

    Documented approximations: the uncalibrated confidence of a fine bin is
    its midpoint; the final renormalisation over classes is ignored (the
    estimates are those of the one-vs-rest maps g̃_j); the dependence of q on
    the same noise is linearised.
    """
    c, n_fine = positive.shape
    pp = np.maximum(positive, 0.0)
    nn = np.maximum(negative, 0.0)
    mids = (np.arange(n_fine) + 0.5) / n_fine
    s = np.broadcast_to(mids, (c, n_fine))
    q = np.clip(mapped, 0.0, 1.0)
    m_hat = max(float(np.sum(positive + negative)) / c, 1.0)
    d_pos = (1.0 - q) ** 2 - (1.0 - s) ** 2
    d_neg = q**2 - s**2
    brier_before = float(np.sum(positive * (1.0 - s) ** 2 + negative * s**2)) / m_hat
    brier_in = float(np.sum(positive * (1.0 - q) ** 2 + negative * q**2)) / m_hat
    bound = min(float(design_effect), 1e6)
    deff = bound
    if rounds_positive is not None and rounds_negative is not None:
        rp = np.asarray(rounds_positive, dtype=np.float64)
        rn = np.asarray(rounds_negative, dtype=np.float64)
        t = rp.shape[0]
        if t >= MIN_ROUNDS_FOR_SPREAD:
            change_t = np.sum(rp * d_pos + rn * d_neg, axis=(1, 2))
            mass_t = np.sum(rp + rn, axis=(1, 2)) / c
            ratio = float(change_t.sum()) / max(float(mass_t.sum()), 1.0)
            spread = t / (t - 1) * float(np.sum((change_t - ratio * mass_t) ** 2))
            model = float(np.sum((pp + var_positive) * d_pos**2 + (nn + var_negative) * d_neg**2))
            deff = min(max(spread / model, 1.0), bound) if model > 0 else 1.0
    var_change = float(
        np.sum((deff * pp + var_positive) * d_pos**2 + (deff * nn + var_negative) * d_neg**2)
    )

    width = n_fine // map_bins

    def per_bin(x: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(x.reshape(c, map_bins, width).sum(axis=2), dtype=np.float64)

    # Gaps are linear in the raw counts (unbiased); clamped counts only weight.
    n_k = np.maximum(per_bin(positive + negative), 0.0)
    weight = pp + nn
    w_k = per_bin(weight)
    q_k = np.where(w_k > 0, per_bin(q * weight) / np.where(w_k > 0, w_k, 1.0), per_bin(q) / width)
    a = np.asarray(alpha, dtype=np.float64)[:, None]
    noise_k = per_bin(var_positive) * (1.0 - q_k) ** 2 + per_bin(var_negative) * q_k**2
    # Variance of the map's error n_k(q_k − π_k), spread evenly over the fine bins.
    err_var = np.repeat(a**2 * (n_k * q_k * (1.0 - q_k) + noise_k) / width, width, axis=1)
    groups = int(min(max(round(m_hat ** (1.0 / 3.0)), 2), map_bins))
    starts = np.linspace(0, n_fine, groups + 1).round().astype(np.intp)[:-1]

    def per_group(x: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(np.add.reduceat(x, starts, axis=1), dtype=np.float64)

    gap_before = per_group(positive - s * (positive + negative))
    var_before = per_group(var_positive * (1.0 - s) ** 2 + var_negative * s**2)
    gap_after = per_group(positive - q * (positive + negative))
    var_after = per_group(var_positive * (1.0 - q) ** 2 + var_negative * q**2)
    ece_before = np.sqrt(np.maximum(gap_before**2 - var_before, 0.0))
    ece_after = np.sqrt(np.maximum(gap_after**2 - var_after, 0.0)) + math.sqrt(
        2.0 / math.pi
    ) * np.sqrt(per_group(err_var))

    def optimism(bins: int, prior: float) -> NDArray[np.float64]:
        """Per-class optimism (total, in Brier units) of a ``bins``-bin binning."""
        w = n_fine // bins
        n_b = np.maximum((positive + negative).reshape(c, bins, w).sum(axis=2), 0.0)
        wt = weight.reshape(c, bins, w).sum(axis=2)
        den = np.where(wt > 0, wt, 1.0)
        q_b = np.where(wt > 0, (q * weight).reshape(c, bins, w).sum(axis=2) / den, 0.5)
        v_b = var_positive.reshape(c, bins, w).sum(axis=2) * (1.0 - q_b) ** 2
        v_b = v_b + var_negative.reshape(c, bins, w).sum(axis=2) * q_b**2
        shrink = np.divide(n_b, n_b + prior, out=np.zeros_like(n_b), where=n_b + prior > 0)
        each = 2.0 * a * shrink * (q_b * (1.0 - q_b) + v_b / np.maximum(n_b, 1.0))
        return np.asarray(np.minimum(each, n_b).sum(axis=1), dtype=np.float64)

    # One-vs-rest log loss (Σ_j binary log loss of class j's map), the NLL's proxy:
    # the Brier score barely sees a held-out example of class j in a bin whose map
    # value is at the floor, the log loss pays −log(floor) for it.
    # The uncalibrated loss of a fine bin is taken at its midpoint, except in the two
    # end bins, where the confidences of a confident model crowd towards 0 and 1 and
    # the loss varies without bound: there its best case, −log(hi) for a positive and
    # −log(1 − lo) for a negative, so that no gain is credited that the bin cannot
    # show. (With midpoints everywhere, a map on digits was credited with a gain of
    # 0.2 nats per example, −log(1 − 1/30) for every negative in the first bin, where
    # the held-out NLL rose by 0.19.)
    qf = np.clip(mapped, PROBABILITY_FLOOR, 1.0 - PROBABILITY_FLOOR)
    s_pos = np.array(mids)
    s_neg = np.array(mids)
    s_pos[0], s_neg[0] = 1.0 / n_fine, 0.0
    s_pos[-1], s_neg[-1] = 1.0, 1.0 - 1.0 / n_fine
    s_pos = np.clip(np.broadcast_to(s_pos, (c, n_fine)), PROBABILITY_FLOOR, 1.0)
    s_neg = np.clip(np.broadcast_to(s_neg, (c, n_fine)), 0.0, 1.0 - PROBABILITY_FLOOR)
    ll_pos = np.log(s_pos) - np.log(qf)
    ll_neg = np.log1p(-s_neg) - np.log1p(-qf)
    ll_in = float(np.sum(positive * ll_pos + negative * ll_neg)) / m_hat
    q_fk = np.where(
        w_k > 0, per_bin(qf * weight) / np.where(w_k > 0, w_k, 1.0), per_bin(qf) / width
    )
    n_fit = np.maximum(per_bin(positive + negative), 1.0)
    p_fit = np.clip(per_bin(positive), 0.0, n_fit)
    prior_mean = np.where(
        w_k > 0, per_bin(s * weight) / np.where(w_k > 0, w_k, 1.0), per_bin(s) / width
    )
    ll_opt = float(
        np.sum(
            a
            * rate_optimism(
                n_fit, p_fit, per_bin(var_positive), per_bin(var_negative), q_fk, prior_mean
            )
        )
    )
    ll_unseen = float(
        np.sum(np.maximum(ll_pos.max(axis=1), 0.0) + np.maximum(ll_neg.max(axis=1), 0.0))
    )
    ll_var = float(
        np.sum((deff * pp + var_positive) * ll_pos**2 + (deff * nn + var_negative) * ll_neg**2)
    )

    if scheme_weights is None:
        opt_total = float(np.sum(optimism(map_bins, 0.0)))
    else:
        sw = np.asarray(scheme_weights, dtype=np.float64)
        opt_total = sum(
            float(np.sum(sw[:, ell - 1] * optimism(2**ell, prior_strength / 2**ell)))
            for ell in range(1, sw.shape[1] + 1)
        )
    return {
        "cwece_before": float(np.sum(ece_before)) / (c * m_hat),
        "cwece_after": float(np.sum(ece_after)) / (c * m_hat),
        "brier_before": brier_before,
        "brier_after": brier_in + deff * opt_total / m_hat,
        "brier_change_se": math.sqrt(var_change) / m_hat,
        "logloss_change": ll_in + deff * ll_opt / m_hat,
        "logloss_unseen": ll_unseen / m_hat,
        "logloss_change_se": math.sqrt(ll_var) / m_hat,
    }


#: Rounds from which the spread of the per-round releases estimates the design effect.
MIN_ROUNDS_FOR_SPREAD = 5


def client_sampling_design_effect(client_sizes: NDArray[np.int64], sampling_rate: float) -> float:
    """Variance inflation of a mean over Poisson-sampled clients' examples: 1 + (1 − q)(m̄ − 1).

    With clients sampled independently at rate q in each of T rounds, a sum
    Σ_k N_k D_k (N_k ~ Binomial(T, q), D_k client k's total) has variance
    T q (1 − q) Σ_k D_k², whereas independent examples would give the
    per-example variance. In the worst case every example of a client
    contributes alike (intra-client correlation 1, e.g. a client holding one
    class), D_k = m_k d_k, and the ratio is 1 + (1 − q)(m̄ − 1) with
    m̄ = Σ m_k² / Σ m_k the size-weighted mean client size (Kish's design
    effect of cluster sampling, with the finite-population factor 1 − q: at
    q = 1 every client takes part and there is no client sampling).

    Parameters
    ----------
    client_sizes : ndarray
        Examples per client. Only used under secure aggregation (no DP
        claimed, as the exact class counts of the binning weights); under DP
        the callers pass the noise's variance only (a limitation: see
        :func:`multiclass_harm_estimates`).
    sampling_rate : float
        q ∈ (0, 1].

    References
    ----------
    .. [1] L. Kish, Survey Sampling (1965), §5.4 (design effect of cluster sampling).
    """
    m = np.asarray(client_sizes, dtype=np.float64)
    total = float(m.sum())
    if total <= 0:
        return 1.0
    weighted = float(np.sum(m * m)) / total
    return 1.0 + (1.0 - float(sampling_rate)) * max(weighted - 1.0, 0.0)


def keep_or_decline_multiclass(
    calibrator: MulticlassCalibrator,
    estimates: dict[str, float],
    *,
    method: str,
    enabled: bool = True,
) -> MulticlassCalibrator:
    """``calibrator`` if its release predicts it lowers cwECE and the Brier score, else the identity.

    The map is kept when the predicted classwise ECE is below the uncalibrated
    one, the predicted Brier score (with its optimism) is below the
    uncalibrated one by more than one standard error of the change, and the
    predicted one-vs-rest log-loss gain, less its small-sample guard, exceeds
    z_{1−a} standard errors (a = ``HARM_LEVEL``)
    (:func:`multiclass_harm_estimates`). The decision and the estimates go
    into ``procedure`` (``applied``, ``harm_estimates``) either way; with
    ``enabled=False`` the map is kept whatever they say.

    Returns
    -------
    MulticlassCalibrator
        ``calibrator`` (with the decision recorded) or a
        :class:`MulticlassIdentityCalibrator` carrying the same receipt, after a
        ``UserWarning`` with the released estimates (never a count).
    """
    est = {k: float(v) for k, v in estimates.items()}
    shown = multiclass_harm_estimates_in_range(est)
    z = harm_threshold(HARM_LEVEL)
    helps = (
        est["cwece_after"] < est["cwece_before"]
        and est["brier_after"] + est["brier_change_se"] < est["brier_before"]
        and -(est["logloss_change"] + est["logloss_unseen"]) > z * est["logloss_change_se"]
    )
    if helps or not enabled:
        procedure = {
            **calibrator.procedure,
            "applied": True,
            "harm_estimates": shown,
            "harm_estimates_unbiased": est,
        }
        return replace(calibrator, procedure=procedure)
    change = est["brier_after"] - est["brier_before"]
    reason = (
        f"its own (noisy) release estimates the classwise ECE of the uncalibrated "
        f"probabilities at {max(est['cwece_before'], 0.0):.4f} and that of the learned map on "
        f"new data at {max(est['cwece_after'], 0.0):.4f}, the map's change of the Brier "
        f"score at {change:+.4f} ± {est['brier_change_se']:.4f} and of the one-vs-rest log "
        f"loss at {est['logloss_change']:+.4f} ± {est['logloss_change_se']:.4f} (standard "
        "errors; negative is better); a map is kept only if it lowers the classwise ECE, the "
        "Brier score by more than one standard error, and the log loss, less "
        f"{est['logloss_unseen']:#.2g} for one unseen example of each class where it hurts "
        f"most, by more than {z:.3g} standard errors (one-sided level {HARM_LEVEL})"
    )
    warn_degenerate(
        f"{method} calibration was not applied: {reason}; returning the identity map (the "
        "input probabilities). More clients or budget would let the map be learned; pass "
        "do_no_harm=False to keep it anyway."
    )
    return MulticlassIdentityCalibrator(
        declined=method,
        reason=reason,
        estimates=est,
        n_classes=calibrator.n_classes,
        input_kind=calibrator.input_kind,
        receipt=dict(calibrator.receipt),
        procedure={
            **calibrator.procedure,
            "applied": False,
            "harm_estimates": shown,
            "harm_estimates_unbiased": est,
        },
    )


#: The ranges of the multiclass estimates that are levels, not changes: the classwise
#: ECE is in [0, 1], the one-vs-rest Brier score summed over classes in [0, 2].
MULTICLASS_HARM_RANGES = {
    "cwece_before": (0.0, 1.0),
    "cwece_after": (0.0, 1.0),
    "brier_before": (0.0, 2.0),
    "brier_after": (0.0, 2.0),
}


def multiclass_harm_estimates_in_range(estimates: dict[str, float]) -> dict[str, float]:
    """The estimates of :func:`multiclass_harm_estimates` clipped into their ranges, for people.

    Each level is an unbiased difference of noisy sums, so on little data it can
    leave its range (a 3-example federation under DistributedDP ε = 1 gave a
    Brier score of −10). The decision reads the unbiased values (their change
    and its standard error are what is meaningful); a calibrator records both,
    ``harm_estimates`` (this, what a report shows) and ``harm_estimates_unbiased``.
    Changes and standard errors are left as they are. Post-processing.
    """
    out = dict(estimates)
    for key, (lo, hi) in MULTICLASS_HARM_RANGES.items():
        if key in out:
            out[key] = min(max(out[key], lo), hi)
    return out
