"""Federated multiclass binning: FedBin, FedBBQ, the α_j weighting (Algorithm 1, App. B.3–B.5)."""

from __future__ import annotations

import dataclasses
import importlib
import math
from typing import Literal

import numpy as np
import pytest
from scipy.special import gammaln

from fedeval.calibration.base import calibrator_from_json
from fedeval.calibration.federated import calibrate_multiclass
from fedeval.calibration.multiclass import to_probabilities
from fedeval.calibration.multiclass_binning import (
    MulticlassBinningCalibrator,
    _aggregate_histograms,
    bbq_table,
    fit_multiclass_binning,
)
from fedeval.data import Federation
from fedeval.data.partition import dirichlet
from fedeval.privacy.mechanism_for import mechanism_for
from fedeval.privacy.models import SecureAggregation, UserLevelDP
from fedeval.privacy.noise import CentralNoise
from fedeval.privacy.sampling import poisson_sample
from fedeval.randomness import as_generator
from fedeval.sketches.class_histograms import OneVsRestSketch, one_vs_rest_histograms
from fedeval.sketches.grid import UniformGrid


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
    # The map itself (do no harm may decline it: test_multiclass_do_no_harm.py).
    cal = calibrate_multiclass(
        fed,
        SecureAggregation(),
        method="binning",
        n_bins=10,
        weighting="none",
        rng=0,
        do_no_harm=False,
    )
    x, _ = _probs(500, 5, seed=1)
    np.testing.assert_allclose(
        cal.predict_proba(x), _central_histogram_binning(p, y, 10, x), atol=1e-12
    )
    # One client, p = 1: α_j = 1, so the weighted variants agree with it.
    for weighting in ("all", "changed"):
        w = calibrate_multiclass(
            fed,
            SecureAggregation(),
            method="binning",
            n_bins=10,
            weighting=weighting,
            rng=0,
            do_no_harm=False,
        )
        assert isinstance(w, MulticlassBinningCalibrator)
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
    assert isinstance(one, MulticlassBinningCalibrator)
    assert isinstance(many, MulticlassBinningCalibrator)
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
        do_no_harm=False,  # the map itself is tested (2 rounds of sampled clients decline)
        rng=0,
    )
    assert isinstance(cal, MulticlassBinningCalibrator)
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
        fed, SecureAggregation(), method="bbq", rounds=1, sampling_rate=0.2, do_no_harm=False,
        rng=0,
    )  # fmt: skip
    # α_j = N_j(aggregated) / N_j(all): replay the same rounds from the same seed.
    hist, _ = _aggregate_histograms(
        fed,
        to_probabilities(fed.scores, fed.kind),
        SecureAggregation(),
        n_bins=2**7,
        rounds=1,
        sampling_rate=0.2,
        gen=np.random.default_rng(0),
        ledger=None,
    )
    n_class = np.bincount(fed.labels, minlength=4)
    np.testing.assert_allclose(cal.alpha, np.minimum(hist.positive.sum(axis=1) / n_class, 1.0))
    # Per class, not one shared fraction (Dirichlet clients hold the classes unevenly).
    assert np.ptp(cal.alpha) > 0.01
    assert np.all((cal.alpha > 0.05) & (cal.alpha < 0.5))
    full = fit_multiclass_binning(
        fed, SecureAggregation(), method="bbq", rounds=3, sampling_rate=1.0, rng=0
    )
    np.testing.assert_allclose(full.alpha, 1.0)


