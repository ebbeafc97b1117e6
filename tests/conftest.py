"""Shared fixtures: statistical tests of integer samples, and common data sets."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy import stats

LONG_RUNNING_MARKS = ("privacy", "statistical", "integration")
"""Marks of the tests that take seconds each (the audits, statistical tests, end-to-end checks)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Long-running tests first, the rest in their order (a stable sort).

    pytest-xdist hands tests to its workers in this order (``--dist
    worksteal``, set in pyproject.toml: an idle worker takes half of the
    other's queue); with the audits last, one worker ran the final
    minute-long audit while the other idled.
    """
    items.sort(key=lambda item: not any(item.get_closest_marker(m) for m in LONG_RUNNING_MARKS))


def _two_sample_chi2_pvalue(a: NDArray[np.int64], b: NDArray[np.int64]) -> float:
    """Chi-square test of homogeneity for two samples of integers.

    Values are pooled into bins of the combined sample holding >= 10 observations
    each (tails merged into the end bins), so every expected cell count is >= 5
    when the samples have similar sizes.
    """
    a = np.asarray(a).ravel()
    b = np.asarray(b).ravel()
    both = np.sort(np.concatenate([a, b]))
    # Cut points at every 10th order statistic, deduplicated: bins hold >= 10.
    cuts = np.unique(both[10::10])
    cuts = cuts[(cuts > both[0])]
    ia = np.searchsorted(cuts, a, side="right")
    ib = np.searchsorted(cuts, b, side="right")
    k = cuts.size + 1
    table = np.vstack([np.bincount(ia, minlength=k), np.bincount(ib, minlength=k)])
    table = table[:, table.sum(axis=0) > 0]
    return float(stats.chi2_contingency(table, correction=False).pvalue)


@pytest.fixture
def two_sample_chi2_pvalue() -> Callable[[NDArray[np.int64], NDArray[np.int64]], float]:
    """p-value of a chi-square homogeneity test between two integer samples."""
    return _two_sample_chi2_pvalue


def _gof_pvalue_int(
    samples: NDArray[np.int64], pmf: Callable[[NDArray[np.int64]], NDArray[np.float64]]
) -> float:
    """Chi-square goodness of fit of integer samples against a pmf on the integers.

    Support points with expected count < 5 are merged into the two tails.
    """
    x = np.asarray(samples).ravel()
    n = x.size
    window = int(np.abs(x).max()) + 200
    ks = np.arange(-window, window + 1)
    p = pmf(ks)
    big = np.flatnonzero(n * p >= 5)
    lo, hi = int(ks[big[0]]), int(ks[big[-1]])
    inner = np.arange(lo, hi + 1)
    exp = np.concatenate([[p[ks < lo].sum()], pmf(inner), [p[ks > hi].sum()]]) * n
    obs = np.concatenate(
        [
            [(x < lo).sum()],
            np.bincount(x[(x >= lo) & (x <= hi)] - lo, minlength=inner.size),
            [(x > hi).sum()],
        ]
    ).astype(float)
    keep = exp > 0
    obs, exp = obs[keep], exp[keep]
    exp *= obs.sum() / exp.sum()
    return float(stats.chisquare(obs, exp).pvalue)


@pytest.fixture
def gof_pvalue_int() -> Callable[..., float]:
    """p-value of a chi-square goodness-of-fit test of integer samples against a pmf."""
    return _gof_pvalue_int


def discrete_laplace_pmf(alpha: float) -> Callable[[NDArray[np.int64]], NDArray[np.float64]]:
    """pmf (1-α)/(1+α) α^|k| of the discrete Laplace (difference of two geometrics)."""

    def pmf(k: NDArray[np.int64]) -> NDArray[np.float64]:
        return (1 - alpha) / (1 + alpha) * alpha ** np.abs(np.asarray(k, dtype=np.float64))

    return pmf


def discrete_laplace_moments(alpha: float) -> tuple[float, float]:
    """(variance, 4th central moment) of the discrete Laplace with parameter α.

    It is G1 - G2 for i.i.d. geometric G (pmf (1-α)α^k, k >= 0), whose cumulants
    are κ2 = α/(1-α)², κ4 = α(1+4α+α²)/(1-α)⁴; the difference doubles the even
    cumulants, and μ4 = κ4 + 3κ2².
    """
    k2 = 2 * alpha / (1 - alpha) ** 2
    k4 = 2 * alpha * (1 + 4 * alpha + alpha**2) / (1 - alpha) ** 4
    return k2, k4 + 3 * k2**2


@pytest.fixture
def dlaplace() -> Callable[[float], tuple[Callable[..., NDArray[np.float64]], float, float]]:
    """α -> (pmf, variance, 4th central moment) of the discrete Laplace."""

    def make(alpha: float) -> tuple[Callable[..., NDArray[np.float64]], float, float]:
        var, mu4 = discrete_laplace_moments(alpha)
        return discrete_laplace_pmf(alpha), var, mu4

    return make


@pytest.fixture(scope="module")
def generated() -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """60,000 binary examples, 30% positive, logistic scores with signal (AUC ≈ 0.84)."""
    rng = np.random.default_rng(3)
    n = 60_000
    y = (rng.random(n) < 0.3).astype(np.int64)
    s = 1 / (1 + np.exp(-(rng.normal(0, 1, n) + 1.5 * (y - 0.5))))
    return s, y
