"""Issue 25 against exact references: the paired comparison and the slices under secure aggregation.

Without noise every quantity is exact up to bucketization:

* ΔAUC equals scikit-learn's difference within the two hierarchies'
  bucketization bounds (Cormode–Markov Lemma 3, one per model);
* with a pair grid as fine as the leaves, the paired sampling SE equals DeLong's
  (1988) paired SE of the leaf-binned scores to rounding, and the discordant
  counts at a leaf edge equal McNemar's exact counts;
* every slice's AUC equals scikit-learn's AUC of that slice within its bound,
  and its binned calibration error the exact binned ECE within half a leaf width.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

import fedeval as fe
from paired_reference import binned, paired_delong


def _two_models(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(np.int64)
    z = rng.normal(1.2 * y, 1.0)
    a = 1 / (1 + np.exp(-z))
    b = 1 / (1 + np.exp(-(z + rng.normal(0, 0.5, n))))
    return a, b, y


def test_sa_auc_difference_matches_sklearn_within_the_bucketization_bounds() -> None:
    a, b, y = _two_models(20_000, 0)
    clients = np.arange(y.size) % 700
    fa = fe.Federation.from_arrays(a, y, clients)
    fb = fe.Federation.from_arrays(b, y, clients)
    cmp = fe.compare(fa, fb, fe.SecureAggregation(), height=12)
    exact = roc_auc_score(y, a) - roc_auc_score(y, b)
    bound = cmp.a.roc_auc_bucketization_bound + cmp.b.roc_auc_bucketization_bound
    assert abs(cmp.roc_auc_diff - exact) <= bound
    assert bound < 1e-3
    assert cmp.roc_auc_diff_privacy_se == 0.0
    assert cmp.epsilon_spent == 0.0
    # Each model's evaluation is the one fe.evaluate gives under SA at the same height.
    ev_a = fe.evaluate(fa, fe.SecureAggregation(), height=12)
    assert cmp.a.roc_auc == pytest.approx(ev_a.roc_auc, abs=1e-12)


def test_sa_paired_sampling_se_is_delongs_when_the_pair_grid_is_the_leaves() -> None:
    a, b, y = _two_models(6_000, 1)
    h = 6
    cmp = fe.compare(
        fe.Federation.from_arrays(a, y),
        fe.Federation.from_arrays(b, y),
        fe.SecureAggregation(),
        height=h,
        pair_bins=2**h,
    )
    ref = paired_delong(binned(a, 2**h), binned(b, 2**h), y)
    assert cmp.roc_auc_diff == pytest.approx(ref["auc_a"] - ref["auc_b"], abs=1e-12)
    assert cmp.roc_auc_diff_sampling_se == pytest.approx(ref["se_diff"], rel=1e-9)
    assert cmp.a.roc_auc_sampling_se == pytest.approx(np.sqrt(ref["var_a"]), rel=1e-9)
    # Unpaired, the same two AUCs would have an SE ≥ 2× larger here (the models correlate).
    assert np.sqrt(ref["var_a"] + ref["var_b"]) > 2 * ref["se_diff"]


def test_sa_coarse_pair_grid_errs_on_the_safe_side() -> None:
    """Pairing inside a pair cell is not seen: the SE of the difference can only grow."""
    a, b, y = _two_models(20_000, 2)
    fa, fb = fe.Federation.from_arrays(a, y), fe.Federation.from_arrays(b, y)
    ses = [
        fe.compare(fa, fb, fe.SecureAggregation(), height=10, pair_bins=g).roc_auc_diff_sampling_se
        for g in (1024, 64, 16, 4)
    ]
    exact = paired_delong(binned(a, 1024), binned(b, 1024), y)["se_diff"]
    assert ses[0] == pytest.approx(exact, rel=1e-9)
    assert all(later >= earlier * (1 - 1e-9) for earlier, later in itertools.pairwise(ses))


def test_sa_discordant_counts_and_mcnemar_at_a_leaf_edge() -> None:
    a, b, y = _two_models(8_000, 3)
    cmp = fe.compare(
        fe.Federation.from_arrays(a, y),
        fe.Federation.from_arrays(b, y),
        fe.SecureAggregation(),
        height=8,
        pair_bins=16,
    )
    t = 0.5  # an edge of the pair grid
    d = cmp.at_threshold(t)
    pa, pb = a >= t, b >= t
    pos, neg = y == 1, y == 0
    n10, n01 = float(np.sum(pa & ~pb & pos)), float(np.sum(~pa & pb & pos))
    assert d.discordant["positives"] == pytest.approx((n10, n01))
    assert d.discordant["negatives"] == pytest.approx(
        (float(np.sum(pa & ~pb & neg)), float(np.sum(~pa & pb & neg)))
    )
    big_p = float(pos.sum())
    assert d.recall.estimate == pytest.approx((n10 - n01) / big_p, abs=1e-12)
    # McNemar's variance of a paired difference of proportions (unbiased form).
    mcnemar = ((n10 + n01) - (n10 - n01) ** 2 / big_p) / (big_p * (big_p - 1))
    assert d.recall.sampling_se == pytest.approx(np.sqrt(mcnemar), rel=1e-9)
    right_a, right_b = pa == pos, pb == pos
    b_, c_ = float(np.sum(right_a & ~right_b)), float(np.sum(~right_a & right_b))
    assert d.discordant["accuracy"] == pytest.approx((b_, c_))
    assert d.mcnemar_statistic == pytest.approx((b_ - c_) ** 2 / (b_ + c_))
    assert d.accuracy.estimate == pytest.approx(np.mean(right_a) - np.mean(right_b), abs=1e-12)


def _sliced_data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    region = rng.choice(["EU", "US", "ASIA", "ZZ"], n, p=[0.5, 0.3, 0.15, 0.05])
    shift = {"EU": 1.5, "US": 1.0, "ASIA": 0.6, "ZZ": 1.0}
    y = (rng.random(n) < 0.35).astype(np.int64)
    z = rng.normal(np.array([shift[r] for r in region]) * y - 0.5, 1.0)
    return 1 / (1 + np.exp(-z)), y, region


def test_sa_every_slice_matches_sklearn_slice_by_slice() -> None:
    s, y, region = _sliced_data(30_000, 4)
    fed = fe.Federation.from_arrays(s, y, np.arange(y.size) % 900)
    sev = fe.evaluate(
        fed, fe.SecureAggregation(), slices=region, slice_values=["EU", "US", "ASIA"], height=12
    )
    assert sev.keys() == ["EU", "US", "ASIA", "other"]
    for value, ev in sev.items():
        mask = region == value if value != "other" else region == "ZZ"
        exact = roc_auc_score(y[mask], s[mask])
        assert abs(ev.roc_auc - exact) <= ev.roc_auc_bucketization_bound, value
        m = ev.at_threshold(0.375)  # a leaf edge: exact
        pred = s[mask] >= 0.375
        assert float(m.positive_rate) == pytest.approx(pred.mean(), abs=1e-12)
        assert float(m.recall) == pytest.approx(pred[y[mask] == 1].mean(), abs=1e-12)
    assert sev.epsilon_spent == 0.0


def test_sa_binned_calibration_error_matches_the_exact_binned_ece() -> None:
    s, y, region = _sliced_data(30_000, 5)
    sev = fe.evaluate(
        fe.Federation.from_arrays(s, y),
        fe.SecureAggregation(),
        slices=region,
        slice_values=["EU", "US"],
        height=10,
    )
    ce = sev.values("calibration_error")
    for value in ("EU", "US"):
        mask = region == value
        bins = np.minimum((s[mask] * 16).astype(int), 15)
        ece = (
            sum(abs(np.sum(y[mask][bins == j]) - np.sum(s[mask][bins == j])) for j in range(16))
            / mask.sum()
        )
        # Each example's score is read at its leaf's midpoint: within half a leaf width.
        assert abs(ce[value].estimate - ece) <= 0.5 / 2**10
        assert ce[value].privacy_se == 0.0
