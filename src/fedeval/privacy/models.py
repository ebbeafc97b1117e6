"""Privacy models: who is trusted, what is protected, and with which budget.

A privacy model is a frozen description; it holds no noise and no state. Privacy
is given to every entry point of fedeval as one of these objects. The one
dispatch, :func:`fedeval.privacy.mechanism_for.mechanism_for`, turns a model and
a sketch's declared sensitivity into a mechanism; the release function
(:func:`fedeval.aggregation.release`) charges its budget and draws its noise.

Every model states

* ``unit`` and ``neighbouring``: what two neighbouring datasets differ in;
* ``regime``: "exact" (no noise), "central" (noise on the aggregate, whoever
  adds it) or "local" (every report randomised on the device), which is all
  the planner needs to choose parameters (:func:`fedeval.plan`);
* ``scaled(fraction)``: the same model with a fraction of its budget, for
  releases that split one budget over several parts;
* ``example_count_public``: whether neighbouring datasets have the same number
  of examples, so that the count may be used (e.g. to normalise an ECDF).

| model | trust | noise | unit |
|---|---|---|---|
| SecureAggregation | server sees only the sum | none | none (no DP) |
| CentralDP | a trusted curator sees the exact sums | discrete Laplace added by the curator | example |
| DistributedDP | server sees only the sum | every client adds a share (Pólya / Skellam) summing to the central noise | example, or client with a contribution bound |
| LocalDP | nobody | each report randomised on the device (OUE / RR) | example (one report) |
| LabelDP | scores public to the server, labels private | randomised response / Laplace on label statistics | label |
| UserLevelDP | server sees only the (clipped) sum | Gaussian on the aggregate | client (clipped contribution) |
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, ClassVar, Literal

from fedeval.privacy.guarantee import Neighbouring, PrivacyUnit
from fedeval.validation import check_delta, check_epsilon, check_int_at_least, check_positive

__all__ = [
    "CentralDP",
    "DistributedDP",
    "LabelDP",
    "LocalDP",
    "PrivacyModel",
    "Regime",
    "SecureAggregation",
    "UserLevelDP",
    "model_from_dict",
    "model_label",
    "model_to_dict",
    "privacy_model",
]

Regime = Literal["exact", "central", "local"]

#: The largest ε of a local randomiser: its flip probabilities need e^ε to be finite.
MAX_LOCAL_EPSILON = 700.0


@dataclass(frozen=True)
class SecureAggregation:
    """Secure aggregation only: the server learns the exact sum and nothing else.

    This is not differential privacy: an adversary knowing every other client's
    input can subtract it. Its guarantee is "none" and no budget is charged.
    """

    name: Literal["sa"] = "sa"
    regime: ClassVar[Regime] = "exact"

    @property
    def epsilon(self) -> float:
        return math.inf

    @property
    def delta(self) -> float:
        return 0.0

    @property
    def unit(self) -> PrivacyUnit:
        return "none"

    @property
    def neighbouring(self) -> Neighbouring:
        return "add_remove"

    @property
    def example_count_public(self) -> bool:
        """Without DP nothing is protected, the count included."""
        return True

    def scaled(self, fraction: float) -> SecureAggregation:
        return self

    def describe(self) -> str:
        return "secure aggregation (exact sums, no differential privacy)"


@dataclass(frozen=True)
class DistributedDP:
    """Distributed DP: each client adds a noise share; shares sum to central noise.

    Parameters
    ----------
    epsilon : float
        Total ε of one release (split across what the release contains, e.g. the
        levels of a hierarchy), > 0.
    noise : {"polya", "skellam"}
        "polya": shares sum to discrete Laplace, pure ε-DP (Cormode–Markov §2.2,
        Balle et al. 2020). "skellam": shares sum to Skellam noise, (ε, δ)-DP
        (Agarwal et al. 2021); needs ``delta``.
    delta : float, optional
        Required for Skellam noise, in (0, 1).
    unit : {"example", "client"}
        "example": neighbours differ in one example (event-level, the papers'
        setting). "client": neighbours differ in one client's whole data; every
        client's contribution is bounded to ``contribution_bound`` examples
        (excess examples are subsampled) and sensitivity scales by that bound.
        In both, the participating clients themselves are public (the secure
        sum's participants are seen by the server): a client whose data is
        removed still takes part, with no examples.
    contribution_bound : int, optional
        Maximum examples B a client may contribute; required for
        ``unit="client"``. A client holding more is subsampled to B uniformly at
        random before it encodes. Under ``unit="example"`` an added example may
        then displace a kept one, so the noise is calibrated to swapping one
        example (twice the add/remove sensitivity of a histogram), as the
        receipt's sensitivity states.
    min_clients_fraction : float
        Fraction of selected clients whose shares must arrive (the secure
        aggregation reconstruction threshold). Shares are calibrated so that any
        ``ceil(fraction * n_clients)`` of them already sum to the target noise;
        1.0 (default) assumes no dropouts.
    neighbouring : {"add_remove", "replace"}
        Add/remove one unit (default), or replace one unit's data (the number
        of units is then public; the ECDF releases of Barczewski et al. use it).
    """

    epsilon: float
    noise: Literal["polya", "skellam"] = "polya"
    delta: float | None = None
    unit: Literal["example", "client"] = "example"
    contribution_bound: int | None = None
    min_clients_fraction: float = 1.0
    neighbouring: Neighbouring = "add_remove"
    name: Literal["distdp"] = "distdp"
    regime: ClassVar[Regime] = "central"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        if self.noise not in ("polya", "skellam"):
            raise ValueError(f"noise must be 'polya' or 'skellam', got {self.noise!r}")
        if self.noise == "skellam":
            if self.delta is None:
                raise ValueError("Skellam noise gives (ε, δ)-DP: pass delta in (0, 1)")
            object.__setattr__(self, "delta", check_delta(self.delta))
        elif self.delta not in (None, 0, 0.0):
            raise ValueError("Pólya noise is pure ε-DP: delta must be None")
        if self.unit not in ("example", "client"):
            raise ValueError(f"unit must be 'example' or 'client', got {self.unit!r}")
        if self.unit == "client":
            if self.contribution_bound is None:
                raise ValueError(
                    "client-level DP needs contribution_bound (the most examples one client may "
                    "contribute); sensitivity is never assumed"
                )
            check_int_at_least(self.contribution_bound, 1, name="contribution_bound")
        elif self.contribution_bound is not None:
            check_int_at_least(self.contribution_bound, 1, name="contribution_bound")
        f = float(self.min_clients_fraction)
        if not (0.0 < f <= 1.0):
            raise ValueError(
                f"min_clients_fraction must lie in (0, 1], got {self.min_clients_fraction!r}"
            )
        _check_neighbouring(self.neighbouring)

    @property
    def delta_or_zero(self) -> float:
        return 0.0 if self.delta is None else float(self.delta)

    @property
    def examples_per_unit(self) -> int:
        """How many examples one privacy unit can contribute."""
        return 1 if self.unit == "example" else int(self.contribution_bound or 1)

    @property
    def example_count_public(self) -> bool:
        """Whether neighbours have the same number of examples in the sum.

        Only under replacement of one example with every example kept: add/remove
        changes the count, and a contribution bound makes the kept count depend
        on the data.
        """
        return (
            self.neighbouring == "replace"
            and self.unit == "example"
            and self.contribution_bound is None
        )

    def scaled(self, fraction: float) -> DistributedDP:
        """The same model with ``fraction`` of ε (and δ)."""
        delta = None if self.delta is None else self.delta * fraction
        return replace(self, epsilon=self.epsilon * fraction, delta=delta)

    def describe(self) -> str:
        d = f", δ={self.delta:.3g}" if self.delta else ""
        bound = f", ≤{self.contribution_bound} examples/client" if self.unit == "client" else ""
        return (
            f"distributed DP ({self.noise} shares, ε={self.epsilon:.4g}{d} per {self.unit}{bound})"
        )


@dataclass(frozen=True)
class CentralDP:
    """Central DP: a trusted curator sees the exact sums and adds discrete Laplace noise.

    The textbook trust model (Dwork et al. 2006): the curator learns everything
    the clients send, and only what it publishes is private. Useful as a
    baseline for distributed DP, which reaches the same noise without trusting
    anyone with the exact sums.

    Parameters
    ----------
    epsilon : float
        Total ε of one release (split across its parts, e.g. the levels of a
        hierarchy), > 0.
    neighbouring : {"add_remove", "replace"}
        Add/remove one example (default), or replace one example's data.

    Notes
    -----
    The noise is discrete Laplace (the geometric mechanism) on the integer
    sums, drawn by exact inversion of the random generator's raw 64-bit words
    (:mod:`fedeval.privacy.mechanisms.exact_sampling`): the law of the noise
    is exactly the discrete Laplace for any bit generator, so the pure ε-DP
    guarantee (δ = 0) holds exactly on a computer, not only up to floating-point
    rounding. Sketches with real values cannot be released under this model.
    """

    epsilon: float
    neighbouring: Neighbouring = "add_remove"
    name: Literal["central"] = "central"
    regime: ClassVar[Regime] = "central"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        _check_neighbouring(self.neighbouring)

    @property
    def delta(self) -> float:
        return 0.0

    @property
    def unit(self) -> PrivacyUnit:
        return "example"

    @property
    def example_count_public(self) -> bool:
        """Only under replacement do neighbours have the same number of examples."""
        return self.neighbouring == "replace"

    def scaled(self, fraction: float) -> CentralDP:
        return replace(self, epsilon=self.epsilon * fraction)

    def describe(self) -> str:
        return f"central DP (trusted curator, discrete Laplace, ε={self.epsilon:.4g} per example)"


@dataclass(frozen=True)
class LocalDP:
    """Local DP: every report is randomised on the device before it leaves.

    Parameters
    ----------
    epsilon : float
        ε of each report, > 0.
    oracle : {"oue", "rr"}
        Frequency oracle: optimal unary encoding (Wang et al. 2017; the default,
        variance 4e^ε/(e^ε−1)² per count) or k-ary randomised response (better
        only for very small domains).

    Notes
    -----
    The privacy unit is one example: a client holding k examples sends k
    reports, so its client-level guarantee is kε. Neighbouring reports differ
    in their input (local DP bounds the ratio for any two inputs).
    """

    epsilon: float
    oracle: Literal["oue", "rr"] = "oue"
    name: Literal["ldp"] = "ldp"
    regime: ClassVar[Regime] = "local"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        if self.epsilon > MAX_LOCAL_EPSILON:
            raise ValueError(
                f"local DP needs epsilon <= {MAX_LOCAL_EPSILON:g} (e^ε overflows beyond; such a "
                f"report is sent in the clear anyway), got {self.epsilon!r}"
            )
        if self.oracle not in ("oue", "rr"):
            raise ValueError(f"oracle must be 'oue' or 'rr', got {self.oracle!r}")

    @property
    def delta(self) -> float:
        return 0.0

    @property
    def unit(self) -> PrivacyUnit:
        return "example"

    @property
    def neighbouring(self) -> Neighbouring:
        return "replace"

    @property
    def example_count_public(self) -> bool:
        """Every example sends one report, so the server sees how many there are."""
        return True

    def scaled(self, fraction: float) -> LocalDP:
        return replace(self, epsilon=self.epsilon * fraction)

    def describe(self) -> str:
        return f"local DP ({self.oracle.upper()}, ε={self.epsilon:.4g} per report)"


@dataclass(frozen=True)
class LabelDP:
    """Label DP: features and scores are public to the server, each label is protected.

    Used by the vertical-FL protocols of Sun et al. (2023), where the server
    already holds the scores and ranks them, and the label parties release
    statistics of their labels.

    Parameters
    ----------
    epsilon : float
        ε per label, > 0.
    noise : {"laplace", "gaussian", "rr"}
        "laplace" (default): each label party adds Laplace noise to its label
        statistics (FedAUC_Lap, §5); "gaussian": Gaussian noise, (ε, δ)-DP,
        needs ``delta``; "rr": every label is flipped by randomized response
        before anything is computed (FedAUC_RR, §4).
    delta : float, optional
        Required for Gaussian noise, in (0, 1).

    Notes
    -----
    Neighbouring datasets differ in one label (replacement); the number of
    examples and the scores are public to the server.
    """

    epsilon: float
    noise: Literal["laplace", "gaussian", "rr"] = "laplace"
    delta: float | None = None
    name: Literal["labeldp"] = "labeldp"
    regime: ClassVar[Regime] = "central"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        if self.noise not in ("laplace", "gaussian", "rr"):
            raise ValueError(f"noise must be 'laplace', 'gaussian' or 'rr', got {self.noise!r}")
        if self.noise == "gaussian":
            if self.delta is None:
                raise ValueError("Gaussian noise gives (ε, δ)-DP: pass delta in (0, 1)")
            object.__setattr__(self, "delta", check_delta(self.delta))
        elif self.delta not in (None, 0, 0.0):
            raise ValueError(f"{self.noise} noise is pure ε-DP: delta must be None")

    @property
    def delta_or_zero(self) -> float:
        return 0.0 if self.delta is None else float(self.delta)

    @property
    def unit(self) -> PrivacyUnit:
        return "label"

    @property
    def neighbouring(self) -> Neighbouring:
        return "replace"

    @property
    def example_count_public(self) -> bool:
        """The server holds every example's score: only labels are protected."""
        return True

    def scaled(self, fraction: float) -> LabelDP:
        delta = None if self.delta is None else self.delta * fraction
        return replace(self, epsilon=self.epsilon * fraction, delta=delta)

    def describe(self) -> str:
        d = f", δ={self.delta:.3g}" if self.delta else ""
        return f"label DP ({self.noise}, ε={self.epsilon:.4g}{d} per label)"


