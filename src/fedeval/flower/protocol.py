"""The Flower protocol of fedeval, in pure Python (no ``flwr`` import).

Everything the Flower apps exchange or decide that can be stated without Flower
lives here, so it can be tested without the optional extra:

* :class:`EvaluationPlan` — what the server sends every selected client (hierarchy
  shape, privacy model, number of shares and reconstruction threshold), encoded as
  one JSON string because Flower config records hold only scalars.
* :func:`encode_client` — the faithful client encoder: fedeval's own per-client
  code (:func:`fedeval.aggregation.client_vector` with the noise share of
  :func:`fedeval.privacy.noise_shares.share_noise_for`, or one OUE/RR report per
  example under local DP).
* :class:`ReplyRange`, :func:`reply_range`, :func:`check_reply` — the range of
  every honest reply; a reply outside it is rejected.
* :func:`choose_clipping_range`, :func:`secagg_parameters` — the integer-exact
  SecAgg+ configuration and a clipping range that honest noisy shares exceed only
  with a stated probability, folded into the guarantee as a δ.
* :func:`decode_sum`, :func:`decode_ldp`, :func:`build_evaluation` — the server's
  decoding, mirroring :func:`fedeval.sketches.hierarchy.release_hierarchy`.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, cast

import numpy as np
from numpy.typing import NDArray

from fedeval.aggregation import (
    ClientEncoder,
    FrequencyOracle,
    ShareNoise,
    client_vector,
    limit_contributions,
)
from fedeval.data import ClientView, Federation
from fedeval.evaluation import Evaluation, resolve_parameters
from fedeval.privacy.guarantee import Guarantee
from fedeval.privacy.ledger import LedgerEntry
from fedeval.privacy.mechanisms.polya import PolyaShares
from fedeval.privacy.mechanisms.skellam import SkellamShares
from fedeval.privacy.models import DistributedDP, LocalDP, PrivacyModel, SecureAggregation
from fedeval.privacy.noise_shares import frequency_oracle_for, share_noise_for
from fedeval.randomness import as_generator
from fedeval.sketches.hierarchy import HierarchicalHistogram, HierarchySpec, decode_ldp_levels

__all__ = [
    "PLAN_KEY",
    "EvaluationPlan",
    "NotEnoughClientsError",
    "ReplyOutOfRangeError",
    "ReplyRange",
    "RunFacts",
    "SecAggParameters",
    "assign_levels",
    "build_evaluation",
    "check_enough_clients",
    "check_reply",
    "choose_clipping_range",
    "clipping_delta",
    "decode_ldp",
    "decode_sum",
    "encode_client",
    "privacy_from_dict",
    "privacy_to_dict",
    "reply_range",
    "secagg_parameters",
    "share_noise",
]

PLAN_KEY = "fedeval-plan"
"""Config-record key under which the JSON plan travels."""

PrivacyName = Literal["sa", "distdp", "ldp"]

# SecAgg+ works modulo modulus_range; flwr requires a power of two below 2**32 for
# its int64 arithmetic to be safe, and quantizes into int32.
MAX_MODULUS = 2**32
MAX_CLIPPING_RANGE = 2**29


class ReplyOutOfRangeError(ValueError):
    """A client's reply lies outside the range of every honest encoding."""


class NotEnoughClientsError(RuntimeError):
    """Fewer clients remain than the evaluation needs."""


# ----------------------------------------------------------------- privacy codec
def privacy_to_dict(model: PrivacyModel) -> dict[str, Any]:
    """The privacy model as JSON-able fields (inverse: :func:`privacy_from_dict`).

    Raises
    ------
    TypeError
        For models the Flower apps do not support (label DP, user-level DP).
    """
    if isinstance(model, SecureAggregation):
        return {"name": "sa"}
    if isinstance(model, DistributedDP):
        return {
            "name": "distdp",
            "epsilon": model.epsilon,
            "noise": model.noise,
            "delta": model.delta,
            "unit": model.unit,
            "contribution_bound": model.contribution_bound,
            "min_clients_fraction": model.min_clients_fraction,
        }
    if isinstance(model, LocalDP):
        return {"name": "ldp", "epsilon": model.epsilon, "oracle": model.oracle}
    raise TypeError(
        f"the Flower apps support SecureAggregation, DistributedDP and LocalDP, "
        f"not {type(model).__name__}"
    )


