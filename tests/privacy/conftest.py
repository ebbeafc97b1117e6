"""Shared statistical helpers for the privacy mechanism tests (exposed as fixtures)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy import stats

PmfFn = Callable[[NDArray[np.int64]], NDArray[np.float64]]


def _gof_pvalue(samples: NDArray[np.int64], pmf: PmfFn, window: int) -> float:
    """Chi-square goodness-of-fit p-value of integer ``samples`` against ``pmf``.

    The pmf is evaluated on |k| <= window (the caller picks a window whose outside
    mass is negligible); outcomes with expected count < 5 are pooled into the two
    tail bins, as the chi-square approximation requires.
    """
    x = np.asarray(samples).ravel()
    n = x.size
    ks = np.arange(-window, window + 1)
    probs = pmf(ks)
    expected = n * probs
    big = np.flatnonzero(expected >= 5)
    lo, hi = ks[big[0]], ks[big[-1]]
    central = np.arange(lo, hi + 1)
    exp_central = n * pmf(central)
    exp_left = n * probs[ks < lo].sum()
    exp_right = n * probs[ks > hi].sum()
    obs_central = np.bincount(np.clip(x, lo, hi) - lo, minlength=central.size).astype(float)
    # Clipping put the tails into the end bins; take them back out.
    obs_left = float((x < lo).sum())
    obs_right = float((x > hi).sum())
    obs_central[0] -= obs_left
    obs_central[-1] -= obs_right
    obs = np.concatenate([[obs_left], obs_central, [obs_right]])
    exp = np.concatenate([[exp_left], exp_central, [exp_right]])
    keep = exp > 0
    obs, exp = obs[keep], exp[keep]
    exp *= obs.sum() / exp.sum()  # outside-window mass is below float precision
    return float(stats.chisquare(obs, exp).pvalue)


@pytest.fixture
def gof_pvalue() -> Callable[[NDArray[np.int64], PmfFn, int], float]:
    """Chi-square goodness-of-fit p-value for integer samples against a pmf."""
    return _gof_pvalue


def _moments_from_pmf(pmf: PmfFn, window: int) -> tuple[float, float]:
    """(variance, 4th central moment) of a symmetric integer pmf, by summation."""
    ks = np.arange(-window, window + 1)
    p = pmf(ks)
    p = p / p.sum()
    k = ks.astype(float)
    return float((k**2 * p).sum()), float((k**4 * p).sum())


@pytest.fixture
def moments_from_pmf() -> Callable[[PmfFn, int], tuple[float, float]]:
    """(variance, 4th central moment) of a symmetric integer pmf."""
    return _moments_from_pmf


def _sample_variance_tolerance(var: float, mu4: float, n: int, z: float = 5.0) -> float:
    """z standard errors of the sample variance: Var(s²) ≈ (μ4 - σ⁴)/n."""
    return z * float(np.sqrt((mu4 - var**2) / n))


@pytest.fixture
def variance_tolerance() -> Callable[..., float]:
    """z · sd of the sample variance of n draws with variance σ² and 4th moment μ4."""
    return _sample_variance_tolerance