@dataclass(frozen=True)
class UserLevelDP:
    """User-level (client-level) DP by clipping plus Gaussian noise on the aggregate.

    Parameters
    ----------
    epsilon, delta : float
        Total (ε, δ) over all rounds of the procedure, accounted by RDP.
    clip : float or (float, float)
        Clipping norm C of each client's contribution (scaling parameters), or
        (C+, C−) for positive and negative histograms (multiclass paper §4.3,
        Appendix B.1).

    References
    ----------
    private-federated-multiclass-calibration, §4.3 and Appendix B.1.
    """

    epsilon: float
    delta: float
    clip: float | tuple[float, float] = 1.0
    name: Literal["userdp"] = "userdp"
    regime: ClassVar[Regime] = "central"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "delta", check_delta(self.delta))
        if isinstance(self.clip, tuple | list):
            if len(self.clip) != 2:
                raise ValueError("clip must be a number or a pair (C_plus, C_minus)")
            c = (
                check_positive(self.clip[0], name="clip[0]"),
                check_positive(self.clip[1], name="clip[1]"),
            )
            object.__setattr__(self, "clip", c)
        else:
            object.__setattr__(self, "clip", check_positive(self.clip, name="clip"))

    @property
    def unit(self) -> PrivacyUnit:
        return "client"

    @property
    def neighbouring(self) -> Neighbouring:
        return "add_remove"

    @property
    def example_count_public(self) -> bool:
        """A client and all its examples may be added or removed."""
        return False

    def scaled(self, fraction: float) -> UserLevelDP:
        return replace(self, epsilon=self.epsilon * fraction, delta=self.delta * fraction)

    def describe(self) -> str:
        return f"user-level DP (Gaussian, clip={self.clip}, ε={self.epsilon:.4g}, δ={self.delta:.3g} per client)"


