"""FedAUC_RR: AUC debiasing and variance formulas (Sun et al. 2023, §4).

Each client flips each of its labels with probability ρ = 1/(1 + e^ε)
(Algorithm 1; :func:`fedeval.privacy.mechanisms.randomized_response.flip_labels`,
applied by the release pipeline under ``LabelDP(ε, noise="rr")``), runs the rank
protocol on the flipped labels (Algorithm 2) and the server debiases the noisy
AUC (Algorithm 3, eqs. 3-4 and 10-12). The pipeline debiases the rank sums
linearly, which gives the same estimate (shown below); :func:`debias_auc` is
Algorithm 3 as the paper writes it.

Variance of the debiased estimator
----------------------------------
Write c_i = r_i - (M - 1)/2 (centred ranks, Σ c_i = 0), ỹ_i for the flipped
labels and P' for the estimated positive count of Appendix P. Algorithm 3 is
algebraically identical to

    Â = 1/2 + Σ_i c_i ỹ_i / ((1 - 2ρ) P' N'),    N' = M - P',

because the base-rate estimate π' = P'/M makes π'(1 - ρ) + (1 - π')ρ equal the
observed positive fraction P̄/M, so 1 - α - β = π'(1 - π')(1 - 2ρ) / (p̄(1 - p̄)).
Since E ỹ_i = ρ + (1 - 2ρ) y_i and Var ỹ_i = ρ(1 - ρ) whatever y_i is,
X = Σ c_i ỹ_i / (1 - 2ρ) is unbiased for Σ c_i y_i = PN(A - 1/2), P' is
unbiased for P, and Cov(X, P') = ρ(1 - ρ) Σ c_i / (1 - 2ρ)² = 0. The delta
method applied to X / (P'(M - P')) gives

    Var(Â) ≈ ρ(1 - ρ) / ((1 - 2ρ)² P² N²) · [Σ_i c_i² + M (A - 1/2)² (N - P)²],

with Σ c_i² = M(M² - 1)/12 without ties, and a second-order bias

    E Â - A ≈ (A - 1/2) Var(P') (P² - PN + N²) / (P² N²),
    Var(P') = M ρ(1 - ρ) / (1 - 2ρ)².

The paper's eq. (7), ρ(1 - ρ) Σ_i r_i² / (P² N²), is the variance of the
uncentred noisy rank sum with P held fixed: it ignores that P̄ moves with the
flips (which centres the ranks and divides Σ r_i² ≈ M³/3 by about four), the
debiasing factor 1/(1 - 2ρ)² and the (N - P) term. It overstates the standard
deviation when ε is large and understates it when ε is small.
"""

from __future__ import annotations

import math
from typing import overload

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import expit

from fedeval.privacy.mechanisms.randomized_response import flip_probability
from fedeval.validation import check_epsilon, check_int_at_least

__all__ = [
    "debias_auc",
    "rr_bias_second_order",
    "rr_variance_delta",
    "rr_variance_eq7",
]


@overload
def debias_auc(noisy_auc: float, noisy_pos: float, n_examples: int, *, epsilon: float) -> float: ...
@overload
def debias_auc(
    noisy_auc: NDArray[np.float64],
    noisy_pos: NDArray[np.float64],
    n_examples: int,
    *,
    epsilon: float,
) -> NDArray[np.float64]: ...
def debias_auc(
    noisy_auc: ArrayLike, noisy_pos: ArrayLike, n_examples: int, *, epsilon: float
) -> float | NDArray[np.float64]:
    """Algorithm 3: turn the AUC on flipped labels into an estimate of the clean AUC.

    Parameters
    ----------
    noisy_auc : float or array_like
        AUC^{D_noisy}, eq. (1) on the flipped labels.
    noisy_pos : float or array_like
        P̄, the number of flipped labels equal to 1 (N̄ = M - P̄).
    n_examples : int
        M.
    epsilon : float
        The ε of the randomized response (ρ+ = ρ- = 1/(1 + e^ε)).

    Returns
    -------
    float or ndarray
        AUC^{D_clean} = (AUC^{D_noisy} - (α + β)/2) / (1 - α - β), eq. (3), with
        α, β from eq. (4) at the base rate π' of eqs. (10)-(12). NaN where it is
        undefined (P̄ ∈ {0, M} or π' ∈ {0, 1}); otherwise unclipped, so it may
        leave [0, 1] when π' falls outside (0, 1) at small M·ε.

    References
    ----------
    .. [1] Sun et al. (2023), §4.3, eqs. (3)-(4), Algorithm 3, Appendix P
       eqs. (10)-(12) (line 7 of Algorithm 3 reads π where π' is meant).
    .. [2] Menon, van Rooyen, Ong & Williamson (2015), "Learning from corrupted
       binary labels via class-probability estimation", ICML.
    """
    m = check_int_at_least(n_examples, 1, name="n_examples")
    rho = flip_probability(epsilon)
    a_noisy = np.asarray(noisy_auc, dtype=np.float64)
    p_bar = np.asarray(noisy_pos, dtype=np.float64)
    n_bar = m - p_bar
    with np.errstate(divide="ignore", invalid="ignore"):
        p_est = (p_bar * (1.0 - rho) - n_bar * rho) / (1.0 - 2.0 * rho)  # eq. (11)
        n_est = p_bar + n_bar - p_est
        pi = p_est / (p_est + n_est)  # eq. (12)
        # Menon et al.'s inverse noise rates: α = Pr[y = 0 | ỹ = 1], β = Pr[y = 1 | ỹ = 0].
        alpha = (1.0 - pi) * rho / (pi * (1.0 - rho) + (1.0 - pi) * rho)
        beta = pi * rho / (pi * rho + (1.0 - pi) * (1.0 - rho))
        out = (a_noisy - (alpha + beta) / 2.0) / (1.0 - alpha - beta)
    out = np.where(np.isfinite(out), out, np.nan)
    return float(out) if out.ndim == 0 else out


