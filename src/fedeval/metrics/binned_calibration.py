"""Binned calibration error read from a released per-class hierarchy (no extra release).

The hierarchy holds, per score bin, the number of positives and negatives, so
the binned expected calibration error (ECE, Naeini et al. 2015)

    ECE = Σ_j (n_j / n) · |p_j / n_j − conf_j|

is post-processing of it: the bins are a level's nodes (at least 10 of
them), and each bin's gap p_j − conf_j·n_j is read from the leaves below it,
each leaf's examples at its midpoint (within half a leaf width of the true
mean score): a linear query on the released leaves, unbiased under the noise.
Its uncertainty has two parts:

* privacy: the delta method with the signs of the bins' gaps held fixed, a
  linear query on both classes' consistent leaves whose exact variance the
  tree gives (:meth:`~fedeval.sketches.hierarchical_histogram.HierarchicalHistogram.joint_query_variance`);
* sampling: labels drawn given scores, Var ≈ Σ_j n_j a_j (1 − a_j) / n²,
  a_j = p_j / n_j.

The absolute value makes the ECE biased upwards near 0 (a perfectly
calibrated model has a positive expected ECE), so the interval is for the
binned ECE and is approximate where a bin's gap is within its noise.

The same leaves give the other binary calibration metrics, all post-processing
(no privacy cost), with every example read at its leaf's midpoint m:

* Brier score, Σ_ℓ [(1 − m_ℓ)² pos_ℓ + m_ℓ² neg_ℓ] / n: a linear query. Each
  example's loss moves by |s − m|·|s + m − 2y| ≤ (w/2)·2 = w, so the binned score
  lies within the leaf width w of the exact one (:func:`binned_brier_score`).
* log loss, −Σ_ℓ [pos_ℓ log m_ℓ + neg_ℓ log(1 − m_ℓ)] / n with probabilities
  clipped to [eps, 1 − eps] (eps the float64 machine epsilon, as scikit-learn's
  ``log_loss``); its binning error is at most each leaf's largest
  |log s − log m| (positives) or |log(1 − s) − log(1 − m)| (negatives), summed
  over the released counts (:func:`binned_log_loss` reports it). It is large
  only where scores reach the end leaves, where log diverges.
* reliability curve, per bin the observed frequency and the mean prediction,
  as :func:`sklearn.calibration.calibration_curve` (:func:`binned_reliability_curve`).

The bins of the ECE and of the reliability curve are ``n_bins`` equal-width
bins of [0, 1], right-closed as in scikit-learn (see
:mod:`fedeval.metrics.calibration_error`); a leaf goes to the bin holding its
midpoint, so where a bin edge is not a leaf edge the examples of the one leaf
that straddles it may be counted in the neighbouring bin. With ``n_bins`` a power
of the branching (at most the number of leaves) the bins are unions of leaves
and the per-bin counts are exactly the released ones.

References
----------
Naeini, Cooper and Hauskrecht, AAAI 2015 (ECE);
cormode-markov-2023-federated-calibration-evaluation footnote 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fedeval.metrics.inputs import hierarchy_of
from fedeval.sketches.hierarchical_histogram import HierarchicalHistogram
from fedeval.validation import check_int_at_least

__all__ = [
    "BinnedCalibrationError",
    "BinnedScore",
    "binned_brier_score",
    "binned_calibration_error",
    "binned_log_loss",
    "binned_reliability_curve",
    "check_probability_scores",
]

MIN_BINS = 10
"""The ECE's bins are the first level with at least this many nodes (16 for b = 2)."""


@dataclass(frozen=True)
class BinnedCalibrationError:
    """Binned ECE of a release with its standard errors.

    Attributes
    ----------
    estimate : float
    privacy_se, sampling_se : float
    n_bins : int
    """

    estimate: float
    privacy_se: float
    sampling_se: float
    n_bins: int

    @property
    def se(self) -> float:
        return float(math.hypot(self.privacy_se, self.sampling_se))