def privacy_from_dict(d: dict[str, Any]) -> SecureAggregation | DistributedDP | LocalDP:
    """Rebuild a privacy model from :func:`privacy_to_dict` output (validates it)."""
    name = d.get("name")
    if name == "sa":
        return SecureAggregation()
    if name == "distdp":
        return DistributedDP(
            float(d["epsilon"]),
            noise=d.get("noise", "polya"),
            delta=d.get("delta"),
            unit=d.get("unit", "example"),
            contribution_bound=d.get("contribution_bound"),
            min_clients_fraction=float(d.get("min_clients_fraction", 1.0)),
        )
    if name == "ldp":
        return LocalDP(float(d["epsilon"]), oracle=d.get("oracle", "oue"))
    raise ValueError(f"unknown privacy model in plan: {name!r} (expected sa, distdp or ldp)")


# ---------------------------------------------------------------------- the plan
@dataclass(frozen=True)
class EvaluationPlan:
    """What the server tells every selected client.

    Attributes
    ----------
    privacy : dict
        :func:`privacy_to_dict` of the model.
    height, branching : int
        Hierarchy shape (b-ary, levels 1..h).
    score_range : tuple of float
        Public score domain.
    max_examples : int
        Public bound on the examples one client may hold; it fixes the range of an
        honest reply (and the SecAgg+ clipping range). A client above it refuses.
    n_shares : int
        Clients selected for the secure sum (each adds one noise share).
    min_received : int
        The smallest number of contributions the secure sum can ever hold (the
        SecAgg+ reconstruction threshold); DistDP shares are calibrated to it.
    level : int
        Local DP only: the hierarchy level (1..h) this client reports at; 0 otherwise.
    setting : str
        Name of the evaluation in the report.
    """

    privacy: dict[str, Any]
    height: int
    branching: int
    score_range: tuple[float, float]
    max_examples: int
    n_shares: int = 1
    min_received: int = 1
    level: int = 0
    setting: str = ""

    def __post_init__(self) -> None:
        privacy_from_dict(self.privacy)  # validates
        lo, hi = (float(x) for x in self.score_range)
        HierarchySpec(self.height, self.branching, (lo, hi), 2)
        if int(self.max_examples) < 1:
            raise ValueError(f"max_examples must be >= 1, got {self.max_examples}")
        if not 1 <= int(self.min_received) <= int(self.n_shares):
            raise ValueError(
                f"need 1 <= min_received <= n_shares, got {self.min_received} and {self.n_shares}"
            )
        if not 0 <= int(self.level) <= int(self.height):
            raise ValueError(f"level must lie in [0, {self.height}], got {self.level}")
        object.__setattr__(self, "score_range", (lo, hi))

    @property
    def model(self) -> SecureAggregation | DistributedDP | LocalDP:
        return privacy_from_dict(self.privacy)

    @property
    def name(self) -> PrivacyName:
        return cast(PrivacyName, self.privacy["name"])

    @property
    def spec(self) -> HierarchySpec:
        """The released hierarchy."""
        return HierarchySpec(self.height, self.branching, self.score_range, 2)

    @property
    def sent_spec(self) -> HierarchySpec:
        """What a client's vector encodes: leaves only under SA (upper levels are sums)."""
        spec = self.spec
        if self.name == "sa":
            return HierarchySpec(1, spec.n_leaves, spec.score_range, 2)
        return spec

    @property
    def vector_length(self) -> int:
        """Length of one client's reply."""
        if self.name == "ldp":
            if self.level < 1:
                raise ValueError("a local-DP plan needs the client's level (1..h)")
            return 2 * self.spec.level_size(self.level)
        return self.sent_spec.vector_length

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> EvaluationPlan:
        """Parse and validate a plan received from the server.

        Raises
        ------
        ValueError
            Malformed JSON or invalid fields.
        """
        try:
            d = json.loads(text)
        except (TypeError, json.JSONDecodeError) as exc:
            raise ValueError(f"malformed fedeval plan: {exc}") from None
        if not isinstance(d, dict):
            raise ValueError("malformed fedeval plan: not a JSON object")
        try:
            return cls(**d)
        except TypeError as exc:
            raise ValueError(f"malformed fedeval plan: {exc}") from None

    def with_level(self, level: int) -> EvaluationPlan:
        d = asdict(self)
        d["level"] = level
        return EvaluationPlan(**d)


