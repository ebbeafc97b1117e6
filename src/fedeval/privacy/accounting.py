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
.. [5] V. Feldman and T. Zrnic, "Individual privacy accounting via a Rényi
   filter", NeurIPS 2021, Theorem 3.1 (a Rényi filter stays valid when each
   release, and its cost, is chosen after seeing the earlier ones).
.. [6] J. Whitehouse, A. Ramdas, R. Rogers and Z. S. Wu, "Fully-adaptive
   composition in differential privacy", ICML 2023 (zCDP filters; the
   fully adaptive setting these filters are for).
.. [7] R. Rogers, A. Roth, J. Ullman and S. Vadhan, "Privacy odometers and
   filters: pay-as-you-go composition", NeurIPS 2016 (basic composition as a
   filter).
.. [8] S. Meiser and E. Mohammadi, "Tight on budget? Tight bounds for r-fold
   approximate differential privacy", CCS 2018, and Y. Zhu, J. Dong and
   Y.-X. Wang, "Optimal accounting of differential privacy via
   characteristic function", AISTATS 2022 (privacy loss distributions, as
   implemented by dp-accounting's PLDAccountant).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fedeval.privacy.guarantee import Guarantee
from fedeval.validation import check_delta, check_epsilon, check_int_at_least, check_positive

