"""Federated multiclass binning: FedBin, FedBBQ, the α_j weighting (Algorithm 1, App. B.3–B.5)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy.special import gammaln

from fedeval.calibration.base import calibrator_from_json
from fedeval.calibration.federated import calibrate_multiclass
from fedeval.calibration.multiclass_binning import (
    MulticlassBinningCalibrator,
    bbq_table,
    fit_multiclass_binning,
)
from fedeval.data import Federation
from fedeval.partition import dirichlet
from fedeval.privacy.models import SecureAggregation, UserLevelDP


def _probs(n: int, c: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    signal = rng.normal(size=(n, c))
    labels = np.argmax(signal + rng.normal(scale=1.5, size=(n, c)), axis=1)
    z = 3.0 * signal
    p = np.exp(z - z.max(axis=1, keepdims=True))
    return p / p.sum(axis=1, keepdims=True), labels


def _central_histogram_binning(
    p: np.ndarray, y: np.ndarray, n_bins: int, x: np.ndarray
) -> np.ndarray:
    """Per-class one-vs-all histogram binning written directly from Appendix B.3."""
    c = p.shape[1]
    out = np.empty_like(x)
    for j in range(c):
        for m in range(n_bins):
            lo, hi = m / n_bins, (m + 1) / n_bins
            in_bin = (p[:, j] >= lo) & ((p[:, j] < hi) if m < n_bins - 1 else (p[:, j] <= hi))
            pos = np.sum(in_bin & (y == j))
            neg = np.sum(in_bin & (y != j))
            value = pos / (pos + neg) if pos + neg > 0 else (m + 0.5) / n_bins
            x_in = (x[:, j] >= lo) & ((x[:, j] < hi) if m < n_bins - 1 else (x[:, j] <= hi))
            out[x_in, j] = value
    s = out.sum(axis=1, keepdims=True)
    return np.where(s > 0, out / np.where(s > 0, s, 1), x)


def test_fedbin_one_client_no_noise_equals_central_histogram_binning() -> None:
    p, y = _probs(3000, 5, seed=0)
    fed = Federation.from_arrays(p, y, np.zeros(len(y), dtype=int))
    cal = calibrate_multiclass(
        fed, SecureAggregation(), method="binning", n_bins=10, weighting="none", rng=0
    )
    x, _ = _probs(500, 5, seed=1)
    np.testing.assert_allclose(
        cal.predict_proba(x), _central_histogram_binning(p, y, 10, x), atol=1e-12
    )
    # One client, p = 1: α_j = 1, so the weighted variants agree with it.
    for weighting in ("all", "changed"):
        w = calibrate_multiclass(
            fed, SecureAggregation(), method="binning", n_bins=10, weighting=weighting, rng=0
        )
        np.testing.assert_allclose(w.alpha, 1.0)
        np.testing.assert_allclose(w.predict_proba(x), cal.predict_proba(x), atol=1e-12)


def test_fedbin_is_invariant_to_how_examples_are_split_with_full_participation() -> None:
    p, y = _probs(2000, 4, seed=2)
    one = calibrate_multiclass(
        Federation.from_arrays(p, y, np.zeros(len(y), dtype=int)),
        SecureAggregation(),
        method="bbq",
        rng=0,
    )
    many = calibrate_multiclass(
        dirichlet(Federation.from_arrays(p, y), n_clients=50, beta=0.1, rng=0),
        SecureAggregation(),
        method="bbq",
        rng=0,
    )
    np.testing.assert_allclose(one.table, many.table)


def test_bbq_table_matches_a_direct_score_computation() -> None:
    rng = np.random.default_rng(3)
    pos = rng.integers(0, 20, size=(2, 8)).astype(float)
    neg = rng.integers(0, 20, size=(2, 8)).astype(float)
    table, weights = bbq_table(pos, neg, prior_strength=2.0)
    assert weights.shape == (2, 3)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0)
    j = 1
    scores, values = [], []
    for b in (2, 4, 8):
        mp = pos[j].reshape(b, -1).sum(1)
        mn = neg[j].reshape(b, -1).sum(1)
        mid = (np.arange(b) + 0.5) / b
        a, bb, pr = 2 / b * mid, 2 / b * (1 - mid), 2 / b
        s = np.sum(
            gammaln(pr)
            - gammaln(mp + mn + pr)
            + gammaln(mp + a)
            - gammaln(a)
            + gammaln(mn + bb)
            - gammaln(bb)
        )
        scores.append(s)
        values.append(np.repeat((mp + a) / (mp + mn + pr), 8 // b))
    w = np.exp(np.array(scores) - max(scores))
    w /= w.sum()
    np.testing.assert_allclose(table[j], w @ np.array(values))
    np.testing.assert_allclose(weights[j], w)


@pytest.mark.parametrize("weighting", ["all", "changed"])
def test_weighted_fedbbq_with_zero_alpha_never_changes_the_predicted_class(weighting: str) -> None:
    p, y = _probs(2000, 6, seed=4)
    fed = dirichlet(Federation.from_arrays(p, y), n_clients=40, beta=0.1, rng=0)
    cal = calibrate_multiclass(
        fed,
        SecureAggregation(),
        method="bbq",
        rounds=2,
        sampling_rate=0.2,
        weighting=weighting,
        rng=0,
    )
    zero = dataclasses.replace(cal, alpha=np.zeros(6))
    rng = np.random.default_rng(5)
    for _ in range(20):
        x = rng.dirichlet(np.full(6, rng.uniform(0.05, 3.0)), size=200)
        np.testing.assert_array_equal(
            np.argmax(zero.predict_proba(x), axis=1), np.argmax(x, axis=1)
        )
    # With a random table too (the guarantee must not depend on the data).
    rand = MulticlassBinningCalibrator(
        rng.uniform(size=(6, 128)),
        np.zeros(6),
        weighting,
        "bbq",
        n_classes=6,
        input_kind="probabilities",
    )
    np.testing.assert_array_equal(np.argmax(rand.predict_proba(x), axis=1), np.argmax(x, axis=1))


def test_alpha_follows_the_fraction_of_class_examples_aggregated() -> None:
    p, y = _probs(3000, 4, seed=6)
    fed = dirichlet(Federation.from_arrays(p, y), n_clients=100, beta=1.0, rng=0)
    cal = fit_multiclass_binning(
        fed, SecureAggregation(), method="bbq", rounds=1, sampling_rate=0.2, rng=0
    )
    assert np.all((cal.alpha > 0.05) & (cal.alpha < 0.5))
    full = fit_multiclass_binning(
        fed, SecureAggregation(), method="bbq", rounds=3, sampling_rate=1.0, rng=0
    )
    np.testing.assert_allclose(full.alpha, 1.0)


def test_dp_alpha_uses_the_noise_scale() -> None:
    p, y = _probs(3000, 4, seed=7)
    fed = dirichlet(Federation.from_arrays(p, y), n_clients=100, beta=0.5, rng=0)
    cal = fit_multiclass_binning(
        fed,
        UserLevelDP(1.0, 1e-5, clip=(10.0, 50.0)),
        method="bbq",
        rounds=2,
        sampling_rate=0.5,
        rng=0,
    )
    sigma = cal.privacy["noise_std"]["positive"]
    assert sigma > 0
    assert np.all((cal.alpha >= 0) & (cal.alpha <= 1))
    assert cal.epsilon_spent <= 1.0
    assert cal.privacy["clip"] == [10.0, 50.0]


@pytest.mark.parametrize("method", ["binning", "bbq"])
def test_binning_json_round_trip_and_rows_sum_to_one(method: str) -> None:
    p, y = _probs(1500, 5, seed=8)
    z = np.log(p)
    fed = dirichlet(Federation.from_arrays(z, y, kind="logits"), n_clients=20, beta=0.5, rng=0)
    cal = calibrate_multiclass(
        fed,
        UserLevelDP(1.0, 1e-5, clip=(5.0, 20.0)),
        method=method,
        rounds=2,
        sampling_rate=0.5,
        rng=0,
    )
    back = calibrator_from_json(cal.to_json())
    assert isinstance(back, MulticlassBinningCalibrator)
    np.testing.assert_array_equal(back.predict_proba(z), cal.predict_proba(z))
    np.testing.assert_allclose(cal.predict_proba(z).sum(axis=1), 1.0)
    assert back.guarantee.epsilon == cal.guarantee.epsilon <= 1.0


def test_sampled_rounds_sum_exactly_the_sampled_clients_histograms() -> None:
    from fedeval.calibration.multiclass_binning import _aggregate_histograms, multiclass_histograms
    from fedeval.calibration.user_dp import poisson_sample

    p, y = _probs(1500, 4, seed=9)
    fed = dirichlet(Federation.from_arrays(p, y), n_clients=30, beta=0.5, rng=0)
    h = _aggregate_histograms(
        fed,
        fed.scores,
        SecureAggregation(),
        n_bins=8,
        rounds=3,
        sampling_rate=0.4,
        noise_multiplier=0.0,
        gen=np.random.default_rng(11),
    )
    gen = np.random.default_rng(11)
    want_pos = np.zeros((4, 8))
    want_neg = np.zeros((4, 8))
    n_part = 0
    for _ in range(3):
        for k in poisson_sample(fed.n_clients, 0.4, gen):
            view = fed.client(int(k))
            a, b = multiclass_histograms(view.scores, view.labels, 8)
            want_pos += a
            want_neg += b
            n_part += 1
    np.testing.assert_array_equal(h.positive, want_pos)
    np.testing.assert_array_equal(h.negative, want_neg)
    assert h.participations == n_part


@pytest.mark.statistical
def test_histogram_noise_has_the_calibrated_scale() -> None:
    from fedeval.calibration.multiclass_binning import _aggregate_histograms

    p, y = _probs(400, 5, seed=10)
    fed = dirichlet(Federation.from_arrays(p, y), n_clients=10, beta=1.0, rng=0)
    privacy = UserLevelDP(1.0, 1e-5, clip=(2.0, 6.0))

    def run(z: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
        h = _aggregate_histograms(
            fed,
            fed.scores,
            privacy,
            n_bins=512,
            rounds=1,
            sampling_rate=1.0,
            noise_multiplier=z,
            gen=np.random.default_rng(seed),
        )
        return h.positive, h.negative

    clean_p, clean_n = run(0.0, 0)
    noisy_p, noisy_n = run(0.7, 1)
    scale = 0.7 * np.sqrt(2 * 5)
    # 2560 residuals each: the sample sd is within 5% of σ with overwhelming probability.
    assert np.std(noisy_p - clean_p) == pytest.approx(scale * 2.0, rel=0.05)
    assert np.std(noisy_n - clean_n) == pytest.approx(scale * 6.0, rel=0.05)
