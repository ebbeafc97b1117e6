"""Issue 25: end-to-end audits of the sliced evaluation and the comparison, through the public API.

Each audit runs the public entry point on two neighbouring federations many
times and bounds ε from below (``tests/dp_audit.py``: an event fixed by a
pilot, one-sided Clopper–Pearson bounds at 0.999). The height is pinned to 1
(a public parameter, so nothing is planned from the data) and the statistic is
read from what the call publishes, so each audit is tight: its best event has
a likelihood ratio of exactly e^ε. Each has a power twin: the same audit with
the noise of 2ε (half the noise) while the release still claims ε must report
a lower bound above the claim.

(a) **Slices, one example removed** (``DistributedDP(1.0)``, add/remove one
    example): a positive of slice "B" is in D and not in D′. Statistic: slice
    B's released positive count in the example's node (L1 = h = 1: one
    slice's hierarchy, whatever the number of slices).
(b) **Slices, one example moved between slices**
    (``DistributedDP(1.0, neighbouring="replace")``: moving an example is one
    replacement): the same positive is in slice "A" in D and in slice "B" in
    D′. Statistic: min(X_B − c_B, c_A − X_A), both slices' counts of its node,
    each shifted by 1 under noise of scale L1/ε = 2/ε, so the tail's ratio is
    e^(ε/2 + ε/2) = e^ε.
(c) **Comparison, one example removed** (``DistributedDP(1.0)``, pair grid of
    weight 1): the example adds 1 to a node of model A's hierarchy, one of
    model B's and one pair cell (L1 = 2h + 1 = 3, noise 3/ε). Statistic: the
    minimum of the three released counts minus D′'s, whose tail ratio is
    e^(3 · ε/3) = e^ε.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import fedeval as fe
from dp_audit import AuditResult, Draw, audit, run_many

pytestmark = pytest.mark.privacy

CONFIDENCE = 0.999
FAST = {"trials": 2_000, "pilot": 600}
FULL = {"trials": 20_000, "pilot": 4_000}


# --------------------------------------------------------------------- data
SCORES = np.r_[np.linspace(0.05, 0.45, 12), np.linspace(0.55, 0.95, 12)]
LABELS = np.tile([0, 1], 12)
SLICES = np.array(["A", "B", "C"] * 8)
VALUES = ["A", "B", "C"]
EXTRA_SCORE = 0.8  # node 1 at height 1


def _sliced(extra_in: str | None) -> tuple[fe.Federation, np.ndarray]:
    """24 examples in three slices; ``extra_in`` adds a positive at 0.8 to that slice."""
    s, y, sl = SCORES, LABELS, SLICES
    if extra_in is not None:
        s, y, sl = np.r_[s, EXTRA_SCORE], np.r_[y, 1], np.append(sl, extra_in)
    return fe.Federation.from_arrays(s, y), sl


def _count(sev: Any, value: str) -> float:
    """The slice's released positive count in node 1 of level 1."""
    return float(sev[value].tree.levels[0][1, 1])


def _base(value: str) -> float:
    return float(np.sum((value == SLICES) & (LABELS == 1) & (SCORES >= 0.5)))


def _removed(present: bool) -> Draw:
    fed, sl = _sliced("B" if present else None)

    def one(rng: np.random.Generator) -> float:
        sev = fe.evaluate(
            fed, fe.DistributedDP(1.0), slices=sl, slice_values=VALUES, height=1, rng=rng
        )
        return _count(sev, "B")

    return run_many(one)


def _moved(to: str) -> Draw:
    fed, sl = _sliced(to)
    model = fe.DistributedDP(1.0, neighbouring="replace")

    def one(rng: np.random.Generator) -> float:
        sev = fe.evaluate(fed, model, slices=sl, slice_values=VALUES, height=1, rng=rng)
        # In D the example is in A: X_A = c_A + 1 + η, X_B = c_B + η'.
        return min(_count(sev, "B") - _base("B"), _base("A") + 1 - _count(sev, "A"))

    return run_many(one)


def _compared(present: bool) -> Draw:
    rng0 = np.random.default_rng(11)
    a, b = SCORES, np.clip(SCORES + rng0.normal(0, 0.05, SCORES.size), 0, 1)
    y = LABELS
    if present:
        a, b, y = np.r_[a, 0.8], np.r_[b, 0.9], np.r_[y, 1]
    fa, fb = fe.Federation.from_arrays(a, y), fe.Federation.from_arrays(b, y)
    c_a = float(np.sum((LABELS == 1) & (SCORES >= 0.5)))
    c_b = float(np.sum((LABELS == 1) & (b[: SCORES.size] >= 0.5)))
    c_p = float(np.sum((LABELS == 1) & (SCORES >= 0.5) & (b[: SCORES.size] >= 0.5)))

    def one(rng: np.random.Generator) -> float:
        cmp = fe.compare(
            fa, fb, fe.DistributedDP(1.0), height=1, pair_bins=2, pair_weight=1, rng=rng
        )
        return min(
            float(cmp.a.tree.levels[0][1, 1]) - c_a,
            float(cmp.b.tree.levels[0][1, 1]) - c_b,
            float(cmp.pair.counts[1, 1, 1]) - c_p,
        )

    return run_many(one)


PAIRS = {
    "slices, one example removed": (lambda: _removed(True), lambda: _removed(False)),
    "slices, one example moved": (lambda: _moved("A"), lambda: _moved("B")),
    "compare, one example removed": (lambda: _compared(True), lambda: _compared(False)),
}


def _run(name: str, size: dict[str, int], seed: int) -> AuditResult:
    d, d_prime = PAIRS[name]
    return audit(d(), d_prime(), claimed_epsilon=1.0, seed=seed, confidence=CONFIDENCE, **size)


@pytest.mark.parametrize("name", list(PAIRS))
def test_audit_fast(name: str) -> None:
    res = _run(name, FAST, seed=2500 + list(PAIRS).index(name))
    assert res.epsilon_lower <= res.claimed_epsilon, res


@pytest.mark.slow
@pytest.mark.parametrize("name", list(PAIRS))
def test_audit(name: str) -> None:
    res = _run(name, FULL, seed=2510 + list(PAIRS).index(name))
    assert res.epsilon_lower <= res.claimed_epsilon, res


@pytest.mark.usefixtures("half_the_noise")
@pytest.mark.parametrize("name", list(PAIRS))
def test_power_half_the_noise_is_caught(name: str) -> None:
    res = _run(name, {"trials": 6_000, "pilot": 1_500}, seed=2520 + list(PAIRS).index(name))
    assert res.epsilon_lower > res.claimed_epsilon, res