# ------------------------------------------------------------------------ noise
def share_noise(plan: EvaluationPlan) -> PolyaShares | SkellamShares | None:
    """The noise share every client adds under DistDP (None otherwise).

    Calibrated exactly as :func:`fedeval.sketches.hierarchy.release_hierarchy`
    does with ``level_budget="split"``, except that the reconstruction threshold
    is the SecAgg+ threshold ``plan.min_received``: the secure sum is never
    released with fewer contributions, so any released sum carries at least the
    target noise.
    """
    model = plan.model
    if not isinstance(model, DistributedDP):
        return None
    h = plan.height
    bound = model.examples_per_unit
    return share_noise_for(
        model,
        epsilon=model.epsilon,
        l1_sensitivity=h * bound,
        l2_sensitivity=math.sqrt(h) * bound,
        per_coordinate_l1=bound,
        split=h,
        n_shares=plan.n_shares,
        n_min=plan.min_received,
    )


# ---------------------------------------------------------------- client encoder
def encode_client(
    plan: EvaluationPlan,
    scores: NDArray[np.float64],
    labels: NDArray[np.int64],
    rng: np.random.Generator,
) -> NDArray[np.int64]:
    """What one client sends: fedeval's faithful per-client encoding.

    Parameters
    ----------
    plan : EvaluationPlan
    scores : ndarray of float64, shape (n,)
        The client's scores, inside ``plan.score_range``.
    labels : ndarray of int64, shape (n,)
        0/1 labels.
    rng : numpy.random.Generator
        The client's own random source (noise share, OUE bits, subsampling).

    Returns
    -------
    ndarray of int64, shape (plan.vector_length,)
        SA: per-class leaf counts. DistDP: per-class counts of every level plus
        the client's noise share. LDP: per (class, node) of the client's level,
        the number of its examples whose OUE/RR report has that bit set.

    Raises
    ------
    ValueError
        More examples than ``plan.max_examples``, or an encoding outside its range.
    """
    n = int(labels.shape[0])
    if n > plan.max_examples:
        raise ValueError(
            f"the client holds {n} examples, above the declared bound max_examples = "
            f"{plan.max_examples}; raise the bound (a public parameter of the evaluation)"
        )
    model = plan.model
    if isinstance(model, DistributedDP) and (
        model.unit == "client" or model.contribution_bound is not None
    ):
        own = Federation.from_arrays(
            scores, labels, clients=np.zeros(n, dtype=np.int64), score_range=plan.score_range
        )
        own = limit_contributions(own, model.examples_per_unit, rng)
        scores, labels = own.scores, own.labels
    view = ClientView("self", scores, labels)
    if isinstance(model, LocalDP):
        vec = _ldp_report(plan, model, view, rng)
    else:
        sent = plan.sent_spec

        def encode(
            s: NDArray[np.float64], y: NDArray[np.int64], _c: NDArray[np.int64]
        ) -> NDArray[np.int64]:
            return sent.encode_levels(s, y)

        noise = cast("ShareNoise | None", share_noise(plan))
        vec = client_vector(view, 0, cast(ClientEncoder, encode), sent.vector_length, noise, rng)
    if not isinstance(model, DistributedDP):
        check_reply(vec, reply_range(plan, n_examples=n))
    return vec


