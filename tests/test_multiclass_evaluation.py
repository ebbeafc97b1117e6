"""The multiclass sketch and evaluation: encoding, sensitivity, paths, API and bad input (issue 17)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fedeval as fe
from fedeval.cli import main
from fedeval.privacy.mechanism_for import mechanism_for
from fedeval.public_facts import COUNT_SHARE
from fedeval.report.multiclass_report import write_multiclass_report
from fedeval.sketches.multiclass import MulticlassSketch, softmax


def _probs(n: int, c: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, c, n)
    z = rng.normal(0.0, 1.0, (n, c))
    z[np.arange(n), y] += 1.5
    return softmax(z), y


# ------------------------------------------------------------------- the sketch
def test_every_example_touches_one_cell_per_part() -> None:
    p, y = _probs(500, 4, 0)
    sk = MulticlassSketch(4, 16, 8)
    vec = sk.encode(p, y, np.zeros(500, dtype=np.int64))
    offsets = sk.part_offsets()
    for k in range(len(sk.parts)):
        assert vec[offsets[k] : offsets[k + 1]].sum() == 500
    cells = sk.cells(p, y)
    assert cells.shape == (500, 9)
    for k in range(9):
        assert np.all((cells[:, k] >= offsets[k]) & (cells[:, k] < offsets[k + 1]))


def test_items_match_cells_in_every_part() -> None:
    p, y = _probs(300, 3, 1)
    sk = MulticlassSketch(3, 8, 4)
    offsets = sk.part_offsets()
    for k in range(len(sk.parts)):
        items = sk.items(p, y, np.full(300, k))
        np.testing.assert_array_equal(items + offsets[k], sk.cells(p, y)[:, k])
    part = np.arange(300) % len(sk.parts)
    assigned = sk.encode_assigned(p, y, np.zeros(300, dtype=np.int64), part)
    assert assigned.sum() == 300


def _reference_cells(sk: MulticlassSketch, p: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Every example's cells computed one example at a time from the definitions."""
    c, b = sk.n_classes, sk.n_bins
    starts = sk.kind_offsets()

    def bin_of(edges: np.ndarray, x: float) -> int:
        return int(np.searchsorted(edges[1:-1], x, side="right"))

    rows = []
    for probs, t in zip(p, y, strict=True):
        pred = int(np.argmax(probs))
        cells: list[int] = []
        for kind in sk.kinds:
            if kind == "confusion":
                cells.append(starts[kind] + t * c + pred)
            elif kind == "one_vs_rest":
                for j in range(c):
                    cell = bin_of(sk.ovr_grid_edges, probs[j])
                    if sk.split_one_vs_rest:
                        cells.append(starts[kind] + j * b + cell + (c * b if j == t else 0))
                    else:
                        cells.append(starts[kind] + 2 * b * j + cell + (b if j == t else 0))
            elif kind == "rank":
                above = sum(
                    probs[j] > probs[t] or (probs[j] == probs[t] and j > t) for j in range(c)
                )
                cells.append(starts[kind] + above)
            elif kind == "top_label":
                correct = sk.top_bins if pred == t else 0
                cells.append(starts[kind] + correct + bin_of(sk.top_grid_edges, probs[pred]))
            elif kind == "log_loss":
                loss = min(-np.log(max(probs[t], sk.prob_floor)), sk.log_loss_bound)
                cells.append(starts[kind] + bin_of(sk.log_loss_grid.edges, max(loss, 0.0)))
            else:
                sq = float(probs @ probs) - 2.0 * probs[t] + 1.0
                cells.append(starts[kind] + bin_of(sk.brier_grid.edges, min(max(sq, 0.0), 2.0)))
        rows.append(cells)
    return np.array(rows, dtype=np.int64)


