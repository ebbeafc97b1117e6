"""Who adds a release's additive noise, and how it is drawn on each path.

A release's noise can be split into per-client shares (distributed DP: Pólya
or Skellam shares), or added once by one party: the aggregator (a
trusted curator, or the server of DP-FedAvg) or, for label DP, each label party
on its own statistics. Every :class:`AdditiveNoise` answers the same four
questions, so the aggregation paths never look at the privacy model:

* ``share(size, rng)``: what one contributing client adds (faithful path);
* ``server(size, rng)``: what the aggregator adds once;
* ``total(size, rng, n_received)``: the sum of ``n_received`` shares plus the
  aggregator's noise, drawn directly (fast path, exact in distribution);
* ``variance(n_received)``: the per-coordinate variance of that total.

All noise is integer-valued and added to integer sums (real-valued summaries
are sent in fixed point, :mod:`fedeval.sketches.fixed_point`): continuous noise
on floating-point numbers leaks through the low-order bits (Mironov 2012), so
none is offered.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from fedeval.privacy.mechanisms.discrete_gaussian import (
    discrete_gaussian_variance,
    sample_discrete_gaussian,
)
from fedeval.privacy.mechanisms.laplace import discrete_laplace_variance, sample_discrete_laplace
from fedeval.privacy.mechanisms.polya import PolyaShares, polya_difference_epsilon
from fedeval.privacy.mechanisms.skellam import SkellamShares

__all__ = [
    "AdditiveNoise",
    "CentralNoise",
    "CentralNoiseKind",
    "PolyaShareNoise",
    "SkellamShareNoise",
    "restrict",
    "shares_needed",
]

CentralNoiseKind = Literal["discrete_laplace", "discrete_gaussian"]


class AdditiveNoise(ABC):
    """Additive noise of one release (see the module docstring)."""

    #: Whether the noise is integer-valued (so integer sums stay integers).
    integer: bool = True
    #: Whether clients add shares (True) or one party adds everything (False).
    shared: bool = True

    @property
    @abstractmethod
    def description(self) -> str:
        """The noise in words, for the receipt."""

    def share(self, size: int, rng: np.random.Generator) -> NDArray[Any] | None:
        """One contributing client's share; None when clients add no noise."""
        return None

    def server(self, size: int, rng: np.random.Generator) -> NDArray[Any] | None:
        """Noise the aggregator adds once; None when it adds none."""
        return None

    def shares_sum(self, n_shares: int, size: int, rng: np.random.Generator) -> NDArray[Any] | None:
        """Σ of ``n_shares`` shares, every one drawn on its own (a block of clients).

        One share is exactly :meth:`share`; share samplers may draw a block
        more cheaply in the same law (as jumps: Pólya, Skellam).
        """
        shares = self.share(n_shares * size, rng)
        if shares is None or n_shares == 1:
            return shares
        return shares.reshape(n_shares, size).sum(axis=0)

    @abstractmethod
    def total(self, size: int, rng: np.random.Generator, n_received: int) -> NDArray[Any]:
        """Σ of ``n_received`` shares plus the aggregator's noise, drawn directly."""

    @abstractmethod
    def variance(self, n_received: int) -> NDArray[np.float64] | float:
        """Variance of every coordinate of :meth:`total`."""

    def share_tail(self, tau: int) -> float:
        """An upper bound on P(|share coordinate| > τ) (0 when clients add nothing)."""
        return 0.0


@dataclass(frozen=True)
class PolyaShareNoise(AdditiveNoise):
    """Pólya shares: any ``min_received`` of them sum to at least discrete Laplace noise."""

    shares: PolyaShares

    @property
    def description(self) -> str:
        # No count in the text: how many parties there are is not always public (one
        # example per client under add/remove), and the noise does not depend on it.
        s = self.shares
        frac = s.min_received / s.n_shares if s.min_received is not None else 1.0
        which = "all of them" if frac >= 1 else f"any fraction {frac:.4g} of them"
        return (
            f"Pólya difference shares (α={s.alpha:.6g}), one per party, calibrated so that "
            f"{which} sum to at least discrete Laplace noise"
        )

    def share(self, size: int, rng: np.random.Generator) -> NDArray[np.int64]:
        return self.shares.sample_share(size, rng)

    def shares_sum(self, n_shares: int, size: int, rng: np.random.Generator) -> NDArray[np.int64]:
        return self.shares.sample_shares_sum(n_shares, size, rng)

    def total(self, size: int, rng: np.random.Generator, n_received: int) -> NDArray[np.int64]:
        return self.shares.sample_sum(size, rng, n_received=n_received)

    def variance(self, n_received: int) -> float:
        return self.shares.share_variance * n_received

    def share_tail(self, tau: int) -> float:
        # |X - Y| <= max(X, Y) for X, Y >= 0 i.i.d., so P(|X - Y| > τ) <= 2 P(X > τ).
        s = self.shares
        from scipy import stats  # on first use: scipy.stats costs ~0.7 s to import

        return float(2.0 * stats.nbinom.sf(tau, s.shape, 1.0 - s.alpha))

    def epsilon_if_received(self, n_received: int) -> float:
        """Exact ε of the vector release when only ``n_received`` shares reach the sum.

        One unit shifts the vector by at most L1 = ``shares.l1_sensitivity`` in
        total. With k < m shares the noise per coordinate is
        Pólya(k/m, α) − Pólya(k/m, α), whose privacy loss for a shift s is at
        most s times the loss for a unit shift (a telescoping sum of unit
        ratios), and spreading the shift over L1 coordinates attains that
        bound. So ε = L1 · ε₁ with ε₁ the exact loss of one unit shift
        (:func:`~fedeval.privacy.mechanisms.polya.polya_difference_epsilon`).
        At or above the threshold this is the target ε.
        """
        s = self.shares
        k = min(max(int(n_received), 1), s.n_shares)
        unit_loss = polya_difference_epsilon(k * s.shape, s.alpha, 1)
        return float(s.l1_sensitivity * unit_loss)


