"""The Hosmer–Lemeshow goodness-of-fit statistic, exact or ε-DP (Barczewski et al. 2025, Algorithm 2).

Examples are ranked by predicted probability and cut into Q groups at the
q/Q-quantiles t_1 ≤ ... ≤ t_{Q-1} (t_0 = 0, t_Q = 1); per group the observed
(O) and expected (E) numbers of positives (s = 1) and negatives (s = 0) give

    H = Σ_q (O_{1q} - E_{1q})²/E_{1q} + (O_{0q} - E_{0q})²/E_{0q}          (eq. 5)

compared with χ² with Q - 2 degrees of freedom.

Private version (Algorithm 2, Theorem 2): with ε′ = ε/(L + 9), the cut points
come from a tree-mechanism ECDF of the predicted probabilities with Lap(1/ε′)
node noise ((L + 1)ε′-DP, Theorem 1) inverted by binary search (Algorithm 1),
and each of the 4Q group sums gets independent noise of scale 1/ε′. Replacing
one example changes at most two groups, i.e. 8 sums by at most 1 each: 8ε′-DP.
Total (L + 1)ε′ + 8ε′ = ε.

Choices where the paper is loose: groups are half-open, (t_{q-1}, t_q] (the
first is [0, t_1]), so every example is in exactly one group, which the
sensitivity argument needs; the counts O get discrete Laplace noise and the
probability sums E continuous Laplace noise (both scale 1/ε′), independently
for every statistic; the noisy cut points are made non-decreasing and noisy E
are floored at ``min_expected`` before dividing — both named post-processing.

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
from scipy import stats

from fedeval.ecdf.grid import equal_width_grid
from fedeval.ecdf.release import private_ecdf
from fedeval.privacy.guarantee import Guarantee
from fedeval.privacy.ledger import BudgetLedger, LedgerEntry
from fedeval.privacy.mechanisms.laplace import DiscreteLaplace, Laplace
from fedeval.randomness import RNGLike, as_generator
from fedeval.validation import (
    check_binary_labels,
    check_epsilon,
    check_int_at_least,
    check_positive,
    check_scores,
)

__all__ = ["HosmerLemeshowResult", "hosmer_lemeshow"]


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
        Group edges t_0 = 0 ≤ t_1 ≤ ... ≤ t_Q = 1; group q is (t_{q-1}, t_q].
    epsilon : float or None
        Total ε, or None for the exact statistic.
    epsilon_split : dict
        ε spent on the cut points (``"quantiles"``, (L + 1)ε′) and on the 4Q
        group sums (``"group_sums"``, 8ε′).
    guarantee : Guarantee or None
    post_processing : tuple of str
    """

    statistic: float
    p_value: float
    dof: int
    observed: NDArray[np.float64]
    expected: NDArray[np.float64]
    thresholds: NDArray[np.float64]
    epsilon: float | None
    epsilon_split: dict[str, float] = field(default_factory=dict)
    guarantee: Guarantee | None = None
    post_processing: tuple[str, ...] = ()


