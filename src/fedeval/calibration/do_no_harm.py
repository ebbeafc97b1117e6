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
  parameters, per example).

References
----------
.. [1] cormode-markov-2023-federated-calibration-evaluation §6, Theorem 7.
.. [2] H. Akaike (1974), "A new look at the statistical model identification"
   (AIC: in-sample log-likelihood is optimistic by the number of parameters).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from fedeval.calibration.base import Calibrator, register, warn_degenerate
from fedeval.sketches.hierarchical_histogram import HierarchicalHistogram

__all__ = ["IdentityCalibrator", "binary_harm_estimates", "keep_or_decline"]

_P_FLOOR = 1e-12


@register
@dataclass(frozen=True)
class IdentityCalibrator(Calibrator):
    """The identity map on probability scores, returned when calibrating would not help.

    Attributes
    ----------
    declined : str
        The method that was learned and declined.
    estimates : dict
        The release's estimates that decided (ECE and NLL before/after).
    """

    kind: ClassVar[str] = "identity"

    declined: str = ""
    estimates: dict[str, Any] = field(default_factory=dict)

    def predict_proba(self, scores: Any) -> NDArray[np.float64]:
        """The scores themselves, clipped to [0, 1] (they are probabilities)."""
        from fedeval.calibration.binning import check_raw_scores

        return np.clip(check_raw_scores(scores), 0.0, 1.0)


def _nll(pos: NDArray[np.float64], neg: NDArray[np.float64], p: NDArray[np.float64]) -> float:
    q = np.clip(p, _P_FLOOR, 1.0 - _P_FLOOR)
    return float(np.sum(pos * -np.log(q) + neg * -np.log1p(-q)))


def binary_harm_estimates(
    hist: HierarchicalHistogram, calibrator: Calibrator, n_map_bins: float
) -> dict[str, float]:
    """ECE and NLL before/after estimated from the release (module docstring).

    Returns
    -------
    dict
        ``ece_before``, ``ece_after``, ``nll_before``, ``nll_after``, ``groups``.
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
    b = max(float(n_map_bins), 1.0)
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
    return {
        "ece_before": ece_before / m_hat,
        "ece_after": ece_after / m_hat,
        "nll_before": _nll(pos, neg, mids) / m_hat,
        "nll_after": _nll(pos, neg, q) / m_hat + b / m_hat,
        "groups": float(g),
    }


def keep_or_decline(
    calibrator: Calibrator,
    hist: HierarchicalHistogram,
    *,
    method: str,
    n_map_bins: float,
    enabled: bool = True,
) -> Calibrator:
    """``calibrator`` if the release predicts it lowers ECE and NLL, else the identity.

    Only for scores that are probabilities (domain [0, 1]); other domains keep
    the calibrator (the identity is no probability there). The estimates are
    post-processing of ``hist``: no budget.
    """
    if not enabled or tuple(hist.spec.score_range) != (0.0, 1.0):
        return calibrator
    est = binary_harm_estimates(hist, calibrator, n_map_bins)
    helps = est["ece_after"] < est["ece_before"] and est["nll_after"] <= est["nll_before"]
    if helps:
        return calibrator
    warn_degenerate(
        f"{method} calibration was not applied: from its own release the uncalibrated scores "
        f"have ECE ≈ {est['ece_before']:.4f} and NLL ≈ {est['nll_before']:.4f}, and the learned "
        f"map is expected to give ECE ≈ {est['ece_after']:.4f} and NLL ≈ {est['nll_after']:.4f} "
        "on new data; returning the identity map (the scores as they are). More clients or "
        "budget would let the map be learned; pass do_no_harm=False to keep it anyway."
    )
    return IdentityCalibrator(declined=method, estimates=est, receipt=dict(calibrator.receipt))
