"""One-vs-rest class histograms (sketches/class_histograms.py): encodings and sensitivities."""

from __future__ import annotations

import numpy as np
import pytest

import fedeval as fe
from fedeval.privacy.sensitivity import Sensitivity
from fedeval.sketches.class_histograms import OneVsRestSketch


def _sensitivity(sketch: OneVsRestSketch, unit: str, neighbouring: str, b: int = 1) -> Sensitivity:
    return sketch.sensitivity(
        unit=unit,  # type: ignore[arg-type]
        neighbouring=neighbouring,  # type: ignore[arg-type]
        examples_per_unit=b,
        layout="whole",
    )


@pytest.mark.parametrize("c", [2, 3, 10])
def test_one_example_changes_c_counts_and_the_declared_l1_is_c(c: int) -> None:
    """The declared sensitivity is what adding one example does to the encoding."""
    rng = np.random.default_rng(c)
    p = rng.dirichlet(np.ones(c), 50)
    y = rng.integers(0, c, 50)
    sketch = OneVsRestSketch(c, 8)
    extra_p, extra_y = rng.dirichlet(np.ones(c), 1), np.array([1])
    base = sketch.encode(p, y, np.zeros(50, np.int64))
    more = sketch.encode(np.vstack([p, extra_p]), np.r_[y, extra_y], np.zeros(51, np.int64))
    diff = np.abs(more - base)
    s = _sensitivity(sketch, "example", "add_remove")
    assert diff.sum() == s.l1 == c
    assert np.sqrt((diff**2).sum()) <= s.l2 + 1e-12
    assert not sketch.clips_clients


def test_client_level_and_replace_scale_with_the_bound() -> None:
    sketch = OneVsRestSketch(4, 8)
    client = _sensitivity(sketch, "client", "add_remove", b=5)
    assert (client.l1, client.l2) == (20.0, pytest.approx(5 * 2.0))
    replace = _sensitivity(sketch, "example", "replace")
    assert (replace.l1, replace.l2) == (8.0, pytest.approx(np.sqrt(8.0)))
    label = _sensitivity(sketch, "label", "replace")
    assert (label.l1, label.l2) == (4.0, 2.0)


def test_clipped_histograms_bound_a_client_only() -> None:
    sketch = OneVsRestSketch(3, 8, clip=(1.0, 1.0))
    assert sketch.clips_clients
    with pytest.raises(ValueError, match="bound a client"):
        _sensitivity(sketch, "example", "add_remove")


def test_distributed_dp_noise_matches_the_declared_l1() -> None:
    """Through fe.calibrate: the per-bin noise SD is discrete Laplace's for L1 = c at ε."""
    rng = np.random.default_rng(0)
    c, eps = 3, 1.0
    p = rng.dirichlet(np.ones(c), 300)
    y = rng.integers(0, c, 300)
    fed = fe.Federation.from_arrays(p, y, clients=np.arange(300) % 30)
    cal = fe.calibrate(fed, fe.DistributedDP(eps), method="binning", do_no_harm=False, rng=1)
    alpha = np.exp(-eps / c)
    sd = np.sqrt(2 * alpha) / (1 - alpha)  # discrete Laplace with parameter e^(-ε/L1)
    for value in cal.procedure["noise_std"].values():  # type: ignore[attr-defined]
        assert value == pytest.approx(sd, rel=1e-9)
