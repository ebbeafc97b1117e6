"""Issue 24: end-to-end audits of what a release publishes besides its noise, and of programs.

(a) **64 vs 65 one-example clients under client-level DP**
    (``DistributedDP(unit="client", contribution_bound=2)``, add/remove one
    client). The old code published ``parameters["n_clients"]`` exactly and
    planned the height from it (height 4 on D, 5 on D′ in every trial: ε = ∞,
    measured 8.60 at 20,000 trials, the cap). Every published field is
    audited from the same runs:

    * the *structure*: a hash of everything published that is not a noisy
      estimate (the parameters without the released count, the plan, the
      receipt). It must be a function of the release's noise only;
    * the released noisy count the parameters were planned from;
    * the released number of positives (the hierarchy's noise).

    The estimates ``summary()`` adds (AUC, curves, SEs) are post-processing of
    the tree and the parameters, so they cannot leak more than these.
(b) **The same with example-level add/remove and one example per client**
    (``DistributedDP(unit="example")``, ``from_arrays`` without a client
    column): adding an example adds a client.
(c) **A program: calibrate, then evaluate, in one Context** of total ε = 1,
    on two datasets that differ in one positive example: the pair of released
    positive counts, read as min(X₁ − c, X₂ − c) whose tail event {≥ 1} has a
    likelihood ratio of up to e^(ε₁+ε₂) = e^ε. The Context's total must hold.

Each honest audit must stay at or below its claim (one-sided Clopper–Pearson
at 0.999); each has a power twin that must exceed it: the bug restored (the
client count public again, so the height is planned from it and published),
or the noise halved.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

import fedeval as fe
from dp_audit import AuditResult, Draw, audit

pytestmark = pytest.mark.privacy

CONFIDENCE = 0.999
FAST = {"trials": 2_000, "pilot": 600}
FULL = {"trials": 20_000, "pilot": 4_000}
CLIENT_LEVEL = fe.DistributedDP(epsilon=1.0, unit="client", contribution_bound=2)
EXAMPLE_LEVEL = fe.DistributedDP(epsilon=1.0)


# --------------------------------------------------------------------- data
def _one_example_clients(n: int) -> fe.Federation:
    """n one-example clients (no client column): D = 64, D′ = D plus one client."""
    rng = np.random.default_rng(20261126)
    scores = rng.random(65)[:n]
    labels = (np.arange(65) % 2)[:n]
    return fe.Federation.from_arrays(scores, labels)


def _structure(ev: fe.Evaluation) -> float:
    """A number standing for everything published that is not a noisy estimate."""
    params = {
        k: v
        for k, v in ev.parameters.items()
        if k not in ("n_examples_released", "n_examples_released_se")
    }
    text = json.dumps(
        [params, ev.plan.as_dict(), ev.receipt.as_dict()], sort_keys=True, default=str
    )
    return float(int(hashlib.sha256(text.encode()).hexdigest()[:12], 16))


class Runs:
    """One ``fe.evaluate`` per trial, read as several statistics (each audited on its own).

    The harness asks each statistic for ``n`` runs of a seed sequence; the runs
    of one (seed sequence, n) are made once and shared by every statistic.
    """

    def __init__(self, one_run: Callable[[np.random.Generator], list[float]]) -> None:
        self.one_run = one_run
        self.cache: dict[tuple[Any, ...], NDArray[np.float64]] = {}

    def column(self, j: int) -> Draw:
        def draw(n: int, seed: np.random.SeedSequence) -> NDArray[np.float64]:
            key = (seed.entropy, tuple(seed.spawn_key), n)
            if key not in self.cache:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UserWarning)
                    rows = [self.one_run(np.random.default_rng(s)) for s in seed.spawn(n)]
                self.cache[key] = np.array(rows, dtype=np.float64)
            return self.cache[key][:, j]

        return draw


def _evaluate_runs(fed: fe.Federation, model: Any) -> Runs:
    def one(rng: np.random.Generator) -> list[float]:
        ev = fe.evaluate(fed, model, rng=rng, bootstrap_replicates=2)
        assert isinstance(ev, fe.Evaluation)
        count = ev.parameters.get("n_examples_released")
        return [
            _structure(ev),
            float("nan") if count is None else float(count),
            float(ev.tree.totals()[1]),
        ]

    return Runs(one)


STATISTICS = {"structure": 0, "released count": 1, "released positives": 2}


def _audit_pair(model: Any, size: dict[str, int], seed: int) -> dict[str, AuditResult]:
    d, d_prime = (
        _evaluate_runs(_one_example_clients(64), model),
        _evaluate_runs(_one_example_clients(65), model),
    )
    return {
        name: audit(
            d.column(j),
            d_prime.column(j),
            claimed_epsilon=1.0,
            seed=seed + j,
            confidence=CONFIDENCE,
            **size,
        )
        for name, j in STATISTICS.items()
    }


@pytest.fixture
def bug_restored(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The old behaviour: the exact client count treated as public (planned from, published)."""
    module = importlib.import_module("fedeval.public_facts")
    monkeypatch.setattr(module, "client_count_public", lambda privacy: True)
    yield


