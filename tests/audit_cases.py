"""Shared pieces of the end-to-end audits of the ECDF, Hosmer–Lemeshow and vertical entry points.

A :class:`Case` is one audit (an entry point, two neighbouring inputs, the
observed statistic, the claimed guarantee); :func:`check_honest` and
:func:`check_power` run it with the harness of :mod:`dp_audit`, the latter
under :func:`broken_mechanism` (continuous noise on floats, or half the noise).
``tools/audit_table.py`` runs every module's ``CASES`` and prints the table.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
import pytest
from numpy.typing import NDArray

from dp_audit import AuditResult, Draw, audit, run_many
from fedeval.privacy.noise import AdditiveNoise

FAST = {"trials": 3_000, "pilot": 1_000}
"""Default run: ~3,000 trials per dataset."""
SLOW = {"trials": 20_000, "pilot": 4_000}
"""``-m slow``: 20,000 trials per dataset, the budget of the issue's findings."""
SLOW_WIDE_PILOT = {"trials": 20_000, "pilot": 10_000}
"""Slow, with a larger pilot: a rare event (a low-order-bit pattern seen in well under 1% of
the runs) is only chosen when the pilot alone already shows it at confidence 0.999."""
HONEST_CONFIDENCE = 0.999
POWER_CONFIDENCE = 0.95

Broken = Literal["continuous_laplace", "continuous_gaussian", "half_noise"]


@dataclass(frozen=True)
class ContinuousNoise(AdditiveNoise):
    """Deliberately broken noise: continuous numpy Laplace or Gaussian on the raw floats."""

    kind: Literal["laplace", "gaussian"]
    scale: Any  # float or per-coordinate array
    integer = False
    shared = False

    @property
    def description(self) -> str:
        return f"BROKEN for a power check: continuous {self.kind} noise on floats"

    def server(self, size: int, rng: np.random.Generator) -> NDArray[np.float64]:
        s = np.broadcast_to(np.asarray(self.scale, dtype=np.float64), (size,))
        if self.kind == "laplace":
            return np.asarray(rng.laplace(0.0, s), dtype=np.float64)
        return np.asarray(rng.normal(0.0, s), dtype=np.float64)

    def total(self, size: int, rng: np.random.Generator, n_received: int) -> NDArray[np.float64]:
        return self.server(size, rng)

    def variance(self, n_received: int) -> Any:
        s = np.asarray(self.scale, dtype=np.float64)
        return 2.0 * s**2 if self.kind == "laplace" else s**2


@contextlib.contextmanager
def broken_mechanism(how: Broken | None) -> Iterator[None]:
    """Break every mechanism the pipeline calibrates, while the claim stays the same.

    ``mechanism_for`` (the one dispatch) is wrapped wherever it was imported:

    * ``"continuous_laplace"`` / ``"continuous_gaussian"``: the calibrated noise
      is replaced by continuous numpy noise of the same per-coordinate variance,
      added to the floats (fast path only; the attack of Mironov 2012);
    * ``"half_noise"``: the mechanism is calibrated for 2ε (half the Laplace
      scale, double the randomized-response signal) while ε is claimed.

    If the dispatch or the ``Mechanism`` fields change, the power checks fail
    loudly rather than pass.
    """
    if how is None:
        yield
        return
    module = importlib.import_module("fedeval.privacy.mechanism_for")
    original = module.mechanism_for

    def patched(privacy: Any, sketch: Any, **kwargs: Any) -> Any:
        if how == "half_noise":
            return original(privacy.scaled(2.0), sketch, **kwargs)
        mech = original(privacy, sketch, **kwargs)
        if mech.noise is None:
            raise AssertionError(f"{how}: the mechanism for {sketch.name} adds no noise")
        var = np.asarray(mech.noise.variance(mech.n_contributors), dtype=np.float64)
        if how == "continuous_laplace":
            return replace(mech, noise=ContinuousNoise("laplace", np.sqrt(var / 2.0)))
        return replace(mech, noise=ContinuousNoise("gaussian", np.sqrt(var)))

    patched_in = [
        m for m in list(sys.modules.values()) if getattr(m, "mechanism_for", None) is original
    ]
    for m in patched_in:
        m.mechanism_for = patched  # type: ignore[attr-defined]
    try:
        yield
    finally:
        for m in patched_in:
            m.mechanism_for = original  # type: ignore[attr-defined]


