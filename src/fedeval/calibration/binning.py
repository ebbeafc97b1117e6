"""Federated histogram binning of binary scores (Cormode–Markov §6).

Pipeline
--------
1. **Release** (the only private step): one per-class hierarchical score
   histogram, :class:`fedeval.sketches.hierarchy.HierarchySketch` released by :func:`fedeval.aggregation.release`, under
   secure aggregation, distributed DP or local DP.
2. **Post-processing** (free, every step named in the calibrator's
   ``post_processing`` record):

   a. consistency of the tree (Hay et al. 2010);
   b. equi-depth bucket boundaries from the private quantiles of all scores,
      **snapped to the nearest leaf edge** (duplicates merged), so that every
      bucket is a union of leaves and its per-class counts are sums of released
      leaves, with no within-leaf interpolation;
   c. per-bucket positive fraction ``P_j / (P_j + N_j)`` from the per-class
      counts; buckets whose estimated total is not positive take the overall
      positive fraction;
   d. clamping of the fractions to [0, 1] (noise can push a ratio of noisy
      counts outside it);
   e. flooring at the public ``prob_floor`` (default
      :data:`~fedeval.calibration.base.PROBABILITY_FLOOR`, 1e-4, as the
      multiclass binning): every bucket predicts a probability in
      [prob_floor, 1 − prob_floor], so no held-out example has an infinite
      log loss (a bucket without positives otherwise predicts exactly 0).

Bucket convention
-----------------
Buckets are left-closed, ``[e_j, e_{j+1})``, the last one also holding the upper
domain end, like the leaves of the hierarchy (``fedeval.sketches.grid``).
Scores outside ``[e_0, e_B]`` are mapped to the first/last bucket.

Number of buckets
-----------------
Unless given, ``B = round(M^{1/3})`` under secure aggregation and distributed DP
(Theorems 7 and 8: bucket bias ℓ/B balanced against sampling error √(B/M)), and
``B = round(sqrt(ε · sqrt(M)))`` under local DP (Theorem 8: privacy error
B/(ε√M) balanced against √(B/M)). ``M`` is the *released* total count
(post-processing, so choosing B costs nothing).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from fedeval.aggregation import Path, release
from fedeval.calibration.base import (
    PROBABILITY_FLOOR,
    Calibrator,
    check_prob_floor,
    check_raw_scores,
    register,
    warn_degenerate,
)
from fedeval.calibration.do_no_harm import HARM_LEVEL, harm_threshold
from fedeval.data import Federation
from fedeval.privacy.ledger import BudgetLedger
from fedeval.privacy.models import PrivacyModel
from fedeval.privacy.receipt import compose
from fedeval.public_facts import Public, planning_size
from fedeval.randomness import RNGLike, as_generator
from fedeval.sketches.grid import bin_of_edges
from fedeval.sketches.hierarchical_histogram import HierarchicalHistogram
from fedeval.sketches.hierarchy import HierarchySketch, HierarchySpec, LevelBudget, layout_of
from fedeval.validation import check_int_at_least

__all__ = [
    "HistogramBinningCalibrator",
    "binning_from_hierarchy",
    "default_n_bins",
    "height_for",
    "histogram_binning",
    "noise_aware_n_bins",
    "predicted_bins_error",
]

BinaryPrivacy = PrivacyModel

#: Hierarchy height used by Cormode–Markov §7 for every experiment.
DEFAULT_HEIGHT = 10


# ----------------------------------------------------------------- calibrator
@register
@dataclass(frozen=True, eq=False)
class HistogramBinningCalibrator(Calibrator):
    """Histogram-binning calibrator: a score's calibrated probability is its bucket's.

    Attributes
    ----------
    edges : ndarray, shape (B + 1,)
        Increasing bucket boundaries; buckets are ``[e_j, e_{j+1})``, the last
        closed.
    probabilities : ndarray, shape (B,)
        Calibrated P(y = 1) of each bucket, in [0, 1].
    probabilities_se : ndarray, shape (B,)
        Standard error of each probability due to the privacy noise (delta
        method on the per-class count variances; 0 under secure aggregation).
        Sampling error of the finite calibration set is not included.
    positive_counts, negative_counts : ndarray, shape (B,)
        Released (noisy, consistent) per-class counts of each bucket.
    post_processing : list of str
        The named post-processing steps applied to the release, in order.
    prob_floor : float
        The public floor: every prediction lies in [prob_floor, 1 − prob_floor].
    harm_estimates : dict
        The do-no-harm estimates that kept the map
        (:func:`~fedeval.calibration.do_no_harm.binary_harm_estimates`; empty
        when do-no-harm was off).
    receipt : dict
        The receipt of the release the calibrator was built from.
    """

    kind: ClassVar[str] = "histogram-binning"
    array_fields: ClassVar[tuple[str, ...]] = (
        "edges",
        "probabilities",
        "probabilities_se",
        "positive_counts",
        "negative_counts",
    )

    edges: NDArray[np.float64]
    probabilities: NDArray[np.float64]
    probabilities_se: NDArray[np.float64]
    positive_counts: NDArray[np.float64]
    negative_counts: NDArray[np.float64]
    post_processing: list[str] = field(default_factory=list)
    prob_floor: float = PROBABILITY_FLOOR
    harm_estimates: dict[str, Any] = field(default_factory=dict)

    @property
    def n_bins(self) -> int:
        return int(self.probabilities.shape[0])

    def predict_proba(self, scores: Any) -> NDArray[np.float64]:
        """Calibrated P(y = 1) of each score.

        Parameters
        ----------
        scores : array-like of float, shape (n,)
            Raw scores; values outside the calibrator's domain go to the first
            or last bucket.

        Returns
        -------
        ndarray of float64, shape (n,)

        Raises
        ------
        ValueError
            NaN/inf scores or a shape other than (n,).
        TypeError
            Non-numeric scores.
        """
        s = check_raw_scores(scores)
        p = self.probabilities[bucket_of(self.edges, s)]
        return np.clip(p, self.prob_floor, 1.0 - self.prob_floor)


# ------------------------------------------------------------------- helpers
def bucket_of(edges: NDArray[np.float64], s: NDArray[np.float64]) -> NDArray[np.intp]:
    """Left-closed buckets [e_j, e_{j+1}) (the grid convention); out-of-domain scores go to the end buckets."""
    return bin_of_edges(edges, s)


def check_binary_inputs(fed: Any, privacy: Any) -> None:
    if not isinstance(fed, Federation):
        raise TypeError(f"fed must be a fedeval.Federation, got {type(fed).__name__}")
    if fed.kind != "binary":
        raise ValueError(
            f"binary histogram binning needs a binary federation (1-D scores), got "
            f"kind={fed.kind!r}; use method='bbq'/'temperature'/... via fedeval.calibrate "
            "for multiclass tasks"
        )


def default_n_bins(n_examples: float, privacy: BinaryPrivacy) -> int:
    """Number of buckets B from the error bounds of Cormode–Markov Theorems 7–8.

    Parameters
    ----------
    n_examples : float
        M, the (estimated) number of calibration examples (clipped below at 1).
    privacy : SecureAggregation, DistributedDP or LocalDP

    Returns
    -------
    int
        ``round(M^{1/3})`` for secure aggregation and distributed DP (Theorem 7,
        and Theorem 8 for DistDP where the privacy term B/(εM) is dominated);
        ``round(sqrt(ε · sqrt(M)))`` for local DP (Theorem 8). At least 1.

    References
    ----------
    cormode-markov-2023-federated-calibration-evaluation Theorems 7 and 8.
    """
    m = max(float(n_examples), 1.0)
    local = privacy.regime == "local"
    b = math.sqrt(privacy.epsilon * math.sqrt(m)) if local else m ** (1.0 / 3.0)
    return max(1, round(b))


#: A bucket must hold at least this many noise standard deviations of examples.
MIN_SIGNAL_TO_NOISE = 3.0


def predicted_bins_error(
    hist: HierarchicalHistogram, m_hat: float, candidates: NDArray[np.int64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Predicted mean calibration error of B buckets, and each bucket count's noise sd.

    The error of a histogram-binning map with B equal-mass buckets over M
    examples is predicted as the sum of

    * binning bias 1/(4B): a calibration function of slope ≤ 1 varies by 1/B
      across a bucket, and the mean absolute deviation from its average is a
      quarter of that;
    * sampling error ½√(B/M): the standard deviation √(p(1 − p)/(M/B)) at its
      largest (p = ½);
    * noise error σ_B·B/M: the released count of a bucket covering 1/B of
      the score domain has noise standard deviation σ_B (from the release's
      known noise), relative to its M/B examples.

    With no noise the minimiser is B = M^{1/3}, Cormode–Markov's Theorem 7
    rate; noise moves it to coarser buckets.

    Returns
    -------
    error : ndarray, shape (len(candidates),)
    noise_sd : ndarray, shape (len(candidates),)

    References
    ----------
    cormode-markov-2023-federated-calibration-evaluation Theorems 7–8 (the
    three terms and the M^{1/3} rate).
    """
    m = max(float(m_hat), 1.0)
    lo, hi = hist.spec.score_range
    b = np.asarray(candidates, dtype=np.float64)
    low = np.full(b.shape, float(lo))
    high = np.minimum(lo + (hi - lo) / b, hi)
    _, v1 = hist.range_counts(low, high, cls=1)
    _, v0 = hist.range_counts(low, high, cls=0)
    sd = np.sqrt(np.asarray(v0) + np.asarray(v1))
    err = 1.0 / (4.0 * b) + 0.5 * np.sqrt(b / m) + sd * b / m
    return err, sd


