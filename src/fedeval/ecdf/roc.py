"""DP ROC curves from two private class-conditional prefix-count releases (Barczewski et al. 2025, §5.1).

With c_k(t) = #{examples of class k with score < t} and n_k the class size, the
rates of the rule "score ≥ t" (fedeval's and scikit-learn's convention) are

    TPR(t) = 1 - c_1(t)/n_1,    FPR(t) = 1 - c_0(t)/n_0.

(The paper predicts positive for *low* scores; the formulas mirror.) Each class's
counts "strictly below" the grid points τ_1..τ_{N-1}, and below every score
(the class total), are one release of a
:class:`~fedeval.sketches.prefix_tree.PrefixTreeSketch` with half the budget;
the two are charged together and compose to the full budget. The class totals
are released counts (post-processing), and so is the optional monotone
smoothing of both (eq. 3), which makes the curve monotone and keeps it inside
the unit square.

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

from fedeval.aggregation import Path, release, reserve
from fedeval.ecdf.grid import check_grid
from fedeval.ecdf.release import PrivateECDF, check_values, ecdf_model, values_federation
from fedeval.exceptions import SmallDataWarning
from fedeval.privacy.guarantee import Guarantee
from fedeval.privacy.ledger import BudgetLedger
from fedeval.privacy.models import PrivacyModel
from fedeval.privacy.receipt import Receipt, compose
from fedeval.randomness import RNGLike, as_generator
from fedeval.sketches.prefix_tree import PrefixTreeSketch
from fedeval.validation import check_binary_labels

__all__ = ["DPROCCurve", "dp_roc_curve", "roc_l1_distance"]


@dataclass(frozen=True)
class DPROCCurve:
    """A differentially private ROC curve in scikit-learn's layout.

    Attributes
    ----------
    fpr, tpr : ndarray, shape (N + 1,)
        Rates at decreasing thresholds; the first point (threshold ``inf``) is
        (0, 0) and the last (the lowest grid point) (1, 1). Monotone only if
        smoothed.
    thresholds : ndarray, shape (N + 1,)
        Predict positive when score >= threshold: ``inf``, then the grid from
        the top down.
    ecdf_negatives, ecdf_positives : PrivateECDF
        The two (possibly smoothed) class releases the curve is computed from
        (counts strictly below τ_1..τ_{N-1} and, at the last point ``inf``, the class
        total).
    receipt : Receipt
        The two releases, composed.
    post_processing : tuple of str
    """

    fpr: NDArray[np.float64]
    tpr: NDArray[np.float64]
    thresholds: NDArray[np.float64]
    ecdf_negatives: PrivateECDF
    ecdf_positives: PrivateECDF
    receipt: Receipt
    post_processing: tuple[str, ...]

    @property
    def guarantee(self) -> Guarantee:
        return self.receipt.guarantee

    @property
    def epsilon(self) -> float:
        return self.guarantee.epsilon


def _rates(ecdf: PrivateECDF, name: str) -> NDArray[np.float64]:
    """1 − count/total at every released point (total = the released class total)."""
    top = float(ecdf.counts[-1])
    if top < 1.0:
        # Decided from the released total only; under DP a refusal here would depend on the data.
        warnings.warn(
            f"the released total of {name} is below 1 ({top:.3g}); using 1 as the denominator "
            "(degenerate: the class is empty or small against the noise)",
            SmallDataWarning,
            stacklevel=3,
        )
        top = 1.0
    return np.asarray(1.0 - ecdf.counts / top, dtype=np.float64)


def dp_roc_curve(
    scores: ArrayLike,
    labels: ArrayLike,
    grid: ArrayLike,
    privacy: PrivacyModel | None = None,
    *,
    epsilon: float | None = None,
    rng: RNGLike = None,
    smoothing: Literal[1, 2] | None = 2,
    path: Path = "fast",
    ledger: BudgetLedger | None = None,
) -> DPROCCurve:
    """DP ROC curve from the private class-conditional counts of both classes (§5.1).

    Parameters
    ----------
    scores : array_like, shape (n,)
        Classifier scores (higher = more likely positive).
    labels : array_like, shape (n,)
        0/1 labels.
    grid : array_like, shape (N,)
        Public thresholds, strictly increasing, N ≥ 2; the first should be the
        lowest possible score (every example is predicted positive there).
    privacy : privacy model, optional
        Each class's release gets half of its budget (``privacy.scaled(0.5)``).
    epsilon : float, optional
        Sugar for ``DistributedDP(epsilon, neighbouring="replace")``.
    rng : int, Generator or None
    smoothing : {1, 2} or None, default 2
        Monotone smoothing norm (eq. 3) applied to both class releases, or None
        for the raw curve (which may cross itself).
    path : {"fast", "faithful"}
    ledger : BudgetLedger, optional
        Charged for both releases, atomically, before any noise is drawn.

    Returns
    -------
    DPROCCurve

    Raises
    ------
    ValueError, TypeError
        Bad scores, labels (non-binary, length mismatch), grid, or privacy
        arguments. Never on the data's content: one class only is released
        like any other labels.

    Warns
    -----
    UserWarning
        When a class's released total is below 1 (the class is empty or small
        against the noise); 1 is used as its denominator. Decided from the
        released total only.

    Notes
    -----
    Privacy: two releases at half the budget each (Theorem 1 per class: one
    replaced example changes each class's counts on an interval or a suffix),
    composed sequentially; rates, smoothing and AUC are post-processing.
    Public inputs: the grid, and the number of examples only where the model
    makes it public (replacement of one example); the class sizes are
    released counts.

    References
    ----------
    .. [1] Barczewski, Mawass & Ramon (2025), §5.1 and Figure 5.
    """
    s = check_values(scores)
    y = check_binary_labels(labels)
    if y.size != s.size:
        raise ValueError(f"scores and labels differ in length: {s.size} vs {y.size}")
    g = check_grid(grid)
    model = ecdf_model(privacy, epsilon, "replace")
    gen = as_generator(rng)
    # Counts strictly below τ_1..τ_{N-1}, and below +inf: the class total, which counts
    # every example of the class, also those scoring above τ_{N-1} (a finite last point
    # would drop them from the curve).
    points = np.append(g[1:], np.inf)
    sketches = [PrefixTreeSketch(points, "below", cls=c) for c in (0, 1)]
    fed = values_federation(s, g, labels=y.astype(np.int64))
    half = model.scaled(0.5)
    tickets = reserve(ledger, [(half, sk) for sk in sketches], n_clients=fed.n_clients)
    ecdfs: list[PrivateECDF] = []
    receipts: list[Receipt] = []
    for sk, ticket in zip(sketches, tickets, strict=True):
        rel = PrivateECDF.of(release(fed, sk, reservation=ticket, path=path, rng=gen).decode())
        receipts.append(rel.receipt)
        if smoothing is not None:
            rel = rel.smoothed(smoothing)
        ecdfs.append(rel)
    neg, pos = ecdfs
    fpr = np.concatenate([_rates(neg, "negatives")[::-1], [1.0]])
    tpr = np.concatenate([_rates(pos, "positives")[::-1], [1.0]])
    thresholds = np.concatenate([[np.inf], g[::-1]])
    steps = ("rates = 1 - count/released class total", *pos.post_processing)
    return DPROCCurve(
        fpr,
        tpr,
        thresholds,
        neg,
        pos,
        compose(receipts, "DP ROC curve (one release per class)"),
        steps,
    )


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
