"""Privacy models: who is trusted, what is protected, and with which budget.

A privacy model is a frozen description; it holds no noise and no state. The
release functions (sketches, calibration, vertical AUC) read it to decide how
clients encode and which noise the federated sum gets, and charge its budget to
a :class:`~fedeval.privacy.ledger.BudgetLedger`.

| model | trust | noise | unit |
|---|---|---|---|
| SecureAggregation | server sees only the sum | none | none (no DP) |
| DistributedDP | server sees only the sum | every client adds a share (Pólya / Skellam) summing to the central noise | example, or client with a contribution bound |
| LocalDP | nobody | each report randomised on the device (OUE / RR) | example (one report) |
| LabelDP | scores public to the server, labels private | randomised response / Laplace on label statistics | label |
| UserLevelDP | server sees only the (clipped) sum | Gaussian on the aggregate | client (clipped contribution) |
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from fedeval.privacy.guarantee import PrivacyUnit
from fedeval.validation import check_delta, check_epsilon, check_int_at_least, check_positive

__all__ = [
    "DistributedDP",
    "LabelDP",
    "LocalDP",
    "PrivacyModel",
    "SecureAggregation",
    "UserLevelDP",
    "privacy_model",
]


@dataclass(frozen=True)
class SecureAggregation:
    """Secure aggregation only: the server learns the exact sum and nothing else.

    This is not differential privacy: an adversary knowing every other client's
    input can subtract it. ``epsilon`` is infinite and no budget is charged.
    """

    name: Literal["sa"] = "sa"

    @property
    def epsilon(self) -> float:
        return math.inf

    @property
    def delta(self) -> float:
        return 0.0

    @property
    def unit(self) -> PrivacyUnit:
        return "none"

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
    contribution_bound : int, optional
        Maximum examples a client may contribute; required for ``unit="client"``.
    min_clients_fraction : float
        Fraction of selected clients whose shares must arrive (the secure
        aggregation reconstruction threshold). Shares are calibrated so that any
        ``ceil(fraction * n_clients)`` of them already sum to the target noise;
        1.0 (default) assumes no dropouts.
    """

    epsilon: float
    noise: Literal["polya", "skellam"] = "polya"
    delta: float | None = None
    unit: Literal["example", "client"] = "example"
    contribution_bound: int | None = None
    min_clients_fraction: float = 1.0
    name: Literal["distdp"] = "distdp"

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

    @property
    def delta_or_zero(self) -> float:
        return 0.0 if self.delta is None else float(self.delta)

    @property
    def examples_per_unit(self) -> int:
        """How many examples one privacy unit can contribute."""
        return 1 if self.unit == "example" else int(self.contribution_bound or 1)

    def describe(self) -> str:
        d = f", δ={self.delta:.3g}" if self.delta else ""
        bound = f", ≤{self.contribution_bound} examples/client" if self.unit == "client" else ""
        return (
            f"distributed DP ({self.noise} shares, ε={self.epsilon:.4g}{d} per {self.unit}{bound})"
        )


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
    reports, so its client-level guarantee is kε.
    """

    epsilon: float
    oracle: Literal["oue", "rr"] = "oue"
    name: Literal["ldp"] = "ldp"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        if self.oracle not in ("oue", "rr"):
            raise ValueError(f"oracle must be 'oue' or 'rr', got {self.oracle!r}")

    @property
    def delta(self) -> float:
        return 0.0

    @property
    def unit(self) -> PrivacyUnit:
        return "example"

    def describe(self) -> str:
        return f"local DP ({self.oracle.upper()}, ε={self.epsilon:.4g} per report)"


@dataclass(frozen=True)
class LabelDP:
    """Label DP: features and scores are not protected, each label is (ε-DP).

    Used by the vertical-FL protocols of Sun et al. (2023), where the server
    already holds the scores.
    """

    epsilon: float
    name: Literal["labeldp"] = "labeldp"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))

    @property
    def delta(self) -> float:
        return 0.0

    @property
    def unit(self) -> PrivacyUnit:
        return "label"

    def describe(self) -> str:
        return f"label DP (ε={self.epsilon:.4g} per label)"


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

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "delta", check_delta(self.delta))
        if isinstance(self.clip, tuple):
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

    def describe(self) -> str:
        return f"user-level DP (Gaussian, clip={self.clip}, ε={self.epsilon:.4g}, δ={self.delta:.3g} per client)"


PrivacyModel = SecureAggregation | DistributedDP | LocalDP | LabelDP | UserLevelDP


def privacy_model(
    name: str,
    *,
    epsilon: float | None = None,
    delta: float | None = None,
    **kwargs: object,
) -> PrivacyModel:
    """Build a privacy model from its short name ("sa", "distdp", "ldp", "labeldp", "userdp").

    Raises
    ------
    ValueError
        Unknown name, or ε missing for a DP model.
    """
    key = name.lower().replace("-", "").replace("_", "")
    if key in ("sa", "secureaggregation", "federated"):
        return SecureAggregation()
    if key not in ("distdp", "ldp", "labeldp", "userdp"):
        raise ValueError(f"unknown privacy model {name!r}: use sa, distdp, ldp, labeldp or userdp")
    if epsilon is None:
        raise ValueError(f"privacy model {name!r} needs epsilon")
    if key == "distdp":
        return DistributedDP(epsilon, delta=delta, **kwargs)  # type: ignore[arg-type]
    if key == "ldp":
        return LocalDP(epsilon, **kwargs)  # type: ignore[arg-type]
    if key == "labeldp":
        return LabelDP(epsilon)
    if delta is None:
        raise ValueError("user-level DP needs delta")
    return UserLevelDP(epsilon, delta, **kwargs)  # type: ignore[arg-type]
