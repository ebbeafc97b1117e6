"""count_bins (the one-bincount encoder of every grid sketch) counts what bin_index says."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.typing import NDArray

from fedeval.sketches.grid import UniformGrid, count_bins


@pytest.mark.parametrize("n_bins", [1, 3, 16, 1000, 1024, 1 << 14])
@pytest.mark.parametrize("score_range", [(0.0, 1.0), (0.0, 2.0), (-1.0, 1.0), (0.0, 3.0)])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_count_bins_is_a_per_class_bincount_of_bin_index(
    n_bins: int, score_range: tuple[float, float], n_classes: int
) -> None:
    """Random scores plus every edge and its two float neighbours; int8 labels (the
    class offset must not be computed in 8 bits)."""
    lo, hi = score_range
    grid = UniformGrid(n_bins, score_range)
    rng = np.random.default_rng(n_bins)
    edges = grid.edges
    s = np.concatenate(
        [
            rng.uniform(lo, hi, 300_000),  # more than one chunk
            edges,
            np.nextafter(edges, -np.inf)[1:],
            np.nextafter(edges, np.inf)[:-1],
        ]
    )
    y = rng.integers(0, n_classes, s.size).astype(np.int8)
    got = count_bins(grid, s, y, n_classes)[0]
    for c in range(n_classes):
        np.testing.assert_array_equal(
            got[c], np.bincount(grid.bin_index(s[y == c]), minlength=n_bins)
        )


@pytest.mark.parametrize("n_bins", [1 << 10, 1000])
def test_threaded_encoding_equals_one_thread(n_bins: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks counted in two threads add up to exactly the one-thread counts (issue 15)."""
    from fedeval.sketches import grid

    rng = np.random.default_rng(8)
    n = 5 * grid._CHUNK + 123  # several chunks, a short last one
    scores, labels = rng.random(n), rng.integers(0, 2, n).astype(np.int8)
    g = grid.UniformGrid(n_bins)
    monkeypatch.setattr(grid, "_THREADS_MIN_EXAMPLES", 1)
    monkeypatch.setattr(grid, "ENCODE_THREADS", 1)
    one = grid.count_bins(g, scores, labels, 2)
    monkeypatch.setattr(grid, "ENCODE_THREADS", 2)
    two = grid.count_bins(g, scores, labels, 2)
    np.testing.assert_array_equal(two, one)
    assert two.sum() == n


@pytest.mark.parametrize("n_bins", [1, 7, 16, 1000, 3**7])
@pytest.mark.parametrize("score_range", [(0.0, 1.0), (-3.0, 5.0), (0.1, 0.7)])
def test_locating_one_threshold_equals_the_array_form(
    n_bins: int, score_range: tuple[float, float]
) -> None:
    """Issue 28: one threshold is located on Python scalars; the result must be the array form's."""
    grid = UniformGrid(n_bins, score_range)
    lo, hi = score_range
    rng = np.random.default_rng(n_bins)
    edges = grid.edges
    xs = [
        *rng.uniform(lo - 1, hi + 1, 200),
        *edges[rng.integers(0, n_bins + 1, 50)],
        *np.nextafter(edges[rng.integers(0, n_bins + 1, 50)], np.inf),
        *np.nextafter(edges[rng.integers(0, n_bins + 1, 50)], -np.inf),
        lo, hi, -1e9, 1e12,
    ]  # fmt: skip
    for x in xs:
        r_many, f_many = grid.locate(np.array([x, 0.5 * (lo + hi)]))
        for shape in [(), (1,), (1, 1)]:
            r_one, f_one = grid.locate(np.full(shape, x))
            assert r_one.shape == f_one.shape == shape and r_one.dtype == np.int64
            assert r_one.ravel()[0] == r_many[0], x
            np.testing.assert_array_equal(f_one.ravel(), f_many[:1])
    edges[:] = 0.0  # a caller's copy: the grid keeps its own
    assert grid.edges[-1] == hi


