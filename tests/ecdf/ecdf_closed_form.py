"""Closed forms of the ECDF tree noise, shared by the statistical tests of tests/ecdf.

Every released count is the true count plus the sum of the noise on its root
path: k = L + 1 independent discrete Laplace variables (Pólya shares summing to
discrete Laplace, Balle et al. 2020) with α = exp(-ε/s), s the nodes touched by
one example (L + 1 for Theorem 1, ⌈(L + 1)/2⌉ for Theorem 3 of Barczewski et
al. 2025). This module gives that sum's exact pmf, its moments, and the
tolerances the tests derive from them.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray
from scipy import stats


def node_alpha(epsilon: float, nodes_touched: int) -> float:
    """α = exp(-ε/s) of every node's discrete Laplace noise."""
    return math.exp(-epsilon / nodes_touched)


def discrete_laplace_variance(alpha: float) -> float:
    """Var = 2α/(1-α)² (Inusah & Kozubowski 2006)."""
    return 2.0 * alpha / (1.0 - alpha) ** 2


def discrete_laplace_fourth_moment(alpha: float) -> float:
    """E X⁴ = 2α(1 + 10α + α²)/(1-α)⁴ of the discrete Laplace."""
    return 2.0 * alpha * (1.0 + 10.0 * alpha + alpha**2) / (1.0 - alpha) ** 4


def path_sum_moments(alpha: float, k: int) -> tuple[float, float]:
    """(σ², E S⁴) of S = a sum of k i.i.d. discrete Laplace variables."""
    var = discrete_laplace_variance(alpha)
    mu4 = discrete_laplace_fourth_moment(alpha)
    return k * var, k * mu4 + 3.0 * k * (k - 1) * var**2


def mse_tolerance(alpha: float, k: int, trials: int, z: float = 5.0) -> float:
    """z standard errors of the mean of S² over ``trials`` independent draws."""
    sigma2, mu4 = path_sum_moments(alpha, k)
    return z * math.sqrt((mu4 - sigma2**2) / trials)


def path_sum_pmf(alpha: float, k: int) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Exact pmf of a sum of k discrete Laplace variables (support truncated at mass < 1e-15)."""
    half = 1
    while alpha**half > 1e-17:
        half *= 2
    support = np.arange(-half, half + 1)
    one = (1.0 - alpha) / (1.0 + alpha) * alpha ** np.abs(support).astype(np.float64)
    pmf = one
    for _ in range(k - 1):
        pmf = np.convolve(pmf, one)
    width = (pmf.size - 1) // 2
    return np.arange(-width, width + 1), pmf


def polya_difference_pmf(
    shape: float, alpha: float
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Exact pmf of Pólya(r, α) − Pólya(r, α), i.i.d. (support truncated at mass < 1e-15).

    Pólya(r, α) is the negative binomial with pmf C(j+r-1, j)(1-α)^r α^j; shapes
    add, so m Pólya-difference shares of shape r sum to shape m·r, and shape 1
    is the discrete Laplace.
    """
    dist = stats.nbinom(shape, 1.0 - alpha)
    top = int(dist.isf(1e-17)) + 1
    one = dist.pmf(np.arange(top + 1))
    pmf = np.convolve(one, one[::-1])
    return np.arange(-top, top + 1), pmf


def chi_square_pvalue(
    sample: NDArray[np.int64],
    support: NDArray[np.int64],
    pmf: NDArray[np.float64],
    min_expected: float = 5.0,
) -> float:
    """Pearson χ² goodness of fit of integer draws to a pmf on consecutive integers ``support``.

    Cells are single integers; the tails (and any cell with expected count
    below ``min_expected``) are pooled, so the χ² approximation holds.
    """
    n = sample.size
    expected = n * pmf
    keep = expected >= min_expected
    lo, hi = support[keep][0], support[keep][-1]
    inner = np.arange(lo, hi + 1)
    exp_inner = n * pmf[(support >= lo) & (support <= hi)]
    exp_cells = np.concatenate(
        [[n * pmf[support < lo].sum()], exp_inner, [n * pmf[support > hi].sum()]]
    )
    s = np.asarray(sample, dtype=np.int64)
    obs_cells = np.concatenate(
        [
            [np.sum(s < lo)],
            np.bincount(s[(s >= lo) & (s <= hi)] - lo, minlength=inner.size),
            [np.sum(s > hi)],
        ]
    )
    # Tail cells too small for the approximation are merged into their neighbours.
    if exp_cells[0] < min_expected:
        exp_cells[1] += exp_cells[0]
        obs_cells[1] += obs_cells[0]
        exp_cells, obs_cells = exp_cells[1:], obs_cells[1:]
    if exp_cells[-1] < min_expected:
        exp_cells[-2] += exp_cells[-1]
        obs_cells[-2] += obs_cells[-1]
        exp_cells, obs_cells = exp_cells[:-1], obs_cells[:-1]
    exp_cells *= obs_cells.sum() / exp_cells.sum()  # renormalise the 1e-15 truncation
    return float(stats.chisquare(obs_cells, exp_cells).pvalue)


def path_sum_pvalue(sample: NDArray[np.int64], alpha: float, k: int) -> float:
    """χ² goodness of fit to the sum of k discrete Laplace(α) node variables."""
    support, pmf = path_sum_pmf(alpha, k)
    return chi_square_pvalue(sample, support, pmf)
