"""From a privacy model to the concrete mechanism a release uses.

Release functions describe *what* they release (sensitivities, how many
clients share the noise); these helpers pick and calibrate the mechanism that
the privacy model asks for, so the choice lives in one place.
"""

from __future__ import annotations

from fedeval.privacy.models import DistributedDP, LocalDP
from fedeval.privacy.polya import PolyaShares
from fedeval.privacy.randomized_response import RandomizedResponse
from fedeval.privacy.skellam import SkellamShares
from fedeval.privacy.unary_encoding import OptimalUnaryEncoding

__all__ = ["frequency_oracle_for", "share_noise_for"]


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


def frequency_oracle_for(model: LocalDP, n_bins: int) -> OptimalUnaryEncoding | RandomizedResponse:
    """The local-DP frequency oracle of ``model`` over ``n_bins`` items."""
    if model.oracle == "oue":
        return OptimalUnaryEncoding(model.epsilon, n_bins)
    return RandomizedResponse(model.epsilon, n_categories=n_bins)
