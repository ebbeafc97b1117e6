"""Issue 12, finding 3: example-level DP with a contribution bound B.

A client holding more than B examples is subsampled to B before it encodes. The
bound must be B (the old code kept 1 example whatever B was), and the noise
must be calibrated to what one added example can do *after* subsampling: it
may displace a kept example, a swap, which moves one count down and another
up at every level (L1 = 2 per level, not 1). With B = 1, one level and the old
calibration, the exact ε of the release is ln(½ + ½e^{2ε}) = 1.434 at a claimed
ε = 1; the audit below measures it through ``fe.evaluate``.

Also finding 1's variance leak: with ``min_clients_fraction < 1`` the noise
variance must not depend on the number of clients.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import fedeval as fe
from dp_audit import audit, run_many
from fedeval.privacy.mechanism_for import mechanism_for
from fedeval.sketches.hierarchy import HierarchySketch, HierarchySpec

pytestmark = pytest.mark.privacy


def test_the_bound_is_b_and_the_sensitivity_is_a_swap() -> None:
    sketch = HierarchySketch(HierarchySpec(4, 2, (0.0, 1.0), 2))
    mech = mechanism_for(fe.DistributedDP(1.0, contribution_bound=3), sketch, n_clients=10)
    assert mech.contribution_bound == 3
    assert mech.sensitivity is not None
    # 4 levels, a swap changes 2 counts per level.
    assert mech.sensitivity.l1 == 8
    assert "displace" in mech.guarantee.statement
    # Without a bound nothing is subsampled and one example is one count per level.
    plain = mechanism_for(fe.DistributedDP(1.0), sketch, n_clients=10)
    assert plain.contribution_bound is None and plain.sensitivity is not None
    assert plain.sensitivity.l1 == 4


def test_a_client_keeps_b_examples() -> None:
    # Client 0 holds 5 positives, all in the top leaf; bound 3: the release's
    # positive total is 3 plus noise (ε large so the noise is negligible).
    # Client 1 holds one negative.
    fed = fe.Federation.from_arrays(
        np.r_[np.full(5, 0.9), 0.1], np.r_[np.ones(5, int), 0], np.r_[np.zeros(5, int), 1]
    )
    ev = fe.evaluate(fed, fe.DistributedDP(200.0, contribution_bound=3), height=2, rng=0)
    assert ev.tree.totals()[1] == pytest.approx(3.0, abs=0.5)


def _joint_tail(extra: bool):
    """min(c_B, 1 − c_A) of the released positive counts c_A of [0, 0.5), c_B of [0.5, 1).

    D: client 0 holds one positive at 0.2 (client 1 one negative). D′: client 0
    also holds a positive at 0.8. With B = 1, D′'s client 0 keeps either
    positive with probability ½: a swap between the two leaves. The most
    telling event is the joint tail {c_A ≤ 0 and c_B ≥ 1}, folded into one
    number as {min(c_B, 1 − c_A) ≥ 1}; its probability ratio is exactly
    ½ + ½e^{2ε} under the old calibration.
    """
    scores = [0.2, 0.8] if extra else [0.2]
    fed = fe.Federation.from_arrays(
        np.array([0.5, *scores]),
        np.array([0] + [1] * len(scores)),
        np.array([1] + [0] * len(scores)),
    )
    model = fe.DistributedDP(1.0, contribution_bound=1)

    def one(rng: np.random.Generator) -> float:
        # Tiny data: evaluate() warns that a class is small against the noise; the audit
        # reads only the released counts.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            leaves = fe.evaluate(fed, model, height=1, rng=rng).tree.levels[0]
        return float(min(leaves[1, 1], 1.0 - leaves[1, 0]))

    return run_many(one)


@pytest.mark.slow
def test_audit_add_an_example_to_a_client_at_its_bound() -> None:
    res = audit(_joint_tail(False), _joint_tail(True), claimed_epsilon=1.0, seed=11)
    assert res.epsilon_lower <= 1.0, res


def test_audit_add_an_example_to_a_client_at_its_bound_fast() -> None:
    res = audit(
        _joint_tail(False),
        _joint_tail(True),
        claimed_epsilon=1.0,
        trials=4_000,
        pilot=1_000,
        seed=12,
        confidence=0.999,
    )
    assert res.epsilon_lower <= 1.0, res


def test_noise_variance_does_not_depend_on_the_number_of_clients() -> None:
    """Shares calibrated to the real threshold f·n: n shares always sum to shape 1/f."""
    sketch = HierarchySketch(HierarchySpec(3, 2, (0.0, 1.0), 2))
    model = fe.DistributedDP(1.0, min_clients_fraction=0.5)
    variances = set()
    for n in (10, 11, 37, 1000):
        mech = mechanism_for(model, sketch, n_clients=n)
        assert mech.noise is not None
        variances.add(round(float(np.max(mech.noise.variance(n))), 9))
        # The release still needs ceil(f·n) shares to arrive.
        assert mech.min_received == math.ceil(0.5 * n)
    assert len(variances) == 1
