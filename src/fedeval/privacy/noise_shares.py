"""From a privacy model to the concrete mechanism a release uses.

Release functions describe *what* they release (sensitivities, how many
clients share the noise); these helpers pick and calibrate the mechanism that
the privacy model asks for, so the choice lives in one place.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from fedeval.privacy.mechanisms.polya import PolyaShares
from fedeval.privacy.mechanisms.randomized_response import RandomizedResponse
from fedeval.privacy.mechanisms.skellam import SkellamShares
from fedeval.privacy.mechanisms.unary_encoding import OptimalUnaryEncoding
from fedeval.privacy.models import DistributedDP, LocalDP

__all__ = ["RROracle", "frequency_oracle_for", "share_noise_for"]


def share_noise_for(
    model: DistributedDP,
    *,
    epsilon: float,
    l1_sensitivity: float,
    l2_sensitivity: float,
    per_coordinate_l1: int,
    split: int,
    n_shares: int,
    n_min: int,
) -> PolyaShares | SkellamShares:
    """Noise shares for a vector release under distributed DP.

    Parameters
    ----------
    model : DistributedDP
    epsilon : float
        ε of the whole vector release.
    l1_sensitivity, l2_sensitivity : float
        Sensitivities of the whole vector per privacy unit (used by Skellam).
    per_coordinate_l1 : int
        L1 sensitivity of one of the ``split`` parts (Pólya: each part gets
        discrete Laplace for ε/split, composed sequentially).
    split : int
        Number of parts the vector's budget is split over (hierarchy levels).
    n_shares : int
        Clients adding a share.
    n_min : int
        Reconstruction threshold: any ``n_min`` shares reach the target noise.

    Returns
    -------
    PolyaShares or SkellamShares
    """
    if model.noise == "polya":
        return PolyaShares.for_dropouts(epsilon / split, n_shares, n_min, per_coordinate_l1)
    # Skellam: calibrated on the whole vector via RDP, to the reconstruction
    # threshold: any n_min shares sum to Skellam(μ) or more.
    assert model.delta is not None  # guaranteed by DistributedDP validation
    calibrated = SkellamShares.calibrate(
        epsilon, model.delta, l1_sensitivity, l2_sensitivity, n_min
    )
    mu_share = calibrated.mu / n_min
    return SkellamShares(
        mu_share * n_shares,
        n_shares,
        l1_sensitivity=l1_sensitivity,
        l2_sensitivity=l2_sensitivity,
        delta=model.delta,
    )


@dataclass(frozen=True)
class RROracle:
    """k-ary randomized response behind the frequency-oracle interface of OUE.

    Every report carries exactly one item (RR has no "nothing to report"
    input), so the counts passed in must sum to the number of reports.
    """

    rr: RandomizedResponse

    @property
    def n_bins(self) -> int:
        return self.rr.n_categories

    def perturb(self, indices: NDArray[np.int64], rng: np.random.Generator) -> NDArray[np.uint8]:
        """One-hot rows of the randomised categories, shape (n, k)."""
        if indices.size and indices.min() < 0:
            raise ValueError("randomized response needs an item in every report (no -1)")
        out = np.zeros((indices.size, self.n_bins), dtype=np.uint8)
        out[np.arange(indices.size), self.rr.perturb(indices, rng)] = 1
        return out

    def sample_aggregate(
        self, true_counts: NDArray[np.int64], n_reports: int, rng: np.random.Generator
    ) -> NDArray[np.int64]:
        if int(np.sum(true_counts)) != n_reports:
            raise ValueError("randomized response needs an item in every report")
        return self.rr.sample_aggregate(true_counts, rng)

    def estimate(self, counts: NDArray[np.int64], n_reports: int) -> NDArray[np.float64]:
        return self.rr.estimate(counts)

    def count_variance(self, true_counts: NDArray[np.int64], n_reports: int) -> NDArray[np.float64]:
        return self.rr.count_variance(true_counts)


def frequency_oracle_for(model: LocalDP, n_bins: int) -> OptimalUnaryEncoding | RROracle:
    """The local-DP frequency oracle of ``model`` over ``n_bins`` items."""
    if model.oracle == "oue":
        return OptimalUnaryEncoding(model.epsilon, n_bins)
    return RROracle(RandomizedResponse(model.epsilon, n_categories=n_bins))