def _honest(results: dict[str, AuditResult]) -> None:
    for name, res in results.items():
        assert res.epsilon_lower <= res.claimed_epsilon, (name, res)


# ------------------------------------------- (a) client level, (b) example level
@pytest.mark.parametrize("model", [CLIENT_LEVEL, EXAMPLE_LEVEL], ids=["client", "example"])
def test_audit_every_published_field_fast(model: Any) -> None:
    _honest(_audit_pair(model, FAST, seed=2400))


@pytest.mark.slow
@pytest.mark.parametrize("model", [CLIENT_LEVEL, EXAMPLE_LEVEL], ids=["client", "example"])
def test_audit_every_published_field(model: Any) -> None:
    _honest(_audit_pair(model, FULL, seed=2410))


@pytest.mark.usefixtures("bug_restored")
@pytest.mark.parametrize("model", [CLIENT_LEVEL, EXAMPLE_LEVEL], ids=["client", "example"])
def test_power_the_exact_count_restored_is_caught(model: Any) -> None:
    """Planning from (and publishing) the exact count: the structure tells D from D′."""
    d = _evaluate_runs(_one_example_clients(64), model)
    d_prime = _evaluate_runs(_one_example_clients(65), model)
    res = audit(
        d.column(0), d_prime.column(0), claimed_epsilon=1.0, trials=600, pilot=200, seed=2420
    )
    assert res.epsilon_lower > 1.0, res


# ------------------------------------------------------ (c) a program in a Context
def _program(extra_positive: bool) -> Draw:
    """Context(ε = 1): calibrate (binning, ε = 0.5) then evaluate (ε = 0.5), height 1.

    Statistic: min(X₁ − c, X₂ − c), the two releases' positive counts minus the
    true count c of D (the extra example of D′ is a positive).
    """
    rng = np.random.default_rng(7)
    scores = np.r_[rng.random(20), 0.9]
    labels = np.r_[rng.integers(0, 2, 20), 0]
    if extra_positive:
        labels[-1] = 1
    else:
        scores, labels = scores[:-1], labels[:-1]
    fed = fe.Federation.from_arrays(scores, labels)
    c = int(np.sum(labels[:20] == 1))
    public = fe.Public(n_clients=21)  # declared, so both releases are pinned to height 1

    def one(gen: np.random.Generator) -> float:
        ctx = fe.Context(fed, budget=fe.Budget(epsilon=1.0), public=public, rng=gen)
        cal = ctx.calibrate(
            fe.DistributedDP(epsilon=0.5), method="binning", n_bins=1, height=1, do_no_harm=False
        )
        ev = ctx.evaluate(fe.DistributedDP(epsilon=0.5), height=1, bootstrap_replicates=2)
        assert ctx.spent.epsilon == pytest.approx(1.0)
        x1 = float(np.sum(cal.positive_counts))
        x2 = float(ev.tree.totals()[1])
        return min(x1 - c, x2 - c)

    def draw(n: int, seed: np.random.SeedSequence) -> NDArray[np.float64]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return np.array([one(np.random.default_rng(s)) for s in seed.spawn(n)])

    return draw


def test_audit_calibrate_then_evaluate_in_one_context_fast() -> None:
    res = audit(
        _program(False),
        _program(True),
        claimed_epsilon=1.0,
        seed=2440,
        confidence=CONFIDENCE,
        **FAST,
    )
    assert res.epsilon_lower <= 1.0, res


@pytest.mark.slow
def test_audit_calibrate_then_evaluate_in_one_context() -> None:
    res = audit(
        _program(False),
        _program(True),
        claimed_epsilon=1.0,
        seed=2450,
        confidence=CONFIDENCE,
        **FULL,
    )
    assert res.epsilon_lower <= 1.0, res


@pytest.mark.usefixtures("half_the_noise")
def test_power_the_program_with_half_the_noise_is_caught() -> None:
    res = audit(
        _program(False), _program(True), claimed_epsilon=1.0, trials=6_000, pilot=1_500, seed=2460
    )
    assert res.epsilon_lower > 1.0, res