PrivacyModel = SecureAggregation | CentralDP | DistributedDP | LocalDP | LabelDP | UserLevelDP

_MODELS: dict[str, Any] = {
    cls.name: cls
    for cls in (SecureAggregation, CentralDP, DistributedDP, LocalDP, LabelDP, UserLevelDP)
}


def _check_neighbouring(value: Any) -> None:
    if value not in ("add_remove", "replace"):
        raise ValueError(f"neighbouring must be 'add_remove' or 'replace', got {value!r}")


def model_to_dict(model: Any) -> dict[str, Any]:
    """The model's fields as a JSON-able dict (with its ``name``); inverse :func:`model_from_dict`."""
    out = asdict(model)
    if isinstance(out.get("clip"), tuple):
        out["clip"] = list(out["clip"])
    return out


def model_label(model: Any) -> str:
    """A short label for reports and result keys: ``"sa"``, ``"distdp eps=1"``, ``"ldp eps=2"``."""
    name = str(model_to_dict(model)["name"])
    return name if not math.isfinite(model.epsilon) else f"{name} eps={model.epsilon:g}"


def model_from_dict(data: dict[str, Any]) -> PrivacyModel:
    """Rebuild (and validate) a model written by :func:`model_to_dict`.

    Raises
    ------
    ValueError
        Unknown model name or invalid fields.
    """
    name = data.get("name")
    cls = _MODELS.get(str(name))
    if cls is None:
        raise ValueError(f"unknown privacy model {name!r}; known: {sorted(_MODELS)}")
    known = {f.name for f in fields(cls)}
    kwargs = {k: v for k, v in data.items() if k in known and k != "name"}
    if isinstance(kwargs.get("clip"), list):
        kwargs["clip"] = tuple(kwargs["clip"])
    try:
        model: PrivacyModel = cls(**kwargs)
    except TypeError as exc:
        raise ValueError(f"invalid fields for privacy model {name!r}: {exc}") from None
    return model


