"""Skellam noise shares (distributed DP with Poisson differences).

Each of n clients adds Poisson(μ/n) - Poisson(μ/n); Poisson variables add, so the
secure sum carries exactly Skellam noise Poisson(μ) - Poisson(μ), variance 2μ.
The guarantee is (ε, δ)-DP via the Rényi-DP bound of Agarwal, Kairouz & Liu
(2021). Cormode & Markov (2023, footnote 2 of §2.2) mention Skellam as an
alternative to Pólya shares.

References
----------
.. [1] N. Agarwal, P. Kairouz and Z. Liu, "The Skellam mechanism for
   differentially private federated learning", NeurIPS 2021 (arXiv:2110.04995),
   Theorem 3.5 (RDP of the multi-dimensional Skellam mechanism).
.. [2] C. Canonne, G. Kamath and T. Steinke, "The discrete Gaussian for
   differential privacy", NeurIPS 2020, Proposition 12 (RDP → (ε, δ)), as
   implemented by dp-accounting 0.6.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from fedeval.privacy.accounting import rdp_to_approx_dp
from fedeval.privacy.guarantee import Guarantee, PrivacyUnit
from fedeval.privacy.mechanisms.common import Size, as_size, check_unit
from fedeval.privacy.mechanisms.share_jumps import (
    SPARSE_JUMPS_PER_CELL,
    ShareJumps,
    difference_jumps,
)
from fedeval.randomness import RNGLike, as_generator
from fedeval.validation import check_delta, check_epsilon, check_int_at_least, check_positive

__all__ = ["SKELLAM_RDP_ORDERS", "SkellamShares", "skellam_epsilon", "skellam_rdp"]

#: Integer Rényi orders at which the Skellam RDP bound is evaluated.
SKELLAM_RDP_ORDERS: tuple[int, ...] = (*range(2, 257), 320, 384, 512, 768, 1024)


def skellam_rdp(
    order: int | NDArray[np.int64],
    mu: float,
    l1_sensitivity: float,
    l2_sensitivity: float,
) -> NDArray[np.float64]:
    """RDP ε(α) of adding Poisson(μ) - Poisson(μ) noise per coordinate.

    Agarwal, Kairouz & Liu (2021), Theorem 3.5, with their variance parameter
    (the Skellam variance, here 2μ) written V: for integer α > 1 and an integer
    query with L1 / L2 sensitivities Δ1, Δ2,

        ε(α) ≤ α Δ2² / (2V) + min( ((2α - 1) Δ2² + 6 Δ1) / (4V²),  3 Δ1 / (2V) ).

    The first term is the Gaussian mechanism's RDP at variance V; the second is
    the price of discreteness and vanishes relative to it as V grows.

    Parameters
    ----------
    order : int or array of int
        Rényi orders α ≥ 2.
    mu : float
        Poisson mean of each of the two variables (variance V = 2μ).
    l1_sensitivity, l2_sensitivity : float
        Δ1, Δ2 > 0.
    """
    a = np.asarray(order, dtype=np.float64)
    v = 2.0 * mu
    gaussian = a * l2_sensitivity**2 / (2.0 * v)
    discrete = np.minimum(
        ((2.0 * a - 1.0) * l2_sensitivity**2 + 6.0 * l1_sensitivity) / (4.0 * v**2),
        3.0 * l1_sensitivity / (2.0 * v),
    )
    return np.asarray(gaussian + discrete, dtype=np.float64)


def skellam_epsilon(
    mu: float, delta: float, l1_sensitivity: float = 1.0, l2_sensitivity: float = 1.0
) -> float:
    """ε of (ε, δ)-DP for Skellam noise Poisson(μ) - Poisson(μ).

    The RDP bound :func:`skellam_rdp` at the orders :data:`SKELLAM_RDP_ORDERS`,
    converted with dp-accounting's ``compute_epsilon`` (via
    :func:`fedeval.privacy.accounting.rdp_to_approx_dp`).
    """
    m = check_positive(mu, name="mu")
    d = check_delta(delta)
    l1 = check_positive(l1_sensitivity, name="l1_sensitivity")
    l2 = check_positive(l2_sensitivity, name="l2_sensitivity")
    orders = np.asarray(SKELLAM_RDP_ORDERS, dtype=np.int64)
    rdp = skellam_rdp(orders, m, l1, l2)
    return rdp_to_approx_dp([float(o) for o in orders], [float(r) for r in rdp], d)


@dataclass(frozen=True)
class SkellamShares:
    """Per-client Skellam noise shares whose sum is Poisson(μ) - Poisson(μ).

    Parameters
    ----------
    mu : float
        Poisson mean μ > 0 of each side of the *summed* noise (variance 2μ).
    n_shares : int
        Number n ≥ 1 of clients; each adds Poisson(μ/n) - Poisson(μ/n).
    l1_sensitivity, l2_sensitivity : float, default 1.0, keyword-only
        Δ1, Δ2 of the integer query the sum protects (used by :meth:`guarantee`).
    delta : float, optional, keyword-only
        δ at which :meth:`guarantee` reports ε by default (set by
        :meth:`calibrate`).

    Raises
    ------
    ValueError, TypeError
        If μ, Δ1 or Δ2 is not a finite number > 0, n_shares < 1, or δ is not
        in (0, 1).

    Notes
    -----
    Privacy: when all n shares reach the secure sum, the release is (ε, δ)-DP
    with ε from the RDP bound of Agarwal, Kairouz & Liu (2021, Theorem 3.5)
    converted by dp-accounting (:func:`skellam_epsilon`). With only k < n
    shares the noise is Skellam with mean kμ/n; use
    ``skellam_epsilon(k * mu / n, delta, ...)`` for that case.

    References
    ----------
    .. [1] Agarwal, Kairouz & Liu (2021), Theorem 3.5.
    """

    mu: float
    n_shares: int
    l1_sensitivity: float = field(default=1.0, kw_only=True)
    l2_sensitivity: float = field(default=1.0, kw_only=True)
    delta: float | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        object.__setattr__(self, "mu", check_positive(self.mu, name="mu"))
        object.__setattr__(self, "n_shares", check_int_at_least(self.n_shares, 1, name="n_shares"))
        object.__setattr__(
            self, "l1_sensitivity", check_positive(self.l1_sensitivity, name="l1_sensitivity")
        )
        object.__setattr__(
            self, "l2_sensitivity", check_positive(self.l2_sensitivity, name="l2_sensitivity")
        )
        if self.delta is not None:
            object.__setattr__(self, "delta", check_delta(self.delta))

    @classmethod
    def calibrate(
        cls,
        epsilon: float,
        delta: float,
        l1_sensitivity: float = 1.0,
        l2_sensitivity: float = 1.0,
        n_shares: int = 1,
    ) -> SkellamShares:
        """The smallest μ (to relative 1e-9) whose sum is (ε, δ)-DP.

        ε(μ) from :func:`skellam_epsilon` is decreasing in μ; bisection on log μ,
        keeping the side that meets the target.

        Parameters
        ----------
        epsilon : float
            Target ε > 0.
        delta : float
            Target δ in (0, 1).
        l1_sensitivity, l2_sensitivity : float, default 1.0
            Δ1, Δ2 > 0 of the integer query.
        n_shares : int, default 1
            Number of clients sharing the noise.
        """
        eps = check_epsilon(epsilon)
        d = check_delta(delta)
        l1 = check_positive(l1_sensitivity, name="l1_sensitivity")
        l2 = check_positive(l2_sensitivity, name="l2_sensitivity")
        n = check_int_at_least(n_shares, 1, name="n_shares")

        def eps_at(mu: float) -> float:
            return skellam_epsilon(mu, d, l1, l2)

        hi = 1.0
        while eps_at(hi) > eps:
            hi *= 2.0
        lo = hi / 2.0
        while eps_at(lo) <= eps:
            hi = lo
            lo /= 2.0
            if lo < 1e-12:
                break
        while hi / lo - 1.0 > 1e-9:
            mid = math.sqrt(lo * hi)
            if eps_at(mid) <= eps:
                hi = mid
            else:
                lo = mid
        return cls(hi, n, l1_sensitivity=l1, l2_sensitivity=l2, delta=d)

    @property
    def share_mu(self) -> float:
        """Poisson mean of each side of one client's share, μ/n."""
        return self.mu / self.n_shares

    @property
    def variance(self) -> float:
        """Variance of the summed noise, 2μ."""
        return 2.0 * self.mu

    @property
    def share_variance(self) -> float:
        """Variance of one share, 2μ/n."""
        return 2.0 * self.share_mu

    def _sample(
        self, mean: float, size: tuple[int, ...], gen: np.random.Generator
    ) -> NDArray[np.int64]:
        x = gen.poisson(mean, size=size).astype(np.int64, copy=False)
        y = gen.poisson(mean, size=size).astype(np.int64, copy=False)
        return x - y

    def sample_share(self, size: Size = 1, rng: RNGLike = None) -> NDArray[np.int64]:
        """One client's share, Poisson(μ/n) - Poisson(μ/n), shape ``size``."""
        return self._sample(self.share_mu, as_size(size), as_generator(rng))

    def sample_share_jumps(self, n_shares: int, size: int, rng: RNGLike = None) -> ShareJumps:
        """``n_shares`` independent shares of length ``size``, drawn as their ±1 jumps.

        The same law as ``sample_share((n_shares, size))``: each side of every
        entry is a Poisson(μ/n) count of unit jumps
        (:mod:`~fedeval.privacy.mechanisms.share_jumps`).
        """
        n = check_int_at_least(n_shares, 0, name="n_shares")
        d = check_int_at_least(size, 0, name="size")
        return difference_jumps(n, d, self.share_mu, as_generator(rng), None)

    def sample_shares_sum(self, n_shares: int, size: int, rng: RNGLike = None) -> NDArray[np.int64]:
        """Σ of ``n_shares`` independent shares, each drawn on its own (faithful path).

        One share is :meth:`sample_share`, draw for draw; a block is drawn as
        its jumps when a cell expects at most ``SPARSE_JUMPS_PER_CELL`` of them,
        else share by share (see :meth:`PolyaShares.sample_shares_sum
        <fedeval.privacy.mechanisms.polya.PolyaShares.sample_shares_sum>`).
        """
        n = check_int_at_least(n_shares, 1, name="n_shares")
        d = check_int_at_least(size, 0, name="size")
        gen = as_generator(rng)
        if n == 1:
            return self.sample_share(d, gen)
        if 2.0 * self.share_mu <= SPARSE_JUMPS_PER_CELL:
            return self.sample_share_jumps(n, d, gen).summed()
        return self.sample_share((n, d), gen).sum(axis=0)

    def sample_sum(self, size: Size = 1, rng: RNGLike = None) -> NDArray[np.int64]:
        """The sum of all n shares drawn directly: Poisson(μ) - Poisson(μ) (exact)."""
        return self._sample(self.mu, as_size(size), as_generator(rng))

    def epsilon(self, delta: float | None = None) -> float:
        """ε of the summed noise at ``delta`` (or the stored δ)."""
        if delta is None:
            if self.delta is None:
                raise ValueError("delta is required: pass delta=... or construct with delta=...")
            d = self.delta
        else:
            d = check_delta(delta)
        return skellam_epsilon(self.mu, d, self.l1_sensitivity, self.l2_sensitivity)

    def guarantee(self, unit: PrivacyUnit = "example", *, delta: float | None = None) -> Guarantee:
        """(ε, δ)-DP of the secure sum of all n shares (see class Notes).

        Parameters
        ----------
        unit : {"example", "client", "label"}, default "example"
        delta : float, optional, keyword-only
            δ to report ε at; the stored δ by default.

        Raises
        ------
        ValueError
            If no δ is given and none was stored.
        """
        unit = check_unit(unit)
        d = self.delta if delta is None else check_delta(delta)
        if d is None:
            raise ValueError("delta is required: pass delta=... or construct with delta=...")
        return Guarantee(
            epsilon=self.epsilon(d),
            delta=d,
            unit=unit,
            statement=(
                f"secure sum of {self.n_shares} Skellam shares, total noise Poisson(μ) - "
                f"Poisson(μ) with μ = {self.mu:.6g}, for an integer query with Δ1 = "
                f"{self.l1_sensitivity:.6g}, Δ2 = {self.l2_sensitivity:.6g} (RDP bound of "
                f"Agarwal-Kairouz-Liu 2021 Thm 3.5, converted by dp-accounting)"
            ),
        )
