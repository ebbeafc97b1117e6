"""The streamed contribution bound's state: its width, and data that changed between passes.

The law of the rows it keeps is tested in ``tests/statistical/test_aggregation_paths.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

from fedeval.aggregation.streamed_bound import StreamedBound


def _federation(seed: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """Rows of 50 clients (a few heavy ones, some runs of 20 or more in one batch), in batches."""
    gen = np.random.default_rng(seed)
    weights = gen.pareto(1.0, 50) + 0.05
    clients = gen.choice(50, 4000, p=weights / weights.sum())
    clients[1000:1040] = 3  # a block of 40 rows of one client in one batch
    return clients, np.array_split(clients, 9)


def _widen(bounder: StreamedBound) -> None:
    """Make a 32-bit state 64 bits wide, in place (what a client too large for 32 bits does)."""
    bounder.state = bounder.state.astype(np.uint64)
    bounder.one_row, bounder.slots = np.uint64(bounder.one_row), np.uint64(bounder.slots)


@pytest.mark.parametrize("bound", [1, 3, 17])
def test_state_in_64_bits_keeps_the_same_rows_as_in_32(bound: int) -> None:
    """The state is packed in 32 bits where the largest client and the bound fit, else in
    64; the decisions are the same comparisons of the same draws, so a seed keeps the same
    rows in either width (the 32-bit state was made 64 bits wide by hand here)."""
    clients, batches = _federation(bound)
    sizes = np.bincount(clients)
    narrow, wide = StreamedBound(sizes, bound, 7), StreamedBound(sizes, bound, 7)
    assert narrow.state.dtype == np.uint32
    _widen(wide)
    keep_narrow = np.concatenate([narrow(b) for b in batches])
    keep_wide = np.concatenate([wide(b) for b in batches])
    assert np.array_equal(keep_narrow, keep_wide)
    assert np.array_equal(
        np.bincount(clients[keep_narrow], minlength=sizes.size), np.minimum(sizes, bound)
    )
    assert wide.state.dtype == np.uint64 and np.array_equal(wide.state, narrow.state)


def test_a_client_too_large_for_32_bits_widens_the_state() -> None:
    """With a bound of 40,000 (16 bits of slots) a client of 70,000 rows does not fit the
    16 bits left for its unseen rows: the state is 64 bits wide, and the client keeps
    exactly 40,000 rows, each batch's share hypergeometric in the rows it holds."""
    clients = np.repeat([0, 1, 2], [70_000, 10, 30_000])
    clients = clients[np.random.default_rng(3).permutation(clients.size)]
    sizes = np.bincount(clients)
    batches = np.array_split(clients, 5)
    bounder = StreamedBound(sizes, 40_000, 11)
    assert bounder.state.dtype == np.uint64
    keep = np.concatenate([bounder(b) for b in batches])
    assert np.array_equal(np.bincount(clients[keep], minlength=3), [40_000, 10, 30_000])
    assert bounder.state[0] == 0  # client 0: every row seen, every slot filled


@pytest.mark.parametrize("spread", ["row by row", "block"])
@pytest.mark.parametrize("wide", [False, True])
def test_a_client_with_more_rows_than_counted_is_an_error(spread: str, wide: bool) -> None:
    """The sizes come from a first pass over the client column; if the data changed and a
    client shows more rows in the second pass, the bound says so instead of keeping a
    wrong subset. Client 0 is counted at 6 rows and shows 7 (spread one a batch: decided
    row by row; or 20 rows counted and 21 in one batch: decided as a block)."""
    if spread == "row by row":
        clients, counted = np.array([0, 1, 0, 1, 0, 2, 0, 0, 0, 1, 0]), [6, 3, 1]
        batches = [clients[i : i + 2] for i in range(0, clients.size, 2)]
    else:
        clients, counted = np.array([1] + [0] * 21 + [2]), [20, 1, 1]
        batches = [clients]
    bounder = StreamedBound(np.array(counted), 2, 0)
    if wide:  # the same state, 64 bits wide (as for a client too large for 32)
        _widen(bounder)
    with pytest.raises(ValueError, match="more rows than counted"):
        for b in batches:
            bounder(b)