def privacy_model(
    name: str,
    *,
    epsilon: float | None = None,
    delta: float | None = None,
    **kwargs: object,
) -> PrivacyModel:
    """Build a privacy model from its short name ("sa", "distdp", "central", "ldp", "labeldp", "userdp").

    A shortcut for the command line and configuration files; the library's
    entry points take the model objects themselves.

    Raises
    ------
    ValueError
        Unknown name, ε missing for a DP model, or ε given for secure aggregation.
    """
    key = name.lower().replace("-", "").replace("_", "")
    if key in ("sa", "secureaggregation", "federated"):
        if epsilon is not None:
            raise ValueError(
                "secure aggregation adds no noise and takes no epsilon; choose a DP model "
                "(distdp, ldp, ...) to use epsilon"
            )
        return SecureAggregation()
    if key not in ("distdp", "central", "centraldp", "ldp", "labeldp", "userdp"):
        raise ValueError(
            f"unknown privacy model {name!r}: use sa, distdp, central, ldp, labeldp or userdp"
        )
    if epsilon is None:
        raise ValueError(f"privacy model {name!r} needs epsilon")
    if key in ("central", "centraldp"):
        return CentralDP(epsilon, **kwargs)  # type: ignore[arg-type]
    if key == "distdp":
        return DistributedDP(epsilon, delta=delta, **kwargs)  # type: ignore[arg-type]
    if key == "ldp":
        return LocalDP(epsilon, **kwargs)  # type: ignore[arg-type]
    if key == "labeldp":
        return LabelDP(epsilon, delta=delta, **kwargs)  # type: ignore[arg-type]
    if delta is None:
        raise ValueError("user-level DP needs delta")
    return UserLevelDP(epsilon, delta, **kwargs)  # type: ignore[arg-type]
