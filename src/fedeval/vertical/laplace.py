"""Closed-form variances of FedAUC_Lap from the paper (Sun et al. 2023, Appendices N–O).

The mechanism itself — each label party adding Laplace (or Gaussian) noise to
its positive count and rank sum, with a fixed, orthogonal or adaptive budget
split — is the :class:`~fedeval.sketches.rank_sums.RankSumSketch` released under
:class:`~fedeval.privacy.models.LabelDP` through the one pipeline; its
delta-method variance is :func:`fedeval.vertical.estimate.auc_variance`. This
module keeps the paper's special cases with exact P and N, eqs. (8) and (9),
which the tests and the Table 2 reproduction check that variance against.
"""

from __future__ import annotations

from fedeval.validation import check_epsilon, check_int_at_least, check_positive

__all__ = ["global_laplace_variance_eq8", "local_laplace_variance_eq9"]


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