def check_probability_scores(tree: HierarchicalHistogram) -> None:
    """Refuse a hierarchy whose score domain is not [0, 1] (calibration reads scores as P(y = 1)).

    Parameters
    ----------
    tree : HierarchicalHistogram

    Raises
    ------
    ValueError
        The score domain ``tree.spec.score_range`` is not (0, 1).
    """
    lo, hi = tree.spec.score_range
    if (float(lo), float(hi)) != (0.0, 1.0):
        raise ValueError(
            "calibration metrics read the scores as probabilities of the positive class, so "
            f"the score domain must be (0, 1); this release's is {(lo, hi)}: evaluate "
            "probabilities in [0, 1] (e.g. apply a sigmoid or a calibrator first)"
        )


def _leaves(tree: HierarchicalHistogram) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
    """The consistent leaves as released (unclipped), their midpoints and their width."""
    leaves = np.asarray(tree.leaves, dtype=np.float64)
    lo, hi = tree.spec.score_range
    width = (hi - lo) / leaves.shape[1]
    mids = lo + (np.arange(leaves.shape[1]) + 0.5) * width
    return leaves, mids, float(width)


def _bin_of_leaf(mids: NDArray[np.float64], n_bins: int) -> NDArray[np.intp]:
    """The equal-width, right-closed bin of [0, 1] holding each leaf's midpoint (sklearn's rule)."""
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    return np.searchsorted(edges[1:-1], mids, side="left").astype(np.intp)


def _private_se(tree: HierarchicalHistogram, w_neg: Any, w_pos: Any) -> float:
    """Noise SE of the linear query Σ w_neg·neg + w_pos·pos on the consistent leaves (0 without DP)."""
    if not tree.guarantee.is_private:
        return 0.0
    return float(np.sqrt(max(float(tree.joint_query_variance([w_neg, w_pos])[0]), 0.0)))


def binned_calibration_error(
    release: Any, *, level: int | None = None, n_bins: int | None = None
) -> BinnedCalibrationError:
    """The binned ECE of the scores of a released two-class hierarchy (see the module docstring).

    Parameters
    ----------
    release : Release, HierarchicalHistogram or Evaluation
        Scores read as probabilities: the score domain should be [0, 1].
    level : int, optional
        The level whose nodes are the bins; default the first with at least
        :data:`MIN_BINS` nodes (or the leaves).
    n_bins : int, optional
        Instead of ``level``: this many equal-width bins of [0, 1], each leaf in
        the bin of its midpoint (exactly the released bins when ``n_bins`` is a
        power of the branching up to the number of leaves).

    Returns
    -------
    BinnedCalibrationError
        NaN when the released total is not positive.

    Raises
    ------
    ValueError
        ``level`` outside 1..height, ``n_bins`` < 1, or both given.
    """
    tree = hierarchy_of(release)
    b, h = tree.branching, tree.height
    leaves, mids, _ = _leaves(tree)
    if n_bins is not None:
        if level is not None:
            raise ValueError("give level or n_bins, not both")
        nb = check_int_at_least(n_bins, 1, name="n_bins")
        bin_of = _bin_of_leaf(mids, nb)
    else:
        if level is None:
            lv = 1
            while lv < h and b**lv < MIN_BINS:
                lv += 1
        else:
            lv = int(level)
            if not 1 <= lv <= h:
                raise ValueError(f"level must lie in 1..{h}, got {level}")
        nb = b**lv
        bin_of = np.arange(leaves.shape[1]) // (leaves.shape[1] // nb)
    # The consistent leaves as released (unclipped): every bin's gap is a linear
    # query, unbiased; clipping noisy leaves at 0 would bias it.
    # gap_j = p_j − conf_j·n_j = Σ_{leaves ℓ of bin j} [(1 − mid_ℓ)·pos_ℓ − mid_ℓ·neg_ℓ]
    gap = np.bincount(bin_of, weights=(1.0 - mids) * leaves[1] - mids * leaves[0], minlength=nb)
    nj = np.clip(np.bincount(bin_of, weights=leaves.sum(axis=0), minlength=nb), 0.0, None)
    pj = np.clip(np.bincount(bin_of, weights=leaves[1], minlength=nb), 0.0, None)
    n = float(tree.totals().sum())
    if not n > 0:
        return BinnedCalibrationError(math.nan, math.nan, math.nan, nb)
    ece = float(np.sum(np.abs(gap)) / n)
    sign = np.sign(gap)[bin_of]
    # ∂ECE/∂pos_ℓ = s_j (1 − mid_ℓ)/n − ECE/n, ∂ECE/∂neg_ℓ = −s_j mid_ℓ/n − ECE/n.
    w_pos = sign * (1.0 - mids) / n - ece / n
    w_neg = -sign * mids / n - ece / n
    privacy = _private_se(tree, w_neg, w_pos)
    with np.errstate(divide="ignore", invalid="ignore"):
        acc = np.clip(np.where(nj > 0, pj / nj, 0.0), 0.0, 1.0)
    sampling = float(np.sqrt(max(float(np.sum(nj * acc * (1.0 - acc))), 0.0)) / n)
    return BinnedCalibrationError(ece, privacy, sampling, int(nb))


