"""fe.compare / ctx.compare (issue 25, item 1): one release, two evaluations, paired differences.

Worked values come from the budget split of the sketch's declaration
(levels ε/(2h + w), pair grid w·ε/(2h + w)); the exact references are in
``tests/reference/test_compare_slices_vs_sklearn.py`` and the noise's
calibration in ``tests/statistical/test_compare_slices_standard_errors.py``.
"""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

import fedeval as fe
from fedeval.comparison import default_pair_bins, default_pair_weight
from fedeval.metrics.dense import dense_leaf_weights, dense_se_parts
from fedeval.metrics.paired import split_covariance
from fedeval.sketches.hierarchy import HierarchySketch, HierarchySpec
from fedeval.sketches.paired import PairedHierarchySketch


@pytest.fixture(scope="module")
def pair() -> tuple[fe.Federation, fe.Federation]:
    rng = np.random.default_rng(0)
    n = 6_000
    y = (rng.random(n) < 0.4).astype(np.int64)
    z = rng.normal(1.2 * y, 1.0)
    a = 1 / (1 + np.exp(-z))
    b = 1 / (1 + np.exp(-(z + rng.normal(0, 0.5, n))))
    clients = np.repeat(np.arange(600), 10)
    return fe.Federation.from_arrays(a, y, clients), fe.Federation.from_arrays(b, y, clients)


# ------------------------------------------------------------------ the sketch
def test_the_paired_sketch_encodes_both_hierarchies_and_the_pair_grid() -> None:
    rng = np.random.default_rng(1)
    s = rng.random((500, 2))
    y = rng.integers(0, 2, 500)
    spec = HierarchySpec(5, 2, (0.0, 1.0), 2)
    sk = PairedHierarchySketch(spec, 8, 3)
    vec = sk.encode(s, y, np.zeros(500, dtype=np.int64))
    one = HierarchySketch(spec)
    n = one.length
    assert np.array_equal(vec[:n], one.encode(s[:, 0], y, np.zeros(500, dtype=np.int64)))
    assert np.array_equal(vec[n : 2 * n], one.encode(s[:, 1], y, np.zeros(500, dtype=np.int64)))
    grid = np.zeros((2, 8, 8), dtype=np.int64)
    np.add.at(grid, (y, (s[:, 0] * 8).astype(int), (s[:, 1] * 8).astype(int)), 1)
    assert np.array_equal(vec[2 * n :], 3 * grid.ravel())
    # Linear in the examples: the sum over any split is the whole's encoding.
    half = sk.encode(s[:200], y[:200], np.zeros(200, dtype=np.int64))
    rest = sk.encode(s[200:], y[200:], np.zeros(300, dtype=np.int64))
    assert np.array_equal(half + rest, vec)
    # The weight is undone on decoding (the pair cells are sent in units of 1/w).
    assert np.allclose(np.asarray(sk.resolution)[2 * n :], 1 / 3)


def test_the_paired_sketchs_sensitivity_is_the_stated_split() -> None:
    spec = HierarchySpec(6, 2, (0.0, 1.0), 2)
    sk = PairedHierarchySketch(spec, 16, 4)
    sens = sk.sensitivity(
        unit="example", neighbouring="add_remove", examples_per_unit=1, layout="whole"
    )
    assert sens.l1 == 2 * 6 + 4
    assert sens.l2 == pytest.approx(math.sqrt(2 * 6 + 16))
    shares = [p.budget_share for p in sens.parts]
    assert shares[:-1] == pytest.approx([1 / 16] * 12) and shares[-1] == pytest.approx(4 / 16)
    assert math.fsum(shares) == pytest.approx(1.0)
    client = sk.sensitivity(
        unit="client", neighbouring="add_remove", examples_per_unit=3, layout="whole"
    )
    assert client.l1 == 3 * 16
    with pytest.raises(ValueError, match="weight must then be 1"):
        sk.sensitivity(
            unit="example", neighbouring="add_remove", examples_per_unit=1, layout="assign"
        )
    assigned = PairedHierarchySketch(spec, 16, 1).sensitivity(
        unit="example", neighbouring="replace", examples_per_unit=1, layout="assign"
    )
    assert assigned.l1 == 2.0 and "parallel composition" in assigned.derivation


def test_the_paired_sketch_refuses_a_pair_grid_off_the_hierarchy() -> None:
    spec = HierarchySpec(4, 2, (0.0, 1.0), 2)
    with pytest.raises(ValueError, match="pair_bins must be b\\*\\*g"):
        PairedHierarchySketch(spec, 12)
    with pytest.raises(ValueError, match="pair_bins must be b\\*\\*g"):
        PairedHierarchySketch(spec, 32)


