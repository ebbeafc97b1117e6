"""The public entry point :func:`auc`: one private AUC evaluation in vertical FL.

The server ranks all scores (ties get mid-ranks), each label party encodes its
positive count and rank sum (:class:`~fedeval.sketches.rank_sums.RankSumSketch`),
the statistics are released through :func:`fedeval.aggregation.release` under a
:class:`~fedeval.privacy.models.LabelDP` model (randomized response on every
label, or Laplace/Gaussian noise each party adds to its own statistics), and
the server evaluates eq. (1). Everything after the release — the AUC, its
delta-method standard error — is decoding.

Variance
--------
With released coordinates v = (localP'_k, X'_k) where localSum'_k =
a_k·localP'_k + X'_k (a_k = 0 for the fixed allocation, r̄_k for the orthogonal
decomposition), AUC = (S − P(P−1)/2)/(PN) with S = Σ_k localSum'_k, P = Σ_k
localP'_k. Its gradient is 1/(PN) on every X'_k and (a_k − g)/(PN) on every
localP'_k, g = (M−1)/2 + (A − 1/2)(N − P), so Var(AUC) ≈ ∇ᵀ Σ ∇ with Σ the
release's noise covariance. For independent noise this is
Σ_k [(a_k − g)² V_P,k + V_X,k]/(PN)²; for randomized response on labels Σ is
ρ(1−ρ)/(1−2ρ)² times the labels' Gram matrix, which reproduces
:func:`~fedeval.vertical.randomized_response.rr_variance_delta` exactly.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from fedeval.aggregation import Path, Release, release
from fedeval.data import Federation
from fedeval.exceptions import SmallDataWarning
from fedeval.privacy.guarantee import Guarantee
from fedeval.privacy.ledger import BudgetLedger
from fedeval.privacy.models import LabelDP, PrivacyModel, SecureAggregation
from fedeval.privacy.receipt import Receipt
from fedeval.randomness import RNGLike
from fedeval.sketches.rank_sums import Allocation, RankSensitivity, RankSums, RankSumSketch
from fedeval.validation import check_binary_labels, check_probability, check_scores
from fedeval.vertical.protocol import (
    RankProtocol,
    auc_from_rank_sum,
    check_client_ids,
    index_clients,
    rank_values,
)

__all__ = ["VerticalAUC", "auc", "auc_variance", "release_rank_sums"]


@dataclass(frozen=True)
class VerticalAUC:
    """A vertical-FL AUC estimate with its uncertainty and privacy receipt.

    Attributes
    ----------
    roc_auc : float
        The estimated AUC (unclipped; may leave [0, 1] under heavy noise); NaN
        when the released positive count P̄ leaves (0, M).
    roc_auc_se : float
        Plug-in delta-method standard error from the noise distribution (0
        without noise; NaN if the released counts make it undefined).
    receipt : Receipt
        Guarantee (unit "label"), ledger entries and mechanism.
    allocation : str
        ``"fixed"``, ``"orthogonal"`` or ``"adaptive"``.
    alpha, beta : float or None
        The fixed split (share on localSum) and the common orthogonal split
        (share on localP).
    n_examples, n_clients : int
        M and K.
    released_n_pos : float
        The positive count the server estimated (P̄, noisy under DP).
    client_beta : ndarray or None
        Per-client share on localP (orthogonal/adaptive) that the noise used:
        the split of ε for Laplace noise, of 1/σ² for Gaussian noise (read back
        from the release by :meth:`~fedeval.sketches.rank_sums.RankSumSketch.betas_used`).
        None for the fixed allocation, without noise, and under randomized
        response (no budget split).
    """

    roc_auc: float
    roc_auc_se: float
    receipt: Receipt
    allocation: str
    alpha: float | None
    beta: float | None
    n_examples: int
    n_clients: int
    released_n_pos: float = math.nan
    client_beta: NDArray[np.float64] | None = field(default=None, repr=False, compare=False)

    @property
    def guarantee(self) -> Guarantee:
        return self.receipt.guarantee

    @property
    def epsilon_spent(self) -> float:
        return self.receipt.epsilon_spent

    def __float__(self) -> float:
        return self.roc_auc


def auc_variance(rel: Release, *, auc: float, n_pos: float, counts_exact: bool = False) -> float:
    """Delta-method variance of eq. (1) from a rank-sum release (see the module docstring).

    Parameters
    ----------
    rel : Release
        A release of a :class:`~fedeval.sketches.rank_sums.RankSumSketch`.
    auc, n_pos : float
        A and P (true values, or the estimates for a plug-in standard error).
    counts_exact : bool
        Take P and N as exact (the paper's simplification in Appendices N–O):
        only the noise in the sums counts.

    Returns
    -------
    float
        ∇ᵀ Σ ∇ / (PN)² with Σ the release's noise covariance (its diagonal
        ``rel.variance`` for independent noise, ``rel.covariance`` for
        randomized response on labels). For randomized response this equals
        :func:`~fedeval.vertical.randomized_response.rr_variance_delta`; for the
        fixed allocation with ``counts_exact=True`` and one example per party it
        is eq. (8) (global sensitivity) or eq. (9) (local sensitivity).

    Raises
    ------
    ValueError
        If P is not strictly between 0 and M.
    TypeError
        If ``rel`` is not a release of a rank-sum sketch.

    References
    ----------
    .. [1] Sun et al. (2023), eq. (1); Appendices N–O, eqs. (8)–(9).
    """
    sketch = rel.sketch
    if not isinstance(sketch, RankSumSketch):
        raise TypeError(f"auc_variance needs a release of a RankSumSketch, got a {sketch.name}")
    m = int(sketch.ranks.size)
    p = float(n_pos)
    n = m - p
    if not (0 < p < m):
        raise ValueError(f"n_pos must lie strictly between 0 and M={m}, got {n_pos!r}")
    k = sketch.n_clients
    a = sketch.mean_rank if sketch.centred else np.zeros(k)
    g = 0.0 if counts_exact else (m - 1) / 2.0 + (float(auc) - 0.5) * (n - p)
    grad = np.concatenate([a - g, np.ones(k)])
    if counts_exact:
        grad[:k] = a
    if rel.covariance is not None:
        var = float(grad @ (rel.covariance @ grad))
    else:
        var = float((grad**2) @ rel.variance)
    return var / (p * n) ** 2


def _inputs(
    scores: ArrayLike, labels: ArrayLike, client_of_example: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.int8], NDArray[Any]]:
    y = check_binary_labels(labels)
    ids = np.asarray(client_of_example)
    if ids.ndim == 1 and ids.shape[0] != y.shape[0]:
        raise ValueError(
            f"labels has {y.shape[0]} entries but client_of_example has {ids.shape[0]}; "
            "each example needs a label and a client"
        )
    s = check_scores(scores, score_range=(-np.inf, np.inf))
    if s.shape[0] != y.shape[0]:
        raise ValueError(
            f"scores has {s.shape[0]} entries but the label parties hold {y.shape[0]} examples; "
            "the server must score exactly the label parties' examples"
        )
    ids = check_client_ids(ids, y.shape[0])
    return s, y, ids


def _refuse_single_class(y: NDArray[np.int8]) -> None:
    """Without DP only: a single class makes eq. (1) undefined (under DP this would leak)."""
    n_pos = int(y.sum())
    if n_pos == 0 or n_pos == y.shape[0]:
        raise ValueError(
            f"labels contain a single class ({n_pos} positives of {y.shape[0]}); the AUC is undefined"
        )


def rank_federation(protocol: RankProtocol, labels: NDArray[Any]) -> Federation:
    """The label parties' data as a federation of (rank, label) examples."""
    m = protocol.n_examples
    return Federation.from_dense_index(
        protocol.ranks,
        np.asarray(labels, dtype=np.int64),
        np.asarray(protocol.client_index, dtype=np.int64),
        protocol.client_ids,
        "binary",
        (0.0, max(m - 1.0, 1.0)),
    )


