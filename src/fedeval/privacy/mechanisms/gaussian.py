"""Continuous Gaussian noise, calibrated exactly (analytic Gaussian mechanism).

Real-valued releases (scaler parameters in federated calibration) get continuous
Gaussian noise, calibrated exactly with the analytic Gaussian mechanism of Balle
& Wang (2018). Integer releases use the discrete Gaussian
(:mod:`fedeval.privacy.mechanisms.discrete_gaussian`).

References
----------
.. [1] B. Balle and Y.-X. Wang, "Improving the Gaussian mechanism for
   differential privacy: analytical calibration and optimal denoising", ICML
   2018, Theorem 8 and Algorithm 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import brentq
from scipy.special import log_ndtr

from fedeval.privacy.guarantee import Guarantee, PrivacyUnit
from fedeval.privacy.mechanisms.common import Size, as_size, check_unit
from fedeval.randomness import RNGLike, as_generator
from fedeval.validation import check_delta, check_epsilon, check_positive

__all__ = ["Gaussian", "resolve_delta", "sample_gaussian"]


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


def resolve_delta(delta: float | None, stored: float | None) -> float:
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
        return as_generator(rng).normal(0.0, self.sigma, size=as_size(size))

    def guarantee(self, unit: PrivacyUnit = "example", *, delta: float | None = None) -> Guarantee:
        """(ε, δ)-DP with the exact ε for ``delta`` (or the stored δ).

        Raises
        ------
        ValueError
            If no δ is given and none was stored.
        """
        d = resolve_delta(delta, self.delta)
        unit = check_unit(unit)
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


def sample_gaussian(sigma: ArrayLike, size: Size, rng: np.random.Generator) -> NDArray[np.float64]:
    """N(0, σ_i²) draws with a per-entry σ (float64), for the party that adds all the noise."""
    shape = as_size(size)
    return np.asarray(rng.normal(0.0, np.broadcast_to(sigma, shape), size=shape))
