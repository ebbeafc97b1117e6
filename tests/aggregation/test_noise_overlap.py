"""The fast path draws a large noise vector while it encodes the data (issue 15 (e))."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import fedeval as fe


@pytest.mark.parametrize("model", [fe.DistributedDP(1.0), fe.CentralDP(1.0)])
def test_noise_drawn_in_a_second_thread_is_the_same_draw(
    model: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Large noise vectors are drawn while the data are encoded (issue 15 (e)).

    The encoding draws nothing from the generator, so the overlapped release
    must equal the sequential one exactly for the same seed.
    """
    from fedeval.aggregation import paths, release
    from fedeval.sketches.hierarchy import HierarchySketch, HierarchySpec

    rng = np.random.default_rng(5)
    fed = fe.Federation.from_arrays(rng.random(2_000), rng.integers(0, 2, 2_000))
    sketch = HierarchySketch(HierarchySpec(6))
    monkeypatch.setattr(paths, "OVERLAP_NOISE_MIN_SIZE", 1 << 62)
    sequential = release(fed, sketch, model, rng=3)
    monkeypatch.setattr(paths, "OVERLAP_NOISE_MIN_SIZE", 1)
    overlapped = release(fed, sketch, model, rng=3)
    np.testing.assert_array_equal(overlapped.values, sequential.values)
    # not vacuous: another seed draws other noise
    assert np.any(overlapped.values != release(fed, sketch, model, rng=4).values)