_EDGES16 = tuple(np.linspace(0.0, 1.0, 17).tolist())
_ODD_EDGES = (0.0, 0.001, 0.3, 0.30000000000000004, 0.7, 1.0)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"n_classes": 4, "n_bins": 16, "loss_bins": 8},
        {"n_classes": 3, "n_bins": 10, "loss_bins": 7},
        {
            "n_classes": 5,
            "n_bins": 16,
            "loss_bins": 64,
            "split_one_vs_rest": True,
            "ovr_edges": _EDGES16,
            "top_edges": _EDGES16,
        },
        {
            "n_classes": 5,
            "n_bins": 5,
            "loss_bins": 9,
            "ovr_edges": _ODD_EDGES,
            "top_edges": _ODD_EDGES,
        },
        {"n_classes": 6, "n_bins": 32, "loss_bins": 16, "kinds": ("rank", "brier")},
        {"n_classes": 3, "n_bins": 8, "loss_bins": 8, "kinds": ("top_label", "one_vs_rest")},
    ],
)
def test_cells_are_the_definitions_example_by_example(kwargs: dict[str, Any]) -> None:
    """The vectorised cells (one array for every part, the table lookups of the
    probability bins) equal the cells computed example by example: random
    probabilities and, past 5,000 examples (more than the table lookup's
    minimum), probabilities on a 1/8 lattice with ties, 0 and 1, and, with
    explicit edges, one example outside [0, 1]."""
    sk = MulticlassSketch(**kwargs)
    c = sk.n_classes
    p, y = _probs(5_000, c, c)
    ties = np.round(p * 8) / 8
    ties[:5] = 1.0 / c
    ties[5] = np.eye(c)[0]
    if sk.ovr_edges is not None:  # uniform grids take validated scores (UniformGrid.bin_index)
        # outside [0, 1] (the true class negative, another +inf): the clamps stay on
        ties[6, y[6]], ties[6, (y[6] + 1) % c] = -0.25, np.inf
    p, y = np.vstack([p, ties]), np.concatenate([y, y])
    got = sk.cells(p, y)
    np.testing.assert_array_equal(got, _reference_cells(sk, p, y))
    np.testing.assert_array_equal(
        sk.encode(p, y, np.zeros(y.size, dtype=np.int64)),
        np.bincount(got.ravel(), minlength=sk.length)
        * np.repeat(sk.part_weights, [q.length for q in sk.parts]),
    )


def test_a_nan_probability_does_not_hide_another_examples_tie() -> None:
    """The sketch API takes unvalidated arrays: an example whose true-class
    probability is NaN has no equal class, and the tie search must still see
    the tie of another example in the same batch."""
    sk = MulticlassSketch(3, 8, 4, kinds=("rank",))
    p = np.array([[np.nan, 0.5, 0.5], [0.2, 0.4, 0.4], [0.1, 0.2, 0.7]])
    y = np.array([0, 1, 2])
    np.testing.assert_array_equal(sk.cells(p, y), _reference_cells(sk, p, y))
    assert sk.cells(p, y)[1, 0] == sk.kind_offsets()["rank"] + 1  # class 2 ties, later


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 6), st.integers(1, 60), st.integers(0, 2**16))
def test_summaries_add_like_a_monoid(c: int, n: int, seed: int) -> None:
    p, y = _probs(n, c, seed)
    sk = MulticlassSketch(c, 8, 4)
    cut = n // 3
    zeros = np.zeros(n, dtype=np.int64)
    whole = sk.encode(p, y, zeros)
    np.testing.assert_array_equal(
        whole, sk.encode(p[:cut], y[:cut], zeros[:cut]) + sk.encode(p[cut:], y[cut:], zeros[cut:])
    )


def test_rank_breaks_ties_as_sklearn_top_k() -> None:
    from sklearn.metrics import top_k_accuracy_score

    p = np.array([[0.4, 0.4, 0.2], [0.4, 0.4, 0.2], [0.2, 0.4, 0.4], [0.5, 0.25, 0.25]])
    y = np.array([0, 1, 2, 2])
    ev = fe.evaluate(fe.Federation.from_arrays(p, y, kind="probabilities"), fe.SecureAggregation())
    for k in (1, 2):
        assert ev.top_k_accuracy(k) == pytest.approx(top_k_accuracy_score(y, p, k=k))


