"""The threshold-metric registry (metrics/confusion.py): every metric from one definition.

Issue 29 asked that adding a binary metric take at most two files; F1 was
added as one entry of ``THRESHOLD_METRICS`` and this test module. The generic
tests below cover any metric registered later without change.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, f1_score, precision_score, recall_score

import fedeval as fe
from fedeval.metrics.confusion import (
    THRESHOLD_METRICS,
    ConfusionCounts,
    exact_threshold_metrics,
    sampling_variance,
    threshold_metrics,
)

HEIGHT = 6
LEAVES = 2**HEIGHT


def _on_leaf_midpoints(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Scores at leaf midpoints, so that a release of height 6 has no bucketization error."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.35).astype(int)
    leaf = np.clip(np.round(rng.normal(0.35 + 0.3 * y, 0.18) * LEAVES - 0.5), 0, LEAVES - 1)
    return (leaf + 0.5) / LEAVES, y


@pytest.mark.parametrize("name", list(THRESHOLD_METRICS))
def test_each_gradient_is_the_derivative_of_its_value(name: str) -> None:
    """Central differences of ``value`` at random counts match ``gradient``."""
    metric = THRESHOLD_METRICS[name]
    rng = np.random.default_rng(1)
    base = rng.uniform(20, 500, size=(4, 50))
    analytic = metric.gradient(ConfusionCounts(*base))
    h = 1e-4
    for j in range(4):
        up, down = base.copy(), base.copy()
        up[j] += h
        down[j] -= h
        numeric = (metric.value(ConfusionCounts(*up)) - metric.value(ConfusionCounts(*down))) / (
            2 * h
        )
        np.testing.assert_allclose(analytic[j], numeric, rtol=1e-5, atol=1e-12)


def test_exact_values_match_scikit_learn() -> None:
    s, y = _on_leaf_midpoints(3_000, 2)
    for t in (0.3, 0.5, 0.7):
        pred = (s >= t).astype(int)
        got = exact_threshold_metrics(s, y, t)
        assert got["f1"] == pytest.approx(f1_score(y, pred), abs=1e-12)
        assert got["precision"] == pytest.approx(precision_score(y, pred), abs=1e-12)
        assert got["recall"] == pytest.approx(recall_score(y, pred), abs=1e-12)
        assert got["accuracy"] == pytest.approx(accuracy_score(y, pred), abs=1e-12)
        assert got["positive_rate"] == pytest.approx(pred.mean(), abs=1e-12)


def test_f1_of_a_secure_aggregation_release_is_exact_with_zero_se() -> None:
    s, y = _on_leaf_midpoints(3_000, 3)
    ev = fe.evaluate(fe.Federation.from_arrays(s, y), fe.SecureAggregation(), height=HEIGHT)
    thresholds = np.array([0.25, 0.5, 0.75])  # leaf boundaries
    m = ev.at_threshold(thresholds)
    expected = [f1_score(y, (s >= t).astype(int)) for t in thresholds]
    np.testing.assert_allclose(m.f1, expected, atol=1e-12)
    np.testing.assert_array_equal(m.f1_se, 0.0)
    assert m.as_dict()["f1"] == pytest.approx(expected)


def test_f1_standard_error_matches_the_spread_over_fresh_noise() -> None:
    """The delta-method SE of F1 against its SD over 400 independent DistDP releases.

    With R = 400 draws the sample SD has relative standard deviation about
    1/√(2R) = 3.5 %; the band is 4 of those (14 %), plus 5 % for the delta
    method's linearisation of a ratio of counts in the thousands.
    """
    s, y = _on_leaf_midpoints(4_000, 4)
    fed = fe.Federation.from_arrays(s, y)
    t = np.array([0.5])
    gen = np.random.default_rng(5)  # a simulation: seeded noise is intended
    draws, ses = [], []
    for _ in range(400):
        ev = fe.evaluate(fed, fe.DistributedDP(epsilon=0.5), height=HEIGHT, rng=gen)
        m = threshold_metrics(ev.tree, t)
        draws.append(float(m.f1[0]))
        ses.append(float(m.f1_se[0]))
    sd = float(np.std(draws, ddof=1))
    se = float(np.mean(ses))
    assert abs(se / sd - 1) < 4 / np.sqrt(2 * 400) + 0.05, (se, sd)
    # And the estimate is unbiased to well within one SE of the mean.
    exact = f1_score(y, (s >= 0.5).astype(int))
    assert abs(np.mean(draws) - exact) < 4 * sd / np.sqrt(400)


def test_every_registered_metric_reaches_results_json(tmp_path: Path) -> None:
    """The report's JSON and tables read the registry: no third file to edit."""
    s, y = _on_leaf_midpoints(1_000, 6)
    ev = fe.evaluate(fe.Federation.from_arrays(s, y), fe.SecureAggregation(), height=HEIGHT)
    paths = fe.report.write_report({"SA": ev}, tmp_path / "r", thresholds=(0.5,))
    (row,) = json.loads(paths["json"].read_text())["evaluations"]["SA"]["at_threshold"]
    for name in THRESHOLD_METRICS:
        assert row[name]["estimate"] == pytest.approx(float(getattr(ev.at_threshold(0.5), name)))
    assert "F1" in paths["markdown"].read_text()


def test_sampling_variance_is_binomial_for_proportions_and_right_for_f1() -> None:
    """Var from sampling the examples: p(1 − p)/n for recall; for F1, the spread over
    600 fresh samples of 3,000 examples (relative SD of a sample SD ≈ 1/√1200 ≈ 2.9 %;
    band 4 of those plus 3 % for the linearisation)."""
    c = ConfusionCounts(*(np.array([v]) for v in (300.0, 120.0, 80.0, 500.0)))
    recall = 300 / 380
    assert sampling_variance(THRESHOLD_METRICS["recall"], c)[0] == pytest.approx(
        recall * (1 - recall) / 380
    )
    rng = np.random.default_rng(8)
    f1s, variances = [], []
    for _ in range(600):
        s, y = _on_leaf_midpoints(3_000, int(rng.integers(2**31)))
        pred = s >= 0.5
        counts = ConfusionCounts(
            *(
                np.array([float(np.count_nonzero(mask))])
                for mask in (pred & (y == 1), pred & (y == 0), ~pred & (y == 1), ~pred & (y == 0))
            )
        )
        f1s.append(float(THRESHOLD_METRICS["f1"].value(counts)[0]))
        variances.append(float(sampling_variance(THRESHOLD_METRICS["f1"], counts)[0]))
    ratio = np.sqrt(np.mean(variances)) / np.std(f1s, ddof=1)
    assert abs(ratio - 1) < 4 / np.sqrt(2 * 600) + 0.03, ratio
