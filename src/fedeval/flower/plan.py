"""What the Flower server tells every selected client: the evaluation plan.

The plan carries the public parameters of one release (the privacy model, the
hierarchy's shape and score domain, the public bound on a client's examples,
the number of noise shares and the reconstruction threshold, and under local
DP the client's level) as one JSON string, because Flower config records hold
only scalars. From it, client and server rebuild the *same* sketch and the
*same* mechanism that the in-process release uses
(:class:`~fedeval.sketches.hierarchy.HierarchySketch`,
:func:`~fedeval.privacy.mechanism_for.mechanism_for`): Flower only transports.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from fedeval.privacy.mechanism_for import Mechanism, mechanism_for
from fedeval.privacy.models import PrivacyModel, model_from_dict
from fedeval.sketches.hierarchy import HierarchySketch, HierarchySpec

__all__ = ["PLAN_KEY", "EvaluationPlan"]

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
        Public bound on the examples one client may hold; it fixes the range of an
        honest reply (and the SecAgg+ clipping range). A client above it refuses.
    n_shares : int
        Clients selected for the secure sum (each adds one noise share).
    min_received : int
        The smallest number of contributions the secure sum can ever hold (the
        SecAgg+ reconstruction threshold); noise shares are calibrated to it.
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
        """Validate every field, and that the model can release the hierarchy.

        Raises
        ------
        ValueError
            An invalid field or an unknown privacy model.
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
        """The mechanism of this release, exactly as the in-process pipeline chooses it."""
        return mechanism_for(
            self.model, self.sketch, n_clients=self.n_shares, min_received=self.min_received
        )

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
