"""Optimal unary encoding (OUE): the LDP frequency oracle of Cormode & Markov §2.3.

A report is the one-hot vector of the client's bin (all zeros if the client has
nothing to report); each 1-bit is kept with probability p = 1/2 and each 0-bit
is flipped to 1 with probability q = 1/(e^ε + 1) (Wang et al. 2017, §4.4).

References
----------
.. [1] T. Wang, J. Blocki, N. Li and S. Jha, "Locally differentially private
   protocols for frequency estimation", USENIX Security 2017, §4.4 (OUE),
   Theorem 2 (estimator variance).
.. [2] G. Cormode and I. Markov, "Federated calibration and evaluation of binary
   classifiers", 2023, §2.2-2.3 (LocalDP histograms with OUE; an all-zeros
   report for clients with no data keeps the same guarantee).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from fedeval.privacy.guarantee import Guarantee, PrivacyUnit
from fedeval.privacy.mechanisms.common import check_integers, check_unit
from fedeval.randomness import RNGLike, as_generator
from fedeval.validation import check_epsilon, check_int_at_least

__all__ = ["OptimalUnaryEncoding"]

# Rows per chunk in perturb(), so the float64 uniforms stay around 8 MB.
_CHUNK_CELLS = 1 << 20


@dataclass(frozen=True)
class OptimalUnaryEncoding:
    """Optimal unary encoding frequency oracle over ``n_bins`` bins.

    Parameters
    ----------
    epsilon : float
        Local privacy parameter ε > 0.
    n_bins : int
        Number of bins B ≥ 1.

    Raises
    ------
    ValueError, TypeError
        If ε is not a finite number > 0 or B is not an integer ≥ 1.

    Notes
    -----
    Privacy: each report is ε-locally-DP. Between two one-hot inputs the worst
    output ratio is p(1-q)/((1-p)q) = e^ε; between a one-hot input and the
    all-zeros input (a client with no item) it is p/q = (e^ε + 1)/2 ≤ e^ε
    (Cormode & Markov 2023, §2.3). Estimates are post-processing.

    References
    ----------
    .. [1] Wang, Blocki, Li & Jha (2017), §4.4 and Theorem 2.
    .. [2] Cormode & Markov (2023), §2.3.
    """

    epsilon: float
    n_bins: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "n_bins", check_int_at_least(self.n_bins, 1, name="n_bins"))

    @property
    def p(self) -> float:
        """Probability that a report's own bit stays 1: 1/2."""
        return 0.5

    @property
    def q(self) -> float:
        """Probability that a 0-bit is reported as 1: 1/(e^ε + 1)."""
        # exp(-ε)/(1 + exp(-ε)) = 1/(e^ε + 1) without overflow for large ε.
        e = math.exp(-self.epsilon)
        return e / (1.0 + e)

    @property
    def variance_per_report(self) -> float:
        """q(1-q)/(p-q)² = 4e^ε/(e^ε-1)²: each report's contribution to the
        variance of an estimated count whose true value is 0 (Wang et al. 2017,
        eq. for Var* of OUE)."""
        e = math.exp(-self.epsilon)
        # 4 e^ε / (e^ε - 1)² = 4 e^-ε / (1 - e^-ε)²
        return 4.0 * e / (-math.expm1(-self.epsilon)) ** 2

    def perturb(self, indices: ArrayLike, rng: RNGLike = None) -> NDArray[np.uint8]:
        """Encode and randomize each client's bin index (faithful, per-client path).

        Parameters
        ----------
        indices : array_like of int, shape (n,)
            Bin of each report in {0, ..., B-1}, or -1 for "no item" (an all-zeros
            input vector).
        rng : int, numpy.random.Generator or None

        Returns
        -------
        numpy.ndarray of uint8, shape (n, B)
            The randomized bit vectors.
        """
        idx = check_integers(indices, name="indices")
        if idx.ndim != 1:
            raise ValueError(f"indices must be 1-dimensional, got shape {idx.shape}")
        if idx.size and (idx.min() < -1 or idx.max() >= self.n_bins):
            raise ValueError(
                f"indices must lie in {{-1, 0, ..., {self.n_bins - 1}}}, got range "
                f"[{idx.min()}, {idx.max()}]"
            )
        gen = as_generator(rng)
        n, b = idx.size, self.n_bins
        out = np.empty((n, b), dtype=np.uint8)
        rows_per_chunk = max(1, _CHUNK_CELLS // b)
        q = self.q
        for start in range(0, n, rows_per_chunk):
            stop = min(n, start + rows_per_chunk)
            out[start:stop] = gen.random((stop - start, b)) < q
        has_item = np.flatnonzero(idx >= 0)
        # The true bit is re-drawn with probability p = 1/2 (overwriting its q-draw).
        out[has_item, idx[has_item]] = gen.random(has_item.size) < self.p
        return out

    def sample_aggregate(
        self, true_counts: ArrayLike, n_reports: int, rng: RNGLike = None
    ) -> NDArray[np.int64]:
        """Column sums of ``n_reports`` perturbed reports, drawn directly (fast path).

        Bin j receives Binomial(c_j, p) + Binomial(n - c_j, q), independently
        across bins (each bit of each report is flipped independently), which is
        exactly the distribution of ``perturb(...).sum(axis=0)``.

        Parameters
        ----------
        true_counts : array_like of int, shape (B,)
            Reports whose item is in each bin (Σ c_j ≤ n; the rest are empty).
        n_reports : int
            Number of reports n ≥ 0.
        rng : int, numpy.random.Generator or None

        Returns
        -------
        numpy.ndarray of int64, shape (B,)
        """
        c, n = self._check_counts(true_counts, n_reports)
        gen = as_generator(rng)
        ones = gen.binomial(c, self.p)
        flips = gen.binomial(n - c, self.q)
        return np.asarray(ones + flips, dtype=np.int64)

    def estimate(self, counts: ArrayLike, n_reports: int) -> NDArray[np.float64]:
        """Unbiased count estimates (c_j - n q)/(p - q) (Wang et al. 2017, eq. 1).

        Parameters
        ----------
        counts : array_like, shape (B,)
            Column sums of the perturbed reports.
        n_reports : int
            Number of reports n (including empty ones).

        Returns
        -------
        numpy.ndarray of float64, shape (B,)
            May be negative; no clipping is applied.
        """
        obs = np.asarray(counts, dtype=np.float64)
        if obs.shape != (self.n_bins,):
            raise ValueError(f"counts must have shape ({self.n_bins},), got {obs.shape}")
        n = check_int_at_least(n_reports, 0, name="n_reports")
        return (obs - n * self.q) / (self.p - self.q)

    def count_variance(self, true_counts: ArrayLike, n_reports: int) -> NDArray[np.float64]:
        """Exact variance of :meth:`estimate` per bin.

        Var[ĉ_j] = (c_j p(1-p) + (n - c_j) q(1-q)) / (p - q)²; for an empty bin
        this is n · :attr:`variance_per_report`.

        Parameters
        ----------
        true_counts : array_like of int, shape (B,)
        n_reports : int

        Returns
        -------
        numpy.ndarray of float64, shape (B,)
        """
        c, n = self._check_counts(true_counts, n_reports)
        p, q = self.p, self.q
        cf = c.astype(np.float64)
        return (cf * p * (1 - p) + (n - cf) * q * (1 - q)) / (p - q) ** 2

    def _check_counts(
        self, true_counts: ArrayLike, n_reports: int
    ) -> tuple[NDArray[np.int64], int]:
        c = check_integers(true_counts, name="true_counts")
        if c.shape != (self.n_bins,):
            raise ValueError(f"true_counts must have shape ({self.n_bins},), got {c.shape}")
        if np.any(c < 0):
            raise ValueError(f"true_counts must be non-negative, got {c!r}")
        n = check_int_at_least(n_reports, 0, name="n_reports")
        if int(c.sum()) > n:
            raise ValueError(f"sum(true_counts) = {int(c.sum())} exceeds n_reports = {n}")
        return c, n

    def guarantee(self, unit: PrivacyUnit = "example") -> Guarantee:
        """ε-local DP of each report (including all-zeros reports).

        Parameters
        ----------
        unit : {"example", "client", "label"}, default "example"
        """
        return Guarantee(
            epsilon=self.epsilon,
            delta=0.0,
            unit=check_unit(unit),
            statement=(
                f"optimal unary encoding over {self.n_bins} bins (p = 1/2, q = {self.q:.6g}) "
                f"on each report, local DP"
            ),
        )
