"""The contribution bound over a streamed scan, audited end to end through ``fe.scan``.

``test_audit_contribution_bound.py`` audits the bound on in-memory federations;
a file read by :func:`fedeval.scan` takes another route (the streamed selection
sampling of :mod:`fedeval.aggregation.streamed_bound`, batch by batch), so the
same neighbouring pair is audited here through the files. D: client 0 holds one
positive at 0.2, client 1 one negative; D′: client 0 also holds a positive at
0.8, in a row of its own. With B = 1 D′'s client 0 keeps either positive with
probability ½ (a swap between the two leaves), and the observed number folds
the joint tail {c_A ≤ 0 and c_B ≥ 1} of the released positive counts of
[0, 0.5) and [0.5, 1) into one statistic, the most telling event (its ratio is
½ + ½e^{2ε} under a calibration that forgets the swap). The twin releases the
noise of 2ε while claiming ε and must be caught.

Each trial reads a CSV file (~15 ms), so both audits are ``slow`` (run with
``pytest -m slow``).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import fedeval as fe
from dp_audit import audit, run_many

pytestmark = pytest.mark.privacy

MODEL = fe.DistributedDP(1.0, contribution_bound=1)
BUDGET = {"trials": 6_000, "pilot": 1_500, "confidence": 0.999}


def _joint_tail(path: Path):
    def one(rng: np.random.Generator) -> float:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            src = fe.scan(path, score="score", label="label", client="client", progress=False)
            leaves = fe.evaluate(src, MODEL, height=1, rng=rng).tree.levels[0]
        return float(min(leaves[1, 1], 1.0 - leaves[1, 0]))

    return run_many(one)


@pytest.fixture
def neighbours(tmp_path: Path) -> tuple[Path, Path]:
    d, d_prime = tmp_path / "d.csv", tmp_path / "d_prime.csv"
    d.write_text("score,label,client\n0.5,0,1\n0.2,1,0\n")
    d_prime.write_text("score,label,client\n0.5,0,1\n0.2,1,0\n0.8,1,0\n")
    return d, d_prime


@pytest.mark.slow
def test_audit_the_scan_bound_add_an_example_at_the_bound(neighbours) -> None:
    d, d_prime = neighbours
    res = audit(_joint_tail(d), _joint_tail(d_prime), claimed_epsilon=1.0, seed=31, **BUDGET)
    assert res.epsilon_lower <= 1.0, res


@pytest.mark.slow
def test_power_the_scan_bound_with_half_the_noise_is_caught(neighbours, half_the_noise) -> None:
    d, d_prime = neighbours
    res = audit(_joint_tail(d), _joint_tail(d_prime), claimed_epsilon=1.0, seed=32, **BUDGET)
    assert res.epsilon_lower > 1.0, res