def test_defaults_give_the_pair_grid_about_its_share() -> None:
    assert default_pair_bins(2, 11, exact=False) == 16
    assert default_pair_bins(2, 11, exact=True) == 64
    assert default_pair_bins(2, 3, exact=False) == 8
    assert default_pair_bins(16, 3, exact=False) == 16
    w = default_pair_weight(fe.DistributedDP(1.0), 11, layout="whole")
    assert w == 4 and 0.1 < w / (22 + w) < 0.2
    wg = default_pair_weight(fe.DistributedDP(1.0, noise="skellam", delta=1e-6), 11, layout="whole")
    assert wg == 2 and 0.1 < wg**2 / (22 + wg**2) < 0.2
    assert default_pair_weight(fe.LocalDP(5.0), 11, layout="assign") == 1
    assert default_pair_weight(fe.DistributedDP(1.0), 11, layout="assign") == 1


# ---------------------------------------------------------------- the release
def test_one_release_spends_epsilon_once_and_the_receipt_shows_the_split(pair) -> None:
    fa, fb = pair
    cmp = fe.compare(fa, fb, fe.DistributedDP(epsilon=1.0), n_examples=6_000, rng=2)
    h, w = cmp.parameters["height"], cmp.parameters["pair_weight"]
    assert cmp.epsilon_spent == pytest.approx(1.0)
    entries = cmp.receipt.entries
    assert len(entries) == 2 * h + 1
    assert entries[0].epsilon == pytest.approx(1 / (2 * h + w))
    assert entries[-1].label.endswith("pairs (A, B)")
    assert entries[-1].epsilon == pytest.approx(w / (2 * h + w))
    assert cmp.parameters["budget_split"]["pair grid"] == pytest.approx(w / (2 * h + w))
    # Both evaluations are decoded from that one release: the same receipt, no extra ε.
    assert cmp.a.receipt is cmp.a.tree.receipt or cmp.a.receipt.as_dict() == cmp.b.receipt.as_dict()
    assert cmp.a.epsilon_spent == pytest.approx(1.0) and cmp.b.epsilon_spent == pytest.approx(1.0)
    json.dumps(cmp.summary(), default=float)


def test_without_a_public_size_a_noisy_count_is_released_first(pair) -> None:
    fa, fb = pair
    cmp = fe.compare(fa, fb, fe.DistributedDP(epsilon=1.0), rng=3)
    assert cmp.epsilon_spent == pytest.approx(1.0)
    assert cmp.parameters["n_examples"] is None
    assert "n_examples_released" in cmp.parameters
    assert "6000" not in json.dumps(cmp.parameters, default=str)


def test_differences_are_the_evaluations_differences_with_positive_ses(pair) -> None:
    fa, fb = pair
    cmp = fe.compare(fa, fb, fe.DistributedDP(epsilon=1.0), n_examples=6_000, rng=4)
    assert cmp.roc_auc_diff == pytest.approx(cmp.a.roc_auc - cmp.b.roc_auc)
    assert cmp.average_precision_diff == pytest.approx(
        cmp.a.average_precision - cmp.b.average_precision
    )
    for d in (cmp.roc_auc, cmp.average_precision):
        assert d.privacy_se > 0 and d.sampling_se > 0
        assert d.se == pytest.approx(math.hypot(d.privacy_se, d.sampling_se))
        lo, hi = d.interval(0.95)
        assert lo < d.estimate < hi
    t = cmp.at_threshold(0.5)
    ma, mb = cmp.a.at_threshold(0.5), cmp.b.at_threshold(0.5)
    assert t.recall.estimate == pytest.approx(float(ma.recall) - float(mb.recall))
    assert t.accuracy.privacy_se > 0 and t.accuracy.sampling_se > 0
    with pytest.raises(ValueError, match="one threshold"):
        cmp.at_threshold([0.2, 0.5])  # type: ignore[arg-type]


def test_the_paired_se_is_far_below_the_unpaired_one_under_secure_aggregation(pair) -> None:
    fa, fb = pair
    cmp = fe.compare(fa, fb, fe.SecureAggregation())
    unpaired = math.hypot(cmp.a.roc_auc_sampling_se, cmp.b.roc_auc_sampling_se)
    assert cmp.roc_auc_diff_sampling_se < 0.6 * unpaired