def test_logits_are_softmaxed_by_the_clients() -> None:
    rng = np.random.default_rng(3)
    z = rng.normal(0.0, 2.0, (400, 4))
    y = rng.integers(0, 4, 400)
    a = fe.evaluate(fe.Federation.from_arrays(z, y, kind="logits"), fe.SecureAggregation())
    b = fe.evaluate(
        fe.Federation.from_arrays(softmax(z), y, kind="probabilities"), fe.SecureAggregation()
    )
    np.testing.assert_array_equal(a.counts.vector(), b.counts.vector())


@pytest.mark.parametrize(
    ("unit", "neighbouring", "bound", "l1", "l2"),
    [
        ("example", "add_remove", 1, 9.0, 3.0),
        ("example", "replace", 1, 18.0, np.sqrt(18.0)),
        ("client", "add_remove", 5, 45.0, 15.0),
    ],
)
def test_sensitivity_one_cell_per_part(
    unit: Any, neighbouring: Any, bound: int, l1: float, l2: float
) -> None:
    """c = 4: 9 parts; each unit example moves one cell per part (module docstring)."""
    sk = MulticlassSketch(4, 16, 8)
    s = sk.sensitivity(
        unit=unit, neighbouring=neighbouring, examples_per_unit=bound, layout="whole"
    )
    assert s.l1 == pytest.approx(l1) and s.l2 == pytest.approx(l2)
    assert [p.budget_share for p in s.parts] == pytest.approx([1 / 9] * 9)
    a = sk.sensitivity(
        unit=unit, neighbouring=neighbouring, examples_per_unit=bound, layout="assign"
    )
    assert a.l1 == pytest.approx(l1 / 9)


def test_sensitivity_is_attained() -> None:
    """Adding one example changes the vector by exactly L1 = c + 5 (the bound is tight)."""
    p, y = _probs(50, 4, 4)
    sk = MulticlassSketch(4, 16, 8)
    z = np.zeros(51, dtype=np.int64)
    d = sk.encode(p[:49], y[:49], z[:49])
    d2 = sk.encode(p, y, z[:50])
    assert np.abs(d2 - d).sum() == 9


def test_ldp_splits_clients_over_the_parts_and_label_dp_is_refused() -> None:
    sk = MulticlassSketch(3, 8, 4)
    mech = mechanism_for(fe.LocalDP(2.0), sk, n_clients=100)
    assert mech.layout == "assign" and mech.oracle_kind == "oue"
    with pytest.raises(TypeError):
        mechanism_for(fe.LabelDP(1.0), sk, n_clients=100)


# ---------------------------------------------------------------- the pipeline
def test_fast_and_faithful_paths_agree_in_distribution() -> None:
    """Mean over releases of one cell vs its true count: within 4 SE of the closed-form noise."""
    p, y = _probs(200, 3, 5)
    fed = fe.Federation.from_arrays(p, y, np.arange(200) % 20, kind="probabilities")
    model = fe.DistributedDP(2.0)
    truth = None
    for path in ("fast", "faithful"):
        vals, var = [], None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            for r in range(40):
                ev = fe.evaluate_multiclass(
                    fed, model, n_bins=8, loss_bins=4, ece_bins=2, path=path, rng=r
                )
                vals.append(ev.counts.vector())
                var = ev.counts.variance
        # The planned (weighted, split) sketch; its counts in value units.
        assert ev.sketch.weighted and ev.sketch.split_one_vs_rest
        truth = ev.sketch.encode(p, y, np.zeros(200, dtype=np.int64)) * ev.sketch.resolution
        assert var is not None
        mean = np.mean(vals, axis=0)
        z = (mean - truth) / np.sqrt(var / 40)
        assert np.mean(np.abs(z) < 4) > 0.99


