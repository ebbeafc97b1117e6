"""End-to-end audits of ``fe.calibrate`` through the public API (issue 12).

Two entry points, each with neighbours by the unit its guarantee claims:

* **binary histogram binning under DistributedDP** (example level, add/remove):
  D′ adds one positive example to a client that already exists, so the number
  of clients, a public input of distributed DP, is the same. The observed
  output is the released positive count of the bucket holding the score 0.8
  (``cal.positive_counts``), the coordinate that carries the difference.
* **multiclass binning under DistributedDP** (example level, add/remove): D′
  adds one class-0 example to an existing client, which changes one bin of each
  of the c = 2 classes' one-vs-rest histograms; the observed output is the
  difference of the two released table values it moves.
* **multiclass temperature scaling under UserLevelDP** (client level,
  add/remove): D′ adds a client whose update is clipped to exactly C. With a
  declared (public) population the released temperature is an affine function
  of one noisy sum, so it carries the whole difference.

Each audit is paired with a power check on a deliberately broken release
(half the noise) that must push the lower bound above the claim; a passing
audit is only evidence if the same audit can fail.

User-level (ε, δ) power: the Gaussian mechanism's claimed ε comes from RDP
accounting at δ, and a finite audit only sees events of probability ≳ 1/trials,
far from the δ tail that the claim covers. At the multiclass paper's δ = 1e-5
the best event gives, with 20,000 trials per dataset and confidence 0.999, a
lower bound of 0.86 for half the noise at a claimed ε = 1 and 1.92 at ε = 2
(2.36 with 100,000 trials): half the noise cannot be shown to exceed the claim
at feasible trial counts. At δ = 1e-3 and ε = 2 it can (best event: 2.64), so
the user-level audit and its power check use (ε, δ) = (2, 1e-3).

Finally, the JSON of a user-level calibrator must not depend on the number of
clients except through noise: two federations that differ by one client give
documents with the same keys and no integer equal to the client count, the
participations or the number of examples.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import re
import warnings
from typing import Any

import numpy as np
import pytest

import fedeval as fe
from audit_cases import patch_mechanism_for
from dp_audit import AuditResult, audit, run_many
from fedeval.calibration.binning import bucket_of

pytestmark = [
    pytest.mark.privacy,
    # Tiny data under noise: some releases have no positive mass (a named fallback).
    pytest.mark.filterwarnings("ignore:the released score histogram:UserWarning"),
]

CONFIDENCE = 0.999


# ----------------------------------------------------- binary binning, DistributedDP
def _binary_fed(extra: bool) -> fe.Federation:
    """D: client 0 holds a negative at 0.2, client 1 a positive at 0.7 and a negative at 0.9.

    D′ also gives client 1 a positive at 0.8.
    """
    s, y, c = [0.2, 0.7, 0.9], [0, 1, 0], [0, 1, 1]
    if extra:
        s, y, c = [*s, 0.8], [*y, 1], [*c, 1]
    return fe.Federation.from_arrays(np.array(s), np.array(y), clients=np.array(c))


def _binary(extra: bool, model: fe.DistributedDP) -> Any:
    fed = _binary_fed(extra)

    def one(rng: np.random.Generator) -> float:
        # One level of two leaves: the bucket holding 0.8 is the leaf [0.5, 1] (or
        # everything, when the noisy median snaps to a domain end).
        cal = fe.calibrate(
            fed, model, method="binning", n_bins=2, height=1, rng=rng, do_no_harm=False
        )
        return float(cal.positive_counts[bucket_of(cal.edges, np.array([0.8]))[0]])

    return run_many(one)


def _audit_binary(model: fe.DistributedDP, claimed: float, **kw: Any) -> AuditResult:
    return audit(
        _binary(False, model),
        _binary(True, model),
        claimed_epsilon=claimed,
        confidence=CONFIDENCE,
        **kw,
    )


def test_binary_claim_is_what_the_receipt_states() -> None:
    cal = fe.calibrate(
        _binary_fed(True), fe.DistributedDP(1.0), method="binning", height=1, do_no_harm=False
    )
    assert cal.epsilon_spent == pytest.approx(1.0)
    assert cal.guarantee.unit == "example" and cal.guarantee.neighbouring == "add_remove"


@pytest.mark.slow
def test_audit_binary_binning_distdp() -> None:
    res = _audit_binary(fe.DistributedDP(1.0), 1.0, seed=21)
    print(res.row("calibrate binning, DistributedDP"))
    assert res.epsilon_lower <= 1.0, res


def test_audit_binary_binning_distdp_fast() -> None:
    res = _audit_binary(fe.DistributedDP(1.0), 1.0, trials=800, pilot=200, seed=22)
    assert res.epsilon_lower <= 1.0, res


@pytest.mark.slow
def test_audit_binary_binning_detects_half_the_noise() -> None:
    # Discrete Laplace of scale 1/(2ε) instead of 1/ε: the release of DistributedDP(2ε)
    # presented as ε-DP.
    res = _audit_binary(fe.DistributedDP(2.0), 1.0, trials=4_000, pilot=1_000, seed=23)
    print(res.row("calibrate binning, DistributedDP, half the noise"))
    assert res.epsilon_lower > 1.0, res


# ------------------------------------------------ multiclass binning, DistributedDP
def _ovr_fed(extra: bool) -> fe.Federation:
    """D: 20 clients, each one class-1 example at p = (0.9, 0.1).

    D′ gives client 0 a class-0 example at the same p: it adds 1 to P_0 in the bin of
    0.9 and to N_1 in the bin of 0.1, the c = 2 coordinates one example changes.
    """
    p, y, c = [[0.9, 0.1]] * 20, [1] * 20, list(range(20))
    if extra:
        p, y, c = [*p, [0.9, 0.1]], [*y, 0], [*c, 0]
    return fe.Federation.from_arrays(np.array(p), np.array(y), clients=np.array(c))


def _ovr_client_fed(extra: bool) -> fe.Federation:
    """D as in :func:`_ovr_fed`; D′ adds client 20 with three class-0 examples at p = (0.9, 0.1).

    With a contribution bound of 2 it keeps two of them: 2 in P_0 and 2 in N_1, L1 = B·c = 4.
    """
    p, y, c = [[0.9, 0.1]] * 20, [1] * 20, list(range(20))
    if extra:
        p, y, c = [*p, *[[0.9, 0.1]] * 3], [*y, 0, 0, 0], [*c, 20, 20, 20]
    return fe.Federation.from_arrays(np.array(p), np.array(y), clients=np.array(c))


def _ovr(extra: bool, model: fe.DistributedDP) -> Any:
    fed = _ovr_client_fed(extra) if model.unit == "client" else _ovr_fed(extra)

    def one(rng: np.random.Generator) -> float:
        cal = fe.calibrate(
            fed, model, method="binning", n_bins=2, weighting="none", do_no_harm=False, rng=rng
        )
        # Both changed coordinates, through the released table: class 0's value in the
        # bin of 0.9 rises, class 1's in the bin of 0.1 falls.
        return float(cal.table[0, 1] - cal.table[1, 0])  # type: ignore[attr-defined]

    return run_many(one)


def _audit_ovr(model: fe.DistributedDP, **kw: Any) -> AuditResult:
    return audit(
        _ovr(False, model), _ovr(True, model), claimed_epsilon=1.0, confidence=CONFIDENCE, **kw
    )


def test_multiclass_binning_under_distdp_claims_example_level_l1_c() -> None:
    """Issue 29: multiclass binning refused DistributedDP; one example changes c counts."""
    cal = fe.calibrate(
        _ovr_fed(True), fe.DistributedDP(1.0), method="binning", n_bins=2, do_no_harm=False, rng=0
    )
    assert cal.epsilon_spent == pytest.approx(1.0)
    assert cal.guarantee.unit == "example" and cal.guarantee.neighbouring == "add_remove"
    assert "L1 = 2" in cal.guarantee.statement


def test_audit_multiclass_binning_distdp_fast() -> None:
    res = _audit_ovr(fe.DistributedDP(1.0), trials=800, pilot=200, seed=24)
    assert res.epsilon_lower <= 1.0, res


@pytest.mark.slow
def test_audit_multiclass_binning_distdp() -> None:
    res = _audit_ovr(fe.DistributedDP(1.0), seed=25)
    print(res.row("calibrate multiclass binning, DistributedDP"))
    assert res.epsilon_lower <= 1.0, res


def test_audit_multiclass_binning_client_level_fast() -> None:
    """Client level: the bound B = 2 is applied in the rounds (it was not: 3 examples went in)."""
    model = fe.DistributedDP(1.0, unit="client", contribution_bound=2)
    res = _audit_ovr(model, trials=1_500, pilot=400, seed=27)
    assert res.epsilon_lower <= 1.0, res


def test_audit_multiclass_binning_client_level_detects_half_the_noise() -> None:
    model = fe.DistributedDP(2.0, unit="client", contribution_bound=2)
    res = _audit_ovr(model, trials=4_000, pilot=1_000, seed=28)
    assert res.epsilon_lower > 1.0, res


def test_audit_multiclass_binning_detects_half_the_noise() -> None:
    # The noise of 2ε (what a sensitivity of 1 instead of c = 2 would give) claimed as ε.
    res = _audit_ovr(fe.DistributedDP(2.0), trials=4_000, pilot=1_000, seed=26)
    assert res.epsilon_lower > 1.0, res


# ------------------------------------------------- multiclass temperature, UserLevelDP
EPSILON, DELTA, CLIP = 2.0, 1e-3, 0.5


def _multiclass_fed(extra: bool) -> fe.Federation:
    """D: one client, one example. D′ adds a client of confident, wrong predictions.

    Its local fit raises the temperature by more than C, so its update is
    clipped to exactly C = 0.5: the largest change one client can make.
    """
    p, y, c = [[0.6, 0.4]], [0], [0]
    if extra:
        p, y, c = [*p, *[[0.99, 0.01]] * 3], [*y, 1, 1, 1], [*c, 1, 1, 1]
    return fe.Federation.from_arrays(np.array(p), np.array(y), clients=np.array(c))


def _temperature(extra: bool, model: fe.UserLevelDP) -> Any:
    fed = _multiclass_fed(extra)

    def one(rng: np.random.Generator) -> float:
        cal = fe.calibrate(
            fed, model, method="temperature", optimizer="fedavg", population=1, max_iter=1, rng=rng
        )
        return float(cal.params[0])  # type: ignore[attr-defined]

    return run_many(one)


def _claimed(model: fe.UserLevelDP) -> float:
    cal = fe.calibrate(
        _multiclass_fed(True), model, method="temperature", optimizer="fedavg", population=1, rng=0
    )
    return float(cal.epsilon_spent)


def _audit_temperature(claimed: float, **kw: Any) -> AuditResult:
    model = fe.UserLevelDP(EPSILON, DELTA, clip=CLIP)
    return audit(
        _temperature(False, model),
        _temperature(True, model),
        claimed_epsilon=claimed,
        delta=DELTA,
        confidence=CONFIDENCE,
        **kw,
    )


def test_the_added_client_moves_the_sum_by_exactly_c() -> None:
    # Noise-free (ε huge): the temperatures of D and D′ differ by C / population.
    model = fe.UserLevelDP(1e6, 0.5, clip=CLIP)
    taus = [
        fe.calibrate(
            _multiclass_fed(extra),
            model,
            method="temperature",
            optimizer="fedavg",
            population=1,
            max_iter=1,
            rng=0,
        ).params[0]  # type: ignore[attr-defined]
        for extra in (False, True)
    ]
    assert taus[1] - taus[0] == pytest.approx(CLIP, abs=1e-3)


@pytest.mark.slow
def test_audit_temperature_user_level_dp() -> None:
    claimed = _claimed(fe.UserLevelDP(EPSILON, DELTA, clip=CLIP))
    res = _audit_temperature(claimed, seed=31)
    print(res.row("calibrate temperature, UserLevelDP"))
    assert res.epsilon_lower <= claimed, res


def test_audit_temperature_user_level_dp_fast() -> None:
    claimed = _claimed(fe.UserLevelDP(EPSILON, DELTA, clip=CLIP))
    res = _audit_temperature(claimed, trials=800, pilot=200, seed=32)
    assert res.epsilon_lower <= claimed, res


def _halve_round_noise(monkeypatch: pytest.MonkeyPatch) -> None:
    """A deliberately broken release: every round's noise scale halved, the ε claimed unchanged.

    Patched wherever the dispatch is bound (:func:`audit_cases.patch_mechanism_for`):
    patching Rounds' binding alone left the noise that calibration takes from
    :func:`~fedeval.aggregation.release.reserve` honest
    (:func:`test_the_half_noise_twin_halves_the_released_spread`).
    """
    honest = importlib.import_module("fedeval.privacy.mechanism_for").mechanism_for

    def half_noise(*args: Any, **kwargs: Any) -> Any:
        mech = honest(*args, **kwargs)
        noise = mech.noise
        assert noise is not None and hasattr(noise, "scale"), noise
        weak = dataclasses.replace(noise, scale=np.asarray(noise.scale) / 2)
        return dataclasses.replace(mech, noise=weak)

    patch_mechanism_for(monkeypatch, half_noise)


def test_the_half_noise_twin_halves_the_released_spread(monkeypatch: pytest.MonkeyPatch) -> None:
    """The power check's broken release must really carry half the noise: the spread of the
    released temperature (noise-dominated here) halves. Its F-test on 300 draws a side."""
    model = fe.UserLevelDP(EPSILON, DELTA, clip=CLIP)
    fed = _multiclass_fed(False)

    def spread() -> float:
        taus = [
            fe.calibrate(
                fed, model, method="temperature", optimizer="fedavg", population=1,
                max_iter=1, rng=np.random.default_rng(i),
            ).params[0]  # type: ignore[attr-defined]
            for i in range(300)
        ]  # fmt: skip
        return float(np.std(taus, ddof=1))

    honest = spread()
    _halve_round_noise(monkeypatch)
    ratio = spread() / honest
    # The same seeds, so the two samples share their normals: the ratio is 1/2 up to
    # the clipped part of the update, which the noise dominates (σ·C ≫ C/n).
    assert ratio == pytest.approx(0.5, abs=0.05)


@pytest.mark.slow
def test_audit_temperature_detects_half_the_noise(monkeypatch: pytest.MonkeyPatch) -> None:
    claimed = _claimed(fe.UserLevelDP(EPSILON, DELTA, clip=CLIP))
    _halve_round_noise(monkeypatch)
    res = _audit_temperature(claimed, pilot=10_000, seed=33)
    print(res.row("calibrate temperature, UserLevelDP, half the noise"))
    assert res.epsilon_lower > claimed, res


# ------------------------------------------------------ no exact counts in the JSON
def _key_paths(obj: Any, prefix: str = "") -> set[str]:
    if isinstance(obj, dict):
        out = set()
        for k, v in obj.items():
            out |= {f"{prefix}/{k}"} | _key_paths(v, f"{prefix}/{k}")
        return out
    if isinstance(obj, list):
        return set().union(*(_key_paths(v, prefix + "[]") for v in obj)) if obj else set()
    return set()


def _integers(obj: Any) -> set[int]:
    """Integer leaves, and integers written inside strings."""
    if isinstance(obj, bool):
        return set()
    if isinstance(obj, int):
        return {obj}
    if isinstance(obj, str):
        return {int(t) for t in re.findall(r"(?<![\d.])\d+(?![\d.])", obj)}
    if isinstance(obj, dict):
        return set().union(*(_integers(v) for v in obj.values())) if obj else set()
    if isinstance(obj, list):
        return set().union(*(_integers(v) for v in obj)) if obj else set()
    return set()


def _clients(k: int, per_client: int = 3, c: int = 3) -> fe.Federation:
    rng = np.random.default_rng(7)
    n = 14 * per_client
    p = rng.dirichlet(np.ones(c), size=n)
    y = rng.integers(0, c, size=n)
    cl = np.repeat(np.arange(14), per_client)
    keep = cl < k
    return fe.Federation.from_arrays(p[keep], y[keep], clients=cl[keep])


@pytest.mark.parametrize(
    ("method", "options"),
    [
        ("binning", {}),
        ("bbq", {}),
        ("temperature", {}),
        ("vector", {"population": 20}),
        ("fedcal", {"hidden": 4, "max_iter": 2}),
    ],
)
def test_json_holds_no_exact_count_of_clients(method: str, options: dict[str, Any]) -> None:
    rounds = 3  # at q = 1, participations are 3 K
    docs = []
    forbidden: set[int] = set()
    for k in (13, 14):
        fed = _clients(k)
        forbidden |= {k, rounds * k, fed.n_examples}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            cal = fe.calibrate(
                fed,
                fe.UserLevelDP(1.0, 1e-5, clip=0.5),
                method=method,
                rounds=rounds,
                rng=0,
                **options,
            )
        docs.append(json.loads(cal.to_json()))
        assert "participations" not in repr(cal)
    assert _key_paths(docs[0]) == _key_paths(docs[1])
    for doc in docs:
        leaked = _integers(doc) & forbidden
        assert not leaked, (leaked, doc)


# ---------------------------------- federated Newton (clipped statistic sums), UserLevelDP
def _flat_fed(extra: bool) -> fe.Federation:
    """D: one client, one example of equal logits. D′ adds a client of 3 such examples.

    Equal logits give zero loss change, gradient and Hessian for any temperature,
    so the added client's vector is [3, 0, 0, 0], clipped to [C, 0, 0, 0]: it
    moves the released example count by exactly C, the largest change allowed.
    """
    n = 4 if extra else 1
    clients = np.array([0, 1, 1, 1][:n])
    return fe.Federation.from_arrays(
        np.zeros((n, 2)), np.zeros(n, dtype=int), clients=clients, kind="logits"
    )


#: FedCal's federated L-BFGS sends [n, ΔL, gradient] through the same clipped statistic
#: sums; on D's equal logits its gradient is 0 too (every gap of the order-preserving
#: map is 0), so the added client again moves only the released count, by C.
SUM_METHODS: dict[str, dict[str, Any]] = {"temperature": {}, "fedcal": {"hidden": 2}}


def _newton_count(extra: bool, model: fe.UserLevelDP, method: str = "temperature") -> Any:
    fed = _flat_fed(extra)

    def one(rng: np.random.Generator) -> float:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            cal = fe.calibrate(fed, model, method=method, rounds=1, rng=rng, **SUM_METHODS[method])  # type: ignore[arg-type]
        return float(cal.procedure["history"][0]["released_examples"])  # type: ignore[attr-defined]

    return run_many(one)


def _audit_newton(claimed: float, method: str = "temperature", **kw: Any) -> AuditResult:
    model = fe.UserLevelDP(EPSILON, DELTA, clip=CLIP)
    return audit(
        _newton_count(False, model, method),
        _newton_count(True, model, method),
        claimed_epsilon=claimed,
        delta=DELTA,
        confidence=CONFIDENCE,
        **kw,
    )


def _newton_claimed(method: str = "temperature") -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        cal = fe.calibrate(
            _flat_fed(True), fe.UserLevelDP(EPSILON, DELTA, clip=CLIP), method=method,  # type: ignore[arg-type]
            rounds=1, rng=0, **SUM_METHODS[method],
        )  # fmt: skip
    return float(cal.epsilon_spent)


@pytest.mark.parametrize("method", list(SUM_METHODS))
def test_newton_added_client_moves_the_released_count_by_exactly_c(method: str) -> None:
    model = fe.UserLevelDP(1e6, 0.5, clip=CLIP)
    counts = []
    for extra in (False, True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            cal = fe.calibrate(
                _flat_fed(extra), model, method=method, rounds=1, rng=0, **SUM_METHODS[method]
            )  # type: ignore[arg-type]
        counts.append(cal.procedure["history"][0]["released_examples"])  # type: ignore[attr-defined]
    assert counts[1] - counts[0] == pytest.approx(CLIP, abs=1e-3)


@pytest.mark.parametrize("method", ["temperature", pytest.param("fedcal", marks=pytest.mark.slow)])
def test_audit_newton_user_level_dp_fast(method: str) -> None:
    claimed = _newton_claimed(method)
    res = _audit_newton(claimed, method, trials=800, pilot=200, seed=41)
    assert res.epsilon_lower <= claimed, res


@pytest.mark.slow
@pytest.mark.parametrize("method", list(SUM_METHODS))
def test_audit_newton_user_level_dp(method: str) -> None:
    claimed = _newton_claimed(method)
    res = _audit_newton(claimed, method, seed=42)
    print(res.row(f"calibrate {method} (clipped statistic sums), UserLevelDP"))
    assert res.epsilon_lower <= claimed, res


@pytest.mark.slow
@pytest.mark.parametrize("method", list(SUM_METHODS))
def test_audit_newton_detects_half_the_noise(monkeypatch: pytest.MonkeyPatch, method: str) -> None:
    claimed = _newton_claimed(method)
    _halve_round_noise(monkeypatch)
    res = _audit_newton(claimed, method, pilot=10_000, seed=43)
    print(res.row(f"calibrate {method} (clipped statistic sums), UserLevelDP, half the noise"))
    assert res.epsilon_lower > claimed, res