def noise_aware_n_bins(hist: HierarchicalHistogram, m_hat: float) -> tuple[int, int]:
    """(B minimising :func:`predicted_bins_error`, the largest B the noise supports).

    "Supported": every bucket's expected count M̂/B is at least
    ``MIN_SIGNAL_TO_NOISE`` times its noise standard deviation. Both come
    from the released total and the release's known noise: post-processing.
    """
    n_leaves = hist.spec.n_leaves
    cands = np.unique(np.rint(np.geomspace(1, n_leaves, min(n_leaves, 64))).astype(np.int64))
    err, sd = predicted_bins_error(hist, m_hat, cands)
    m = max(float(m_hat), 1.0)
    ok = m / cands >= MIN_SIGNAL_TO_NOISE * sd
    supported = int(cands[ok].max()) if ok.any() else 1
    best = int(cands[np.argmin(np.where(ok, err, np.inf))]) if ok.any() else 1
    return best, supported


def height_for(n_bins: int) -> int:
    """The hierarchy height for B buckets under DP: B buckets need only ~2B leaves.

    Under DP every level costs budget (DistDP: ε/h per level; LDP: M/h reports
    per level), so a shallower tree is more accurate (measured in
    ``benchmarks/bench_calibration_binary.py``).
    """
    return int(min(DEFAULT_HEIGHT, max(3, math.ceil(math.log2(2 * n_bins)))))


