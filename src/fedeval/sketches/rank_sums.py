"""Vertical FL: every label party's positive count and rank sum (Sun et al. 2023).

The server ranks all scores (public to it) and sends each label party k the
ranks r_i of its examples. Party k's vector holds two numbers per party,
laid out as all parties' counts, then all parties' sums:

* ``localP_k = Σ_{i∈k} y_i``;
* ``localSum_k = Σ_{i∈k} r_i y_i`` (``allocation="fixed"``), or, for the
  orthogonal decomposition r = r̄_k·1 + v'_k of §5.3 (``"orthogonal"``,
  ``"adaptive"``), ``⟨v'_k, y⟩ = Σ_{i∈k} (r_i − r̄_k) y_i``, from which the
  decoder rebuilds localSum_k = r̄_k·localP_k + ⟨v'_k, y⟩.

The vector is linear in the labels (randomized response on labels is debiased
linearly) and a party's data touches only its own two coordinates (each party
adds noise to its own statistics).

Sensitivity (label DP, one changed label of party k): localP_k moves by 1 and
localSum_k by r_i ≤ Δ_k (Δ_k = the party's largest rank, "local", §5.2, or
M − 1, "global", Appendix N), or ⟨v'_k, y⟩ by at most ‖v'_k‖∞. The budget split
is expressed as noise weights: with the fixed split α, Laplace noise of scale
Δ_k/(αε) on the sum and 1/((1−α)ε) on the count (weights Δ_k/α and 1/(1−α) at
unit L1: (1−α)·1 + α·r_i/Δ_k ≤ 1); Gaussian noise splits 1/σ² instead (weights
Δ_k/√α and 1/√(1−α) at unit L2: (1−α)·1² + α·(r_i/Δ_k)² ≤ 1). The orthogonal
and adaptive allocations do the same with β_k on the count and ‖v'_k‖∞ in
place of Δ_k; :meth:`RankSumSketch.betas_used` reads back which split a
release's noise used.

The sums are sent in fixed point (:mod:`~fedeval.sketches.fixed_point`): every
positive example contributes round(coefficient/γ) units, γ the power of two
at or below M·2^-20 (M the largest rank, public), so a contribution is at most
2^20 units and sums stay exact in float64; γ ≤ ½ (exact for the half-integer
average ranks) while M < 2^19. Otherwise, and for the centred coefficients
r_i − r̄_k, values are rounded, bias at most γ/2 per example. The noise is then
discrete and no float carries the true value's low-order bits. A sum's bound, in units, gains ½
where values are rounded: rounding can move a contribution by half a unit
(:attr:`RankSumSketch.sum_bound`).

References
----------
.. [1] J. Sun et al., "Differentially private AUC computation in vertical
   federated learning", 2023: eq. (1), §4, §5.2–5.3, Appendix N.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray
from scipy import sparse

from fedeval.privacy.guarantee import Neighbouring, PrivacyUnit
from fedeval.privacy.sensitivity import Layout, Part, Sensitivity
from fedeval.sketches.base import Sketch
from fedeval.sketches.fixed_point import power_of_two_step, rounding_note, to_units

if TYPE_CHECKING:
    from fedeval.aggregation.release import Release

__all__ = [
    "Allocation",
    "PartyRanks",
    "RankSensitivity",
    "RankSumSketch",
    "RankSums",
    "adaptive_beta",
    "party_ranks",
]

Allocation = Literal["fixed", "orthogonal", "adaptive"]
RankSensitivity = Literal["local", "global"]


def adaptive_beta(
    mean_rank: NDArray[np.float64], spread: NDArray[np.float64], *, l2: bool = False
) -> NDArray[np.float64]:
    """Per-party share β_k of the budget on localP_k minimising Var(localSum'_k) (§5.3).

    Laplace (L1 split): minimise a²/β² + b²/(1−β)² → β = a^{2/3}/(a^{2/3} + b^{2/3});
    Gaussian (L2 split of 1/σ²): minimise a²/β + b²/(1−β) → β = a/(a + b), with
    a = r̄_k and b = ‖v'_k‖∞. β_k = 1 when ‖v'_k‖∞ = 0 (all ranks equal, e.g. one
    example), where localSum_k = r̄_k·localP_k needs no second release.
    """
    a = np.abs(np.asarray(mean_rank, dtype=np.float64))
    b = np.abs(np.asarray(spread, dtype=np.float64))
    power = 1.0 if l2 else 2.0 / 3.0
    ap, bp = a**power, b**power
    with np.errstate(divide="ignore", invalid="ignore"):
        beta = np.where(b > 0, ap / (ap + bp), 1.0)
    return np.asarray(beta, dtype=np.float64)


@dataclass(frozen=True, eq=False)
class PartyRanks:
    """Per label party: example count and the mean, largest and smallest rank.

    ``max_rank`` is the local L1 sensitivity of localSum_k (§5.2); ``mean_rank``
    the coefficient of the all-ones component in r = u' + v' (§5.3); ``spread``
    is ‖v'_k‖∞ = max_i |r_i − r̄_k|.
    """

    counts: NDArray[np.int64]
    mean_rank: NDArray[np.float64]
    max_rank: NDArray[np.float64]
    min_rank: NDArray[np.float64]

    @property
    def spread(self) -> NDArray[np.float64]:
        return np.maximum(self.max_rank - self.mean_rank, self.mean_rank - self.min_rank)


def party_ranks(
    ranks: NDArray[np.float64], client_index: NDArray[np.int64], n_clients: int
) -> PartyRanks:
    """The per-party rank statistics (public: they depend on the scores only)."""
    counts = np.bincount(client_index, minlength=n_clients).astype(np.int64)
    sums = np.bincount(client_index, weights=ranks, minlength=n_clients)
    max_rank = np.full(n_clients, -np.inf)
    np.maximum.at(max_rank, client_index, ranks)
    min_rank = np.full(n_clients, np.inf)
    np.minimum.at(min_rank, client_index, ranks)
    return PartyRanks(counts, sums / np.maximum(counts, 1), max_rank, min_rank)


@dataclass(frozen=True, eq=False)
class RankSums:
    """Decoded party statistics: localP_k and localSum_k (exact or noisy)."""

    local_pos: NDArray[np.float64]
    local_sum: NDArray[np.float64]
    counts: NDArray[np.int64]


@dataclass(frozen=True, eq=False)
class RankSumSketch(Sketch):
    """Counts and rank sums of every label party (see the module docstring).

    Parameters
    ----------
    ranks : ndarray, shape (M,)
        Mid-ranks of all examples (public to the server).
    client_index : ndarray of int, shape (M,)
        Party of every example, 0..K-1.
    n_clients : int
        K.
    allocation : {"fixed", "orthogonal", "adaptive"}
    alpha, beta : float
        Fixed split (share on localSum) and orthogonal split (share on localP).
    rank_sensitivity : {"local", "global"}
        Δ_k = the party's largest rank, or M − 1 (fixed allocation only).
    """

    ranks: NDArray[np.float64]
    client_index: NDArray[np.int64]
    n_clients: int
    allocation: Allocation = "fixed"
    alpha: float = 0.5
    beta: float = 0.5
    rank_sensitivity: RankSensitivity = "local"
    fixed_point: bool = True
    stats: PartyRanks = field(init=False, repr=False)
    name = "vertical rank sums"
    label_linear = True
    per_party = True

    def __post_init__(self) -> None:
        if self.allocation not in ("fixed", "orthogonal", "adaptive"):
            raise ValueError(
                f"allocation must be 'fixed', 'orthogonal' or 'adaptive', got {self.allocation!r}"
            )
        if self.rank_sensitivity not in ("local", "global"):
            raise ValueError(
                f"rank sensitivity must be 'local' or 'global', got {self.rank_sensitivity!r}"
            )
        if self.rank_sensitivity == "global" and self.allocation != "fixed":
            raise ValueError(
                f"allocation={self.allocation!r} needs each party's own ranks; the "
                "global-sensitivity baseline (Appendix N) supports allocation='fixed' only"
            )
        object.__setattr__(
            self, "stats", party_ranks(self.ranks, self.client_index, self.n_clients)
        )

    @property
    def counts(self) -> NDArray[np.int64]:
        return self.stats.counts

    @property
    def mean_rank(self) -> NDArray[np.float64]:
        return self.stats.mean_rank

    @property
    def max_rank(self) -> NDArray[np.float64]:
        return self.stats.max_rank

    @property
    def spread(self) -> NDArray[np.float64]:
        return self.stats.spread

    @property
    def centred(self) -> bool:
        return self.allocation != "fixed"

    @property
    def public_inputs(self) -> tuple[str, ...]:
        return ("the ranks of the scores", "the label parties' membership")

    @cached_property
    def step(self) -> float:
        """γ of the rank sums: the power of two at or below M·2^-20 (M the largest rank)."""
        top = float(np.max(self.ranks)) if self.ranks.size else 1.0
        return power_of_two_step(max(top, 1.0))

    @property
    def integer(self) -> bool:  # type: ignore[override]
        return self.fixed_point

    @property
    def resolution(self) -> NDArray[np.float64] | float:
        """1 for the positive counts, γ for the (centred) rank sums (fixed point)."""
        if not self.fixed_point:
            return 1.0
        k = self.n_clients
        return np.concatenate([np.ones(k), np.full(k, self.step)])

    def exact_variant(self) -> RankSumSketch:
        """Exact sums need no fixed point: the (centred) sums are sent as floats."""
        return replace(self, fixed_point=False)

    @property
    def parts(self) -> tuple[Part, ...]:
        """Counts, then sums; one part when the split differs from party to party.

        The adaptive allocation gives party k the share β_k on localP_k and
        1 − β_k on its sum, so no common fraction of ε goes to "the counts":
        its budget is stated as one part holding all of ε (each label is in one
        party, parallel composition), and the per-party split is in the weights.
        """
        k = self.n_clients
        second = "centred rank sums" if self.centred else "rank sums"
        if self.allocation == "adaptive":
            return (Part(f"positive counts and {second} (per-party split β_k)", 2 * k, 1.0),)
        if self.allocation == "fixed":
            shares = (1.0 - self.alpha, self.alpha)
        else:
            shares = (self.beta, 1.0 - self.beta)
        return (Part("positive counts", k, shares[0]), Part(second, k, shares[1]))

    @cached_property
    def l1_weights(self) -> NDArray[np.float64]:
        """Noise weights of pure-ε noise (split of ε); computed once per sketch."""
        return self._weights(l2=False)

    @cached_property
    def l2_weights(self) -> NDArray[np.float64]:
        """Noise weights of Gaussian noise (split of 1/σ²); computed once per sketch."""
        return self._weights(l2=True)

    @cached_property
    def sum_bound(self) -> NDArray[np.float64]:
        """What one label moves each party's (centred) sum by, in value units, as sent.

        Δ_k (its largest rank, or M − 1 for "global") or ‖v'_k‖∞, plus γ/2 when
        the coefficients are rounded to the fixed-point grid (the centred ones,
        or ranks that are not multiples of γ); exact half-integer ranks need no
        allowance.
        """
        if self.allocation == "fixed":
            bound = (
                self.max_rank
                if self.rank_sensitivity == "local"
                else np.full(self.n_clients, self.ranks.size - 1.0)
            )
        else:
            bound = self.spread
        if not self.fixed_point:
            return np.asarray(bound, dtype=np.float64)
        units = self.ranks / self.step
        on_grid = not self.centred and bool(np.all(units == np.rint(units)))
        allowance = 0.0 if on_grid else self.step / 2
        return np.where(bound > 0, bound + allowance, 0.0)

    def _weights(self, l2: bool) -> NDArray[np.float64]:
        """Per-coordinate noise weights at unit sensitivity, in encoded units.

        The sums' weights are :attr:`sum_bound` / γ (module docstring).
        """
        root = np.sqrt if l2 else (lambda x: x)
        step = self.step if self.fixed_point else 1.0
        if self.allocation == "fixed":
            w_pos = np.full(self.n_clients, 1.0 / root(1.0 - self.alpha))
            w_sum = self.sum_bound / step / root(self.alpha)
        else:
            beta = (
                np.full(self.n_clients, self.beta)
                if self.allocation == "orthogonal"
                else adaptive_beta(self.mean_rank, self.spread, l2=l2)
            )
            w_pos = 1.0 / root(beta)
            with np.errstate(divide="ignore", invalid="ignore"):
                w_sum = np.where(self.spread > 0, self.sum_bound / step / root(1.0 - beta), 0.0)
        weights = np.concatenate([w_pos, w_sum]).astype(np.float64)
        weights.flags.writeable = False  # cached and shared with every Sensitivity
        return weights

    def betas(self, l2: bool = False) -> NDArray[np.float64] | None:
        """The per-party shares on localP (orthogonal/adaptive), or None (fixed).

        ``l2=False`` is the split of ε (pure-ε noise, :attr:`Sensitivity.l1_weights`),
        ``l2=True`` the split of 1/σ² (Gaussian noise, :attr:`Sensitivity.l2_weights`).
        """
        if self.allocation == "fixed":
            return None
        if self.allocation == "orthogonal":
            return np.full(self.n_clients, self.beta)
        return adaptive_beta(self.mean_rank, self.spread, l2=l2)

    def betas_used(self, release: Release) -> NDArray[np.float64] | None:
        """The per-party shares on localP that the noise of ``release`` used.

        The receipt records which sensitivity the mechanism was calibrated to
        (``calibrated_on``: L1 for Laplace noise, L2 for Gaussian noise), which
        picks the β rule (:func:`adaptive_beta`).

        Returns
        -------
        ndarray of float64, shape (K,), or None
            β_k; None for the fixed allocation, a release without noise, and
            randomized response on labels (no budget split: the allocation only
            chose the encoding).
        """
        norm = release.receipt.sensitivity.get("calibrated_on")
        if self.allocation == "fixed" or norm not in ("l1", "l2"):
            return None
        return self.betas(l2=norm == "l2")

    def sensitivity(
        self,
        *,
        unit: PrivacyUnit,
        neighbouring: Neighbouring,
        examples_per_unit: int,
        layout: Layout,
    ) -> Sensitivity:
        if unit != "label":
            raise ValueError(
                f"the {self.name} protect labels (the ranks are public to the server): release "
                f"them under LabelDP (unit 'label'), not a model protecting unit {unit!r}"
            )
        if self.allocation == "fixed":
            sens = "its largest rank" if self.rank_sensitivity == "local" else "M − 1"
            what = (
                f"one changed label of party k moves localP_k by 1 and localSum_k by at most "
                f"{sens}; budget split α = {self.alpha:.4g} on the sum"
            )
        else:
            share = f"β = {self.beta:.4g}" if self.allocation == "orthogonal" else "a per-party β_k"
            what = (
                "one changed label of party k moves localP_k by 1 and ⟨v'_k, y⟩ by at most "
                f"max|v'_k| (v'_k = ranks minus their mean); {share} of the budget on localP_k"
            )
        return Sensitivity(
            "label",
            "replace",
            1.0,
            1.0,
            self.parts,
            integer=self.integer,
            l1_weights=self.l1_weights,
            l2_weights=self.l2_weights,
            derivation=(
                f"{what}; parties hold disjoint examples; "
                + rounding_note(self.step, "each rank coefficient")
            ),
        )

    def encode(
        self,
        scores: NDArray[np.float64],
        labels: NDArray[np.int64],
        clients: NDArray[np.int64],
    ) -> NDArray[np.int64] | NDArray[np.float64]:
        """``scores`` are the examples' ranks; ``clients`` their parties; labels are 0/1.

        Only positives contribute (the vector is linear in the labels with
        nothing at 0), so the sums run over them alone: simulations repeat
        this once per release. Sums are in units of γ (fixed point, per example).
        """
        k = self.n_clients
        positive = np.flatnonzero(labels)
        party = np.asarray(clients)[positive]
        ranks = np.asarray(scores, dtype=np.float64)[positive]
        coef = ranks - self.mean_rank[party] if self.centred else ranks
        if not self.fixed_point:
            pos_f = np.bincount(party, minlength=k).astype(np.float64)
            return np.concatenate([pos_f, np.bincount(party, weights=coef, minlength=k)])
        pos = np.bincount(party, minlength=k).astype(np.int64)
        units = to_units(coef, self.step)
        # Weighted bincount sums in float64: exact while |Σ units| < 2^53.
        sums = np.rint(np.bincount(party, weights=units, minlength=k)).astype(np.int64)
        return np.concatenate([pos, sums])

    def label_gram(self, scores: NDArray[np.float64], clients: NDArray[np.int64]) -> Any:
        """Σ_i a_i a_iᵀ of the label coefficients a_i (sparse, 2K × 2K)."""
        k = self.n_clients
        coef = scores - self.mean_rank[clients] if self.centred else scores
        diag_pos = np.bincount(clients, minlength=k).astype(np.float64)
        diag_sum = np.bincount(clients, weights=coef * coef, minlength=k)
        cross = np.bincount(clients, weights=coef, minlength=k)
        idx = np.arange(k)
        rows = np.concatenate([idx, k + idx, idx, k + idx])
        cols = np.concatenate([idx, k + idx, k + idx, idx])
        data = np.concatenate([diag_pos, diag_sum, cross, cross])
        return sparse.csr_array((data, (rows, cols)), shape=(2 * k, 2 * k))

    def owned_coordinates(self, client: int) -> NDArray[np.intp]:
        return np.array([client, self.n_clients + client], dtype=np.intp)

    def decode(self, release: Release) -> RankSums:
        k = self.n_clients
        v = np.asarray(release.values, dtype=np.float64)
        pos, other = v[:k], v[k:]
        local_sum = self.mean_rank * pos + other if self.centred else other
        return RankSums(pos, local_sum, self.counts)
