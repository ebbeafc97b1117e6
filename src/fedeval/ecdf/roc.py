"""DP ROC curves from two private ECDFs (Barczewski et al. 2025, §5.1).

With Φ_c(t) = #{examples of class c with score ≤ t} (the paper's F_{ϕ_TP} and
F_{ϕ_FP} up to the factor n), the rates at threshold t are ratios of ECDF
values: in fedeval's (scikit-learn's) convention "higher score = positive",

    TPR(t) = 1 - Φ_1(t)/Φ_1(τ_N),    FPR(t) = 1 - Φ_0(t)/Φ_0(τ_N).

(The paper predicts positive for *low* scores; the formulas mirror.) Both
prefix-count vectors are released with tree noise at ε/2 each, so the curve is
ε-DP by basic composition (one example can change its class, moving both). The
denominators are the released counts at τ_N, which is post-processing; so is
the optional monotone smoothing of both ECDFs (eq. 3), which makes the curve
monotone and keeps it inside the unit square.

References
----------
.. [1] J. Barczewski, A. Mawass and J. Ramon, "Differentially private empirical
   cumulative distribution functions", arXiv:2502.06651 (2025), §5.1.
.. [2] T. Fawcett, "An introduction to ROC analysis", Pattern Recognit. Lett.
   27 (2006).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from fedeval.ecdf.grid import check_grid
from fedeval.ecdf.release import PrivateECDF, _check_values, private_ecdf
from fedeval.ecdf.tree import NoiseKind
from fedeval.privacy.guarantee import Guarantee
from fedeval.privacy.ledger import BudgetLedger, LedgerEntry
from fedeval.randomness import RNGLike, as_generator
from fedeval.validation import check_binary_labels, check_epsilon

__all__ = ["DPROCCurve", "dp_roc_curve", "roc_l1_distance"]


@dataclass(frozen=True)
class DPROCCurve:
    """A differentially private ROC curve.

    Attributes
    ----------
    fpr, tpr : ndarray, shape (B + 1,)
        Rates at decreasing thresholds; the first point is at τ_N (0, 0) and
        the last at threshold -inf (1, 1). Monotone only if smoothed.
    thresholds : ndarray, shape (B + 1,)
        Predict positive when score > threshold.
    ecdf_negatives, ecdf_positives : PrivateECDF
        The two (possibly smoothed) releases the curve is computed from.
    epsilon : float
    guarantee : Guarantee
    post_processing : tuple of str
    """

    fpr: NDArray[np.float64]
    tpr: NDArray[np.float64]
    thresholds: NDArray[np.float64]
    ecdf_negatives: PrivateECDF
    ecdf_positives: PrivateECDF
    epsilon: float
    guarantee: Guarantee
    post_processing: tuple[str, ...]

    def auc(self) -> float:
        """Trapezoidal area under the released curve (post-processing)."""
        return float(np.trapezoid(self.tpr, self.fpr))


def _rates(ecdf: PrivateECDF, name: str) -> NDArray[np.float64]:
    top = float(ecdf.counts[-1])
    if top < 1.0:
        warnings.warn(
            f"the released count of {name} at the last grid point is {top:.3g} < 1; "
            "using 1 as the denominator (degenerate: almost no examples of this class)",
            RuntimeWarning,
            stacklevel=3,
        )
        top = 1.0
    return np.asarray(1.0 - ecdf.counts / top, dtype=np.float64)


def dp_roc_curve(
    scores: ArrayLike,
    labels: ArrayLike,
    grid: ArrayLike,
    *,
    epsilon: float,
    rng: RNGLike = None,
    smoothing: Literal[1, 2] | None = 2,
    noise: NoiseKind = "laplace",
    ledger: BudgetLedger | None = None,
) -> DPROCCurve:
    """ε-DP ROC curve from the private ECDFs of both classes' scores (§5.1).

    Parameters
    ----------
    scores : array_like, shape (n,)
        Classifier scores (higher = more likely positive).
    labels : array_like, shape (n,)
        0/1 labels.
    grid : array_like, shape (N,)
        Public thresholds, strictly increasing, N ≥ 2, covering the score domain.
    epsilon : float
        Total ε > 0; each class's ECDF gets ε/2.
    rng : int, Generator or None
    smoothing : {1, 2} or None, default 2
        Monotone smoothing norm (eq. 3) applied to both ECDFs, or None for the
        raw curve (which may cross itself).
    noise : {"laplace", "discrete"}
    ledger : BudgetLedger, optional
        Charged ε/2 twice, atomically.

    Returns
    -------
    DPROCCurve

    Raises
    ------
    ValueError, TypeError
        Bad scores, labels (non-binary, length mismatch), grid, or ε ≤ 0.

    Notes
    -----
    Privacy: ε-DP per example (replacement neighbouring): two tree releases
    at ε/2 (Theorem 1) composed sequentially; rates, smoothing and AUC are
    post-processing.

    References
    ----------
    .. [1] Barczewski, Mawass & Ramon (2025), §5.1 and Figure 5.
    """
    s = _check_values(scores)
    y = check_binary_labels(labels)
    if y.size != s.size:
        raise ValueError(f"scores and labels differ in length: {s.size} vs {y.size}")
    g = check_grid(grid)
    eps = check_epsilon(epsilon)
    gen = as_generator(rng)
    half = eps / 2.0
    # Examples of the other class are placed above the grid: they count at no
    # grid point, and the public normaliser stays n.
    above = float(g[-1]) + max(1.0, abs(float(g[-1])))
    if ledger is not None:
        ledger.charge_all(
            [
                LedgerEntry(f"DP ROC: private ECDF of class {c} scores", half, 0.0, "example")
                for c in (0, 1)
            ]
        )
    ecdfs: list[PrivateECDF] = []
    for c in (0, 1):
        rel = private_ecdf(np.where(y == c, s, above), g, epsilon=half, rng=gen, noise=noise)
        if smoothing is not None:
            rel = rel.smoothed(smoothing)
        ecdfs.append(rel)
    neg, pos = ecdfs
    fpr = np.concatenate([_rates(neg, "negatives")[::-1], [1.0]])
    tpr = np.concatenate([_rates(pos, "positives")[::-1], [1.0]])
    thresholds = np.concatenate([neg.grid[::-1], [-np.inf]])
    guarantee = Guarantee(
        epsilon=eps,
        delta=0.0,
        unit="example",
        statement=(
            "two tree-mechanism ECDF releases (Barczewski et al. 2025, Theorem 1) of the "
            f"negatives' and positives' scores at ε/2 = {half:.4g} each, composed sequentially"
        ),
    )
    steps = ("rates = 1 - count/count at the last grid point", *pos.post_processing)
    return DPROCCurve(fpr, tpr, thresholds, neg, pos, eps, guarantee, steps)


def roc_l1_distance(
    fpr_a: ArrayLike,
    tpr_a: ArrayLike,
    fpr_b: ArrayLike,
    tpr_b: ArrayLike,
    *,
    n_eval: int = 4001,
) -> float:
    """∫₀¹ |TPR_a(f) - TPR_b(f)| df for two monotone ROC curves (Figure 5's error).

    Each curve is the piecewise-linear path through its points sorted by
    (FPR, TPR); vertical runs (tied FPR) are jumps, so between two FPR values
    the curve goes from the highest TPR at the left one to the lowest TPR at
    the right one. Evaluated on ``n_eval`` equally spaced FPR values.
    """
    grid = np.linspace(0.0, 1.0, n_eval)

    def interp(fpr: ArrayLike, tpr: ArrayLike) -> NDArray[np.float64]:
        f = np.asarray(fpr, dtype=np.float64)
        t = np.asarray(tpr, dtype=np.float64)
        order = np.lexsort((t, f))
        f, t = f[order], t[order]
        k = np.clip(np.searchsorted(f, grid, side="right") - 1, 0, f.size - 2)
        f0, f1, t0, t1 = f[k], f[k + 1], t[k], t[k + 1]
        width = f1 - f0
        frac = np.divide(grid - f0, width, out=np.ones_like(grid), where=width > 0)
        return np.asarray(t0 + np.clip(frac, 0.0, 1.0) * (t1 - t0), dtype=np.float64)

    diff = np.abs(interp(fpr_a, tpr_a) - interp(fpr_b, tpr_b))
    return float(np.trapezoid(diff, grid))