def test_local_dp_adds_the_splits_covariance_to_the_privacy_part() -> None:
    """Clients split over parts: A and B come from different clients, negatively correlated."""
    rng = np.random.default_rng(5)
    n = 60_000
    y = (rng.random(n) < 0.4).astype(np.int64)
    z = rng.normal(1.2 * y, 1.0)
    fa = fe.Federation.from_arrays(1 / (1 + np.exp(-z)), y)
    b = 1 / (1 + np.exp(-(z + rng.normal(0, 0.5, n))))
    cmp = fe.compare(fa, b, fe.LocalDP(epsilon=5.0), rng=5)
    assert cmp.parameters["pair_weight"] == 1
    assert cmp.parameters["budget_split"] == {"each part": 1.0}
    fractions = cmp.a.tree.part_fractions
    assert fractions is not None and fractions.sum() < 0.55  # the split is over both models
    weights = [dense_leaf_weights(t.tree, t.counts, "roc_auc") for t in (cmp.a, cmp.b)]
    cov = split_covariance(cmp.pair, cmp.a.tree, weights[0], cmp.b.tree, weights[1])
    # Two correlated models' influence values move together: the split's errors do not.
    assert cov < 0
    se_a, bias_a = dense_se_parts(cmp.a.tree, cmp.a.counts, "roc_auc")
    se_b, bias_b = dense_se_parts(cmp.b.tree, cmp.b.counts, "roc_auc")
    total = se_a**2 + se_b**2 - 2 * cov + (bias_a - bias_b) ** 2
    assert cmp.roc_auc_diff_privacy_se == pytest.approx(math.sqrt(total), rel=1e-9)
    # Without a split there is no such term.
    whole = fe.compare(fa, b, fe.DistributedDP(epsilon=1.0), rng=5)
    assert whole.a.tree.part_fractions is None
    assert split_covariance(whole.pair, whole.a.tree, weights[0], whole.b.tree, weights[1]) == 0


def test_noninferiority_is_the_one_sided_test_on_the_paired_difference(pair) -> None:
    fa, fb = pair
    cmp = fe.compare(fa, fb, fe.DistributedDP(epsilon=1.0), n_examples=6_000, rng=6)
    d = cmp.roc_auc
    ni = cmp.noninferiority(0.02)
    assert ni.lower == pytest.approx(d.estimate - 1.6448536269514722 * d.se)
    assert ni.p_value == pytest.approx(0.5 * math.erfc((d.estimate + 0.02) / d.se / math.sqrt(2)))
    assert ni.noninferior == (ni.lower > -0.02) == (ni.p_value < 0.05)
    # A larger margin is easier to meet; the reverse comparison is harder.
    assert cmp.noninferiority(0.05).p_value < ni.p_value
    assert cmp.noninferiority(0.02, metric="average_precision").metric == "average_precision"
    for bad in (-0.1, math.nan, math.inf):
        with pytest.raises(ValueError, match="margin"):
            cmp.noninferiority(bad)
    with pytest.raises(ValueError, match="metric"):
        cmp.noninferiority(0.01, metric="accuracy")
    with pytest.raises(ValueError, match="level"):
        cmp.noninferiority(0.01, level=1.5)


# ----------------------------------------------------------------- bad inputs
def test_the_two_federations_must_hold_the_same_examples(pair) -> None:
    fa, fb = pair
    y = fa.labels.copy()
    y[17] = 1 - y[17]
    other = fe.Federation.from_arrays(fb.scores, y, np.repeat(np.arange(600), 10))
    with pytest.raises(ValueError, match=r"labels differ at 1 example\(s\) \(first at row 17\)"):
        fe.compare(fa, other, fe.SecureAggregation())
    with pytest.raises(ValueError, match="fed_a holds 6000 examples and fed_b 5999"):
        fe.compare(
            fa, fe.Federation.from_arrays(fb.scores[:-1], fb.labels[:-1]), fe.SecureAggregation()
        )
    moved = np.repeat(np.arange(600), 10)
    moved[[0, 10]] = moved[[10, 0]]
    with pytest.raises(ValueError, match="different clients or in a different order"):
        fe.compare(
            fa, fe.Federation.from_arrays(fb.scores, fb.labels, moved), fe.SecureAggregation()
        )
    with pytest.raises(ValueError, match="the clients differ"):
        fe.compare(fa, fe.Federation.from_arrays(fb.scores, fb.labels), fe.SecureAggregation())
    wide = fe.Federation.from_arrays(
        fb.scores, fb.labels, np.repeat(np.arange(600), 10), score_range=(0.0, 2.0)
    )
    with pytest.raises(ValueError, match="score domains differ"):
        fe.compare(fa, wide, fe.SecureAggregation())
    with pytest.raises(ValueError, match="one entry per example"):
        fe.compare(fa, fb.scores[:10], fe.SecureAggregation())
    with pytest.raises(TypeError, match="Federation"):
        fe.compare("a.csv", fb, fe.SecureAggregation())  # type: ignore[arg-type]