def _ldp_oracle(plan: EvaluationPlan, model: LocalDP, level: int) -> FrequencyOracle:
    return cast(FrequencyOracle, frequency_oracle_for(model, 2 * plan.spec.level_size(level)))


def _ldp_report(
    plan: EvaluationPlan, model: LocalDP, view: ClientView, rng: np.random.Generator
) -> NDArray[np.int64]:
    # The same item map as fedeval.sketches.hierarchy._release_ldp.
    spec, level = plan.spec, plan.level
    if level < 1:
        raise ValueError("a local-DP plan needs the client's level (1..h)")
    b, h = spec.branching, spec.height
    leaf = spec.grid.bin_index(view.scores)
    node = leaf // (b ** (h - level))
    items = view.labels.astype(np.int64) * (b**level) + node
    reports = _ldp_oracle(plan, model, level).perturb(items.astype(np.int64), rng)
    return np.asarray(reports.sum(axis=0, dtype=np.int64), dtype=np.int64)


# ------------------------------------------------------------------ range checks
@dataclass(frozen=True)
class ReplyRange:
    """The range of every honest reply.

    Attributes
    ----------
    length : int
    low, high : int
        Every coordinate lies in [low, high] (DistDP: only with probability
        1 - clip probability, see :func:`choose_clipping_range`).
    total : int or None
        If set, the coordinates sum to exactly this (RR reports, one item each).
    """

    length: int
    low: int
    high: int
    total: int | None = None


def reply_range(
    plan: EvaluationPlan, *, n_examples: int | None = None, noise_tail: int = 0
) -> ReplyRange:
    """Range of an honest reply under ``plan``.

    Parameters
    ----------
    plan : EvaluationPlan
    n_examples : int, optional
        Examples (= reports) the client declared (LDP) or holds; default the
        public bound ``plan.max_examples``.
    noise_tail : int
        DistDP: the bound τ on |noise share| from :func:`choose_clipping_range`.
    """
    m = plan.max_examples if n_examples is None else int(n_examples)
    if m < 0 or m > plan.max_examples:
        raise ReplyOutOfRangeError(
            f"declared {m} examples, outside [0, max_examples = {plan.max_examples}]"
        )
    model = plan.model
    if isinstance(model, DistributedDP):
        m = min(m, model.examples_per_unit) if model.unit == "client" else m
        return ReplyRange(plan.vector_length, -noise_tail, m + noise_tail)
    total = m if isinstance(model, LocalDP) and model.oracle == "rr" else None
    return ReplyRange(plan.vector_length, 0, m, total)


def check_reply(vector: Any, expected: ReplyRange) -> NDArray[np.int64]:
    """Validate one client's reply; return it as int64.

    Raises
    ------
    ReplyOutOfRangeError
        Wrong shape, non-integer or non-finite values, a coordinate outside
        [low, high], or the wrong total.
    """
    arr = np.asarray(vector)
    if arr.shape != (expected.length,):
        raise ReplyOutOfRangeError(f"reply has shape {arr.shape}, expected ({expected.length},)")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)):
            raise ReplyOutOfRangeError("reply has non-finite values")
        if not np.array_equal(arr, np.round(arr)):
            raise ReplyOutOfRangeError("reply has non-integer values")
    elif arr.dtype.kind not in "iub":
        raise ReplyOutOfRangeError(f"reply has dtype {arr.dtype}, expected integers")
    out = arr.astype(np.int64)
    if out.size and (out.min() < expected.low or out.max() > expected.high):
        raise ReplyOutOfRangeError(
            f"reply has values in [{out.min()}, {out.max()}], outside the honest range "
            f"[{expected.low}, {expected.high}]"
        )
    if expected.total is not None and int(out.sum()) != expected.total:
        raise ReplyOutOfRangeError(
            f"reply sums to {int(out.sum())}, expected exactly {expected.total}"
        )
    return out


