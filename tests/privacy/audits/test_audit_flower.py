"""Issue 12: end-to-end audit of the Flower client encoding and server decoding.

What the Flower apps run, minus the transport, in-process and without flwr:
every client calls :func:`fedeval.flower.replies.encode_client` on its own
examples with its own random stream (it subsamples itself to the public bound,
encodes, and adds its own Pólya share), the server adds the replies (the sum
SecAgg+ returns) and decodes them with :func:`fedeval.flower.decode.decode_sum`.
The plan is the server's: the DistDP model carries the public bound
``max-examples-per-client`` as its contribution bound
(:func:`fedeval.flower.plan.with_client_bound`).

**Neighbours.** Client 0 holds B positives at score 0.2 (B is the public bound);
clients 1 and 2 hold one negative each. D′ adds a positive at 0.8 to client 0,
which then keeps B of its B + 1 examples at random: with probability B/(B + 1)
the added example displaces a kept one, a swap between the two leaves.

**Observed output.** One hierarchy level (height 1, two leaves) is released. The
statistic is min(c_B, B − c_A) of the released positive counts c_A of [0, 0.5)
and c_B of [0.5, 1): the joint tail {c_A ≤ B − 1 and c_B ≥ 1} as one number.
Under a swap its probability ratio is e^ε exactly (each of the two counts moves
by 1 against noise calibrated to L1 = 2), so the only slack is the mixture with
the no-swap case: ln(B/(B + 1)·e^ε + 1/(B + 1)). The plan uses
``min_received = n_shares`` (every share needed), so the summed noise is exactly
the target discrete Laplace and the audit is as tight as the protocol allows.

**Power.** With the clients' noise halved (α → α², true ε doubled) the same
audit must report a lower bound above the claim: ln(½e² + ½) = 1.43 at ε = 1, B = 1.

**Plaintext shares.** Without SecAgg+ the server sees each reply; it is refused
unless allowed, and then the receipt states the exact ε of one share seen alone,
which the audit of one client's reply must not exceed, while the old claim (the
target ε) is exceeded.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

import fedeval as fe
from dp_audit import audit, run_many
from fedeval.flower.decode import decode_sum
from fedeval.flower.plan import EvaluationPlan, with_client_bound
from fedeval.flower.replies import encode_client
from fedeval.flower.run_privacy import check_run
from fedeval.privacy.mechanisms.polya import PolyaShares
from fedeval.privacy.models import model_to_dict
from fedeval.privacy.noise import PolyaShareNoise
from fedeval.privacy.sampling import client_streams

pytestmark = pytest.mark.privacy

EPSILON = 1.0
N_CLIENTS = 3


def _plan(bound: int, *, n_shares: int = N_CLIENTS, min_received: int = N_CLIENTS, **kw: object):
    """The server's plan: the DistDP model carries the public bound."""
    model = with_client_bound(fe.DistributedDP(EPSILON), bound)
    return EvaluationPlan(
        privacy=model_to_dict(model),
        height=1,
        branching=2,
        score_range=(0.0, 1.0),
        max_examples=bound,
        n_shares=n_shares,
        min_received=min_received,
        setting="distdp",
        **kw,  # type: ignore[arg-type]
    )


def _clients(bound: int, extra: bool) -> list[tuple[np.ndarray, np.ndarray]]:
    """Client 0: B positives at 0.2 (D′: and one at 0.8); clients 1, 2: one negative."""
    first = np.r_[np.full(bound, 0.2), [0.8] if extra else []]
    return [
        (first, np.ones(first.size, dtype=np.int64)),
        (np.array([0.5]), np.array([0])),
        (np.array([0.6]), np.array([0])),
    ]


def _released(bound: int, extra: bool, plan: EvaluationPlan):
    """min(c_B, B − c_A) of the level the server decodes from the summed replies."""
    clients = _clients(bound, extra)

    def one(rng: np.random.Generator) -> float:
        total = np.zeros(plan.vector_length, dtype=np.int64)
        for (scores, labels), own in zip(clients, client_streams(rng, len(clients)), strict=True):
            total += encode_client(plan, scores, labels, own)
        level = decode_sum(plan, total, len(clients)).levels[0]
        return float(min(level[1, 1], bound - level[1, 0]))

    return run_many(one)


def _audit_secure_sum(bound: int, **kw: object):
    plan = _plan(bound)
    assert plan.mechanism().guarantee.epsilon == pytest.approx(EPSILON)
    return audit(
        _released(bound, False, plan),
        _released(bound, True, plan),
        claimed_epsilon=EPSILON,
        **kw,  # type: ignore[arg-type]
    )


