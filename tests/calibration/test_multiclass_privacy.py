"""User-level DP of federated multiclass calibration (multiclass paper §4.3, Appendix B.1)."""

from __future__ import annotations

import numpy as np
import pytest
from dp_accounting import GaussianDpEvent, PoissonSampledDpEvent, SelfComposedDpEvent
from dp_accounting.rdp import RdpAccountant

from fedeval.calibration.federated import calibrate_multiclass, sample_participants
from fedeval.calibration.multiclass_binning import _aggregate_histograms
from fedeval.calibration.scaling import initial_parameters, nll_and_grad, sum_client_updates
from fedeval.calibration.user_dp import clip_l2, clip_rows_l2, plan_noise
from fedeval.data import Federation
from fedeval.privacy.ledger import BudgetExceededError, BudgetLedger
from fedeval.privacy.models import SecureAggregation, UserLevelDP


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
    h = _aggregate_histograms(
        fed,
        fed.scores,
        privacy,
        n_bins=n_bins,
        rounds=1,
        sampling_rate=1.0,
        noise_multiplier=0.0,
        gen=np.random.default_rng(0),
    )
    return h.positive, h.negative


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
        for j in range(c):
            assert np.linalg.norm(pos[j] - pos3[j]) <= 3.0 + 1e-9
            assert np.linalg.norm(neg[j] - neg3[j]) <= 7.0 + 1e-9
            assert np.linalg.norm(pos[j] - pos2[j]) <= 2 * 3.0 + 1e-9
            assert np.linalg.norm(neg[j] - neg2[j]) <= 2 * 7.0 + 1e-9


def test_update_clipping_bounds_one_clients_influence() -> None:
    c = 3
    rng = np.random.default_rng(2)
    base = _clients(3, 6, c)
    w = initial_parameters("vector", c)

    def objective(w: np.ndarray, z: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
        return nll_and_grad("vector", w, z, y)

    def total(clients: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        fed = Federation.from_clients(clients)
        logits = np.log(np.maximum(fed.scores, 1e-300))
        return sum_client_updates(
            fed, logits, w, objective, np.arange(fed.n_clients), clip=0.5, max_iter=20
        )

    t0 = total(base)
    assert np.linalg.norm(t0 - total(base[1:])) <= 0.5 + 1e-9
    for _ in range(3):
        n = int(rng.integers(1, 300))
        wild = (rng.dirichlet(np.full(c, 0.05), size=n), rng.integers(0, c, size=n))
        assert np.linalg.norm(t0 - total([wild, *base[1:]])) <= 2 * 0.5 + 1e-9


def test_clip_helpers() -> None:
    v = np.array([3.0, 4.0])
    np.testing.assert_allclose(clip_l2(v, 1.0), [0.6, 0.8])
    np.testing.assert_allclose(clip_l2(v, 10.0), v)
    rows = clip_rows_l2(np.array([[3.0, 4.0], [0.0, 0.0], [0.3, 0.4]]), 1.0)
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), [1.0, 0.0, 0.5])


@pytest.mark.parametrize(
    ("epsilon", "rounds", "rate"), [(1.0, 12, 0.1), (3.0, 12, 0.1), (1.0, 1, 1.0)]
)
def test_accountant_matches_direct_dp_accounting(epsilon: float, rounds: int, rate: float) -> None:
    # The paper's settings: δ = 1e-5, T = 12, 10 of 100 clients per round, ε ∈ {1, 3}.
    plan = plan_noise(UserLevelDP(epsilon, 1e-5, clip=0.5), rounds=rounds, sampling_rate=rate)
    gaussian = GaussianDpEvent(plan.noise_multiplier)
    event = gaussian if rate == 1.0 else PoissonSampledDpEvent(rate, gaussian)
    acc = RdpAccountant()
    acc.compose(SelfComposedDpEvent(event, rounds))
    direct = acc.get_epsilon(1e-5)
    assert plan.epsilon == pytest.approx(direct, rel=1e-9)
    assert direct <= epsilon
    assert direct >= 0.99 * epsilon  # calibrated tightly, not just conservatively


def test_calibrator_records_privacy_and_charges_the_ledger() -> None:
    fed = Federation.from_clients(_clients(4, 10, 3))
    ledger = BudgetLedger(1.5, 1e-4)
    cal = calibrate_multiclass(
        fed,
        UserLevelDP(1.0, 1e-5, clip=0.5),
        method="temperature",
        rounds=2,
        sampling_rate=0.5,
        rng=0,
        ledger=ledger,
    )
    assert cal.privacy["model"] == "userdp"
    assert cal.privacy["rounds"] == 2 and cal.privacy["sampling_rate"] == 0.5
    assert 0.99 <= cal.epsilon_spent <= 1.0
    assert cal.guarantee.unit == "client" and cal.guarantee.delta == 1e-5
    assert ledger.spent_epsilon == pytest.approx(cal.epsilon_spent)
    with pytest.raises(BudgetExceededError):
        calibrate_multiclass(
            fed,
            UserLevelDP(1.0, 1e-5, clip=0.5),
            method="temperature",
            rounds=2,
            sampling_rate=0.5,
            rng=0,
            ledger=ledger,
        )
    assert len(ledger.entries) == 1
    sa = calibrate_multiclass(fed, SecureAggregation(), method="bbq", rng=0)
    assert sa.epsilon_spent == 0.0 and sa.guarantee.unit == "none"


def test_poisson_sampling_rate() -> None:
    counts = [sample_participants(1000, 0.1, rng=s).size for s in range(50)]
    assert abs(np.mean(counts) - 100) < 5
    assert sample_participants(7, 1.0, rng=0).tolist() == list(range(7))