def release_scores_hierarchy(
    fed: Federation,
    privacy: BinaryPrivacy,
    *,
    n_bins: int | None = None,
    n_examples: int | None = None,
    height: int | None,
    branching: int,
    level_budget: LevelBudget,
    path: Path,
    rng: RNGLike,
    ledger: BudgetLedger | None,
    public: Public | None = None,
) -> HierarchicalHistogram:
    """The per-class score hierarchy every binary calibrator is learned from.

    The height is published (the receipt has one part per level), so it is
    chosen from public inputs only: the requested ``height``, or the one for
    the requested ``n_bins``, or the default number of buckets at a public
    size (declared ``n_examples``/``public``, or a size the model makes public)
    — else at a noisy count of the examples released first with
    :data:`fedeval.public_facts.COUNT_SHARE` of the budget
    (:func:`fedeval.public_facts.planning_size`). The returned tree's receipt
    then composes both releases. Exact sums (no DP) use
    :data:`DEFAULT_HEIGHT`.
    """
    gen = as_generator(rng)
    model: BinaryPrivacy = privacy
    count_receipt = None
    if height is not None:
        h = height
    elif privacy.regime == "exact":
        h = DEFAULT_HEIGHT  # exact sums: finer leaves only sharpen the quantiles
    elif n_bins is not None:
        h = height_for(n_bins)
    else:
        declared = public or Public()
        if n_examples is not None:
            declared = Public(declared.n_clients, n_examples, declared.score_range)
        size = planning_size(fed, privacy, public=declared, path=path, rng=gen, ledger=ledger)
        model = size.remaining
        count_receipt = size.receipt
        h = height_for(default_n_bins(float(size.n_examples), privacy))
    sketch = HierarchySketch(HierarchySpec(h, branching, fed.score_range, 2))
    decoded: HierarchicalHistogram = release(
        fed, sketch, model, layout=layout_of(level_budget), path=path, rng=gen, ledger=ledger
    ).decode()
    if count_receipt is not None:
        composed = compose(
            [count_receipt, decoded.receipt],
            "calibration hierarchy planned from a released count: [1] the count, [2] the hierarchy",
        )
        decoded = replace(
            decoded, receipt=replace(composed, sensitivity=dict(decoded.receipt.sensitivity))
        )
    return decoded