__all__ = [
    "RDP_ORDERS",
    "TRACK_DELTA_SHARES",
    "FilterReading",
    "basic_composition",
    "calibrate_noise_multiplier",
    "filter_reading",
    "gaussian_rounds_epsilon",
    "gaussian_rounds_rdp",
    "pure_rdp",
    "quiet_dp_accounting",
    "rdp_conversion",
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
    from scipy.optimize import minimize_scalar

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
    from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon

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


@contextlib.contextmanager
def quiet_dp_accounting() -> Iterator[None]:
    """Silence dp-accounting's log line for every RDP order whose series does not converge.

    It then drops that order (its RDP counts as ∞), which only loosens ε.
    """
    logger = logging.getLogger("absl")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _rounds_event(noise_multiplier: float, rounds: int, sampling_rate: float) -> Any:
    from dp_accounting import GaussianDpEvent, PoissonSampledDpEvent, SelfComposedDpEvent

    gaussian = GaussianDpEvent(noise_multiplier)
    event = gaussian if sampling_rate == 1.0 else PoissonSampledDpEvent(sampling_rate, gaussian)
    return SelfComposedDpEvent(event, rounds)


def _rdp_rounds_epsilon(
    noise_multiplier: float,
    rounds: int,
    sampling_rate: float,
    delta: float,
    orders: Sequence[float] | None,
) -> float:
    from dp_accounting.rdp import RdpAccountant

    accountant = RdpAccountant() if orders is None else RdpAccountant(list(orders))
    with quiet_dp_accounting():
        accountant.compose(_rounds_event(noise_multiplier, rounds, sampling_rate))
        return float(accountant.get_epsilon(delta))


#: Value discretisation of the PLD accountant. Its estimates are pessimistic (an upper
#: bound on ε whatever the discretisation); 1e-3 agrees with 1e-4 to 4 digits on the
#: settings of the tests at a tenth of the time.
PLD_DISCRETIZATION = 1e-3

#: Above this RDP ε the PLD is not built: its support grows with the privacy loss (a tiny
#: noise multiplier asks for tens of GB), and such a guarantee is meaningless anyway.
PLD_MAX_EPSILON = 50.0


@functools.lru_cache(maxsize=64)
def _pld_rounds_epsilon(
    noise_multiplier: float, rounds: int, sampling_rate: float, delta: float
) -> float:
    """PLD's ε (cached: a pure function of public numbers; a calibration's last point
    is evaluated again for its receipt)."""
    from dp_accounting.pld import PLDAccountant

    accountant = PLDAccountant(value_discretization_interval=PLD_DISCRETIZATION)
    accountant.compose(_rounds_event(noise_multiplier, rounds, sampling_rate))
    return float(accountant.get_epsilon(delta))


def _gaussian_rounds_epsilon(
    noise_multiplier: float,
    rounds: int,
    sampling_rate: float,
    delta: float,
    orders: Sequence[float] | None,
) -> float:
    rdp = _rdp_rounds_epsilon(noise_multiplier, rounds, sampling_rate, delta, orders)
    if rdp > PLD_MAX_EPSILON:
        return rdp
    return min(rdp, _pld_rounds_epsilon(noise_multiplier, rounds, sampling_rate, delta))


def gaussian_rounds_rdp(
    noise_multiplier: float,
    rounds: int,
    sampling_rate: float,
    orders: Sequence[float] = (),
) -> NDArray[np.float64]:
    """Rényi DP ε(α) of ``rounds`` Poisson-subsampled Gaussian releases, at ``orders``.

    What a :class:`~fedeval.privacy.ledger.BudgetLedger` composes the rounds
    with inside a program (default orders :data:`RDP_ORDERS`); dp-accounting's
    ``RdpAccountant`` (Mironov, Talwar & Zhang 2019).
    """
    from dp_accounting.rdp import RdpAccountant

    z = check_positive(noise_multiplier, name="noise_multiplier")
    t = check_int_at_least(rounds, 1, name="rounds")
    q = _check_sampling_rate(sampling_rate)
    alphas = list(orders or RDP_ORDERS)
    accountant = RdpAccountant(alphas)
    with quiet_dp_accounting():
        accountant.compose(_rounds_event(z, t, q))
    # dp-accounting 0.6 keeps the composed curve here (pinned by pyproject.toml).
    return np.asarray(accountant._rdp, dtype=np.float64)


def gaussian_rounds_epsilon(
    noise_multiplier: float,
    rounds: int,
    sampling_rate: float,
    delta: float,
    *,
    orders: Sequence[float] | None = None,
) -> float:
    """ε after ``rounds`` Poisson-subsampled Gaussian releases: the tighter of PLD and RDP.

    Each round samples every client independently with probability
    ``sampling_rate``, clips each contribution to L2 norm C and adds
    N(0, (z·C)²) to the sum, z = ``noise_multiplier``. The composition
    ``SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(z)), rounds)``
    (plain ``GaussianDpEvent`` when q = 1, add/remove-one neighbouring relation)
    is accounted twice with dp-accounting 0.6: by its privacy loss
    distribution (``PLDAccountant``, pessimistic estimate; Meiser & Mohammadi
    2018, Zhu, Dong & Wang 2022) and by Rényi DP (``RdpAccountant``; Mironov,
    Talwar & Zhang 2019). Both are valid upper bounds, so the smaller one is
    returned; PLD is 0.6–0.95× RDP on typical settings, and RDP stays as the
    cross-check (and is what a program composes, :func:`gaussian_rounds_rdp`).

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

    ε is decreasing in z. First a bracket of relative width 1e-2 (or ``rtol``
    if larger) by bisection on log z under RDP at fedeval's 23 orders
    (:data:`RDP_ORDERS`, ~0.05 s an evaluation); then, inside it or below it,
    the root under the tighter of PLD and RDP at dp-accounting's orders
    (:func:`gaussian_rounds_epsilon`, the bound the receipt states) by a
    secant search in log–log with a probe just past each step
    (:func:`_falsi_in_logs`), to relative width max(``rtol``, 1e-3): about 6
    evaluations of the tight bound instead of ~30 of bisection. Inside the
    bracket, where PLD alone already meets ε the RDP at dp-accounting's orders
    is not computed (the minimum meets ε too, so every decision is the same).
    The upper end of the final bracket is returned, so the target is always
    met.

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
        Relative width of the final bracket (the PLD refinement stops at
        1e-3: its own discretisation is about that fine).
    orders : sequence of float, optional, keyword-only
        RDP orders.

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

    seen: dict[float, float] = {}  # the bracket's powers of two meet again (1 when z < 1)

    def rdp_eps(z: float) -> float:
        if z not in seen:
            seen[z] = _rdp_rounds_epsilon(z, t, q, d, RDP_ORDERS if orders is None else orders)
        return seen[z]

    # A bracket from RDP at fedeval's 23 orders (~0.07 s an evaluation).
    hi = 1.0
    while rdp_eps(hi) > eps:
        hi *= 2.0
        if hi > 1e6:
            raise ValueError(
                f"no noise multiplier <= 1e6 reaches epsilon={epsilon} at delta={delta}, "
                f"rounds={rounds}, sampling_rate={sampling_rate}"
            )
    lo = hi / 2.0
    while rdp_eps(lo) <= eps:
        hi = lo
        lo /= 2.0
        if lo < 1e-6:
            return hi
    while hi / lo - 1.0 > max(tol, _BRACKET_RTOL):
        mid = math.sqrt(lo * hi)
        if rdp_eps(mid) <= eps:
            hi = mid
        else:
            lo = mid

    def best_eps(z: float) -> float:
        return _gaussian_rounds_epsilon(z, t, q, d, orders)

    def pld_first(z: float) -> float:
        # PLD's ε where it meets the target (then so does the minimum), else the minimum.
        pld = _pld_rounds_epsilon(z, t, q, d)
        return pld if pld <= eps else min(pld, _rdp_rounds_epsilon(z, t, q, d, orders))

    # The tighter accountants (all of dp-accounting's orders, PLD) can only allow less noise: hi
    # meets ε under them too; the root is in [lo, hi] unless they let lo pass. At lo too PLD
    # goes first (see below; its loss is bounded by the bracket's RDP at lo).
    f_lo = (pld_first if rdp_eps(lo) <= PLD_MAX_EPSILON else best_eps)(lo)
    if f_lo > eps:
        a, f_a, b = lo, f_lo, hi
    else:
        a, b, f_b = hi * 0.5, lo, f_lo
        f_a = best_eps(a)
        if f_a <= eps:
            return a
    # Above a, the search evaluates pld_first: every decision f(z) <= ε is the one under
    # best_eps, and the RDP at dp-accounting's orders (0.1-0.2 s, most of a fresh search)
    # is skipped where PLD already meets ε; only a secant step may read PLD's value where
    # RDP's would be smaller still. Safe from the PLD's size: above a the loss is below
    # a's, whose PLD was built (its RDP was at most PLD_MAX_EPSILON when f_a is); at lo,
    # the bracket's RDP (fedeval's orders) bounds it.
    f = pld_first if f_a <= PLD_MAX_EPSILON else best_eps
    if b == hi:
        f_b = f(hi)
    return _falsi_in_logs(f, eps, a, f_a, b, f_b, max(tol, 1e-3))


#: Relative width of the cheap RDP bracket of :func:`calibrate_noise_multiplier`.
_BRACKET_RTOL = 1e-2


def _falsi_in_logs(
    f: Any, target: float, a: float, f_a: float, b: float, f_b: float, rtol: float
) -> float:
    """The smallest z in [a, b] with f(z) <= target, to relative width ``rtol``: b's side.

    f(a) > target >= f(b), f decreasing. log ε is close to linear in log z, so a
    secant step on g = log f − log target against log z, through the two
    latest points, lands near the root; the point a relative ``rtol``/2
    beyond it, on the far side, is evaluated next, so a good step closes the
    bracket at once (~4 evaluations in all, not the ~10 of bisection). A
    secant step outside the bracket is replaced by a geometric bisection, so
    the bracket always closes. The upper end is returned: f(b) <= target.
    """
    lt = math.log(target)
    xa, xb = math.log(a), math.log(b)
    ga, gb = math.log(f_a) - lt, math.log(max(f_b, 1e-300)) - lt
    last = [(xa, ga), (xb, gb)]
    nudge = 0.5 * math.log1p(rtol)

    def step(x: float) -> None:
        nonlocal xa, ga, xb, gb
        gx = math.log(max(f(math.exp(x)), 1e-300)) - lt
        if gx <= 0:
            xb, gb = x, gx
        else:
            xa, ga = x, gx
        last[:] = [last[-1], (x, gx)]

    for _ in range(100):
        if math.expm1(xb - xa) <= rtol:
            break
        (x1, g1), (x2, g2) = last
        x = x2 - g2 * (x2 - x1) / (g2 - g1) if g2 != g1 else math.nan
        if not xa + nudge / 4 < x < xb - nudge / 4:
            x = 0.5 * (xa + xb)
        step(x)
        if math.expm1(xb - xa) <= rtol:
            break
        # The far side of the new point, just beyond it: closes the bracket if the step was good.
        step(max(x - nudge, xa + nudge / 4) if x == xb else min(x + nudge, xb - nudge / 4))
    return math.exp(xb)


# --------------------------------------------------------------------------- filter
#: The Rényi orders α at which every release's cost is recorded and a program's
#: releases are composed (fixed in advance: the filter's validity needs it).
RDP_ORDERS: tuple[float, ...] = (
    1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0, 7.0, 8.0, 10.0, 12.0, 14.0, 16.0,
    20.0, 24.0, 32.0, 48.0, 64.0, 128.0, 256.0,
)  # fmt: skip

#: How a program's δ is shared among the filter's tracks (see :func:`filter_reading`):
#: basic composition of the releases' own (ε, δ); zCDP; Rényi DP (split over its orders).
TRACK_DELTA_SHARES: dict[str, float] = {"basic": 0.5, "zcdp": 0.45, "rdp": 0.05}


def pure_rdp(epsilon: float, orders: Sequence[float] = RDP_ORDERS) -> NDArray[np.float64]:
    """RDP of an ε-DP release at each order: min(ε, αε²/2).

    ε-DP bounds the Rényi divergence of every order by ε (D_∞ ≤ ε) and implies
    ε²/2-zCDP (Bun & Steinke 2016, Proposition 3.3).
    """
    a = np.asarray(orders, dtype=np.float64)
    return np.minimum(float(epsilon), a * float(epsilon) ** 2 / 2.0)


def rdp_conversion(
    orders: Sequence[float] | NDArray[np.float64], rdp: NDArray[np.float64], delta: float
) -> NDArray[np.float64]:
    """ε(α) of (ε, δ)-DP from RDP r(α) at each order (Canonne, Kamath & Steinke 2020, Prop. 12).

    ε = r + log(1 − 1/α) − (log δ + log α)/(α − 1). It rests on the pointwise
    bound (1 − e^(ε−ℓ))₊ ≤ (1/α)(1 − 1/α)^(α−1) e^((α−1)(ℓ−ε)) for every privacy
    loss ℓ, which is why it also holds on an event (the filter below uses that).
    """
    a = np.asarray(orders, dtype=np.float64)
    r = np.asarray(rdp, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        out = r + np.log1p(-1.0 / a) - (math.log(delta) + np.log(a)) / (a - 1.0)
    return np.where(np.isfinite(r), out, np.inf)


@dataclass(frozen=True)
class FilterReading:
    """What a program's releases have spent, read by :func:`filter_reading`.

    Attributes
    ----------
    epsilon : float
        The smallest total ε with which a filter of δ ``delta_total`` would
        have admitted every release so far (inf if none would).
    delta : float
        The δ that ε is stated at: the releases' own δ added up on the basic
        track (0 for pure releases), the program's δ on a Rényi track.
    track : str
        "basic" (basic composition; "pure" when every release is pure),
        "zcdp" or "rdp".
    """

    epsilon: float
    delta: float
    track: str


def filter_reading(
    *,
    basic_epsilon: float,
    basic_delta: float,
    rho: float,
    rdp: NDArray[np.float64],
    failure_delta: float,
    delta_total: float,
    orders: Sequence[float] = RDP_ORDERS,
) -> FilterReading:
    """The ε a program has spent, composed by a privacy filter with three tracks.

    Every release ``i`` states its own (ε_i, δ_i) and, where it has one, a
    Rényi description: ρ_i if it is ρ_i-zCDP (pure releases: ε_i²/2, Bun &
    Steinke 2016, Prop. 3.3) and its Rényi curve r_i(α) at ``orders`` (pure
    releases: min(ε_i, αε_i²/2)). A release that is pure except on a failure
    event of known probability (a raw ``(ε, δ)`` ledger charge, a noise share
    clipped in transport) enters the Rényi tracks as pure with that failure
    probability union-bounded apart. With D = ``delta_total`` split as
    :data:`TRACK_DELTA_SHARES`, the program is admitted at total ε while at
    least one track holds:

    * basic: Σ ε_i ≤ ε and Σ δ_i ≤ D/2 (Rogers et al. 2016; δ = 0 when every
      release is pure, which is then plain pure composition);
    * zCDP: failures + δ_zCDP(Σ ρ_i → ε) ≤ 0.45 D (Bun & Steinke 2016;
      Whitehouse et al. 2023);
    * RDP: for some α, failures + δ_α(Σ r_i(α) → ε) ≤ 0.05 D / |orders|
      (Feldman & Zrnic 2021).

    Validity when each release, and so its cost, is chosen after seeing the
    earlier ones. Let P and Q be the laws of the whole transcript on two
    neighbouring datasets, and A_k the event that track k holds at the end;
    the A_k cover every admitted transcript, so the program's δ at ε is
    Σ_x (P(x) − e^ε Q(x))₊ ≤ Σ_k Σ_{x ∈ A_k} (P(x) − e^ε Q(x))₊. A transcript
    in A_k never left track k's budget (the sums only grow), so on A_k, P and
    Q equal the laws of the same interaction stopped by track k's own filter,
    and the k-th term is at most that filter's δ: D/2 for basic composition
    (Rogers et al. 2016), and for a Rényi track the share, because
    exp((α−1)(L_t − Σ_{i≤t} r_i(α))) is a non-negative supermartingale
    (Feldman & Zrnic 2021, Lemma 3.2) and the conversion behind
    :func:`rdp_conversion` rests on a pointwise bound. The zCDP condition
    bounds the Rényi sum at every order at once, so that track needs no split
    over orders; the RDP track (for curves zCDP does not describe, such as
    subsampled Gaussian rounds) pays a union over its orders. The basic
    track's term is 0 when every release is pure (the loss is then at most
    Σ ε_i on every transcript).

    Parameters
    ----------
    basic_epsilon, basic_delta : float
        Σ ε_i and Σ δ_i of the releases' own guarantees.
    rho : float
        Σ ρ_i (inf if a release has no zCDP bound).
    rdp : ndarray
        Σ r_i(α) at ``orders``.
    failure_delta : float
        Σ of the failure probabilities the Rényi tracks union-bound apart.
    delta_total : float
        The program's δ (0: only pure releases fit).
    orders : sequence of float

    Returns
    -------
    FilterReading
    """
    shares = TRACK_DELTA_SHARES
    best = FilterReading(math.inf, 0.0, "basic")
    if basic_delta == 0.0:
        best = FilterReading(basic_epsilon, 0.0, "pure")
    elif basic_delta <= shares["basic"] * delta_total * (1 + 1e-9):
        best = FilterReading(basic_epsilon, basic_delta, "basic")
    if delta_total <= 0:
        return best
    spare_z = shares["zcdp"] * delta_total - failure_delta
    if math.isfinite(rho) and spare_z > 0:
        eps_z = 0.0 if rho == 0 else zcdp_to_approx_dp(rho, spare_z)
        if eps_z < best.epsilon:
            best = FilterReading(eps_z, delta_total, "zcdp")
    spare_r = shares["rdp"] * delta_total / len(orders) - failure_delta
    if np.any(np.isfinite(rdp)) and spare_r > 0:
        eps_r = max(float(np.min(rdp_conversion(orders, rdp, spare_r))), 0.0)
        if eps_r < best.epsilon:
            best = FilterReading(eps_r, delta_total, "rdp")
    return best