def check_enough_clients(n_available: int, n_required: int, *, stage: str) -> None:
    """Stop with a clear error when too few clients remain.

    Raises
    ------
    NotEnoughClientsError
    """
    if n_available < n_required:
        raise NotEnoughClientsError(
            f"{stage}: only {n_available} client(s) remain, the evaluation needs at least "
            f"{n_required} (see the failures listed above; lower min-clients or fix the clients)"
        )


# ---------------------------------------------------------------- SecAgg+ set-up
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


def _share_tail(noise: PolyaShares | SkellamShares, tau: NDArray[np.int64]) -> NDArray[np.float64]:
    """Upper bound on P(|share| > τ) for one coordinate of one honest share.

    A share is X - Y with X, Y >= 0 i.i.d. (Pólya: negative binomial with shape
    1/m and success probability 1-α; Skellam: Poisson(μ_share)), so
    |X - Y| <= max(X, Y) and P(|X - Y| > τ) <= 2 P(X > τ), evaluated exactly by
    the survival function.
    """
    from scipy import stats

    if isinstance(noise, PolyaShares):
        sf = stats.nbinom.sf(tau, noise.shape, 1.0 - noise.alpha)
    else:
        sf = stats.poisson.sf(tau, noise.share_mu)
    return np.asarray(2.0 * sf, dtype=np.float64)


