"""Dense curves: AUC = curve area, sklearn agreement without noise, no noise-made PR points,
closed-form standard errors against the bootstrap and the old covariance."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest
from sklearn.metrics import (
    average_precision_score,
    precision_recall_curve,
    roc_auc_score,
    roc_curve,
)

import fedeval as fe
from fedeval import evaluation
from fedeval.metrics import dense
from fedeval.metrics.area_error import pr_area_error, roc_area_error
from fedeval.metrics.confusion import threshold_metrics
from fedeval.metrics.dense import (
    _shrinkage_transpose,
    _split_variances,
    boundary_counts,
    dense_ap_se,
    dense_auc_se,
    effective_examples,
    wiener_levels,
)
from fedeval.postprocess.bootstrap import bootstrap_values
from fedeval.postprocess.tables import project_children_to_simplex, simplex_transpose
from fedeval.sketches.tree import prefix_leaf_weights


def _data(n: int = 20_000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.3).astype(np.int64)
    s = 1 / (1 + np.exp(-(rng.normal(0, 1, n) + 2.0 * (y - 0.5))))
    return s, y


PRIVACY = [fe.DistributedDP(epsilon=1.0), fe.LocalDP(epsilon=5.0)]


@pytest.mark.parametrize("privacy", PRIVACY, ids=lambda p: p.name)
@pytest.mark.parametrize("seed", range(3))
def test_auc_is_the_area_of_the_returned_curve(privacy: object, seed: int) -> None:
    s, y = _data()
    ev = fe.evaluate(fe.Federation.from_arrays(s, y), privacy, rng=seed)
    fpr, tpr, thr = ev.roc_curve()
    # Stated bound: equal up to floating-point rounding of the trapezoid sum.
    assert abs(ev.roc_auc - np.trapezoid(tpr, fpr)) <= 1e-12
    assert np.all(np.diff(fpr) >= 0) and np.all(np.diff(tpr) >= 0)
    assert (fpr[0], tpr[0], fpr[-1], tpr[-1]) == (0.0, 0.0, 1.0, 1.0)
    assert np.all(np.diff(thr) < 0)
    # No point of precision 0 at recall 0 under noise (only the final (1, 0) sentinel at recall 0).
    p, r, _ = ev.precision_recall_curve()
    assert np.all(r[:-1] > 0) and (p[-1], r[-1]) == (1.0, 0.0)
    assert ev.average_precision == pytest.approx(-np.sum(np.diff(r) * p[:-1]), abs=1e-12)


def test_secure_aggregation_matches_sklearn_within_the_bucketization_bound() -> None:
    s, y = _data()
    ev = fe.evaluate(fe.Federation.from_arrays(s, y), fe.SecureAggregation(), height=12)
    assert ev.counts.level == 12  # no noise: the leaf level
    bound = ev.roc_auc_bucketization_bound
    assert abs(ev.roc_auc - roc_auc_score(y, s)) <= bound
    f_ref, t_ref, _ = roc_curve(y, s)
    fpr, tpr, _ = ev.roc_curve()
    # Each point is exact at a leaf edge; within a leaf the chord errs by at most the leaf's share.
    assert roc_area_error(fpr, tpr, f_ref, t_ref) < 2 * bound + 1e-3
    p_ref, r_ref, _ = precision_recall_curve(y, s)
    p, r, _ = ev.precision_recall_curve()
    assert pr_area_error(p, r, p_ref, r_ref) < 5e-3
    assert ev.average_precision == pytest.approx(average_precision_score(y, s), abs=5e-3)
    assert ev.roc_auc_se == 0.0 and ev.average_precision_se == 0.0


@pytest.mark.statistical
@pytest.mark.parametrize("privacy", PRIVACY, ids=lambda p: p.name)
def test_delta_method_agrees_with_bootstrap(privacy: object) -> None:
    """Median over 5 releases of bootstrap SD / delta-method SE, for the AUC and the AP.

    150 replicates: one bootstrap SD has relative error ~ 1/sqrt(2·149) ≈ 6 %. The
    delta method linearises the monotone projection and the ratio of noisy counts;
    for the AUC one release's ratio is 0.9-1.0, for the AP it spreads 0.5-1.2 from
    release to release (the AP's curvature at the noisy top of the ranking), so
    the claim tested is the median over releases: within [0.6, 1.25].
    """
    s, y = _data()
    ratios: dict[str, list[float]] = {"auc": [], "ap": []}
    for seed in range(5, 10):
        ev = fe.evaluate(fe.Federation.from_arrays(s, y), privacy, rng=seed)
        tree = ev.tree
        level = ev.counts.level

        def auc(t: object, level: int = level) -> float:
            return fe.metrics.roc_auc_score(t, level=level)

        def ap(t: object, level: int = level) -> float:
            return fe.metrics.average_precision_score(t, level=level)

        for name, stat, delta in (
            ("auc", auc, dense_auc_se(tree, ev.counts)),
            ("ap", ap, dense_ap_se(tree, ev.counts)),
        ):
            values = np.asarray(bootstrap_values(tree, stat, replicates=150, rng=1))
            assert delta > 0
            ratios[name].append(float(np.std(values, ddof=1)) / delta)
    for name, r in ratios.items():
        assert 0.6 <= float(np.median(r)) <= 1.25, (name, r)


def test_threshold_standard_errors_equal_the_full_covariance() -> None:
    """The O(h) moments give what the (k+1)² covariance of the old code gave."""
    s, y = _data(5_000)
    ev = fe.evaluate(fe.Federation.from_arrays(s, y), fe.DistributedDP(epsilon=1.0), rng=2)
    tree = ev.tree
    thr = np.linspace(0.05, 0.95, 19)
    got = threshold_metrics(tree, thr)
    r, frac = tree.spec.grid.locate(thr)
    n = tree.spec.n_leaves
    below = prefix_leaf_weights(r, frac, n)
    q = np.vstack([below, np.ones((1, n))])
    cov = tree.leaf_query_covariance(q, 1)
    big_p = float(tree.totals()[1])
    # The gradient is taken at the reported (clamped) counts: fn = clip(X, 0, P).
    x = np.clip(below @ tree.leaves[1], 0.0, big_p)
    grad = np.zeros((thr.size, thr.size + 1))
    grad[np.arange(thr.size), np.arange(thr.size)] = -1 / big_p
    grad[:, -1] = x / big_p**2
    expected = np.sqrt(np.einsum("ij,jk,ik->i", grad, cov, grad))
    np.testing.assert_allclose(got.recall_se, expected, rtol=1e-9)


def test_standard_errors_are_never_zero_under_dp_even_at_auc_one() -> None:
    # Perfectly separated scores: the curve is degenerate, the SE must not be.
    rng = np.random.default_rng(0)
    y = np.r_[np.zeros(300, int), np.ones(300, int)]
    s = np.r_[rng.uniform(0, 0.4, 300), rng.uniform(0.6, 1, 300)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(5):
            ev = fe.evaluate(
                fe.Federation.from_arrays(s, y), fe.DistributedDP(epsilon=1.0), rng=seed
            )
            assert ev.roc_auc_se > 0 and ev.average_precision_se > 0
            assert ev.roc_auc_sampling_se >= 0


def test_uncertainty_reports_both_sources() -> None:
    s, y = _data()
    fed = fe.Federation.from_arrays(s, y)
    sa = fe.evaluate(fed, fe.SecureAggregation()).uncertainty()
    assert sa["roc_auc_privacy_se"] == 0 and sa["dominant"] == "sampling"
    # DeLong's variance on the exact scores (independent: placements from sorted scores);
    # the release's leaf bins tie nearby scores, which moves it by well under 2 %.
    pos, neg = np.sort(s[y == 1]), np.sort(s[y == 0])
    v10 = (np.searchsorted(neg, pos, "left") + np.searchsorted(neg, pos, "right")) / 2 / neg.size
    v01 = (
        1 - (np.searchsorted(pos, neg, "left") + np.searchsorted(pos, neg, "right")) / 2 / pos.size
    )
    exact = np.sqrt(np.var(v10, ddof=1) / pos.size + np.var(v01, ddof=1) / neg.size)
    assert sa["roc_auc_sampling_se"] == pytest.approx(exact, rel=0.02)
    ldp = fe.evaluate(fed, fe.LocalDP(epsilon=1.0), rng=0).uncertainty()
    assert ldp["dominant"] == "privacy noise" and ldp["roc_auc_privacy_se"] > 0


def test_quantile_method_is_kept() -> None:
    s, y = _data(5_000)
    ev = fe.evaluate(
        fe.Federation.from_arrays(s, y), fe.DistributedDP(epsilon=1.0), rng=0, curve="quantile"
    )
    f, t, _ = ev.roc_curve()
    ref = fe.metrics.roc_curve(ev.tree, method="quantile", n_quantiles=ev.parameters["n_quantiles"])
    np.testing.assert_array_equal(f, ref[0])
    assert boundary_counts(ev.tree, 1).level == 1


def _breast_cancer_scores() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_predict
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x, y = load_breast_cancer(return_X_y=True)
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    s = cross_val_predict(model, x, y, cv=5, method="predict_proba")[:, 1]
    return s, y


def test_small_data_warns_with_numbers_and_never_raises() -> None:
    """Issue 13: 50 rows of breast_cancer under LDP ε = 1 gave an exception."""
    s, y = _breast_cancer_scores()
    idx = np.random.default_rng(0).choice(y.size, 50, replace=False)
    fed = fe.Federation.from_arrays(s[idx], y[idx])
    for seed in range(20):
        with pytest.warns(
            fe.SmallDataWarning, match="AUC standard error|released class count|effective"
        ) as record:
            ev = fe.evaluate(fed, fe.LocalDP(epsilon=1.0), rng=seed)
        message = str(next(w.message for w in record if w.category is fe.SmallDataWarning))
        assert "released class totals" in message
        for value, se in (
            (ev.roc_auc, ev.roc_auc_se),
            (ev.average_precision, ev.average_precision_se),
        ):
            if ev.defined:
                assert 0.0 <= value <= 1.0 and 0.0 < se <= 0.5
            else:
                assert np.isnan(value)
        _ = ev.roc_curve(), ev.precision_recall_curve(), ev.roc_band(), ev.pr_band()
        _ = ev.at_threshold(np.linspace(0, 1, 5)), ev.summary()


def test_no_warning_when_the_release_is_precise() -> None:
    """breast_cancer on 57 clients, DistDP ε = 1: the AUC's SE is about 0.01, so no warning.

    The planner-based warning fired here (it planned for M = 57 public examples
    and predicted an AUC error of 1.21); the warning now reads the release's own
    standard error.
    """
    s, y = _breast_cancer_scores()
    fed = fe.Federation.from_arrays(s, y, np.arange(y.size) % 57)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        warnings.simplefilter("ignore", fe.SeededRandomnessWarning)  # a simulation's seed
        ev = fe.evaluate(fed, fe.DistributedDP(epsilon=1.0), rng=1033)
    assert ev.roc_auc_se < evaluation.AUC_ERROR_TOLERANCE


@pytest.mark.parametrize("privacy", PRIVACY, ids=lambda p: p.name)
def test_bands_cover_the_curve_and_match_the_bootstrap(privacy: object) -> None:
    s, y = _data()
    fed = fe.Federation.from_arrays(s, y)
    ev = fe.evaluate(fed, privacy, rng=3)
    boot = fe.evaluate(fed, privacy, rng=3, standard_errors="bootstrap", bootstrap_replicates=100)
    grid, lo, hi = ev.roc_band(level=0.9)
    _, blo, bhi = boot.roc_band(level=0.9)
    fpr, tpr, _ = ev.roc_curve()
    mid = np.interp(grid, fpr, tpr)
    assert np.all(lo <= mid + 1e-12) and np.all(mid <= hi + 1e-12)
    inner = (grid > 0.05) & (grid < 0.95)
    # Widths agree on average within a factor 2 (delta method vs 100 bootstrap replicates).
    ratio = np.mean((hi - lo)[inner]) / np.mean((bhi - blo)[inner])
    assert 0.5 < ratio < 2.0
    _, plo, phi = ev.pr_band()
    assert np.all(plo <= phi) and np.any(phi > plo)


def test_threshold_metrics_with_no_positive_class_total_give_nan_not_an_exception() -> None:
    """Both released class totals clamped to 0 (LDP on 50 rows can do that): accuracy is NaN.

    ``threshold_metrics`` divided a Python float by the clamped total
    n⁺ + n⁻ = 0 for the accuracy's standard error and raised ZeroDivisionError.
    """
    from dataclasses import replace

    s, y = _data(200)
    tree = fe.evaluate(fe.Federation.from_arrays(s, y), fe.DistributedDP(1.0), rng=0).tree
    h = tree.spec.height
    # every leaf −1: a consistent tree whose class totals are −2^h
    levels = tuple(np.full_like(lv, -float(2 ** (h - k))) for k, lv in enumerate(tree.levels, 1))
    negative = replace(tree, levels=levels, consistent_=True)
    got = threshold_metrics(negative, np.linspace(0, 1, 5))
    assert got.positives == 0.0 and got.negatives == 0.0
    for x in (got.accuracy, got.accuracy_se, got.recall, got.recall_se, got.fpr_se):
        assert np.all(np.isnan(x))


def test_monotone_projection_is_sklearns_isotonic_regression() -> None:
    """The projection calls scipy's PAVA and clips, as sklearn's isotonic_regression does."""
    from sklearn.isotonic import isotonic_regression

    from fedeval.metrics.dense import _monotone_prefix

    rng = np.random.default_rng(3)
    for _ in range(50):
        total = float(rng.integers(5, 500))
        counts = rng.random(40) * total / 40 + rng.normal(0, total / 20, 40)  # noisy bins
        below = np.concatenate(([0.0], np.cumsum(counts)))
        got = _monotone_prefix(counts, total)
        ref = isotonic_regression(below[1:-1], y_min=0.0, y_max=total, increasing=True)
        np.testing.assert_array_equal(got, np.concatenate(([0.0], ref, [total])))


def test_wiener_shrinkage_keeps_totals_and_leaves_exact_counts_alone() -> None:
    """Shrinking a split moves mass between children only; without noise nothing is shrunk."""
    s, y = _data(5_000)
    fed = fe.Federation.from_arrays(s, y)
    exact = fe.evaluate(fed, fe.SecureAggregation(), height=8).tree
    bins, shrink = wiener_levels(exact, 8)
    assert shrink is None and np.array_equal(bins, exact.levels[-1])
    tree = fe.evaluate(fed, fe.LocalDP(epsilon=5.0), height=8, rng=0).tree
    bins, shrink = wiener_levels(tree, 8)
    assert shrink is not None
    np.testing.assert_allclose(bins.sum(axis=1), tree.levels[0].sum(axis=1), rtol=1e-12)
    # Splits within the noise are dropped (s = 0) somewhere at the leaf level, never all.
    s_leaf = shrink[1].levels[-1][2]
    assert 0 < np.mean(s_leaf == 0) < 1 and np.all((s_leaf >= 0) & (s_leaf <= 1))


@pytest.mark.parametrize("branching", [2, 3])
def test_shrunk_levels_are_non_negative_splits_of_the_released_total(branching: int) -> None:
    """Every level of the shrunk tree is >= 0 and sums to the released class total.

    Fails without the non-negative split: on this LDP release the Wiener-shrunk
    leaves of both classes go below 0 (noise in regions with few examples).
    """
    s, y = _data(5_000)
    tree = fe.evaluate(
        fe.Federation.from_arrays(s, y),
        fe.LocalDP(epsilon=5.0),
        height=6,
        branching=branching,
        rng=0,
    ).tree
    totals = tree.levels[0].sum(axis=1)
    assert np.all(totals > 0)
    for level in range(1, tree.height + 1):
        bins, _ = wiener_levels(tree, level)
        assert bins.min() >= 0.0
        np.testing.assert_allclose(bins.sum(axis=1), totals, rtol=1e-12)


def _closest_non_negative_split(v: np.ndarray) -> np.ndarray:
    """Brute force over the kept sets K: w_K = v_K + (sum of the rest)/|K|, the nearest feasible."""
    total = v.sum()
    if total <= 0:
        return np.zeros_like(v)
    best, best_d = None, np.inf
    for mask in range(1, 2**v.size):
        keep = np.array([(mask >> i) & 1 for i in range(v.size)], dtype=bool)
        w = np.where(keep, v + v[~keep].sum() / keep.sum(), 0.0)
        if w.min() >= -1e-12 and np.sum((w - v) ** 2) < best_d:
            best, best_d = w, np.sum((w - v) ** 2)
    assert best is not None
    return best


@pytest.mark.parametrize("b", [2, 3, 4, 5])
def test_project_children_to_simplex_is_the_closest_non_negative_split(b: int) -> None:
    rng = np.random.default_rng(b)
    rows = rng.normal(0.5, 2.0, size=(300, b))
    rows[:20] = np.abs(rows[:20])  # all positive: unchanged
    got, kept = project_children_to_simplex(rows)
    want = np.array([_closest_non_negative_split(r) for r in rows])
    np.testing.assert_allclose(got, want, atol=1e-12)
    np.testing.assert_array_equal(got[:20], rows[:20])
    np.testing.assert_array_equal(kept, got > 0)


@pytest.mark.parametrize("privacy", PRIVACY, ids=lambda p: p.name)
def test_shrinkage_transpose_is_the_derivative(privacy: object) -> None:
    """The delta method's reverse pass through the shrinkage equals a finite difference.

    Perturb the consistent leaves by t·δ (all levels recomputed as their sums, so the
    tree stays consistent); g·bins(t) is piecewise smooth in t, and at t = 1e-6 the
    central difference matches the linear query's weights·δ to ~1e-6 relative
    (no shrink factor or clipped child crosses its kink for so small a step:
    tolerance 1e-4). The release clips children in the non-negative split, so the
    reverse pass through it is exercised too (checked).
    """
    s, y = _data(5_000)
    tree = fe.evaluate(fe.Federation.from_arrays(s, y), privacy, height=7, rng=1).tree
    level, c = 6, 1
    rng = np.random.default_rng(0)
    g = rng.normal(size=tree.branching**level)
    delta = rng.normal(size=tree.spec.n_leaves)
    _, shrink = wiener_levels(tree, level)
    assert shrink is not None
    assert not all(step[4].all() for step in shrink[c].levels)
    weights = _shrinkage_transpose(shrink[c], g, tree.spec.n_leaves, tree.branching)

    def value(t: float) -> float:
        leaves = np.array(tree.levels[-1], dtype=np.float64)
        leaves[c] += t * delta
        levels = []
        for lv in range(1, tree.height + 1):
            span = tree.branching ** (tree.height - lv)
            levels.append(leaves.reshape(2, -1, span).sum(axis=2))
        return float(g @ wiener_levels(replace(tree, levels=tuple(levels)), level)[0][c])

    t = 1e-6
    fd = (value(t) - value(-t)) / (2 * t)
    assert fd == pytest.approx(float(weights @ delta), rel=1e-4)


def test_split_variances_equal_the_direct_leaf_query_on_a_homogeneous_tree() -> None:
    """V_l − V_{l−1}/b² (the closed form of _split_variances) equals the variance of the
    deviation query child − parent/b computed directly on the consistent tree (DistDP:
    one noise variance per level, so the identity is exact; tolerance: rounding)."""
    s, y = _data(5_000)
    tree = fe.evaluate(fe.Federation.from_arrays(s, y), PRIVACY[0], height=8, rng=0).tree
    b, n, h = tree.branching, tree.spec.n_leaves, tree.height
    for c in (0, 1):
        got = _split_variances(tree, c, h)
        for lv in range(1, h + 1):
            span = b ** (h - lv)
            w = np.zeros(n)
            w[:span] += 1.0
            w[: span * b] -= 1.0 / b
            want = float(tree.leaf_query_variance(w[None, :], c)[0])
            assert got[lv - 1] == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize(
    "privacy",
    [fe.DistributedDP(epsilon=1.0), fe.LocalDP(epsilon=5.0), fe.CentralDP(epsilon=0.5)],
    ids=["distdp", "ldp", "central"],
)
def test_the_warnings_raw_screen_bounds_the_se_and_the_effective_examples(privacy) -> None:
    """Issue 28: the warning skips the SE when the raw tree's O(height) bound settles it;
    the bound must then really be above the SE, and the floor below the effective examples."""
    settled = 0
    for n, seed in [(64, 0), (300, 1), (2_000, 2), (20_000, 3), (200_000, 4)]:
        rng = np.random.default_rng(seed)
        s = rng.beta(2, 2, n)
        y = (rng.random(n) < s**2).astype(int)  # imbalanced: positives ~ 1/3
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ev = fe.evaluate(fe.Federation.from_arrays(s, y), privacy, rng=seed)
        bound, floor = evaluation._raw_noise_screen(ev.tree, ev.tree.totals())
        if not ev.defined:
            continue
        assert ev.roc_auc_se <= bound
        assert np.all(floor <= effective_examples(ev.tree) * (1 + 1e-12))
        settled += bound <= evaluation.AUC_ERROR_TOLERANCE
    assert settled >= 1  # the screen does settle the largest release


def _effective_examples_by_arrays(tree) -> np.ndarray:
    """effective_examples through the vectorised queries (two levels / two thresholds at once)."""
    out = np.zeros(2)
    totals = tree.totals()
    for c in (0, 1):
        t = float(totals[c])
        if not t > 0 or not tree.has_mass(cls=c):
            continue
        q = tree.quantiles([0.5, 0.25], cls=c)
        v, cov, vt = tree.prefix_moments(q, c)  # the array path: two thresholds
        var_f = max(float(v[0] - cov[0] + vt / 4.0), 0.0) / t**2
        out[c] = 1.0 / (1.0 / t + 4.0 * var_f)
    return out


@pytest.mark.parametrize(
    "privacy",
    [fe.SecureAggregation(), fe.DistributedDP(epsilon=1.0), fe.LocalDP(epsilon=5.0)],
    ids=["sa", "distdp", "ldp"],
)
def test_effective_examples_is_unchanged_by_the_scalar_path_and_its_cache(privacy) -> None:
    """Issue 28 (tiny releases): one median and one prefix take scalar paths and the result is
    cached per release; the numbers must equal the array route bit for bit, seed for seed."""
    for n, seed in [(3, 0), (20, 1), (64, 2), (100, 3), (2_000, 4)]:
        rng = np.random.default_rng(seed)
        s = rng.random(n)
        y = (rng.random(n) < s).astype(int)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ev = fe.evaluate(fe.Federation.from_arrays(s, y), privacy, rng=seed)
        want = _effective_examples_by_arrays(replace(ev.tree))  # a fresh tree: no caches
        first = effective_examples(ev.tree)
        first[:] = -1.0  # the caller's copy: the cache must not share it
        np.testing.assert_array_equal(effective_examples(ev.tree), want)
        np.testing.assert_array_equal(effective_examples(replace(ev.tree)), want)


def test_short_isotonic_regressions_equal_scipys_bit_for_bit() -> None:
    """Issue 28: short projections run a Python port of scipy's PAVA (no scipy.optimize import);
    it must return scipy's numbers exactly, ties and long pools included."""
    from scipy.optimize import isotonic_regression

    from fedeval.metrics.dense import _PAVA_IN_PYTHON_MAX, _isotonic, _pava

    rng = np.random.default_rng(11)
    for trial in range(400):
        n = int(rng.integers(1, _PAVA_IN_PYTHON_MAX + 1)) if trial % 4 else int(rng.integers(1, 9))
        y = np.cumsum(rng.normal(0.3, 1.0, n)) * rng.choice([1e-3, 1.0, 1e5])
        if trial % 3 == 0:
            y = np.round(y)  # ties
        if trial % 7 == 0:
            y = y[::-1].copy()  # one decreasing run: everything pools
        want = isotonic_regression(y).x
        np.testing.assert_array_equal(_isotonic(y), want)
        np.testing.assert_array_equal(np.array(_pava(y.tolist())), want)
    assert _pava([]) == []


def _shrinkage_transpose_before_issue_28(shrink, grad_bins, n_leaves, b, *, through_simplex=True):
    """The reverse pass as written before issue 28 (coefficients per call, np.repeat)."""
    g = np.asarray(grad_bins, dtype=np.float64)
    leaf_w = np.zeros(n_leaves)
    for dev, ss, s, k, kept in reversed(shrink.levels):
        gm = g.reshape(-1, b)
        if through_simplex:
            gm = simplex_transpose(gm, kept)
        with np.errstate(divide="ignore", invalid="ignore"):
            coef = np.where(s > 0, 2.0 * k / ss**2, 0.0)
        u = s[:, None] * gm + (coef * np.sum(dev * gm, axis=1))[:, None] * dev
        leaf_w += np.repeat(u.ravel(), n_leaves // u.size)
        g_parent_released = -u.sum(axis=1) / b
        g = gm.sum(axis=1) / b
        leaf_w += np.repeat(g_parent_released, n_leaves // g_parent_released.size)
    return leaf_w + float(g.sum())


@pytest.mark.parametrize(
    ("privacy", "height", "branching"),
    [
        (fe.DistributedDP(epsilon=1.0), 5, 2),
        (fe.LocalDP(epsilon=5.0), 4, 2),
        (fe.DistributedDP(epsilon=0.5), 3, 4),
        (fe.LocalDP(epsilon=2.0), 3, 3),
    ],
)
def test_shrinkage_transpose_is_unchanged_bit_for_bit(privacy, height, branching) -> None:
    """Issue 28: the reverse pass caches its coefficients and adds by broadcast views; every
    weight must equal the previous code's (kept above) exactly, through the simplex or not."""
    for n, seed in [(30, 0), (100, 1), (2_000, 2)]:
        rng = np.random.default_rng(seed)
        s = rng.random(n)
        y = (rng.random(n) < s).astype(int)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = fe.evaluate(
                fe.Federation.from_arrays(s, y),
                privacy,
                height=height,
                branching=branching,
                rng=seed,
            ).tree
        for level in range(1, height + 1):
            _, shrink = wiener_levels(tree, level)
            assert shrink is not None
            for c in (0, 1):
                g = rng.normal(size=branching**level)
                for through in (True, False):
                    args = (shrink[c], g, tree.spec.n_leaves, branching)
                    got = _shrinkage_transpose(*args, through_simplex=through)
                    want = _shrinkage_transpose_before_issue_28(*args, through_simplex=through)
                    np.testing.assert_array_equal(got, want)


def _random_binary_levels(rng: np.random.Generator, height: int) -> list[np.ndarray]:
    """Released-like levels of one class: consistent-ish counts with noise, negatives included."""
    leaves = rng.poisson(rng.uniform(0.0, 6.0), 2**height).astype(np.float64)
    leaves += rng.laplace(0.0, rng.choice([0.5, 2.0, 8.0]), leaves.size)
    if rng.random() < 0.2:
        leaves = np.round(leaves)  # ties and exact zeros
    out = [leaves]
    for _ in range(height - 1):
        out.append(out[-1].reshape(-1, 2).sum(axis=1))
    return out[::-1]


def test_scalar_wiener_shrinkage_and_its_transpose_equal_the_array_form_bit_for_bit() -> None:
    """Issue 28 (tiny releases): small binary trees shrink and carry gradients back on Python
    floats; the bins, every Shrinkage array and every leaf weight must equal the array form's
    exactly, on random levels (negative children, zero variances, ties) and on real releases."""
    from fedeval.metrics.dense import (
        Shrinkage,
        _scalar_shrinkage,
        _shrinkage_transpose_scalar,
        _wiener_class_any_branching,
        _wiener_class_binary,
        _wiener_class_scalar,
    )

    def check(released: list[np.ndarray], var: list[float], rng: np.random.Generator) -> None:
        est, shrink = _wiener_class_any_branching(released, var, 2)
        est_s, shrink_s = _wiener_class_scalar(released, var, 2)
        est_b, shrink_b = _wiener_class_binary(released, var)
        np.testing.assert_array_equal(est_s, est)
        np.testing.assert_array_equal(est_b, est)
        for got, want in zip(shrink_b.levels, shrink.levels, strict=True):
            for x, y in zip(got, want, strict=True):
                assert np.shape(x) == np.shape(y)
                np.testing.assert_array_equal(x, y)
        assert isinstance(shrink_s, Shrinkage)
        for got, want in zip(shrink_s.levels, shrink.levels, strict=True):
            for x, y in zip(got, want, strict=True):
                assert np.shape(x) == np.shape(y)
                np.testing.assert_array_equal(x, y)
            assert got[4].dtype == np.bool_
        for got, (_, ss, s, k, _) in zip(shrink_s.coefficients, shrink.levels, strict=True):
            with np.errstate(divide="ignore", invalid="ignore"):
                np.testing.assert_array_equal(got, np.where(s > 0, 2.0 * k / ss**2, 0.0))
        n = released[-1].size * 2 ** int(rng.integers(0, 3))
        g = rng.normal(size=released[-1].size) * rng.choice([1e-3, 1.0, 1e3])
        for through in (True, False):
            want_w = _shrinkage_transpose_before_issue_28(shrink, g, n, 2, through_simplex=through)
            np.testing.assert_array_equal(
                _shrinkage_transpose_scalar(shrink_s, g, n, through), want_w
            )
            np.testing.assert_array_equal(
                _shrinkage_transpose(shrink, g, n, 2, through_simplex=through), want_w
            )

    rng = np.random.default_rng(28)
    clipped = 0
    for _ in range(400):
        height = int(rng.integers(1, 8))
        released = _random_binary_levels(rng, height)
        var = [float(v) for v in rng.choice([0.0, 0.5, 4.0, 50.0], height)]
        check(released, var, rng)
        clipped += sum(int(np.sum(~lv[4])) for lv in _wiener_class_binary(released, var)[1].levels)
    assert clipped > 100  # the non-negative split and its transpose were exercised
    for privacy in PRIVACY:
        for n, seed in [(3, 0), (20, 1), (64, 2), (100, 3)]:
            s = rng.random(n)
            y = (rng.random(n) < s).astype(int)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tree = fe.evaluate(fe.Federation.from_arrays(s, y), privacy, rng=seed).tree
            assert _scalar_shrinkage(tree)
            for level in range(1, tree.height + 1):
                for c in (0, 1):
                    released = [np.asarray(x[c], dtype=np.float64) for x in tree.levels[:level]]
                    check(released, _split_variances(tree, c, level), rng)


@pytest.mark.parametrize(
    "privacy",
    [fe.DistributedDP(epsilon=1.0), fe.LocalDP(epsilon=5.0), fe.DistributedDP(epsilon=0.3)],
    ids=["distdp", "ldp", "distdp-0.3"],
)
def test_class_twins_share_split_variances_and_subtree_sums_bit_for_bit(privacy) -> None:
    """Issue 28: where both classes have equal node variances (DistDP) the second class reuses
    the first's split variances and subtree sums; each must equal a fresh tree's (no caches)
    asked about that class first, and LDP's unequal variances are never shared."""
    rng = np.random.default_rng(7)
    for n, seed in [(3, 0), (20, 1), (100, 2), (2_000, 3)]:
        s = rng.random(n)
        y = (rng.random(n) < s).astype(int)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = fe.evaluate(fe.Federation.from_arrays(s, y), privacy, rng=seed).tree
        equal = all(np.array_equal(v[0], v[1]) for v in tree.node_variance)
        assert tree._same_variances(0, 1) == tree._same_variances(1, 0) == equal
        assert equal == isinstance(privacy, fe.DistributedDP)
        q = np.array([0.3, 0.5, 0.77])
        for first in (0, 1):
            cached = replace(tree)
            for c in (first, 1 - first):
                for level in range(1, tree.height + 1):
                    fresh = replace(tree)
                    assert _split_variances(cached, c, level) == _split_variances(fresh, c, level)
                got = cached.prefix_moments(q, c)
                want = replace(tree).prefix_moments(q, c)
                for x, w in zip(got, want, strict=True):
                    np.testing.assert_array_equal(x, w)
            shared = cached._subtree_sums[0] is cached._subtree_sums[1]
            assert shared == equal


def _monotone_prefix_by_arrays(counts: np.ndarray, total: float) -> np.ndarray:
    """_monotone_prefix as written before its scalar path (issue 28)."""
    from fedeval.metrics.dense import _isotonic

    below = np.concatenate(([0.0], np.cumsum(counts)))
    if total <= 0:
        return np.zeros_like(below)
    inner = below[1:-1]
    if inner.size and (np.any(np.diff(below) < 0) or inner.min() < 0 or inner.max() > total):
        inner = np.clip(_isotonic(inner), 0.0, total)
    return np.concatenate(([0.0], inner, [total]))


def _through_projection_by_arrays(counts, c: int, grad_bins: np.ndarray) -> np.ndarray:
    """_through_projection as written before its scalar path (issue 28)."""
    total = float(counts.above[c, 0])
    below = total - counts.above[c]
    n_bins = grad_bins.size
    g_below = np.zeros(n_bins + 1)
    g_below[1:n_bins] = grad_bins[:-1] - grad_bins[1:]
    g_below[n_bins] = grad_bins[-1]
    inner = below[1:n_bins]
    g_inner = g_below[1:n_bins]
    g_raw = np.zeros_like(inner)
    g_total = g_below[n_bins]
    if inner.size:
        starts = np.concatenate(([True], inner[1:] != inner[:-1]))
        block = np.cumsum(starts) - 1
        sums = np.bincount(block, weights=g_inner)
        sizes = np.bincount(block)
        value = inner[starts]
        free = (value > 0) & (value < total)
        g_raw = np.where(free[block], (sums / sizes)[block], 0.0)
        g_total += float(np.sum(sums[value >= total]))
    suffix = np.concatenate((np.cumsum(g_raw[::-1])[::-1], [0.0]))
    return np.asarray(suffix + g_total, dtype=np.float64)


def test_scalar_monotone_projection_and_its_derivative_equal_the_array_form_bit_for_bit() -> None:
    """Issue 28: short releases project their prefix counts and carry gradients back through
    the projection on Python floats; both must equal the array code (kept above) exactly,
    with pooled blocks, blocks clipped at 0 and at the total, and empty classes."""
    from fedeval.metrics.dense import (
        BoundaryCounts,
        _monotone_prefix,
        _monotone_prefix_scalar,
        _through_projection,
    )

    rng = np.random.default_rng(2028)
    pinned = 0
    for trial in range(600):
        n_bins = int(rng.choice([1, 2, 3, 4, 8, 16, 32, 64, 256]))
        counts = np.empty((2, n_bins))
        for c in (0, 1):
            x = rng.poisson(rng.uniform(0.0, 5.0), n_bins) + rng.laplace(0.0, 3.0, n_bins)
            counts[c] = np.round(x) if trial % 4 == 0 else x
        if trial % 9 == 0:
            counts[1] = -np.abs(counts[1])  # a class with no positive total
        totals = counts.sum(axis=1)
        above = np.empty((2, n_bins + 1))
        for c in (0, 1):
            want = _monotone_prefix_by_arrays(counts[c], float(totals[c]))
            got = _monotone_prefix(counts[c], float(totals[c]))
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(
                _monotone_prefix_scalar(counts[c].tolist(), float(totals[c])), want
            )
            above[c] = want[-1] - want
        bc = BoundaryCounts(1, np.linspace(0, 1, n_bins + 1), above, totals)
        for c in (0, 1):
            g = rng.normal(size=n_bins) * rng.choice([1e-3, 1.0, 1e3])
            np.testing.assert_array_equal(
                _through_projection(bc, c, g), _through_projection_by_arrays(bc, c, g)
            )
            inner = (above[c, 0] - above[c])[1:n_bins]
            pinned += int(np.any(inner <= 0) and np.any(inner >= above[c, 0]))
    assert pinned > 20  # blocks at 0 and at the total were exercised


def test_boundary_counts_are_computed_once_per_release_and_level() -> None:
    """The AUC, both curves and the thresholds share one read-only BoundaryCounts."""
    s, y = _data(2_000)
    ev = fe.evaluate(fe.Federation.from_arrays(s, y), fe.DistributedDP(1.0), rng=3)
    first = boundary_counts(ev.tree)
    assert boundary_counts(ev.tree) is first
    assert boundary_counts(ev.tree, ev.tree.height) is first
    assert boundary_counts(ev.tree, shrink=False) is first.unshrunk
    assert boundary_counts(ev.tree, 2) is not first and boundary_counts(ev.tree, 2).level == 2
    with pytest.raises(ValueError, match="read-only"):
        first.above[0, 0] = 0.0
    fpr, tpr, _ = ev.roc_curve()
    assert ev.roc_auc == pytest.approx(float(np.trapezoid(tpr, fpr)))


@pytest.mark.parametrize(
    ("n_bins", "scale"), [(64, 1.0), (64, 30.0), (256, 3.0), (16, 200.0), (10, 5.0)]
)
def test_auc_of_leaf_batches_equals_one_replicate_at_a_time(
    n_bins: int, scale: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bit for bit the per-replicate path, including pooled prefixes, undefined classes, b ≠ 2.

    Large ``scale`` (noise standard deviation per leaf, against a few examples
    per bin) makes the non-negative splits clip, some prefixes pool and some
    class totals negative; 10 bins is a one-level tree with b = 10 (the loop).
    """
    from fedeval.metrics.dense import dense_roc_auc, dense_roc_auc_of_leaves
    from fedeval.sketches.multiclass import class_tree

    s, y = _data(2_000)
    receipt = fe.evaluate(
        fe.Federation.from_arrays(s, y), fe.DistributedDP(1.0), rng=0
    ).tree.receipt
    rng = np.random.default_rng(n_bins)
    truth = np.vstack(
        [
            np.bincount(rng.integers(0, n_bins, m), minlength=n_bins)
            for m in (3 * n_bins, n_bins // 2)
        ]
    ).astype(np.float64)
    variance = np.full((2, n_bins), scale**2)
    tree = class_tree(truth, variance, receipt)
    leaves = truth + rng.standard_normal((300, 2, n_bins)) * scale
    pooled = []
    scalar_prefix = dense._monotone_prefix_scalar
    monkeypatch.setattr(
        dense, "_monotone_prefix_scalar", lambda *a: pooled.append(1) or scalar_prefix(*a)
    )
    batch = dense_roc_auc_of_leaves(tree, leaves)
    monkeypatch.undo()
    one_by_one = np.array(
        [
            dense_roc_auc(boundary_counts(tree.with_levels(tree.spec.levels_from_leaves(r))))
            for r in leaves
        ]
    )
    np.testing.assert_array_equal(batch, one_by_one)
    # The cases the docstring names occur (else the test would not cover them).
    assert np.isfinite(batch).sum() > 100
    if (n_bins, scale) == (16, 200.0):
        assert np.isnan(batch).any()  # a class total below 0
    if n_bins == 64 and scale == 30.0:
        assert pooled  # a prefix the batch hands to the scalar path


@pytest.mark.parametrize("privacy", PRIVACY)
def test_binary_wiener_shrinkage_of_deep_trees_equals_the_any_branching_form(privacy) -> None:
    """Issue 28: the binary array form (deep releases' leaf levels have tens of thousands of
    nodes) gives the bins and every Shrinkage array of the general form, bit for bit."""
    from fedeval.metrics.dense import _wiener_class_any_branching, _wiener_class_binary

    s, y = _data(2_000_000, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = fe.evaluate(fe.Federation.from_arrays(s, y), privacy, rng=3).tree
    assert not dense._scalar_shrinkage(tree)  # more than 256 leaves
    for c in (0, 1):
        released = [np.asarray(x[c], dtype=np.float64) for x in tree.levels]
        var = _split_variances(tree, c, tree.height)
        est, shrink = _wiener_class_any_branching(released, var, 2)
        est_b, shrink_b = _wiener_class_binary(released, var)
        np.testing.assert_array_equal(est_b, est)
        for got, want in zip(shrink_b.levels, shrink.levels, strict=True):
            for x, w in zip(got, want, strict=True):
                np.testing.assert_array_equal(x, w)
        assert sum(int(np.sum(~lv[4])) for lv in shrink_b.levels) > 0  # clipped splits occur
