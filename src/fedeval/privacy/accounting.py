"""Privacy accounting: pure composition and conversion maths (no state).

The stateful budget ledger lives in :mod:`fedeval.privacy.ledger`; this module
only computes numbers. Where dp-accounting 0.6 implements a computation
(Rényi-DP accounting of the Poisson-subsampled Gaussian, the RDP → (ε, δ)
conversion) it is used rather than re-derived.

References
----------
.. [1] C. Dwork and A. Roth, "The algorithmic foundations of differential
   privacy", 2014, Theorem 3.16 (basic composition).
.. [2] M. Bun and T. Steinke, "Concentrated differential privacy:
   simplifications, extensions, and lower bounds", TCC 2016, Proposition 1.3.
.. [3] C. Canonne, G. Kamath and T. Steinke, "The discrete Gaussian for
   differential privacy", NeurIPS 2020 (arXiv:2004.00010v4), Proposition 12 and
   Corollary 13 (tighter RDP/zCDP → (ε, δ) conversion; also Asoodeh et al. 2020).
.. [4] I. Mironov, K. Talwar and L. Zhang, "Rényi differential privacy of the
   sampled Gaussian mechanism", 2019 (implemented by dp-accounting's
   RdpAccountant).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from dp_accounting import GaussianDpEvent, PoissonSampledDpEvent, SelfComposedDpEvent
from dp_accounting.rdp import RdpAccountant
from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon
from scipy.optimize import minimize_scalar

from fedeval.privacy.guarantee import Guarantee
from fedeval.validation import check_delta, check_epsilon, check_int_at_least, check_positive

__all__ = [
    "basic_composition",
    "calibrate_noise_multiplier",
    "gaussian_rounds_epsilon",
    "rdp_to_approx_dp",
    "zcdp_to_approx_dp",
]


def basic_composition(
    guarantees: Iterable[tuple[float, float] | Guarantee],
) -> tuple[float, float]:
    """(Σ ε_i, Σ δ_i): the basic composition theorem.

    Parameters
    ----------
    guarantees : iterable of (epsilon, delta) pairs or Guarantee
        The releases to compose (adaptively chosen releases are allowed).

    Returns
    -------
    (epsilon, delta) : tuple of float
        δ is capped at 1 (a guarantee with δ ≥ 1 is vacuous anyway).

    Raises
    ------
    ValueError, TypeError
        If an ε is negative or NaN, or a δ lies outside [0, 1].

    References
    ----------
    .. [1] Dwork & Roth (2014), Theorem 3.16.
    """
    eps_total = 0.0
    delta_total = 0.0
    for i, g in enumerate(guarantees):
        if isinstance(g, Guarantee):
            eps, delta = g.epsilon, g.delta
        else:
            try:
                eps, delta = g
            except (TypeError, ValueError):
                raise TypeError(
                    f"guarantees[{i}] must be an (epsilon, delta) pair or a Guarantee, got {g!r}"
                ) from None
        eps_f = _as_float(eps, name=f"guarantees[{i}] epsilon")
        delta_f = _as_float(delta, name=f"guarantees[{i}] delta")
        if math.isnan(eps_f) or eps_f < 0:
            raise ValueError(f"guarantees[{i}] epsilon must be >= 0, got {eps!r}")
        if not 0.0 <= delta_f <= 1.0:
            raise ValueError(f"guarantees[{i}] delta must lie in [0, 1], got {delta!r}")
        eps_total += eps_f
        delta_total += delta_f
    return eps_total, min(delta_total, 1.0)


def _as_float(value: Any, *, name: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number, got {value!r}") from None


def zcdp_to_approx_dp(rho: float, delta: float) -> float:
    """ε such that ρ-zCDP implies (ε, δ)-DP.

    Uses the conversion of Canonne, Kamath & Steinke (2020, Corollary 13): since
    ρ-zCDP means D_α ≤ ρα for all α > 1,

        ε = inf_{α>1}  ρα + log(1 - 1/α) - log(δ·α)/(α - 1),

    minimised numerically over α, and never worse than the classic
    ε = ρ + 2·sqrt(ρ·log(1/δ)) of Bun & Steinke (2016, Proposition 1.3), which is
    also computed and the smaller value returned.

    Parameters
    ----------
    rho : float
        ρ ≥ 0 of ρ-zCDP.
    delta : float
        Target δ in (0, 1).

    Returns
    -------
    float
        ε ≥ 0.

    Raises
    ------
    ValueError, TypeError
        If ρ is negative or not finite, or δ is not in (0, 1).
    """
    rho_f = _as_float(rho, name="rho")
    if not math.isfinite(rho_f) or rho_f < 0:
        raise ValueError(f"rho must be a finite number >= 0, got {rho!r}")
    delta_f = check_delta(delta)
    if rho_f == 0.0:
        return 0.0
    log_inv_delta = -math.log(delta_f)
    classic = rho_f + 2.0 * math.sqrt(rho_f * log_inv_delta)

    def eps_at(log_am1: float) -> float:
        a = 1.0 + math.exp(log_am1)
        return rho_f * a + math.log1p(-1.0 / a) - (math.log(delta_f) + math.log(a)) / (a - 1.0)

    # Coarse grid over log(α-1) to land in the right basin, then a bounded refine.
    grid = np.linspace(-12.0, 16.0, 281)
    values = np.array([eps_at(float(x)) for x in grid])
    i = int(np.argmin(values))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    res = minimize_scalar(eps_at, bounds=(lo, hi), method="bounded", options={"xatol": 1e-10})
    tight = min(float(values[i]), float(res.fun))
    return max(0.0, min(classic, tight))


def rdp_to_approx_dp(orders: Sequence[float], rdp: Sequence[float], delta: float) -> float:
    """ε of (ε, δ)-DP from Rényi-DP values ``rdp`` at ``orders``.

    Delegates to dp-accounting 0.6 (``rdp_privacy_accountant.compute_epsilon``),
    which minimises over the given orders α the conversion
    ε = r(α) + log(1 - 1/α) - log(δ·α)/(α - 1) (Canonne, Kamath & Steinke 2020,
    Proposition 12; Asoodeh et al. 2020), with the KL bound for tiny r.

    Parameters
    ----------
    orders : sequence of float
        RDP orders α > 1.
    rdp : sequence of float
        RDP ε(α) at each order (may be inf).
    delta : float
        Target δ in (0, 1).
    """
    delta_f = check_delta(delta)
    if len(orders) != len(rdp) or len(orders) == 0:
        raise ValueError(
            f"orders and rdp must be non-empty and of equal length, got {len(orders)} and {len(rdp)}"
        )
    eps, _ = compute_epsilon(list(orders), list(rdp), delta_f)
    return float(eps)


def _check_sampling_rate(sampling_rate: Any) -> float:
    try:
        q = float(sampling_rate)
    except (TypeError, ValueError):
        raise TypeError(
            f"sampling_rate must be a number in (0, 1], got {sampling_rate!r}"
        ) from None
    if not 0.0 < q <= 1.0:
        raise ValueError(f"sampling_rate must lie in (0, 1], got {sampling_rate!r}")
    return q


def _gaussian_rounds_epsilon(
    noise_multiplier: float,
    rounds: int,
    sampling_rate: float,
    delta: float,
    orders: Sequence[float] | None,
) -> float:
    gaussian = GaussianDpEvent(noise_multiplier)
    event = gaussian if sampling_rate == 1.0 else PoissonSampledDpEvent(sampling_rate, gaussian)
    accountant = RdpAccountant() if orders is None else RdpAccountant(list(orders))
    accountant.compose(SelfComposedDpEvent(event, rounds))
    return float(accountant.get_epsilon(delta))


def gaussian_rounds_epsilon(
    noise_multiplier: float,
    rounds: int,
    sampling_rate: float,
    delta: float,
    *,
    orders: Sequence[float] | None = None,
) -> float:
    """ε after ``rounds`` Poisson-subsampled Gaussian releases (RDP accounting).

    Each round samples every client independently with probability
    ``sampling_rate``, clips each contribution to L2 norm C and adds
    N(0, (z·C)²) to the sum, z = ``noise_multiplier``. Composed with
    dp-accounting 0.6's ``RdpAccountant`` on
    ``SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(z)), rounds)``
    (plain ``GaussianDpEvent`` when q = 1), add/remove-one neighbouring relation.

    Parameters
    ----------
    noise_multiplier : float
        z > 0 (noise standard deviation over L2 sensitivity).
    rounds : int
        Number of rounds T ≥ 1.
    sampling_rate : float
        Poisson sampling probability q in (0, 1].
    delta : float
        Target δ in (0, 1).
    orders : sequence of float, optional, keyword-only
        RDP orders; dp-accounting's defaults otherwise.

    Returns
    -------
    float
        ε of the composed (ε, δ)-DP guarantee.

    References
    ----------
    .. [1] Mironov, Talwar & Zhang (2019), RDP of the sampled Gaussian mechanism.
    """
    z = check_positive(noise_multiplier, name="noise_multiplier")
    t = check_int_at_least(rounds, 1, name="rounds")
    q = _check_sampling_rate(sampling_rate)
    d = check_delta(delta)
    return _gaussian_rounds_epsilon(z, t, q, d, orders)


def calibrate_noise_multiplier(
    epsilon: float,
    delta: float,
    rounds: int,
    sampling_rate: float,
    *,
    rtol: float = 1e-6,
    orders: Sequence[float] | None = None,
) -> float:
    """Smallest noise multiplier z with ``gaussian_rounds_epsilon(z, ...) <= epsilon``.

    Bisection on log z (ε is decreasing in z) to relative tolerance ``rtol``; the
    upper end of the final bracket is returned, so the target is always met.

    Parameters
    ----------
    epsilon : float
        Target ε > 0.
    delta : float
        Target δ in (0, 1).
    rounds : int
        Number of rounds T ≥ 1.
    sampling_rate : float
        Poisson sampling probability q in (0, 1].
    rtol : float, default 1e-6, keyword-only
        Relative width of the final bracket.
    orders : sequence of float, optional, keyword-only
        RDP orders passed to :func:`gaussian_rounds_epsilon`.

    Raises
    ------
    ValueError
        On invalid parameters, or if no z ≤ 1e6 reaches the target.
    """
    eps = check_epsilon(epsilon)
    d = check_delta(delta)
    t = check_int_at_least(rounds, 1, name="rounds")
    q = _check_sampling_rate(sampling_rate)
    tol = check_positive(rtol, name="rtol")

    def f(z: float) -> float:
        return _gaussian_rounds_epsilon(z, t, q, d, orders)

    hi = 1.0
    while f(hi) > eps:
        hi *= 2.0
        if hi > 1e6:
            raise ValueError(
                f"no noise multiplier <= 1e6 reaches epsilon={epsilon} at delta={delta}, "
                f"rounds={rounds}, sampling_rate={sampling_rate}"
            )
    lo = hi / 2.0
    while f(lo) <= eps:
        hi = lo
        lo /= 2.0
        if lo < 1e-6:
            return hi
    while hi / lo - 1.0 > tol:
        mid = math.sqrt(lo * hi)
        if f(mid) <= eps:
            hi = mid
        else:
            lo = mid
    return hi