def choose_clipping_range(
    plan: EvaluationPlan,
    *,
    max_dropouts: int,
    clip_probability: float = 1e-9,
    num_shares: int | None = None,
    modulus_range: int = MAX_MODULUS,
) -> SecAggParameters:
    """SecAgg+ parameters whose clipping almost never touches an honest reply.

    Counts lie in [0, M] (M = ``plan.max_examples``, or the contribution bound
    under client-level DP). Under DistDP each coordinate also carries an
    unbounded noise share; the clipping range is C = M + τ with the smallest τ
    such that, by a union bound over every coordinate of every selected client,

        n_selected · length · P(|share| > τ) <= clip_probability,

    where P(|share| > τ) <= 2 P(X > τ) is the exact negative-binomial
    (Pólya) or Poisson (Skellam) tail. Under SA, C = M and nothing is ever clipped.

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
    model = plan.model
    m = plan.max_examples
    if isinstance(model, DistributedDP) and model.unit == "client":
        m = min(m, model.examples_per_unit)
    noise = share_noise(plan)
    tau = 0
    prob = 0.0
    if noise is not None:
        n_coords = plan.n_shares * plan.vector_length
        hi = 1
        while float(_share_tail(noise, np.array([hi]))[0]) * n_coords > clip_probability:
            hi *= 2
            if hi > MAX_CLIPPING_RANGE:
                raise ValueError("noise shares too wide for SecAgg+'s int32 quantization")
        lo = 0
        while lo < hi:  # smallest τ with the union bound <= clip_probability
            mid = (lo + hi) // 2
            if float(_share_tail(noise, np.array([mid]))[0]) * n_coords <= clip_probability:
                hi = mid
            else:
                lo = mid + 1
        tau = lo
        prob = float(_share_tail(noise, np.array([tau]))[0]) * n_coords
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


# ---------------------------------------------------------------------- decoding
@dataclass(frozen=True)
class RunFacts:
    """What the Flower server observed, attached to the result."""

    n_selected: int
    n_used: int
    used_clients: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    rejected: dict[str, str] = field(default_factory=dict)
    secure_aggregation: bool = True
    secagg: dict[str, Any] = field(default_factory=dict)


def decode_sum(
    plan: EvaluationPlan,
    summed: NDArray[np.int64],
    n_received: int,
    *,
    clip_probability: float = 0.0,
    secure: bool = True,
) -> HierarchicalHistogram:
    """The released hierarchy from the secure sum of SA or DistDP replies.

    Mirrors ``_release_sa`` / ``_release_distdp`` (``level_budget="split"``) of
    :mod:`fedeval.sketches.hierarchy`; under DistDP the noise variance is that
    of ``n_received`` shares and the guarantee is the one that holds for that
    many shares, plus the clipping δ.

    Parameters
    ----------
    plan : EvaluationPlan
    summed : ndarray of int64, shape (plan.vector_length,)
    n_received : int
        Contributions in the sum.
    clip_probability : float
        Probability that clipping touched an honest share (DistDP).
    secure : bool
        Whether the sum went through SecAgg+ (stated in the guarantee).
    """
    spec = plan.spec
    vec = np.asarray(summed, dtype=np.int64)
    if vec.shape != (plan.vector_length,):
        raise ValueError(f"summed vector has shape {vec.shape}, expected ({plan.vector_length},)")
    model = plan.model
    via = "SecAgg+" if secure else "a plaintext sum (no secure aggregation)"
    if isinstance(model, SecureAggregation):
        leaves = vec.reshape(spec.n_classes, spec.n_leaves).astype(np.float64)
        levels = tuple(spec.levels_from_leaves(leaves))
        return HierarchicalHistogram(
            spec=spec,
            levels=levels,
            node_variance=tuple(np.zeros_like(lv) for lv in levels),
            guarantee=Guarantee(
                math.inf,
                0.0,
                "none",
                f"secure aggregation of leaf counts from {n_received} Flower clients via {via}: "
                "exact sums, no DP",
            ),
            n_clients=n_received,
            privacy=model.describe(),
            consistent_=True,
        )
    if not isinstance(model, DistributedDP):
        raise ValueError("decode_sum handles SA and DistDP plans; use decode_ldp for LDP")
    noise = share_noise(plan)
    assert noise is not None  # DistDP always has shares
    h = plan.height
    bound = model.examples_per_unit
    unit = model.unit
    if isinstance(noise, PolyaShares):
        variance = noise.share_variance * n_received
        k = max(1, min(n_received, noise.n_shares))
        # At or above the threshold the sum holds the target discrete Laplace.
        per_level_eps = noise.epsilon if k >= plan.min_received else noise.epsilon_if_received(k)
        total_eps = per_level_eps * h
        entries = [
            LedgerEntry(
                f"hierarchy level {k} (both classes)",
                per_level_eps,
                0.0,
                unit,
                {"noise": "polya", "l1_sensitivity": bound, "branching": spec.branching},
            )
            for k in range(1, h + 1)
        ]
        base_delta = 0.0
    else:
        variance = noise.share_variance * n_received
        total_eps = model.epsilon
        base_delta = model.delta_or_zero
        entries = [
            LedgerEntry(
                f"hierarchy, all {h} levels (both classes)",
                model.epsilon,
                base_delta,
                unit,
                {"noise": "skellam", "l1_sensitivity": h * bound},
            )
        ]
        if n_received < plan.min_received:
            raise ValueError("fewer Skellam shares than the threshold: no guarantee can be stated")
    d_clip = clipping_delta(total_eps, clip_probability)
    if d_clip > 0:
        entries.append(
            LedgerEntry(
                "SecAgg+ clipping of honest noise shares",
                0.0,
                d_clip,
                unit,
                {"clip_probability": clip_probability},
            )
        )
    raw = [lv.astype(np.float64) for lv in spec.unflatten(vec)]
    return HierarchicalHistogram(
        spec=spec,
        levels=tuple(raw),
        node_variance=tuple(np.full(lv.shape, variance) for lv in raw),
        guarantee=Guarantee(
            total_eps,
            base_delta + d_clip,
            unit,
            f"{model.noise} noise shares on every node of a height-{h} hierarchy (ε/h per "
            f"level), {n_received} of {plan.n_shares} Flower clients' shares summed by {via} "
            f"(threshold {plan.min_received}), contribution ≤ {bound} example(s) per {unit}"
            + (
                f"; δ includes SecAgg+ clipping probability {clip_probability:.2g}"
                if d_clip
                else ""
            ),
        ),
        ledger_entries=tuple(entries),
        n_clients=n_received,
        privacy=model.describe(),
    )


def decode_ldp(
    plan: EvaluationPlan,
    raw_by_level: list[NDArray[np.int64]],
    n_reports_by_level: NDArray[np.int64],
    clients_by_level: NDArray[np.int64],
) -> HierarchicalHistogram:
    """The released hierarchy from per-level sums of local-DP reports.

    Mirrors ``_release_ldp`` of :mod:`fedeval.sketches.hierarchy`: debias each
    level's counts, scale by M/m_k (clients over clients reporting at level k),
    and attach the oracle variance plus the sampling variance of the level split.

    Parameters
    ----------
    plan : EvaluationPlan
    raw_by_level : list of ndarray of int64
        Level k (index k-1): summed reports, length 2·b^k.
    n_reports_by_level : ndarray of int64, shape (h,)
        Reports (examples) per level.
    clients_by_level : ndarray of int64, shape (h,)
        Clients per level (m_k).
    """
    model = plan.model
    if not isinstance(model, LocalDP):
        raise ValueError("decode_ldp handles local-DP plans")
    spec = plan.spec
    h = spec.height
    n_clients = int(np.sum(clients_by_level))
    n_examples = int(np.sum(n_reports_by_level))
    estimates = [
        _ldp_oracle(plan, model, k + 1).estimate(
            np.asarray(raw_by_level[k], dtype=np.int64), int(n_reports_by_level[k])
        )
        for k in range(h)
    ]
    levels, variances = decode_ldp_levels(
        spec,
        model,
        estimates,
        np.asarray(n_reports_by_level),
        np.asarray(clients_by_level),
        n_examples,
    )
    entries = [
        LedgerEntry(
            "hierarchy, one OUE report per example at its client's level",
            model.epsilon,
            0.0,
            "example",
            {"oracle": model.oracle, "levels": h},
        )
    ]
    return HierarchicalHistogram(
        spec=spec,
        levels=tuple(levels),
        node_variance=tuple(variances),
        guarantee=Guarantee(
            model.epsilon,
            0.0,
            "example",
            f"one {model.oracle.upper()} report per example over (class, node) of one level of a "
            f"height-{h} hierarchy, randomised on {n_clients} Flower clients and sent in plaintext",
        ),
        ledger_entries=tuple(entries),
        n_clients=n_clients,
        privacy=model.describe(),
    )


def build_evaluation(
    tree: HierarchicalHistogram,
    plan: EvaluationPlan,
    *,
    n_buckets: int | None = None,
    n_quantiles: int | None = None,
    interpolation: str = "pchip",
    pr_strategy: str = "separate",
    auc_buckets: str = "equi-depth",
    height_planned: bool = False,
    bootstrap_replicates: int = 200,
    seed: int = 0,
    facts: RunFacts | None = None,
) -> Evaluation:
    """An :class:`~fedeval.evaluation.Evaluation` from a decoded (raw) tree.

    Same post-processing and parameter rules as :func:`fedeval.evaluate`
    (consistency, bucket and quantile defaults from :func:`fedeval.plan`), so
    :func:`fedeval.report.write_report` writes the same report. ``parameters``
    additionally holds ``"flower"``: the facts of the run (clients selected,
    used, failed, rejected, SecAgg+ settings).
    """
    model = plan.model
    chosen, params = resolve_parameters(
        model,
        n_clients=max(tree.n_clients, 1),
        n_examples=max(1, round(float(tree.totals().sum()))),
        height=plan.height,
        branching=plan.branching,
        n_buckets=n_buckets,
        n_quantiles=n_quantiles,
        interpolation=interpolation,
        pr_strategy=pr_strategy,
        auc_buckets=auc_buckets,
        level_budget="assign" if isinstance(model, LocalDP) else "split",
        path="flower",
    )
    params["planned"]["height"] = height_planned
    if facts is not None:
        params["flower"] = asdict(facts)
    consistent = tree if tree.is_consistent else tree.consistent()
    return Evaluation(consistent, params, chosen, bootstrap_replicates, seed)


def assign_levels(n_clients: int, height: int, rng: Any) -> NDArray[np.int64]:
    """Levels 1..h for local-DP clients: a uniformly random near-equal split."""
    gen = as_generator(rng)
    return (gen.permutation(n_clients) % height).astype(np.int64) + 1