@dataclass(frozen=True)
class SkellamShareNoise(AdditiveNoise):
    """Skellam shares: Poisson differences that add up to Skellam noise."""

    shares: SkellamShares

    @property
    def description(self) -> str:
        s = self.shares
        return f"Skellam shares, one per party, summing to Poisson(μ) − Poisson(μ), μ = {s.mu:.6g}"

    def share(self, size: int, rng: np.random.Generator) -> NDArray[np.int64]:
        return self.shares.sample_share(size, rng)

    def shares_sum(self, n_shares: int, size: int, rng: np.random.Generator) -> NDArray[np.int64]:
        return self.shares.sample_shares_sum(n_shares, size, rng)

    def total(self, size: int, rng: np.random.Generator, n_received: int) -> NDArray[np.int64]:
        mu = self.shares.share_mu * n_received
        x = rng.poisson(mu, size=size).astype(np.int64)
        return x - rng.poisson(mu, size=size).astype(np.int64)

    def variance(self, n_received: int) -> float:
        return self.shares.share_variance * n_received

    def share_tail(self, tau: int) -> float:
        from scipy import stats

        return float(2.0 * stats.poisson.sf(tau, self.shares.share_mu))


@dataclass(frozen=True)
class CentralNoise(AdditiveNoise):
    """Noise that one party adds: the aggregator, or each label party on its own statistics.

    Attributes
    ----------
    kind : {"discrete_laplace", "discrete_gaussian"}
    scale : float or ndarray
        Per coordinate, in encoded (integer) units: the discrete Laplace scale t
        (α = e^(-1/t)) or the discrete Gaussian σ. A scale of 0 adds nothing
        (a coordinate no unit can change).
    by : str
        Who adds it, in words (for the receipt).
    """

    kind: CentralNoiseKind
    scale: float | NDArray[np.float64]
    by: str = "the aggregator"
    shared = False

    @property
    def description(self) -> str:
        s = np.asarray(self.scale, dtype=np.float64)
        what = {
            "discrete_laplace": "discrete Laplace noise of scale",
            "discrete_gaussian": "discrete Gaussian noise of σ",
        }[self.kind]
        value = f"{float(s):.6g}" if s.ndim == 0 else f"{float(s.min()):.4g}..{float(s.max()):.4g}"
        return f"{what} {value} (integer units) added by {self.by}"

    def server(self, size: int, rng: np.random.Generator) -> NDArray[Any]:
        scale = np.broadcast_to(np.asarray(self.scale, dtype=np.float64), (size,))
        out = np.zeros(size, dtype=np.int64)
        live = scale > 0
        if self.kind == "discrete_laplace":
            out[live] = sample_discrete_laplace(scale[live], int(live.sum()), rng)
        else:
            out[live] = sample_discrete_gaussian(scale[live], rng)
        return out

    def total(self, size: int, rng: np.random.Generator, n_received: int) -> NDArray[Any]:
        return self.server(size, rng)

    def variance(self, n_received: int) -> NDArray[np.float64] | float:
        s = np.asarray(self.scale, dtype=np.float64)
        flat = np.atleast_1d(s)
        v = np.zeros(flat.shape)
        live = flat > 0
        if self.kind == "discrete_laplace":
            v[live] = discrete_laplace_variance(flat[live])
        else:
            v[live] = discrete_gaussian_variance(flat[live])
        return float(v[0]) if s.ndim == 0 else v


def shares_needed(fraction: float, n_clients: int) -> int:
    """The reconstruction threshold: ``ceil(fraction · n_clients)``, at least 1."""
    return max(1, math.ceil(fraction * n_clients))


def restrict(noise: AdditiveNoise, coordinates: NDArray[np.intp]) -> AdditiveNoise:
    """The noise on a subset of the coordinates (a label party adds noise to its own only)."""
    if isinstance(noise, CentralNoise) and np.ndim(noise.scale) > 0:
        scale = np.asarray(noise.scale)[coordinates]
        return CentralNoise(noise.kind, scale, noise.by)
    return noise
