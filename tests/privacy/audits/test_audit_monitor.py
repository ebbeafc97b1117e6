"""Issue 26: end-to-end audits of a monitor's whole transcript through the public API.

Every run makes a monitor with ``fe.monitor`` (ε = 1 for the whole horizon),
releases T = 4 periods with ``update`` and reads every row it published
(``mon.transcript`` and ``mon.row_periods()``). The two datasets differ in:

(a) **one example in one period** (event level, add/remove): a positive with
    score 0.9 added to period 1, for the binary tree (the example reaches the
    3 nodes [1,1], [1,2], [1,4]) and for the square-root factorization (it
    reaches every row 1..4, with weights round(1024 c_k));
(b) **one client across periods** (``unit="client"``, contribution bound 2
    over the horizon): a client with one positive in period 1 and one in
    period 3 (tree: the rows [1,1], [1,2], [3,3], [3,4] move by 1 and [1,4]
    by 2).

The statistic reads the whole transcript: with z_i = y_i − a_i every row the
change reaches minus its value on D (the exact rows, from the same monitor run
under secure aggregation) and d_i the change, o = Σ_i (|z_i| − |z_i − d_i|),
the privacy loss of D′ against D in units of 1/b (Neyman–Pearson: its
threshold events are the most powerful). The hierarchy has height 1 (one
level, so the rows carry the whole budget) and the noise of every row is
discrete Laplace of scale b = L1/ε, L1 = Σ_i d_i; the event {o = Σ_i d_i}
(every z_i ≥ d_i) has likelihood ratio Π α^(−d_i) = e^ε exactly, so the audit
is tight, and a half-noise twin (the noise of 2ε, the claim and the charge of
ε) must be caught. One-sided Clopper–Pearson at 0.999.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

import fedeval as fe
from dp_audit import Draw, audit

pytestmark = pytest.mark.privacy

CONFIDENCE = 0.999
FAST = {"trials": 2_000, "pilot": 600}
FULL = {"trials": 20_000, "pilot": 4_000}
HORIZON = 4


def _periods(extra: list[tuple[int, int]]) -> list[fe.Federation]:
    """Four periods of 12 one-example clients; ``extra`` adds (period, client) positives at 0.9.

    Every client of D holds one example over the whole horizon, within any
    contribution bound, so no subsampling blurs the audit.
    """
    rng = np.random.default_rng(2026)
    out = []
    for t in range(1, HORIZON + 1):
        s = rng.random(12)
        y = rng.integers(0, 2, 12)
        c = 100 * t + np.arange(12)
        for period, client in extra:
            if period == t:
                s, y, c = np.r_[s, 0.9], np.r_[y, 1], np.r_[c, client]
        out.append(fe.Federation.from_arrays(s, y, c))
    return out


def _run(model: Any, mechanism: str, periods: list[fe.Federation], rng: Any) -> fe.Monitor:
    mon = fe.monitor(
        model, horizon=HORIZON, examples_per_period=12, height=1, mechanism=mechanism, rng=rng
    )
    for fed in periods:
        mon.update(fed)
    return mon


def _change(model: Any, mechanism: str, extra: list[tuple[int, int]]) -> NDArray[np.float64]:
    """d: how much every coordinate of every row moves from D to D′ (exact sums)."""
    exact = fe.SecureAggregation()
    d = _run(exact, mechanism, _periods([]), None).transcript
    d_prime = _run(exact, mechanism, _periods(extra), None).transcript
    return np.asarray(d_prime - d, dtype=np.float64)


def _draw(model: Any, mechanism: str, extra_in_d: list[tuple[int, int]], change: Any) -> Draw:
    truth = _run(fe.SecureAggregation(), mechanism, _periods([]), None).transcript
    reached = change != 0
    periods = _periods(extra_in_d)

    def draw(n: int, seed: np.random.SeedSequence) -> NDArray[np.float64]:
        out = np.empty(n)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            for k, s in enumerate(seed.spawn(n)):
                y = _run(model, mechanism, periods, np.random.default_rng(s)).transcript
                z = (y - truth)[reached]
                out[k] = np.sum(np.abs(z) - np.abs(z - change[reached]))
        return out

    return draw


CASES = {
    "tree, one example in period 1": (fe.DistributedDP(1.0), "tree", [(1, 99)]),
    "factorization, one example in period 1": (fe.DistributedDP(1.0), "factorization", [(1, 99)]),
    "tree, one client in periods 1 and 3": (
        fe.DistributedDP(1.0, unit="client", contribution_bound=2),
        "tree",
        [(1, 99), (3, 99)],
    ),
}


def _audit(case: str, size: dict[str, int], seed: int) -> Any:
    model, mechanism, extra = CASES[case]
    change = _change(model, mechanism, extra)
    assert change.sum() > 0
    return audit(
        _draw(model, mechanism, [], change),
        _draw(model, mechanism, extra, change),
        claimed_epsilon=1.0,
        seed=seed,
        confidence=CONFIDENCE,
        **size,
    )


def test_the_change_reaches_the_rows_the_strategy_says() -> None:
    model, _, extra = CASES["tree, one client in periods 1 and 3"]
    change = _change(model, "tree", extra)
    mon = _run(fe.SecureAggregation(), "tree", _periods([]), None)
    reached = {mon.row_periods()[i][:2]: float(change[i].sum()) for i in range(len(change))}
    assert {k: v for k, v in reached.items() if v} == {
        (1, 1): 1.0, (1, 2): 1.0, (3, 3): 1.0, (3, 4): 1.0, (1, 4): 2.0,
    }  # fmt: skip
    # L1 of the change = the sensitivity the noise was calibrated to (2 examples × 3 nodes)
    assert (
        np.abs(change).sum()
        == fe.monitor(model, horizon=HORIZON, examples_per_period=12, height=1, mechanism="tree")
        .receipt()
        .sensitivity["l1"]
    )


@pytest.mark.parametrize("case", list(CASES))
def test_audit_the_whole_transcript_fast(case: str) -> None:
    res = _audit(case, FAST, seed=2600 + list(CASES).index(case))
    assert res.epsilon_lower <= 1.0, res


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_audit_the_whole_transcript(case: str) -> None:
    res = _audit(case, FULL, seed=2610 + list(CASES).index(case))
    assert res.epsilon_lower <= 1.0, res


@pytest.mark.usefixtures("half_the_noise")
@pytest.mark.parametrize(
    "case", ["tree, one example in period 1", "tree, one client in periods 1 and 3"]
)
def test_power_half_the_noise_is_caught(case: str) -> None:
    res = _audit(case, {"trials": 4_000, "pilot": 1_000}, seed=2620)
    assert res.epsilon_lower > 1.0, res