def release_rank_sums(
    protocol: RankProtocol,
    labels: NDArray[Any],
    privacy: PrivacyModel,
    sketch: RankSumSketch,
    *,
    path: Path = "fast",
    rng: RNGLike = None,
    ledger: BudgetLedger | None = None,
) -> Release:
    """Step 3 of the protocol for every label party, through the one release pipeline."""
    fed = rank_federation(protocol, labels)
    return release(fed, sketch, privacy, path=path, rng=rng, ledger=ledger)


def _count_variance(rel: Release, k: int) -> float:
    """Noise variance of P̄ = Σ_k localP'_k (the first k released coordinates are the counts)."""
    if rel.covariance is not None:
        ones = np.zeros(rel.covariance.shape[0])
        ones[:k] = 1.0
        return float(ones @ (rel.covariance @ ones))
    return float(np.sum(np.asarray(rel.variance, dtype=np.float64)[:k]))


def _warn_counts(value: float, sd: float, m: int, *, stacklevel: int) -> None:
    """Warn from released values only: P̄, its noise sd and the public M."""
    if not (0 < value < m):
        warnings.warn(
            f"the released positive count P̄ = {value:.4g} is outside (0, M={m}): a class is "
            "empty or the noise swamps the class counts; the AUC is NaN (increase epsilon or "
            "the number of examples)",
            SmallDataWarning,
            stacklevel=stacklevel,
        )
    elif min(value, m - value) < 3.0 * sd:
        warnings.warn(
            f"the released positive count P̄ = {value:.4g} is within 3 noise standard deviations "
            f"({sd:.3g}) of 0 or M={m}: a class is empty or small against the noise and the AUC "
            "estimate is unreliable",
            SmallDataWarning,
            stacklevel=stacklevel,
        )


