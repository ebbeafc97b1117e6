"""Empirical privacy audit of the distributed-DP hierarchical histogram release.

Neighbouring datasets D and D' = D + one example (score s, label 1). The extra
example adds 1 to one node of class 1 at every level k = 1..h; each node gets
discrete Laplace noise with α = exp(-ε/h) (ε/h per level, fast path). The
auditor releases many times from each dataset and looks at the h affected nodes,
centred at D's counts: under D they are h independent noises N_k, under D'
they are N_k + 1.

Test events, fixed before looking at the data:

* E = {every affected node is >= its D count + 1}: P_D(E) = (α/(1+α))^h and
  P_D'(E) = (1/(1+α))^h, so P_D'(E)/P_D(E) = α^-h = e^ε. This is the
  likelihood-ratio-maximising event, so a correct mechanism is *exactly* tight
  on it: the audit has full power and must still stay below ε.
* F = {every affected node is <= its D count} (the mirror image, ratio e^ε in
  the other direction).
* One node alone (level 1): its event {>= count + 1} has ratio α^-1 = e^(ε/h),
  which audits the per-level split.

The empirical ε is log(P̂_hi / P̂_lo) with Clopper-Pearson bounds: its lower
confidence bound is log(CP_lower(P_hi) / CP_upper(P_lo)). With overall
confidence 1 - 1e-3 (Bonferroni over all bounds), a correct mechanism's lower
bound exceeds the claim with probability < 1e-3; the fixed seed makes the test
deterministic. Power: the lower bound must reach at least 70% of the claim.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from fedeval.data import Federation
from fedeval.privacy.models import DistributedDP
from helpers import release_hierarchy

pytestmark = pytest.mark.privacy

HEIGHT = 2
TRIALS = 8000
CONFIDENCE_MISS = 1e-3
N_BOUNDS = 8  # 2 bounds for each of 4 events (E, F, single node, client-level E)


def _cp_lower(k: int, n: int, a: float) -> float:
    return 0.0 if k == 0 else float(stats.beta.ppf(a, k, n - k + 1))


def _cp_upper(k: int, n: int, a: float) -> float:
    return 1.0 if k == n else float(stats.beta.ppf(1 - a, k + 1, n - k))


def _eps_lower_bound(k_hi: int, k_lo: int, n: int) -> tuple[float, float]:
    """(point estimate, lower confidence bound) of log(P_hi / P_lo)."""
    a = CONFIDENCE_MISS / N_BOUNDS
    point = math.log(max(k_hi, 1) / max(k_lo, 1))
    return point, math.log(_cp_lower(k_hi, n, a) / _cp_upper(k_lo, n, a))


def _affected(fed: Federation, model: DistributedDP, score: float, seed: int) -> np.ndarray:
    """(TRIALS, HEIGHT) noisy counts of the class-1 nodes containing ``score``."""
    nodes = [int(score * 2**k) for k in range(1, HEIGHT + 1)]
    gen = np.random.default_rng(seed)
    out = np.empty((TRIALS, HEIGHT))
    for t in range(TRIALS):
        hist = release_hierarchy(fed, model, height=HEIGHT, rng=gen)
        out[t] = [hist.levels[k][1, nodes[k]] for k in range(HEIGHT)]
    return out


def _datasets(extra: int) -> tuple[Federation, Federation, np.ndarray]:
    gen = np.random.default_rng(2024)
    scores = gen.random(40)
    labels = gen.integers(0, 2, 40)
    clients = np.arange(40) // 2
    d = Federation.from_arrays(scores, labels, clients)
    d_prime = Federation.from_arrays(
        np.concatenate([scores, np.full(extra, 0.3)]),
        np.concatenate([labels, np.ones(extra, dtype=int)]),
        np.concatenate([clients, np.full(extra, 1000)]),
    )
    counts = np.array(
        [((labels == 1) & (np.floor(scores * 2**k) == int(0.3 * 2**k))).sum() for k in (1, 2)]
    )
    return d, d_prime, counts


def test_distdp_hierarchy_audit_example_level() -> None:
    eps = 1.0
    model = DistributedDP(eps)
    d, d_prime, counts = _datasets(extra=1)
    x = _affected(d, model, 0.3, seed=1) - counts
    xp = _affected(d_prime, model, 0.3, seed=2) - counts
    results = {}
    # E: all affected nodes above D's counts (more likely under D')
    results["E"] = _eps_lower_bound(
        int(np.all(xp >= 1, axis=1).sum()), int(np.all(x >= 1, axis=1).sum()), TRIALS
    )
    # F: all at or below D's counts (more likely under D)
    results["F"] = _eps_lower_bound(
        int(np.all(x <= 0, axis=1).sum()), int(np.all(xp <= 0, axis=1).sum()), TRIALS
    )
    # one node (level 1) alone: ε/h
    results["level-1 node"] = _eps_lower_bound(
        int((xp[:, 0] >= 1).sum()), int((x[:, 0] >= 1).sum()), TRIALS
    )
    for name, (point, lower) in results.items():
        print(f"audit {name}: empirical eps = {point:.3f}, lower bound = {lower:.3f}")
    claims = {"E": eps, "F": eps, "level-1 node": eps / HEIGHT}
    for name, claim in claims.items():
        point, lower = results[name]
        assert lower <= claim, (name, lower, claim)
        assert lower >= 0.7 * claim, (name, lower, claim)  # the audit has power


def test_distdp_hierarchy_audit_client_level() -> None:
    """unit="client", contribution_bound=2: the extra client holds two examples in
    one leaf, moving every affected node by 2. Noise α = exp(-ε/(2h)); the event
    {every affected node >= D count + 2} has ratio α^-2h = e^ε."""
    eps = 1.0
    model = DistributedDP(eps, unit="client", contribution_bound=2)
    d, d_prime, counts = _datasets(extra=2)
    x = _affected(d, model, 0.3, seed=3) - counts
    xp = _affected(d_prime, model, 0.3, seed=4) - counts
    point, lower = _eps_lower_bound(
        int(np.all(xp >= 2, axis=1).sum()), int(np.all(x >= 2, axis=1).sum()), TRIALS
    )
    print(f"audit client-level E: empirical eps = {point:.3f}, lower bound = {lower:.3f}")
    assert lower <= eps
    assert lower >= 0.7 * eps
