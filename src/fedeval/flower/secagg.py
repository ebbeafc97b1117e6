"""The integer-exact SecAgg+ configuration and a clipping range honest replies respect.

Flower's SecAgg+ returns a weighted mean of clipped, quantized values; integer
vectors sum exactly in one configuration (DESIGN.md, Flower notes), and a share
above the clipping range is silently clipped. :func:`choose_clipping_range`
picks a range that honest noisy shares exceed only with a stated probability,
which :func:`clipping_delta` folds into the guarantee as a δ.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from fedeval.flower.plan import EvaluationPlan

__all__ = [
    "MAX_CLIPPING_RANGE",
    "MAX_MODULUS",
    "SecAggParameters",
    "choose_clipping_range",
    "clipping_delta",
    "secagg_parameters",
]

# SecAgg+ works modulo modulus_range; flwr requires a power of two below 2**32 for
# its int64 arithmetic to be safe, and quantizes into int32.
MAX_MODULUS = 2**32
MAX_CLIPPING_RANGE = 2**29


@dataclass(frozen=True)
class SecAggParameters:
    """An integer-exact SecAgg+ configuration (DESIGN.md, Flower notes).

    With ``num_examples == max_weight == 1`` and ``quantization_range ==
    2 * clipping_range``, flwr's quantizer maps an integer x in [-C, C] to the
    integer x + C exactly (stochastic rounding of an integer is the identity),
    and the server's dequantized weighted mean times the number of contributions
    is the exact integer sum, provided ``n * 2C < modulus_range``.

    Attributes
    ----------
    num_shares : int
        Odd (an even integer crashes flwr 1.41 clients).
    reconstruction_threshold : int
        SecAgg+ releases the sum only if every selected client has at least this
        many surviving neighbours, hence at least this many contributions.
    clipping_range : int
    quantization_range : int
    modulus_range : int
    max_weight : float
    noise_tail : int
        Bound τ on an honest noise share (0 without noise).
    clip_probability : float
        Probability that any honest coordinate exceeds the clipping range.
    """

    num_shares: int
    reconstruction_threshold: int
    clipping_range: int
    quantization_range: int
    modulus_range: int
    max_weight: float = 1.0
    noise_tail: int = 0
    clip_probability: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def secagg_parameters(
    n_selected: int, *, max_dropouts: int, num_shares: int | None = None
) -> tuple[int, int]:
    """Odd ``num_shares`` and the reconstruction threshold tolerating ``max_dropouts``.

    Parameters
    ----------
    n_selected : int
        Clients entering SecAgg+ (>= 3).
    max_dropouts : int
        Clients that may drop out after the keys are shared; >= 1 because flwr
        requires threshold < num_shares.
    num_shares : int, optional
        Neighbours per client (default: all selected clients, made odd). Fewer
        shares are cheaper, but the noise is calibrated to the threshold, so the
        noise grows by n/threshold.

    Returns
    -------
    (num_shares, reconstruction_threshold)

    Raises
    ------
    ValueError
        Too few clients for the requested tolerance.
    """
    if n_selected < 3:
        raise ValueError(f"SecAgg+ needs at least 3 clients, got {n_selected}")
    if max_dropouts < 1:
        raise ValueError(f"max_dropouts must be >= 1 for SecAgg+, got {max_dropouts}")
    s = n_selected if num_shares is None else min(int(num_shares), n_selected)
    if s % 2 == 0:
        s -= 1
    if s < 3:
        raise ValueError(f"num_shares must be >= 3 after making it odd, got {s}")
    t = s - max_dropouts
    if t < 2:
        raise ValueError(
            f"cannot tolerate {max_dropouts} dropouts with {s} shares: the SecAgg+ "
            f"reconstruction threshold would be {t} < 2"
        )
    if t <= s // 2:
        raise ValueError(
            f"tolerating {max_dropouts} dropouts with {s} shares leaves a threshold of {t}, "
            f"not a majority of the shares; SecAgg+ would be insecure against the server"
        )
    return s, t


def choose_clipping_range(
    plan: EvaluationPlan,
    *,
    max_dropouts: int,
    clip_probability: float = 1e-9,
    num_shares: int | None = None,
    modulus_range: int = MAX_MODULUS,
) -> SecAggParameters:
    """SecAgg+ parameters whose clipping almost never touches an honest reply.

    Counts lie in [0, M] (M = ``plan.client_bound``: every client keeps at most
    that many examples). Under DistDP each coordinate also carries an
    unbounded noise share; the clipping range is C = M + τ with the smallest τ
    such that, by a union bound over every coordinate of every selected client,

        n_selected · length · P(|share| > τ) <= clip_probability,

    where P(|share| > τ) is bounded by the noise's own
    :meth:`~fedeval.privacy.noise.AdditiveNoise.share_tail` (the exact
    negative-binomial or Poisson tail). Under SA, C = M and nothing is ever clipped.

    Parameters
    ----------
    plan : EvaluationPlan
        Must carry ``n_shares`` and ``min_received`` (see :func:`secagg_parameters`).
    max_dropouts : int
    clip_probability : float
        δ_clip in (0, 1): the probability that SecAgg+ clips an honest share.
    num_shares : int, optional
    modulus_range : int
        Power of two, at most 2**32.

    Returns
    -------
    SecAggParameters

    Raises
    ------
    ValueError
        If no modulus up to ``modulus_range`` can hold the exact sum.

    Notes
    -----
    Privacy: let R be the ideal release (no clipping) and R' the clipped one. On
    every dataset the two differ only on the clipping event, of probability at
    most δ_clip, so their total-variation distance is at most δ_clip. If R is
    ε-DP, then for every event S, P(R'(D) ∈ S) <= P(R(D) ∈ S) + δ_clip <=
    e^ε P(R(D') ∈ S) + δ_clip <= e^ε P(R'(D') ∈ S) + (1 + e^ε) δ_clip, so R' is
    (ε, (1 + e^ε) δ_clip)-DP; :func:`clipping_delta` computes this δ and the
    server adds it to the guarantee and the ledger.
    """
    if not 0.0 < clip_probability < 1.0:
        raise ValueError(f"clip_probability must lie in (0, 1), got {clip_probability}")
    s, t = secagg_parameters(plan.n_shares, max_dropouts=max_dropouts, num_shares=num_shares)
    mech = plan.mechanism()
    m = plan.client_bound
    noise = mech.noise if mech.placement == "shares" else None
    tau = 0
    prob = 0.0
    if noise is not None:
        n_coords = plan.n_shares * plan.vector_length
        hi = 1
        while noise.share_tail(hi) * n_coords > clip_probability:
            hi *= 2
            if hi > MAX_CLIPPING_RANGE:
                raise ValueError("noise shares too wide for SecAgg+'s int32 quantization")
        lo = 0
        while lo < hi:  # smallest τ with the union bound <= clip_probability
            mid = (lo + hi) // 2
            if noise.share_tail(mid) * n_coords <= clip_probability:
                hi = mid
            else:
                lo = mid + 1
        tau = lo
        prob = noise.share_tail(tau) * n_coords
    clip = max(1, m + tau)
    quant = 2 * clip
    if clip > MAX_CLIPPING_RANGE or plan.n_shares * quant >= modulus_range:
        raise ValueError(
            f"the exact sum needs n_clients * 2 * clipping_range = {plan.n_shares * quant} "
            f"< modulus_range = {modulus_range}; lower max_examples or the number of clients"
        )
    # The smallest power of two that holds the sum keeps flwr's masks small.
    modulus = 1 << max(int(plan.n_shares * quant).bit_length(), 1)
    modulus = min(modulus, modulus_range)
    return SecAggParameters(s, t, clip, quant, modulus, 1.0, tau, prob)


def clipping_delta(epsilon: float, clip_probability: float) -> float:
    """δ added by clipping honest shares with probability ``clip_probability``.

    (1 + e^ε)·δ_clip; see the Notes of :func:`choose_clipping_range`.
    """
    if clip_probability <= 0.0:
        return 0.0
    return float(min(1.0, (1.0 + math.exp(epsilon)) * clip_probability))
