"""End-to-end privacy audits of the multiclass evaluation release (issue 17).

The release is one :class:`~fedeval.sketches.multiclass.MulticlassSketch`: an
example touches one cell in each of its c + 5 parts. Every audit calls the
public entry point (``fe.evaluate_multiclass``, which ``fe.evaluate`` reaches
for multiclass federations) on neighbouring federations and observes a scalar
of the released vector; c = 2, so there are 7 parts.

(a) **DistributedDP, add/remove one example** (ε = 3, Pólya shares, every
    client encodes every part, the planned sketch: integer multiplicities r_k
    per part and the one-vs-rest histograms split into every class's
    negatives and positives, so one example adds r_k to m_k cells of part k
    and L1 = Σ r_k m_k; noise of that L1 on every integer coordinate). D holds
    four examples on four clients; D′ adds one example to client 0 (the
    number of clients, public, is unchanged). Observed: how far the added
    example's cells (in counts, integer value over r_k) exceed D's counts,
    each clipped to [0, 1] and weighted by r_k. Each integer coordinate's noise is
    discrete Laplace with α = e^(−ε/L1), and P[X ≥ r − s]/P[X ≥ r] for a shift
    s = r is exactly α^(−r), so the event {all cells exceed by ≥ 1} has likelihood ratio
    α^(−Σ r_k m_k) = e^ε: the audit is tight in the limit, and the power check
    (noise for 2ε, half the scale) has ratio e^(2ε). The observation is the
    likelihood-ratio statistic Σ_k r_k·clip(shift_k, 0, 1), whose thresholds
    are the most powerful events (with few trials the event over all cells is
    rare).
(b) **LocalDP, replace one example** (ε = 1, OUE). A federation of one example
    (other examples' reports only blur one report). D: p = (0.9, 0.1) with
    label 0; D′: the same probabilities with label 1, which changes the
    example's cell in every part (confusion row, both one-vs-rest halves,
    rank, correct/wrong, both losses). The client reports one part, the other
    parts are empty, so the sum over parts of (released value at D's cell −
    released value at D′'s cell) is one debiased OUE report's difference of
    two bits: the event {> 0} has likelihood ratio exactly e^ε. Power check:
    OUE at 2ε.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import fedeval as fe
from audit_cases import FAST, Case, check_guarantee, check_honest, check_power, params
from fedeval.sketches.multiclass import MulticlassSketch

pytestmark = pytest.mark.privacy

OPTIONS = {"n_bins": 16, "loss_bins": 4, "ece_bins": 4}

# (a) add/remove under distributed DP
BASE_P = np.array([[0.8, 0.2], [0.3, 0.7], [0.6, 0.4], [0.1, 0.9]])
BASE_Y = np.array([0, 1, 1, 0])
ADDED_P, ADDED_Y = np.array([[0.35, 0.65]]), np.array([1])
D_ADD = fe.Federation.from_arrays(BASE_P, BASE_Y, np.arange(4), kind="probabilities")
D_ADD_PRIME = fe.Federation.from_arrays(
    np.vstack([BASE_P, ADDED_P]), np.r_[BASE_Y, ADDED_Y], np.r_[np.arange(4), 0],
    kind="probabilities",
)  # fmt: skip
DISTDP = fe.DistributedDP(3.0)


def _planned_sketch(fed: fe.Federation, model: Any) -> MulticlassSketch:
    """The sketch fe.evaluate_multiclass releases for these options (its plan is public)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return fe.evaluate_multiclass(fed, model, rng=0, **OPTIONS).sketch


# The planned sketch weights its parts (integer multiplicities) and splits the
# one-vs-rest histograms; in count units a cell's value is (r_k·count + noise)/r_k,
# so "exceeds D's count by at least 1" is "noise ≥ r_k(1 − shift)" in integer units.
SKETCH = _planned_sketch(D_ADD, DISTDP)
BASE_COUNTS = SKETCH.encode(BASE_P, BASE_Y, np.arange(4)) * SKETCH.resolution
ADDED_CELLS = SKETCH.cells(ADDED_P, ADDED_Y)[0]
_PART_OF_CELL = np.searchsorted(SKETCH.part_offsets(), ADDED_CELLS, side="right") - 1
ADDED_WEIGHTS = SKETCH.part_weights[_PART_OF_CELL].astype(np.float64)

# (b) replace one example under local DP
ONE_P = np.array([[0.9, 0.1]])
D_LDP = fe.Federation.from_arrays(ONE_P, np.array([0]), kind="probabilities")
D_LDP_PRIME = fe.Federation.from_arrays(ONE_P, np.array([1]), kind="probabilities")
LOCAL = fe.LocalDP(1.0)
LOCAL_SKETCH = _planned_sketch(D_LDP, LOCAL)
CELLS_D = LOCAL_SKETCH.cells(ONE_P, np.array([0]))[0]
CELLS_D_PRIME = LOCAL_SKETCH.cells(ONE_P, np.array([1]))[0]
assert np.all(CELLS_D != CELLS_D_PRIME)  # the replaced example moves in every part