def quiet(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` with warnings silenced (degenerate noisy totals warn; pytest makes them errors)."""

    def run(*args: Any) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*args)

    return run


@dataclass(frozen=True, eq=False)
class Case:
    """One audit: an entry point, neighbouring datasets, the observed scalar and the claim.

    Attributes
    ----------
    name : str
        The entry point as it appears in the table.
    release : callable
        ``release(dataset, rng)``: one call of the public entry point; the
        result has a ``.guarantee``.
    observe : callable
        ``observe(result) -> float``: the released scalar the auditor looks at.
    d, d_prime : any
        Neighbouring datasets under ``unit`` and ``neighbouring``.
    claimed, delta : float
        The guarantee the entry point states (checked by the guarantee test).
    broken : str or None
        Power checks: how the mechanism is broken (:func:`broken_mechanism`).
    fast : bool
        Whether the default run (``-m "not slow"``) has a 3,000-trial variant;
        every case runs at its ``slow`` budget under ``-m slow``.
    slow : dict
        Budget (trials, pilot) of the slow audit and of the table.
    context : callable or None
        A context manager factory entered around the runs (e.g. a cache that
        only saves time).
    xfail_audit, xfail_guarantee : str or None
        Reason, when the audit (or the guarantee check) fails on today's code
        because of an open finding; the tests are then ``xfail(strict=True)``.
    """

    name: str
    release: Callable[[Any, np.random.Generator], Any]
    observe: Callable[[Any], float]
    d: Any
    d_prime: Any
    claimed: float
    delta: float = 0.0
    unit: str = "example"
    neighbouring: str = "replace"
    broken: Broken | None = None
    seed: int = 0
    fast: bool = True
    slow: dict[str, int] = field(default_factory=lambda: dict(SLOW))
    context: Callable[[], contextlib.AbstractContextManager[Any]] | None = None
    xfail_audit: str | None = None
    xfail_guarantee: str | None = None

    @property
    def is_power_check(self) -> bool:
        return self.broken is not None

    @property
    def label(self) -> str:
        return self.name if self.broken is None else f"{self.name} [power: {self.broken}]"

    def draw(self, data: Any) -> Draw:
        release = quiet(self.release)
        return run_many(lambda rng: float(self.observe(release(data, rng))))

    def run(self, *, trials: int, pilot: int, confidence: float | None = None) -> AuditResult:
        if confidence is None:
            confidence = POWER_CONFIDENCE if self.is_power_check else HONEST_CONFIDENCE
        extra = self.context() if self.context is not None else contextlib.nullcontext()
        with broken_mechanism(self.broken), extra:
            return audit(
                self.draw(self.d),
                self.draw(self.d_prime),
                claimed_epsilon=self.claimed,
                delta=self.delta,
                trials=trials,
                pilot=pilot,
                seed=self.seed,
                confidence=confidence,
            )

    def guarantees(self) -> tuple[Any, Any]:
        release = quiet(self.release)
        g = release(self.d, np.random.default_rng(0)).guarantee
        g_prime = release(self.d_prime, np.random.default_rng(0)).guarantee
        return g, g_prime


def params(cases: list[Case], xfail_attr: str | None = None) -> list[Any]:
    """pytest params of ``cases``, xfail(strict) where ``xfail_attr`` names an open finding."""
    out = []
    for c in cases:
        reason = getattr(c, xfail_attr) if xfail_attr else None
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        out.append(pytest.param(c, id=c.label, marks=marks))
    return out


def check_honest(case: Case, budget: dict[str, int], record_property: Any) -> AuditResult:
    res = case.run(**budget)
    record_property("audit_row", res.row(case.label))
    print(res.row(case.label))
    assert res.epsilon_lower <= case.claimed, res
    return res


def check_power(case: Case, budget: dict[str, int], record_property: Any) -> AuditResult:
    res = case.run(**budget)
    record_property("audit_row", res.row(case.label))
    print(res.row(case.label))
    assert res.epsilon_lower > case.claimed, res
    if case.broken in ("continuous_laplace", "continuous_gaussian"):
        assert "2^53" in res.event, res  # the floating-point attack, not a threshold
    return res


def check_guarantee(case: Case) -> None:
    """The guarantee states the audited claim, unit and relation, and is the same on D and D′.

    Equal guarantees (statement and public inputs included) mean the neighbours
    agree on everything the release declares public, and the receipt itself
    does not tell them apart.
    """
    g, g_prime = case.guarantees()
    assert g.epsilon == pytest.approx(case.claimed)
    assert g.delta == pytest.approx(case.delta)
    assert (g.unit, g.neighbouring) == (case.unit, case.neighbouring)
    assert g_prime == g


# ---------------------------------------------------------------------------------------------
# The ECDF cases.
# ---------------------------------------------------------------------------------------------


def patch_mechanism_for(monkeypatch: pytest.MonkeyPatch, replacement: Any) -> None:
    """Replace the one dispatch everywhere it is bound, for a broken-release twin.

    Modules that imported ``mechanism_for`` by name (rounds, secret sharing,
    the release module, ...) hold their own reference: patching the defining
    module alone leaves them the honest dispatch, and a twin that patched one
    of them missed the one calibration takes (``release.reserve``). Every
    loaded fedeval module whose ``mechanism_for`` is the original gets the
    replacement; one imported later binds the patched attribute.
    """
    module = importlib.import_module("fedeval.privacy.mechanism_for")
    original = module.mechanism_for
    importlib.import_module("fedeval.aggregation.release")  # the modules that bind it
    importlib.import_module("fedeval.aggregation.rounds")
    for name, loaded in list(sys.modules.items()):
        if name.startswith("fedeval") and getattr(loaded, "mechanism_for", None) is original:
            monkeypatch.setattr(loaded, "mechanism_for", replacement)
