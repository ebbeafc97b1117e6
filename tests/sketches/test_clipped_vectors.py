"""Clipped per-client vectors are computed from each client's own examples.

The Federation keeps examples in the user's order (clients interleaved), so a
per-client encoding must gather each client's rows; slicing contiguous blocks
clips the wrong groups of examples and breaks the per-client (user-level)
sensitivity.
"""

from __future__ import annotations

import numpy as np

import fedeval as fe
from fedeval.sketches.clipped_sums import ClippedSumSketch
from fedeval.sketches.scaler_updates import ScalerUpdateSketch


def _stat(scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
    # A sum over the client's examples whose clipping depends on the client's rows.
    return np.array([scores.sum(), float(labels.sum()), float(scores.size)])


def _fit(w: np.ndarray, scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
    return w + np.array([scores.mean(), labels.mean(), 1.0])


def _interleaved() -> fe.Federation:
    rng = np.random.default_rng(0)
    n, k = 600, 20
    scores = rng.random(n)
    labels = rng.integers(0, 2, n)
    clients = np.arange(n) % k  # every client's rows spread over the whole array
    return fe.Federation.from_arrays(scores, labels, clients)


def test_clipped_sums_use_each_clients_own_examples() -> None:
    fed = _interleaved()
    sketch = ClippedSumSketch(_stat, 3, clip=2.0)
    expected = np.zeros(3, dtype=np.int64)
    for k in range(fed.n_clients):
        rows = fed.rows_of(np.array([k]))
        expected += sketch.encode(fed.scores[rows], fed.labels[rows], np.full(rows.size, k))
    np.testing.assert_array_equal(sketch.encode_clients(fed), expected)


def test_scaler_updates_use_each_clients_own_examples() -> None:
    fed = _interleaved()
    sketch = ScalerUpdateSketch(_fit, np.zeros(3), clip=0.5)
    expected = np.zeros(3, dtype=np.int64)
    for k in range(fed.n_clients):
        rows = fed.rows_of(np.array([k]))
        expected += sketch.encode(fed.scores[rows], fed.labels[rows], np.full(rows.size, k))
    np.testing.assert_array_equal(sketch.encode_clients(fed), expected)
