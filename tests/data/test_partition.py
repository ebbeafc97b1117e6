"""Partitioners: sizes, determinism, score ranges, label skew and bad input."""

from __future__ import annotations

import numpy as np
import pytest

from fedeval import partition
from fedeval.data import Federation


@pytest.fixture
def fed() -> Federation:
    gen = np.random.default_rng(11)
    n = 1003
    return Federation.from_arrays(gen.random(n), gen.integers(0, 2, n))


def _multiset(f: Federation) -> list[tuple[float, int]]:
    return sorted(zip(f.scores.tolist(), f.labels.tolist(), strict=True))


@pytest.mark.parametrize("n_clients", [1, 7, 100, 1003])
def test_iid_sizes_differ_by_at_most_one(fed: Federation, n_clients: int) -> None:
    out = partition.iid(fed, n_clients=n_clients, rng=0)
    assert out.n_clients == n_clients
    sizes = out.client_sizes
    assert sizes.max() - sizes.min() <= 1
    assert sizes.sum() == fed.n_examples
    assert _multiset(out) == _multiset(fed)


def test_iid_is_deterministic_under_a_seed(fed: Federation) -> None:
    a = partition.iid(fed, n_clients=10, rng=5)
    b = partition.iid(fed, n_clients=10, rng=5)
    c = partition.iid(fed, n_clients=10, rng=6)
    np.testing.assert_array_equal(a.scores, b.scores)
    np.testing.assert_array_equal(a.client_index, b.client_index)
    np.testing.assert_array_equal(a.offsets, b.offsets)
    assert not np.array_equal(a.client_index, c.client_index)


def test_iid_accepts_arrays() -> None:
    out = partition.iid([0.1, 0.2, 0.3, 0.4], [0, 1, 0, 1], n_clients=2, rng=0)
    assert out.n_clients == 2
    with pytest.raises(TypeError, match="labels"):
        partition.iid([0.1, 0.2], n_clients=2)


def test_by_score_gives_contiguous_non_overlapping_ranges(fed: Federation) -> None:
    out = partition.by_score(fed, n_clients=9)
    assert out.n_clients == 9
    assert out.client_sizes.max() - out.client_sizes.min() <= 1
    lows = [v.scores.min() for v in out.clients()]
    highs = [v.scores.max() for v in out.clients()]
    for i in range(8):
        assert highs[i] <= lows[i + 1]
    # contiguity: every example between a client's min and max belongs to it
    for v in out.clients():
        inside = (fed.scores >= v.scores.min()) & (fed.scores <= v.scores.max())
        assert inside.sum() == v.n_examples
    assert _multiset(out) == _multiset(fed)
    # deterministic, no rng involved
    np.testing.assert_array_equal(out.scores, partition.by_score(fed, n_clients=9).scores)


def test_by_score_multiclass_uses_top_probability() -> None:
    gen = np.random.default_rng(2)
    p = gen.dirichlet(np.ones(3), size=60)
    y = gen.integers(0, 3, 60)
    out = partition.by_score(Federation.from_arrays(p, y), n_clients=4)
    tops = [v.scores.max(axis=1) for v in out.clients()]
    for i in range(3):
        assert tops[i].max() <= tops[i + 1].min()


def _mean_label_entropy(f: Federation) -> float:
    ent = []
    for v in f.clients():
        p = np.bincount(v.labels, minlength=f.n_classes) / v.n_examples
        p = p[p > 0]
        ent.append(float(-(p * np.log(p)).sum()))
    return float(np.mean(ent))


def test_dirichlet_min_size_and_skew() -> None:
    gen = np.random.default_rng(3)
    n, c = 3000, 5
    probs = gen.dirichlet(np.ones(c), size=n)
    labels = gen.integers(0, c, n)
    fed = Federation.from_arrays(probs, labels)
    entropies = {}
    for beta in (0.1, 1.0, 100.0):
        out = partition.dirichlet(fed, n_clients=20, beta=beta, min_size=10, rng=4)
        assert out.n_clients == 20
        assert out.client_sizes.min() >= 10
        assert out.n_examples == n
        entropies[beta] = _mean_label_entropy(out)
    # Smaller beta concentrates each class on fewer clients: lower label entropy.
    # (Large-beta clients are near-IID: entropy close to log(5) = 1.609.)
    assert entropies[0.1] < entropies[1.0] < entropies[100.0]
    assert entropies[100.0] > 0.95 * np.log(c)
    assert entropies[0.1] < 0.6 * np.log(c)
    a = partition.dirichlet(fed, n_clients=20, beta=0.5, rng=9)
    b = partition.dirichlet(fed, n_clients=20, beta=0.5, rng=9)
    np.testing.assert_array_equal(a.offsets, b.offsets)
    np.testing.assert_array_equal(a.labels, b.labels)


def test_dirichlet_gives_up_with_a_clear_error(fed: Federation) -> None:
    with pytest.raises(ValueError, match="tries"):
        partition.dirichlet(fed, n_clients=50, beta=0.01, min_size=20, max_tries=3, rng=0)


def test_natural_uses_the_given_column(fed: Federation) -> None:
    clients = np.arange(fed.n_examples) % 4
    out = partition.natural(fed, clients=clients)
    assert out.n_clients == 4
    for v in out.clients():
        expected = fed.scores[clients == v.client_id]
        np.testing.assert_array_equal(np.sort(v.scores), np.sort(expected))


@pytest.mark.parametrize("fn", ["iid", "by_score", "dirichlet"])
def test_more_clients_than_examples_rejected(fed: Federation, fn: str) -> None:
    kwargs = {"beta": 1.0} if fn == "dirichlet" else {}
    with pytest.raises(ValueError, match="exceeds"):
        getattr(partition, fn)(fed, n_clients=fed.n_examples + 1, **kwargs)
    with pytest.raises(ValueError, match="n_clients"):
        getattr(partition, fn)(fed, n_clients=0, **kwargs)
    with pytest.raises(TypeError, match="n_clients"):
        getattr(partition, fn)(fed, n_clients=2.5, **kwargs)


@pytest.mark.parametrize("beta", [0.0, -1.0, float("nan"), float("inf")])
def test_dirichlet_rejects_nonpositive_beta(fed: Federation, beta: float) -> None:
    with pytest.raises(ValueError, match="beta"):
        partition.dirichlet(fed, n_clients=3, beta=beta)


def test_dirichlet_rejects_impossible_min_size(fed: Federation) -> None:
    with pytest.raises(ValueError, match="min_size"):
        partition.dirichlet(fed, n_clients=100, beta=1.0, min_size=11)
    with pytest.raises(ValueError, match="min_size"):
        partition.dirichlet(fed, n_clients=3, beta=1.0, min_size=0)
