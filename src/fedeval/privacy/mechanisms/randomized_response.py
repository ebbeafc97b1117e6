"""k-ary randomized response (local DP for one categorical value per report).

Each report keeps its true category with probability p = e^ε/(e^ε + k - 1) and
otherwise moves to one of the k - 1 other categories uniformly at random, so
every other category has probability q = 1/(e^ε + k - 1). With k = 2 this is
Warner's randomized response, used for label DP by Sun et al. (2023, eqs. 3-4).

References
----------
.. [1] S. L. Warner, "Randomized response: a survey technique for eliminating
   evasive answer bias", JASA 60 (1965) 63-69.
.. [2] P. Kairouz, K. Bonawitz and D. Ramage, "Discrete distribution estimation
   under local privacy", ICML 2016 (k-ary RR).
.. [3] T. Wang, J. Blocki, N. Li and S. Jha, "Locally differentially private
   protocols for frequency estimation", USENIX Security 2017, §4 ("direct
   encoding": estimator and variance).
.. [4] J. Sun et al., "Differentially private AUC computation in vertical
   federated learning", 2023, eqs. 3-4 (binary RR on labels and debiasing).
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

__all__ = [
    "RandomizedResponse",
    "RandomizedResponseOracle",
    "flip_labels",
    "flip_probability",
]


def _check_counts(counts: ArrayLike, k: int, *, name: str) -> NDArray[np.int64]:
    arr = check_integers(counts, name=name)
    if arr.shape != (k,):
        raise ValueError(f"{name} must have shape ({k},), got {arr.shape}")
    if np.any(arr < 0):
        raise ValueError(f"{name} must be non-negative, got {arr!r}")
    return arr


@dataclass(frozen=True)
class RandomizedResponse:
    """k-ary randomized response.

    Parameters
    ----------
    epsilon : float
        Local privacy parameter ε > 0.
    n_categories : int, default 2
        Number k ≥ 2 of categories; values are 0, ..., k-1.

    Raises
    ------
    ValueError, TypeError
        If ε is not a finite number > 0 or k is not an integer ≥ 2.

    Notes
    -----
    Privacy: each report is ε-locally-DP: for any two inputs and any output,
    the probability ratio is at most p/q = e^ε. Everything computed from the
    reports is post-processing.

    References
    ----------
    .. [1] Warner (1965); Kairouz, Bonawitz & Ramage (2016); Wang et al. (2017).
    """

    epsilon: float
    n_categories: int = 2

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(
            self, "n_categories", check_int_at_least(self.n_categories, 2, name="n_categories")
        )

    @property
    def keep_probability(self) -> float:
        """p = e^ε / (e^ε + k - 1)."""
        # 1 / (1 + (k-1) e^-ε) avoids overflow of e^ε for large ε.
        return 1.0 / (1.0 + (self.n_categories - 1) * math.exp(-self.epsilon))

    @property
    def other_probability(self) -> float:
        """q = 1 / (e^ε + k - 1), the probability of each specific other category."""
        return (1.0 - self.keep_probability) / (self.n_categories - 1)

    def _transition(self) -> NDArray[np.float64]:
        k = self.n_categories
        p, q = self.keep_probability, self.other_probability
        m = np.full((k, k), q)
        np.fill_diagonal(m, p)
        return m

    def perturb(self, values: ArrayLike, rng: RNGLike = None) -> NDArray[np.int64]:
        """Randomize each value independently (faithful, per-client path).

        Parameters
        ----------
        values : array_like of int, any shape
            True categories in {0, ..., k-1}.
        rng : int, numpy.random.Generator or None
            Random source.

        Returns
        -------
        numpy.ndarray of int64, same shape as ``values``
        """
        v = check_integers(values, name="values")
        k = self.n_categories
        if v.size and (v.min() < 0 or v.max() >= k):
            raise ValueError(
                f"values must lie in {{0, ..., {k - 1}}}, got range [{v.min()}, {v.max()}]"
            )
        gen = as_generator(rng)
        move = gen.random(v.shape) >= self.keep_probability
        # An offset uniform in {1, ..., k-1} picks one of the other categories uniformly.
        offset = gen.integers(1, k, size=v.shape)
        return np.where(move, (v + offset) % k, v).astype(np.int64)

    def sample_aggregate(self, true_counts: ArrayLike, rng: RNGLike = None) -> NDArray[np.int64]:
        """Perturbed category counts drawn directly (fast path, exact in distribution).

        The c_j reports with true category j land in the categories according to
        Multinomial(c_j, (q, ..., p, ..., q)), independently across j; the
        returned vector is the sum of these k multinomials.

        Parameters
        ----------
        true_counts : array_like of int, shape (k,)
            Number of reports with each true category.
        rng : int, numpy.random.Generator or None

        Returns
        -------
        numpy.ndarray of int64, shape (k,)
        """
        c = _check_counts(true_counts, self.n_categories, name="true_counts")
        draws = as_generator(rng).multinomial(c, self._transition())
        return np.asarray(draws.sum(axis=0), dtype=np.int64)

    def estimate(self, counts: ArrayLike) -> NDArray[np.float64]:
        """Unbiased estimate of the true counts from perturbed counts.

        With N = Σ counts (RR preserves the number of reports),
        E[counts_j] = c_j p + (N - c_j) q, hence ĉ_j = (counts_j - N q)/(p - q)
        (Wang et al. 2017, §4; Sun et al. 2023, eq. 4 for k = 2). Estimates can
        be negative; no clipping is applied.

        Parameters
        ----------
        counts : array_like of int, shape (k,)
        """
        obs = _check_counts(counts, self.n_categories, name="counts").astype(np.float64)
        n = obs.sum()
        p, q = self.keep_probability, self.other_probability
        return (obs - n * q) / (p - q)

    def count_variance(self, true_counts: ArrayLike) -> NDArray[np.float64]:
        """Exact variance of :meth:`estimate` for each category.

        counts_j = Binomial(c_j, p) + Binomial(N - c_j, q) (independent), so
        Var[ĉ_j] = (c_j p(1-p) + (N - c_j) q(1-q)) / (p - q)².

        Parameters
        ----------
        true_counts : array_like of int, shape (k,)

        Returns
        -------
        numpy.ndarray of float64, shape (k,)
        """
        c = _check_counts(true_counts, self.n_categories, name="true_counts").astype(np.float64)
        n = c.sum()
        p, q = self.keep_probability, self.other_probability
        return (c * p * (1 - p) + (n - c) * q * (1 - q)) / (p - q) ** 2

    def guarantee(self, unit: PrivacyUnit = "example") -> Guarantee:
        """ε-local DP of each report.

        Parameters
        ----------
        unit : {"example", "client", "label"}, default "example"
            What one report holds (a label under label DP, for example).
        """
        return Guarantee(
            epsilon=self.epsilon,
            delta=0.0,
            unit=check_unit(unit),
            statement=(
                f"{self.n_categories}-ary randomized response on each report (keep with "
                f"probability {self.keep_probability:.6g}), local DP"
            ),
        )


@dataclass(frozen=True)
class RandomizedResponseOracle:
    """k-ary randomized response behind the frequency-oracle interface of OUE.

    Every report carries exactly one item (RR has no "nothing to report"
    input), so the counts passed in must sum to the number of reports.
    """

    rr: RandomizedResponse

    @property
    def n_bins(self) -> int:
        return self.rr.n_categories

    @property
    def epsilon(self) -> float:
        return self.rr.epsilon

    def perturb(self, indices: NDArray[np.int64], rng: RNGLike = None) -> NDArray[np.uint8]:
        """One-hot rows of the randomised categories, shape (n, k)."""
        if indices.size and indices.min() < 0:
            raise ValueError("randomized response needs an item in every report (no -1)")
        out = np.zeros((indices.size, self.n_bins), dtype=np.uint8)
        out[np.arange(indices.size), self.rr.perturb(indices, rng)] = 1
        return out

    def sample_aggregate(
        self, true_counts: NDArray[np.int64], n_reports: int, rng: RNGLike = None
    ) -> NDArray[np.int64]:
        if int(np.sum(true_counts)) != n_reports:
            raise ValueError("randomized response needs an item in every report")
        return self.rr.sample_aggregate(true_counts, rng)

    def estimate(self, counts: NDArray[np.int64], n_reports: int) -> NDArray[np.float64]:
        return self.rr.estimate(counts)

    def count_variance(self, true_counts: NDArray[np.int64], n_reports: int) -> NDArray[np.float64]:
        return self.rr.count_variance(true_counts)

    def guarantee(self, unit: PrivacyUnit = "example") -> Guarantee:
        return self.rr.guarantee(unit)


def flip_probability(epsilon: float) -> float:
    """ρ = 1/(1 + e^ε), the flip probability of binary ε-randomized response (Sun et al. eq. 2)."""
    # 1/(1 + e^ε), written to stay finite for every ε ≥ 0.
    eps = check_epsilon(epsilon)
    return float(math.exp(-eps) / (1.0 + math.exp(-eps)))


def flip_labels(
    labels: ArrayLike, flip_probability: float, rng: RNGLike = None
) -> NDArray[np.int8]:
    """Binary randomized response on 0/1 labels: flip each with probability ρ = 1/(1 + e^ε).

    Pr[ỹ = y] / Pr[ỹ = 1 - y] = e^ε, so each flipped label is ε-LabelDP (and
    ε-local DP for the label); anything computed from the flipped labels is
    post-processing (Warner 1965; Sun et al. 2023, Algorithm 1).
    """
    y = np.asarray(labels).astype(np.int8)
    flips = as_generator(rng).random(y.shape[0]) < flip_probability
    return (y ^ flips).astype(np.int8)
