"""A federated sum through m non-colluding servers (aggregation/secret_sharing.py).

The multi-server ECDF built on it is tested in ``tests/ecdf/test_ecdf_secret_sharing.py``;
here, the protocol itself (Barczewski et al. 2025, §4.2): the servers' words add
up to the clients' encodings, any answer re-uses the one noise (so all queries
are one release, charged once before the upload), and the noise is calibrated so
that m − 1 servers' shares already reach the target.
"""

from __future__ import annotations

import numpy as np
import pytest

import fedeval as fe
from fedeval.aggregation.secret_sharing import shared_sum
from fedeval.privacy.ledger import BudgetLedger
from fedeval.privacy.sampling import reconstruct_shares
from fedeval.sketches.prefix_tree import PrefixTreeSketch

POINTS = np.linspace(0.0, 1.0, 9)


@pytest.fixture(scope="module")
def federation() -> fe.Federation:
    rng = np.random.default_rng(0)
    scores = rng.random(400)
    return fe.Federation.from_arrays(
        scores, np.zeros(400, dtype=np.int64), rng.integers(0, 40, 400)
    )


def encoded_sum(fed: fe.Federation, sketch: PrefixTreeSketch) -> np.ndarray:
    return sketch.encode(fed.scores, fed.labels, np.zeros(fed.n_examples, dtype=np.int64))


def test_the_servers_words_add_up_to_the_clients_encodings(federation: fe.Federation) -> None:
    sketch = PrefixTreeSketch(POINTS, total=400.0)
    shared = shared_sum(federation, sketch, fe.DistributedDP(1.0), n_servers=3, rng=1)
    words = np.stack([s.accumulated for s in shared.servers])
    np.testing.assert_array_equal(reconstruct_shares(words), encoded_sum(federation, sketch))
    # no single server holds the sum
    for s in shared.servers:
        assert not np.array_equal(s.accumulated.view(np.int64), encoded_sum(federation, sketch))
    assert shared.n_servers == 3 and shared.n_clients == federation.n_clients


def test_every_query_reads_the_same_noise_and_charges_nothing(federation: fe.Federation) -> None:
    sketch = PrefixTreeSketch(POINTS, total=400.0)
    ledger = BudgetLedger(2.0)
    shared = shared_sum(
        federation, sketch, fe.DistributedDP(1.0), n_servers=3, rng=2, ledger=ledger
    )
    spent = ledger.spent_epsilon
    assert spent == pytest.approx(1.0)
    everywhere = np.arange(POINTS.size)
    full = shared.query(everywhere, sketch).values
    np.testing.assert_array_equal(shared.query(everywhere, sketch).values, full)
    some = np.array([2, 5])
    np.testing.assert_array_equal(shared.query(some, sketch.at(some)).values, full[some])
    assert ledger.spent_epsilon == spent
    assert not np.array_equal(full, encoded_sum(federation, sketch))  # there is noise


def test_m_minus_1_shares_reach_the_target_noise(federation: fe.Federation) -> None:
    sketch = PrefixTreeSketch(POINTS, total=400.0)
    shared = shared_sum(federation, sketch, fe.DistributedDP(1.0), n_servers=4, rng=3)
    noise = shared.mechanism.noise
    assert noise is not None
    # A curious server subtracts its own share: the other three are the target noise.
    target = fe.privacy.DiscreteLaplace(1.0, sketch.nodes_touched("add_remove")).variance
    assert noise.variance(3) == pytest.approx(target)
    assert noise.variance(4) > target