@dataclass(frozen=True)
class BinnedScore:
    """A calibration loss read from the released leaves, with its errors.

    Attributes
    ----------
    estimate : float
        The loss with every example at its leaf's midpoint (NaN when the released
        total is not positive).
    privacy_se : float
        Standard error from the privacy noise (delta method on the consistent
        leaves' exact variances; 0 without noise).
    binning_bound : float
        How far the loss of the examples can be from ``estimate`` because their
        scores were binned: a bound, not a standard error (exact counts under
        secure aggregation; computed on the released counts under DP).
    """

    estimate: float
    privacy_se: float
    binning_bound: float


def _linear_loss(
    tree: HierarchicalHistogram,
    loss_pos: NDArray[np.float64],
    loss_neg: NDArray[np.float64],
    *,
    upper: float,
) -> tuple[float, float]:
    """Mean of a per-leaf loss over the released examples, clipped to [0, upper], and its noise SE.

    A ratio of two linear queries of the consistent leaves (unclipped, so each is
    unbiased); the clip to the loss's range is a named post-processing step.
    """
    leaves = np.asarray(tree.leaves, dtype=np.float64)
    n = float(tree.totals().sum())
    if not n > 0:
        return math.nan, math.nan
    raw = float(loss_pos @ leaves[1] + loss_neg @ leaves[0]) / n
    se = _private_se(tree, (loss_neg - raw) / n, (loss_pos - raw) / n)
    return float(np.clip(raw, 0.0, upper)), se


def binned_brier_score(release: Any) -> BinnedScore:
    """Brier score of a released two-class hierarchy, every example at its leaf's midpoint.

    Parameters
    ----------
    release : Release, HierarchicalHistogram or Evaluation
        Scores are probabilities of the positive class: the score domain must be [0, 1].

    Returns
    -------
    BinnedScore
        ``binning_bound`` is the leaf width w: each example's squared error moves
        by |s − m|·|s + m − 2y| ≤ w when its score s is read as the midpoint m.
        The estimate is clipped to [0, 1] (post-processing of noisy counts).

    Raises
    ------
    ValueError
        The score domain is not [0, 1].

    References
    ----------
    Brier, "Verification of forecasts expressed in terms of probability",
    Monthly Weather Review 78, 1950; :func:`sklearn.metrics.brier_score_loss`.

    Notes
    -----
    Privacy: post-processing of the released hierarchy, no privacy cost.
    """
    tree = hierarchy_of(release)
    check_probability_scores(tree)
    _, mids, width = _leaves(tree)
    estimate, se = _linear_loss(tree, (1.0 - mids) ** 2, mids**2, upper=1.0)
    return BinnedScore(estimate, se, width)


LOG_LOSS_EPS = float(np.finfo(np.float64).eps)
"""Probabilities are clipped to [eps, 1 − eps] before the log, as in scikit-learn's log_loss."""