def _counts(n_pos: float, n_neg: float) -> tuple[float, float]:
    p, n = float(n_pos), float(n_neg)
    if not (p > 0 and n > 0 and math.isfinite(p) and math.isfinite(n)):
        raise ValueError(f"n_pos and n_neg must be finite and > 0, got {n_pos!r} and {n_neg!r}")
    return p, n


def rr_variance_eq7(n_pos: float, n_neg: float, *, epsilon: float) -> float:
    """The paper's eq. (7): e^ε/(1 + e^ε)² · M(M - 1)(2M - 1)/6 / (P² N²).

    Parameters
    ----------
    n_pos, n_neg : float
        P and N (M = P + N).
    epsilon : float
        ε > 0 of the randomized response.

    Returns
    -------
    float
        The variance the paper states for FedAUC_RR. It treats P as known and
        ignores the debiasing step; see the module notes for why it is off by a
        factor that depends on ε and the base rate (use :func:`rr_variance_delta`).

    References
    ----------
    .. [1] Sun et al. (2023), Appendix I, eq. (7).
    """
    eps = check_epsilon(epsilon)
    p, n = _counts(n_pos, n_neg)
    m = p + n
    rho = float(expit(-eps))
    return rho * (1.0 - rho) * m * (m - 1.0) * (2.0 * m - 1.0) / 6.0 / (p * p * n * n)


def rr_variance_delta(ranks: ArrayLike, *, n_pos: float, auc: float, epsilon: float) -> float:
    """Delta-method variance of the debiased FedAUC_RR estimate (Algorithm 3).

    Var(Â) ≈ ρ(1 - ρ) / ((1 - 2ρ)² P² N²) · [Σ_i (r_i - (M - 1)/2)² + M (A - 1/2)² (N - P)²]
    with ρ = 1/(1 + e^ε); derivation in the module docstring.

    Parameters
    ----------
    ranks : array_like, shape (M,)
        The ranks of all examples (mid-ranks with ties); known to the server.
    n_pos : float
        P (the true count, or the estimate P' for a plug-in standard error).
    auc : float
        A (the true AUC, or the estimate for a plug-in standard error).
    epsilon : float
        ε > 0.

    Returns
    -------
    float
        The approximate variance; accurate when Var(P') ≪ P², N² (e.g. within
        a few percent for M = 5000 at ε = 1).

    Raises
    ------
    ValueError
        If P is not strictly between 0 and M.

    References
    ----------
    .. [1] Sun et al. (2023), Algorithm 3 (the estimator); this module's
       derivation replaces eq. (7) of Appendix I.
    """
    eps = check_epsilon(epsilon)
    r = np.asarray(ranks, dtype=np.float64)
    m = r.shape[0]
    p, n = _counts(n_pos, m - float(n_pos))
    c = r - (m - 1) / 2.0
    rho = float(expit(-eps))
    core = float(c @ c) + m * (float(auc) - 0.5) ** 2 * (n - p) ** 2
    return rho * (1.0 - rho) / ((1.0 - 2.0 * rho) ** 2 * p * p * n * n) * core


def rr_bias_second_order(n_examples: int, n_pos: float, *, auc: float, epsilon: float) -> float:
    """Second-order bias of the debiased FedAUC_RR estimate.

    E Â - A ≈ (A - 1/2) Var(P') (P² - PN + N²) / (P² N²), Var(P') = Mρ(1 - ρ)/(1 - 2ρ)².

    Parameters
    ----------
    n_examples : int
        M.
    n_pos : float
        P.
    auc : float
        A.
    epsilon : float
        ε > 0.

    Returns
    -------
    float
        The O(1/M) bias that comes from dividing by the noisy P'N'; it shrinks
        relative to the standard deviation (O(1/√M)) as M grows.
    """
    eps = check_epsilon(epsilon)
    m = check_int_at_least(n_examples, 2, name="n_examples")
    p, n = _counts(n_pos, m - float(n_pos))
    rho = float(expit(-eps))
    var_p = m * rho * (1.0 - rho) / (1.0 - 2.0 * rho) ** 2
    return (float(auc) - 0.5) * var_p * (p * p - p * n + n * n) / (p * p * n * n)
