"""Federated multiclass binning: FedBin and FedBBQ with the α_j weighting (Algorithm 1).

Each class j gets a one-vs-all binning calibrator g_j built from two summed
histograms over fixed-width bins of the class-j confidence: P_j counts examples
of class j, N_j examples of any other class. A client therefore sends 2c
histograms per round. The server sums them over the sampled clients of every
round (T rounds, Poisson sampling at rate p), optionally with user-level DP
(each client clips each positive histogram to L2 norm C+ and each negative one
to C−, the server adds Gaussian noise), and decodes:

* **FedBin**: g_j(p) = P_j(m) / (P_j(m) + N_j(m)) on the bin m holding p.
* **FedBBQ**: one histogram of 2^M bins is merged in powers of two into M
  binnings of 2, 4, ..., 2^M bins, each scored with the Bayesian marginal
  likelihood of BBQ and averaged with weights proportional to the scores.
* **Weighting**: g̃_j(p) = α_j g_j(p) + (1 − α_j) p with
  α_j = min(Ñ_j / N_j, 1) (Ñ_j class-j examples aggregated so far, N_j class-j
  examples held by all clients) or, under DP,
  α̃_j = min(Ñ_j / (sqrt(2/π) σ_P |P_j|), 1). "all" weights every prediction;
  "changed" only those whose predicted class the unweighted calibrator changes.

The final prediction normalises (g̃_1, ..., g̃_c) to sum to 1 and floors every
probability at :data:`PROBABILITY_FLOOR` (then renormalises): a bin that saw no
positive of class j gives g_j = 0, and one held-out example of class j in it
would otherwise add −log 0 to the NLL.

Do no harm (default): the histograms also estimate, at no extra budget,
whether the map lowers the classwise ECE and the Brier score on new data
(:func:`fedeval.calibration.do_no_harm.multiclass_harm_estimates`); if not,
the identity map is returned with a warning.

References
----------
.. [1] Private federated multiclass post-hoc calibration (the multiclass paper),
   Algorithm 1, §4.1, Appendix B.3 (histogram binning), B.4 (BBQ), B.5
   (weighting), B.1 (DP).
.. [2] M. P. Naeini, G. Cooper and M. Hauskrecht, "Obtaining well calibrated
   probabilities using Bayesian binning", AAAI 2015 (the BBQ score).
.. [3] B. Zadrozny and C. Elkan, "Obtaining calibrated probability estimates
   from decision trees and naive Bayesian classifiers", ICML 2001/KDD 2002.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal

import numpy as np
from numpy.typing import NDArray
from scipy.special import gammaln

from fedeval.aggregation import Rounds
from fedeval.calibration.base import PROBABILITY_FLOOR, register
from fedeval.calibration.multiclass import (
    MulticlassCalibrator,
    check_procedure,
    procedure_record,
    to_probabilities,
)
from fedeval.data import Federation
from fedeval.privacy.ledger import BudgetLedger
from fedeval.privacy.mechanism_for import client_clip
from fedeval.privacy.models import PrivacyModel
from fedeval.randomness import RNGLike, as_generator
from fedeval.sketches.class_histograms import OneVsRestSketch
from fedeval.sketches.grid import UniformGrid
from fedeval.sketches.tree import Tree
from fedeval.validation import check_int_at_least, check_positive

__all__ = [
    "PROBABILITY_FLOOR",
    "BinningHistograms",
    "MulticlassBinningCalibrator",
    "Weighting",
    "bbq_table",
    "fit_multiclass_binning",
    "histogram_table",
]

# PROBABILITY_FLOOR (imported from calibration.base, shared with the binary
# calibrators): the smallest probability a binning calibrator predicts (before
# renormalising the row); it moves a row's top probability by at most (c − 1)·1e-4.

Weighting = Literal["none", "all", "changed"]
_WEIGHTINGS = ("none", "all", "changed")


@dataclass(frozen=True)
class BinningHistograms:
    """What the server holds after T rounds of Algorithm 1.

    Attributes
    ----------
    positive, negative : ndarray, shape (c, n_bins)
        Σ over rounds of the (clipped, noisy) summed histograms, before any
        post-processing.
    noise_std_positive, noise_std_negative : float
        Per-bin standard deviation of the noise in ONE round's sum (0 without DP).
    rounds : int
    participations : int
        Client participations over all rounds (a client sampled twice counts
        twice). Server-internal: an exact count, never put in the calibrator.
    round_variance : ndarray, shape (2 c n_bins,)
        Per-coordinate noise variance of one round's released sum.
    round_positive, round_negative : ndarray, shape (T, c, n_bins)
        Each round's released histograms (their spread estimates the
        variance due to client sampling, do no harm).
    """

    positive: NDArray[np.float64]
    negative: NDArray[np.float64]
    noise_std_positive: float
    noise_std_negative: float
    rounds: int
    participations: int
    round_variance: NDArray[np.float64]
    round_positive: NDArray[np.float64]
    round_negative: NDArray[np.float64]


def _aggregate_histograms(
    fed: Federation,
    probs: NDArray[np.float64],
    privacy: PrivacyModel,
    *,
    n_bins: int,
    rounds: int,
    sampling_rate: float,
    gen: np.random.Generator,
    ledger: BudgetLedger | None,
) -> tuple[BinningHistograms, Rounds]:
    """T rounds of Algorithm 1: the summed (clipped, noisy) histograms of the sampled clients."""
    c = fed.n_classes
    clip = client_clip(privacy)
    pair = None if clip is None else (clip if isinstance(clip, tuple) else (clip, clip))
    sketch = OneVsRestSketch(c, n_bins, pair)
    source = replace(fed, scores=probs)
    schedule = Rounds(
        source, sketch, privacy, rounds=rounds, sampling_rate=sampling_rate, rng=gen, ledger=ledger
    )
    total_pos = np.zeros((c, n_bins))
    total_neg = np.zeros((c, n_bins))
    variance = np.zeros(2 * c * n_bins)
    per_round = []
    for _ in range(rounds):
        rel = schedule.release(sketch)
        pos, neg = rel.decode()
        per_round.append((pos, neg))
        total_pos += pos
        total_neg += neg
        variance = np.asarray(rel.variance, dtype=np.float64)
    # The noise of one round's sum, in counts (the release's own units).
    hist = BinningHistograms(
        total_pos,
        total_neg,
        float(np.sqrt(variance[0])),
        float(np.sqrt(variance[c * n_bins])),
        rounds,
        schedule.participations,
        variance,
        np.stack([p for p, _ in per_round]),
        np.stack([n for _, n in per_round]),
    )
    return hist, schedule


def histogram_table(
    positive: NDArray[np.float64], negative: NDArray[np.float64]
) -> NDArray[np.float64]:
    """FedBin's per-class bin values P/(P+N) (Appendix B.3).

    Post-processing (named): noisy counts are clamped at 0 first; a bin with no
    mass (P + N = 0) gets its midpoint, i.e. it leaves the confidence roughly
    where it was (the paper leaves empty bins unspecified).

    Returns
    -------
    ndarray, shape (c, n_bins), values in [0, 1]
    """
    p = np.maximum(positive, 0.0)
    n = np.maximum(negative, 0.0)
    total = p + n
    n_bins = positive.shape[1]
    mid = (np.arange(n_bins) + 0.5) / n_bins
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(total > 0, p / np.where(total > 0, total, 1.0), mid[None, :])
    return np.asarray(ratio, dtype=np.float64)


def bbq_table(
    positive: NDArray[np.float64],
    negative: NDArray[np.float64],
    *,
    prior_strength: float = 2.0,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """FedBBQ: Bayesian average of the 2^ℓ-bin calibrators, ℓ = 1..M (Appendix B.4).

    The 2^M-bin histograms are merged in powers of two into binnings of
    B = 2, 4, ..., 2^M bins. Binning B scores

        Σ_b lnΓ(N'/B) − lnΓ(N_b + N'/B) + lnΓ(m_b + α_b) − lnΓ(α_b)
            + lnΓ(n_b + β_b) − lnΓ(β_b),

    α_b = (N'/B)·p_b, β_b = (N'/B)·(1 − p_b), p_b the bin midpoint, N' the prior
    strength (2 in the paper), m_b/n_b/N_b positive/negative/all counts. Its bin
    value is the posterior mean (m_b + α_b)/(N_b + N'/B) (Naeini et al. 2015).
    Because every coarse bin is a union of fine bins, the score-weighted average
    is itself a 2^M-bin step function: that table is what is returned.

    Parameters
    ----------
    positive, negative : ndarray, shape (c, 2^M)
        Noisy counts are clamped at 0 first (post-processing); non-integer
        counts (clipped histograms) are fine for lnΓ.
    prior_strength : float, keyword-only
        N' > 0.

    Returns
    -------
    table : ndarray, shape (c, 2^M)
    scheme_weights : ndarray, shape (c, M)
        Normalised BBQ weight of the 2^ℓ-bin binning (column ℓ − 1).

    References
    ----------
    .. [1] Multiclass paper, Appendix B.4.
    .. [2] Naeini, Cooper & Hauskrecht (2015), the BBQ score.
    """
    c, n_fine = positive.shape
    levels = n_fine.bit_length() - 1
    p = np.maximum(positive, 0.0)
    n = np.maximum(negative, 0.0)
    log_scores = np.empty((c, levels))
    values = np.empty((levels, c, n_fine))
    tree = Tree(2, levels)
    for ell in range(1, levels + 1):
        b = 2**ell
        width = n_fine // b
        m_b = tree.level_sums(p, ell)
        n_b = tree.level_sums(n, ell)
        tot = m_b + n_b
        mid = (np.arange(b) + 0.5) / b
        a = prior_strength / b * mid[None, :]
        bb = prior_strength / b * (1.0 - mid[None, :])
        prior = prior_strength / b
        log_scores[:, ell - 1] = np.sum(
            gammaln(prior)
            - gammaln(tot + prior)
            + gammaln(m_b + a)
            - gammaln(a)
            + gammaln(n_b + bb)
            - gammaln(bb),
            axis=1,
        )
        post = (m_b + a) / (tot + prior)
        values[ell - 1] = np.repeat(post, width, axis=1)
    shifted = log_scores - log_scores.max(axis=1, keepdims=True)
    w = np.exp(shifted)
    w /= w.sum(axis=1, keepdims=True)
    table = np.einsum("cl,lcf->cf", w, values)
    return table, w


@register
@dataclass(frozen=True)
class MulticlassBinningCalibrator(MulticlassCalibrator):
    """One-vs-all binning calibrator (FedBin or FedBBQ) with the α_j weighting.

    Attributes
    ----------
    table : ndarray, shape (c, n_bins)
        g_j on each fixed-width bin of the class-j confidence.
    alpha : ndarray, shape (c,)
        α_j ∈ [0, 1]: trust in g_j (1 = use g_j, 0 = keep the base model's p_j).
    weighting : {"none", "all", "changed"}
    method : {"binning", "bbq"}
    scheme_weights : ndarray, shape (c, M), optional
        FedBBQ only: BBQ weight of each of the M merged binnings.
    floor : float
        Every predicted probability is at least ``floor`` before the row is
        renormalised (:data:`PROBABILITY_FLOOR`; 0 gives the paper's map).
    n_classes, input_kind, receipt, procedure
        See :class:`~fedeval.calibration.multiclass.MulticlassCalibrator`.

    Notes
    -----
    Privacy: the calibrator holds only post-processed aggregates (the released
    histograms), so using or publishing it costs nothing beyond its ``receipt``.

    References
    ----------
    .. [1] Multiclass paper, Algorithm 1, Appendices B.3–B.5.
    """

    kind: ClassVar[str] = "multiclass-binning"
    array_fields: ClassVar[tuple[str, ...]] = ("table", "alpha", "scheme_weights")

    table: NDArray[np.float64]
    alpha: NDArray[np.float64]
    weighting: str = "all"
    method: str = "bbq"
    scheme_weights: NDArray[np.float64] | None = None
    floor: float = PROBABILITY_FLOOR

    def predict_proba(self, scores: Any) -> NDArray[np.float64]:
        """Calibrated class probabilities.

        Parameters
        ----------
        scores : array-like, shape (n, c)
            Logits or probabilities, as the calibrator was fitted on (logits
            are turned into probabilities by softmax first).

        Returns
        -------
        ndarray, shape (n, c)
            Rows sum to 1, every entry at least about ``floor``. A row whose
            one-vs-all values are all 0 (possible only when every bin it falls
            in saw only negatives) keeps the base model's probabilities.

        Raises
        ------
        ValueError, TypeError
            Wrong shape, NaN/inf, or probabilities not summing to 1.
        """
        p = self._probabilities(scores)
        n_bins = self.table.shape[1]
        idx = UniformGrid(n_bins).bin_index(p.ravel()).reshape(p.shape)
        g = np.take_along_axis(self.table, idx.T, axis=1).T
        if self.weighting == "none":
            return self._floored(_normalise(g, p))
        weighted = _normalise(self.alpha[None, :] * g + (1.0 - self.alpha[None, :]) * p, p)
        if self.weighting == "all":
            return self._floored(weighted)
        plain = _normalise(g, p)
        changed = np.argmax(plain, axis=1) != np.argmax(p, axis=1)
        return self._floored(np.where(changed[:, None], weighted, plain))

    def _floored(self, rows: NDArray[np.float64]) -> NDArray[np.float64]:
        if self.floor <= 0.0:
            return rows
        out = np.maximum(rows, self.floor)
        return np.asarray(out / out.sum(axis=1, keepdims=True), dtype=np.float64)


def _normalise(g: NDArray[np.float64], fallback: NDArray[np.float64]) -> NDArray[np.float64]:
    s = g.sum(axis=1, keepdims=True)
    ok = s > 0
    return np.where(ok, g / np.where(ok, s, 1.0), fallback)


def fit_multiclass_binning(
    fed: Federation,
    privacy: PrivacyModel,
    *,
    method: Literal["binning", "bbq"] = "bbq",
    rounds: int = 1,
    sampling_rate: float = 1.0,
    weighting: Weighting = "all",
    n_bins: int = 15,
    levels: int = 7,
    prior_strength: float = 2.0,
    do_no_harm: bool = True,
    rng: RNGLike = None,
    ledger: BudgetLedger | None = None,
) -> MulticlassCalibrator:
    """Run Algorithm 1 (FedBin or FedBBQ) over T rounds and return the calibrator.

    Parameters
    ----------
    fed : Federation
        Multiclass ("probabilities" or "logits"; logits are softmaxed).
    privacy : SecureAggregation, DistributedDP, CentralDP or UserLevelDP
        With UserLevelDP, ``clip`` is C (both histograms) or (C+, C−); the
        noise multiplier z makes the T Poisson-subsampled rounds (ε, δ)-DP.
        DistributedDP and CentralDP release the exact counts once (T = 1,
        every client): one example changes one bin of each of the c classes'
        histograms, L1 = c (example level; B·c for a client of at most B
        examples), discrete Laplace noise.
    method : {"binning", "bbq"}, keyword-only
        FedBin on ``n_bins`` bins, or FedBBQ on 2^``levels`` bins.
    rounds : int
        T ≥ 1.
    sampling_rate : float
        p ∈ (0, 1].
    weighting : {"none", "all", "changed"}
        The α_j weighting of Appendix B.5 ("none" = the unweighted baselines).
    n_bins : int
        FedBin's bin count, ≥ 1 (default 15).
    levels : int
        FedBBQ's M ≥ 1 (paper: 7, i.e. 128 bins).
    prior_strength : float
        BBQ's N' > 0 (paper: 2).
    do_no_harm : bool
        True (default): return a
        :class:`~fedeval.calibration.do_no_harm.MulticlassIdentityCalibrator`
        with a warning unless the released histograms predict that the map
        lowers both the classwise ECE and (by one standard error) the Brier
        score on new data (:func:`fedeval.calibration.do_no_harm.multiclass_harm_estimates`;
        no extra budget). False keeps the map. Either way ``procedure`` records
        ``applied`` and the ``harm_estimates``.
    rng : int, Generator or None
    ledger : BudgetLedger, optional
        Charged for all rounds, once, before the first round.

    Returns
    -------
    MulticlassBinningCalibrator or MulticlassIdentityCalibrator
        The map, or the identity when do-no-harm declined it.

    Raises
    ------
    ValueError, TypeError
        Invalid federation, privacy model, T, p, or option.

    Notes
    -----
    Choices where the paper is open:

    * Histograms are summed over all T rounds (the calibrator after round t
      uses everything aggregated so far); a client sampled in several rounds
      contributes several times, which is why α_j is clipped at 1.
    * Without DP, N_j (class-j examples over all clients) is taken as known to
      the server (one extra secure-aggregation count, or public metadata).
    * Under DP, Ñ_j is the sum of the noisy positive histogram (clamped at
      0) and σ_P in α̃_j = min(Ñ_j / (sqrt(2/π)·σ_P·|P_j|), 1) is the per-bin
      noise standard deviation of the T-round total, σ+·sqrt(T); |P_j| is the
      number of bins.
    * Clipping happens on the client (Algorithm 1's "server clips" would not
      bound sensitivity). Each class-j positive histogram is clipped to L2
      norm C+, each negative one to C−; noise on P is z·sqrt(2c)·C+ and on N
      z·sqrt(2c)·C−, so the normalised 2c-histogram vector has sensitivity
      sqrt(2c) and multiplier z (the paper's 2cT count of Lemma B.7).
    * Noise is continuous Gaussian, as the paper's Lemma B.7: clipped
      histograms are real-valued. Negative noisy counts are clamped at 0
      before decoding (post-processing).
    * Do no harm judges the map at the resolution it is estimated on: FedBin's
      ``n_bins``; FedBBQ's 2^ℓ bins with ℓ the BBQ-weighted mean level
      (rounded, averaged over classes). The "changed" weighting is judged as
      the unweighted map (α = 1), which it equals wherever the argmax is kept.
    * Predictions are floored at :data:`PROBABILITY_FLOOR` (not in the paper).

    Privacy: user-level (ε, δ)-DP under UserLevelDP; with SecureAggregation
    the server learns the exact summed histograms (no DP). The whole procedure
    is charged once, before the first round (:class:`fedeval.aggregation.Rounds`);
    the calibrator carries its ``receipt`` (guarantee, ledger entry) and the
    public facts of the rounds in ``procedure``, never the number of clients
    or participations (at q = 1 the participations are T times the number of
    clients, which user-level DP protects). Under DP α̃_j depends on the data
    only through the released histograms; without DP α_j uses the exact
    class counts (secure aggregation claims no DP).

    Public inputs: T, q, (C+, C−), the number of classes and bins.

    References
    ----------
    .. [1] Multiclass paper, Algorithm 1, §4.1, §4.3, Appendices B.1, B.3–B.5.
    """
    t, p_rate = check_procedure(fed, rounds, sampling_rate)
    if method not in ("binning", "bbq"):
        raise ValueError(f"method must be 'binning' or 'bbq', got {method!r}")
    if weighting not in _WEIGHTINGS:
        raise ValueError(f"weighting must be one of {_WEIGHTINGS}, got {weighting!r}")
    if method == "bbq":
        m = check_int_at_least(levels, 1, name="levels")
        if m > 16:
            raise ValueError(f"levels must be an integer in 1..16, got {levels!r}")
        bins = 2**m
    else:
        bins = check_int_at_least(n_bins, 1, name="n_bins")
    prior = check_positive(prior_strength, name="prior_strength")
    gen = as_generator(rng)

    probs = to_probabilities(fed.scores, fed.kind)
    hist, schedule = _aggregate_histograms(
        fed,
        probs,
        privacy,
        n_bins=bins,
        rounds=t,
        sampling_rate=p_rate,
        gen=gen,
        ledger=ledger,
    )
    if method == "bbq":
        table, scheme_w = bbq_table(hist.positive, hist.negative, prior_strength=prior)
    else:
        table, scheme_w = histogram_table(hist.positive, hist.negative), None

    c = fed.n_classes
    n_tilde = np.maximum(hist.positive.sum(axis=1), 0.0)
    if schedule.private:
        noise_mass = math.sqrt(2.0 / math.pi) * hist.noise_std_positive * math.sqrt(t) * bins
        alpha = np.minimum(n_tilde / noise_mass, 1.0)
    else:
        n_class = np.bincount(fed.labels, minlength=c).astype(np.float64)
        alpha = np.where(n_class > 0, np.minimum(n_tilde / np.maximum(n_class, 1.0), 1.0), 0.0)
    alpha = np.asarray(alpha, dtype=np.float64)
    cal = MulticlassBinningCalibrator(
        table,
        alpha,
        weighting,
        method,
        scheme_w,
        n_classes=c,
        input_kind=fed.kind,
        receipt=schedule.mechanism.receipt.as_dict(),
        procedure=procedure_record(
            schedule,
            f"2c = {2 * c} one-vs-rest histograms of {bins} bins",
            variance=hist.round_variance,
            clip=client_clip(privacy),
        ),
    )
    from fedeval.calibration.do_no_harm import (
        client_sampling_design_effect,
        keep_or_decline_multiclass,
        multiclass_harm_estimates,
    )

    if scheme_w is None:
        map_bins = bins
    else:
        mean_level = float(np.mean(scheme_w @ np.arange(1, scheme_w.shape[1] + 1)))
        map_bins = 2 ** int(min(max(round(mean_level), 1), scheme_w.shape[1]))
    used = alpha if weighting == "all" else np.ones(c)
    mids = (np.arange(bins) + 0.5) / bins
    mapped = used[:, None] * table + (1.0 - used[:, None]) * mids[None, :]
    total_var = t * hist.round_variance
    est = multiclass_harm_estimates(
        hist.positive,
        hist.negative,
        total_var[: c * bins].reshape(c, bins),
        total_var[c * bins : 2 * c * bins].reshape(c, bins),
        mapped,
        used,
        map_bins,
        scheme_weights=scheme_w,
        prior_strength=prior,
        # Without DP the client sizes may bound the design effect (as the class
        # counts above are used); under DP they are protected: no bound when
        # clients are sampled (q < 1), none needed when all take part.
        design_effect=(1.0 if p_rate >= 1.0 else math.inf)
        if schedule.private
        else client_sampling_design_effect(fed.client_sizes, p_rate),
        rounds_positive=hist.round_positive,
        rounds_negative=hist.round_negative,
    )
    return keep_or_decline_multiclass(cal, est, method=method, enabled=bool(do_no_harm))
