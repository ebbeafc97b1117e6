"""Multiclass evaluation under secure aggregation vs scikit-learn on ``load_digits`` (issue 17).

Logistic-regression probabilities (5-fold out-of-fold predictions), 100 clients
with Dirichlet(β = 0.5) label skew, fine leaves (the defaults without noise:
1024 probability bins, 1024 loss levels, 16 ECE bins). Expected values are
computed here by scikit-learn or directly from the probabilities; the
tolerances are the bounds the result states (``ev.bounds``, see
:mod:`fedeval.multiclass_evaluation`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from sklearn import metrics as skm
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_predict
from threadpoolctl import threadpool_limits

import fedeval as fe
from fedeval.data.partition import dirichlet

ECE_BINS = 16


@pytest.fixture(scope="module")
def digits() -> tuple[np.ndarray, np.ndarray, Any]:
    x, y = load_digits(return_X_y=True)
    # One BLAS thread: oversubscribed threads make this small fit take seconds.
    with threadpool_limits(1):
        probs = cross_val_predict(
            LogisticRegression(max_iter=2000), x / 16.0, y, cv=5, method="predict_proba"
        )
    fed = dirichlet(
        fe.Federation.from_arrays(probs, y, kind="probabilities"), n_clients=100, beta=0.5, rng=0
    )
    ev = fe.evaluate(fed, fe.SecureAggregation(), rng=0)
    # The federation reorders examples by client: compare on its own arrays.
    return fed.scores, fed.labels, ev


def _direct_ece(events: np.ndarray, p: np.ndarray) -> float:
    """Σ_m |Σ events − Σ p| / n over ECE_BINS equal-width left-closed bins (the grid's convention)."""
    m = np.minimum((p * ECE_BINS).astype(np.int64), ECE_BINS - 1)
    ev = np.bincount(m, weights=events, minlength=ECE_BINS)
    ps = np.bincount(m, weights=p, minlength=ECE_BINS)
    return float(np.abs(ev - ps).sum() / p.size)


def test_evaluate_dispatches_multiclass_and_spends_nothing(digits: Any) -> None:
    _, _, ev = digits
    assert isinstance(ev, fe.MulticlassEvaluation)
    assert ev.epsilon_spent == 0.0
    assert ev.parameters["n_bins"] == 1024 and ev.parameters["loss_bins"] == 1024


def test_confusion_matrix_and_threshold_metrics_exact(digits: Any) -> None:
    p, y, ev = digits
    pred = p.argmax(axis=1)
    np.testing.assert_array_equal(ev.confusion_matrix(), skm.confusion_matrix(y, pred))
    assert ev.accuracy == pytest.approx(skm.accuracy_score(y, pred), abs=1e-12)
    assert ev.balanced_accuracy == pytest.approx(skm.balanced_accuracy_score(y, pred), abs=1e-12)
    prec, rec, f1, _ = skm.precision_recall_fscore_support(y, pred)
    np.testing.assert_allclose(ev.precision, prec, atol=1e-12)
    np.testing.assert_allclose(ev.recall, rec, atol=1e-12)
    np.testing.assert_allclose(ev.f1, f1, atol=1e-12)
    assert ev.macro_f1 == pytest.approx(skm.f1_score(y, pred, average="macro"), abs=1e-12)
    assert ev.weighted_f1 == pytest.approx(skm.f1_score(y, pred, average="weighted"), abs=1e-12)
    for k in (1, 2, 3, 5):
        assert ev.top_k_accuracy(k) == pytest.approx(skm.top_k_accuracy_score(y, p, k=k), abs=1e-12)
    assert all(v == 0.0 for v in np.atleast_1d(ev.standard_errors["accuracy"]))


def test_ovr_auc_within_bucketization_bound(digits: Any) -> None:
    p, y, ev = digits
    bound = ev.bounds
    per_class = [skm.roc_auc_score(y == j, p[:, j]) for j in range(10)]
    assert np.all(np.abs(ev.roc_auc_per_class - per_class) <= bound["roc_auc_per_class"] + 1e-12)
    macro = skm.roc_auc_score(y, p, multi_class="ovr")
    assert abs(ev.roc_auc - macro) <= bound["roc_auc"] + 1e-12
    weighted = skm.roc_auc_score(y, p, multi_class="ovr", average="weighted")
    assert abs(ev.roc_auc_weighted - weighted) <= np.max(bound["roc_auc_per_class"]) + 1e-12
    assert bound["roc_auc"] < 1e-3  # the bound is informative at 1024 bins


def test_ece_within_bound_of_direct_computation(digits: Any) -> None:
    p, y, ev = digits
    bound = ev.bounds["ece"]
    assert bound == pytest.approx(0.5 / 1024)
    pred = p.argmax(axis=1)
    top = _direct_ece((pred == y).astype(float), p.max(axis=1))
    assert abs(ev.ece_top_label - top) <= bound + 1e-12
    classwise = np.mean([_direct_ece((y == j).astype(float), p[:, j]) for j in range(10)])
    assert abs(ev.ece_classwise - classwise) <= bound + 1e-12
    # The library's exact metrics (right-closed bins) agree within the same bound here.
    from fedeval.metrics.calibration_error import (
        classwise_calibration_error,
        top_label_calibration_error,
    )

    assert abs(ev.ece_top_label - top_label_calibration_error(p, y, n_bins=ECE_BINS)) <= bound
    assert abs(ev.ece_classwise - classwise_calibration_error(p, y, n_bins=ECE_BINS)) <= bound


def test_proper_scores_within_rounding_bound(digits: Any) -> None:
    p, y, ev = digits
    floor = ev.parameters["prob_floor"]
    p_true = np.maximum(p[np.arange(y.size), y], floor)
    assert ev.log_loss == pytest.approx(float(np.mean(-np.log(p_true))), abs=ev.bounds["log_loss"])
    assert ev.log_loss == pytest.approx(skm.log_loss(y, p), abs=ev.bounds["log_loss"] + 1e-3)
    onehot = np.eye(10)[y]
    brier = float(np.mean(np.square(p - onehot).sum(axis=1)))
    assert ev.brier_score == pytest.approx(brier, abs=ev.bounds["brier"])


def test_curves_in_sklearn_layout(digits: Any) -> None:
    p, y, ev = digits
    for j in (0, 8):
        fpr, tpr, thr = ev.roc_curve(j)
        assert thr[0] == np.inf and fpr[0] == 0 and tpr[0] == 0
        assert fpr[-1] == pytest.approx(1.0) and tpr[-1] == pytest.approx(1.0)
        assert np.all(np.diff(fpr) >= 0) and np.all(np.diff(tpr) >= 0) and np.all(np.diff(thr) < 0)
        # At every bin edge the rule p >= t is exact: the curve passes through sklearn's points.
        sk_fpr, sk_tpr, sk_thr = skm.roc_curve(y == j, p[:, j], drop_intermediate=False)
        for t, f, r in zip(thr[1:], fpr[1:], tpr[1:], strict=True):
            pos = p[:, j] >= t
            assert f == pytest.approx(np.mean(pos[y != j]))
            assert r == pytest.approx(np.mean(pos[y == j]))
        assert np.trapezoid(tpr, fpr) == pytest.approx(ev.roc_auc_per_class[j], abs=1e-12)
        prec, rec, pthr = ev.precision_recall_curve(j)
        assert prec[-1] == 1.0 and rec[-1] == 0.0 and prec.size == rec.size == pthr.size + 1
        assert np.all(np.diff(pthr) > 0) and np.all(np.diff(rec) <= 0)
        assert rec[0] == pytest.approx(1.0)
        sk_p, sk_r, _ = skm.precision_recall_curve(y == j, p[:, j])
        assert sk_p[-1] == prec[-1] and sk_r[-1] == rec[-1]