def snapped_equi_depth_leaf_edges(hist: HierarchicalHistogram, n_bins: int) -> NDArray[np.intp]:
    """Leaf-edge indices (0..n_leaves) of ~equi-depth buckets; duplicates merged.

    The private quantiles of all scores (both classes) are rounded to the
    nearest leaf edge. Post-processing of the release. When the released total
    is not positive there are no quantiles: the buckets are then of equal
    width (see :func:`equi_depth_is_defined`).
    """
    lo, _ = hist.spec.score_range
    n_leaves = hist.spec.n_leaves
    if not equi_depth_is_defined(hist):
        idx = np.rint(np.linspace(0.0, n_leaves, n_bins + 1)).astype(np.intp)
        return np.unique(idx)
    edges = hist.equi_depth_edges(n_bins)
    idx = np.rint((edges - lo) / hist.spec.leaf_width).astype(np.intp)
    idx = np.clip(idx, 0, n_leaves)
    idx[0], idx[-1] = 0, n_leaves
    return np.unique(idx)


def equi_depth_is_defined(hist: HierarchicalHistogram) -> bool:
    """Whether the released tree has positive mass, so that its quantiles exist.

    Noise can make every released count non-positive (few examples, small ε);
    that is a property of the noisy release, so the fallback it triggers
    (equal-width buckets) is post-processing, announced by
    :func:`warn_no_mass`, never an error.
    """
    return hist.has_mass()


def warn_no_mass(steps: list[str]) -> None:
    """Record and announce the equal-width fallback of a release without positive mass."""
    steps.append("released total not positive: no private quantiles, equal-width buckets instead")
    warn_degenerate(
        "the released score histogram has no positive mass (too few examples for the noise); "
        "the calibrator falls back to equal-width buckets and the overall positive fraction"
    )