def _group_sums(
    probs: NDArray[np.float64], labels: NDArray[np.int8], thresholds: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    q = thresholds.size - 1
    group = np.searchsorted(thresholds[1:q], probs, side="left")
    y = labels.astype(np.float64)
    observed = np.stack(
        [np.bincount(group, 1.0 - y, minlength=q), np.bincount(group, y, minlength=q)], axis=1
    )
    expected = np.stack(
        [np.bincount(group, 1.0 - probs, minlength=q), np.bincount(group, probs, minlength=q)],
        axis=1,
    )
    return observed.astype(np.float64), expected.astype(np.float64)


def _statistic(observed: NDArray[np.float64], expected: NDArray[np.float64]) -> float:
    nonpos = expected <= 0
    if np.any(nonpos):
        warnings.warn(
            f"{int(nonpos.sum())} expected count(s) are <= 0; their terms are dropped when the "
            "observed count is also 0 and make H infinite otherwise",
            RuntimeWarning,
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
    *,
    groups: int = 10,
    epsilon: float | None = None,
    rng: RNGLike = None,
    height: int = 10,
    min_expected: float = 1.0,
    ledger: BudgetLedger | None = None,
) -> HosmerLemeshowResult:
    """Hosmer–Lemeshow statistic, exact (``epsilon=None``) or ε-DP by Algorithm 2.

    Parameters
    ----------
    probs : array_like, shape (n,)
        Predicted probabilities of the positive class, in [0, 1].
    labels : array_like, shape (n,)
        0/1 labels.
    groups : int, default 10
        Q ≥ 3 quantile groups.
    epsilon : float, optional
        Total ε > 0; None computes the exact statistic (no privacy).
    rng : int, Generator or None
        Random source for the noise.
    height : int, default 10
        L ≥ 1, the precision parameter: the quantile ECDF uses the 2^L-point
        equal-width grid on [0, 1] and ε′ = ε/(L + 9).
    min_expected : float, default 1.0
        Private only: noisy expected counts are floored at this value before
        dividing (post-processing; a noisy E near 0 would blow H up).
    ledger : BudgetLedger, optional
        Charged (L + 1)ε′ and 8ε′, atomically.

    Returns
    -------
    HosmerLemeshowResult

    Raises
    ------
    ValueError, TypeError
        Probabilities outside [0, 1] or non-finite, non-binary labels, length
        mismatch, Q < 3, ε ≤ 0, L < 1, min_expected ≤ 0.

    Notes
    -----
    Privacy (``epsilon`` given): ε-DP per example under replacement
    neighbouring (Theorem 2); the exact statistic has no privacy.

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
    y = check_binary_labels(labels)
    if y.size != p.size:
        raise ValueError(f"probs and labels differ in length: {p.size} vs {y.size}")
    if p.size == 0:
        raise ValueError("probs must contain at least one example")
    q = check_int_at_least(groups, 3, name="groups")
    levels = np.arange(1, q) / q
    if epsilon is None:
        cuts = np.quantile(p, levels, method="inverted_cdf")
        thresholds = np.concatenate([[0.0], cuts, [1.0]])
        observed, expected = _group_sums(p, y, thresholds)
        h = _statistic(observed, expected)
        return HosmerLemeshowResult(
            h, float(stats.chi2.sf(h, q - 2)), q - 2, observed, expected, thresholds, None
        )
    eps = check_epsilon(epsilon)
    lvl = check_int_at_least(height, 1, name="height")
    floor = check_positive(min_expected, name="min_expected")
    eps_prime = eps / (lvl + 9)
    split = {"quantiles": (lvl + 1) * eps_prime, "group_sums": 8 * eps_prime}
    if ledger is not None:
        ledger.charge_all(
            [
                LedgerEntry(
                    "Hosmer-Lemeshow: private ECDF of predicted probabilities",
                    split["quantiles"],
                    0.0,
                    "example",
                    {"height": lvl, "epsilon_prime": eps_prime},
                ),
                LedgerEntry(
                    f"Hosmer-Lemeshow: {4 * q} noisy group sums",
                    split["group_sums"],
                    0.0,
                    "example",
                    {"scale": 1.0 / eps_prime},
                ),
            ]
        )
    gen = as_generator(rng)
    grid = equal_width_grid(0.0, 1.0, 1 << lvl)
    ecdf = private_ecdf(p, grid, epsilon=split["quantiles"], rng=gen)
    cuts = np.maximum.accumulate(ecdf.inverse(levels, bounds=(0.0, 1.0)))
    thresholds = np.concatenate([[0.0], cuts, [1.0]])
    true_obs, true_exp = _group_sums(p, y, thresholds)
    observed = true_obs + DiscreteLaplace(eps_prime).sample(true_obs.shape, gen)
    noisy_exp = true_exp + Laplace(eps_prime).sample(true_exp.shape, gen)
    floored = int(np.sum(noisy_exp < floor))
    expected = np.maximum(noisy_exp, floor)
    h = _statistic(observed, expected)
    guarantee = Guarantee(
        epsilon=eps,
        delta=0.0,
        unit="example",
        statement=(
            f"Algorithm 2 of Barczewski et al. (2025) with ε′ = ε/(L+9) = {eps_prime:.4g}: "
            f"tree-mechanism ECDF of the probabilities with Lap(1/ε′) node noise "
            f"((L+1)ε′-DP) and {4 * q} group sums with scale-1/ε′ noise, of which one example "
            "changes at most 8 by at most 1 (8ε′-DP)"
        ),
    )
    steps: tuple[str, ...] = (
        "cut points from Algorithm 1 made non-decreasing (running maximum)",
        f"noisy expected counts floored at min_expected = {floor:g} ({floored} floored)",
    )
    info: dict[str, Any] = dict(split)
    return HosmerLemeshowResult(
        h,
        float(stats.chi2.sf(h, q - 2)),
        q - 2,
        observed.astype(np.float64),
        expected,
        thresholds,
        eps,
        info,
        guarantee,
        steps,
    )
