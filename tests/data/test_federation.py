"""Federation builders: round trips, views, grouping and bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import fedeval as fe
from fedeval.data import Federation
from helpers import client_sets, expected_client_sets, toy_arrays


# ------------------------------------------------------------------ builders
def test_from_arrays_without_clients_is_one_example_per_client() -> None:
    scores, labels, _ = toy_arrays()
    fed = Federation.from_arrays(scores, labels)
    assert fed.n_examples == fed.n_clients == 50
    assert fed.kind == "binary"
    assert fed.n_classes == 2
    np.testing.assert_array_equal(fed.scores, scores)
    np.testing.assert_array_equal(fed.labels, labels)
    np.testing.assert_array_equal(fed.client_sizes, np.ones(50))
    np.testing.assert_array_equal(fed.client_index, np.arange(50))


def test_grouping_preserves_each_clients_examples() -> None:
    scores, labels, clients = toy_arrays(200, 13)
    fed = Federation.from_arrays(scores, labels, clients)
    assert fed.n_examples == 200
    assert fed.n_clients == np.unique(clients).size
    assert client_sets(fed) == expected_client_sets(scores, labels, clients)
    # Storage keeps the user's order (no sort); the lazy grouping is a stable
    # client order whose blocks the offsets delimit.
    np.testing.assert_array_equal(fed.scores, scores)
    np.testing.assert_array_equal(fed.labels, labels)
    np.testing.assert_array_equal(np.diff(fed.offsets), fed.client_sizes)
    order = fed.order
    assert order is not None
    np.testing.assert_array_equal(order, np.argsort(fed.client_index, kind="stable"))
    np.testing.assert_array_equal(
        fed.client_index[order], np.repeat(np.arange(fed.n_clients), fed.client_sizes)
    )
    assert fed.scores.dtype == np.float64
    assert fed.labels.dtype == np.int8  # labels stay narrow


def test_from_arrays_does_not_copy_or_sort_float_scores_and_dense_ids() -> None:
    rng = np.random.default_rng(1)
    scores = rng.random(1000)
    labels = (rng.random(1000) < 0.5).astype(np.int8)
    clients = rng.integers(0, 50, 1000).astype(np.int64)
    clients[:50] = np.arange(50)  # every id 0..49 present: already dense
    fed = Federation.from_arrays(scores, labels, clients)
    assert np.shares_memory(fed.scores, scores)
    assert np.shares_memory(fed.labels, labels)
    assert np.shares_memory(fed.client_index, clients)


def test_group_order_is_the_stable_argsort_for_wide_ids() -> None:
    from fedeval.data.grouping import group_order

    rng = np.random.default_rng(2)
    for n_groups in (3, 1 << 16, (1 << 16) + 5, 1 << 20, 1 << 50):
        idx = rng.integers(0, n_groups, 5000)
        np.testing.assert_array_equal(group_order(idx, n_groups), np.argsort(idx, kind="stable"))
    # keys too wide for one 64-bit word (group << 13 | position): the radix form
    idx = rng.integers(0, 1 << 52, 5000)
    np.testing.assert_array_equal(group_order(idx, 1 << 52), np.argsort(idx, kind="stable"))
    assert group_order(np.zeros(0, dtype=np.int64), 1).shape == (0,)


def test_string_client_ids_are_kept() -> None:
    fed = Federation.from_arrays([0.1, 0.2, 0.3], [0, 1, 1], ["b", "a", "b"])
    assert fed.n_clients == 2
    assert client_sets(fed) == {"a": [(0.2, 1)], "b": [(0.1, 0), (0.3, 1)]}


def test_client_views_are_views_not_copies_when_grouped() -> None:
    scores, labels, clients = toy_arrays(100, 5)
    order = np.argsort(clients, kind="stable")
    fed = Federation.from_arrays(scores[order], labels[order], clients[order])
    assert fed.order is None
    for i, view in enumerate(fed.clients()):
        assert np.shares_memory(view.scores, fed.scores)
        assert np.shares_memory(view.labels, fed.labels)
        assert view.n_examples == fed.client_sizes[i]
    with pytest.raises(IndexError):
        fed.client(fed.n_clients)


def test_subset_keeps_the_chosen_clients() -> None:
    scores, labels, clients = toy_arrays(100, 6)
    fed = Federation.from_arrays(scores, labels, clients)
    sub = fed.subset([4, 1])
    assert sub.n_clients == 2
    full = client_sets(fed)
    assert client_sets(sub) == {
        fed.client_ids[4]: full[fed.client_ids[4]],
        fed.client_ids[1]: full[fed.client_ids[1]],
    }
    with pytest.raises(ValueError):
        fed.subset([])
    with pytest.raises(ValueError):
        fed.subset([fed.n_clients])


def test_from_clients_round_trip() -> None:
    per_client = [([0.1, 0.9], [0, 1]), ([0.5], [1]), ([0.3, 0.2, 0.7], [0, 0, 1])]
    fed = Federation.from_clients(per_client)
    assert fed.n_clients == 3
    for i, (s, y) in enumerate(per_client):
        view = fed.client(i)
        np.testing.assert_array_equal(view.scores, s)
        np.testing.assert_array_equal(view.labels, y)


def test_from_frame_round_trip() -> None:
    scores, labels, clients = toy_arrays(60, 4)
    df = pd.DataFrame({"s": scores, "y": labels, "who": clients, "extra": "x"})
    fed = Federation.from_frame(df, score="s", label="y", client="who")
    assert client_sets(fed) == expected_client_sets(scores, labels, clients)
    fed1 = Federation.from_frame(df, score="s", label="y")
    assert fed1.n_clients == 60


def test_other_score_range_accepted() -> None:
    fed = Federation.from_arrays([-3.0, 0.0, 5.0], [0, 1, 1], score_range=(-3.0, 5.0))
    assert fed.score_range == (-3.0, 5.0)
    with pytest.raises(ValueError, match="score_range"):
        Federation.from_arrays([-3.1, 0.0], [0, 1], score_range=(-3.0, 5.0))


def test_multiclass_probabilities_and_logits() -> None:
    gen = np.random.default_rng(1)
    logits = gen.normal(size=(30, 4))
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    labels = gen.integers(0, 4, 30)
    clients = gen.integers(0, 5, 30)
    fed = Federation.from_arrays(probs, labels, clients)
    assert fed.kind == "probabilities"
    assert fed.n_classes == 4
    assert fed.client(0).scores.shape[1] == 4
    fl = Federation.from_arrays(logits, labels, clients, kind="logits")
    assert fl.kind == "logits"
    # rows stay with their labels through the (lazy) grouping
    order = np.argsort(clients, kind="stable")
    grouped = np.concatenate([fl.client(i).scores for i in range(fl.n_clients)])
    np.testing.assert_array_equal(grouped, logits[order])
    grouped_y = np.concatenate([fl.client(i).labels for i in range(fl.n_clients)])
    np.testing.assert_array_equal(grouped_y, labels[order])
    df = pd.DataFrame(probs, columns=["p0", "p1", "p2", "p3"]).assign(y=labels)
    fd = Federation.from_frame(df, score=["p0", "p1", "p2", "p3"], label="y")
    np.testing.assert_allclose(fd.scores, probs)


def test_multiclass_bad_input() -> None:
    probs = np.array([[0.5, 0.5], [0.2, 0.8]])
    with pytest.raises(ValueError, match="sum to 1"):
        Federation.from_arrays(np.array([[0.5, 0.6], [0.2, 0.8]]), [0, 1])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        Federation.from_arrays(np.array([[1.5, -0.5], [0.2, 0.8]]), [0, 1])
    with pytest.raises(ValueError, match="NaN or inf"):
        Federation.from_arrays(np.array([[np.nan, 1.0], [0.2, 0.8]]), [0, 1], kind="logits")
    with pytest.raises(ValueError, match=r"0\.\.1"):
        Federation.from_arrays(probs, [0, 2])
    with pytest.raises(ValueError, match="c >= 2"):
        Federation.from_arrays(np.ones((2, 1)), [0, 0])


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nonfinite_scores_rejected(bad: float) -> None:
    with pytest.raises(ValueError, match="NaN or inf"):
        Federation.from_arrays([0.1, bad, 0.3], [0, 1, 0])


@pytest.mark.parametrize("bad", [-0.01, 1.01])
def test_scores_outside_domain_rejected(bad: float) -> None:
    with pytest.raises(ValueError, match="score_range"):
        Federation.from_arrays([0.1, bad], [0, 1])


@pytest.mark.parametrize("labels", [[0, 2], [0, -1], [0.0, 0.5]])
def test_non_binary_labels_rejected(labels: list[float]) -> None:
    with pytest.raises(ValueError, match="0 or 1"):
        Federation.from_arrays([0.1, 0.2], labels)


def test_non_numeric_input_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        Federation.from_arrays(["a", "b"], [0, 1])
    with pytest.raises(TypeError):
        Federation.from_arrays([0.1, 0.2], ["yes", "no"])
    with pytest.raises(TypeError):
        Federation.from_frame({"score": [0.1]})  # type: ignore[arg-type]


def test_mismatched_lengths_rejected() -> None:
    with pytest.raises(ValueError, match="disagree in length"):
        Federation.from_arrays([0.1, 0.2, 0.3], [0, 1])
    with pytest.raises(ValueError, match="one entry per example"):
        Federation.from_arrays([0.1, 0.2], [0, 1], [0, 1, 2])


def test_missing_client_ids_rejected() -> None:
    with pytest.raises(ValueError, match="NaN"):
        Federation.from_arrays([0.1, 0.2], [0, 1], [0.0, np.nan])
    with pytest.raises(ValueError, match="missing"):
        Federation.from_arrays([0.1, 0.2], [0, 1], np.array(["a", None], dtype=object))


def test_empty_input_rejected() -> None:
    with pytest.raises(ValueError, match="empty"):
        Federation.from_arrays([], [])
    with pytest.raises(ValueError, match="no rows"):
        Federation.from_frame(pd.DataFrame({"score": [], "label": []}))
    with pytest.raises(ValueError, match="empty"):
        Federation.from_clients([])


def test_empty_client_in_from_clients_rejected() -> None:
    with pytest.raises(ValueError, match="client 1 holds no examples"):
        Federation.from_clients([([0.1], [0]), ([], []), ([0.2], [1])])


def test_missing_column_lists_available_columns() -> None:
    df = pd.DataFrame({"score": [0.1], "y": [1]})
    with pytest.raises(ValueError, match=r"\['label'\].*available columns: \['score', 'y'\]"):
        Federation.from_frame(df)


def test_integer_ids_with_gaps_map_lazily_to_the_sorted_unique_index() -> None:
    rng = np.random.default_rng(3)
    clients = rng.choice(np.array([5, 9, 100, 7, 3000]), size=400)
    scores, labels = rng.random(400), rng.integers(0, 2, 400)
    fed = Federation.from_arrays(scores, labels, clients)
    ids, inverse = np.unique(clients, return_inverse=True)
    np.testing.assert_array_equal(fed.client_ids, ids)
    np.testing.assert_array_equal(fed.client_sizes, np.bincount(inverse))
    np.testing.assert_array_equal(fed.client_index, inverse)
    assert client_sets(fed) == expected_client_sets(scores, labels, clients)


def test_negative_and_unsigned_integer_ids() -> None:
    scores, labels = np.array([0.1, 0.2, 0.3, 0.4]), np.array([0, 1, 0, 1])
    fed = Federation.from_arrays(scores, labels, np.array([-3, 7, -3, 0]))
    np.testing.assert_array_equal(fed.client_ids, [-3, 0, 7])
    np.testing.assert_array_equal(fed.client_index, [0, 2, 0, 1])
    fed_u = Federation.from_arrays(scores, labels, np.array([2, 5, 2, 0], dtype=np.uint64))
    np.testing.assert_array_equal(fed_u.client_ids, [0, 2, 5])
    np.testing.assert_array_equal(fed_u.client_index, [1, 2, 1, 0])


@pytest.mark.parametrize("gaps", [False, True])
def test_client_sizes_are_counted_only_when_read(gaps: bool) -> None:
    """The fast path needs which clients exist, not their sizes (issue 15 (a)).

    A DistDP evaluation must not count the clients' sizes; when they are read,
    they equal the sorted-unique count.
    """
    rng = np.random.default_rng(11)
    n = 5_000
    clients = rng.integers(0, 400, n) * (7 if gaps else 1)
    scores, labels = rng.random(n), rng.integers(0, 2, n)
    fed = Federation.from_arrays(scores, labels, clients)
    ev = fe.evaluate(fed, fe.DistributedDP(1.0), rng=0)
    ev.roc_curve()
    assert fed._offsets is None  # not counted by the release
    ids, inverse = np.unique(clients, return_inverse=True)
    assert fed.n_clients == ids.size
    np.testing.assert_array_equal(fed.client_sizes, np.bincount(inverse))
    np.testing.assert_array_equal(fed.offsets, np.r_[0, np.cumsum(np.bincount(inverse))])
    assert client_sets(fed) == expected_client_sets(scores, labels, clients)


def test_client_ids_marked_in_two_threads_are_those_of_one(monkeypatch) -> None:
    """Above 2 x 2^21 ids the presence table is marked in two threads: same ids, same index."""
    from fedeval.data import federation

    gen = np.random.default_rng(5)
    n = 2 * federation._PRESENCE_MIN_PER_THREAD + 17
    ids = gen.integers(0, n // 3, n) * 2  # gaps: the table path
    ids[-1] = 2 * (n // 3) + 1  # an id only the second thread sees
    scores, labels = gen.random(n), gen.integers(0, 2, n)
    monkeypatch.setattr(federation, "_PRESENCE_THREADS", 2)
    two = Federation.from_arrays(scores, labels, ids)
    monkeypatch.setattr(federation, "_PRESENCE_THREADS", 1)
    one = Federation.from_arrays(scores, labels, ids)
    np.testing.assert_array_equal(two.client_ids, one.client_ids)
    np.testing.assert_array_equal(two.client_index, one.client_index)
    assert two.n_clients == one.n_clients == np.unique(ids).size


@pytest.mark.parametrize("dtype", ["i1", "i2", "i8", "u1", "u8"])
def test_small_and_negative_ids_of_every_integer_width_give_the_distinct_ids(dtype: str) -> None:
    """The one-pass id range check reads negative ids as huge unsigned ones: an int8 −1
    must not be taken for id 255 (a small table) but go to the general path."""
    info = np.iinfo(dtype)
    for ids in ([0, 3, 3, 7], [info.max, 0, 1], [-1, 0, 5, -1], [info.min, 2, 2]):
        if min(ids) < info.min:
            continue
        arr = np.array(ids, dtype=dtype)
        fed = Federation.from_arrays(np.linspace(0, 1, arr.size), np.arange(arr.size) % 2, arr)
        np.testing.assert_array_equal(fed.client_ids, np.unique(arr))
        np.testing.assert_array_equal(fed.client_ids[fed.client_index], arr)
