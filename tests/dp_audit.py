"""End-to-end differential-privacy audits through the public API.

An audit runs a public entry point on two neighbouring datasets D and D′ many
times and bounds the privacy loss from below on one output event:

    ε ≥ ln( (P[S | D] − δ) / P[S | D′] )       (and the same with D, D′ swapped).

Method (the one every audit in ``tests/privacy/`` uses):

1. **Pilot.** ``pilot`` runs per dataset, on their own seeds, propose the event:
   for every candidate (thresholds {o ≥ t}, {o ≤ t} at the pooled pilot's
   quantiles, and the floating-point lattice event, see below), in both
   directions, the plug-in ε is computed; the event with the largest pilot
   Clopper–Pearson lower bound is kept.
2. **Main run.** ``trials`` fresh runs per dataset, on other seeds. The event
   is fixed before they are drawn, so one test is made: the one-sided
   Clopper–Pearson bounds on the two proportions give the lower bound on ε.
   (A fixed event needs no multiple-testing correction; the Bonferroni split of
   the level between the two proportions is the only one.)

The **lattice event** {o·2^53 is not an integer} is what a floating-point
attack on continuous Laplace looks like (Mironov 2012): with true values 0 and
1, ``0 + η`` keeps the low-order bits of the noise while ``1 + η`` rounds
them away for |η| < 2, so the event has positive probability under one
dataset and none under the other. Outputs that are integers, or integers
divided by a power of two, never show it under either dataset.

An audit proves nothing if it cannot fail, so every kind of audit is paired
with a power check: the same harness, given a deliberately broken mechanism
(half the noise, or continuous Laplace on floats), must report a lower bound
above the claimed ε.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import stats

Draw = Callable[[int, np.random.SeedSequence], NDArray[np.float64]]
"""``draw(n, seed) -> outputs``: the observed statistic of n independent runs."""

__all__ = ["AuditResult", "audit", "clopper_pearson", "run_many"]


@dataclass(frozen=True)
class AuditResult:
    """What one audit measured.

    Attributes
    ----------
    claimed_epsilon, delta : float
        The guarantee under audit.
    epsilon_hat : float
        Plug-in ε on the main run's event (ln of the ratio of the two
        empirical frequencies, δ subtracted), the "empirical ε".
    epsilon_lower : float
        One-sided lower confidence bound on ε at ``confidence``.
    event : str
        The event, fixed by the pilot.
    trials : int
        Main-run trials per dataset.
    hits : tuple of int
        Main-run hits of the event under (numerator, denominator) dataset.
    """

    claimed_epsilon: float
    delta: float
    epsilon_hat: float
    epsilon_lower: float
    event: str
    trials: int
    hits: tuple[int, int]
    confidence: float

    def row(self, entry_point: str) -> str:
        """A Markdown table row: entry point, claimed ε, empirical ε, lower bound."""
        return (
            f"| {entry_point} | {self.claimed_epsilon:g} | {self.epsilon_hat:.3f} | "
            f"{self.epsilon_lower:.3f} | {self.trials:,} | {self.event} |"
        )


def clopper_pearson(hits: int, n: int, level: float) -> tuple[float, float]:
    """One-sided Clopper–Pearson bounds (lower, upper), each holding with prob. ≥ 1 − level."""
    lo = 0.0 if hits == 0 else float(stats.beta.ppf(level, hits, n - hits + 1))
    hi = 1.0 if hits == n else float(stats.beta.ppf(1 - level, hits + 1, n - hits))
    return lo, hi


def _lower_bound(k_num: int, k_den: int, n: int, delta: float, level: float) -> float:
    lo, _ = clopper_pearson(k_num, n, level / 2)
    _, hi = clopper_pearson(k_den, n, level / 2)
    if lo - delta <= 0 or hi <= 0:
        return -math.inf
    return math.log((lo - delta) / hi)


def _plug_in(k_num: int, k_den: int, n: int, delta: float) -> float:
    p, q = k_num / n, k_den / n
    if p - delta <= 0:
        return -math.inf
    return math.inf if q == 0 else math.log((p - delta) / q)


def _lattice(x: NDArray[np.float64]) -> NDArray[np.bool_]:
    """{o · 2^53 is not an integer}: bits below 2^-53 (finite outputs only)."""
    scaled = np.where(np.isfinite(x), x, 0.0) * 2.0**53
    return np.asarray(scaled != np.floor(scaled))


def _events(pilot: NDArray[np.float64]) -> list[tuple[str, Callable[[NDArray], NDArray]]]:
    finite = pilot[np.isfinite(pilot)]
    out: list[tuple[str, Callable[[NDArray], NDArray]]] = [("o·2^53 not an integer", _lattice)]
    if finite.size:
        for t in np.unique(np.quantile(finite, np.linspace(0.01, 0.99, 99))):
            out.append((f"o ≥ {t:.6g}", lambda x, t=t: x >= t))
            out.append((f"o ≤ {t:.6g}", lambda x, t=t: x <= t))
    out.append(("o is NaN", np.isnan))
    return out


def audit(
    draw_d: Draw,
    draw_d_prime: Draw,
    *,
    claimed_epsilon: float,
    delta: float = 0.0,
    trials: int = 20_000,
    pilot: int = 4_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> AuditResult:
    """Audit one release: a lower bound on ε from neighbouring datasets D and D′.

    Parameters
    ----------
    draw_d, draw_d_prime : callable
        ``draw(n, seed_sequence) -> array of n outputs`` (one scalar per run of
        the public entry point on D, resp. D′). Each run must use its own
        randomness derived from the seed sequence.
    claimed_epsilon, delta : float
        The guarantee the release states.
    trials, pilot : int
        Runs per dataset in the main run and in the pilot.
    seed : int
        Root of every seed used (pilot and main runs get disjoint streams).
    confidence : float
        Of the lower bound (one-sided).
    """
    root = np.random.SeedSequence(seed)
    s_pilot_d, s_pilot_p, s_main_d, s_main_p = root.spawn(4)
    pa = np.asarray(draw_d(pilot, s_pilot_d), dtype=np.float64)
    pb = np.asarray(draw_d_prime(pilot, s_pilot_p), dtype=np.float64)
    best: tuple[float, str, Callable[[NDArray], NDArray], bool] | None = None
    for name, event in _events(np.concatenate([pa, pb])):
        ka, kb = int(event(pa).sum()), int(event(pb).sum())
        for swap in (False, True):
            num, den = (kb, ka) if swap else (ka, kb)
            bound = _lower_bound(num, den, pilot, delta, 1 - confidence)
            if best is None or bound > best[0]:
                best = (bound, name, event, swap)
    assert best is not None
    _, name, event, swap = best
    ma = np.asarray(draw_d(trials, s_main_d), dtype=np.float64)
    mb = np.asarray(draw_d_prime(trials, s_main_p), dtype=np.float64)
    ka, kb = int(event(ma).sum()), int(event(mb).sum())
    num, den = (kb, ka) if swap else (ka, kb)
    label = f"{name} ({'D′ over D' if swap else 'D over D′'})"
    result = AuditResult(
        claimed_epsilon=claimed_epsilon,
        delta=delta,
        epsilon_hat=_plug_in(num, den, trials, delta),
        epsilon_lower=_lower_bound(num, den, trials, delta, 1 - confidence),
        event=label,
        trials=trials,
        hits=(num, den),
        confidence=confidence,
    )
    _log(result)
    return result


def _log(result: AuditResult) -> None:
    """Append the result to $FEDEVAL_AUDIT_LOG (JSON lines), if set: tools/audit_report.py.

    Every row also gets the one-sided 95% lower bound (the issue's reporting
    level), whatever confidence the test asserts at.
    """
    path = os.environ.get("FEDEVAL_AUDIT_LOG")
    if not path:
        return
    num, den = result.hits
    row = {
        "test": os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" ", 1)[0],
        "claimed": result.claimed_epsilon,
        "delta": result.delta,
        "epsilon_hat": result.epsilon_hat,
        "lower": result.epsilon_lower,
        "confidence": result.confidence,
        "lower_95": _lower_bound(num, den, result.trials, result.delta, 0.05),
        "trials": result.trials,
        "event": result.event,
    }
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(row) + "\n")


def run_many(
    one_run: Callable[[np.random.Generator], float],
    generator: Callable[[np.random.SeedSequence], np.random.Generator] = np.random.default_rng,
) -> Draw:
    """Turn ``one_run(rng) -> scalar`` (one call of a public entry point) into a ``draw``.

    ``generator`` builds each run's ``rng`` from its seed (PCG64 by default).
    """

    def draw(n: int, seed: np.random.SeedSequence) -> NDArray[np.float64]:
        # The entry points warn on tiny, noisy releases (the audits' datasets are
        # tiny on purpose); the audit reads only the outputs.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return np.array([one_run(generator(s)) for s in seed.spawn(n)])

    return draw
