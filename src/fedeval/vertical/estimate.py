"""The public entry point :func:`auc`: one private AUC evaluation in vertical FL."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

import numpy as np
from numpy.typing import ArrayLike, NDArray

from fedeval.privacy.guarantee import Guarantee
from fedeval.privacy.ledger import BudgetLedger
from fedeval.randomness import RNGLike, as_generator
from fedeval.validation import (
    check_binary_labels,
    check_delta,
    check_epsilon,
    check_probability,
    check_scores,
)
from fedeval.vertical.laplace import (
    Allocation,
    Noise,
    Sensitivity,
    laplace_variance_delta,
    noise_plan,
    release_local_statistics,
)
from fedeval.vertical.protocol import (
    RankProtocol,
    _build_protocol,
    _check_client_ids,
    _index_clients,
    _local_statistics,
    _mid_ranks,
)
from fedeval.vertical.randomized_response import (
    debias_auc,
    flip_probability,
    rr_variance_delta,
)

__all__ = ["Mechanism", "VerticalAUC", "auc"]

Mechanism = Literal["rr", "global-laplace", "local-laplace", "global-gaussian", "local-gaussian"]

_NO_DP = Guarantee(
    epsilon=math.inf,
    delta=0.0,
    unit="none",
    statement="no differential privacy: exact local rank sums and label counts reach the server",
)


@dataclass(frozen=True)
class VerticalAUC:
    """A vertical-FL AUC estimate with its uncertainty and privacy guarantee.

    Attributes
    ----------
    value : float
        The estimated AUC (unclipped; may leave [0, 1] under heavy noise).
    standard_error : float
        Plug-in delta-method standard error from the noise distribution (0
        without noise; NaN if the released counts make it undefined).
    mechanism : str
        ``"rr"``, ``"global-laplace"``, ``"local-laplace"``, ``"global-gaussian"``
        or ``"local-gaussian"``.
    epsilon : float or None
        ε per label; None means no noise.
    delta : float
        δ (0 except for Gaussian noise).
    allocation : str or None
        ``"fixed"``, ``"orthogonal"`` or ``"adaptive"`` for the Laplace/Gaussian
        mechanisms; None for RR or without noise.
    alpha : float or None
        Share of ε on localSum (fixed allocation).
    beta : float or None
        Common share of ε on localP (orthogonal allocation).
    n_examples, n_clients : int
        M and K.
    guarantee : Guarantee
        What the release promises (unit ``"label"``).
    noisy_auc : float or None
        RR only: the AUC on flipped labels before debiasing.
    released_n_pos : float
        The positive count the server saw (P̄, noisy under DP).
    client_beta : ndarray or None
        Per-client share on localP (orthogonal/adaptive).
    """

    value: float
    standard_error: float
    mechanism: str
    epsilon: float | None
    delta: float
    allocation: str | None
    alpha: float | None
    beta: float | None
    n_examples: int
    n_clients: int
    guarantee: Guarantee
    noisy_auc: float | None = None
    released_n_pos: float = math.nan
    client_beta: NDArray[np.float64] | None = field(default=None, repr=False, compare=False)

    def __float__(self) -> float:
        return self.value


def _parse_mechanism(mechanism: Any) -> tuple[Noise, Sensitivity] | None:
    if mechanism not in get_args(Mechanism):
        raise ValueError(f"mechanism must be one of {get_args(Mechanism)}, got {mechanism!r}")
    if mechanism == "rr":
        return None
    sens, noise = str(mechanism).split("-")
    return noise, sens  # type: ignore[return-value]


def _validate_inputs(
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
    ids = _check_client_ids(ids, y.shape[0])
    n_pos = int(y.sum())
    if n_pos == 0 or n_pos == y.shape[0]:
        raise ValueError(
            f"labels contain a single class ({n_pos} positives of {y.shape[0]}); the AUC is undefined"
        )
    return s, y, ids


def _warn_counts(what: str, value: float, m: int, *, stacklevel: int) -> None:
    if not (0 < value < m):
        warnings.warn(
            f"{what} = {value:.4g} is outside (0, M={m}); the noise swamps the class counts and "
            "the AUC estimate is unreliable (increase epsilon or the number of examples)",
            UserWarning,
            stacklevel=stacklevel,
        )


def auc(
    scores: ArrayLike,
    labels: ArrayLike,
    client_of_example: ArrayLike,
    *,
    epsilon: float | None,
    mechanism: Mechanism = "local-laplace",
    allocation: Allocation = "fixed",
    alpha: float = 0.5,
    beta: float = 0.5,
    delta: float | None = None,
    clients: ArrayLike | None = None,
    rng: RNGLike = None,
    ledger: BudgetLedger | None = None,
) -> VerticalAUC:
    """Global AUC computed by a server that never sees the labels (vertical FL).

    The server ranks all scores (ties get mid-ranks), sends each label party
    the ranks of its examples, and each party returns its rank sum over
    positives and its positive count, protected by randomized response
    (``"rr"``) or by Laplace/Gaussian noise; the server evaluates eq. (1).

    Parameters
    ----------
    scores : array_like, shape (M,)
        The server's score of every example (finite, any range).
    labels : array_like of {0, 1}, shape (M,)
        The label of every example (each held by its client only).
    client_of_example : array_like of int, shape (M,)
        Which label party holds each label (any integer ids).
    epsilon : float or None, keyword-only, required
        ε > 0 of the label-DP guarantee; None for the exact, non-private protocol.
    mechanism : {"rr", "global-laplace", "local-laplace", "global-gaussian", "local-gaussian"}
        ``"rr"``: FedAUC_RR (§4). ``"local-*"``: FedAUC_Lap with each client's
        largest rank as sensitivity (§5.2). ``"global-*"``: the baseline with
        sensitivity M - 1 (Appendix N).
    allocation : {"fixed", "orthogonal", "adaptive"}, default "fixed"
        Budget split for the Laplace/Gaussian mechanisms (§5.2-5.3).
    alpha : float, default 0.5
        Fixed split: ε_localSum = αε, ε_localP = (1-α)ε.
    beta : float, default 0.5
        Orthogonal split: share of ε on localP.
    delta : float, optional
        δ in (0, 1), required for the Gaussian mechanisms only.
    clients : array_like of int, optional
        The label parties taking part; each must hold at least one example.
    ledger : BudgetLedger, optional
        Charged (ε, δ) per label before anything is released; a release that
        would exceed its total raises ``BudgetExceededError``.
    rng : int, Generator or None
        Source of all noise.

    Returns
    -------
    VerticalAUC
        ``.value``, ``.standard_error``, the parameters used and ``.guarantee``.

    Raises
    ------
    ValueError
        On labels that are not 0/1 or of a single class, lengths that disagree
        (scores vs. the label parties' examples), a declared client with no
        examples, ε ≤ 0, α or β outside (0, 1), unknown options, a missing or
        superfluous δ, or an allocation that the mechanism does not support.
    TypeError
        On non-numeric scores, non-integer client ids or a bad ``rng``.

    Warns
    -----
    UserWarning
        When the noisy positive count leaves (0, M), so the estimate is unreliable.

    Notes
    -----
    Privacy: unit ``"label"`` (neighbouring datasets differ in one label; scores
    and the client assignment are public to the server, §3). ``"rr"`` is
    ε-LabelDP by randomized response; the Laplace mechanisms are ε-LabelDP and
    the Gaussian ones (ε, δ)-LabelDP per label party, and parties hold disjoint
    examples. Each call is one release: repeated calls on the same labels
    compose (RR's flipped labels could be reused at no cost, §4.1).
    The estimate is reported unclipped; the RR estimate is unbiased to first
    order, the Laplace one is a ratio with O(1/M) bias.

    References
    ----------
    .. [1] Sun, Yang, Yao, Xie, Wu & Wang (2023), "Differentially private AUC
       computation in vertical federated learning": eq. (1), §4 (Algorithms
       1-3, eqs. 3-4), §5 (Algorithm 4, §5.2-5.3), Appendices N-P.

    Examples
    --------
    >>> import numpy as np, fedeval.vertical as fv
    >>> s = np.array([0.1, 0.4, 0.35, 0.8]); y = np.array([0, 0, 1, 1])
    >>> fv.auc(s, y, [0, 0, 1, 1], epsilon=None).value
    0.75
    """
    parsed = _parse_mechanism(mechanism)
    s, y, ids = _validate_inputs(scores, labels, client_of_example)
    eps = None if epsilon is None else check_epsilon(epsilon)
    if allocation not in get_args(Allocation):
        raise ValueError(f"allocation must be one of {get_args(Allocation)}, got {allocation!r}")
    a = check_probability(alpha, name="alpha", open_high=True)
    b = check_probability(beta, name="beta", open_high=True)
    if parsed is None or parsed[0] == "laplace":
        if delta not in (None, 0, 0.0):
            raise ValueError(f"delta is only used by the Gaussian mechanisms, got delta={delta!r}")
    elif eps is not None:
        if delta is None:
            raise ValueError(f"mechanism={mechanism!r} needs delta in (0, 1); got delta=None")
        check_delta(delta)
    if parsed is None and allocation != "fixed":
        raise ValueError(
            f"allocation={allocation!r} applies to the Laplace/Gaussian mechanisms, not 'rr'"
        )
    if parsed is not None and parsed[1] == "global" and allocation != "fixed":
        raise ValueError(
            f"allocation={allocation!r} needs each client's own ranks; mechanism={mechanism!r} "
            "supports allocation='fixed' only"
        )
    client_ids, index = _index_clients(ids, clients)
    protocol = _build_protocol(_mid_ranks(s), index, client_ids)
    m, k = protocol.n_examples, protocol.n_clients
    gen = as_generator(rng)

    if eps is None:
        exact = _local_statistics(protocol, y)
        return VerticalAUC(
            value=exact.auc(),
            standard_error=0.0,
            mechanism=str(mechanism),
            epsilon=None,
            delta=0.0,
            allocation=None,
            alpha=None,
            beta=None,
            n_examples=m,
            n_clients=k,
            guarantee=_NO_DP,
            released_n_pos=exact.n_pos,
        )
    if ledger is not None:
        # Charged before any noise is drawn; a refusal releases nothing.
        ledger.charge(
            f"vertical AUC ({mechanism})",
            eps,
            0.0 if delta is None else float(delta),
            unit="label",
            details={"mechanism": str(mechanism), "n_clients": k},
        )
    if parsed is None:
        return _rr(protocol, y, eps, gen)
    noise, sens = parsed
    plan = noise_plan(
        protocol,
        epsilon=eps,
        noise=noise,
        sensitivity=sens,
        allocation=allocation,
        alpha=a,
        beta=b,
        delta=delta,
    )
    released = release_local_statistics(protocol, y, plan, rng=gen)
    p_bar = released.n_pos
    _warn_counts("the released positive count P̄", p_bar, m, stacklevel=3)
    value = released.auc()
    se = math.nan
    if 0 < p_bar < m and math.isfinite(value):
        se = math.sqrt(laplace_variance_delta(protocol, plan, auc=value, n_pos=p_bar))
    return VerticalAUC(
        value=value,
        standard_error=se,
        mechanism=str(mechanism),
        epsilon=eps,
        delta=plan.delta,
        allocation=allocation,
        alpha=plan.alpha,
        beta=plan.beta,
        n_examples=m,
        n_clients=k,
        guarantee=plan.guarantee(),
        released_n_pos=p_bar,
        client_beta=plan.client_beta,
    )


def _rr(
    protocol: RankProtocol, y: NDArray[np.int8], eps: float, gen: np.random.Generator
) -> VerticalAUC:
    m = protocol.n_examples
    rho = flip_probability(eps)
    flipped = (y ^ (gen.random(m) < rho)).astype(np.int8)  # Algorithm 1, all clients
    noisy = _local_statistics(protocol, flipped)  # Algorithm 2
    p_bar = noisy.n_pos
    noisy_auc = noisy.auc()
    value = debias_auc(noisy_auc, p_bar, m, epsilon=eps)  # Algorithm 3
    p_est = (p_bar - m * rho) / (1.0 - 2.0 * rho)
    _warn_counts("the estimated positive count P'", p_est, m, stacklevel=4)
    se = math.nan
    if 0 < p_est < m and math.isfinite(value):
        se = math.sqrt(rr_variance_delta(protocol.ranks, n_pos=p_est, auc=value, epsilon=eps))
    return VerticalAUC(
        value=value,
        standard_error=se,
        mechanism="rr",
        epsilon=eps,
        delta=0.0,
        allocation=None,
        alpha=None,
        beta=None,
        n_examples=m,
        n_clients=protocol.n_clients,
        guarantee=Guarantee(
            epsilon=eps,
            delta=0.0,
            unit="label",
            statement=(
                f"randomized response flips each label with probability 1/(1+e^eps) = {rho:.4g}, "
                "so each released label is eps-LabelDP; the rank sums and counts sent to the "
                "server are post-processing of the flipped labels"
            ),
        ),
        noisy_auc=noisy_auc,
        released_n_pos=p_bar,
    )
