"""Every sketch's summaries add like a monoid, and releases ignore how examples are split.

For a linear sketch, encode(A ∪ B) = encode(A) + encode(B) for any examples A,
B, and encode(∅) = 0; so the exact (secure-aggregation) release is the same
however the examples are spread over clients, on the fast and on the faithful
path. Sketches whose clients clip their own contribution are not linear in the
examples, but their client vectors still add: the vectorised sum over clients
equals the sum of the clients' own encodings, in any order.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedeval.aggregation import release
from fedeval.data import Federation
from fedeval.privacy.models import SecureAggregation
from fedeval.sketches.base import Sketch
from fedeval.sketches.class_histograms import OneVsRestSketch
from fedeval.sketches.group_sums import GroupSumsSketch
from fedeval.sketches.hierarchy import HierarchySketch, HierarchySpec
from fedeval.sketches.prefix_tree import PrefixTreeSketch
from fedeval.sketches.rank_sums import RankSumSketch
from fedeval.sketches.scaler_updates import ScalerUpdateSketch

N_MAX = 40


@st.composite
def binary_data(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = draw(st.integers(1, N_MAX))
    # Scores on a coarse grid hit the bin and grid edges often.
    scores = np.array(draw(st.lists(st.integers(0, 16), min_size=n, max_size=n))) / 16
    labels = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
    clients = np.array(draw(st.lists(st.integers(0, 5), min_size=n, max_size=n)))
    return scores.astype(np.float64), labels.astype(np.int64), clients.astype(np.int64)


def _linear_sketches(n: int, clients: np.ndarray) -> list[Sketch]:
    k = int(clients.max()) + 1
    ranks = np.arange(n, dtype=np.float64)
    return [
        HierarchySketch(HierarchySpec(3, 2)),
        HierarchySketch(HierarchySpec(2, 3)).exact_variant(),
        PrefixTreeSketch(np.linspace(0.0, 1.0, 9), "at_most"),
        PrefixTreeSketch(np.linspace(0.0, 1.0, 6), "below", cls=1),
        GroupSumsSketch(np.array([0.0, 0.3, 0.5, 1.0]), "observed"),
        GroupSumsSketch(np.array([0.0, 0.3, 0.5, 1.0]), "expected"),
        RankSumSketch(ranks, clients, k, "fixed"),
        RankSumSketch(ranks, clients, k, "adaptive"),
    ]


@settings(max_examples=60, deadline=None)
@given(binary_data(), st.data())
def test_linear_sketches_add_like_a_monoid(data: tuple, draw: st.DataObject) -> None:
    s, y, c = data
    n = s.size
    cut = draw.draw(st.integers(0, n))
    perm = np.random.default_rng(draw.draw(st.integers(0, 2**16))).permutation(n)
    a, b = perm[:cut], perm[cut:]
    for sketch in _linear_sketches(n, c):
        # The rank sketch encodes the examples' ranks, the others their scores.
        x = sketch.ranks if isinstance(sketch, RankSumSketch) else s
        whole = np.asarray(sketch.encode(x, y, c), dtype=np.float64)
        parts = np.asarray(sketch.encode(x[a], y[a], c[a]), dtype=np.float64) + np.asarray(
            sketch.encode(x[b], y[b], c[b]), dtype=np.float64
        )
        np.testing.assert_allclose(whole, parts, atol=1e-9, err_msg=sketch.name)
        empty = sketch.encode(x[:0], y[:0], c[:0])
        np.testing.assert_array_equal(empty, 0, err_msg=sketch.name)


@settings(max_examples=40, deadline=None)
@given(binary_data(), st.integers(0, 2**16))
def test_exact_releases_ignore_how_examples_are_split(data: tuple, seed: int) -> None:
    s, y, c = data
    other = np.random.default_rng(seed).integers(0, 4, s.size)
    for sketch in _linear_sketches(s.size, c)[:6]:  # the rank sketch fixes its own clients
        reference = None
        for clients in (c, other, np.arange(s.size), np.zeros(s.size, dtype=np.int64)):
            fed = Federation.from_arrays(s, y, clients)
            for path in ("fast", "faithful"):
                rel = release(fed, sketch, SecureAggregation(), path=path, rng=0)
                if reference is None:
                    reference = rel.values
                np.testing.assert_allclose(rel.values, reference, atol=1e-9, err_msg=sketch.name)


@st.composite
def multiclass_data(draw: st.DrawFn) -> Federation:
    n = draw(st.integers(2, 30))
    c = draw(st.integers(2, 4))
    raw = np.array(draw(st.lists(st.integers(1, 8), min_size=n * c, max_size=n * c)), float)
    probs = raw.reshape(n, c) / raw.reshape(n, c).sum(axis=1, keepdims=True)
    labels = np.array(draw(st.lists(st.integers(0, c - 1), min_size=n, max_size=n)))
    clients = np.array(draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)))
    return Federation.from_arrays(probs, labels, clients, kind="probabilities")


def _fit(w: np.ndarray, z: np.ndarray, y: np.ndarray) -> np.ndarray:
    """A stand-in local fit: the mean logit of the client's examples (deterministic)."""
    return w + z.mean(axis=0)


@settings(max_examples=40, deadline=None)
@given(multiclass_data(), st.integers(0, 2**16))
def test_clipped_client_vectors_add_over_clients(fed: Federation, seed: int) -> None:
    c = fed.n_classes
    sketches: list[Sketch] = [
        OneVsRestSketch(c, 8),
        OneVsRestSketch(c, 8, clip=(1.5, 2.0)),
        ScalerUpdateSketch(_fit, np.zeros(c), clip=None),
        ScalerUpdateSketch(_fit, np.zeros(c), clip=0.7),
    ]
    order = np.random.default_rng(seed).permutation(fed.n_clients)
    for sketch in sketches:
        own = sum(
            np.asarray(
                sketch.encode(v.scores, v.labels, np.full(v.n_examples, i)), dtype=np.float64
            )
            for i, v in ((i, fed.client(int(i))) for i in order)
        )
        np.testing.assert_allclose(
            np.asarray(sketch.encode_clients(fed), dtype=np.float64), own, atol=1e-9
        )
        np.testing.assert_allclose(
            np.asarray(sketch.encode_clients(fed, order), dtype=np.float64), own, atol=1e-9
        )


def test_the_clip_really_binds_for_clipped_sketches() -> None:
    """Guard for the test above: with clipping, one big client is not two halves."""
    probs = np.tile([[0.7, 0.3]], (20, 1))
    labels = np.zeros(20, dtype=np.int64)
    sketch = OneVsRestSketch(2, 4, clip=(1.0, 1.0))
    one = sketch.encode(probs, labels, np.zeros(20, dtype=np.int64))
    halves = 2 * sketch.encode(probs[:10], labels[:10], np.zeros(10, dtype=np.int64))
    assert not np.allclose(one, halves)
    with pytest.raises(AssertionError):
        np.testing.assert_allclose(one, halves)
