"""User-level DP of federated multiclass calibration (multiclass paper §4.3, Appendix B.1)."""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import numpy as np
import pytest
from dp_accounting import GaussianDpEvent, PoissonSampledDpEvent, SelfComposedDpEvent
from dp_accounting.pld import PLDAccountant
from dp_accounting.rdp import RdpAccountant

from fedeval.calibration.fedavg import fit_local
from fedeval.calibration.federated import (
    MulticlassMethod,
    calibrate_multiclass,
    sample_participants,
)
from fedeval.calibration.scaling_maps import initial_parameters, nll_and_grad
from fedeval.data import Federation
from fedeval.privacy.ledger import BudgetExceededError, BudgetLedger
from fedeval.privacy.mechanism_for import mechanism_for
from fedeval.privacy.models import SecureAggregation, UserLevelDP
from fedeval.privacy.noise import CentralNoise
from fedeval.sketches.class_histograms import OneVsRestSketch
from fedeval.sketches.clipped_sums import ClippedSumSketch
from fedeval.sketches.clipped_vector import clip_l2
from fedeval.sketches.scaler_updates import ScalerUpdateSketch


def _clients(seed: int, n_clients: int, c: int) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_clients):
        n = int(rng.integers(5, 400))
        p = rng.dirichlet(np.full(c, 0.3), size=n)
        out.append((p, rng.integers(0, c, size=n)))
    return out


def _clipped_histograms(
    fed: Federation, privacy: UserLevelDP, n_bins: int
) -> tuple[np.ndarray, np.ndarray]:
    """Σ over all clients of their clipped (noise-free) 2c histograms, in counts."""
    clip = privacy.clip
    assert isinstance(clip, tuple)
    c = fed.n_classes
    sketch = OneVsRestSketch(c, n_bins, clip)
    v = sketch.encode_clients(fed) * sketch.resolution  # sent in fixed point (units of γ)
    return v[: c * n_bins].reshape(c, n_bins), v[c * n_bins :].reshape(c, n_bins)


def test_histogram_clipping_bounds_one_clients_influence() -> None:
    c, n_bins = 4, 16
    privacy = UserLevelDP(1.0, 1e-5, clip=(3.0, 7.0))
    rng = np.random.default_rng(1)
    base = _clients(0, 12, c)
    pos, neg = _clipped_histograms(Federation.from_clients(base), privacy, n_bins)
    for trial in range(20):
        # Client 0's data replaced arbitrarily (size, labels, concentrated scores) ...
        n = int(rng.integers(1, 5000))
        p = np.zeros((n, c))
        p[np.arange(n), rng.integers(0, c, size=n) if trial % 2 else 0] = 1.0
        changed = [(p, rng.integers(0, c, size=n)), *base[1:]]
        pos2, neg2 = _clipped_histograms(Federation.from_clients(changed), privacy, n_bins)
        # ... or removed altogether.
        pos3, neg3 = _clipped_histograms(Federation.from_clients(base[1:]), privacy, n_bins)
        # Clipped to C, then rounded to the fixed-point grid: up to γ√n_bins/2 more.
        r = OneVsRestSketch(c, n_bins, (3.0, 7.0)).resolution * np.sqrt(n_bins) / 2
        for j in range(c):
            assert np.linalg.norm(pos[j] - pos3[j]) <= 3.0 + r
            assert np.linalg.norm(neg[j] - neg3[j]) <= 7.0 + r
            assert np.linalg.norm(pos[j] - pos2[j]) <= 2 * (3.0 + r)
            assert np.linalg.norm(neg[j] - neg2[j]) <= 2 * (7.0 + r)


