"""Hierarchical histograms: exact counts under SA, queries and bad input.

The budget (ledger charges of a hierarchy release) is tested in
tests/aggregation/test_release_hierarchy_budget.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedeval.data import Federation
from fedeval.privacy.models import DistributedDP, LabelDP, LocalDP, SecureAggregation
from fedeval.sketches.hierarchy import HierarchySpec
from helpers import beta_scores, release_hierarchy

SA = SecureAggregation()


def _edges(lo: float, hi: float, n: int) -> np.ndarray:
    return np.linspace(lo, hi, n + 1)


# ------------------------------------------------------------ exact counts (SA)
@pytest.mark.parametrize(("height", "branching"), [(1, 2), (5, 2), (3, 3), (2, 10), (1, 16)])
def test_sa_leaves_equal_numpy_histogram(height: int, branching: int) -> None:
    scores, labels = beta_scores()
    scores[:3] = [0.0, 1.0, 1.0]  # the last bin is closed, as in np.histogram
    fed = Federation.from_arrays(scores, labels, np.arange(500) % 37)
    hist = release_hierarchy(fed, SA, height=height, branching=branching, rng=0)
    n_leaves = branching**height
    edges = _edges(0.0, 1.0, n_leaves)
    assert hist.leaves.shape == (2, n_leaves)
    for c in (0, 1):
        expected, _ = np.histogram(scores[labels == c], bins=edges)
        np.testing.assert_array_equal(hist.leaves[c], expected)
    assert all(np.all(v == 0) for v in hist.node_variance)
    assert hist.is_consistent
    assert math.isinf(hist.guarantee.epsilon)


def test_sa_other_score_range() -> None:
    gen = np.random.default_rng(4)
    scores = gen.uniform(-2.0, 6.0, 300)
    labels = gen.integers(0, 2, 300)
    fed = Federation.from_arrays(scores, labels, score_range=(-2.0, 6.0))
    hist = release_hierarchy(fed, SA, height=4, rng=0)
    for c in (0, 1):
        expected, _ = np.histogram(scores[labels == c], bins=_edges(-2.0, 6.0, 16))
        np.testing.assert_array_equal(hist.leaves[c], expected)


@pytest.mark.parametrize("privacy", [SA, DistributedDP(1.0), LocalDP(2.0)])
def test_levels_sum_consistently(privacy: object) -> None:
    scores, labels = beta_scores(400, 1)
    fed = Federation.from_arrays(scores, labels, np.arange(400) % 40)
    hist = release_hierarchy(fed, privacy, height=4, branching=3, rng=2)  # type: ignore[arg-type]
    tree = hist if isinstance(privacy, SecureAggregation) else hist.consistent()
    for k in range(tree.height - 1):
        children = tree.levels[k + 1].reshape(2, -1, 3).sum(axis=2)
        np.testing.assert_allclose(tree.levels[k], children, rtol=0, atol=1e-7)
    if isinstance(privacy, SecureAggregation):
        np.testing.assert_array_equal(hist.totals(), np.bincount(labels, minlength=2))
        assert hist.consistent() is hist


# ------------------------------------------------------- properties (hypothesis)
examples = st.lists(
    st.tuples(
        st.one_of(
            st.floats(0.0, 1.0, allow_nan=False),
            st.sampled_from([0.0, 0.25, 0.5, 0.625, 1.0]),  # dyadic leaf edges
        ),
        st.integers(0, 1),
        st.integers(0, 9),
    ),
    min_size=1,
    max_size=80,
)


def _fed(rows: list[tuple[float, int, int]], with_clients: bool) -> Federation:
    s = np.array([r[0] for r in rows])
    y = np.array([r[1] for r in rows])
    c = np.array([r[2] for r in rows]) if with_clients else None
    return Federation.from_arrays(s, y, c)


@settings(max_examples=60, deadline=None)
@given(rows=examples, height=st.integers(1, 5))
def test_sa_invariant_to_client_split(rows: list[tuple[float, int, int]], height: int) -> None:
    one_per_client = release_hierarchy(_fed(rows, False), SA, height=height, rng=0)
    split = release_hierarchy(_fed(rows, True), SA, height=height, rng=1)
    faithful = release_hierarchy(_fed(rows, True), SA, height=height, path="faithful", rng=2)
    for a, b, c in zip(one_per_client.levels, split.levels, faithful.levels, strict=True):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)
    assert one_per_client.totals().sum() == len(rows)


@settings(max_examples=60, deadline=None)
@given(left=examples, right=examples, height=st.integers(1, 4), branching=st.integers(2, 4))
def test_sa_releases_add_like_a_monoid(
    left: list[tuple[float, int, int]],
    right: list[tuple[float, int, int]],
    height: int,
    branching: int,
) -> None:
    union = left + [(s, y, c + 100) for s, y, c in right]
    parts = [
        release_hierarchy(_fed(rows, True), SA, height=height, branching=branching, rng=0)
        for rows in (left, right, union)
    ]
    for a, b, u in zip(*(p.levels for p in parts), strict=True):
        np.testing.assert_array_equal(a + b, u)


@settings(max_examples=60, deadline=None)
@given(
    rows=examples,
    height=st.integers(1, 6),
    qs=st.lists(st.floats(0.0, 1.0, exclude_min=True), min_size=1, max_size=5),
)
def test_sa_quantile_error_at_most_one_leaf(
    rows: list[tuple[float, int, int]], height: int, qs: list[float]
) -> None:
    """quantiles(q) is "the score below which a fraction q lies": the smallest data
    point x with F(x) >= q, i.e. np.quantile's "inverted_cdf" (Hyndman-Fan type 1),
    lies in the same leaf as the returned point, so they differ by <= one leaf."""
    fed = _fed(rows, True)
    hist = release_hierarchy(fed, SA, height=height, rng=0)
    width = hist.spec.leaf_width
    q = np.array(qs)
    for cls in (None, 0, 1):
        s = fed.scores if cls is None else fed.scores[fed.labels == cls]
        got = hist.quantiles(q, cls=cls)
        if s.size == 0:
            assert np.isnan(got).all()
            continue
        expected = np.quantile(s, q, method="inverted_cdf")
        np.testing.assert_array_less(np.abs(got - expected), width + 1e-12)
        assert np.all((got >= 0.0) & (got <= 1.0))


def test_quantile_at_zero_is_at_or_below_the_minimum() -> None:
    scores, labels = beta_scores(200, 5)
    hist = release_hierarchy(Federation.from_arrays(scores, labels), SA, height=6, rng=0)
    assert hist.quantiles(0.0) <= scores.min()
    assert hist.quantiles(1.0) >= scores.max() - hist.spec.leaf_width


def test_sa_prefix_counts_exact_at_leaf_edges() -> None:
    height = 6
    n_leaves = 2**height
    edges = _edges(0.0, 1.0, n_leaves)
    scores, labels = beta_scores(1000, 2)
    scores[:200] = edges[np.arange(200) % n_leaves]  # many scores exactly on edges
    fed = Federation.from_arrays(scores, labels, np.arange(1000) % 17)
    hist = release_hierarchy(fed, SA, height=height, rng=0)
    inner = edges[:-1]  # the top edge is covered by a separate test
    for cls in (None, 0, 1):
        s = scores if cls is None else scores[labels == cls]
        got, var = hist.count_below(inner, cls=cls)
        np.testing.assert_array_equal(got, (s[None, :] < inner[:, None]).sum(axis=1))
        np.testing.assert_array_equal(var, 0.0)
    lo, hi = inner[[3, 10, 0]], inner[[40, 10, 63]]
    got, var = hist.range_counts(lo, hi, cls=1)
    s1 = scores[labels == 1]
    expected = [((s1 >= a) & (s1 < b)).sum() for a, b in zip(lo, hi, strict=True)]
    np.testing.assert_array_equal(got, expected)


def test_sa_prefix_inside_a_leaf_is_bounded_by_the_leaf() -> None:
    scores, labels = beta_scores(800, 3)
    hist = release_hierarchy(Federation.from_arrays(scores, labels), SA, height=4, rng=0)
    t = np.random.default_rng(0).random(50)
    got, _ = hist.count_below(t)
    lower = (scores[None, :] < np.floor(t * 16)[:, None] / 16).sum(axis=1)
    upper = (scores[None, :] < np.ceil(t * 16)[:, None] / 16).sum(axis=1)
    assert np.all((lower <= got + 1e-9) & (got <= upper + 1e-9))


def test_prefix_count_at_the_top_edge_is_the_total() -> None:
    scores, labels = beta_scores(300, 4)
    scores = np.minimum(scores, 0.999)  # no score on the top edge: every reading agrees
    hist = release_hierarchy(Federation.from_arrays(scores, labels), SA, height=3, rng=0)
    got, _ = hist.count_below([1.0])
    assert got[0] == 300
    r, _ = hist.range_counts([0.0], [1.0], cls=1)
    assert r[0] == labels.sum()


@pytest.mark.parametrize(
    ("branching", "height", "score_range"), [(3, 2, (0.0, 1.0)), (2, 5, (0.1, 0.7))]
)
def test_sa_prefix_exact_at_non_dyadic_edges(
    branching: int, height: int, score_range: tuple[float, float]
) -> None:
    edges = _edges(*score_range, branching**height)
    scores = edges[:-1].copy()  # one score on every leaf's lower edge
    fed = Federation.from_arrays(scores, np.ones(scores.size, int), score_range=score_range)
    hist = release_hierarchy(fed, SA, height=height, branching=branching, rng=0)
    np.testing.assert_array_equal(hist.leaves[1], np.ones(scores.size))
    got, _ = hist.count_below(edges[:-1], cls=1)
    np.testing.assert_array_equal(got, np.arange(scores.size))


@pytest.mark.parametrize("privacy", [SA, DistributedDP(0.5), LocalDP(1.0)])
def test_equi_depth_edges(privacy: object) -> None:
    scores, labels = beta_scores(2000, 6)
    fed = Federation.from_arrays(scores, labels, np.arange(2000) % 50)
    hist = release_hierarchy(fed, privacy, height=6, rng=3)  # type: ignore[arg-type]
    for n_buckets in (1, 2, 7, 20):
        for cls in (None, 0, 1):
            e = hist.equi_depth_edges(n_buckets, cls=cls)
            assert e.shape == (n_buckets + 1,)
            assert e[0] == 0.0
            assert e[-1] == 1.0
            assert np.all(np.diff(e) >= 0)
    if isinstance(privacy, SecureAggregation):
        e = hist.equi_depth_edges(4)
        counts, _ = np.histogram(scores, bins=e)
        # each bucket is within one leaf's count of n/4
        leaf_max = hist.leaves.sum(axis=0).max()
        assert np.all(np.abs(counts - 500) <= leaf_max)


# ---------------------------------------------------------------- bad input
@pytest.fixture
def fed() -> Federation:
    scores, labels = beta_scores(100, 7)
    return Federation.from_arrays(scores, labels)


def test_bad_shape_rejected(fed: Federation) -> None:
    with pytest.raises(ValueError, match="height"):
        release_hierarchy(fed, SA, height=0)
    with pytest.raises(ValueError, match="branching"):
        release_hierarchy(fed, SA, height=3, branching=1)
    with pytest.raises(TypeError, match="height"):
        release_hierarchy(fed, SA, height=2.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="too many"):
        release_hierarchy(fed, SA, height=30)
    with pytest.raises(ValueError, match="level_budget"):
        release_hierarchy(fed, DistributedDP(1.0), height=3, level_budget="even")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="path"):
        release_hierarchy(fed, SA, height=3, path="slow")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="LabelDP"):
        release_hierarchy(fed, LabelDP(1.0), height=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        HierarchySpec(3, 2, (1.0, 0.0))


def test_multiclass_federation_rejected() -> None:
    probs = np.array([[0.2, 0.3, 0.5], [0.6, 0.2, 0.2]])
    fed = Federation.from_arrays(probs, [2, 0])
    with pytest.raises(ValueError, match="binary"):
        release_hierarchy(fed, SA, height=3)


def test_query_arguments_validated(fed: Federation) -> None:
    hist = release_hierarchy(fed, DistributedDP(1.0), height=3, rng=0)
    for bad in ([-0.1], [1.1], [np.nan], [0.5, np.inf]):
        with pytest.raises(ValueError, match="score domain"):
            hist.count_below(bad)
        with pytest.raises(ValueError):
            hist.range_counts([0.0] * len(bad), bad)
    with pytest.raises(ValueError, match="low <= high"):
        hist.range_counts([0.6], [0.5])
    for bad_q in ([-0.01], [1.01], [np.nan]):
        with pytest.raises(ValueError, match="q"):
            hist.quantiles(bad_q)
    with pytest.raises(ValueError, match="cls"):
        hist.count_below([0.5], cls=2)
    with pytest.raises(ValueError, match="n_buckets"):
        hist.equi_depth_edges(0)


def test_linear_variance_of_a_range_indicator_is_the_range_count_variance(fed: Federation) -> None:
    # A range of whole leaves is the linear functional with weight 1 on its leaves: on a
    # consistent tree every node set gives the same estimate (range_counts' variance); on a
    # raw tree the functional reads the leaves, whose noises are independent.
    raw = release_hierarchy(fed, DistributedDP(1.0), height=4, rng=0)
    w = np.zeros(16)
    w[3:11] = 1.0
    edges = np.arange(17) / 16
    for cls in (0, 1):
        _, var = raw.consistent().range_counts([3 / 16], [11 / 16], cls=cls)
        assert raw.consistent().linear_variance(w, cls=cls) == pytest.approx(float(var[0]))
        _, leaf_var = raw.range_counts(edges[3:11], edges[4:12], cls=cls)
        assert raw.linear_variance(w, cls=cls) == pytest.approx(float(leaf_var.sum()))
    # Weights scale the variance quadratically.
    assert raw.linear_variance(3 * w, cls=1) == pytest.approx(9 * raw.linear_variance(w, cls=1))


@pytest.mark.parametrize(("height", "branching"), [(1, 2), (4, 2), (6, 2), (3, 3), (2, 10)])
@pytest.mark.parametrize("privacy", [SA, DistributedDP(1.0), LocalDP(5.0)])
def test_one_quantile_equals_the_vectorised_descent_bit_for_bit(
    privacy: object, height: int, branching: int
) -> None:
    """One level takes a scalar descent (issue 28, tiny releases): exactly the array path's value."""
    rng = np.random.default_rng(height * 100 + branching)
    for n in (3, 64, 400):
        scores = rng.random(n)
        labels = (rng.random(n) < scores).astype(int)
        fed = Federation.from_arrays(scores, labels)
        raw = release_hierarchy(fed, privacy, height=height, branching=branching, rng=n)
        for tree in (raw, raw.consistent()):
            for cls in (None, 0, 1):
                levels = [0.0, 1e-9, 0.25, 0.5, 0.75, 1.0, *rng.random(4)]
                many = tree.quantiles(levels, cls=cls)
                one = [tree.quantiles(q, cls=cls) for q in levels]
                assert all(o.shape == () for o in one)
                np.testing.assert_array_equal(np.array(one), many)


