"""Poisson-sampled rounds under one charge (aggregation/rounds.py)."""

from __future__ import annotations

import numpy as np
import pytest

import fedeval as fe
from fedeval.aggregation.rounds import Rounds
from fedeval.sketches.class_histograms import OneVsRestSketch


def _fed() -> fe.Federation:
    """A client of 400 class-0 examples beside 30 clients of 2 examples each."""
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(3), 460)
    y = np.r_[np.zeros(400, int), rng.integers(0, 3, 60)]
    clients = np.r_[np.zeros(400, int), 1 + np.arange(60) % 30]
    return fe.Federation.from_arrays(p, y, clients=clients)


def test_client_level_rounds_keep_at_most_the_contribution_bound() -> None:
    """The charged sensitivity is B·c: every client must keep at most B examples.

    Without the bound the big client put 400 examples in the release (the test
    fails on the code before the fix); with ε = 1000 the noise is negligible, so
    the released class-0 total is the bounded data's: 5 from the big client plus
    the small clients' own.
    """
    fed = _fed()
    model = fe.DistributedDP(1000.0, unit="client", contribution_bound=5)
    sketch = OneVsRestSketch(3, 4)
    schedule = Rounds(fed, sketch, model, rounds=1, sampling_rate=1.0, rng=1)
    positive, negative = schedule.release(sketch).decode()
    small = int(np.count_nonzero(fed.labels[fed.client_index != fed.client_index[0]] == 0))
    assert positive[0].sum() == pytest.approx(5 + small, abs=0.5)
    assert (positive.sum(axis=1) + negative.sum(axis=1)) == pytest.approx(5 + 60, abs=0.5)


def test_rounds_draw_share_noise_for_the_clients_that_report() -> None:
    """Distributed DP in one round of every client: the noise is the shares' total."""
    fed = _fed()
    sketch = OneVsRestSketch(3, 4)
    rel = Rounds(fed, sketch, fe.DistributedDP(1.0), rounds=1, sampling_rate=1.0, rng=2).release(
        sketch
    )
    alpha = np.exp(-1.0 / 3)  # L1 = c = 3 at example level
    expected = 2 * alpha / (1 - alpha) ** 2
    np.testing.assert_allclose(rel.variance, expected, rtol=1e-9)