def test_update_clipping_bounds_one_clients_influence() -> None:
    c = 3
    rng = np.random.default_rng(2)
    base = _clients(3, 6, c)
    w = initial_parameters("vector", c)

    def objective(w: np.ndarray, z: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
        return nll_and_grad("vector", w, z, y)

    def fit(w0: np.ndarray, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        return fit_local(objective, w0, z, y, max_iter=20)

    def total(clients: list[tuple[np.ndarray, np.ndarray]], clip: float | None) -> np.ndarray:
        fed = Federation.from_clients(clients)
        logits = dataclasses.replace(fed, scores=np.log(np.maximum(fed.scores, 1e-300)))
        sketch = ScalerUpdateSketch(fit, w, clip)
        # Clipped updates are sent in fixed point: back to parameter units.
        return np.asarray(sketch.encode_clients(logits)) * sketch.resolution

    t0 = total(base, 0.5)
    # Not vacuous: without clipping, removing client 0 moves the sum by more than C.
    assert np.linalg.norm(total(base, None) - total(base[1:], None)) > 0.5
    # Clipped to C, then rounded: at most γ√d/2 more.
    r = ScalerUpdateSketch(fit, w, 0.5).resolution * np.sqrt(w.size) / 2
    assert np.linalg.norm(t0 - total(base[1:], 0.5)) <= 0.5 + r
    wild_clients = []
    for _ in range(3):
        n = int(rng.integers(1, 300))
        wild_clients.append((rng.dirichlet(np.full(c, 0.05), size=n), rng.integers(0, c, size=n)))
    # Adversarial replacements: confident scores whose labels are always the least likely
    # class; without clipping they move the sum by more than 2C.
    for _ in range(2):
        n = int(rng.integers(100, 300))
        p = rng.dirichlet(np.full(c, 0.05), size=n)
        wild = (p, np.argmin(p, axis=1))
        assert np.linalg.norm(total(base, None) - total([wild, *base[1:]], None)) > 2 * 0.5
        wild_clients.append(wild)
    for wild in wild_clients:
        assert np.linalg.norm(t0 - total([wild, *base[1:]], 0.5)) <= 2 * (0.5 + r)


def test_clip_helpers() -> None:
    v = np.array([3.0, 4.0])
    np.testing.assert_allclose(clip_l2(v, 1.0), [0.6, 0.8])
    np.testing.assert_allclose(clip_l2(v, 10.0), v)
    # Per-histogram clipping of one client (OneVsRestSketch.encode), C+ = 1: class 0's
    # positive histogram holds 4 and 3 examples in bins 2 and 3 (norm 5) -> (0.8, 0.6);
    # class 1 has no positives (norm 0: stays 0, no NaN); class 2's one positive (norm 1)
    # stays as it is.
    probs = np.array([[0.9, 0.05, 0.05]] * 3 + [[0.6, 0.2, 0.2]] * 4 + [[0.1, 0.1, 0.8]])
    labels = np.array([0] * 7 + [2])
    sketch = OneVsRestSketch(3, 4, (1.0, 100.0))
    # Sent in fixed point: back to counts, exact to the grid step γ.
    step = sketch.resolution
    vec = sketch.encode(probs, labels, np.zeros(8, dtype=np.int64)) * step
    pos = vec[:12].reshape(3, 4)
    np.testing.assert_allclose(pos[0], [0.0, 0.0, 0.8, 0.6], atol=step)
    np.testing.assert_array_equal(pos[1], 0.0)
    np.testing.assert_allclose(np.linalg.norm(pos, axis=1), [1.0, 0.0, 1.0], atol=step)
    # The vectorised many-client encoding clips the same way as the one-client encoding.
    fed = Federation.from_clients(_clients(5, 7, 3))
    one_by_one = sum(
        sketch.encode(fed.client(k).scores, fed.client(k).labels, np.full(1, k))
        for k in range(fed.n_clients)
    )
    # Both round every client's clipped histogram to units: identical integers.
    np.testing.assert_array_equal(sketch.encode_clients(fed), one_by_one)


@pytest.mark.parametrize(
    ("epsilon", "rounds", "rate"), [(1.0, 12, 0.1), (3.0, 12, 0.1), (1.0, 1, 1.0)]
)
def test_accountant_matches_direct_dp_accounting(epsilon: float, rounds: int, rate: float) -> None:
    # The paper's settings: δ = 1e-5, T = 12, 10 of 100 clients per round, ε ∈ {1, 3}.
    sketch = ScalerUpdateSketch(lambda w, z, y: w, np.ones(1), 0.5)
    mech = mechanism_for(
        UserLevelDP(epsilon, 1e-5, clip=0.5),
        sketch,
        n_clients=100,
        rounds=rounds,
        sampling_rate=rate,
    )
    (entry,) = mech.ledger_entries
    z = entry.details["noise_multiplier"]
    gaussian = GaussianDpEvent(z)
    event = gaussian if rate == 1.0 else PoissonSampledDpEvent(rate, gaussian)
    acc = RdpAccountant()
    acc.compose(SelfComposedDpEvent(event, rounds))
    pld = PLDAccountant(value_discretization_interval=1e-4)
    pld.compose(SelfComposedDpEvent(event, rounds))
    # The tighter of the two accountants, each computed here directly (the PLD more
    # finely than fedeval does, so fedeval's is at most 2e-3 above it).
    direct = min(acc.get_epsilon(1e-5), pld.get_epsilon(1e-5))
    assert mech.guarantee.epsilon == pytest.approx(direct, abs=2e-3)
    assert entry.epsilon == mech.guarantee.epsilon
    assert mech.guarantee.epsilon <= epsilon
    assert mech.guarantee.epsilon >= 0.99 * epsilon  # calibrated tightly
    assert acc.get_epsilon(1e-5) >= mech.guarantee.epsilon  # RDP, the cross-check, is looser
    # The noise added every round is z times the L2 sensitivity C = 0.5 (plus the
    # fixed-point allowance γ√d/2), discrete Gaussian in units of γ.
    assert isinstance(mech.noise, CentralNoise) and mech.noise.kind == "discrete_gaussian"
    step = sketch.resolution
    value_sigma = float(np.asarray(mech.noise.scale)) * step
    assert value_sigma == pytest.approx(z * (0.5 + step / 2), rel=1e-12)


def test_calibrator_records_privacy_and_charges_the_ledger() -> None:
    fed = Federation.from_clients(_clients(4, 10, 3))
    ledger = BudgetLedger(1.5, 1e-4)
    with pytest.warns(UserWarning, match="population"):
        cal = calibrate_multiclass(
            fed,
            UserLevelDP(1.0, 1e-5, clip=0.5),
            method="temperature",
            optimizer="fedavg",
            rounds=2,
            sampling_rate=0.5,
            rng=0,
            ledger=ledger,
        )
    # The receipt states the model and guarantee; ``procedure`` the facts of the rounds.
    assert cal.receipt["model"] == UserLevelDP(1.0, 1e-5, clip=0.5).describe()
    assert cal.procedure["rounds"] == 2 and cal.procedure["sampling_rate"] == 0.5
    assert set(cal.procedure["noise_std"]) == {"parameter updates"}
    assert cal.procedure["clip"] == 0.5 and "l2_sensitivity" not in cal.procedure
    assert 0.99 <= cal.epsilon_spent <= 1.0
    assert cal.guarantee.unit == "client" and cal.guarantee.delta == pytest.approx(1e-5)
    # The ledger composes the releases at least as tightly as their own receipts add up.
    assert ledger.spent_epsilon <= cal.epsilon_spent + 1e-9
    # Two charges, made together: the released population size (5%) and the rounds (95%).
    assert len(ledger.entries) == 2
    assert cal.privacy_receipt.entries == tuple(ledger.entries)
    assert "client count" in ledger.entries[1].label
    with pytest.raises(BudgetExceededError):
        calibrate_multiclass(
            fed,
            UserLevelDP(1.0, 1e-5, clip=0.5),
            method="temperature",
            optimizer="fedavg",
            rounds=2,
            sampling_rate=0.5,
            rng=0,
            ledger=ledger,
        )
    assert len(ledger.entries) == 2
    sa = calibrate_multiclass(fed, SecureAggregation(), method="bbq", rng=0)
    assert sa.epsilon_spent == 0.0 and sa.guarantee.unit == "none"


@pytest.mark.parametrize(
    ("method", "sketch", "clip", "options", "charges"),
    [
        ("temperature", ScalerUpdateSketch, 0.5, {"optimizer": "fedavg"}, 2),
        ("temperature", ScalerUpdateSketch, 0.5, {"optimizer": "fedavg", "population": 8}, 1),
        ("temperature", ClippedSumSketch, 0.5, {}, 1),
        ("binning", OneVsRestSketch, (2.0, 4.0), {}, 1),
    ],
)
def test_budget_is_charged_once_before_the_first_round(
    monkeypatch: pytest.MonkeyPatch,
    method: MulticlassMethod,
    sketch: type[OneVsRestSketch] | type[ScalerUpdateSketch] | type[ClippedSumSketch],
    clip: float | tuple[float, float],
    options: dict[str, Any],
    charges: int,
) -> None:
    # Changed semantics: the whole procedure is charged ONCE, before any round runs
    # (aggregation.Rounds), not after the calibrator is computed. DP-FedAvg without
    # a declared population also releases the number of clients: both charges are
    # made together, before the first round.
    fed = Federation.from_clients(_clients(6, 8, 3))
    ledger = BudgetLedger(1.5, 1e-4)
    seen: list[int] = []
    encode = sketch.encode_clients

    def spy(self: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(len(ledger.entries))
        return encode(self, *args, **kwargs)

    monkeypatch.setattr(sketch, "encode_clients", spy)
    privacy = UserLevelDP(1.0, 1e-5, clip=clip)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        cal = calibrate_multiclass(
            fed,
            privacy,
            method=method,
            rounds=3,
            sampling_rate=1.0,
            rng=0,
            ledger=ledger,
            **options,
        )
    assert seen == [charges] * 3  # three rounds, every one after the single charge
    assert len(ledger.entries) == charges
    # The ledger composes the releases at least as tightly as their own receipts add up.
    assert ledger.spent_epsilon <= cal.epsilon_spent + 1e-9
    assert cal.privacy_receipt.entries == tuple(ledger.entries)
    # Refused: nothing is encoded, nothing charged.
    seen.clear()
    with pytest.raises(BudgetExceededError):
        calibrate_multiclass(
            fed,
            privacy,
            method=method,
            rounds=3,
            sampling_rate=1.0,
            rng=0,
            ledger=ledger,
            **options,
        )
    assert seen == [] and len(ledger.entries) == charges


def test_poisson_sampling_rate() -> None:
    counts = [sample_participants(1000, 0.1, rng=s).size for s in range(50)]
    assert abs(np.mean(counts) - 100) < 5
    assert sample_participants(7, 1.0, rng=0).tolist() == list(range(7))