def _release(model: Any) -> Any:
    def run(fed: fe.Federation, rng: np.random.Generator) -> Any:
        return fe.evaluate_multiclass(fed, model, rng=rng, **OPTIONS)

    return run


def _cells_above_base(ev: Any) -> float:
    """Σ_k r_k · clip(released count − D's count, 0, 1) over the added example's cells.

    In integer units x_k (noise plus, on D′, the shift r_k) this is
    Σ clip(x_k, 0, r_k): for discrete Laplace of α = e^(−ε/L1) the log
    likelihood ratio of D′ over D is (ε/L1) Σ_k (2 clip(x_k, 0, r_k) − r_k),
    so thresholds on it are the Neyman–Pearson events, and its maximum
    Σ r_k m_k = L1 is the tight event of the module docstring (without
    weights: the number of cells that exceed D's count by at least 1).
    """
    shifted = ev.counts.vector() - BASE_COUNTS
    return float(np.sum(ADDED_WEIGHTS * np.clip(shifted[ADDED_CELLS], 0.0, 1.0)))


def _report_difference(ev: Any) -> float:
    v = ev.counts.vector()
    return float(np.sum(v[CELLS_D]) - np.sum(v[CELLS_D_PRIME]))


MC_CASES = [
    Case(
        "evaluate (multiclass), DistributedDP: cells of the added example",
        _release(DISTDP),
        _cells_above_base,
        D_ADD,
        D_ADD_PRIME,
        claimed=3.0,
        neighbouring="add_remove",
        seed=171,
    ),
    Case(
        "evaluate (multiclass), LocalDP: one report's two bits",
        _release(LOCAL),
        _report_difference,
        D_LDP,
        D_LDP_PRIME,
        claimed=1.0,
        seed=172,
    ),
]
MC_POWER = [
    Case(
        "evaluate (multiclass), DistributedDP: cells of the added example",
        _release(DISTDP),
        _cells_above_base,
        D_ADD,
        D_ADD_PRIME,
        claimed=3.0,
        neighbouring="add_remove",
        broken="half_noise",
        seed=173,
    ),
    Case(
        "evaluate (multiclass), LocalDP: one report's two bits",
        _release(LOCAL),
        _report_difference,
        D_LDP,
        D_LDP_PRIME,
        claimed=1.0,
        broken="half_noise",
        seed=174,
    ),
]
CASES = MC_CASES + MC_POWER
"""Every case of this module, for ``tools/audit_table.py``."""


def test_receipt_splits_the_budget_over_the_parts() -> None:
    with pytest.warns(UserWarning, match="not clearly above the privacy noise"):
        ev = fe.evaluate_multiclass(D_ADD, DISTDP, rng=0, **OPTIONS)
    rows = ev.privacy_receipt()
    # No public size: a noisy example count plans the resolution (its own row), then
    # confusion, one-vs-rest negatives and positives, rank, top-label, log loss, Brier.
    assert len(rows) == 8 and sum(r["release"].startswith("example count") for r in rows) == 1
    assert sum(r["epsilon"] for r in rows) == pytest.approx(3.0)
    sk = ev.sketch
    l1 = int(np.sum(sk.part_weights * sk.cells_per_example))
    assert ev.receipt.as_dict()["sensitivity"]["l1"] == l1
    # One added example moves exactly L1 integer units of the vector (the bound is tight).
    moved = SKETCH.encode(D_ADD_PRIME.scores, D_ADD_PRIME.labels, np.zeros(5, dtype=np.int64))
    base = SKETCH.encode(BASE_P, BASE_Y, np.zeros(4, dtype=np.int64))
    assert int(np.abs(moved - base).sum()) == l1


@pytest.mark.parametrize("case", params(MC_CASES, "xfail_guarantee"))
def test_guarantee_states_the_audited_relation(case: Case) -> None:
    check_guarantee(case)


@pytest.mark.parametrize("case", params(MC_CASES, "xfail_audit"))
def test_multiclass_audit_fast(case: Case, record_property: Any) -> None:
    check_honest(case, FAST, record_property)


@pytest.mark.slow
@pytest.mark.parametrize("case", params(MC_CASES, "xfail_audit"))
def test_multiclass_audit_slow(case: Case, record_property: Any) -> None:
    check_honest(case, case.slow, record_property)


@pytest.mark.parametrize("case", params(MC_POWER))
def test_multiclass_audit_detects_half_the_noise(case: Case, record_property: Any) -> None:
    check_power(case, FAST, record_property)
