"""The ECDF layer's release and estimate (ecdf/release.py).

The noise of ``private_ecdf`` is tested in ``tests/ecdf/test_ecdf_tree.py``; here:
``PrivateECDF`` (the sketch's decoded estimate with its post-processing as
methods), the exact ECDF, and the helpers that choose the model and the normaliser.
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest

import fedeval as fe
from fedeval.ecdf.inverse import inverse_ecdf
from fedeval.ecdf.release import (
    PrivateECDF,
    check_values,
    ecdf_model,
    empirical_cdf,
    private_ecdf,
    public_total,
)
from fedeval.postprocess.smoothing import smooth_ecdf
from fedeval.sketches.prefix_tree import DecodedECDF

GRID = np.linspace(0.0, 1.0, 17)


def test_empirical_cdf_is_the_fraction_at_or_below_each_point() -> None:
    values = np.array([0.0, 0.25, 0.25, 0.6, 1.0])
    ecdf = empirical_cdf(values, GRID)
    expected = [(values <= g).mean() for g in GRID]
    np.testing.assert_allclose(ecdf.values, expected)
    assert not ecdf.guarantee.is_private and ecdf.epsilon == np.inf


def test_of_keeps_every_field_of_the_decoded_estimate() -> None:
    decoded = DecodedECDF(
        grid=GRID,
        counts=np.arange(17.0),
        total=16.0,
        indices=np.arange(17),
        n_tree_points=17,
        count_variance=3.0,
        post_processing=("a step",),
    )
    wrapped = PrivateECDF.of(decoded)
    assert type(wrapped) is PrivateECDF
    for f in fields(DecodedECDF):
        assert getattr(wrapped, f.name) is getattr(decoded, f.name), f.name


def test_releases_hand_out_private_ecdfs_and_smoothing_keeps_the_type() -> None:
    values = np.random.default_rng(0).beta(2, 5, 400)
    raw = private_ecdf(values, GRID, epsilon=0.5, rng=3)
    assert type(raw) is PrivateECDF
    smooth = raw.smoothed(1)
    assert type(smooth) is PrivateECDF and smooth.is_monotone
    np.testing.assert_array_equal(smooth.counts, smooth_ecdf(raw, norm=1).counts)
    assert smooth.post_processing[-1].startswith("monotone L1 smoothing")
    np.testing.assert_array_equal(smooth.inverse([0.2, 0.5]), inverse_ecdf(smooth, [0.2, 0.5]))
    # The same estimate without the methods smooths to the same counts.
    plain = DecodedECDF(**{f.name: getattr(raw, f.name) for f in fields(DecodedECDF)})
    same = smooth_ecdf(plain, norm=1)
    assert type(same) is DecodedECDF
    np.testing.assert_array_equal(same.counts, smooth.counts)
    assert fe.ecdf.PrivateECDF is PrivateECDF


def test_the_normaliser_is_public_only_when_the_model_makes_it_so() -> None:
    assert public_total(fe.SecureAggregation(), 10) == 10.0
    assert public_total(fe.DistributedDP(1.0, neighbouring="replace"), 10) == 10.0
    assert public_total(fe.DistributedDP(1.0, neighbouring="add_remove"), 10) is None


def test_epsilon_is_sugar_for_distributed_dp_and_excludes_a_model() -> None:
    model = ecdf_model(None, 2.0, "add_remove")
    assert model == fe.DistributedDP(2.0, neighbouring="add_remove")
    given = fe.SecureAggregation()
    assert ecdf_model(given, None, "replace") is given
    with pytest.raises(TypeError, match="exactly one"):
        ecdf_model(given, 1.0, "replace")
    with pytest.raises(TypeError, match="exactly one"):
        ecdf_model(None, None, "replace")


@pytest.mark.parametrize(
    ("values", "error", "match"),
    [
        (np.array(["a"]), TypeError, "numeric"),
        (np.zeros((2, 2)), ValueError, "1-dimensional"),
        (np.array([]), ValueError, "at least one"),
        (np.array([0.1, np.inf]), ValueError, "index 1"),
    ],
)
def test_bad_values_are_refused(values: np.ndarray, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        check_values(values)
