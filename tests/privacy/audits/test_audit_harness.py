"""The audit harness (tests/dp_audit.py) itself: valid on honest mechanisms, and with power.

Every end-to-end audit relies on it, so it is checked on mechanisms whose true
ε is known: an honest discrete Laplace count (lower bound ≤ ε, plug-in close
to ε), the same with half the noise (true ε doubled: the bound must exceed the
claim), and continuous Laplace on floats with true values 0 and 1 (Mironov
2012: the lattice event separates them; ε is effectively infinite).
"""

from __future__ import annotations

import numpy as np
import pytest

from dp_audit import audit
from fedeval.privacy.mechanisms.laplace import DiscreteLaplace

pytestmark = pytest.mark.privacy


def _count(true: int, noise: DiscreteLaplace):
    def draw(n: int, seed: np.random.SeedSequence) -> np.ndarray:
        return true + noise.sample(n, np.random.default_rng(seed)).astype(np.float64)

    return draw


def test_honest_discrete_laplace_passes_and_is_nearly_tight() -> None:
    eps = 1.0
    res = audit(
        _count(10, DiscreteLaplace(eps)),
        _count(11, DiscreteLaplace(eps)),
        claimed_epsilon=eps,
        seed=1,
    )
    assert res.epsilon_lower <= eps
    assert res.epsilon_hat > 0.8 * eps


def test_half_the_noise_is_detected() -> None:
    eps = 1.0
    weak = DiscreteLaplace(2 * eps)  # scale halved: true ε = 2
    res = audit(_count(10, weak), _count(11, weak), claimed_epsilon=eps, seed=2)
    assert res.epsilon_lower > eps, res


def test_continuous_laplace_on_floats_is_detected() -> None:
    eps = 1.0

    def draw(true: float):
        def run(n: int, seed: np.random.SeedSequence) -> np.ndarray:
            return true + np.random.default_rng(seed).laplace(0.0, 1 / eps, n)

        return run

    res = audit(draw(0.0), draw(1.0), claimed_epsilon=eps, seed=3)
    assert res.epsilon_lower > 3 * eps, res
    assert "2^53" in res.event


def test_integer_noise_scaled_by_a_power_of_two_never_shows_the_lattice_event() -> None:
    eps = 1.0

    def draw(true: int):
        def run(n: int, seed: np.random.SeedSequence) -> np.ndarray:
            k = DiscreteLaplace(eps / 1024).sample(n, np.random.default_rng(seed))
            return (true * 1024 + k) / 1024.0

        return run

    res = audit(draw(0), draw(1), claimed_epsilon=eps, seed=4)
    assert res.epsilon_lower <= eps
    assert "2^53" not in res.event