def test_dp_alpha_uses_the_noise_scale(monkeypatch: pytest.MonkeyPatch) -> None:
    """α̃_j = min(Ñ_j / (sqrt(2/π) σ_P sqrt(T) |P_j|), 1) (Appendix B.5).

    σ_P is read from the mechanism (not from the calibrator), Ñ_j is replayed
    from the same seed; then the noise multiplier z is doubled (σ_P = z·sqrt(2c)·C+
    doubles) and the formula must hold again, while doubling C− (the noise on
    the negative histograms only) must leave α exactly unchanged.
    """
    p, y = _probs(3000, 4, seed=7)
    fed = dirichlet(Federation.from_arrays(p, y), n_clients=100, beta=0.5, rng=0)
    levels, rounds, rate = 7, 2, 0.5
    bins = 2**levels

    def sigma_positive(privacy: UserLevelDP) -> float:
        clip = privacy.clip
        assert isinstance(clip, tuple)
        sketch = OneVsRestSketch(4, bins, clip)
        mech = mechanism_for(
            privacy, sketch, n_clients=fed.n_clients, rounds=rounds, sampling_rate=rate
        )
        assert isinstance(mech.noise, CentralNoise) and mech.noise.kind == "discrete_gaussian"
        scale = np.broadcast_to(np.asarray(mech.noise.scale, dtype=np.float64), (2 * 4 * bins,))
        assert np.all(scale[: 4 * bins] == scale[0])  # one σ on every positive bin
        # In counts: the clipped histograms are sent in fixed point (units of γ).
        return float(scale[0]) * sketch.resolution

    def fit(privacy: UserLevelDP) -> tuple[np.ndarray, float]:
        cal = fit_multiclass_binning(
            fed,
            privacy,
            method="bbq",
            levels=levels,
            rounds=rounds,
            sampling_rate=rate,
            rng=0,
            do_no_harm=False,  # the map's α, whatever do-no-harm would decide
        )
        sigma = sigma_positive(privacy)
        assert cal.procedure["noise_std"]["positive histograms"] == pytest.approx(sigma, rel=1e-12)
        hist, _ = _aggregate_histograms(
            fed,
            fed.scores,
            privacy,
            n_bins=bins,
            rounds=rounds,
            sampling_rate=rate,
            gen=as_generator(0),
            ledger=None,
        )
        n_tilde = np.maximum(hist.positive.sum(axis=1), 0.0)
        want = np.minimum(n_tilde / (math.sqrt(2 / math.pi) * sigma * math.sqrt(rounds) * bins), 1)
        np.testing.assert_allclose(cal.alpha, want, rtol=1e-12, atol=0)
        return cal.alpha, sigma

    privacy = UserLevelDP(4.0, 1e-5, clip=(1.0, 5.0))
    alpha, sigma = fit(privacy)
    # Strictly inside (0, 1) for every class: neither the clamp of Ñ at 0 nor the clip at 1
    # hides the formula.
    assert np.all((alpha > 0.05) & (alpha < 0.95))

    # Only the noise of the positive histograms enters α.
    alpha_neg, _ = fit(UserLevelDP(4.0, 1e-5, clip=(1.0, 10.0)))
    np.testing.assert_array_equal(alpha_neg, alpha)

    # Double the calibrated noise multiplier z: σ_P doubles, α follows the formula with it.
    module = importlib.import_module("fedeval.privacy.mechanism_for")
    calibrated = module._calibrated_multiplier

    def doubled(*args: float) -> tuple[float, float]:
        z, eps = calibrated(*args)
        return 2 * z, eps

    monkeypatch.setattr(module, "_calibrated_multiplier", doubled)
    alpha2, sigma2 = fit(privacy)
    assert sigma2 == pytest.approx(2 * sigma, rel=1e-12)
    # The same seed draws the same clients and standard normals: with S > 0 the clean
    # positive mass and E the noise, Ñ goes from S + E to S + 2E and the denominator
    # doubles, so α_j = (S + E)/D drops to (S + 2E)/(2D) < α_j for every class.
    assert np.all(alpha2 < alpha)


@pytest.mark.parametrize("method", ["binning", "bbq"])
def test_binning_json_round_trip_and_rows_sum_to_one(method: Literal["binning", "bbq"]) -> None:
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
        do_no_harm=False,  # the map itself round-trips (the declined one: test_multiclass_do_no_harm)
    )
    back = calibrator_from_json(cal.to_json())
    assert isinstance(back, MulticlassBinningCalibrator)
    np.testing.assert_array_equal(back.predict_proba(z), cal.predict_proba(z))
    np.testing.assert_allclose(cal.predict_proba(z).sum(axis=1), 1.0)
    assert back.guarantee.epsilon == cal.guarantee.epsilon <= 1.0