@pytest.mark.slow
@pytest.mark.parametrize("bound", [1, 3])
def test_audit_flower_distdp_example_added_at_the_bound(bound: int) -> None:
    res = _audit_secure_sum(bound, seed=100 + bound, confidence=0.999)
    print(res.row(f"Flower DistDP, B = {bound}"))
    assert res.epsilon_lower <= EPSILON, res


def test_audit_flower_distdp_example_added_at_the_bound_fast() -> None:
    res = _audit_secure_sum(1, trials=3_000, pilot=1_000, seed=7, confidence=0.999)
    print(res.row("Flower DistDP, B = 1 (fast)"))
    assert res.epsilon_lower <= EPSILON, res


def test_audit_flower_has_power_half_the_client_noise_is_detected(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every client's share drawn with α² instead of α: half the noise scale."""
    monkeypatch.setattr(
        PolyaShares, "alpha", property(lambda s: math.exp(-2 * s.epsilon / s.l1_sensitivity))
    )
    res = _audit_secure_sum(1, trials=3_000, pilot=1_000, seed=8)
    print(res.row("Flower DistDP, B = 1, half the noise (power)"))
    assert res.epsilon_lower > EPSILON, res


def test_audit_catches_a_plan_whose_model_lacks_the_bound() -> None:
    """Clients subsample to the public bound; if the model did not carry it as its
    contribution bound, the noise would cover adding one example (L1 = 1), not
    the swap subsampling causes: true ε = ln(½e² + ½) = 1.43 at a claimed 1."""
    plan = replace(_plan(1), privacy=model_to_dict(fe.DistributedDP(EPSILON)))
    assert plan.client_bound == 1 and plan.mechanism().contribution_bound is None
    res = audit(
        _released(1, False, plan),
        _released(1, True, plan),
        claimed_epsilon=EPSILON,
        trials=3_000,
        pilot=1_000,
        seed=10,
    )
    print(res.row("Flower DistDP, B = 1, model without the bound (power)"))
    assert res.epsilon_lower > EPSILON, res


# ------------------------------------------------------------ plaintext shares
def test_plaintext_distdp_is_refused_unless_allowed() -> None:
    model = fe.DistributedDP(EPSILON)
    with pytest.raises(ValueError, match="allow-plaintext-shares"):
        check_run((model,), max_examples=1, secagg=False, cohort_size=N_CLIENTS)
    check_run(
        (model,), max_examples=1, secagg=False, allow_plaintext_shares=True, cohort_size=N_CLIENTS
    )
    skellam = fe.DistributedDP(EPSILON, noise="skellam", delta=1e-6)
    with pytest.raises(ValueError, match="Skellam"):
        check_run(
            (skellam,),
            max_examples=1,
            secagg=False,
            allow_plaintext_shares=True,
            cohort_size=N_CLIENTS,
        )


def _one_reply(bound: int, extra: bool, plan: EvaluationPlan):
    """min(v_B, B − v_A) of client 0's own reply: what a plaintext server sees."""
    scores, labels = _clients(bound, extra)[0]

    def one(rng: np.random.Generator) -> float:
        level = plan.spec.unflatten(encode_client(plan, scores, labels, rng))[0]
        return float(min(level[1, 1], bound - level[1, 0]))

    return run_many(one)


def test_plaintext_distdp_receipt_is_the_one_share_epsilon_audited() -> None:
    # Five clients, SecAgg+-style threshold 4: each share is Pólya(1/4) differences.
    secure = _plan(1, n_shares=5, min_received=4)
    plain = replace(secure, plaintext_shares=True)
    noise = secure.mechanism().noise
    assert isinstance(noise, PolyaShareNoise)
    one_share = noise.epsilon_if_received(1)
    assert one_share == pytest.approx(secure.mechanism().when_received(1).guarantee.epsilon)
    assert one_share >= noise.shares.epsilon_if_received(1)
    receipt = plain.mechanism().receipt
    assert receipt.guarantee.epsilon == pytest.approx(one_share)
    assert receipt.epsilon_spent == pytest.approx(one_share)
    assert "plaintext: the server sees each client's share" in receipt.guarantee.statement
    res = audit(
        _one_reply(1, False, plain),
        _one_reply(1, True, plain),
        claimed_epsilon=one_share,
        trials=3_000,
        pilot=1_000,
        seed=9,
        confidence=0.999,
    )
    print(res.row("Flower DistDP, plaintext shares, one client's reply"))
    assert res.epsilon_lower <= one_share, res
    # The old receipt claimed the target ε: one reply alone already exceeds it.
    assert res.epsilon_lower > EPSILON, res
