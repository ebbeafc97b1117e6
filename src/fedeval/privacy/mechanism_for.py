"""THE dispatch: privacy model × sketch sensitivity × clients → mechanism.

This is the only place that looks at which privacy model was asked for. It
reads the sketch's declared :class:`~fedeval.privacy.sensitivity.Sensitivity`
for the model's unit and neighbouring relation, chooses and calibrates the
noise (or local randomiser), and states the guarantee and the ledger entries.
The release function (:func:`fedeval.aggregation.release`) charges those
entries and then runs the mechanism; it never decides anything about privacy.

Adding a privacy model means adding its class to :mod:`fedeval.privacy.models`
and one branch here.

=====================  ==============================================================
model                  mechanism
=====================  ==============================================================
SecureAggregation      exact sums, no noise, nothing charged
CentralDP              discrete Laplace added by a trusted curator to the exact sums
DistributedDP          Pólya shares (discrete Laplace, pure ε) or Skellam shares
                       ((ε, δ) by RDP), calibrated so that any ``min_received``
                       shares suffice; clients subsampled to the contribution bound
LocalDP                one OUE/RR report per example on one part of a one-hot sketch,
                       clients split at random across the parts
LabelDP                randomized response on every label, or discrete Laplace/Gaussian
                       noise that each label party adds to its own statistics
UserLevelDP            clipped contributions, discrete Gaussian noise on the aggregate
                       each round, T Poisson-subsampled rounds composed by RDP
=====================  ==============================================================

Noise is only ever integer-valued and added to integer sums: a real-valued
summary is sent in fixed point by its sketch (:mod:`fedeval.sketches.fixed_point`),
and a sketch that is not integer is refused under every noisy model.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

import numpy as np

from fedeval.privacy.accounting import (
    RDP_ORDERS,
    calibrate_noise_multiplier,
    gaussian_rounds_epsilon,
    gaussian_rounds_rdp,
)
from fedeval.privacy.guarantee import Guarantee, Neighbouring, PrivacyUnit
from fedeval.privacy.ledger import LedgerEntry
from fedeval.privacy.mechanisms.discrete_gaussian import DiscreteGaussian
from fedeval.privacy.mechanisms.polya import PolyaShares
from fedeval.privacy.mechanisms.randomized_response import (
    RandomizedResponse,
    RandomizedResponseOracle,
    flip_probability,
)
from fedeval.privacy.mechanisms.skellam import SkellamShares
from fedeval.privacy.mechanisms.unary_encoding import OptimalUnaryEncoding
from fedeval.privacy.models import (
    CentralDP,
    DistributedDP,
    LabelDP,
    LocalDP,
    PrivacyModel,
    SecureAggregation,
    UserLevelDP,
)
from fedeval.privacy.noise import (
    AdditiveNoise,
    CentralNoise,
    PolyaShareNoise,
    SkellamShareNoise,
    shares_needed,
)
from fedeval.privacy.receipt import SCOPE_ONE_RELEASE, Receipt
from fedeval.privacy.sensitivity import Layout, Part, Sensitivity
from fedeval.validation import check_int_at_least, check_probability

__all__ = ["Mechanism", "Placement", "SensitiveSketch", "client_clip", "mechanism_for"]

Placement = Literal["none", "shares", "aggregator", "owner", "local", "labels"]
"""Where the randomness enters: nowhere (exact sums); client noise shares; the
aggregator adds all the noise; each label party adds noise to its own
coordinates; every example's report is randomised (local DP); every label is
flipped (randomized response on labels)."""


class SensitiveSketch(Protocol):
    """What the dispatch needs from a sketch (:class:`fedeval.sketches.Sketch` has it)."""

    @property
    def name(self) -> str: ...

    @property
    def parts(self) -> tuple[Part, ...]: ...

    @property
    def one_hot(self) -> bool: ...

    @property
    def label_linear(self) -> bool: ...

    @property
    def per_party(self) -> bool: ...

    @property
    def clips_clients(self) -> bool: ...

    @property
    def public_inputs(self) -> tuple[str, ...]: ...

    def sensitivity(
        self,
        *,
        unit: PrivacyUnit,
        neighbouring: Neighbouring,
        examples_per_unit: int,
        layout: Layout,
    ) -> Sensitivity: ...


@dataclass(frozen=True)
class Mechanism:
    """A calibrated mechanism for one release of one sketch.

    Attributes
    ----------
    model : privacy model
    placement : {"none", "shares", "aggregator", "owner", "local", "labels"}
    layout : {"whole", "assign"}
    guarantee : Guarantee
    ledger_entries : tuple of LedgerEntry
        What the release must charge before any noise is drawn.
    description : str
        The noise or randomiser in words.
    sensitivity : Sensitivity or None
        What the noise was calibrated to (None without noise).
    noise : AdditiveNoise or None
        For additive mechanisms.
    oracle_kind : {"oue", "rr"} or None
        Local DP: the frequency oracle; ``local_epsilon`` its ε.
    flip_probability : float or None
        Randomized response on labels: the flip probability ρ.
    contribution_bound : int or None
        Every client is subsampled to at most this many examples before encoding.
    n_contributors, min_received : int
        Clients adding a noise share, and how many shares must arrive.
    rounds, sampling_rate : int, float
        Rounds of Poisson-subsampled releases the budget covers (user-level DP).
    target : Guarantee or None
        The guarantee before :meth:`when_received` weakened it.
    norm : {"l1", "l2"} or None
        Which sensitivity (and weights) the noise was calibrated to: L1 for
        pure-ε noise, L2 for Gaussian and Skellam noise.
    randomness, scope : str
        For the receipt: where the noise's bits come from (stamped by the
        release function), and what the guarantee covers.
    """

    model: Any
    placement: Placement
    layout: Layout
    guarantee: Guarantee
    ledger_entries: tuple[LedgerEntry, ...]
    description: str
    sensitivity: Sensitivity | None = None
    noise: AdditiveNoise | None = None
    oracle_kind: Literal["oue", "rr"] | None = None
    local_epsilon: float = 0.0
    flip_probability: float | None = None
    contribution_bound: int | None = None
    n_contributors: int = 1
    min_received: int = 1
    rounds: int = 1
    sampling_rate: float = 1.0
    target: Guarantee | None = None
    norm: Literal["l1", "l2"] | None = None
    randomness: str = ""
    scope: str = SCOPE_ONE_RELEASE

    @property
    def exact(self) -> bool:
        """True when the release adds no randomness (secure aggregation alone)."""
        return self.placement == "none"

    @property
    def receipt(self) -> Receipt:
        sens: dict[str, Any] = {}
        if self.sensitivity is not None:
            sens = self.sensitivity.as_dict()
            sens["calibrated_on"] = self.norm
        return Receipt(
            self.model.describe(),
            self.guarantee,
            self.ledger_entries,
            self.description,
            sens,
            self.randomness,
            self.scope,
        )

    def oracle(self, n_bins: int) -> OptimalUnaryEncoding | RandomizedResponseOracle:
        """The local-DP frequency oracle over ``n_bins`` items."""
        if self.oracle_kind == "oue":
            return OptimalUnaryEncoding(self.local_epsilon, n_bins)
        if self.oracle_kind == "rr":
            return RandomizedResponseOracle(RandomizedResponse(self.local_epsilon, n_bins))
        raise ValueError("this mechanism has no frequency oracle (it is not local DP)")

    def when_received(self, n_received: int) -> Mechanism:
        """The mechanism as it stands when only ``n_received`` noise shares arrived.

        At or above the reconstruction threshold nothing changes. Below it,
        Pólya shares give the exact (larger) ε of
        :meth:`~fedeval.privacy.mechanisms.polya.PolyaShares.epsilon_if_received`,
        stated in the guarantee and the ledger entries; other share noise gives
        no guarantee there and is refused.

        Raises
        ------
        ValueError
            Too few Skellam or Laplace shares to state any guarantee.
        """
        if self.placement != "shares" or n_received >= self.min_received:
            return self
        assert self.noise is not None and self.sensitivity is not None
        if not isinstance(self.noise, PolyaShareNoise):
            raise ValueError(
                f"only {n_received} of the {self.min_received} noise shares needed arrived; "
                "no guarantee can be stated for this noise, nothing is released"
            )
        # Always from the target guarantee, so repeated calls do not compound.
        target = self.target or self.guarantee
        entries = self.ledger_entries
        if self.target is not None:
            back = target.epsilon / self.guarantee.epsilon
            entries = tuple(replace(e, epsilon=e.epsilon * back) for e in entries)
        eps = self.noise.epsilon_if_received(n_received)
        factor = eps / target.epsilon
        statement = (
            f"{target.statement}; only {n_received} of {self.n_contributors} shares "
            f"arrived (threshold {self.min_received}), so the exact ε is {eps:.6g}"
        )
        return replace(
            self,
            guarantee=replace(target, epsilon=eps, statement=statement),
            ledger_entries=tuple(replace(e, epsilon=e.epsilon * factor) for e in entries),
            target=target,
        )

    def with_added_delta(self, delta: float, label: str, details: dict[str, Any]) -> Mechanism:
        """The mechanism with an extra δ (e.g. the probability that transport clipped a share)."""
        if delta <= 0:
            return self
        entry = LedgerEntry(label, 0.0, delta, self.guarantee.unit, dict(details))
        statement = f"{self.guarantee.statement}; δ includes {label} ({delta:.2g})"
        return replace(
            self,
            guarantee=replace(
                self.guarantee, delta=self.guarantee.delta + delta, statement=statement
            ),
            ledger_entries=(*self.ledger_entries, entry),
        )


def mechanism_for(
    privacy: PrivacyModel,
    sketch: SensitiveSketch,
    *,
    n_clients: int,
    layout: Layout | None = None,
    min_received: int | None = None,
    rounds: int = 1,
    sampling_rate: float = 1.0,
) -> Mechanism:
    """Choose and calibrate the mechanism that releases ``sketch`` under ``privacy``.

    Parameters
    ----------
    privacy : privacy model
    sketch : Sketch
        Declares its parts and its sensitivity per privacy unit.
    n_clients : int
        Clients taking part (they add the noise shares); public.
    layout : {"whole", "assign"}, optional
        Whether every client encodes every part (budget split over the parts) or
        clients are split at random across the parts (full budget each). Local
        DP always splits (one report per example); the default is "whole"
        otherwise.
    min_received : int, optional
        Distributed DP: the fewest shares the secure sum will ever hold (the
        secure-aggregation reconstruction threshold); default from the model's
        ``min_clients_fraction``.
    rounds, sampling_rate : int, float
        User-level DP: the budget covers ``rounds`` releases with Poisson
        sampling of clients at ``sampling_rate``.

    Returns
    -------
    Mechanism

    Raises
    ------
    TypeError
        A privacy model this sketch cannot be released under.
    ValueError
        Parameters the model cannot meet (e.g. local DP for a sketch that is not
        one-hot, several rounds for a single-release model).
    """
    n = check_int_at_least(n_clients, 1, name="n_clients")
    t = check_int_at_least(rounds, 1, name="rounds")
    q = check_probability(sampling_rate, name="sampling_rate")
    if isinstance(privacy, SecureAggregation):
        return _exact(privacy, sketch, n, layout or "whole", t, q)
    if isinstance(privacy, UserLevelDP):
        return _user_level(privacy, sketch, n, t, q)
    if t != 1 or q != 1.0:
        raise ValueError(
            f"{type(privacy).__name__} covers one release; several Poisson-sampled rounds "
            "need UserLevelDP (or SecureAggregation)"
        )
    if isinstance(privacy, CentralDP | DistributedDP):
        _check_assign(privacy, layout)
    if isinstance(privacy, CentralDP):
        return _central(privacy, sketch, n, layout or "whole")
    if isinstance(privacy, DistributedDP):
        return _distributed(privacy, sketch, n, layout or "whole", min_received)
    if isinstance(privacy, LocalDP):
        return _local(privacy, sketch, n)
    if isinstance(privacy, LabelDP):
        return _label(privacy, sketch, n)
    raise TypeError(
        f"{type(privacy).__name__} is not a privacy model fedeval knows; use SecureAggregation, "
        "CentralDP, DistributedDP, LocalDP, LabelDP or UserLevelDP"
    )


# ------------------------------------------------------------------ the models
def _exact(
    model: SecureAggregation, sketch: SensitiveSketch, n: int, layout: Layout, t: int, q: float
) -> Mechanism:
    return Mechanism(
        model=model,
        placement="none",
        layout=layout,
        guarantee=Guarantee.none(
            f"secure aggregation of the {sketch.name} of {n} clients: exact sums, no DP",
            public=_public(sketch, "the number of participating clients"),
        ),
        ledger_entries=(),
        description="none (exact sums)",
        n_contributors=n,
        min_received=n,
        rounds=t,
        sampling_rate=q,
    )


def _central(model: CentralDP, sketch: SensitiveSketch, n: int, layout: Layout) -> Mechanism:
    sens = sketch.sensitivity(
        unit="example", neighbouring=model.neighbouring, examples_per_unit=1, layout=layout
    )
    if sketch.clips_clients or not math.isfinite(sens.l1):
        raise TypeError(
            f"CentralDP cannot release the {sketch.name}: it needs a finite L1 sensitivity "
            "per example"
        )
    _require_integer(sketch, sens, "CentralDP")
    # Coordinate i gets scale w_i·L1/ε: Σ|Δ_i|/(w_i·L1/ε) ≤ ε over any neighbour (geometric
    # mechanism, Ghosh et al. 2009), with Σ|Δ_i|/w_i ≤ L1 by the sketch's declaration.
    w = 1.0 if sens.l1_weights is None else sens.l1_weights
    noise = CentralNoise("discrete_laplace", w * sens.l1 / model.epsilon, by="the trusted curator")
    return Mechanism(
        model=model,
        norm="l1",
        placement="aggregator",
        layout=layout,
        guarantee=Guarantee(
            model.epsilon,
            0.0,
            "example",
            f"{noise.description}, who sees the exact sums; {sens.derivation}; "
            + _CENTRAL_SAMPLING,
            model.neighbouring,
            _public(
                sketch,
                "the number of participating clients",
                *(("the number of examples",) if model.example_count_public else ()),
            ),
        ),
        ledger_entries=_part_entries(
            sketch, sens, model.epsilon, 0.0, "example", layout, "discrete_laplace"
        ),
        description=noise.description,
        sensitivity=sens,
        noise=noise,
        n_contributors=n,
    )


def _distributed(
    model: DistributedDP,
    sketch: SensitiveSketch,
    n: int,
    layout: Layout,
    min_received: int | None,
) -> Mechanism:
    if sketch.clips_clients:
        raise TypeError(
            f"DistributedDP cannot release the {sketch.name}: its clients clip their own "
            "contribution, which user-level DP (UserLevelDP) accounts for"
        )
    bound = model.contribution_bound
    sens, why = _bounded_sensitivity(model, sketch, layout)
    # Noise shares are calibrated to a threshold: given by the secure sum (Flower's
    # SecAgg+ threshold), or the real number f·n. With f·n, n shares always add up to
    # Pólya shape 1/f, so the noise does not depend on how many clients there are;
    # the release still needs ceil(f·n) shares to arrive.
    if min_received is None:
        threshold: float = model.min_clients_fraction * n if model.min_clients_fraction < 1 else n
        threshold = max(threshold, 1.0)
        m = shares_needed(model.min_clients_fraction, n)
    else:
        m = min(check_int_at_least(min_received, 1, name="min_received"), n)
        threshold = m
    _require_integer(sketch, sens, "distributed DP")
    if not sens.uniform:
        raise ValueError(
            f"the {sketch.name} asks for different noise scales on different coordinates; "
            "noise split into client shares needs one scale"
        )
    noise: AdditiveNoise
    entries: tuple[LedgerEntry, ...]
    if model.noise == "skellam":
        assert model.delta is not None
        calibrated = SkellamShares.calibrate(model.epsilon, model.delta, sens.l1, sens.l2, 1)
        noise = SkellamShareNoise(
            SkellamShares(
                calibrated.mu / threshold * n,
                n,
                l1_sensitivity=sens.l1,
                l2_sensitivity=sens.l2,
                delta=model.delta,
            )
        )
        entries = (
            LedgerEntry(
                f"{sketch.name}, all parts",
                model.epsilon,
                model.delta_or_zero,
                model.unit,
                {"noise": "skellam", "l1_sensitivity": sens.l1, "l2_sensitivity": sens.l2},
                rdp=_skellam_curve(calibrated.mu, sens.l1, sens.l2),
            ),
        )
    else:
        noise = PolyaShareNoise(
            PolyaShares.for_dropouts(model.epsilon, n, threshold, _as_int(sens.l1, sketch))
        )
        entries = _part_entries(sketch, sens, model.epsilon, 0.0, model.unit, layout, "polya")
    statement = f"{noise.description}; {sens.derivation}{why}; {_SHARE_SAMPLING}"
    return Mechanism(
        model=model,
        norm="l2" if model.noise == "skellam" else "l1",
        placement="shares",
        layout=layout,
        guarantee=Guarantee(
            model.epsilon,
            model.delta_or_zero,
            model.unit,
            statement,
            model.neighbouring,
            _public(
                sketch,
                # Calibrated to the real threshold f·n, n shares always sum to the same
                # noise: n is not an input of the release. A threshold given by the
                # secure sum (Flower's SecAgg+) is, with the clients it counts.
                *(
                    ("the number of clients adding shares and the reconstruction threshold",)
                    if min_received is not None
                    else ()
                ),
                *(("the number of examples",) if model.example_count_public else ()),
            ),
        ),
        ledger_entries=entries,
        description=noise.description,
        sensitivity=sens,
        noise=noise,
        contribution_bound=bound,
        n_contributors=n,
        min_received=m,
    )


def _bounded_sensitivity(
    model: DistributedDP, sketch: SensitiveSketch, layout: Layout
) -> tuple[Sensitivity, str]:
    """The sensitivity the noise must cover once clients are subsampled to their bound.

    * No bound: one unit as the model says (one example, add/remove or replace).
    * ``unit="client"`` with bound B: a whole client of at most B examples.
    * ``unit="example"`` with bound B: a client at its bound keeps B of its
      examples at random, so an added example may displace a kept one: the
      encodings then differ by a swap, which is the sketch's replace-one-example
      sensitivity (and an addition below the bound is covered by it too).
    """
    bound = model.contribution_bound
    if model.unit == "client":
        sens = sketch.sensitivity(
            unit="client",
            neighbouring=model.neighbouring,
            examples_per_unit=model.examples_per_unit,
            layout=layout,
        )
        return sens, f"; every client subsampled to at most {bound} example(s)"
    own = sketch.sensitivity(
        unit="example", neighbouring=model.neighbouring, examples_per_unit=1, layout=layout
    )
    if bound is None:
        return own, ""
    swap = sketch.sensitivity(
        unit="example", neighbouring="replace", examples_per_unit=1, layout=layout
    )
    norm_of = (lambda s: s.l2) if model.noise == "skellam" else (lambda s: s.l1)
    sens = swap if norm_of(swap) >= norm_of(own) else own
    return sens, (
        f"; every client subsampled to at most {bound} example(s): an added example may "
        "displace a kept one, so the noise covers swapping one example "
        f"(L1 = {sens.l1:g}, L2 = {sens.l2:.4g})"
    )


def _local(model: LocalDP, sketch: SensitiveSketch, n: int) -> Mechanism:
    if not sketch.one_hot:
        raise TypeError(
            f"LocalDP cannot release the {sketch.name}: local DP needs a sketch where every "
            "example reports one item, and this one is not one-hot"
        )
    parts = sketch.parts
    names = ", ".join(p.name for p in parts)
    oracle = model.oracle.upper()
    statement = (
        f"one {oracle} report per example over the items of one part of the {sketch.name} "
        f"({names}), clients split at random across the {len(parts)} part(s); local DP"
    )
    return Mechanism(
        model=model,
        placement="local",
        layout="assign",
        guarantee=Guarantee(
            model.epsilon,
            0.0,
            "example",
            statement,
            "replace",
            _public(sketch, "the number of clients and of reports in each part"),
        ),
        ledger_entries=(
            LedgerEntry(
                f"{sketch.name}, one {oracle} report per example at its client's part",
                model.epsilon,
                0.0,
                "example",
                {"oracle": model.oracle, "parts": len(parts)},
            ),
        ),
        description=f"{oracle} local randomiser (ε = {model.epsilon:.4g} per report)",
        oracle_kind=model.oracle,
        local_epsilon=model.epsilon,
        n_contributors=n,
        min_received=n,
    )


def _label(model: LabelDP, sketch: SensitiveSketch, n: int) -> Mechanism:
    public = _public(sketch, "the scores and the number of examples of every label party")
    if model.noise == "rr":
        if not sketch.label_linear:
            raise TypeError(
                f"LabelDP(noise='rr') cannot release the {sketch.name}: randomized response on "
                "labels needs a sketch linear in the labels"
            )
        rho = flip_probability(model.epsilon)
        statement = (
            f"randomized response flips each label with probability 1/(1+e^ε) = {rho:.4g}, so "
            f"each released label is ε-label-DP; the {sketch.name} of the flipped labels is "
            "post-processing"
        )
        return Mechanism(
            model=model,
            placement="labels",
            layout="whole",
            guarantee=Guarantee(model.epsilon, 0.0, "label", statement, "replace", public),
            ledger_entries=(
                LedgerEntry(
                    f"{sketch.name}, randomized response on every label",
                    model.epsilon,
                    0.0,
                    "label",
                    {"flip_probability": rho},
                ),
            ),
            description=f"binary randomized response on labels (ρ = {rho:.4g})",
            flip_probability=rho,
            n_contributors=n,
            min_received=n,
        )
    if not sketch.per_party:
        raise TypeError(
            f"LabelDP cannot release the {sketch.name}: label parties add noise to their own "
            "statistics, and this sketch does not keep each party's data in its own coordinates"
        )
    sens = sketch.sensitivity(
        unit="label", neighbouring="replace", examples_per_unit=1, layout="whole"
    )
    _require_integer(sketch, sens, "LabelDP")
    noise: CentralNoise
    unit_sigma = math.nan
    if model.noise == "laplace":
        w = 1.0 if sens.l1_weights is None else sens.l1_weights
        noise = CentralNoise("discrete_laplace", w * sens.l1 / model.epsilon, by="each label party")
        assumes = "discrete Laplace on integers (Ghosh et al. 2009): ε-DP"
    else:
        assert model.delta is not None
        unit_sigma = DiscreteGaussian.calibrate(model.epsilon, model.delta).sigma
        w = 1.0 if sens.l2_weights is None else sens.l2_weights
        noise = CentralNoise("discrete_gaussian", w * sens.l2 * unit_sigma, by="each label party")
        assumes = (
            "discrete Gaussian on integers: ρ-zCDP with ρ = 1/(2σ²) at unit L2 sensitivity, "
            "converted to (ε, δ) (Canonne, Kamath & Steinke 2020, Cor. 13)"
        )
    statement = (
        f"{noise.description} on its own statistics; {sens.derivation}; label parties hold "
        f"disjoint examples (parallel composition); {assumes}; {_CENTRAL_SAMPLING}"
    )
    entries: tuple[LedgerEntry, ...] = (
        _part_entries(sketch, sens, model.epsilon, 0.0, "label", "whole", "discrete_laplace")
        if model.noise == "laplace"
        else (
            LedgerEntry(
                f"{sketch.name}, Gaussian noise on every label party's statistics",
                model.epsilon,
                model.delta_or_zero,
                "label",
                {"noise": "discrete_gaussian", "l2_sensitivity": sens.l2},
                rho=1.0 / (2.0 * unit_sigma**2),
            ),
        )
    )
    return Mechanism(
        model=model,
        norm="l1" if model.noise == "laplace" else "l2",
        placement="owner",
        layout="whole",
        guarantee=Guarantee(
            model.epsilon, model.delta_or_zero, "label", statement, "replace", public
        ),
        ledger_entries=entries,
        description=noise.description,
        sensitivity=sens,
        noise=noise,
        n_contributors=n,
        min_received=n,
    )


def _user_level(
    model: UserLevelDP, sketch: SensitiveSketch, n: int, rounds: int, sampling_rate: float
) -> Mechanism:
    if not sketch.clips_clients:
        raise TypeError(
            f"UserLevelDP cannot release the {sketch.name}: user-level DP needs a sketch whose "
            "clients clip their own contribution (use DistributedDP(unit='client', "
            "contribution_bound=...) for counts)"
        )
    sens = sketch.sensitivity(
        unit="client", neighbouring="add_remove", examples_per_unit=1, layout="whole"
    )
    if not math.isfinite(sens.l2):
        raise ValueError(
            f"the {sketch.name} has no finite L2 sensitivity per client (is its clipping norm set?)"
        )
    _require_integer(sketch, sens, "UserLevelDP")
    z, eps = _calibrated_multiplier(model.epsilon, model.delta, rounds, sampling_rate)
    w = 1.0 if sens.l2_weights is None else sens.l2_weights
    noise = CentralNoise("discrete_gaussian", w * sens.l2 * z, by="the aggregator, every round")
    statement = (
        f"{rounds} round(s) of Poisson-subsampled (rate {sampling_rate:.3g}) discrete Gaussian "
        f"releases of the {sketch.name}, noise multiplier {z:.4g}; {sens.derivation}; the "
        "tighter of PLD and RDP accounting of the Poisson-subsampled Gaussian mechanism "
        "(dp-accounting; in a program the rounds compose by their RDP curve). Assumes the "
        "discrete Gaussian on integer sums is at least as private as the continuous one of the "
        "same σ under subsampling: its Rényi divergences for integer shifts are at most the "
        "continuous ones (Canonne, Kamath & Steinke 2020), the subsampled bound is taken to "
        "carry over; " + _CENTRAL_SAMPLING
    )
    return Mechanism(
        model=model,
        norm="l2",
        placement="aggregator",
        layout="whole",
        guarantee=Guarantee(
            eps,
            model.delta,
            "client",
            statement,
            "add_remove",
            _public(sketch, "the sampling rate and the number of rounds"),
        ),
        ledger_entries=(
            LedgerEntry(
                f"{sketch.name}, {rounds} Poisson-subsampled Gaussian round(s)",
                eps,
                model.delta,
                "client",
                {
                    "noise_multiplier": z,
                    "l2_sensitivity": sens.l2,
                    "rounds": rounds,
                    "sampling_rate": sampling_rate,
                },
                # q = 1: T discrete Gaussian releases of multiplier z are T/(2z²)-zCDP
                # (Canonne, Kamath & Steinke 2020); subsampled, only the Rényi curve.
                rho=rounds / (2.0 * z * z) if sampling_rate == 1.0 else None,
                rdp=_rounds_curve(z, rounds, sampling_rate),
            ),
        ),
        description=(
            f"discrete Gaussian noise, multiplier {z:.4g} × L2 sensitivity, added every round"
        ),
        sensitivity=sens,
        noise=noise,
        n_contributors=n,
        min_received=1,
        rounds=rounds,
        sampling_rate=sampling_rate,
    )


def client_clip(privacy: PrivacyModel) -> float | tuple[float, float] | None:
    """The clipping norm each client applies to its own contribution, or None.

    User-level DP bounds a client by clipping (a norm C, or (C+, C−) for
    positive and negative histograms); the other models need no clipping.
    """
    if isinstance(privacy, UserLevelDP):
        return privacy.clip
    return None


# --------------------------------------------------------------------- helpers
def _check_assign(model: CentralDP | DistributedDP, layout: Layout | None) -> None:
    """Layout "assign" scales each part by n/m_k: n must be public, i.e. replacement neighbours.

    Under add/remove of a unit the number of clients n is not public (a unit
    may be a whole client, or a client's only example), and values scaled by
    n/m_k would publish it (their lattice, and the split sizes the release
    keeps for its variances).
    """
    if layout == "assign" and model.neighbouring != "replace":
        raise ValueError(
            "layout 'assign' (level_budget='assign') scales each part by the number of clients "
            "over those assigned to it, and that number is not public under add/remove "
            "neighbours; use the default layout 'whole' (level_budget='split'), or "
            "neighbouring='replace'"
        )


def _part_entries(
    sketch: SensitiveSketch,
    sens: Sensitivity,
    epsilon: float,
    delta: float,
    unit: PrivacyUnit,
    layout: Layout,
    noise: str,
) -> tuple[LedgerEntry, ...]:
    """One ledger entry per budget share: the split over the parts is visible in the receipt."""
    if layout == "assign":
        return (
            LedgerEntry(
                f"{sketch.name}, clients assigned to parts (parallel composition)",
                epsilon,
                delta,
                unit,
                {"noise": noise, "l1_sensitivity": sens.l1, "parts": len(sens.parts)},
            ),
        )
    return tuple(
        LedgerEntry(
            f"{sketch.name} {p.name}",
            epsilon * p.budget_share,
            delta * p.budget_share,
            unit,
            {"noise": noise, "l1_sensitivity": p.l1, "budget_share": p.budget_share},
        )
        for p in sens.parts
    )


_SHARE_SAMPLING = (
    "assumes the secure sum reveals only the total of at least the threshold number of "
    "shares; integer shares. Exact draws (law exactly the target for any bit generator, "
    "fedeval.privacy.mechanisms.exact_sampling): the simulated total of exactly the "
    "threshold number of Pólya shares (fast path), which is discrete Laplace, and a Pólya "
    "share of shape 1. Drawn with numpy's floating-point negative-binomial and Poisson "
    "samplers, whose law is the target only up to double-precision rounding: Pólya shares "
    "of any other shape (the faithful path with more than one party, or a total of another "
    "number of shares) and all Skellam shares"
)
_CENTRAL_SAMPLING = (
    "integer noise on integer sums, drawn exactly for any bit generator (discrete Laplace "
    "by exact inversion of the generator's raw words, discrete Gaussian by "
    "Canonne-Kamath-Steinke rejection with exactly decided acceptances; "
    "fedeval.privacy.mechanisms.exact_sampling): its law is the one the guarantee is "
    "computed for"
)


def _require_integer(sketch: SensitiveSketch, sens: Sensitivity, model: str) -> None:
    """Noise is only ever added to integers (fixed point for real values; Mironov 2012)."""
    if not sens.integer:
        raise TypeError(
            f"{model} cannot release the {sketch.name}: it is real-valued, and noise on "
            "floating-point numbers leaks through their low-order bits; send it in fixed point "
            "(fedeval.sketches.fixed_point)"
        )


def _public(sketch: SensitiveSketch, *more: str) -> tuple[str, ...]:
    return (*sketch.public_inputs, *more)


def _as_int(value: float, sketch: SensitiveSketch) -> int:
    if not (math.isfinite(value) and value == round(value) and value >= 1):
        raise ValueError(
            f"the {sketch.name}'s L1 sensitivity {value} is not a positive integer; "
            "discrete noise needs one"
        )
    return round(value)


def _skellam_curve(mu: float, l1: float, l2: float) -> tuple[float, ...]:
    """The Skellam release's RDP at RDP_ORDERS: Agarwal et al.'s bound at integer orders.

    Their Theorem 3.5 holds for integer α; at a fractional order the curve is
    recorded as ∞ (a valid, if useless, bound), so the filter uses the others.
    """
    from fedeval.privacy.mechanisms.skellam import skellam_rdp

    a = np.asarray(RDP_ORDERS, dtype=np.float64)
    integer = a == np.round(a)
    out = np.full(a.shape, np.inf)
    out[integer] = skellam_rdp(a[integer].astype(np.int64), mu, l1, l2)
    return tuple(float(x) for x in out)


@functools.lru_cache(maxsize=256)
def _rounds_curve(z: float, rounds: int, sampling_rate: float) -> tuple[float, ...]:
    """RDP of the user-level rounds at RDP_ORDERS (cached: a function of public inputs)."""
    return tuple(float(x) for x in gaussian_rounds_rdp(z, rounds, sampling_rate))


@functools.lru_cache(maxsize=256)
def _calibrated_multiplier(
    epsilon: float, delta: float, rounds: int, sampling_rate: float
) -> tuple[float, float]:
    """(z, ε actually spent): the smallest noise multiplier meeting (ε, δ) over the rounds.

    A pure function of public parameters whose search costs about a second, so
    it is cached for the process.
    """
    z = calibrate_noise_multiplier(epsilon, delta, rounds, sampling_rate)
    return z, gaussian_rounds_epsilon(z, rounds, sampling_rate, delta)
