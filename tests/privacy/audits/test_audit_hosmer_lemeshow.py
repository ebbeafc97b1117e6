"""End-to-end privacy audit of ``fe.metrics.hosmer_lemeshow`` (issue 12, finding 2).

The DP Hosmer–Lemeshow statistic (Algorithm 2 of Barczewski et al. 2025)
releases a tree ECDF of the probabilities (for the cut points), the observed
counts O and the expected counts E = Σp, Σ(1 − p) per group. E is a sum of
real numbers: released as a float plus continuous Laplace noise it is open to
the floating-point attack of Mironov (2012); an auditor got a lower bound of
7.41 against the claimed ε.

Neighbours (the default model ``DistributedDP(ε, neighbouring="replace")``,
unit one example; n and the number of groups are public, equal here): three
examples with labels (0, 1, 1) and probabilities

    D = (0, 0, 0)        D′ = (0, 0, 1)        (the third example replaced).

The positive-column expected count of the last group, E_{1,Q} = Σ p over
(t_{Q−1}, 1], is 0 under D whatever the noisy cut points are, and 1 under D′
whenever the noisy last cut point is below 1 (groups are right-closed). That is the float attack's best case:
true values 0 and 1, where 0 + η keeps the low-order bits of the noise and
1 + η rounds them away. Smallest tree (L = 1, ε′ = ε/10) and ``groups=3`` keep
the noise small; ``min_expected=2^-30`` (a power of two) floors the negative
noisy values without creating low-order bits. One call takes about half a
millisecond.

Observed: E_{1,Q} (the attack target) and, as a second audit of the same
release, the observed count O_{1,Q} (discrete noise; the replaced example moves
into the last group).

Against the code before the fixed-point expected sums (commit 06c2299:
continuous Laplace shares, b·(G − G′) with G, G′ ~ Gamma(1), on float sums)
the slow audit gives a lower bound of 2.17 at confidence 0.999 (lattice
event, 90-odd hits under D and none under D′) and fails, as it should. The
pattern is rare with that sampler (about 0.45% of the runs: a difference of
two Gamma draws ≥ ½ has no bits below 2^-53), so the slow audit uses a
10,000-run pilot, and the 3,000-trial fast audit has no power against it;
the fast power check below (numpy Laplace, about 2% of the runs) does.

Power check: the same audit with the noise replaced by continuous numpy
Laplace of the same variance on the floats must go above the claim. A
half-noise check has no power here: one group sum carries only 4ε′ = 0.4ε of
the budget, spread over a declared L1 sensitivity of 4, so halving its noise
leaves that coordinate far below ε.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import fedeval as fe
from audit_cases import (
    FAST,
    SLOW_WIDE_PILOT,
    Case,
    check_guarantee,
    check_honest,
    check_power,
    params,
)

pytestmark = pytest.mark.privacy

LABELS = np.array([0, 1, 1])
MODEL = fe.DistributedDP(1.0, neighbouring="replace")


def _release(probs: Any, rng: np.random.Generator) -> Any:
    return fe.metrics.hosmer_lemeshow(
        probs, LABELS, MODEL, groups=3, height=1, min_expected=2.0**-30, rng=rng
    )


def _expected_last_group(result: Any) -> float:
    return float(result.expected[-1, 1])


def _observed_last_group(result: Any) -> float:
    return float(result.observed[-1, 1])


D = np.array([0.0, 0.0, 0.0])
D_PRIME = np.array([0.0, 0.0, 1.0])

HL_CASES = [
    Case(
        "metrics.hosmer_lemeshow: E_{1,Q} (replace)",
        _release,
        _expected_last_group,
        D,
        D_PRIME,
        claimed=1.0,
        seed=21,
        slow=SLOW_WIDE_PILOT,
    ),
    Case(
        "metrics.hosmer_lemeshow: O_{1,Q} (replace)",
        _release,
        _observed_last_group,
        D,
        D_PRIME,
        claimed=1.0,
        seed=22,
        fast=False,
    ),
]

HL_POWER = [
    Case(
        "metrics.hosmer_lemeshow: E_{1,Q} (replace)",
        _release,
        _expected_last_group,
        D,
        D_PRIME,
        claimed=1.0,
        broken="continuous_laplace",
        seed=23,
    ),
]

CASES = HL_CASES + HL_POWER
"""Every case of this module, for ``tools/audit_table.py``."""


@pytest.mark.parametrize("case", params(HL_CASES[:1], "xfail_guarantee"))
def test_guarantee_states_the_audited_relation(case: Case) -> None:
    check_guarantee(case)


@pytest.mark.parametrize("case", params([c for c in HL_CASES if c.fast], "xfail_audit"))
def test_hosmer_lemeshow_audit_fast(case: Case, record_property: Any) -> None:
    check_honest(case, FAST, record_property)


@pytest.mark.slow
@pytest.mark.parametrize("case", params(HL_CASES, "xfail_audit"))
def test_hosmer_lemeshow_audit_slow(case: Case, record_property: Any) -> None:
    check_honest(case, case.slow, record_property)


@pytest.mark.parametrize("case", params(HL_POWER))
def test_hosmer_lemeshow_audit_detects_continuous_laplace_on_floats(
    case: Case, record_property: Any
) -> None:
    check_power(case, FAST, record_property)