def bucket_counts(
    hist: HierarchicalHistogram, leaf_edges: NDArray[np.intp]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per-class counts (negatives, positives) of the buckets between leaf edges.

    ``hist`` must be consistent, so that sums of leaves equal the node-set
    answers of the same ranges.
    """
    cum = np.concatenate([np.zeros((2, 1)), np.cumsum(hist.leaves, axis=1)], axis=1)
    counts = cum[:, leaf_edges[1:]] - cum[:, leaf_edges[:-1]]
    return counts[0], counts[1]


def receipt_record(hist: HierarchicalHistogram) -> dict[str, Any]:
    """The release's receipt as the JSON-able field every calibrator carries."""
    return {"receipt": hist.receipt.as_dict()}


def _positive_fraction(
    pos: NDArray[np.float64],
    neg: NDArray[np.float64],
    overall: float,
) -> tuple[NDArray[np.float64], list[str]]:
    """Post-processing steps (c) and (d) of the module docstring."""
    steps: list[str] = []
    total = pos + neg
    empty = total <= 0
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(empty, overall, pos / np.where(empty, 1.0, total))
    if empty.any():
        steps.append(
            f"empty buckets: {int(empty.sum())} of {pos.size} buckets with estimated total "
            f"<= 0 take the overall positive fraction {overall:.4g}"
        )
    clamped = np.clip(frac, 0.0, 1.0)
    n_changed = int(np.count_nonzero(clamped != frac))
    steps.append(f"clamp bucket fractions to [0, 1] ({n_changed} of {pos.size} buckets changed)")
    return clamped, steps


def _overall_fraction(hist: HierarchicalHistogram) -> float:
    tot = np.maximum(hist.totals(), 0.0)
    s = float(tot.sum())
    return float(tot[1] / s) if s > 0 else 0.5


# ------------------------------------------------------------------- public
def floor_probabilities(
    probs: NDArray[np.float64], prob_floor: float
) -> tuple[NDArray[np.float64], str]:
    """Post-processing step (e): clip to [prob_floor, 1 − prob_floor], and its record."""
    floored = np.clip(probs, prob_floor, 1.0 - prob_floor)
    changed = int(np.count_nonzero(floored != probs))
    return floored, (
        f"floor probabilities at prob_floor = {prob_floor:g} (public): [{prob_floor:g}, "
        f"{1.0 - prob_floor:g}] ({changed} of {probs.size} values changed)"
    )


def binning_from_hierarchy(
    hist: HierarchicalHistogram,
    *,
    n_bins: int | None = None,
    privacy: BinaryPrivacy | None = None,
    prob_floor: float = PROBABILITY_FLOOR,
) -> HistogramBinningCalibrator:
    """Histogram-binning calibrator from a released score hierarchy (post-processing only).

    Parameters
    ----------
    hist : HierarchicalHistogram
        A binary (two-class) release from
        :class:`~fedeval.sketches.hierarchy.HierarchySketch`; made consistent
        here if it is not.
    n_bins : int, optional
        Number of equi-depth buckets requested, B >= 1 (fewer result when
        snapped boundaries coincide). Default: the B of smallest predicted
        error at the release's noise (:func:`noise_aware_n_bins`), never finer
        than the noise supports.
    privacy : model, optional
        Only used for the default B (its ε under local DP); default: SA rule.
    prob_floor : float
        Public floor in (0, 0.5): predictions lie in [prob_floor, 1 − prob_floor].

    Returns
    -------
    HistogramBinningCalibrator

    Privacy
    -------
    None consumed: this is post-processing of ``hist``, whose ledger entries the
    calibrator records.

    References
    ----------
    cormode-markov-2023-federated-calibration-evaluation §6, Theorems 7–8;
    Zadrozny and Elkan, "Learning and making decisions when costs and
    probabilities are both unknown", KDD 2001 (histogram binning).
    """
    if hist.spec.n_classes != 2:
        raise ValueError(f"binning needs a two-class hierarchy, got {hist.spec.n_classes} classes")
    floor = check_prob_floor(prob_floor)
    steps = []
    if not hist.is_consistent:
        hist = hist.consistent()
    steps.append("consistency (Hay et al. 2010)")
    m_hat = float(np.maximum(hist.totals(), 0.0).sum())
    if n_bins is None:
        # The bucket count with the smallest predicted error at this release's
        # noise, never finer than the noise supports.
        nb, _ = noise_aware_n_bins(hist, m_hat)
        steps.append(f"{nb} buckets: the smallest predicted error at the release's noise")
    else:
        nb = check_int_at_least(n_bins, 1, name="n_bins")
    nb = min(nb, hist.spec.n_leaves)
    leaf_edges = snapped_equi_depth_leaf_edges(hist, nb)
    if equi_depth_is_defined(hist):
        steps.append(
            f"equi-depth boundaries from private quantiles, snapped to leaf edges "
            f"({nb} requested, {leaf_edges.size - 1} distinct)"
        )
    else:
        warn_no_mass(steps)
    neg, pos = bucket_counts(hist, leaf_edges)
    lo, _ = hist.spec.score_range
    edges = lo + leaf_edges.astype(np.float64) * hist.spec.leaf_width
    edges[-1] = hist.spec.score_range[1]
    # Exact noise variances of the bucket counts on the consistent tree.
    _, var_pos = hist.range_counts(edges[:-1], edges[1:], cls=1)
    _, var_neg = hist.range_counts(edges[:-1], edges[1:], cls=0)
    probs, more = _positive_fraction(pos, neg, _overall_fraction(hist))
    steps.extend(more)
    probs, step = floor_probabilities(probs, floor)
    steps.append(step)
    total = pos + neg
    with np.errstate(divide="ignore", invalid="ignore"):
        se = np.where(
            total > 0,
            np.sqrt(neg**2 * var_pos + pos**2 * var_neg) / np.where(total > 0, total, 1.0) ** 2,
            np.nan,
        )
    return HistogramBinningCalibrator(
        edges=edges,
        probabilities=probs,
        probabilities_se=se,
        positive_counts=pos,
        negative_counts=neg,
        post_processing=steps,
        prob_floor=floor,
        **receipt_record(hist),
    )


def histogram_binning(
    fed: Federation,
    privacy: BinaryPrivacy,
    *,
    n_bins: int | None = None,
    n_examples: int | None = None,
    height: int | None = None,
    branching: int = 2,
    level_budget: LevelBudget = "split",
    path: Path = "fast",
    rng: RNGLike = None,
    ledger: BudgetLedger | None = None,
    do_no_harm: bool = True,
    prob_floor: float = PROBABILITY_FLOOR,
    harm_level: float = HARM_LEVEL,
) -> Calibrator:
    """Federated histogram-binning calibration of a binary score (Cormode–Markov §6).

    One private release of per-class hierarchical score histograms, then
    equi-depth buckets from its quantiles and each bucket's positive fraction
    (see the module docstring for every post-processing step).

    Parameters
    ----------
    fed : Federation
        Binary task: 1-D scores in ``fed.score_range``, labels 0/1.
    privacy : SecureAggregation, DistributedDP or LocalDP
    n_bins : int, optional
        Number of buckets B >= 1. Default: the B of smallest predicted error
        at the release's noise, never finer than the noise supports
        (:func:`noise_aware_n_bins`; M^{1/3} without noise). The hierarchy's
        height is planned from :func:`default_n_bins` of the public size.
    n_examples : int, optional
        A declared, public number of calibration examples M, used only to plan
        the default height. Default: the exact count where the model makes it
        public (SA, LDP, replacement), else a noisy count released first with
        5 % of the budget (:func:`fedeval.public_facts.planning_size`; the
        receipt composes both). The exact number of examples or of clients is
        never used under a model that protects it, since the height is
        published in the receipt.
    height : int, optional
        Hierarchy height. Default: 10 under secure aggregation (Cormode–Markov
        §7); under DistDP and LDP ``ceil(log2(2 B))`` clipped to [3, 10], with
        B the requested ``n_bins`` or the default rule at the public size of
        ``n_examples`` (every level costs budget, and B buckets need only ~2B
        leaves).
    branching : int
        Hierarchy branching factor (default 2, as the paper).
    level_budget : {"split", "assign"}
        Distributed DP budget strategy across levels (see
        :func:`~fedeval.sketches.hierarchy.layout_of`).
    path : {"fast", "faithful"}
        Simulation path of the federated sum.
    rng : int, Generator or None
        Source of all noise (and of the client-to-level assignment).
    ledger : BudgetLedger, optional
        Charged once for the hierarchy release; by default a fresh ledger
        holding the model's budget.
    do_no_harm : bool
        Keep the map only if its own release shows it lowers the held-out ECE
        and NLL (:func:`~fedeval.calibration.do_no_harm.keep_or_decline`: the
        estimated held-out NLL gain must exceed z_{1−a} standard errors);
        otherwise return an
        :class:`~fedeval.calibration.do_no_harm.IdentityCalibrator` carrying
        the reason. Post-processing, no budget.
    prob_floor : float
        Public floor in (0, 0.5) of every prediction (default 1e-4,
        :data:`~fedeval.calibration.base.PROBABILITY_FLOOR`).
    harm_level : float
        The one-sided level a in (0, 0.5) of the do-no-harm test (default
        0.05, z = 1.645): a map that does not help is kept with probability at
        most about a.

    Returns
    -------
    HistogramBinningCalibrator or IdentityCalibrator
        Records the guarantee and the ledger entries of the release (and the
        do-no-harm estimates, ``harm_estimates``).

    Raises
    ------
    TypeError
        ``fed`` is not a Federation, or an unsupported privacy model.
    ValueError
        Multiclass federation, ``n_bins < 1``, bad hierarchy parameters.
    BudgetExceededError
        The ledger cannot afford the release (nothing is released).

    Privacy
    -------
    Exactly one release: the per-class score hierarchy. Secure aggregation: no
    DP (exact sums). Distributed DP: ε-DP (or (ε, δ) with Skellam) per example
    or per client, as ``privacy`` states. Local DP: ε-LDP per example.
    Everything after the release is post-processing (the number of buckets
    comes from the released total). Public inputs: the score domain, the
    height and branching (planned from public inputs or a released count,
    :func:`release_scores_hierarchy`), ``n_bins`` and a declared ``n_examples``. Degenerate data (one class, a released total
    that is not positive) give a calibrator with a named fallback and a
    warning, never an error.

    References
    ----------
    cormode-markov-2023-federated-calibration-evaluation §6 (Theorems 7–8) and
    §7.3.
    """
    check_binary_inputs(fed, privacy)
    if n_bins is not None:
        check_int_at_least(n_bins, 1, name="n_bins")
    floor = check_prob_floor(prob_floor)
    harm_threshold(harm_level)  # validates the level before the release
    hist = release_scores_hierarchy(
        fed,
        privacy,
        n_bins=n_bins,
        n_examples=n_examples,
        height=height,
        branching=branching,
        level_budget=level_budget,
        path=path,
        rng=rng,
        ledger=ledger,
    )
    cal = binning_from_hierarchy(hist, n_bins=n_bins, privacy=privacy, prob_floor=floor)
    from fedeval.calibration.do_no_harm import bucket_optimism, keep_or_decline

    if not do_no_harm:
        return cal
    optimism = bucket_optimism(
        hist, [(cal.edges, cal.probabilities)], np.ones(1), prior_strength=0.0
    )
    return keep_or_decline(
        cal, hist, method="binning", optimism=optimism, n_params=cal.n_bins, level=harm_level
    )