def test_receipt_and_summary_are_json_safe() -> None:
    p, y = _probs(3000, 3, 6)
    fed = fe.Federation.from_arrays(p, y, kind="probabilities")
    ev = fe.evaluate(fed, fe.DistributedDP(1.0), rng=0)
    assert ev.epsilon_spent == pytest.approx(1.0)
    rows = ev.privacy_receipt()
    # No public size: a noisy example count plans the resolution (its own row), then
    # confusion, one-vs-rest negatives and positives, rank, top label, log loss, Brier.
    count = [r for r in rows if r["release"].startswith("example count")]
    parts = [r for r in rows if not r["release"].startswith("example count")]
    assert len(count) == 1 and count[0]["epsilon"] == pytest.approx(COUNT_SHARE)
    assert len(parts) == 7 and sum(r["epsilon"] for r in rows) == pytest.approx(1.0)
    shares = ev.parameters["budget_shares"]
    # The shares split what the count leaves: ε·(1 − COUNT_SHARE).
    assert sorted(r["epsilon"] for r in parts) == pytest.approx(
        sorted(v * (1.0 - COUNT_SHARE) for v in shares.values())
    )
    s = json.loads(json.dumps(ev.summary(), default=float))
    assert s["task"] == "multiclass" and len(s["confusion_matrix"]) == 3
    assert s["accuracy_se"] > 0


def test_budget_is_charged_once_before_release() -> None:
    p, y = _probs(500, 3, 7)
    fed = fe.Federation.from_arrays(p, y, kind="probabilities")
    ledger = fe.BudgetLedger(1.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fe.evaluate_multiclass(fed, fe.DistributedDP(1.0), rng=0, ledger=ledger)
        with pytest.raises(fe.BudgetExceededError):
            fe.evaluate_multiclass(fed, fe.DistributedDP(1.0), rng=1, ledger=ledger)


def test_empty_class_warns_without_counts_and_gives_nan() -> None:
    p, y = _probs(400, 3, 8)
    y = np.where(y == 2, 0, y)  # class 2 has no examples
    fed = fe.Federation.from_arrays(p, y, kind="probabilities")
    with pytest.warns(UserWarning, match=r"class\(es\) \[2\]") as rec:
        ev = fe.evaluate(fed, fe.SecureAggregation())
    message = str(rec[0].message)
    assert all(str(int(v)) not in message for v in ev.confusion_matrix().sum(axis=1) if v > 3)
    assert np.isnan(ev.recall[2]) and np.isnan(ev.roc_auc_per_class[2])
    # Macro averages run over the defined classes and say which (issue 27).
    assert ev.defined_classes["roc_auc_per_class"] == [0, 1]
    assert ev.defined_classes["recall"] == [0, 1]
    assert ev.roc_auc == pytest.approx(np.mean(ev.roc_auc_per_class[:2]))
    assert ev.balanced_accuracy == pytest.approx(np.mean(ev.recall[:2]))
    assert np.isfinite(ev.accuracy) and "left out" in message


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_bins": 30, "ece_bins": 16}, "multiple of ece_bins"),
        ({"prob_floor": 0.0}, "prob_floor"),
        ({"loss_bins": 0}, "loss_bins"),
        ({"layout": "x"}, "layout"),
    ],
)
def test_bad_parameters_raise(kwargs: dict[str, Any], match: str) -> None:
    p, y = _probs(50, 3, 9)
    fed = fe.Federation.from_arrays(p, y, kind="probabilities")
    with pytest.raises(ValueError, match=match):
        fe.evaluate_multiclass(fed, fe.SecureAggregation(), **kwargs)


def test_binary_federation_is_refused_by_the_multiclass_entry() -> None:
    fed = fe.Federation.from_arrays(np.array([0.2, 0.8]), np.array([0, 1]))
    with pytest.raises(ValueError, match="multiclass"):
        fe.evaluate_multiclass(fed, fe.SecureAggregation())


