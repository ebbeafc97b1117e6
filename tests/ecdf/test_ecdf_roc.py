"""DP ROC curves from two private ECDFs (§5.1 of Barczewski et al. 2025).

Conventions (changed on purpose in the one-release pipeline): predict positive
when ``score >= t`` (scikit-learn's rule); thresholds are ``[inf, τ_{N-1}, ...,
τ_0]`` (decreasing); the two class releases are charged together and
``.receipt`` is their composition; the AUC is computed by the caller
(``sklearn.metrics.auc(fpr, tpr)``), no longer by a curve method.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from ecdf_closed_form import node_alpha, path_sum_pvalue
from scipy import stats
from sklearn.metrics import roc_curve

from fedeval.ecdf import dp_roc_curve, roc_l1_distance
from fedeval.ecdf.grid import check_grid
from fedeval.privacy.ledger import BudgetExceededError, BudgetLedger
from fedeval.privacy.models import DistributedDP
from fedeval.sketches.prefix_tree import count_below
from fedeval.sketches.tree import binary_height
from helpers import normal_scores


def test_threshold_rule_is_score_at_least_t_on_ties() -> None:
    # Worked example: scores on grid points, so ">=" and ">" differ at every threshold.
    scores = np.array([0.2, 0.5, 0.5, 0.8])
    y = np.array([0, 1, 0, 1])
    curve = dp_roc_curve(scores, y, [0.2, 0.5, 0.8], epsilon=1e9, rng=0, smoothing=None)
    np.testing.assert_array_equal(curve.thresholds, [np.inf, 0.8, 0.5, 0.2])
    # t = 0.8: TPR 1/2, FPR 0; t = 0.5: TPR 1, FPR 1/2; t = 0.2: everything positive.
    np.testing.assert_allclose(curve.tpr, [0.0, 0.5, 1.0, 1.0], atol=1e-9)
    np.testing.assert_allclose(curve.fpr, [0.0, 0.0, 0.5, 1.0], atol=1e-9)


def test_scores_above_the_grid_count_at_every_threshold() -> None:
    # A public grid need not cover unbounded scores: an example above τ_{N-1} is
    # predicted positive at every threshold t <= its score, as in scikit-learn.
    rng = np.random.default_rng(8)
    y = rng.integers(0, 2, 500)
    scores = rng.uniform(0.0, 2.0, 500) + 0.3 * y
    grid = np.linspace(0.0, 1.0, 11)
    curve = dp_roc_curve(scores, y, grid, epsilon=1e9, rng=0, smoothing=None)
    t = curve.thresholds[1:]
    tpr = [np.mean(scores[y == 1] >= x) for x in t]
    fpr = [np.mean(scores[y == 0] >= x) for x in t]
    np.testing.assert_allclose(curve.tpr[1:], tpr, atol=1e-6)
    np.testing.assert_allclose(curve.fpr[1:], fpr, atol=1e-6)


@pytest.mark.parametrize("norm", [1, 2])
def test_smoothed_curve_is_monotone_and_ends_at_the_corners(norm: int) -> None:
    scores, y = normal_scores(20_000, 1)
    grid = np.linspace(0, 1, 128)
    ledger = BudgetLedger(1.0)
    curve = dp_roc_curve(scores, y, grid, epsilon=1.0, rng=2, smoothing=norm, ledger=ledger)  # type: ignore[arg-type]
    assert np.all(np.diff(curve.fpr) >= 0) and np.all(np.diff(curve.tpr) >= 0)
    assert (curve.fpr[0], curve.tpr[0]) == (0.0, 0.0)
    assert (curve.fpr[-1], curve.tpr[-1]) == (1.0, 1.0)
    assert np.all(np.diff(curve.thresholds) < 0)
    assert ledger.spent_epsilon == pytest.approx(1.0)
    assert [e.epsilon for e in ledger.entries] == [0.5, 0.5]
    assert curve.receipt.epsilon_spent == pytest.approx(1.0)
    assert curve.epsilon == pytest.approx(1.0)
    fpr, tpr, _ = roc_curve(y, scores)
    assert roc_l1_distance(fpr, tpr, curve.fpr, curve.tpr) < 0.1


@pytest.mark.slow
@pytest.mark.statistical
# 15 examples per class against noise of standard deviation ~22: the released class totals
# are often below 1, which the rates warn about (the counts tested here are unaffected).
@pytest.mark.filterwarnings("ignore:the released total:RuntimeWarning")
def test_fast_and_faithful_paths_release_the_same_class_counts() -> None:
    """Each class release is the true counts below the points plus L + 1 discrete Laplace nodes.

    Half the budget per class: α = exp(-(ε/2)/(L + 1)), with L = ⌈log₂ N⌉ of the
    N released points (τ_1..τ_{N-1} and just above τ_N). χ² goodness of fit of
    both paths and both classes to that closed-form pmf, and the paths against
    each other.
    """
    scores, y = normal_scores(30, 3)
    grid = check_grid(np.linspace(0.0, 1.0, 8))
    points = np.append(grid[1:], np.inf)
    k = binary_height(points.size) + 1
    eps, trials, at = 1.0, 1000, 3
    alpha = node_alpha(eps / 2, k)
    exact = {c: count_below(scores[y == c], points)[at] for c in (0, 1)}
    samples: dict[tuple[str, int], np.ndarray] = {}
    for path in ("fast", "faithful"):
        errs: dict[int, list[float]] = {0: [], 1: []}
        for r in range(trials):
            curve = dp_roc_curve(
                scores,
                y,
                grid,
                epsilon=eps,
                rng=20_000 + r,
                smoothing=None,
                path=path,  # type: ignore[arg-type]
            )
            errs[0].append(curve.ecdf_negatives.counts[at] - exact[0])
            errs[1].append(curve.ecdf_positives.counts[at] - exact[1])
        for c in (0, 1):
            sample = np.asarray(errs[c]).astype(np.int64)
            assert path_sum_pvalue(sample, alpha, k) > 1e-4, (path, c)
            samples[path, c] = sample
    for c in (0, 1):
        assert stats.ks_2samp(samples["fast", c], samples["faithful", c]).pvalue > 1e-4
    # The reported variance is the closed form's.
    var_node = 2 * alpha / (1 - alpha) ** 2
    assert curve.ecdf_positives.count_variance == pytest.approx(k * var_node)
    assert math.isclose(curve.ecdf_negatives.count_variance, k * var_node)


def test_ledger_charges_both_classes_together_and_refuses_atomically() -> None:
    scores, y = normal_scores(200, 4)
    grid = np.linspace(0, 1, 16)
    ledger = BudgetLedger(1.5)
    dp_roc_curve(scores, y, grid, DistributedDP(0.8, neighbouring="replace"), rng=0, ledger=ledger)
    assert [e.epsilon for e in ledger.entries] == pytest.approx([0.4, 0.4])
    gen = np.random.default_rng(5)
    state = gen.bit_generator.state
    # 0.7 remain: the first class's 0.5 alone would fit, but both together do not.
    with pytest.raises(BudgetExceededError):
        dp_roc_curve(scores, y, grid, epsilon=1.0, rng=gen, ledger=ledger)
    assert len(ledger.entries) == 2 and ledger.spent_epsilon == pytest.approx(0.8)
    assert gen.bit_generator.state == state


def test_bad_inputs() -> None:
    scores, y = normal_scores(50)
    with pytest.raises(ValueError, match="0 or 1"):
        dp_roc_curve(scores, y + 1, [0.0, 1.0], epsilon=1.0)
    with pytest.raises(ValueError, match="length"):
        dp_roc_curve(scores, y[:-1], [0.0, 1.0], epsilon=1.0)
    with pytest.raises(ValueError, match="epsilon"):
        dp_roc_curve(scores, y, [0.0, 1.0], epsilon=-1.0)
    with pytest.raises(ValueError, match="NaN"):
        dp_roc_curve(np.where(np.arange(50) == 3, np.nan, scores), y, [0.0, 1.0], epsilon=1.0)
    with pytest.raises(ValueError, match="strictly increasing"):
        dp_roc_curve(scores, y, [0.0, 1.0, 0.5], epsilon=1.0)
    with pytest.raises(TypeError, match="exactly one"):
        dp_roc_curve(scores, y, [0.0, 1.0])
    with pytest.raises(ValueError, match="path"):
        dp_roc_curve(scores, y, [0.0, 1.0], epsilon=1.0, path="slow")  # type: ignore[arg-type]
