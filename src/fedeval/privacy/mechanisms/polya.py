"""Pólya noise shares that sum to discrete Laplace noise (distributed DP).

Each of n clients adds X_i - Y_i with X_i, Y_i i.i.d. Pólya(r, α) (the negative
binomial with real shape r, pmf C(k+r-1, k) (1-α)^r α^k, k = 0, 1, ...). Pólya
variables with a common α add their shapes, so the sum of n shares with r = 1/n
is Pólya(1, α) - Pólya(1, α) = Geometric - Geometric, i.e. exactly discrete
Laplace with α = exp(-ε/Δ1) (Balle, Bell, Gascón & Nissim 2020; used for DistDP
by Cormode & Markov 2023, §2.2). Under secure aggregation only the noisy sum is
revealed, so the release is ε-DP while each client adds only 1/n of the variance.

Dropouts. Shares of clients that drop out never reach the sum. With m < n shares
the noise is Pólya(m/n, α) - Pólya(m/n, α), which is *not* discrete Laplace and
gives a weaker (larger-ε) guarantee; :meth:`PolyaShares.guarantee_if_received`
computes that ε exactly. :meth:`PolyaShares.for_dropouts` instead calibrates each
share to a reconstruction threshold ``min_received`` (DESIGN.md, Flower notes).

References
----------
.. [1] B. Balle, J. Bell, A. Gascón and K. Nissim, "Private summation in the
   multi-message shuffle model", CCS 2020 (Pólya decomposition of the discrete
   Laplace).
.. [2] G. Cormode and I. Markov, "Federated calibration and evaluation of binary
   classifiers", 2023, §2.2 and §2.3 (DistDP histograms with Pólya shares).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from fedeval.privacy.guarantee import Guarantee, PrivacyUnit
from fedeval.privacy.mechanisms.common import Size, as_size, check_unit
from fedeval.privacy.mechanisms.exact_sampling import sample_discrete_laplace_exact
from fedeval.privacy.mechanisms.laplace import DiscreteLaplace
from fedeval.privacy.mechanisms.share_jumps import (
    SPARSE_JUMPS_PER_CELL,
    ShareJumps,
    difference_jumps,
)
from fedeval.randomness import RNGLike, as_generator
from fedeval.validation import check_epsilon, check_int_at_least

__all__ = ["PolyaShares", "polya_difference_epsilon"]


def _polya_logpmf(j: NDArray[np.float64], shape: float, alpha: float) -> NDArray[np.float64]:
    """log of the Pólya(shape, α) pmf C(j+r-1, j) (1-α)^r α^j."""
    from scipy.special import gammaln  # on first use (start-up time)

    return np.asarray(
        gammaln(j + shape)
        - gammaln(shape)
        - gammaln(j + 1.0)
        + shape * math.log1p(-alpha)
        + j * math.log(alpha),
        dtype=np.float64,
    )


def polya_difference_epsilon(shape: float, alpha: float, l1_sensitivity: int = 1) -> float:
    """Exact pure-DP ε of the noise Pólya(shape, α) - Pólya(shape, α).

    ε = sup_k sup_{1 ≤ s ≤ Δ1} log P(k) / P(k+s), with P the pmf of the difference
    of two i.i.d. Pólya(shape, α) variables, for an integer query with L1
    sensitivity Δ1 (the noise is symmetric, so negative shifts give the same sup).

    Parameters
    ----------
    shape : float
        Pólya shape r > 0 of each of the two variables.
    alpha : float
        Pólya parameter α in [0, 1) (α = 0, i.e. no noise, gives ε = inf).
    l1_sensitivity : int, default 1
        Δ1 ≥ 1.

    Returns
    -------
    float
        The ε (finite for every r > 0). For r ≥ 1 it is exactly -Δ1·log α:
        the noise is discrete Laplace (r = 1) plus independent noise.

    Notes
    -----
    For r < 1 the value is computed numerically. P(k) for k ≥ 0 is
    Σ_j p(k+j) p(j), summed in log space with scipy.special.gammaln until the
    terms fall below e^-40 of the leading one (relative error ~1e-17). As k → ∞,
    P(k) ~ C k^(r-1) α^k, so log P(k)/P(k+s) = -s log α + (1-r) log(1+s/k) + o(1/k)
    decreases to -s log α from above; the supremum therefore lies near k = 0 and
    is found on the window |k| ≤ 4Δ1 + 64, and the tail limit -Δ1 log α is
    included as a lower bound. Cross-checked in the tests against the closed form
    P(k) = (1-α)^(2r) α^k Γ(k+r)/(Γ(r) k!) ₂F₁(r, k+r; k+1; α²).
    """
    r = float(shape)
    if not (math.isfinite(r) and r > 0):
        raise ValueError(f"shape must be a finite number > 0, got {shape!r}")
    if not 0.0 <= alpha < 1.0:
        raise ValueError(f"alpha must lie in [0, 1), got {alpha!r}")
    delta1 = check_int_at_least(l1_sensitivity, 1, name="l1_sensitivity")
    if alpha == 0.0:
        # exp(-ε/Δ1) underflowed: the noise is identically 0, so nothing is hidden.
        return math.inf
    tail_limit = -delta1 * math.log(alpha)
    if r >= 1.0:
        return tail_limit
    window = 4 * delta1 + 64
    n_terms = math.ceil(40.0 / (-2.0 * math.log(alpha))) + 64
    j = np.arange(n_terms, dtype=np.float64)
    log_pj = _polya_logpmf(j, r, alpha)
    from scipy.special import logsumexp

    log_p_pos = np.empty(window + 1)
    for k in range(window + 1):
        log_p_pos[k] = logsumexp(_polya_logpmf(j + k, r, alpha) + log_pj)
    # P is symmetric: assemble log P(k) for k = -window..window.
    log_p = np.concatenate([log_p_pos[:0:-1], log_p_pos])
    best = tail_limit
    for s in range(1, delta1 + 1):
        best = max(best, float(np.max(log_p[:-s] - log_p[s:])))
    return best


@dataclass(frozen=True)
class PolyaShares:
    """Per-client Pólya noise shares whose sum is discrete Laplace.

    Parameters
    ----------
    epsilon : float
        Target ε > 0 of the aggregate (the sum of the shares).
    n_shares : int
        Number n ≥ 1 of clients that each add one share.
    l1_sensitivity : int, default 1
        L1 sensitivity Δ1 ≥ 1 of the aggregated integer query.
    min_received : float, optional, keyword-only
        Calibration threshold m, 1 ≤ m ≤ n (a real number is allowed): each
        share is Pólya(1/m, α) - Pólya(1/m, α), so any k ≥ m shares already sum
        to at least the target discrete Laplace. Defaults to ``n_shares`` (no
        dropout tolerance). A real threshold f·n makes the sum of all n shares
        Pólya(1/f, α) differences whatever n is, so the noise does not reveal
        the number of clients. Prefer :meth:`for_dropouts`.

    Raises
    ------
    ValueError, TypeError
        On ε not finite and > 0, n_shares < 1, Δ1 < 1, or min_received outside
        [1, n_shares].

    Notes
    -----
    Privacy: if at least ``min_received`` shares reach the secure sum, the
    released sum is ε-DP for the integer query with L1 sensitivity Δ1: the noise
    is DiscreteLaplace(ε, Δ1) plus, for extra shares, independent noise, which
    cannot weaken the guarantee (post-processing). Fewer shares give the weaker
    guarantee of :meth:`guarantee_if_received`. Each client's share on its own
    gives no meaningful local guarantee; it must go through secure aggregation.

    References
    ----------
    .. [1] Balle, Bell, Gascón & Nissim (2020), Pólya decomposition of the
       discrete Laplace.
    .. [2] Cormode & Markov (2023), §2.2 (DistDP).
    """

    epsilon: float
    n_shares: int
    l1_sensitivity: int = 1
    min_received: float | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        n = check_int_at_least(self.n_shares, 1, name="n_shares")
        object.__setattr__(self, "n_shares", n)
        object.__setattr__(
            self,
            "l1_sensitivity",
            check_int_at_least(self.l1_sensitivity, 1, name="l1_sensitivity"),
        )
        m = float(n if self.min_received is None else self.min_received)
        if not (math.isfinite(m) and 1.0 <= m <= n):
            raise ValueError(f"min_received must lie in [1, n_shares = {n}], got {m}")
        object.__setattr__(self, "min_received", int(m) if m == int(m) else m)

    @classmethod
    def for_dropouts(
        cls, epsilon: float, n_shares: int, min_received: float, l1_sensitivity: int = 1
    ) -> PolyaShares:
        """Shares calibrated so that any ``min_received`` of the ``n_shares`` suffice.

        Each share uses shape 1/min_received instead of 1/n_shares. If k ≥
        min_received shares arrive, their sum is Pólya(k/m, α) - Pólya(k/m, α)
        = DiscreteLaplace(ε, Δ1) + independent extra noise, hence ε-DP; the price
        is a variance of (k/m)·2α/(1-α)², up to n/m times the target. This is
        the "calibrate to the reconstruction threshold" rule (DESIGN.md, Flower
        notes): with SecAgg+ the sum is only released when at least the
        threshold number of clients survive.

        Parameters
        ----------
        epsilon : float
            Target ε > 0.
        n_shares : int
            Clients selected (each adds one share).
        min_received : float
            Smallest number of shares the protocol will ever sum (1 ≤ m ≤ n), or
            the real threshold f·n (see the class docstring).
        l1_sensitivity : int, default 1
            Δ1 ≥ 1.
        """
        return cls(epsilon, n_shares, l1_sensitivity, min_received=min_received)

    @property
    def alpha(self) -> float:
        """α = exp(-ε/Δ1), shared by every Pólya variable."""
        return math.exp(-self.epsilon / self.l1_sensitivity)

    @property
    def shape(self) -> float:
        """Pólya shape of one share's two variables, 1/min_received."""
        return 1.0 / self._threshold

    @property
    def _threshold(self) -> float:
        # min_received is resolved in __post_init__; this narrows the type.
        return self.n_shares if self.min_received is None else self.min_received

    @property
    def target(self) -> DiscreteLaplace:
        """The discrete Laplace that ``min_received`` shares sum to."""
        return DiscreteLaplace(self.epsilon, self.l1_sensitivity)

    @property
    def share_variance(self) -> float:
        """Variance of one share, 2·(1/m)·α/(1-α)² = target variance / min_received."""
        return self.target.variance * self.shape

    @property
    def variance(self) -> float:
        """Variance of the sum of all n shares (= target variance when m = n)."""
        return self.share_variance * self.n_shares

    def _sample_difference(
        self, shape: float, size: tuple[int, ...], gen: np.random.Generator
    ) -> NDArray[np.int64]:
        if shape == 1.0:
            # Pólya(1, α) − Pólya(1, α) = geometric − geometric: the discrete Laplace,
            # drawn exactly.
            return self._sample_target(size, gen)
        # numpy's negative_binomial(n, p) counts failures before the n-th success:
        # pmf C(k+n-1, k) p^n (1-p)^k, i.e. Pólya(n, 1-p); real n > 0 is supported.
        # It is a floating-point (gamma–Poisson) sampler: its law is Pólya(n, 1-p)
        # only up to rounding, which the receipts say.
        p = 1.0 - self.alpha
        x = gen.negative_binomial(shape, p, size=size).astype(np.int64, copy=False)
        y = gen.negative_binomial(shape, p, size=size).astype(np.int64, copy=False)
        return x - y

    def _sample_target(self, size: tuple[int, ...], gen: np.random.Generator) -> NDArray[np.int64]:
        """Exact DiscreteLaplace(ε, Δ1) draws (rate ε/Δ1 as an exact rational)."""
        draws = sample_discrete_laplace_exact(self.target.rate, math.prod(size), gen)
        return draws.reshape(size)

    def sample_share(self, size: Size = 1, rng: RNGLike = None) -> NDArray[np.int64]:
        """One client's noise share, Pólya(1/m, α) - Pólya(1/m, α) (faithful path).

        Parameters
        ----------
        size : int or tuple of int, default 1
            Output shape (e.g. the number of histogram bins).
        rng : int, numpy.random.Generator or None
            Random source.

        Returns
        -------
        numpy.ndarray of int64, shape ``size``
            Exact when the shape is 1 (one share: the discrete Laplace itself);
            otherwise drawn with numpy's floating-point negative-binomial
            sampler, whose law is the Pólya law only up to rounding.
        """
        return self._sample_difference(self.shape, as_size(size), as_generator(rng))

    @property
    def jump_rate(self) -> float:
        """λ = −(1/m)·log(1 − α): one share side is Poisson(λ) Logarithmic(α) jumps."""
        return -self.shape * math.log1p(-self.alpha)

    def sample_share_jumps(self, n_shares: int, size: int, rng: RNGLike = None) -> ShareJumps:
        """``n_shares`` independent shares of length ``size``, drawn as their jumps.

        The same law as ``sample_share((n_shares, size))``: every entry is its
        own Pólya(1/m, α) − Pólya(1/m, α) draw, the Pólya variables written as
        compound Poisson sums of logarithmic jumps
        (:mod:`~fedeval.privacy.mechanisms.share_jumps`). Costs O(expected
        jumps) = O(n_shares·size·2λ), not O(n_shares·size).
        """
        n = check_int_at_least(n_shares, 0, name="n_shares")
        d = check_int_at_least(size, 0, name="size")
        return difference_jumps(n, d, self.jump_rate, as_generator(rng), self.alpha)

    def sample_shares_sum(self, n_shares: int, size: int, rng: RNGLike = None) -> NDArray[np.int64]:
        """Σ of ``n_shares`` independent shares, each drawn on its own (faithful path).

        One share (a deployed client's) is :meth:`sample_share`, draw for draw.
        For a block of shares: as their jumps (:meth:`sample_share_jumps`) when
        a cell expects at most ``SPARSE_JUMPS_PER_CELL`` jumps and the shape is
        below 1, else every share drawn by :meth:`sample_share` and summed (the
        draws the faithful path made before). Both give the law of n i.i.d.
        shares; neither draws their sum directly (that is :meth:`sample_sum`).

        Returns
        -------
        numpy.ndarray of int64, shape (size,)
        """
        n = check_int_at_least(n_shares, 1, name="n_shares")
        d = check_int_at_least(size, 0, name="size")
        gen = as_generator(rng)
        if n == 1:
            return self.sample_share(d, gen)
        if self.shape < 1.0 and 2.0 * self.jump_rate <= SPARSE_JUMPS_PER_CELL:
            return self.sample_share_jumps(n, d, gen).summed()
        return self.sample_share((n, d), gen).sum(axis=0)

    def sample_sum(
        self, size: Size = 1, rng: RNGLike = None, *, n_received: int | None = None
    ) -> NDArray[np.int64]:
        """The sum of the shares, drawn directly (fast path, exact in distribution).

        Parameters
        ----------
        size : int or tuple of int, default 1
            Output shape.
        rng : int, numpy.random.Generator or None
            Random source.
        n_received : int, optional, keyword-only
            Number of shares that reach the sum (1 ≤ n_received ≤ n_shares);
            default all n_shares. The sum of k shares is
            Pólya(k/m, α) - Pólya(k/m, α), because Pólya shapes add.

        Returns
        -------
        numpy.ndarray of int64, shape ``size``
            With k = m shares this is exactly DiscreteLaplace(ε, Δ1), drawn by
            the exact sampler
            (:class:`~fedeval.privacy.mechanisms.exact_sampling.LaplaceSampler`:
            the pure ε-DP statement holds with δ = 0 for any bit generator).
            Other k give Pólya(k/m) differences from numpy's floating-point
            negative-binomial sampler.
        """
        k = self._check_received(n_received)
        gen = as_generator(rng)
        if k == self._threshold:
            # k·(1/m) = 1: exactly discrete Laplace (k·(1/m) computed in floating
            # point can miss 1.0, e.g. m = 49).
            return self._sample_target(as_size(size), gen)
        return self._sample_difference(k * self.shape, as_size(size), gen)

    def _check_received(self, n_received: int | None) -> int:
        if n_received is None:
            return self.n_shares
        k = check_int_at_least(n_received, 1, name="n_received")
        if k > self.n_shares:
            raise ValueError(f"n_received must be <= n_shares = {self.n_shares}, got {k}")
        return k

    def guarantee(self, unit: PrivacyUnit = "example") -> Guarantee:
        """ε-DP of the secure sum, provided at least ``min_received`` shares arrive.

        Parameters
        ----------
        unit : {"example", "client", "label"}, default "example"
            What the sensitivity Δ1 was computed for.
        """
        return Guarantee(
            epsilon=self.epsilon,
            delta=0.0,
            unit=check_unit(unit),
            statement=(
                f"secure sum of Pólya(1/{self.min_received}, α={self.alpha:.6g}) difference "
                f"shares from {self.n_shares} clients (at least {self.min_received} must "
                f"arrive), summing to at least discrete Laplace noise, for an integer query "
                f"with L1 sensitivity Δ1 = {self.l1_sensitivity}"
            ),
        )

    def epsilon_if_received(self, n_received: int) -> float:
        """Exact ε of the sum when only ``n_received`` shares arrive.

        See :meth:`guarantee_if_received`.
        """
        k = self._check_received(n_received)
        return polya_difference_epsilon(k * self.shape, self.alpha, self.l1_sensitivity)

    def guarantee_if_received(self, n_received: int, unit: PrivacyUnit = "example") -> Guarantee:
        """What still holds when only ``n_received`` shares reach the sum.

        The noise is Pólya(r, α) - Pólya(r, α) with r = n_received/min_received.
        For r ≥ 1 the target ε-DP holds. For r < 1 the noise is not discrete
        Laplace and the mechanism is ε'-DP with the exact
        ε' = sup_k sup_{s ≤ Δ1} log P(k)/P(k+s) > ε, which is finite for every
        r > 0 (the pmf is positive everywhere and the ratio tends to α^-s in the
        tails) and is computed numerically by :func:`polya_difference_epsilon`.
        For example ε = 1, Δ1 = 1 gives ε' ≈ 1.68 at r = 1/2 and ε' ≈ 5.6 at
        r = 1/100.

        Parameters
        ----------
        n_received : int
            Number of shares summed, 1 ≤ n_received ≤ n_shares.
        unit : {"example", "client", "label"}, default "example"

        Returns
        -------
        Guarantee
            Pure DP (δ = 0) with the exact ε'.
        """
        unit = check_unit(unit)
        k = self._check_received(n_received)
        eps = self.epsilon_if_received(k)
        if k >= self._threshold:
            statement = (
                f"{k} of {self.n_shares} Pólya shares arrived (threshold {self.min_received}): "
                f"noise is discrete Laplace (α={self.alpha:.6g}) plus independent noise, for "
                f"L1 sensitivity Δ1 = {self.l1_sensitivity}"
            )
        else:
            statement = (
                f"only {k} of {self.n_shares} Pólya shares arrived (threshold "
                f"{self.min_received}): noise is Pólya({k}/{self.min_received}, "
                f"α={self.alpha:.6g}) - Pólya(same), whose exact pure-DP ε for L1 "
                f"sensitivity Δ1 = {self.l1_sensitivity} is {eps:.6g} (target was "
                f"{self.epsilon:.6g})"
            )
        return Guarantee(epsilon=eps, delta=0.0, unit=unit, statement=statement)