def test_sampled_rounds_sum_exactly_the_sampled_clients_histograms() -> None:
    p, y = _probs(1500, 4, seed=9)
    fed = dirichlet(Federation.from_arrays(p, y), n_clients=30, beta=0.5, rng=0)
    h, schedule = _aggregate_histograms(
        fed,
        fed.scores,
        SecureAggregation(),
        n_bins=8,
        rounds=3,
        sampling_rate=0.4,
        gen=np.random.default_rng(11),
        ledger=None,
    )
    gen = np.random.default_rng(11)
    want_pos = np.zeros((4, 8))
    want_neg = np.zeros((4, 8))
    n_part = 0
    for _ in range(3):
        for k in poisson_sample(fed.n_clients, 0.4, gen):
            view = fed.client(int(k))
            a, b = one_vs_rest_histograms(view.scores, view.labels, UniformGrid(8))
            want_pos += a
            want_neg += b
            n_part += 1
    np.testing.assert_array_equal(h.positive, want_pos)
    np.testing.assert_array_equal(h.negative, want_neg)
    assert h.participations == n_part == schedule.participations
    assert 0 < n_part < 3 * fed.n_clients  # some clients were left out, some sampled


def test_one_vs_rest_bins_are_left_closed_with_edge_snapping() -> None:
    # The one grid convention (sketches.grid.UniformGrid): [m/M, (m+1)/M), the last bin
    # closed, and a value within rounding of an edge belongs to the bin it opens:
    # 0.29 in 100 bins is bin 29 although 0.29 * 100 = 28.999999999999996.
    probs = np.array([[0.29, 0.71], [0.5, 0.5], [0.0, 1.0]])
    labels = np.array([0, 1, 1])
    pos, neg = one_vs_rest_histograms(probs, labels, UniformGrid(100))
    assert pos[0, 29] == 1 and pos[0].sum() == 1
    assert neg[1, 71] == 1 and neg[1].sum() == 1
    assert pos[1, 50] == 1 and neg[0, 50] == 1
    assert pos[1, 99] == 1 and neg[0, 0] == 1  # 1.0 lands in the last (closed) bin


@pytest.mark.statistical
def test_histogram_noise_has_the_calibrated_scale() -> None:
    c, n_bins = 5, 512
    p, y = _probs(400, c, seed=10)
    fed = dirichlet(Federation.from_arrays(p, y), n_clients=10, beta=1.0, rng=0)
    privacy = UserLevelDP(1.0, 1e-5, clip=(2.0, 6.0))
    h, schedule = _aggregate_histograms(
        fed,
        fed.scores,
        privacy,
        n_bins=n_bins,
        rounds=1,
        sampling_rate=1.0,
        gen=np.random.default_rng(1),
        ledger=None,
    )
    # The clipped, noise-free sums of all clients (p = 1: everybody takes part), in counts
    # (the sketch sends them in fixed point, units of γ).
    sketch = OneVsRestSketch(c, n_bins, (2.0, 6.0))
    clean = sketch.encode_clients(fed) * sketch.resolution
    clean_p, clean_n = clean[: c * n_bins].reshape(c, -1), clean[c * n_bins :].reshape(c, -1)
    (entry,) = schedule.mechanism.ledger_entries
    z = entry.details["noise_multiplier"]
    assert z > 0
    # σ± = z · sqrt(2c) · C± (the 2c histograms scaled by 1/C± have L2 sensitivity sqrt(2c)),
    # times the fixed-point rounding allowance 1 + γ√n_bins/(2 min C).
    grow = 1 + sketch.resolution * np.sqrt(n_bins) / (2 * 2.0)
    scale = z * np.sqrt(2 * c) * grow
    # 2560 residuals each: the sample sd is within 5% of σ with overwhelming probability.
    assert np.std(h.positive - clean_p) == pytest.approx(scale * 2.0, rel=0.05)
    assert np.std(h.negative - clean_n) == pytest.approx(scale * 6.0, rel=0.05)
    # The recorded sd is the discrete Gaussian's exact one (below σ by far less than 1e-9).
    assert h.noise_std_positive == pytest.approx(scale * 2.0, rel=1e-9)
    assert h.noise_std_negative == pytest.approx(scale * 6.0, rel=1e-9)
