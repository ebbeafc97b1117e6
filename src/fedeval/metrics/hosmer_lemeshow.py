"""The Hosmer–Lemeshow goodness-of-fit statistic, exact or ε-DP (Barczewski et al. 2025, Algorithm 2).

Examples are ranked by predicted probability and cut into Q groups at the
q/Q-quantiles t_1 ≤ ... ≤ t_{Q-1} (t_0 = 0, t_Q = 1), group q holding the
probabilities in (t_{q-1}, t_q] (the first also 0); per group the observed
(O) and expected (E) numbers of positives (s = 1) and negatives (s = 0) give

    H = Σ_q (O_{1q} - E_{1q})²/E_{1q} + (O_{0q} - E_{0q})²/E_{0q}          (eq. 5)

compared with χ² with Q - 2 degrees of freedom.

Private version (Algorithm 2, Theorem 2): with ε′ = ε/(L + 9), the cut points
come from a tree-mechanism ECDF of the predicted probabilities with Lap(1/ε′)
node noise (discrete Laplace here; (L + 1)ε′-DP, Theorem 1) inverted by binary search (Algorithm 1),
and each of the 4Q group sums gets independent noise of scale 1/ε′. Replacing
one example changes at most two groups, i.e. 8 sums by at most 1 each: 8ε′-DP.
Total (L + 1)ε′ + 8ε′ = ε.

Group convention: right-closed groups (t_{q-1}, t_q], the first being
[0, t_1], so every example is in exactly one group (which the sensitivity
argument needs). The exact statistic cuts at the type-7 (linear) sample
quantiles, R's default: it is then the textbook statistic over the "deciles of
risk" of Hosmer & Lemeshow as R's ``ResourceSelection::hoslem.test`` computes
it (``cut(p, quantile(p, 0:g/g), include.lowest = TRUE)``), with equal-count
groups whenever the probabilities are distinct and Q divides n. The private
cut points are grid points t with F̂(t) ≥ q/Q for the "at most" ECDF
F(t) = #{p ≤ t}/n, so the examples at t belong to the group below the cut:
right-closed again. (Left-closed groups at inverted-CDF quantiles, used
before, put each group one example off the deciles of risk.)

Choices where the paper is loose:
the three parts are releases through the one pipeline, charged together before
any noise is drawn: the tree-mechanism ECDF with (L + 1)ε′, the counts O with
4ε′ and the probability sums E with 4ε′, so that every statistic gets noise of
scale 1/ε′ as in Algorithm 2 (discrete for O and the ECDF, continuous for E);
the noisy cut points are made non-decreasing and noisy E are floored at
``min_expected`` before dividing — both named post-processing.

References
----------
.. [1] D. W. Hosmer and S. Lemeshow, "Goodness of fit tests for the multiple
   logistic regression model", Commun. Stat. Theory Methods 9 (1980) 1043-1069.
.. [2] J. Barczewski, A. Mawass and J. Ramon, "Differentially private empirical
   cumulative distribution functions", arXiv:2502.06651 (2025), §5.2, eq. (5),
   Algorithm 2, Theorem 2.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from fedeval.aggregation import Path, release, reserve
from fedeval.ecdf.grid import equal_width_grid
from fedeval.ecdf.inverse import inverse_ecdf
from fedeval.ecdf.release import ecdf_model, public_total, values_federation
from fedeval.exceptions import SmallDataWarning
from fedeval.privacy.guarantee import Guarantee
from fedeval.privacy.ledger import BudgetLedger
from fedeval.privacy.models import PrivacyModel
from fedeval.privacy.receipt import Receipt, compose
from fedeval.randomness import RNGLike, as_generator
from fedeval.sketches.group_sums import GroupSumsSketch, group_of
from fedeval.sketches.prefix_tree import DecodedECDF, PrefixTreeSketch
from fedeval.validation import (
    check_binary_labels,
    check_int_at_least,
    check_positive,
    check_scores,
)

__all__ = ["HosmerLemeshowResult", "hosmer_lemeshow"]


_EXACT = Receipt(
    "none: the exact statistic, computed where all the data are",
    Guarantee.none("exact Hosmer-Lemeshow statistic; no differential privacy"),
)


@dataclass(frozen=True)
class HosmerLemeshowResult:
    """Result of :func:`hosmer_lemeshow`.

    Attributes
    ----------
    statistic : float
        H of eq. (5).
    p_value : float
        P(χ²_{Q-2} ≥ H).
    dof : int
        Q - 2.
    observed, expected : ndarray of float64, shape (Q, 2)
        Per group, column 0 = negatives, column 1 = positives (noisy if private).
    thresholds : ndarray of float64, shape (Q + 1,)
        Group edges t_0 = 0 ≤ t_1 ≤ ... ≤ t_Q = 1; group q is (t_{q-1}, t_q], the
        first [0, t_1].
    epsilon_split : dict
        ε spent on the cut points (``"quantiles"``, (L + 1)ε′) and on the 4Q
        group sums (``"group_sums"``, 8ε′); empty for the exact statistic.
    receipt : Receipt
        The three releases, composed; for the exact statistic a receipt whose
        guarantee is :meth:`Guarantee.none` (the one encoding of "no DP").
    post_processing : tuple of str
    """

    statistic: float
    p_value: float
    dof: int
    observed: NDArray[np.float64]
    expected: NDArray[np.float64]
    thresholds: NDArray[np.float64]
    epsilon_split: dict[str, float] = field(default_factory=dict)
    receipt: Receipt = field(default_factory=lambda: _EXACT)
    post_processing: tuple[str, ...] = ()

    @property
    def guarantee(self) -> Guarantee:
        return self.receipt.guarantee

    @property
    def epsilon(self) -> float:
        """ε of the release (∞ for the exact statistic, which gives no privacy)."""
        return self.receipt.guarantee.epsilon


def _group_sums(
    probs: NDArray[np.float64], labels: NDArray[np.int64], thresholds: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The exact (O, E) tables, shape (Q, 2) each: the sketch's cells without fixed point."""
    clients = np.zeros(probs.size, dtype=np.int64)
    obs = GroupSumsSketch(thresholds, "observed").encode(probs, labels, clients)
    q = thresholds.size - 1
    group = group_of(thresholds, probs)
    exp = np.stack(
        [np.bincount(group, 1.0 - probs, minlength=q), np.bincount(group, probs, minlength=q)],
        axis=1,
    )
    return obs.reshape(q, 2).astype(np.float64), np.asarray(exp, dtype=np.float64)


