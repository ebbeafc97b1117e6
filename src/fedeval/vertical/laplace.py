"""FedAUC_Lap: Laplace or Gaussian noise on the local rank sums and counts (Sun et al. 2023, §5).

Each client k perturbs localSum_k = Σ r_i y_i and localP_k = Σ y_i before
sending them. One label change moves localSum_k by its rank r_i and localP_k by
one, so (label DP, ranks public):

* ``"fixed"`` allocation (§5.2): localSum'_k = localSum_k + Lap(Δ_k/(αε)) and
  localP'_k = localP_k + Lap(1/((1-α)ε)), with Δ_k the client's largest rank
  (LocalLaplace) or M - 1 for every client (GlobalLaplace, Appendix N).
* ``"orthogonal"`` (§5.3): split the rank vector r = r̄_k·1 + v'_k with v'_k ⟂ 1,
  so localSum_k = r̄_k·localP_k + ⟨v'_k, y⟩. Release localP'_k = localP_k +
  Lap(1/(βε)) and ⟨v'_k, y⟩ + Lap(‖v'_k‖∞/((1-β)ε)); localSum'_k =
  r̄_k·localP'_k + (the noisy ⟨v'_k, y⟩) is post-processing. One β for all clients.
* ``"adaptive"`` (§5.3): the orthogonal release with a per-client β_k chosen to
  minimise Var(localSum'_k) = 2 r̄_k²/(β ε)² + 2‖v'_k‖∞²/((1-β)ε)², i.e.
  β_k = r̄_k^{2/3} / (r̄_k^{2/3} + ‖v'_k‖∞^{2/3}).

Gaussian variant: the pair is released with independent Gaussian noise and
calibrated *jointly* with the analytic Gaussian mechanism: if σ₁ (unit L2
sensitivity) is the noise for (ε, δ), the split α (or β) divides the squared
sensitivity budget 1/σ₁², e.g. σ_sum = Δ_k σ₁/√α and σ_pos = σ₁/√(1-α), so the
joint L2 sensitivity sqrt(Δ_k²/σ_sum² + 1/σ_pos²) is exactly 1/σ₁. The adaptive
β_k then is r̄_k/(r̄_k + ‖v'_k‖∞).

Variance
--------
Server-side, AUC - 1/2 = (globalSum - (M-1)/2 · P̄) / (P̄ N̄). The delta method
gives, with g = (M-1)/2 + (A - 1/2)(N - P), a_k the weight of the count noise
in localSum'_k (0 for ``"fixed"``, r̄_k otherwise) and V the noise variances,

    Var(AUC) ≈ Σ_k [(a_k - g)² V_pos,k + V_sum,k] / (P N)².

With exact counts (the paper's Appendix N/O assumption) g drops out, which for
one example per client gives eq. (8) (GlobalLaplace) and eq. (9) (LocalLaplace).
The paper's adaptive rule minimises Σ_k [a_k² V_pos,k + V_sum,k] instead, i.e.
it weighs the count noise by r̄_k rather than by r̄_k - g; this is why a
well-tuned common β can beat it when clients' mean ranks sit near g (IID).

Privacy note: this uses continuous Laplace/Gaussian noise, as the paper does;
floating-point sampling leaks through low-order bits (Mironov 2012), so this
is a faithful research implementation, not a hardened deployment sampler.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal, get_args

import numpy as np
from numpy.typing import ArrayLike, NDArray

from fedeval.privacy.guarantee import Guarantee
from fedeval.privacy.mechanisms.gaussian import Gaussian
from fedeval.randomness import RNGLike, as_generator
from fedeval.validation import (
    check_binary_labels,
    check_delta,
    check_epsilon,
    check_int_at_least,
    check_positive,
    check_probability,
)
from fedeval.vertical.protocol import LocalStatistics, RankProtocol, _local_statistics

__all__ = [
    "Allocation",
    "Noise",
    "NoisePlan",
    "Sensitivity",
    "adaptive_beta",
    "global_laplace_variance_eq8",
    "laplace_variance_delta",
    "local_laplace_variance_eq9",
    "noise_plan",
    "release_local_statistics",
]

Noise = Literal["laplace", "gaussian"]
Sensitivity = Literal["local", "global"]
Allocation = Literal["fixed", "orthogonal", "adaptive"]


def adaptive_beta(
    mean_rank: ArrayLike, spread: ArrayLike, *, noise: Noise = "laplace"
) -> NDArray[np.float64]:
    """Per-client share β_k of ε spent on localP_k that minimises Var(localSum'_k) (§5.3).

    Parameters
    ----------
    mean_rank : array_like, shape (K,)
        r̄_k = ‖u'_k‖∞, the coefficient of the all-ones component.
    spread : array_like, shape (K,)
        ‖v'_k‖∞ = max_i |r_i - r̄_k|.
    noise : {"laplace", "gaussian"}
        Laplace: minimise a²/β² + b²/(1-β)² → β = a^{2/3}/(a^{2/3} + b^{2/3}).
        Gaussian (squared-sensitivity split): minimise a²/β + b²/(1-β) → β = a/(a + b).

    Returns
    -------
    ndarray of float64, shape (K,)
        β_k in (0, 1]; β_k = 1 when ‖v'_k‖∞ = 0 (all ranks equal, e.g. one
        example), where localSum_k = r̄_k·localP_k needs no second release.

    References
    ----------
    .. [1] Sun et al. (2023), §5.3 (adaptive allocation of the DP budget).
    """
    a = np.abs(np.asarray(mean_rank, dtype=np.float64))
    b = np.abs(np.asarray(spread, dtype=np.float64))
    if noise not in get_args(Noise):
        raise ValueError(f"noise must be one of {get_args(Noise)}, got {noise!r}")
    power = 2.0 / 3.0 if noise == "laplace" else 1.0
    ap, bp = a**power, b**power
    with np.errstate(divide="ignore", invalid="ignore"):
        beta = np.where(b > 0, ap / (ap + bp), 1.0)
    return np.asarray(beta, dtype=np.float64)


@dataclass(frozen=True, eq=False)
class NoisePlan:
    """Per-client noise of a FedAUC_Lap release; the same for the faithful and fast paths.

    Client k releases localP'_k = localP_k + s1_k and
    localSum'_k = localSum_k + pos_weight_k · s1_k + s2_k, where s1_k and s2_k
    are independent zero-mean Laplace (scale = b) or Gaussian (scale = σ) draws.

    Attributes
    ----------
    noise : {"laplace", "gaussian"}
    sensitivity : {"local", "global"}
    allocation : {"fixed", "orthogonal", "adaptive"}
    epsilon : float
    delta : float
        0 for Laplace.
    alpha : float or None
        Share of the budget on localSum (``"fixed"``).
    beta : float or None
        Common share on localP (``"orthogonal"``).
    client_beta : ndarray or None, shape (K,)
        Share on localP per client (``"orthogonal"`` and ``"adaptive"``).
    pos_scale, sum_scale : ndarray of float64, shape (K,)
        Scales of s1 (on the count) and s2 (on localSum or ⟨v', y⟩).
    pos_weight : ndarray of float64, shape (K,)
        0 for ``"fixed"``, r̄_k for the orthogonal decomposition.
    sum_sensitivity : ndarray of float64, shape (K,)
        Δ_k of the quantity s2 protects (largest rank, M - 1, or ‖v'_k‖∞).
    """

    noise: Noise
    sensitivity: Sensitivity
    allocation: Allocation
    epsilon: float
    delta: float
    alpha: float | None
    beta: float | None
    client_beta: NDArray[np.float64] | None = field(repr=False)
    pos_scale: NDArray[np.float64] = field(repr=False)
    sum_scale: NDArray[np.float64] = field(repr=False)
    pos_weight: NDArray[np.float64] = field(repr=False)
    sum_sensitivity: NDArray[np.float64] = field(repr=False)

    @property
    def pos_variance(self) -> NDArray[np.float64]:
        """Var(s1_k): 2b² (Laplace) or σ² (Gaussian)."""
        f = 2.0 if self.noise == "laplace" else 1.0
        return f * self.pos_scale**2

    @property
    def sum_variance(self) -> NDArray[np.float64]:
        """Var(s2_k)."""
        f = 2.0 if self.noise == "laplace" else 1.0
        return f * self.sum_scale**2

    def guarantee(self) -> Guarantee:
        """The (ε, δ)-LabelDP guarantee of the release, with a checkable statement."""
        name = "Laplace" if self.noise == "laplace" else "Gaussian (analytic calibration)"
        comp = (
            "sequential composition of the two releases"
            if self.noise == "laplace"
            else "shares split 1/sigma^2 of the unit-sensitivity calibration, so the pair's "
            "joint L2 sensitivity in noise units equals the calibrated one"
        )
        if self.allocation == "fixed":
            sens = "Delta_k = its largest rank" if self.sensitivity == "local" else "M - 1"
            what = (
                f"each label party adds {name} noise to localSum_k calibrated to sensitivity "
                f"{sens} with budget share alpha={self.alpha:.4g}, and to localP_k "
                f"(sensitivity 1) with share {1 - (self.alpha or 0.0):.4g}"
            )
        else:
            share = (
                f"beta={self.beta:.4g}"
                if self.allocation == "orthogonal"
                else "a per-party share beta_k minimising Var(localSum'_k)"
            )
            what = (
                f"each label party adds {name} noise to localP_k (sensitivity 1) with {share} "
                "and to <v'_k, y> (sensitivity max|v'_k|, v'_k = ranks minus their mean) with "
                "the rest; localSum'_k = mean rank * localP'_k + noisy <v'_k, y> is "
                "post-processing"
            )
        return Guarantee(
            epsilon=self.epsilon,
            delta=self.delta,
            unit="label",
            statement=(
                f"{what}; one label changes localSum_k by its rank and localP_k by 1 ({comp}); "
                "parties hold disjoint examples (parallel composition); ranks depend on "
                "scores only"
            ),
        )


def noise_plan(
    protocol: RankProtocol,
    *,
    epsilon: float,
    noise: Noise = "laplace",
    sensitivity: Sensitivity = "local",
    allocation: Allocation = "fixed",
    alpha: float = 0.5,
    beta: float = 0.5,
    delta: float | None = None,
) -> NoisePlan:
    """Work out every client's noise scales for FedAUC_Lap (label-independent).

    Parameters
    ----------
    protocol : RankProtocol
        Ranks and client membership (public).
    epsilon : float
        Total ε > 0 per client release.
    noise : {"laplace", "gaussian"}
    sensitivity : {"local", "global"}
        Δ_k = the client's largest rank (LocalLaplace, §5.2) or M - 1
        (GlobalLaplace, Appendix N; only with ``allocation="fixed"``).
    allocation : {"fixed", "orthogonal", "adaptive"}
        See the module docstring.
    alpha : float, default 0.5
        ε_localSum = αε, ε_localP = (1-α)ε for ``"fixed"``; in (0, 1).
    beta : float, default 0.5
        Share on localP for ``"orthogonal"``; in (0, 1).
    delta : float, optional
        Required for Gaussian noise, in (0, 1); must be None for Laplace.

    Returns
    -------
    NoisePlan

    Raises
    ------
    ValueError, TypeError
        On ε ≤ 0, α or β outside (0, 1), a missing or superfluous δ, unknown
        options, or global sensitivity with a non-fixed allocation.

    References
    ----------
    .. [1] Sun et al. (2023), §5.2 (LocalLaplace), §5.3 (orthogonal
       decomposition, adaptive β), Appendix N (GlobalLaplace).
    .. [2] Balle & Wang (2018), Theorem 8 (analytic Gaussian mechanism).
    """
    eps = check_epsilon(epsilon)
    if noise not in get_args(Noise):
        raise ValueError(f"noise must be one of {get_args(Noise)}, got {noise!r}")
    if sensitivity not in get_args(Sensitivity):
        raise ValueError(f"sensitivity must be one of {get_args(Sensitivity)}, got {sensitivity!r}")
    if allocation not in get_args(Allocation):
        raise ValueError(f"allocation must be one of {get_args(Allocation)}, got {allocation!r}")
    if sensitivity == "global" and allocation != "fixed":
        raise ValueError(
            f"allocation={allocation!r} needs the clients' own ranks; the global-sensitivity "
            "baseline (Appendix N) supports allocation='fixed' only"
        )
    if noise == "gaussian":
        if delta is None:
            raise ValueError("Gaussian noise needs delta in (0, 1); got delta=None")
        d = check_delta(delta)
        unit_sigma = Gaussian.calibrate(eps, d).noise_multiplier
    else:
        if delta not in (None, 0, 0.0):
            raise ValueError(f"Laplace noise is pure ε-DP; delta must be None, got {delta!r}")
        d = 0.0
        unit_sigma = math.nan

    k = protocol.n_clients
    if allocation == "fixed":
        a = check_probability(alpha, name="alpha", open_high=True)
        if sensitivity == "local":
            sens = protocol.max_rank.copy()
        else:
            sens = np.full(k, protocol.n_examples - 1.0)
        if noise == "laplace":
            pos_scale = np.full(k, 1.0 / ((1.0 - a) * eps))
            sum_scale = sens / (a * eps)
        else:
            pos_scale = np.full(k, unit_sigma / math.sqrt(1.0 - a))
            sum_scale = sens * unit_sigma / math.sqrt(a)
        return NoisePlan(
            noise=noise,
            sensitivity=sensitivity,
            allocation=allocation,
            epsilon=eps,
            delta=d,
            alpha=a,
            beta=None,
            client_beta=None,
            pos_scale=pos_scale,
            sum_scale=sum_scale,
            pos_weight=np.zeros(k),
            sum_sensitivity=sens,
        )

    spread = protocol.spread
    if allocation == "orthogonal":
        common = check_probability(beta, name="beta", open_high=True)
        client_beta = np.full(k, common)
    else:
        common = None
        client_beta = adaptive_beta(protocol.mean_rank, spread, noise=noise)
    rest = 1.0 - client_beta
    with np.errstate(divide="ignore", invalid="ignore"):
        if noise == "laplace":
            pos_scale = 1.0 / (client_beta * eps)
            sum_scale = np.where(spread > 0, spread / (rest * eps), 0.0)
        else:
            pos_scale = unit_sigma / np.sqrt(client_beta)
            sum_scale = np.where(spread > 0, spread * unit_sigma / np.sqrt(rest), 0.0)
    return NoisePlan(
        noise=noise,
        sensitivity=sensitivity,
        allocation=allocation,
        epsilon=eps,
        delta=d,
        alpha=None,
        beta=common,
        client_beta=client_beta,
        pos_scale=np.asarray(pos_scale, dtype=np.float64),
        sum_scale=np.asarray(sum_scale, dtype=np.float64),
        pos_weight=protocol.mean_rank.copy(),
        sum_sensitivity=spread,
    )


def _draw(
    scale: NDArray[np.float64], noise: Noise, rng: np.random.Generator
) -> NDArray[np.float64]:
    if noise == "laplace":
        return rng.laplace(0.0, scale)
    return rng.normal(0.0, scale)


def release_local_statistics(
    protocol: RankProtocol,
    labels: ArrayLike,
    plan: NoisePlan,
    *,
    rng: RNGLike = None,
) -> LocalStatistics:
    """Step 3 of FedAUC_Lap for every client: the noisy (localSum'_k, localP'_k).

    This is the faithful path: every client draws its own noise and, for the
    orthogonal allocations, releases localP'_k and ⟨v'_k, y⟩ + noise separately,
    from which localSum'_k = r̄_k·localP'_k + (noisy ⟨v'_k, y⟩) is rebuilt.
    Vectorised over clients (no Python loop).

    Parameters
    ----------
    protocol : RankProtocol
    labels : array_like of {0, 1}, shape (M,)
    plan : NoisePlan
        From :func:`noise_plan` on the same ``protocol``.
    rng : int, Generator or None

    Returns
    -------
    LocalStatistics
        The noisy messages; ``.auc()`` evaluates eq. (1) as in Algorithm 4.

    Raises
    ------
    ValueError, TypeError
        If labels are not 0/1, have the wrong length, or ``plan`` has another
        number of clients.

    Notes
    -----
    Privacy: see :meth:`NoisePlan.guarantee`.

    References
    ----------
    .. [1] Sun et al. (2023), Algorithm 4, §5.2-5.3.
    """
    y = check_binary_labels(labels)
    if y.shape[0] != protocol.n_examples:
        raise ValueError(
            f"labels has {y.shape[0]} entries but the protocol ranks {protocol.n_examples} examples"
        )
    if plan.pos_scale.shape[0] != protocol.n_clients:
        raise ValueError(
            f"plan is for {plan.pos_scale.shape[0]} clients, protocol has {protocol.n_clients}"
        )
    gen = as_generator(rng)
    exact = _local_statistics(protocol, y)
    s1 = _draw(plan.pos_scale, plan.noise, gen)
    s2 = _draw(plan.sum_scale, plan.noise, gen)
    local_pos = exact.local_pos + s1
    if plan.allocation == "fixed":
        local_sum = exact.local_sum + s2
    else:
        centred = protocol.ranks - protocol.mean_rank[protocol.client_index]
        v_dot_y = np.bincount(
            protocol.client_index, weights=centred * y, minlength=protocol.n_clients
        )
        local_sum = protocol.mean_rank * local_pos + v_dot_y + s2
    return LocalStatistics(local_sum=local_sum, local_pos=local_pos, counts=protocol.counts)


def laplace_variance_delta(
    protocol: RankProtocol,
    plan: NoisePlan,
    *,
    auc: float,
    n_pos: float,
    counts_exact: bool = False,
) -> float:
    """Delta-method variance of the FedAUC_Lap estimate (Laplace or Gaussian).

    Var(AUC) ≈ Σ_k [(a_k - g)² V_pos,k + V_sum,k] / (P N)², g = (M-1)/2 + (A - 1/2)(N - P).

    Parameters
    ----------
    protocol : RankProtocol
    plan : NoisePlan
    auc : float
        A (true, or the estimate for a plug-in standard error).
    n_pos : float
        P (true, or the released P̄).
    counts_exact : bool, default False
        Take P and N as exact (the paper's simplifying assumption in Appendices
        N and O): then g is dropped and only the noise in localSum' counts.

    Returns
    -------
    float
        Exact (not approximate) when ``counts_exact`` is True; otherwise
        first-order in the noise of P̄.

    Raises
    ------
    ValueError
        If P is not strictly between 0 and M.

    References
    ----------
    .. [1] Sun et al. (2023), eqs. (8)-(9) (special cases), §5.3.
    """
    m = protocol.n_examples
    p = float(n_pos)
    n = m - p
    if not (0 < p < m):
        raise ValueError(f"n_pos must lie strictly between 0 and M={m}, got {n_pos!r}")
    g = 0.0 if counts_exact else protocol.global_mean_rank + (float(auc) - 0.5) * (n - p)
    coef = plan.pos_weight - g
    total = float(coef**2 @ plan.pos_variance + plan.sum_variance.sum())
    return total / (p * n) ** 2


def global_laplace_variance_eq8(
    n_examples: int, n_pos: float, *, n_clients: int, epsilon_sum: float
) -> float:
    """Eq. (8): Var = 2K(M - 1)² / (P² N² ε²) for GlobalLaplace with exact P, N.

    Parameters
    ----------
    n_examples : int
        M.
    n_pos : float
        P (N = M - P).
    n_clients : int
        K.
    epsilon_sum : float
        The budget on localSum (αε with the fixed split; ε when P, N are exact).

    References
    ----------
    .. [1] Sun et al. (2023), Appendix N, eq. (8).
    """
    m = check_int_at_least(n_examples, 2, name="n_examples")
    k = check_int_at_least(n_clients, 1, name="n_clients")
    eps = check_epsilon(epsilon_sum, name="epsilon_sum")
    p = check_positive(n_pos, name="n_pos")
    n = m - p
    if n <= 0:
        raise ValueError(f"n_pos must be < M={m}, got {n_pos!r}")
    return 2.0 * k * (m - 1.0) ** 2 / (p * p * n * n * eps * eps)


def local_laplace_variance_eq9(n_clients: int, n_pos: float, *, epsilon_sum: float) -> float:
    """Eq. (9): Var = K(K - 1)(2K - 1) / (3 P² N² ε²), LocalLaplace, one example per client.

    Parameters
    ----------
    n_clients : int
        K = M (one example each, ranks 0..K-1, Δ_k = r_k).
    n_pos : float
        P (N = K - P).
    epsilon_sum : float
        The budget on localSum (ε when P, N are exact).

    Notes
    -----
    With K = M, eq. (8)/eq. (9) = 6(K - 1)/(2K - 1) → 3: GlobalLaplace's
    standard deviation is √3 times LocalLaplace's.

    References
    ----------
    .. [1] Sun et al. (2023), Appendix O, eq. (9), and §6.2.2.
    """
    k = check_int_at_least(n_clients, 2, name="n_clients")
    eps = check_epsilon(epsilon_sum, name="epsilon_sum")
    p = check_positive(n_pos, name="n_pos")
    n = k - p
    if n <= 0:
        raise ValueError(f"n_pos must be < K={k}, got {n_pos!r}")
    return k * (k - 1.0) * (2.0 * k - 1.0) / (3.0 * p * p * n * n * eps * eps)
