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

from fedeval.metrics.inputs import hierarchy_of

__all__ = ["BinnedCalibrationError", "binned_calibration_error"]

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


def binned_calibration_error(release: Any, *, level: int | None = None) -> BinnedCalibrationError:
    """The binned ECE of the scores of a released two-class hierarchy (see the module docstring).

    Parameters
    ----------
    release : Release, HierarchicalHistogram or Evaluation
        Scores read as probabilities: the score domain should be [0, 1].
    level : int, optional
        The level whose nodes are the bins; default the first with at least
        :data:`MIN_BINS` nodes (or the leaves).

    Returns
    -------
    BinnedCalibrationError
        NaN when the released total is not positive.
    """
    tree = hierarchy_of(release)
    b, h = tree.branching, tree.height
    if level is None:
        lv = 1
        while lv < h and b**lv < MIN_BINS:
            lv += 1
    else:
        lv = int(level)
        if not 1 <= lv <= h:
            raise ValueError(f"level must lie in 1..{h}, got {level}")
    n_bins = b**lv
    # The consistent leaves as released (unclipped): every bin's gap is a linear
    # query, unbiased; clipping noisy leaves at 0 would bias it.
    leaves = np.asarray(tree.leaves, dtype=np.float64)
    per = leaves.shape[1] // n_bins
    lo, hi = tree.spec.score_range
    mids = lo + (np.arange(leaves.shape[1]) + 0.5) * (hi - lo) / leaves.shape[1]
    # gap_j = p_j − conf_j·n_j = Σ_{leaves ℓ of bin j} [(1 − mid_ℓ)·pos_ℓ − mid_ℓ·neg_ℓ]
    gap = ((1.0 - mids) * leaves[1] - mids * leaves[0]).reshape(n_bins, per).sum(axis=1)
    nj = np.clip(leaves.reshape(2, n_bins, per).sum(axis=(0, 2)), 0.0, None)
    pj = np.clip(leaves[1].reshape(n_bins, per).sum(axis=1), 0.0, None)
    n = float(tree.totals().sum())
    if not n > 0:
        return BinnedCalibrationError(math.nan, math.nan, math.nan, n_bins)
    ece = float(np.sum(np.abs(gap)) / n)
    sign = np.repeat(np.sign(gap), per)
    # ∂ECE/∂pos_ℓ = s_j (1 − mid_ℓ)/n − ECE/n, ∂ECE/∂neg_ℓ = −s_j mid_ℓ/n − ECE/n.
    w_pos = sign * (1.0 - mids) / n - ece / n
    w_neg = -sign * mids / n - ece / n
    privacy = (
        0.0
        if not tree.guarantee.is_private
        else float(np.sqrt(max(float(tree.joint_query_variance([w_neg, w_pos])[0]), 0.0)))
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        acc = np.clip(np.where(nj > 0, pj / nj, 0.0), 0.0, 1.0)
    sampling = float(np.sqrt(max(float(np.sum(nj * acc * (1.0 - acc))), 0.0)) / n)
    return BinnedCalibrationError(ece, privacy, sampling, int(n_bins))