@pytest.mark.parametrize(
    "edges",
    [
        np.linspace(0.0, 1.0, 65),  # 64 equal bins: dyadic, no edge inside a table cell
        np.r_[0.0, 2.0**-10, 2.0**-6, np.arange(4, 16) / 16, 1 - 2.0**-8, 1.0],  # dyadic, uneven
        np.r_[0.0, np.sort(np.random.default_rng(1).random(40)), 1.0],  # arbitrary edges
        np.r_[0.0, 0.5, 0.5 + 2.0**-25, 0.5 + 2.0**-24, 1.0],  # too close for a 2^20 table
        np.r_[0.0, 1e-9, 0.3, 0.3 + 1e-5, 1.0 - 1e-12, 1.0],  # clustered, needs a fine table
        np.array([0.0, 1.0]),  # one bin: no inner edge
        np.linspace(0.0, -np.log(1e-4), 65),  # the log-loss grid: top −ln 10⁻⁴, no power of 2
        np.linspace(0.0, 3.0, 41),  # a top above 1 on a coarse table
        np.r_[0.0, 0.25, 0.3, 0.31],  # a top below 1, its last cell holding the top
    ],
    ids=["uniform", "dyadic", "random", "fallback", "clustered", "one-bin", "log-loss", "top-3",
         "top-0.31"],
)  # fmt: skip
def test_bin_of_edges_table_lookup_is_the_binary_search(edges: np.ndarray) -> None:
    """The lookup-table path of bin_of_edges gives the left-closed binary search's bin for
    every value: random ones, every edge, its two float neighbours, 0, the top, values
    outside [0, top] and NaN (the last bin, as the search puts it)."""
    from fedeval.sketches.grid import _edge_table, bin_of_edges

    top = edges[-1]
    if edges.size > 2 and top != 1.0:
        assert _edge_table(tuple(edges[1:-1].tolist()), float(top)) is not None  # table path
    rng = np.random.default_rng(0)
    at = np.r_[edges, np.nextafter(edges, -np.inf), np.nextafter(edges, np.inf)]
    x = np.r_[top * rng.random(20_000), at, -0.5, top + 0.5, np.nan, 0.0, top]
    expected = np.searchsorted(edges[1:-1], x, side="right")
    got = bin_of_edges(edges, x)
    np.testing.assert_array_equal(got, expected)
    # Values the caller vouches for (in [0, top], no NaN), written into ``out``.
    inside = (x >= 0.0) & (x <= top)
    out = np.full(int(inside.sum()), -1, dtype=np.int64)
    got = bin_of_edges(edges, x[inside], out=out, in_range=True)
    assert got is out
    np.testing.assert_array_equal(out, expected[inside])


@pytest.mark.parametrize("n_bins, hi", [(64, -np.log(1e-4)), (10, 1.0), (7, 2.5), (64, 2.0)])
def test_bin_index_in_range_is_the_corrected_product(n_bins: int, hi: float) -> None:
    """A grid from 0 told its scores lie in range gives the bins of its own rule (the
    product corrected against the published edges) through the edge table: for random
    scores, every edge and its float neighbours inside the range, 0 and the top."""
    from fedeval.sketches.grid import UniformGrid

    grid = UniformGrid(n_bins, (0.0, hi))
    edges = grid.edges
    rng = np.random.default_rng(n_bins)
    at = np.r_[edges, np.nextafter(edges, -np.inf), np.nextafter(edges, np.inf)]
    x = np.r_[hi * rng.random(20_000), at, 0.0, hi]
    x = x[(x >= 0.0) & (x <= hi)]
    got = grid.bin_index(x, in_range=True)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, grid.bin_index(x))
    np.testing.assert_array_equal(got, np.searchsorted(edges[1:-1], x, side="right"))


@pytest.mark.parametrize("n_bins", [1 << 12, 1 << 18])  # a long chunk, and one bincount
def test_keys_computed_in_pieces_count_what_one_piece_counts(
    n_bins: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keys in cache-sized pieces (pieces that do not divide the chunk, a short
    last piece) give the counts of keys computed in one pass, on both the
    one-bincount path (size ≥ n/2) and the chunked one."""
    from fedeval.sketches import grid

    rng = np.random.default_rng(n_bins)
    n = 3 * grid._CHUNK + 777
    scores, labels = rng.random(n), rng.integers(0, 3, n).astype(np.int8)
    g = grid.UniformGrid(n_bins)
    monkeypatch.setattr(grid, "ENCODE_THREADS", 1)
    monkeypatch.setattr(grid, "_KEY_CHUNK", n + 1)  # one piece per chunk
    whole = grid.count_bins(g, scores, labels, 3)
    monkeypatch.setattr(grid, "_KEY_CHUNK", 1000)
    pieces = grid.count_bins(g, scores, labels, 3)
    np.testing.assert_array_equal(pieces, whole)
    for c in range(3):
        np.testing.assert_array_equal(
            whole[0, c], np.bincount(g.bin_index(scores[labels == c]), minlength=n_bins)
        )


@pytest.mark.parametrize(
    ("n", "size"), [(3 << 20, 1 << 21), (5 << 20, 1 << 17), (5 << 20, 1 << 12)]
)
def test_bincount_chunks_are_never_shorter_than_the_count_vector(
    n: int, size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every bincount allocates a vector of ``size`` counts: a chunk holds at least
    ``size`` keys (and 8 per count up to 1M keys), so the work stays O(n + size)."""
    from fedeval.sketches import grid

    calls: list[int] = []
    real = np.bincount

    def spy(x: NDArray[np.int64], *args: object, **kwargs: object) -> NDArray[np.int64]:
        calls.append(x.shape[0])
        return real(x, *args, **kwargs)

    monkeypatch.setattr(grid, "ENCODE_THREADS", 1)
    monkeypatch.setattr(np, "bincount", spy)
    keys = np.arange(n, dtype=np.int64) % size

    def fill(start: int, stop: int, key: NDArray[np.int64], scratch: NDArray[np.int64]) -> None:
        key[:] = keys[start:stop]

    got = grid.chunked_bincount(n, size, fill)
    np.testing.assert_array_equal(got, real(keys, minlength=size))
    assert min(calls[:-1] or calls) >= min(n, max(size, min(8 * size, 1 << 20)))
    assert len(calls) <= max(1, n // max(size, min(8 * size, 1 << 20)))
