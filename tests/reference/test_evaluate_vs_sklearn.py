"""fe.evaluate against scikit-learn: AUC, ROC/PR curves and curve conventions."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import (
    average_precision_score,
    precision_recall_curve,
    roc_auc_score,
    roc_curve,
)
from sklearn.model_selection import cross_val_predict
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import fedeval as fe
from fedeval.metrics.area_error import pr_area_error, roc_area_error


@pytest.fixture(scope="module")
def breast_cancer_population() -> tuple[np.ndarray, np.ndarray]:
    """Bundled real data scored out-of-sample by logistic regression, replicated ×40."""
    x, y = load_breast_cancer(return_X_y=True)
    model = make_pipeline(StandardScaler(), LogisticRegression(C=0.05, max_iter=1000))
    s = cross_val_predict(model, x, y, cv=5, method="predict_proba")[:, 1]
    return np.tile(s, 40), np.tile(y, 40)


@pytest.mark.parametrize("data", ["breast_cancer_population", "generated"])
def test_sa_auc_matches_sklearn_within_bucketization_bound(
    data: str, request: pytest.FixtureRequest
) -> None:
    s, y = request.getfixturevalue(data)
    fed = fe.partition.iid(s, y, n_clients=500, rng=0)
    ev = fe.evaluate(fed, fe.SecureAggregation(), height=14)
    nb = ev.parameters["n_buckets"]
    # Lemma 3: worst-case error 1/(2B); the leaf grid adds at most one leaf's pairs.
    assert abs(ev.roc_auc - roc_auc_score(y, s)) <= 1 / (2 * nb)
    assert ev.roc_auc_se == 0.0
    assert ev.epsilon_spent == 0.0


def test_sa_curves_match_sklearn_within_area_error(
    generated: tuple[np.ndarray, np.ndarray],
) -> None:
    s, y = generated
    fed = fe.Federation.from_arrays(s, y)
    ev = fe.evaluate(fed, fe.SecureAggregation(), height=14, n_quantiles=1024, curve="quantile")
    fpr, tpr, thr = ev.roc_curve()
    f_ref, t_ref, _ = roc_curve(y, s)
    # Xu–Cormode Theorem 4.2: AE_ROC = O(1/Q); with Q = 1024 well below 2/Q.
    assert roc_area_error(fpr, tpr, f_ref, t_ref) < 2 / 1024
    p, r, thr_pr = ev.precision_recall_curve()
    p_ref, r_ref, _ = precision_recall_curve(y, s)
    assert pr_area_error(p, r, p_ref, r_ref) < 5e-3
    assert abs(ev.average_precision - average_precision_score(y, s)) < 5e-3


def test_curve_conventions_follow_sklearn(generated: tuple[np.ndarray, np.ndarray]) -> None:
    s, y = generated
    ev = fe.evaluate(fe.Federation.from_arrays(s, y), fe.DistributedDP(epsilon=1.0), rng=1)
    fpr, tpr, thr = ev.roc_curve()
    assert fpr.shape == tpr.shape == thr.shape
    assert thr[0] == np.inf and np.all(np.diff(thr) < 0)
    assert (
        fpr[0] == 0 and tpr[0] == 0 and fpr[-1] == pytest.approx(1) and tpr[-1] == pytest.approx(1)
    )
    assert np.all(np.diff(fpr) >= 0) and np.all(np.diff(tpr) >= 0)
    p, r, t = ev.precision_recall_curve()
    assert p.shape == r.shape == (t.size + 1,)
    assert np.all(np.diff(t) > 0)
    assert p[-1] == 1 and r[-1] == 0 and np.all(np.diff(r) <= 0)
    assert np.all((p >= 0) & (p <= 1))


@pytest.mark.parametrize("max_fpr", [0.01, 0.1, 0.5, 1.0])
def test_sa_partial_auc_matches_sklearn_within_the_binning_bound(
    max_fpr: float, breast_cancer_population: tuple[np.ndarray, np.ndarray]
) -> None:
    s, y = breast_cancer_population
    ev = fe.evaluate(fe.Federation.from_arrays(s, y), fe.SecureAggregation(), height=14)
    exact = roc_auc_score(y, s, max_fpr=max_fpr)
    # The released curve joins the bin-edge points linearly; the examples' staircase lies
    # in each bin's rectangle: the partial area is within the Lemma 3 bound plus half the
    # rectangle cut at max_fpr (≤ twice the bound), scaled by McClish's ½/(m − m²/2).
    scale = 1.0 if max_fpr == 1.0 else 0.5 / (max_fpr - max_fpr**2 / 2)
    tol = 2 * ev.roc_auc_bucketization_bound * scale
    assert abs(ev.partial_roc_auc(max_fpr) - exact) <= tol + 1e-12
    assert tol < 0.05  # the test has teeth: the leaves are fine against the data