def binned_log_loss(release: Any) -> BinnedScore:
    """Log loss (cross-entropy) of a released two-class hierarchy, every example at its leaf's midpoint.

    Parameters
    ----------
    release : Release, HierarchicalHistogram or Evaluation
        Scores are probabilities of the positive class: the score domain must be [0, 1].

    Returns
    -------
    BinnedScore
        ``binning_bound`` = Σ_ℓ (pos_ℓ·a_ℓ + neg_ℓ·c_ℓ)/n over the released
        counts (floored at 0), with a_ℓ the largest |log s − log m_ℓ| and c_ℓ
        the largest |log(1 − s) − log(1 − m_ℓ)| over the leaf's scores s
        (clipped to [eps, 1 − eps]): large where scores reach the end leaves.
        The estimate is floored at 0 (post-processing of noisy counts).

    Raises
    ------
    ValueError
        The score domain is not [0, 1].

    Notes
    -----
    Privacy: post-processing of the released hierarchy, no privacy cost.
    Probabilities are clipped to [:data:`LOG_LOSS_EPS`, 1 − :data:`LOG_LOSS_EPS`].
    """
    tree = hierarchy_of(release)
    check_probability_scores(tree)
    leaves, mids, width = _leaves(tree)
    eps = LOG_LOSS_EPS
    m = np.clip(mids, eps, 1.0 - eps)
    estimate, se = _linear_loss(tree, -np.log(m), -np.log1p(-m), upper=math.inf)
    lo = np.clip(mids - width / 2, eps, 1.0 - eps)
    hi = np.clip(mids + width / 2, eps, 1.0 - eps)
    a = np.maximum(np.log(m) - np.log(lo), np.log(hi) - np.log(m))
    c = np.maximum(np.log1p(-m) - np.log1p(-hi), np.log1p(-lo) - np.log1p(-m))
    counts = np.clip(leaves, 0.0, None)
    n = float(tree.totals().sum())
    bound = float(a @ counts[1] + c @ counts[0]) / n if n > 0 else math.nan
    return BinnedScore(estimate, se, bound)


def binned_reliability_curve(
    release: Any, *, n_bins: int = 5
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Observed frequency and mean prediction per bin, as :func:`sklearn.calibration.calibration_curve`.

    Parameters
    ----------
    release : Release, HierarchicalHistogram or Evaluation
        Scores are probabilities of the positive class: the score domain must be [0, 1].
    n_bins : int
        Equal-width, right-closed bins of [0, 1] (sklearn's ``strategy="uniform"``);
        each leaf goes to the bin of its midpoint.

    Returns
    -------
    prob_true : ndarray, shape (k,)
        Released positives over released examples per bin, clipped to [0, 1].
    prob_pred : ndarray, shape (k,)
        The count-weighted mean of the leaf midpoints per bin, clipped to the
        bin (within half a leaf width of the examples' mean score under
        secure aggregation when the bins are unions of leaves).
        Bins whose released count is not positive are left out (k ≤ n_bins),
        as sklearn leaves out empty bins.

    Raises
    ------
    ValueError
        The score domain is not [0, 1], or ``n_bins`` < 1.

    Notes
    -----
    Privacy: post-processing of the released hierarchy, no privacy cost. The
    per-bin sums use the consistent leaves as released (unclipped), whose noise
    cancels within a bin; the clips are named post-processing steps.
    """
    tree = hierarchy_of(release)
    check_probability_scores(tree)
    nb = check_int_at_least(n_bins, 1, name="n_bins")
    leaves, mids, _ = _leaves(tree)
    bin_of = _bin_of_leaf(mids, nb)
    total = leaves.sum(axis=0)
    nj = np.bincount(bin_of, weights=total, minlength=nb)
    pj = np.bincount(bin_of, weights=leaves[1], minlength=nb)
    sj = np.bincount(bin_of, weights=mids * total, minlength=nb)
    keep = nj > 0
    edges = np.linspace(0.0, 1.0, nb + 1)
    prob_true = np.clip(pj[keep] / nj[keep], 0.0, 1.0)
    prob_pred = np.clip(sj[keep] / nj[keep], edges[:-1][keep], edges[1:][keep])
    return prob_true.astype(np.float64), prob_pred.astype(np.float64)