@pytest.mark.parametrize("kwargs", [{"height": 6}, {"branching": 3}, {"curve": "quantile"}])
def test_binary_only_arguments_are_refused_for_multiclass(kwargs: dict[str, Any]) -> None:
    """fe.evaluate names a binary-only argument instead of silently ignoring it."""
    p, y = _probs(50, 3, 9)
    fed = fe.Federation.from_arrays(p, y, kind="probabilities")
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        fe.evaluate(fed, fe.SecureAggregation(), **kwargs)
    assert isinstance(fe.evaluate(fed, fe.SecureAggregation()), fe.MulticlassEvaluation)


# -------------------------------------------------------------- report and CLI
@pytest.fixture
def multiclass_csv(tmp_path: Path) -> Path:
    p, y = _probs(2000, 4, 10)
    df = pd.DataFrame(p, columns=[f"p{j}" for j in range(4)])
    df["y"] = y
    df["c"] = np.arange(2000) % 40
    path = tmp_path / "mc.csv"
    df.to_csv(path, index=False)
    return path


def test_report_has_heat_map_curves_and_calibration(tmp_path: Path) -> None:
    p, y = _probs(2000, 4, 11)
    ev = fe.evaluate(fe.Federation.from_arrays(p, y, kind="probabilities"), fe.SecureAggregation())
    paths = write_multiclass_report(ev, tmp_path / "rep", name="SA")
    text = paths["html"].read_text()
    for needle in ("Confusion matrix", "Per-class curves", "Calibration", "Privacy receipt"):
        assert needle in text
    assert text.count("data:image/png;base64") == 3
    document = json.loads(paths["json"].read_text())
    assert document["schema"] == "fedeval.multiclass_evaluation/1"
    assert document["summary"]["n_classes"] == 4