def _on_grid(points: NDArray[np.float64], grid: NDArray[np.float64]) -> NDArray[np.float64]:
    """The grid point nearest each bisection result.

    Algorithm 1 stops with a bracket (a, b] of width 2^-L narrower than the grid's
    spacing 1/(2^L − 1) and returns its midpoint; the step ECDF crosses q at the one
    grid point inside the bracket, which is the nearest grid point to the midpoint.
    The cut point is that grid point t, so that the groups (t_{q-1}, t_q] hold exactly
    the examples the released "at most" counts F̂(t_q) − F̂(t_{q-1}) count.
    """
    idx = np.clip(np.searchsorted(grid, points), 1, grid.size - 1)
    below = grid[idx - 1]
    above = grid[idx]
    return np.where(points - below <= above - points, below, above)


def _chi2_sf(h: float, dof: int) -> float:
    """P(χ²_dof > h), the test's p-value (scipy.stats imported on first use: ~0.7 s)."""
    from scipy import stats

    return float(stats.chi2.sf(h, dof))


def _statistic(observed: NDArray[np.float64], expected: NDArray[np.float64]) -> float:
    nonpos = expected <= 0
    if np.any(nonpos):
        warnings.warn(
            f"{int(nonpos.sum())} expected count(s) are <= 0; their terms are dropped when the "
            "observed count is also 0 and make H infinite otherwise",
            SmallDataWarning,
            stacklevel=3,
        )
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = (observed - expected) ** 2 / expected
    terms = np.where(nonpos & (observed == expected), 0.0, terms)
    terms = np.where(nonpos & (observed != expected), np.inf, terms)
    return float(terms.sum())


