"""What the Flower server tells every selected client: the evaluation plan.

The plan carries the public parameters of one release (the privacy model, the
hierarchy's shape and score domain, the public bound on a client's examples,
the number of noise shares and the reconstruction threshold, whether noise
shares travel in plaintext, and under local DP the client's level) as one JSON
string, because Flower config records hold only scalars. From it, client and
server rebuild the *same* sketch and the *same* mechanism that the in-process
release uses (:class:`~fedeval.sketches.hierarchy.HierarchySketch`,
:func:`~fedeval.privacy.mechanism_for.mechanism_for`): Flower only transports.

Every client keeps at most :attr:`EvaluationPlan.client_bound` of its examples,
chosen uniformly at random with its own random source, before it encodes; under
distributed DP that bound is the model's contribution bound
(:func:`with_client_bound`), so the noise covers what subsampling can do.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from functools import cached_property
from typing import Any

from fedeval.privacy.mechanism_for import Mechanism, mechanism_for
from fedeval.privacy.models import PrivacyModel, model_from_dict, model_to_dict
from fedeval.privacy.noise import PolyaShareNoise
from fedeval.sketches.hierarchy import HierarchySketch, HierarchySpec

__all__ = ["PLAN_KEY", "EvaluationPlan", "plaintext_shares_mechanism", "with_client_bound"]

PLAN_KEY = "fedeval-plan"
"""Config-record key under which the JSON plan travels."""


@dataclass(frozen=True)
class EvaluationPlan:
    """What the server tells every selected client.

    Attributes
    ----------
    privacy : dict
        :func:`~fedeval.privacy.models.model_to_dict` of the model.
    height, branching : int
        Hierarchy shape (b-ary, levels 1..h).
    score_range : tuple of float
        Public score domain.
    max_examples : int
        Public bound on the examples one client encodes, declared by the
        operator (``max-examples-per-client``); a client holding more keeps
        that many, chosen uniformly at random with its own random source. It
        fixes the range of an honest reply (and the SecAgg+ clipping range).
        Only a run of secure aggregation alone may take it from the clients'
        declared sizes.
    n_shares : int
        The public number of clients planned for: the declared cohort size
        (``cohort_declared``), or, where the number of participating clients is
        public, the clients selected. The hierarchy, the SecAgg+ parameters and
        the noise shares are planned from it, never from a private count.
    min_received : int
        The smallest number of contributions the secure sum can ever hold (the
        SecAgg+ reconstruction threshold, planned from ``n_shares``); noise
        shares are calibrated to it.
    level : int
        Local DP only: the hierarchy level (1..h) this client reports at; 0 otherwise.
    setting : str
        Name of the evaluation in the report.
    plaintext_shares : bool
        Distributed DP without SecAgg+: the server sees every client's reply,
        so the release is each client's own vector and its guarantee is that of
        one noise share seen alone (:func:`plaintext_shares_mechanism`).
    cohort_declared : bool
        Whether ``n_shares`` is the cohort size the operator declared public
        (``cohort-size``) rather than the public number of clients selected.
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
    plaintext_shares: bool = False
    cohort_declared: bool = False

    def __post_init__(self) -> None:
        """Validate every field, and that the model can release the hierarchy.

        Raises
        ------
        ValueError
            An invalid field, an unknown privacy model, or noise shares in
            plaintext whose single share states no guarantee (Skellam).
        TypeError
            A model that cannot release the hierarchy (e.g. UserLevelDP, LabelDP),
            as :func:`~fedeval.privacy.mechanism_for.mechanism_for` decides.
        """
        model_from_dict(self.privacy)  # validates
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
        if not isinstance(self.plaintext_shares, bool):
            raise ValueError(f"plaintext_shares must be a bool, got {self.plaintext_shares!r}")
        if not isinstance(self.cohort_declared, bool):
            raise ValueError(f"cohort_declared must be a bool, got {self.cohort_declared!r}")
        object.__setattr__(self, "score_range", (lo, hi))
        self.mechanism()  # a model the hierarchy cannot be released under: TypeError

    @property
    def model(self) -> PrivacyModel:
        return model_from_dict(self.privacy)

    @property
    def spec(self) -> HierarchySpec:
        """The released hierarchy."""
        return HierarchySpec(self.height, self.branching, self.score_range, 2)

    @property
    def sketch(self) -> HierarchySketch:
        """The sketch of the release (the hierarchy, every level)."""
        return HierarchySketch(self.spec)

    def mechanism(self) -> Mechanism:
        """The mechanism of this release, exactly as the in-process pipeline chooses it.

        Plus what the Flower transport changes: noise shares in plaintext are
        receipted with the ε of one share seen alone, and the guarantee names
        the public bound and, under local DP, the per-client report counts the
        server sees.
        """
        return self._mechanism

    @cached_property
    def _mechanism(self) -> Mechanism:
        # Computed once per plan: clients and server ask for it many times.
        mech = mechanism_for(
            self.model, self.sketch, n_clients=self.n_shares, min_received=self.min_received
        )
        if self.plaintext_shares and mech.placement == "shares":
            mech = plaintext_shares_mechanism(mech)
        # With a declared cohort the shares' number and threshold are planned from it, not
        # from the clients that take part: the cohort's own entry says so instead.
        replaced = (SHARES_INPUT,) if self.cohort_declared else ()
        return _with_public(mech, self._public_inputs(mech), replaced)

    def _public_inputs(self, mech: Mechanism) -> tuple[str, ...]:
        if mech.exact:
            return ()
        out: tuple[str, ...] = (
            f"max-examples-per-client = {self.max_examples}: every client encodes at most "
            "that many of its examples, chosen uniformly at random",
        )
        if self.cohort_declared and mech.placement == "shares":
            out += (
                f"cohort-size = {self.n_shares}, declared public by the operator: the noise "
                f"shares are calibrated to the reconstruction threshold {self.min_received} "
                "planned from it, and the sum is released only if at least that many clients "
                "contribute",
            )
        if mech.placement == "local":
            if not mech.model.example_count_public:
                raise ValueError(
                    "local-DP clients send their number of reports in plaintext; the model "
                    "must treat the number of examples as public"
                )
            out += (
                "the number of reports each client sends (its examples, at most "
                "max-examples-per-client), in plaintext: public because local DP's "
                "neighbours replace one example",
            )
        return out

    @property
    def client_bound(self) -> int:
        """The most examples one client encodes: ``max_examples``, or a smaller model bound."""
        bound = self.mechanism().contribution_bound
        return int(self.max_examples) if bound is None else min(int(self.max_examples), bound)

    @property
    def sent_sketch(self) -> HierarchySketch:
        """What a client's vector encodes: leaves only for exact sums (upper levels are sums)."""
        return self.sketch.exact_variant() if self.mechanism().exact else self.sketch

    @property
    def vector_length(self) -> int:
        """Length of one client's reply."""
        if self.mechanism().placement == "local":
            if self.level < 1:
                raise ValueError("a local-DP plan needs the client's level (1..h)")
            return self.sketch.parts[self.level - 1].length
        return self.sent_sketch.length

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