@pytest.mark.parametrize(("height", "branching"), [(1, 2), (4, 2), (7, 2), (3, 3), (2, 10)])
@pytest.mark.parametrize("privacy", [SA, DistributedDP(1.0), LocalDP(5.0)])
def test_consistent_total_variance_equals_the_generic_query_bit_for_bit(
    privacy: object, height: int, branching: int
) -> None:
    """Issue 28: the total's node weights are built directly; the variance must not move."""
    rng = np.random.default_rng(height * 10 + branching)
    for n in (3, 64, 400):
        scores = rng.random(n)
        labels = (rng.random(n) < scores).astype(int)
        fed = Federation.from_arrays(scores, labels, np.arange(n) % max(n // 3, 1))
        tree = release_hierarchy(fed, privacy, height=height, branching=branching, rng=n)
        tree = tree.consistent()
        ones = np.ones((1, tree.spec.n_leaves))
        want = [tree._consistent_query_variance(ones, c)[0] for c in (0, 1)]
        np.testing.assert_array_equal(tree.total_variance(), want)


@pytest.mark.parametrize("privacy", [DistributedDP(1.0), LocalDP(5.0)], ids=["distdp", "ldp"])
def test_a_replicate_shares_only_the_caches_of_the_variances(privacy) -> None:
    """with_levels keeps the geometry and variances and shares the variance-only caches;
    what the caches give on the replicate is what a fresh tree with those counts computes,
    and the count-dependent ones (boundary counts, effective examples) are not carried."""
    from dataclasses import replace

    from fedeval.metrics.dense import _split_variances, boundary_counts, effective_examples

    s, y = beta_scores(3_000, seed=4)
    tree = release_hierarchy(
        Federation.from_arrays(s, y), privacy, height=6, rng=np.random.default_rng(0)
    ).consistent()
    for c in (0, 1):
        _split_variances(tree, c, 6)
    boundary_counts(tree)
    effective_examples(tree)
    other = [lv + np.random.default_rng(1).normal(0, 3, lv.shape) for lv in tree.levels]
    rep, fresh = tree.with_levels(other), replace(tree, levels=tuple(other))
    assert set(rep._derived) == {k for k in tree._derived if k.startswith(("split_", "same_"))}
    for c in (0, 1):
        assert _split_variances(rep, c, 6) == _split_variances(fresh, c, 6)
    np.testing.assert_array_equal(boundary_counts(rep).above, boundary_counts(fresh).above)