def hosmer_lemeshow(
    probs: ArrayLike,
    labels: ArrayLike,
    privacy: PrivacyModel | None = None,
    *,
    epsilon: float | None = None,
    groups: int = 10,
    rng: RNGLike = None,
    height: int = 10,
    min_expected: float = 1.0,
    path: Path = "fast",
    ledger: BudgetLedger | None = None,
) -> HosmerLemeshowResult:
    """Hosmer–Lemeshow statistic, exact (no privacy given) or private by Algorithm 2.

    Parameters
    ----------
    probs : array_like, shape (n,)
        Predicted probabilities of the positive class, in [0, 1].
    labels : array_like, shape (n,)
        0/1 labels.
    privacy : privacy model, optional
        E.g. ``DistributedDP(1.0, neighbouring="replace")`` (the paper's
        replacement neighbours); its budget is split (L + 1)ε′ : 4ε′ : 4ε′
        over the ECDF, the counts and the probability sums. None (and no
        ``epsilon``) computes the exact statistic.
    epsilon : float, optional
        Sugar for ``DistributedDP(epsilon, neighbouring="replace")``.
    groups : int, default 10
        Q ≥ 3 quantile groups.
    rng : int, Generator or None
        Random source for the noise.
    height : int, default 10
        L ≥ 1, the precision parameter: the quantile ECDF uses the 2^L-point
        equal-width grid on [0, 1] and ε′ = ε/(L + 9).
    min_expected : float, default 1.0
        Private only: noisy expected counts are floored at this value before
        dividing (post-processing; a noisy E near 0 would blow H up).
    path : {"fast", "faithful"}
    ledger : BudgetLedger, optional
        Charged for all three releases, atomically, before any noise is drawn.

    Returns
    -------
    HosmerLemeshowResult

    Raises
    ------
    ValueError, TypeError
        Probabilities outside [0, 1] or non-finite, non-binary labels, length
        mismatch, Q < 3, both ``privacy`` and ``epsilon``, L < 1, min_expected ≤ 0.

    Notes
    -----
    Groups are right-closed, (t_{q-1}, t_q]: the exact statistic is R's
    ``ResourceSelection::hoslem.test`` (type-7 quantile cut points), the
    textbook equal-count deciles of risk (module docstring).

    Public inputs: the number of groups Q, the height L (the quantile grid),
    and the number of examples only under replacement of one example (the
    paper's setting); the cut points are post-processing of the private ECDF.

    Privacy: the model's guarantee per example (Theorem 2); the exact
    statistic has no privacy.

    The p-value refers the (noisy) statistic to χ²_{Q−2}, as the paper does.
    That ignores the privacy noise, whose scale per group sum is 1/ε′ =
    (L + 9)/ε: it is meaningful only when every group's expected counts are
    large against that scale (e.g. n = 10^5 or more at ε = 1, L = 10). With
    smaller groups the noisy statistic is dominated by noise in the smallest
    expected counts and the p-value is not a test of calibration. Measured
    (uniform probabilities, perfectly calibrated labels, ε = 1, Q = 10):
    H = 12,651 at n = 5,000; 17.5 at n = 10^5; 8.1 at n = 10^6 (exact H ≈ 6).

    References
    ----------
    .. [1] Hosmer & Lemeshow (1980).
    .. [2] Barczewski, Mawass & Ramon (2025), eq. (5), Algorithm 2, Theorem 2.
    """
    p = check_scores(probs, name="probs")
    y = check_binary_labels(labels).astype(np.int64)
    if y.size != p.size:
        raise ValueError(f"probs and labels differ in length: {p.size} vs {y.size}")
    if p.size == 0:
        raise ValueError("probs must contain at least one example")
    q = check_int_at_least(groups, 3, name="groups")
    levels = np.arange(1, q) / q
    if privacy is None and epsilon is None:
        # Type-7 (linear) quantiles and right-closed groups: R's hoslem.test.
        cuts = np.quantile(p, levels, method="linear")
        thresholds = np.concatenate([[0.0], cuts, [1.0]])
        observed, expected = _group_sums(p, y, thresholds)
        h = _statistic(observed, expected)
        return HosmerLemeshowResult(h, _chi2_sf(h, q - 2), q - 2, observed, expected, thresholds)
    model = ecdf_model(privacy, epsilon, "replace")
    lvl = check_int_at_least(height, 1, name="height")
    floor = check_positive(min_expected, name="min_expected")
    split = {"quantiles": (lvl + 1) / (lvl + 9), "group_sums": 8 / (lvl + 9)}
    grid = equal_width_grid(0.0, 1.0, 1 << lvl)
    fed = values_federation(p, grid, labels=y)
    placeholder = np.linspace(0.0, 1.0, q + 1)
    # n is public only under replacement of one example; otherwise the ECDF is normalised
    # by its own released count at the last grid point (as private_ecdf does, Theorem 3).
    total = public_total(model, p.size)
    ecdf_sketch = PrefixTreeSketch(grid, "at_most", total=total)
    tickets = reserve(
        ledger,
        [
            (model.scaled(split["quantiles"]), ecdf_sketch),
            (model.scaled(split["group_sums"] / 2), GroupSumsSketch(placeholder, "observed")),
            (model.scaled(split["group_sums"] / 2), GroupSumsSketch(placeholder, "expected")),
        ],
        n_clients=fed.n_clients,
    )
    gen = as_generator(rng)
    ecdf: DecodedECDF = release(
        fed, ecdf_sketch, reservation=tickets[0], path=path, rng=gen
    ).decode()
    cuts = np.maximum.accumulate(_on_grid(inverse_ecdf(ecdf, levels, bounds=(0.0, 1.0)), grid))
    thresholds = np.concatenate([[0.0], cuts, [1.0]])
    obs_rel = release(
        fed, GroupSumsSketch(thresholds, "observed"), reservation=tickets[1], path=path, rng=gen
    )
    exp_rel = release(
        fed, GroupSumsSketch(thresholds, "expected"), reservation=tickets[2], path=path, rng=gen
    )
    observed = np.asarray(obs_rel.decode(), dtype=np.float64)
    noisy_exp = np.asarray(exp_rel.decode(), dtype=np.float64)
    floored = int(np.sum(noisy_exp < floor))
    expected = np.maximum(noisy_exp, floor)
    h = _statistic(observed, expected)
    receipt = compose(
        [ecdf.receipt, obs_rel.receipt, exp_rel.receipt],
        f"Hosmer-Lemeshow by Algorithm 2 of Barczewski et al. (2025), ε′ = ε/(L+9) with L = {lvl}",
    )
    steps: tuple[str, ...] = (
        *ecdf.post_processing,
        "cut points from Algorithm 1 moved to the grid point inside their final bracket "
        "(where the released ECDF crosses q/Q) and made non-decreasing (running maximum)",
        f"noisy expected counts floored at min_expected = {floor:g} ({floored} floored)",
    )
    # Absolute ε actually charged by each part (0 for a model without DP).
    info: dict[str, Any] = {
        "quantiles": ecdf.receipt.epsilon_spent,
        "group_sums": obs_rel.receipt.epsilon_spent + exp_rel.receipt.epsilon_spent,
    }
    return HosmerLemeshowResult(
        h,
        _chi2_sf(h, q - 2),
        q - 2,
        observed,
        expected,
        thresholds,
        info,
        receipt,
        steps,
    )