def with_client_bound(model: PrivacyModel, max_examples: int) -> PrivacyModel:
    """The model of a Flower evaluation: the public bound as its contribution bound.

    Every Flower client subsamples itself to ``max_examples`` before it encodes.
    Under distributed DP that subsampling is a contribution bound, so a model
    with a ``contribution_bound`` field left unset gets ``max_examples``; the
    dispatch then calibrates the noise to what one added example can do after
    subsampling (:func:`~fedeval.privacy.mechanism_for.mechanism_for`). A bound
    the model already has is kept (clients keep the smaller of the two); models
    without such a field are returned unchanged.
    """
    d = model_to_dict(model)
    if "contribution_bound" not in d or d["contribution_bound"] is not None:
        return model
    d["contribution_bound"] = int(max_examples)
    return model_from_dict(d)


def plaintext_shares_mechanism(mech: Mechanism) -> Mechanism:
    """Noise shares sent in plaintext: the guarantee of one share seen alone.

    Without secure aggregation the server sees every client's reply, its
    encoding plus one noise share. Each example is in one client's reply, so
    the release is ε′-DP with ε′ the exact ε of one Pólya share
    (:meth:`~fedeval.privacy.mechanism_for.Mechanism.when_received` with one
    share), whatever number of replies arrive; the sum the server decodes is
    post-processing. The guarantee, the receipt and the ledger entries state
    ε′, and the statement says the server sees each share.

    Raises
    ------
    ValueError
        Noise other than Pólya shares (Skellam): one share alone states no guarantee.
    """
    if mech.placement != "shares":
        return mech
    if not isinstance(mech.noise, PolyaShareNoise):
        raise ValueError(
            f"{mech.description}: only Pólya shares state a guarantee for one share seen "
            "alone (a Skellam share does not), so these noise shares are refused in plaintext "
            "(secagg = false); use SecAgg+ (secagg = true) or Pólya shares"
        )
    one = mech.when_received(1)
    eps = one.guarantee.epsilon
    target = one.target or mech.guarantee
    statement = (
        "plaintext: the server sees each client's share (no secure aggregation), so every "
        f"client's reply is released on its own and one share seen alone gives the exact "
        f"ε = {eps:.6g} (the target ε = {target.epsilon:.4g} needs SecAgg+); {target.statement}"
    )
    # One share already carries the whole guarantee: no threshold left to reach.
    return replace(one, guarantee=replace(one.guarantee, statement=statement), min_received=1)


SHARES_INPUT = "the number of clients adding shares and the reconstruction threshold"
"""The public input :func:`~fedeval.privacy.mechanism_for.mechanism_for` names for shares
calibrated to a given threshold."""


def _with_public(
    mech: Mechanism, more: tuple[str, ...], replaced: tuple[str, ...] = ()
) -> Mechanism:
    """The mechanism whose guarantee (and target guarantee) also names ``more`` as public.

    Entries in ``replaced`` are dropped (``more`` states them more precisely).
    """
    if not more and not replaced:
        return mech

    def public(old: tuple[str, ...]) -> tuple[str, ...]:
        return (*(p for p in old if p not in replaced), *more)

    guarantee = replace(mech.guarantee, public=public(mech.guarantee.public))
    target = (
        None if mech.target is None else replace(mech.target, public=public(mech.target.public))
    )
    return replace(mech, guarantee=guarantee, target=target)
