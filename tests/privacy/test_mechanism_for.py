"""The one dispatch: which mechanism each privacy model gives each sketch, and what it states."""

from __future__ import annotations

import math

import numpy as np
import pytest

import fedeval as fe
from fedeval.privacy.mechanism_for import mechanism_for
from fedeval.privacy.noise import CentralNoise, PolyaShareNoise, SkellamShareNoise
from fedeval.sketches.class_histograms import OneVsRestSketch
from fedeval.sketches.hierarchy import HierarchySketch, HierarchySpec
from fedeval.sketches.rank_sums import RankSumSketch
from fedeval.sketches.scaler_updates import ScalerUpdateSketch

HIER = HierarchySketch(HierarchySpec(4, 2))
RANKS = RankSumSketch(np.arange(10.0), np.repeat(np.arange(5), 2), 5, "fixed")
UPDATES = ScalerUpdateSketch(lambda w, z, y: w, np.zeros(3), clip=0.5)


def test_distributed_dp_gives_polya_shares_calibrated_to_the_whole_vector() -> None:
    mech = mechanism_for(fe.DistributedDP(1.0), HIER, n_clients=50)
    assert mech.placement == "shares" and isinstance(mech.noise, PolyaShareNoise)
    # One example touches one node per level: L1 = h = 4, so α = exp(-ε/4) = exp(-(ε/4)/1).
    assert mech.noise.shares.alpha == pytest.approx(math.exp(-1.0 / 4))
    assert [e.epsilon for e in mech.ledger_entries] == pytest.approx([0.25] * 4)
    assert mech.guarantee.unit == "example" and mech.guarantee.neighbouring == "add_remove"
    assert mech.contribution_bound is None
    client = mechanism_for(
        fe.DistributedDP(1.0, unit="client", contribution_bound=3), HIER, n_clients=50
    )
    assert client.contribution_bound == 3
    assert client.noise.shares.alpha == pytest.approx(math.exp(-1.0 / 12))  # type: ignore[union-attr]


def test_skellam_and_assign_layout_charge_one_entry() -> None:
    sk = mechanism_for(fe.DistributedDP(1.0, noise="skellam", delta=1e-6), HIER, n_clients=50)
    assert isinstance(sk.noise, SkellamShareNoise) and len(sk.ledger_entries) == 1
    assign = mechanism_for(
        fe.DistributedDP(1.0, neighbouring="replace"), HIER, n_clients=50, layout="assign"
    )
    assert [e.epsilon for e in assign.ledger_entries] == [1.0]
    # A replaced example moves two counts of its level: L1 = 2, α = e^(-ε/2).
    assert assign.noise.shares.alpha == pytest.approx(math.exp(-0.5))  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="not public under add/remove"):
        mechanism_for(fe.DistributedDP(1.0), HIER, n_clients=50, layout="assign")


def test_local_dp_always_assigns_parts_and_needs_a_one_hot_sketch() -> None:
    mech = mechanism_for(fe.LocalDP(2.0), HIER, n_clients=50, layout="whole")
    assert mech.placement == "local" and mech.layout == "assign"
    assert mech.oracle(8).n_bins == 8
    with pytest.raises(TypeError, match="one-hot"):
        mechanism_for(fe.LocalDP(2.0), RANKS, n_clients=5)


def test_label_dp_noise_is_added_by_each_party_with_its_own_scale() -> None:
    mech = mechanism_for(fe.LabelDP(1.0), RANKS, n_clients=5)
    assert mech.placement == "owner" and isinstance(mech.noise, CentralNoise)
    # In value units (the sums are sent in fixed point, the noise is in their units).
    scale = np.asarray(mech.noise.scale) * RANKS.resolution
    assert mech.noise.kind == "discrete_laplace"
    # Fixed split α = 1/2: counts get 1/((1-α)ε) = 2, sums Δ_k/(αε) = 2·max rank of party k
    # (exact: these half-integer ranks lie on the fixed-point grid).
    np.testing.assert_allclose(scale[:5], 2.0)
    np.testing.assert_allclose(scale[5:], 2.0 * np.array([1, 3, 5, 7, 9]))
    rr = mechanism_for(fe.LabelDP(1.0, noise="rr"), RANKS, n_clients=5)
    assert rr.placement == "labels" and rr.flip_probability == pytest.approx(1 / (1 + math.e))
    with pytest.raises(TypeError, match="LabelDP"):
        mechanism_for(fe.LabelDP(1.0), HIER, n_clients=5)


def test_user_level_dp_needs_clipping_sketches_and_accounts_all_rounds() -> None:
    mech = mechanism_for(
        fe.UserLevelDP(1.0, 1e-5, clip=0.5), UPDATES, n_clients=100, rounds=5, sampling_rate=0.2
    )
    assert mech.placement == "aggregator" and mech.rounds == 5
    assert len(mech.ledger_entries) == 1 and 0.9 < mech.guarantee.epsilon <= 1.0
    z = mech.ledger_entries[0].details["noise_multiplier"]
    assert mech.noise.kind == "discrete_gaussian"  # type: ignore[union-attr]
    # In value units: σ = z·(C + γ√d/2), the rounding allowance of the fixed point.
    step, d = UPDATES.resolution, UPDATES.length
    value_sigma = float(np.asarray(mech.noise.scale)) * step  # type: ignore[union-attr]
    assert value_sigma == pytest.approx(z * (0.5 + step * math.sqrt(d) / 2), rel=1e-12)
    weighted = mechanism_for(
        fe.UserLevelDP(1.0, 1e-5, clip=(2.0, 3.0)),
        OneVsRestSketch(2, 4, clip=(2.0, 3.0)),
        n_clients=100,
    )
    scale = np.asarray(weighted.noise.scale)  # type: ignore[union-attr]
    assert scale[0] / scale[-1] == pytest.approx(2.0 / 3.0)
    with pytest.raises(TypeError, match="UserLevelDP"):
        mechanism_for(fe.UserLevelDP(1.0, 1e-5), HIER, n_clients=10)
    with pytest.raises(TypeError, match="DistributedDP"):
        mechanism_for(fe.DistributedDP(1.0), UPDATES, n_clients=10)
    with pytest.raises(ValueError, match="one release"):
        mechanism_for(fe.DistributedDP(1.0), HIER, n_clients=10, rounds=3)


def test_secure_aggregation_is_exact_and_charges_nothing() -> None:
    mech = mechanism_for(fe.SecureAggregation(), HIER, n_clients=10)
    assert mech.exact and mech.ledger_entries == () and not mech.guarantee.is_private
    assert math.isinf(mech.guarantee.epsilon) and mech.receipt.epsilon_spent == 0.0


def test_unknown_model_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="privacy model"):
        mechanism_for(object(), HIER, n_clients=10)  # type: ignore[arg-type]