def test_cli_evaluate_with_several_score_columns(
    multiclass_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rep"
    code = main(
        ["evaluate", str(multiclass_csv), "--score", "p0", "p1", "p2", "p3", "--label", "y",
         "--client", "c", "--privacy", "distdp", "--epsilon", "4", "--seed", "0",
         "--out", str(out), "--json"]
    )  # fmt: skip
    assert code == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["summary"]["task"] == "multiclass"
    assert payload["schema"] == "fedeval.multiclass_evaluation/1"
    assert payload["input"].get("n_examples") is None  # the exact count is private under DP
    assert (out / "report.html").exists()


# ------------------------------------------------------- issue 27: DP in range
def _ten_classes(seed: int = 0) -> fe.Federation:
    """900 examples of a sharp 10-class model on 100 clients (digits-like: most p near 0 or 1)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 10, 900)
    z = rng.normal(0.0, 1.0, (900, 10))
    z[np.arange(900), y] += 4.0
    return fe.Federation.from_arrays(
        softmax(2.0 * z), y, np.arange(900) % 100, kind="probabilities"
    )


def _ranges(ev: Any) -> dict[str, tuple[float, float]]:
    return {"log_loss": (0.0, ev.parameters["log_loss_bound"]), "brier": (0.0, 2.0)}


@pytest.mark.parametrize("model", [fe.DistributedDP(1.0), fe.LocalDP(5.0)], ids=["distdp", "ldp"])
def test_dp_estimates_stay_in_their_range_at_a_fixed_seed(model: Any) -> None:
    """Every published estimate is in its range (before issue 27: accuracy 1.02, a cell < 0).

    On the code before issue 27 (checked on main at cbf55e3), seed 3 gave
    under DistributedDP(1) accuracy 1.87, a confusion cell of −98 and
    precision, recall, F1, per-class AUC and top-k accuracy out of [0, 1];
    under LocalDP(5) accuracy 1.04 and a cell of −12.2.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ev = fe.evaluate(_ten_classes(), model, rng=3)
        ranges = _ranges(ev)
        for key, value in ev.values.items():
            lo, hi = ranges.get(key, (0.0, 1.0))
            v = np.asarray(value, dtype=np.float64)
            assert np.all((v[~np.isnan(v)] >= lo) & (v[~np.isnan(v)] <= hi)), key
            se = np.asarray(ev.standard_errors[key], dtype=np.float64)
            assert np.all((se >= 0) | np.isnan(v)), key
        cm = ev.confusion_matrix()
        assert cm.min() >= 0.0
        shares = cm / cm.sum(axis=1, keepdims=True)
        assert np.nanmax(shares) <= 1.0 + 1e-12
        assert np.all(np.diff(ev.values["top_k_accuracy"]) >= -1e-12)
        assert ev.top_k_accuracy(1) == pytest.approx(ev.accuracy)
        for j in range(10):
            for x in (*ev.roc_curve(j)[:2], *ev.precision_recall_curve(j)[:2]):
                assert np.nanmin(x) >= 0.0 and np.nanmax(x) <= 1.0


def test_confusion_matrix_is_consistent_with_the_released_rates() -> None:
    """Its trace over its total is the accuracy, its row shares the released prevalences."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ev = fe.evaluate(_ten_classes(1), fe.DistributedDP(1.0), rng=0)
    cm = ev.confusion_matrix()
    assert np.trace(cm) / cm.sum() == pytest.approx(ev.accuracy, abs=1e-9)
    recall = np.diag(cm) / cm.sum(axis=1)
    np.testing.assert_allclose(ev.recall, recall, atol=1e-12)
    assert ev.balanced_accuracy == pytest.approx(np.nanmean(recall))


def test_metrics_release_only_their_parts_and_the_split_follows_them() -> None:
    fed = _ten_classes(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        auc_only = fe.evaluate_multiclass(fed, fe.DistributedDP(1.0), metrics=["roc_auc"], rng=0)
        acc_only = fe.evaluate_multiclass(fed, fe.DistributedDP(1.0), metrics=["accuracy"], rng=0)
        everything = fe.evaluate_multiclass(fed, fe.DistributedDP(1.0), rng=0)
    assert auc_only.sketch.kinds == ("one_vs_rest",)
    assert acc_only.sketch.kinds == ("rank",)
    rows = auc_only.privacy_receipt()
    assert sum(r["epsilon"] for r in rows) == pytest.approx(1.0)
    assert [p.name for p in auc_only.sketch.parts] == [
        "one-vs-rest negatives (every class)",
        "one-vs-rest positives (every class)",
    ]
    # The budget goes where the request is: the positives' noise is smaller with roc_auc alone.
    var_auc, var_all = (
        ev.counts.part_variance().one_vs_rest[:, 1].mean() for ev in (auc_only, everything)
    )
    assert var_auc < var_all / 4
    assert acc_only.parameters["budget_shares"] == {"rank": 1.0}
    with pytest.raises(ValueError, match="metrics="):
        _ = acc_only.roc_auc
    with pytest.raises(ValueError, match="metrics="):
        acc_only.confusion_matrix()
    with pytest.raises(ValueError, match="metrics must be names"):
        fe.evaluate_multiclass(fed, fe.DistributedDP(1.0), metrics=["auc"])


def test_weighted_sensitivity_is_stated_and_attained() -> None:
    """L1 = Σ r_k m_k over the parts; one added example moves exactly that many integer units."""
    sk = MulticlassSketch(4, 8, 4, kinds=("confusion", "one_vs_rest", "rank"),
                          split_one_vs_rest=True, weights=(3, 2, 5, 1))  # fmt: skip
    s = sk.sensitivity(unit="example", neighbouring="add_remove", examples_per_unit=1,
                       layout="whole")  # fmt: skip
    assert s.l1 == pytest.approx(3 + 2 * 3 + 5 + 1)
    assert [p.budget_share for p in s.parts] == pytest.approx(np.array([3, 6, 5, 1]) / 15)
    p, y = _probs(40, 4, 12)
    z = np.zeros(40, dtype=np.int64)
    assert np.abs(sk.encode(p, y, z) - sk.encode(p[:39], y[:39], z[:39])).sum() == 15
    with pytest.raises(ValueError, match="layout 'whole'"):
        sk.sensitivity(unit="example", neighbouring="add_remove", examples_per_unit=1,
                       layout="assign")  # fmt: skip


def test_plan_multiclass_from_public_inputs() -> None:
    """More clients or a declared size: finer bins and smaller predicted errors; fe.plan_multiclass."""
    small = fe.plan_multiclass(fe.DistributedDP(1.0), n_classes=10, n_clients=100)
    large = fe.plan_multiclass(fe.DistributedDP(1.0), n_classes=10, n_clients=100,
                               n_examples=100_000)  # fmt: skip
    assert large.n_bins >= small.n_bins and large.ece_bins >= small.ece_bins
    assert all(large.predicted_error[k] < small.predicted_error[k] for k in small.predicted_error)
    assert sum(large.budget_shares.values()) == pytest.approx(1.0)
    auc = fe.plan_multiclass("distdp", epsilon=1.0, n_classes=10, n_clients=100,
                             metrics=["roc_auc"])  # fmt: skip
    assert set(auc.predicted_error) == {"roc_auc", "ece_classwise"}
    assert auc.predicted_error["roc_auc"] < small.predicted_error["roc_auc"]
    ldp = fe.plan_multiclass(fe.LocalDP(5.0), n_classes=10, n_clients=100, metrics=["accuracy"])
    assert ldp.weights is None and ldp.kinds == ("rank",)


def test_repr_is_one_short_line_without_arrays() -> None:
    p, y = _probs(1500, 3, 9)
    ev = fe.evaluate(fe.Federation.from_arrays(p, y, kind="probabilities"), fe.SecureAggregation())
    text = repr(ev)
    assert "\n" not in text and len(text) <= 160 and "[" not in text, text
    assert text.startswith(f"MulticlassEvaluation(accuracy={ev.accuracy:.4f}")
    assert "n_classes=3" in text and "unit='none'" in text
    ev.standard_errors  # noqa: B018 - once computed, the repr shows them
    assert f"roc_auc={ev.roc_auc:.4f} ± 0" in repr(ev)


def test_cli_compare_exact_for_several_score_columns(
    multiclass_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 29: --compare-exact worked for binary tasks only. Under SA each exact value is
    within the release's stated bound (exact counts; only the bins move a value)."""
    out = tmp_path / "rep"
    code = main(
        ["evaluate", str(multiclass_csv), "--score", "p0", "p1", "p2", "p3", "--label", "y",
         "--client", "c", "--privacy", "sa", "--out", str(out), "--json", "--compare-exact"]
    )  # fmt: skip
    assert code == 0
    payload = json.loads(capsys.readouterr().out)
    exact, released = payload["exact"], payload["summary"]
    bounds = released["bounds"]
    assert set(exact) >= {"accuracy", "macro_f1", "roc_auc", "ece_top_label", "log_loss"}
    for key in ("accuracy", "balanced_accuracy", "macro_f1", "top_2_accuracy"):
        value = released["top_k_accuracy"]["2"] if key == "top_2_accuracy" else released[key]
        assert exact[key] == pytest.approx(value, abs=1e-12), key
    for key, bound in (("roc_auc", "roc_auc"), ("ece_top_label", "ece"), ("log_loss", "log_loss"),
                       ("brier", "brier")):  # fmt: skip
        assert abs(exact[key] - released[key]) <= bounds[bound] + 1e-12, key
    assert "|error|" in (out / "report.md").read_text()


def test_the_small_data_warning_reads_the_projected_parts_only() -> None:
    """Issue 28: an evaluation stays cheap until a metric is asked for; the warning's check
    computes steps 1-4 once (projected), not their linear twin (a metric's bias term); and
    when the warning is ignored the check does not run at all."""
    p = np.array([[0.8, 0.2], [0.3, 0.7], [0.6, 0.4], [0.1, 0.9]])
    fed = fe.Federation.from_arrays(p, np.array([0, 1, 1, 0]), np.arange(4), kind="probabilities")
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        ev = fe.evaluate(fed, fe.DistributedDP(1.0), rng=0)
        assert any(w.category is fe.SmallDataWarning for w in shown)
        assert "_projected" in ev.__dict__ and "_linear" not in ev.__dict__
        _ = ev.standard_errors
    assert "_linear" in ev.__dict__
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("ignore")
        quiet = fe.evaluate(fed, fe.DistributedDP(1.0), rng=0)
    assert shown == [] and "_projected" not in quiet.__dict__
    assert quiet.accuracy == ev.accuracy  # the same release, computed when asked


def _delta_method_ses(fed: fe.Federation, model: Any, seed: int, groups: Any) -> dict[str, Any]:
    """The table metrics' SEs of one release, with the delta method's grouping replaced."""
    import fedeval.multiclass_evaluation as mce

    original = mce._sum_only_groups
    try:
        if groups is not None:
            mce._sum_only_groups = groups  # type: ignore[assignment]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            ev = fe.evaluate(fed, model, rng=seed)
            ses = dict(ev.standard_errors)
    finally:
        mce._sum_only_groups = original  # type: ignore[assignment]
    return {k: np.asarray(v, dtype=np.float64) for k, v in ses.items() if "auc" not in k}


def _three_classes(n: int, seed: int) -> fe.Federation:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    z = rng.normal(0.0, 1.0, (n, 3))
    z[np.arange(n), y] += 1.5
    return fe.Federation.from_arrays(softmax(z), y, np.arange(n) // 10, kind="probabilities")


@pytest.mark.parametrize(
    ("fed", "model", "seed"),
    [
        (_ten_classes(), fe.DistributedDP(1.0), 3),
        (_ten_classes(), fe.LocalDP(5.0), 1),
        (_three_classes(20_000, 0), fe.DistributedDP(1.0), 0),
        (_three_classes(3_000, 1), fe.DistributedDP(0.5), 2),
    ],
    ids=["distdp-small", "ldp", "distdp-3-classes", "distdp-clipping"],
)
def test_grouped_delta_method_equals_the_per_coordinate_one(
    fed: fe.Federation, model: Any, seed: int
) -> None:
    """One central difference per sum-only row gives every coordinate's SE (issue 28).

    The pipeline reads a one-vs-rest row and a confidence row only through
    its sum, so each member's slope is the row's and the grouped variance is
    exact; what remains is the central differences' truncation error,
    O((h/T)²) relative with h = 10⁻³ noise SDs and T a class total, far
    below 10⁻⁶. A grouping that merges cells read one by one (a loss
    histogram's) must change the SEs: the comparison can fail.
    """
    import fedeval.multiclass_evaluation as mce

    sum_only_groups = mce._sum_only_groups
    grouped = _delta_method_ses(fed, model, seed, None)
    per_coordinate = _delta_method_ses(fed, model, seed, lambda sk: np.arange(sk.length))
    assert grouped.keys() == per_coordinate.keys()
    for key in grouped:
        np.testing.assert_allclose(grouped[key], per_coordinate[key], rtol=1e-6, atol=1e-12)

    def loss_rows_too(sk: MulticlassSketch) -> Any:
        groups = sum_only_groups(sk)
        start = sk.kind_offsets()["log_loss"]
        groups[start : start + sk.loss_bins] = start
        return groups

    wrong = _delta_method_ses(fed, model, seed, loss_rows_too)
    assert not np.allclose(wrong["log_loss"], per_coordinate["log_loss"], rtol=1e-3)