def test_model_b_may_be_given_as_scores(pair) -> None:
    fa, fb = pair
    by_scores = fe.compare(fa, fb.scores, fe.SecureAggregation())
    by_fed = fe.compare(fa, fb, fe.SecureAggregation())
    assert by_scores.roc_auc_diff == by_fed.roc_auc_diff


def test_bad_parameters_and_one_class_data_are_refused(pair) -> None:
    fa, fb = pair
    with pytest.raises(ValueError, match="pair_weight must be 1"):
        fe.compare(fa, fb, fe.LocalDP(5.0), pair_weight=3)
    with pytest.raises(ValueError, match="pair_bins"):
        fe.compare(fa, fb, fe.SecureAggregation(), height=4, pair_bins=32)
    ones = fe.Federation.from_arrays(fa.scores, np.ones(fa.n_examples, dtype=int))
    with pytest.raises(ValueError, match="all 6000 examples are positive"):
        fe.compare(ones, fb.scores, fe.SecureAggregation())
    multi = fe.Federation.from_arrays(np.full((4, 2), 0.5), [0, 1, 0, 1])
    with pytest.raises(ValueError, match="binary"):
        fe.compare(multi, multi, fe.SecureAggregation())
    with pytest.raises(TypeError, match="UserLevelDP cannot release"):
        fe.compare(fa, fb, fe.UserLevelDP(epsilon=1.0, delta=1e-6))


def test_under_dp_a_tiny_class_warns_and_never_raises() -> None:
    rng = np.random.default_rng(7)
    s = rng.random(300)
    y = np.zeros(300, dtype=int)
    y[:2] = 1
    with pytest.warns(fe.SmallDataWarning, match="model A"):
        cmp = fe.compare(
            fe.Federation.from_arrays(s, y), rng.random(300), fe.DistributedDP(0.5), rng=8
        )
    assert cmp.epsilon_spent == pytest.approx(0.5)


# -------------------------------------------------------------------- context
def test_ctx_compare_charges_one_release_to_the_program(pair) -> None:
    fa, fb = pair
    ctx = fe.Context(fa, budget=fe.Budget(epsilon=2.0), public=fe.Public(n_examples=6_000), rng=9)
    cmp = ctx.compare(fb, fe.DistributedDP(epsilon=1.0))
    assert ctx.spent.epsilon == pytest.approx(1.0)
    steps = ctx.receipt().steps
    assert [s.what for s in steps] == ["compare"]
    assert "fedeval.Context program" in cmp.receipt.scope
    with pytest.raises(fe.BudgetExceededError):
        ctx.compare(fb, fe.DistributedDP(epsilon=1.5))
    assert ctx.spent.epsilon == pytest.approx(1.0)
    with pytest.raises(TypeError, match="the context supplies"):
        ctx.compare(fb, fe.DistributedDP(epsilon=0.5), rng=1)


def test_the_faithful_path_runs_every_clients_encoder_and_agrees_without_noise(pair) -> None:
    fa, fb = pair
    fast = fe.compare(fa, fb, fe.SecureAggregation(), height=6)
    faithful = fe.compare(fa, fb, fe.SecureAggregation(), height=6, path="faithful")
    assert faithful.roc_auc_diff == fast.roc_auc_diff
    assert np.array_equal(faithful.pair.counts, fast.pair.counts)
    small_a = fe.Federation.from_arrays(fa.scores[:400], fa.labels[:400], np.arange(400) // 4)
    small_b = fe.Federation.from_arrays(fb.scores[:400], fb.labels[:400], np.arange(400) // 4)
    for model in (fe.DistributedDP(epsilon=1.0), fe.LocalDP(epsilon=5.0)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", fe.SmallDataWarning)  # LDP on 400 examples
            cmp = fe.compare(small_a, small_b, model, height=3, path="faithful", rng=10)
        assert cmp.epsilon_spent == pytest.approx(model.epsilon)
        assert np.isfinite(cmp.roc_auc_diff_privacy_se)