def auc(
    scores: ArrayLike,
    labels: ArrayLike,
    client_of_example: ArrayLike,
    privacy: PrivacyModel | None = None,
    *,
    epsilon: float | None = None,
    rank_sensitivity: RankSensitivity = "local",
    allocation: Allocation = "fixed",
    alpha: float = 0.5,
    beta: float = 0.5,
    clients: ArrayLike | None = None,
    path: Path = "fast",
    rng: RNGLike = None,
    ledger: BudgetLedger | None = None,
) -> VerticalAUC:
    """Global AUC computed by a server that never sees the labels (vertical FL).

    The server ranks all scores (ties get mid-ranks), sends each label party
    the ranks of its examples, and each party returns its rank sum over
    positives and its positive count, protected as ``privacy`` says; the
    server evaluates eq. (1).

    Parameters
    ----------
    scores : array_like, shape (M,)
        The server's score of every example (finite, any range).
    labels : array_like of {0, 1}, shape (M,)
        The label of every example (each held by its client only).
    client_of_example : array_like of int, shape (M,)
        Which label party holds each label (any integer ids).
    privacy : LabelDP, optional
        ``LabelDP(ε)`` (Laplace noise on each party's statistics, FedAUC_Lap §5),
        ``LabelDP(ε, noise="gaussian", delta=δ)``, or ``LabelDP(ε, noise="rr")``
        (randomized response on every label, FedAUC_RR §4). None (and no
        ``epsilon``) runs the exact, non-private protocol.
    epsilon : float, optional
        Sugar for ``LabelDP(epsilon)``.
    rank_sensitivity : {"local", "global"}
        Δ_k of localSum_k: the party's largest rank (LocalLaplace, §5.2) or
        M − 1 (the baseline of Appendix N; fixed allocation only).
    allocation : {"fixed", "orthogonal", "adaptive"}, default "fixed"
        Budget split for the Laplace/Gaussian noise (§5.2-5.3); with
        randomized response it only chooses the encoding.
    alpha : float, default 0.5
        Fixed split: ε_localSum = αε, ε_localP = (1-α)ε.
    beta : float, default 0.5
        Orthogonal split: share of ε on localP.
    clients : array_like of int, optional
        The label parties taking part; each must hold at least one example.
    path : {"fast", "faithful"}
    rng : int, Generator or None
        Source of all noise.
    ledger : BudgetLedger, optional
        Charged before anything is released; a release that would exceed its
        total raises ``BudgetExceededError``.

    Returns
    -------
    VerticalAUC

    Raises
    ------
    ValueError
        On labels that are not 0/1, of a single class without DP (the exact
        protocol; under label DP a single class is released, see Warns), lengths that disagree,
        a declared client with no examples, α or β outside (0, 1), or an
        allocation the rank sensitivity does not support.
    TypeError
        On non-numeric scores, non-integer client ids, both ``privacy`` and
        ``epsilon``, or a model the rank sums cannot be released under
        (``LocalDP``, ``UserLevelDP``); a model protecting examples rather than
        labels (``DistributedDP``) raises ``ValueError``.

    Warns
    -----
    UserWarning
        Under DP, when the released positive count P̄ leaves (0, M) (the AUC
        is then NaN) or lies within 3 noise standard deviations of 0 or M (a
        class is empty or small; the estimate is unreliable). Decided from
        released values and public M only, so it reveals nothing more.

    Notes
    -----
    Privacy: unit "label" (neighbouring datasets differ in one label; scores
    and the client assignment are public to the server, §3), as the receipt
    states. Public inputs: the scores (hence M and the ranks), the client of
    every example and the parameters; labels enter only through the release.
    Under DP there is no refusal that depends on the labels: a single class is
    released like any other labels. Each call is one release: repeated calls on the same labels compose.
    The estimate is reported unclipped; with randomized response it is
    Algorithm 3's debiased AUC (the linear debiasing of the rank sums gives the
    same value), with Laplace noise a ratio with O(1/M) bias.

    References
    ----------
    .. [1] Sun, Yang, Yao, Xie, Wu & Wang (2023), "Differentially private AUC
       computation in vertical federated learning": eq. (1), §4 (Algorithms
       1-3, eqs. 3-4), §5 (Algorithm 4, §5.2-5.3), Appendices N-P.

    Examples
    --------
    >>> import numpy as np, fedeval.vertical as fv
    >>> s = np.array([0.1, 0.4, 0.35, 0.8]); y = np.array([0, 0, 1, 1])
    >>> fv.auc(s, y, [0, 0, 1, 1]).roc_auc
    0.75
    """
    if privacy is not None and epsilon is not None:
        raise TypeError("give privacy (a model) or epsilon (sugar for LabelDP), not both")
    model: PrivacyModel = (
        privacy
        if privacy is not None
        else (LabelDP(epsilon) if epsilon is not None else SecureAggregation())
    )
    s, y, ids = _inputs(scores, labels, client_of_example)
    if getattr(model, "regime", None) == "exact":
        _refuse_single_class(y)
    a = check_probability(alpha, name="alpha", open_high=True)
    b = check_probability(beta, name="beta", open_high=True)
    client_ids, index = index_clients(ids, clients)
    protocol = RankProtocol(rank_values(s), index, client_ids)
    sketch = protocol.sketch(
        allocation=allocation, alpha=a, beta=b, rank_sensitivity=rank_sensitivity
    )
    rel = release_rank_sums(protocol, y, model, sketch, path=path, rng=rng, ledger=ledger)
    sums: RankSums = rel.decode()
    m = protocol.n_examples
    p_bar = float(sums.local_pos.sum())
    value = float(auc_from_rank_sum(float(sums.local_sum.sum()), p_bar, m))
    se = 0.0
    if rel.guarantee.is_private:
        sd = math.sqrt(max(_count_variance(rel, protocol.n_clients), 0.0))
        _warn_counts(p_bar, sd, m, stacklevel=2)
        se = math.nan
        if not 0 < p_bar < m:
            value = math.nan  # eq. (1) needs P̄ and M − P̄ positive
        elif math.isfinite(value):
            se = math.sqrt(max(auc_variance(rel, auc=value, n_pos=p_bar), 0.0))
    return VerticalAUC(
        roc_auc=value,
        roc_auc_se=se,
        receipt=rel.receipt,
        allocation=allocation,
        alpha=a if allocation == "fixed" else None,
        beta=b if allocation == "orthogonal" else None,
        n_examples=m,
        n_clients=protocol.n_clients,
        released_n_pos=p_bar,
        client_beta=sketch.betas_used(rel),
    )
