"""Gaussian noise: the continuous Gaussian (analytic calibration) and the discrete Gaussian.

Real-valued releases (scaler parameters in federated calibration) get continuous
Gaussian noise, calibrated exactly with the analytic Gaussian mechanism of Balle
& Wang (2018). Integer releases can use the discrete Gaussian of Canonne, Kamath
& Steinke (2020), which is ρ-zCDP with ρ = Δ2²/(2σ²) like its continuous
counterpart but is exactly representable.

References
----------
.. [1] B. Balle and Y.-X. Wang, "Improving the Gaussian mechanism for
   differential privacy: analytical calibration and optimal denoising", ICML
   2018, Theorem 8 and Algorithm 1.
.. [2] C. Canonne, G. Kamath and T. Steinke, "The discrete Gaussian for
   differential privacy", NeurIPS 2020 (arXiv:2004.00010), Theorem 4 and
   Theorem 14 (zCDP), Algorithm 3 (sampling), Corollary 13 (zCDP → (ε, δ)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import brentq
from scipy.special import log_ndtr

from fedeval._rng import RNGLike, as_generator
from fedeval._validation import check_delta, check_epsilon, check_positive
from fedeval.privacy.accounting import zcdp_to_approx_dp
from fedeval.privacy.guarantee import Guarantee, PrivacyUnit
from fedeval.privacy.laplace import (
    Size,
    _as_size,
    _check_integers,
    _check_unit,
    _two_sided_geometric,
)

__all__ = ["DiscreteGaussian", "Gaussian"]


def _analytic_log_delta(epsilon: float, ratio: float) -> float:
    """log δ(ε) of the Gaussian mechanism with σ/Δ2 = ``ratio`` (Balle & Wang, Thm 8).

    δ(ε) = Φ(Δ/(2σ) - εσ/Δ) - e^ε Φ(-Δ/(2σ) - εσ/Δ), evaluated in log space so
    that neither term under- nor overflows.
    """
    a = 0.5 / ratio - epsilon * ratio
    b = -0.5 / ratio - epsilon * ratio
    log_first = float(log_ndtr(a))
    log_second = epsilon + float(log_ndtr(b))
    if log_second >= log_first:
        return -math.inf
    return log_first + math.log1p(-math.exp(log_second - log_first))


def _resolve_delta(delta: float | None, stored: float | None) -> float:
    if delta is not None:
        return check_delta(delta)
    if stored is not None:
        return stored
    raise ValueError(
        "delta is required: pass guarantee(delta=...) or construct the mechanism with delta=..."
    )


@dataclass(frozen=True)
class Gaussian:
    """Continuous Gaussian noise N(0, σ²) for real-valued queries.

    Parameters
    ----------
    sigma : float
        Standard deviation σ > 0.
    l2_sensitivity : float, default 1.0
        L2 sensitivity Δ2 > 0 of the query.
    delta : float, optional, keyword-only
        δ at which :meth:`guarantee` reports ε by default (set by
        :meth:`calibrate`).

    Raises
    ------
    ValueError, TypeError
        If σ or Δ2 is not a finite number > 0, or δ is not in (0, 1).

    Notes
    -----
    Privacy: the mechanism is (ε, δ)-DP exactly when
    Φ(Δ2/(2σ) - εσ/Δ2) - e^ε Φ(-Δ2/(2σ) - εσ/Δ2) ≤ δ (Balle & Wang 2018,
    Theorem 8); :meth:`calibrate` and :meth:`guarantee` solve this equation with
    a bracketing root-finder (scipy.special.log_ndtr, scipy.optimize.brentq)
    instead of the paper's Algorithm 1 parametrisation, which yields the same
    σ. Floating-point Gaussian sampling has the same least-significant-bit
    caveat as the Laplace (Mironov 2012); use :class:`DiscreteGaussian` for
    integer releases.

    References
    ----------
    .. [1] Balle & Wang (2018), Theorem 8, Algorithm 1.
    """

    sigma: float
    l2_sensitivity: float = 1.0
    delta: float | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", check_positive(self.sigma, name="sigma"))
        object.__setattr__(
            self, "l2_sensitivity", check_positive(self.l2_sensitivity, name="l2_sensitivity")
        )
        if self.delta is not None:
            object.__setattr__(self, "delta", check_delta(self.delta))

    @classmethod
    def calibrate(cls, epsilon: float, delta: float, l2_sensitivity: float = 1.0) -> Gaussian:
        """The smallest σ for which the Gaussian mechanism is (ε, δ)-DP.

        Parameters
        ----------
        epsilon : float
            Target ε > 0.
        delta : float
            Target δ in (0, 1).
        l2_sensitivity : float, default 1.0
            Δ2 > 0.

        Returns
        -------
        Gaussian
            With ``delta`` stored; its σ satisfies the exact condition of Balle &
            Wang (2018, Theorem 8) to within a relative 1e-12.
        """
        eps = check_epsilon(epsilon)
        d = check_delta(delta)
        sens = check_positive(l2_sensitivity, name="l2_sensitivity")
        log_d = math.log(d)

        def f(log_ratio: float) -> float:
            return _analytic_log_delta(eps, math.exp(log_ratio)) - log_d

        lo, hi = -1.0, 0.0
        while f(lo) < 0:
            lo -= 2.0
        while f(hi) > 0:
            hi += 2.0
        root = float(brentq(f, lo, hi, xtol=1e-14, rtol=1e-15))
        ratio = math.exp(root)
        # brentq may land a hair on the wrong side: step up until δ(ε) ≤ δ holds.
        while _analytic_log_delta(eps, ratio) > log_d:
            ratio *= 1.0 + 1e-13
        return cls(ratio * sens, sens, delta=d)

    @property
    def noise_multiplier(self) -> float:
        """σ/Δ2."""
        return self.sigma / self.l2_sensitivity

    @property
    def variance(self) -> float:
        """σ²."""
        return self.sigma**2

    @property
    def rho(self) -> float:
        """ρ = Δ2²/(2σ²) of the ρ-zCDP guarantee (Bun & Steinke 2016)."""
        return self.l2_sensitivity**2 / (2.0 * self.sigma**2)

    def delta_for_epsilon(self, epsilon: float) -> float:
        """Exact δ(ε) of this mechanism (Balle & Wang 2018, Theorem 8)."""
        eps = check_epsilon(epsilon)
        return math.exp(_analytic_log_delta(eps, self.noise_multiplier))

    def epsilon_for_delta(self, delta: float) -> float:
        """The smallest ε with δ(ε) ≤ ``delta`` (0 if already (0, δ)-DP)."""
        d = check_delta(delta)
        log_d = math.log(d)
        ratio = self.noise_multiplier

        def f(eps: float) -> float:
            return _analytic_log_delta(eps, ratio) - log_d

        if f(0.0) <= 0:
            return 0.0
        hi = 1.0
        while f(hi) > 0:
            hi *= 2.0
        eps = float(brentq(f, 0.0, hi, xtol=1e-14, rtol=1e-15))
        while f(eps) > 0:
            eps = eps * (1.0 + 1e-13) + 1e-300
        return eps

    def sample(self, size: Size = 1, rng: RNGLike = None) -> NDArray[np.float64]:
        """Draw N(0, σ²) noise of shape ``size`` (float64)."""
        return as_generator(rng).normal(0.0, self.sigma, size=_as_size(size))

    def guarantee(self, unit: PrivacyUnit = "example", *, delta: float | None = None) -> Guarantee:
        """(ε, δ)-DP with the exact ε for ``delta`` (or the stored δ).

        Raises
        ------
        ValueError
            If no δ is given and none was stored.
        """
        d = _resolve_delta(delta, self.delta)
        unit = _check_unit(unit)
        return Guarantee(
            epsilon=self.epsilon_for_delta(d),
            delta=d,
            unit=unit,
            statement=(
                f"Gaussian noise with σ = {self.sigma:.6g} added to a real-valued query with "
                f"L2 sensitivity Δ2 = {self.l2_sensitivity:.6g} (analytic Gaussian mechanism, "
                f"Balle & Wang 2018)"
            ),
        )


_DIRECT_SUM_MAX_SIGMA = 1.0


def _discrete_gaussian_moments(sigma: float) -> tuple[float, float]:
    """(log Z, E[X²]) of the discrete Gaussian, Z = Σ_k exp(-k²/(2σ²)).

    σ ≤ 1: direct summation over |k| ≤ 40σ + 1 (the remaining terms are below
    e^-800). σ > 1: the Poisson summation formula,
    Z = √(2π)σ Σ_m exp(-2π²σ²m²) and
    Σ_k k² exp(-k²/(2σ²)) = √(2π)σ Σ_m (σ² - 4π²σ⁴m²) exp(-2π²σ²m²),
    summed over |m| until the terms fall below e^-800. The dual series
    converges much faster for large σ and returns E[X²] as σ² times a factor
    ≤ 1, so the computed variance never exceeds σ² through rounding.
    """
    if sigma <= _DIRECT_SUM_MAX_SIGMA:
        kmax = math.ceil(40.0 * sigma) + 1
        k = np.arange(-kmax, kmax + 1, dtype=np.float64)
        w = np.exp(-(k**2) / (2.0 * sigma**2))
        z = float(w.sum())
        return math.log(z), float((k**2 * w).sum() / z)
    c = 2.0 * math.pi**2 * sigma**2
    mmax = math.ceil(math.sqrt(800.0 / c)) + 1
    m = np.arange(-mmax, mmax + 1, dtype=np.float64)
    g = np.exp(-c * m**2)
    z_dual = float(g.sum())
    second = sigma**2 * float(((1.0 - 4.0 * math.pi**2 * sigma**2 * m**2) * g).sum()) / z_dual
    return math.log(math.sqrt(2.0 * math.pi) * sigma * z_dual), second


@dataclass(frozen=True)
class DiscreteGaussian:
    """Discrete Gaussian noise N_ℤ(0, σ²): P(k) ∝ exp(-k²/(2σ²)), k ∈ ℤ.

    Parameters
    ----------
    sigma : float
        Scale σ > 0 (the variance is slightly below σ²).
    l2_sensitivity : float, default 1.0
        L2 sensitivity Δ2 > 0 of the integer-valued (vector) query.
    delta : float, optional, keyword-only
        δ at which :meth:`guarantee` reports ε by default.

    Raises
    ------
    ValueError, TypeError
        If σ or Δ2 is not a finite number > 0, or δ is not in (0, 1).

    Notes
    -----
    Privacy: adding independent N_ℤ(0, σ²) to each coordinate of an integer
    query with L2 sensitivity Δ2 is ρ-zCDP with ρ = Δ2²/(2σ²) (Canonne, Kamath &
    Steinke 2020, Theorem 4 for scalars, Theorem 14 for vectors).
    :meth:`guarantee` converts it to (ε, δ)-DP with
    :func:`fedeval.privacy.accounting.zcdp_to_approx_dp` (CKS 2020,
    Corollary 13: ε = inf_α ρα + log(1-1/α) - log(δα)/(α-1)). That conversion is
    valid for any ρ-zCDP mechanism; it is slightly looser than CKS's exact
    (ε, δ) curve for the discrete Gaussian itself.

    References
    ----------
    .. [1] Canonne, Kamath & Steinke (2020), Theorems 4 and 14, Corollary 13,
       Algorithm 3.
    """

    sigma: float
    l2_sensitivity: float = 1.0
    delta: float | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", check_positive(self.sigma, name="sigma"))
        object.__setattr__(
            self, "l2_sensitivity", check_positive(self.l2_sensitivity, name="l2_sensitivity")
        )
        if self.delta is not None:
            object.__setattr__(self, "delta", check_delta(self.delta))

    @classmethod
    def calibrate(
        cls, epsilon: float, delta: float, l2_sensitivity: float = 1.0
    ) -> DiscreteGaussian:
        """The smallest σ whose zCDP guarantee converts to (ε, δ)-DP.

        Solves zcdp_to_approx_dp(Δ2²/(2σ²), δ) = ε for σ by bisection on log ρ
        (the conversion is increasing in ρ) to relative 1e-10, rounding towards
        more noise.
        """
        eps = check_epsilon(epsilon)
        d = check_delta(delta)
        sens = check_positive(l2_sensitivity, name="l2_sensitivity")
        lo, hi = 1e-12, 1.0
        while zcdp_to_approx_dp(hi, d) < eps:
            hi *= 2.0
        while zcdp_to_approx_dp(lo, d) > eps:
            lo /= 2.0
        while hi / lo - 1.0 > 1e-10:
            mid = math.sqrt(lo * hi)
            if zcdp_to_approx_dp(mid, d) <= eps:
                lo = mid
            else:
                hi = mid
        return cls(sens / math.sqrt(2.0 * lo), sens, delta=d)

    @property
    def rho(self) -> float:
        """ρ = Δ2²/(2σ²) of the ρ-zCDP guarantee."""
        return self.l2_sensitivity**2 / (2.0 * self.sigma**2)

    @property
    def variance(self) -> float:
        """Exact variance Σ_k k² P(k) (strictly below σ², CKS 2020 Proposition 5)."""
        return _discrete_gaussian_moments(self.sigma)[1]

    def logpmf(self, k: ArrayLike) -> NDArray[np.float64]:
        """log P(k) for integer ``k`` (any shape)."""
        kk = _check_integers(k).astype(np.float64)
        log_z = _discrete_gaussian_moments(self.sigma)[0]
        return np.asarray(-(kk**2) / (2.0 * self.sigma**2) - log_z, dtype=np.float64)

    def pmf(self, k: ArrayLike) -> NDArray[np.float64]:
        """P(k) = exp(-k²/(2σ²)) / Σ_j exp(-j²/(2σ²)) for integer ``k``."""
        return np.exp(self.logpmf(k))

    def sample(self, size: Size = 1, rng: RNGLike = None) -> NDArray[np.int64]:
        """Draw discrete Gaussian noise by rejection from the discrete Laplace.

        Vectorised form of Canonne, Kamath & Steinke (2020), Algorithm 3: with
        t = ⌊σ⌋ + 1, propose Y from the discrete Laplace with α = exp(-1/t) and
        accept with probability exp(-(|Y| - σ²/t)²/(2σ²)). Proposals are drawn
        in batches sized from the running acceptance rate (about 0.6-0.8), so
        10⁶ draws take well under a second.

        Notes
        -----
        The proposal is exact; the acceptance test compares a float64 uniform
        with a float64 probability, so the output distribution is exact up to
        double-precision rounding of the acceptance probabilities (CKS use exact
        rational Bernoulli(exp(-γ)) sampling for deployment against
        side-channel attacks; use a vetted library such as OpenDP there).

        Returns
        -------
        numpy.ndarray of int64, shape ``size``
        """
        shape = _as_size(size)
        gen = as_generator(rng)
        n = math.prod(shape)
        out = np.empty(n, dtype=np.int64)
        sigma2 = self.sigma**2
        t = math.floor(self.sigma) + 1
        alpha = math.exp(-1.0 / t)
        shift = sigma2 / t
        filled = 0
        rate = 0.5
        while filled < n:
            need = n - filled
            batch = int(need / rate * 1.1) + 64
            y = _two_sided_geometric(alpha, (batch,), gen)
            accept_prob = np.exp(-((np.abs(y) - shift) ** 2) / (2.0 * sigma2))
            accepted = y[gen.random(batch) < accept_prob]
            rate = max(accepted.size / batch, 0.05)
            take = min(accepted.size, need)
            out[filled : filled + take] = accepted[:take]
            filled += take
        return out.reshape(shape)

    def guarantee(self, unit: PrivacyUnit = "example", *, delta: float | None = None) -> Guarantee:
        """(ε, δ)-DP from ρ-zCDP, ρ = Δ2²/(2σ²) (see class Notes for the conversion).

        Raises
        ------
        ValueError
            If no δ is given and none was stored.
        """
        d = _resolve_delta(delta, self.delta)
        unit = _check_unit(unit)
        return Guarantee(
            epsilon=zcdp_to_approx_dp(self.rho, d),
            delta=d,
            unit=unit,
            statement=(
                f"discrete Gaussian noise with σ = {self.sigma:.6g} added to an integer query "
                f"with L2 sensitivity Δ2 = {self.l2_sensitivity:.6g}: ρ-zCDP with "
                f"ρ = {self.rho:.6g}, converted to (ε, δ) by Canonne-Kamath-Steinke Cor. 13"
            ),
        )
