"""The prefix-tree sketch's encoder and decoder (sketches/prefix_tree.py).

Its noise scales (Lemma 1, Theorems 1 and 3), ties in the counts and the error of
its releases are checked in ``tests/ecdf/test_ecdf_tree.py``; here: what the
encoder sends at chosen positions and classes, and what the decoder returns.
DESIGN.md keeps post-processing out of the sketch: the decoded estimate has no
smoothing or inverse of its own (``fedeval.ecdf.PrivateECDF`` adds them).
"""

from __future__ import annotations

import numpy as np
import pytest

from fedeval.aggregation import release
from fedeval.data import Federation
from fedeval.privacy.models import SecureAggregation
from fedeval.sketches.prefix_tree import DecodedECDF, PrefixTreeSketch

POINTS = np.array([0.1, 0.25, 0.5, 0.75, 1.0])
SCORES = np.array([0.05, 0.1, 0.3, 0.5, 0.5, 0.9, 0.95, 1.0])
LABELS = np.array([0, 1, 0, 1, 1, 0, 1, 1])


def exact(sketch: PrefixTreeSketch) -> DecodedECDF:
    fed = Federation.from_arrays(SCORES, LABELS)
    out: DecodedECDF = release(fed, sketch, SecureAggregation()).decode()
    return out


def test_encode_counts_at_chosen_positions_and_class() -> None:
    clients = np.zeros(SCORES.size, dtype=np.int64)
    # at most τ: 0.1 -> {0.05, 0.1}; 0.5 -> + {0.3, 0.5, 0.5}; 1.0 -> all 8
    sketch = PrefixTreeSketch(POINTS, "at_most", positions=np.array([0, 2, 4]))
    np.testing.assert_array_equal(sketch.encode(SCORES, LABELS, clients), [2, 5, 8])
    # strictly below τ, positives only (0.1, 0.5, 0.5, 0.95, 1.0)
    below = PrefixTreeSketch(POINTS, "below", cls=1)
    np.testing.assert_array_equal(below.encode(SCORES, LABELS, clients), [0, 1, 1, 3, 4])
    assert below.length == POINTS.size
    assert sketch.at(np.array([1])).released.tolist() == [1]


def test_the_noise_tree_covers_every_point_whatever_is_released() -> None:
    part = PrefixTreeSketch(POINTS, positions=np.array([3]))
    full = PrefixTreeSketch(POINTS)
    assert part.noise_size == full.noise_size == full.tree.n_nodes
    noise = np.arange(full.noise_size, dtype=np.float64)
    np.testing.assert_array_equal(part.noise_to_values(noise), full.noise_to_values(noise)[[3]])


def test_decode_with_a_public_total_divides_by_it() -> None:
    ecdf = exact(PrefixTreeSketch(POINTS, total=8.0))
    assert type(ecdf) is DecodedECDF
    np.testing.assert_allclose(ecdf.values, [2 / 8, 2 / 8, 5 / 8, 5 / 8, 1.0])
    assert ecdf.post_processing == ()
    assert ecdf.count_variance == 0.0 and ecdf.noise_scale == 0.0
    assert ecdf.height == 3 and ecdf.is_monotone


def test_decode_without_a_total_normalises_by_the_last_count_and_says_so() -> None:
    ecdf = exact(PrefixTreeSketch(POINTS))
    assert ecdf.total == 8.0
    assert ecdf.post_processing == (
        "normalised by the released count at the last grid point (floored at 1)",
    )
    with pytest.raises(ValueError, match="release that point too"):
        exact(PrefixTreeSketch(POINTS, positions=np.array([0, 1])))


def test_the_decoded_ecdf_is_a_left_continuous_step_function_of_the_grid() -> None:
    ecdf = exact(PrefixTreeSketch(POINTS, total=8.0))
    t = np.array([0.0, 0.1, 0.2, 0.5, 0.74, 2.0])
    np.testing.assert_allclose(ecdf(t), [0.0, 0.25, 0.25, 0.625, 0.625, 1.0])
    with pytest.raises(ValueError, match="finite"):
        ecdf([np.nan])


def test_the_sketch_does_no_post_processing() -> None:
    assert not hasattr(DecodedECDF, "smoothed")
    assert not hasattr(DecodedECDF, "inverse")


def test_only_examples_and_clients_are_protected() -> None:
    with pytest.raises(ValueError, match="examples or clients"):
        PrefixTreeSketch(POINTS).sensitivity(
            unit="label", neighbouring="replace", examples_per_unit=1, layout="whole"
        )
    with pytest.raises(ValueError, match="side"):
        PrefixTreeSketch(POINTS, "above")  # type: ignore[arg-type]
