"""Sliced evaluation (issue 25, item 2): every slice from one release, parallel composition.

The exact per-slice references are in ``tests/reference/test_compare_slices_vs_sklearn.py``,
the noise's calibration in ``tests/statistical/test_compare_slices_standard_errors.py``
and the audits in ``tests/privacy/audits/test_audit_compare_slices.py``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import norm

import fedeval as fe
from fedeval.sketches.hierarchy import HierarchySketch, HierarchySpec
from fedeval.sketches.sliced import SlicedHierarchySketch, slice_labels
from fedeval.slicing import SlicedEvaluation, SliceValue, slice_index

VALUES = ["EU", "US", "ASIA"]


@pytest.fixture(scope="module")
def data() -> tuple[fe.Federation, np.ndarray]:
    rng = np.random.default_rng(0)
    n = 12_000
    region = rng.choice(["EU", "US", "ASIA", "SECRET-REGION"], n, p=[0.45, 0.3, 0.2, 0.05])
    y = (rng.random(n) < 0.4).astype(np.int64)
    z = rng.normal(np.where(region == "ASIA", 0.6, 1.3) * y, 1.0)
    fed = fe.Federation.from_arrays(1 / (1 + np.exp(-z)), y, np.arange(n) // 8)
    return fed, region


# ------------------------------------------------------------------ the sketch
def test_the_sliced_sketch_is_the_hierarchy_with_slice_classes_and_one_hierarchys_sensitivity() -> (
    None
):
    spec = HierarchySpec(6, 2, (0.0, 1.0), 2)
    sk = SlicedHierarchySketch.of(spec, 4)
    one = HierarchySketch(spec)
    for unit, b in (("example", 1), ("client", 5)):
        for relation in ("add_remove", "replace"):
            for layout in ("whole", "assign"):
                s = sk.sensitivity(
                    unit=unit, neighbouring=relation, examples_per_unit=b, layout=layout
                )
                o = one.sensitivity(
                    unit=unit, neighbouring=relation, examples_per_unit=b, layout=layout
                )
                # k slices cost one hierarchy's sensitivity, not k of them.
                assert (s.l1, s.l2) == (o.l1, o.l2)
                assert "slice" in s.derivation
    assert (
        "parallel composition over slices"
        in sk.sensitivity(
            unit="example", neighbouring="add_remove", examples_per_unit=1, layout="whole"
        ).derivation
    )
    assert (
        "at most 4 of the 4 slices"
        in sk.sensitivity(
            unit="client", neighbouring="add_remove", examples_per_unit=5, layout="whole"
        ).derivation
    )
    codes = slice_labels(np.array([0, 1, 1, 0]), np.array([0, 0, 3, 2], dtype=np.int16))
    assert codes.tolist() == [0, 1, 7, 4] and codes.dtype == np.int16
    with pytest.raises(ValueError, match="8 classes"):
        SlicedHierarchySketch(spec, n_slices=4)


# ---------------------------------------------------------------- the release
def test_k_slices_spend_one_evaluations_epsilon(data) -> None:
    fed, region = data
    sev = fe.evaluate(fed, fe.DistributedDP(epsilon=1.0), slices=region, slice_values=VALUES, rng=1)
    assert isinstance(sev, SlicedEvaluation)
    assert sev.epsilon_spent == pytest.approx(1.0)
    assert sev.keys() == [*VALUES, "other"] and len(sev) == 4
    for _, ev in sev.items():
        assert ev.epsilon_spent == pytest.approx(1.0)  # the same release, read per slice
    sens = sev["EU"].tree.receipt.sensitivity  # the sliced release's (not the count's)
    assert sens["l1"] == sev.parameters["height"]  # one hierarchy's L1 over all slices
    assert "parallel composition over slices" in sens["derivation"]
    assert isinstance(sev["EU"], fe.Evaluation)
    with pytest.raises(KeyError, match="not a declared slice value"):
        sev["SECRET-REGION"]


def test_client_level_units_count_every_slice_a_bounded_client_touches(data) -> None:
    fed, region = data
    model = fe.DistributedDP(epsilon=1.0, unit="client", contribution_bound=8)
    sev = fe.evaluate(fed, model, slices=region, slice_values=VALUES, rng=2)
    h = sev.parameters["height"]
    sens = sev["EU"].tree.receipt.sensitivity
    assert sens["l1"] == 8 * h
    assert "touches at most 4 of the 4 slices" in sens["derivation"]
    assert sev.epsilon_spent == pytest.approx(1.0)


def test_an_undeclared_value_is_never_published(data) -> None:
    fed, region = data
    sev = fe.evaluate(fed, fe.DistributedDP(epsilon=1.0), slices=region, slice_values=VALUES, rng=3)
    published = json.dumps(
        [sev.summary(), sev.receipt.as_dict(), sev.parameters, sev.keys()], default=str
    )
    assert "SECRET" not in published
    assert "other" in published


def test_a_declared_value_named_other_keeps_its_name(data) -> None:
    fed, region = data
    with pytest.warns(fe.SmallDataWarning, match="no examples.*: other$"):
        sev = fe.evaluate(
            fed, fe.SecureAggregation(), slices=region, slice_values=["EU", "other"], height=8
        )
    assert sev.keys() == ["EU", "other", "(other)"]
    assert sev.other == "(other)"


def test_per_client_cohorts_equal_the_per_example_slices(data) -> None:
    fed, _ = data
    rng = np.random.default_rng(4)
    cohort_of_client = {int(c): str(rng.choice(["a", "b", "c"])) for c in fed.client_ids}
    per_example = np.array([cohort_of_client[int(c)] for c in fed.client_ids[fed.client_index]])
    by_map = fe.evaluate(
        fed, fe.SecureAggregation(), slices=cohort_of_client, slice_values=["a", "b"], height=9
    )
    by_row = fe.evaluate(
        fed, fe.SecureAggregation(), slices=per_example, slice_values=["a", "b"], height=9
    )
    for key in ("a", "b", "other"):
        assert by_map[key].roc_auc == by_row[key].roc_auc


def test_integer_slice_values_take_the_table_path(data) -> None:
    fed, _ = data
    ints = np.arange(fed.n_examples) % 7
    index, declared, other = slice_index(fed, ints, [3, 1, 5])
    expected = np.select([ints == 3, ints == 1, ints == 5], [0, 1, 2], default=3)
    assert np.array_equal(index, expected) and other == "other"
    strings, _, _ = slice_index(fed, ints.astype(str), ["3", "1", "5"])
    assert np.array_equal(strings, expected)


def test_ctx_evaluate_with_slices_is_one_release(data) -> None:
    fed, region = data
    ctx = fe.Context(fed, budget=fe.Budget(epsilon=1.5), rng=5)
    sev = ctx.evaluate(fe.DistributedDP(epsilon=1.0), slices=region, slice_values=VALUES)
    assert isinstance(sev, SlicedEvaluation)
    assert ctx.spent.epsilon == pytest.approx(1.0)
    assert [s.what for s in ctx.receipt().steps] == ["evaluate (slices)"]
    with pytest.raises(fe.BudgetExceededError):
        ctx.evaluate(fe.DistributedDP(epsilon=1.0), slices=region, slice_values=VALUES)
    assert ctx.spent.epsilon == pytest.approx(1.0)


def test_local_dp_slices_know_the_whole_split(data) -> None:
    fed, region = data
    sev = fe.evaluate(fed, fe.LocalDP(epsilon=5.0), slices=region, slice_values=VALUES, rng=6)
    trees = [ev.tree for _, ev in sev.items()]
    # The split's N is every slice's examples (one estimate, shared), not a slice's own.
    assert len({t.split_examples for t in trees}) == 1
    assert trees[0].split_examples > 2 * float(np.clip(trees[0].leaves, 0, None).sum())
    assert sev.epsilon_spent == pytest.approx(5.0)


# ------------------------------------------------------------ worst and gaps
def _fake(values: dict[str, SliceValue]) -> SlicedEvaluation:
    """A SlicedEvaluation whose per-slice values are given (to check the interval algebra)."""

    class Fixed(SlicedEvaluation):
        def values(self, metric, *, threshold=None, include_other=False):  # type: ignore[override]
            return dict(values)

    return Fixed({}, "other", {})


def test_worst_and_gap_intervals_are_simultaneous_and_account_for_the_pick() -> None:
    vals = {
        "a": SliceValue(0.80, 0.01, 0.0),
        "b": SliceValue(0.70, 0.02, 0.0),
        "c": SliceValue(0.75, 0.05, 0.0),
    }
    sev = _fake(vals)
    z = norm.ppf(1 - 0.05 / 6)  # Bonferroni over 3 slices, two-sided
    w = sev.worst("roc_auc")
    assert w.slice == "b" and w.estimate == 0.70
    # The true worst value lies in [min lower, min upper] when all intervals cover.
    assert w.lower == pytest.approx(min(0.70 - z * 0.02, 0.75 - z * 0.05))
    assert w.upper == pytest.approx(min(0.80 + z * 0.01, 0.70 + z * 0.02, 0.75 + z * 0.05))
    g = sev.gap("roc_auc")
    assert g.estimate == pytest.approx(0.10) and (g.best, g.worst) == ("a", "b")
    highs = [0.80 + z * 0.01, 0.70 + z * 0.02, 0.75 + z * 0.05]
    lows = [0.80 - z * 0.01, 0.70 - z * 0.02, 0.75 - z * 0.05]
    assert g.upper == pytest.approx(max(highs) - min(lows))
    assert g.lower == pytest.approx(max(0.0, max(lows) - min(highs)))
    # For an error rate the worst slice is the largest.
    assert sev.worst("fpr", threshold=0.5).slice == "a"


def test_nan_slices_are_left_out_and_listed() -> None:
    sev = _fake({"a": SliceValue(0.8, 0.01, 0.01), "b": SliceValue(float("nan"), 0.1, 0.1)})
    w = sev.worst("roc_auc")
    assert w.slice == "a" and w.undefined == ("b",)
    assert np.isnan(sev.gap("roc_auc").estimate)


def test_fairness_summaries_have_intervals(data) -> None:
    fed, region = data
    sev = fe.evaluate(fed, fe.DistributedDP(epsilon=1.0), slices=region, slice_values=VALUES, rng=7)
    for gap in (sev.tpr_gap(0.5), sev.fpr_gap(0.5), sev.positive_rate_gap(0.5)):
        assert 0 <= gap.lower <= gap.estimate <= gap.upper
        assert set(gap.intervals) == set(VALUES)
    tpr = sev.values("recall", threshold=0.5)
    assert tpr["ASIA"].sampling_se > 0 and tpr["ASIA"].privacy_se > 0
    ce = sev.calibration_error()
    for est, lo, hi in ce.values():
        assert 0 <= lo <= est <= hi
    s = sev.summary()
    assert set(s["slices"]) == {*VALUES, "other"}
    assert s["worst_roc_auc"]["slice"] == "ASIA"


# ----------------------------------------------------------------- bad inputs
def test_bad_slices_are_refused_with_a_clear_message(data) -> None:
    fed, region = data
    model = fe.DistributedDP(epsilon=1.0)
    cases = [
        ({"slices": region, "slice_values": None}, ValueError, "declare the public slice values"),
        ({"slices": region, "slice_values": []}, ValueError, "is empty"),
        ({"slices": region, "slice_values": ["EU", "EU"]}, ValueError, "declared twice"),
        ({"slices": region, "slice_values": ["EU", None]}, ValueError, "missing value"),
        ({"slices": region, "slice_values": "EU"}, TypeError, "sequence"),
        ({"slices": region[:10], "slice_values": VALUES}, ValueError, "one value per example"),
        ({"slices": None, "slice_values": VALUES}, ValueError, "without slices"),
    ]
    for kwargs, error, message in cases:
        with pytest.raises(error, match=message):
            fe.evaluate(fed, model, rng=0, **kwargs)
    multi = fe.Federation.from_arrays(np.full((4, 3), 1 / 3), [0, 1, 2, 0])
    with pytest.raises(ValueError, match="binary"):
        fe.evaluate(multi, model, slices=np.zeros(4), slice_values=[0])
    sev = fe.evaluate(fed, model, slices=region, slice_values=VALUES, rng=0)
    with pytest.raises(ValueError, match="metric at a threshold"):
        sev.values("recall")
    with pytest.raises(ValueError, match="metric must be one of"):
        sev.worst("matthews")
    # F1 is a registered threshold metric (metrics/confusion.THRESHOLD_METRICS).
    assert sev.worst("f1", threshold=0.5).slice in VALUES
