"""Pure-Python parts of the Flower integration (no flwr needed).

Plan encoding, the faithful client encoder against the in-process release,
range checks, the SecAgg+ parameter and clipping-range choice, and the noise of
the sum of client shares.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

import fedeval as fe
from fedeval.flower.decode import (
    RunFacts,
    build_evaluation,
    decode_ldp,
    decode_sum,
    release_mechanism,
)
from fedeval.flower.plan import EvaluationPlan, with_client_bound
from fedeval.flower.replies import (
    NotEnoughClientsError,
    ReplyOutOfRangeError,
    ReplyRange,
    check_enough_clients,
    check_reply,
    client_reply,
    encode_client,
    reply_range,
)
from fedeval.flower.run_privacy import charge_run, check_run, ledger_record
from fedeval.flower.secagg import choose_clipping_range, clipping_delta, secagg_parameters
from fedeval.privacy.ledger import BudgetExceededError
from fedeval.privacy.mechanism_for import Mechanism
from fedeval.privacy.mechanisms.polya import polya_difference_epsilon
from fedeval.privacy.models import model_from_dict, model_to_dict
from fedeval.privacy.noise import PolyaShareNoise
from fedeval.privacy.receipt import Receipt
from helpers import release_hierarchy


def _fed(n: int = 3000, n_clients: int = 20, seed: int = 0) -> fe.Federation:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    s = np.clip(rng.normal(0.4 + 0.2 * y, 0.15), 0.0, 1.0)
    return fe.Federation.from_arrays(s, y, clients=rng.integers(0, n_clients, n))


def _plan(model: object, fed: fe.Federation, **kw: object) -> EvaluationPlan:
    args: dict = {
        "privacy": model_to_dict(model),  # type: ignore[arg-type]
        "height": 4,
        "branching": 2,
        "score_range": (0.0, 1.0),
        "max_examples": int(fed.client_sizes.max()),
        "n_shares": fed.n_clients,
        "min_received": fed.n_clients - 1,
    }
    args.update(kw)
    return EvaluationPlan(**args)


# ------------------------------------------------------------------ plan codec
@pytest.mark.parametrize(
    "model",
    [
        fe.SecureAggregation(),
        fe.DistributedDP(epsilon=1.0),
        fe.DistributedDP(epsilon=2.0, noise="skellam", delta=1e-6),
        fe.DistributedDP(epsilon=1.0, unit="client", contribution_bound=5),
        fe.LocalDP(epsilon=3.0),
    ],
)
def test_plan_json_round_trip(model: object) -> None:
    plan = _plan(model, _fed(200, 5), setting="x")
    back = EvaluationPlan.from_json(plan.to_json())
    assert back == plan
    assert model_from_dict(back.privacy) == model


@pytest.mark.parametrize(
    "text", ["not json", "[1, 2]", '{"height": 3}', '{"privacy": {"name": "magic"}}']
)
def test_malformed_plan_is_a_clear_error(text: str) -> None:
    with pytest.raises(ValueError, match=r"plan|privacy"):
        EvaluationPlan.from_json(text)


def test_plan_rejects_bad_fields() -> None:
    fed = _fed(200, 5)
    with pytest.raises(ValueError, match="min_received"):
        _plan(fe.SecureAggregation(), fed, min_received=9, n_shares=5)
    with pytest.raises(ValueError, match="max_examples"):
        _plan(fe.SecureAggregation(), fed, max_examples=0)
    # Every model now has a dict form; the plan refuses a model that cannot release
    # the hierarchy (the pipeline's own dispatch, mechanism_for, decides).
    with pytest.raises(TypeError, match="UserLevelDP"):
        _plan(fe.UserLevelDP(epsilon=1.0, delta=1e-5, clip=1.0), fed)
    with pytest.raises(TypeError, match="LabelDP"):
        _plan(fe.LabelDP(epsilon=1.0), fed)


# --------------------------------------------------------------- client encoder
def test_sa_client_encodings_sum_to_the_in_process_release() -> None:
    fed = _fed()
    plan = _plan(fe.SecureAggregation(), fed)
    rng = np.random.default_rng(1)
    total = sum(encode_client(plan, v.scores, v.labels, rng) for v in fed.clients())
    tree = decode_sum(plan, np.asarray(total), fed.n_clients)
    ref = release_hierarchy(fed, fe.SecureAggregation(), height=4)
    for a, b in zip(tree.levels, ref.levels, strict=True):
        np.testing.assert_array_equal(a, b)
    facts = RunFacts(n_selected=fed.n_clients, n_used=fed.n_clients)
    ev = build_evaluation(tree, plan, n_buckets=4, n_quantiles=16, facts=facts)
    direct = fe.evaluate(fed, fe.SecureAggregation(), height=4, n_buckets=4)
    assert ev.roc_auc == direct.roc_auc
    # Public under secure aggregation: the number of clients whose replies were summed.
    assert ev.parameters["n_clients"] == fed.n_clients
    # Under distributed DP (add/remove one example) it is not, and is not published.
    dist = _plan(with_client_bound(fe.DistributedDP(epsilon=1.0), 10), fed, max_examples=10)
    noisy = decode_sum(dist, np.zeros(dist.vector_length, dtype=np.int64), fed.n_clients)
    dp = build_evaluation(noisy, dist, n_buckets=4, n_quantiles=16, facts=facts)
    assert dp.parameters["n_clients"] is None
    assert "not public" in dp.parameters["public_inputs"]["n_clients"]


def test_client_above_the_public_bound_subsamples_itself() -> None:
    """Issue 12: a client above ``max_examples`` keeps that many of its examples,
    chosen uniformly at random with its own rng, instead of refusing (a refusal
    named the client and revealed that it was above the bound)."""
    scores = np.array([0.05, 0.3, 0.55, 0.8, 0.95])
    labels = np.array([1, 0, 1, 0, 1])
    fed = _fed(200, 5)
    plan = _plan(fe.SecureAggregation(), fed, max_examples=3)
    assert plan.client_bound == 3
    leaves = plan.spec.n_leaves
    kept = np.zeros(2 * leaves)
    reps = 3000
    for seed in range(reps):
        vec = encode_client(plan, scores, labels, np.random.default_rng(seed))
        assert vec.sum() == 3  # exactly the bound, each example once
        kept += vec
    # Each example is kept with probability 3/5 (binomial standard error).
    one = plan.spec.encode_levels(scores, labels)[-2 * leaves :]
    expected = 0.6 * reps * one
    se = math.sqrt(reps * 0.6 * 0.4)
    assert np.all(np.abs(kept - expected) <= 5 * se * one)
    # At or below the bound nothing is dropped.
    vec = encode_client(plan, scores[:3], labels[:3], np.random.default_rng(0))
    np.testing.assert_array_equal(
        vec, plan.spec.encode_levels(scores[:3], labels[:3])[-2 * leaves :]
    )


def test_distdp_plan_carries_the_public_bound_as_contribution_bound() -> None:
    """Issue 12: under DistDP the clients' subsampling to the public bound is a
    contribution bound, so the model carries it and the noise covers the swap an
    added example can cause (L1 = 2 per level)."""
    bounded = with_client_bound(fe.DistributedDP(epsilon=1.0), 7)
    assert bounded == fe.DistributedDP(epsilon=1.0, contribution_bound=7)
    plan = _plan(bounded, _fed(200, 5), max_examples=7)
    mech = plan.mechanism()
    assert mech.contribution_bound == 7 and plan.client_bound == 7
    assert mech.sensitivity is not None and mech.sensitivity.l1 == 2 * plan.height
    # A model's own (smaller) bound is kept, and the client keeps the smaller one.
    own = fe.DistributedDP(epsilon=1.0, unit="client", contribution_bound=2)
    assert with_client_bound(own, 7) == own
    assert _plan(own, _fed(200, 5), max_examples=7).client_bound == 2
    # Models without a contribution bound are unchanged.
    for model in (fe.SecureAggregation(), fe.LocalDP(epsilon=1.0)):
        assert with_client_bound(model, 7) == model


@pytest.mark.statistical
def test_sum_of_client_shares_has_the_target_variance() -> None:
    """k >= threshold Pólya shares, each drawn by the client's own code, sum to the
    target discrete Laplace (variance × k/m): checked over many draws."""
    fed = _fed(400, 20)
    plan = _plan(fe.DistributedDP(epsilon=1.0), fed, min_received=18)
    noise = plan.mechanism().noise
    assert isinstance(noise, PolyaShareNoise)
    rng = np.random.default_rng(7)
    k = 19  # one of 20 clients dropped out
    reps = []
    for _ in range(60):
        tot = np.zeros(plan.vector_length, dtype=np.int64)
        for i in range(k):
            v = fed.client(i)
            tot += encode_client(plan, v.scores, v.labels, rng)
        reps.append(tot)
    counts = plan.spec.encode_levels(
        fed.scores[fed.client_index < k], fed.labels[fed.client_index < k]
    )
    noise_draws = np.asarray(reps) - counts
    target = noise.shares.target.variance  # the discrete Laplace any 18 shares sum to
    expected = target * k / 18
    n = noise_draws.size
    se = expected * math.sqrt(5.0 / n)  # var of s² for a Laplace-like law ≈ σ⁴(2+3)/n
    assert abs(noise_draws.var() - expected) < 5 * se
    assert abs(noise_draws.mean()) < 5 * math.sqrt(expected / n)


# ------------------------------------------------------------------ range checks
def test_check_reply_accepts_honest_and_rejects_out_of_range() -> None:
    r = ReplyRange(4, 0, 5)
    np.testing.assert_array_equal(check_reply(np.array([0.0, 5.0, 1.0, 2.0]), r), [0, 5, 1, 2])
    with pytest.raises(ReplyOutOfRangeError, match="outside the honest range"):
        check_reply(np.array([0, 6, 0, 0]), r)
    with pytest.raises(ReplyOutOfRangeError, match="outside the honest range"):
        check_reply(np.array([-1, 0, 0, 0]), r)
    with pytest.raises(ReplyOutOfRangeError, match="shape"):
        check_reply(np.zeros(3), r)
    with pytest.raises(ReplyOutOfRangeError, match="non-integer"):
        check_reply(np.array([0.5, 0, 0, 0]), r)
    with pytest.raises(ReplyOutOfRangeError, match="non-finite"):
        check_reply(np.array([np.nan, 0, 0, 0]), r)
    with pytest.raises(ReplyOutOfRangeError, match="sums to"):
        check_reply(np.array([1, 1, 0, 0]), ReplyRange(4, 0, 5, total=3))


def test_ldp_reply_range_and_decoding() -> None:
    fed = _fed(2000, 20)
    model = fe.LocalDP(epsilon=4.0)
    base = _plan(model, fed)
    rng = np.random.default_rng(3)
    levels = (np.arange(fed.n_clients) % base.height) + 1
    raw = [np.zeros(2 * base.spec.level_size(k), dtype=np.int64) for k in range(1, 5)]
    n_rep = np.zeros(4, dtype=np.int64)
    m_k = np.zeros(4, dtype=np.int64)
    for i, v in enumerate(fed.clients()):
        plan = base.with_level(int(levels[i]))
        vec = encode_client(plan, v.scores, v.labels, rng)
        check_reply(vec, reply_range(plan, n_examples=v.n_examples))
        with pytest.raises(ReplyOutOfRangeError):
            bad = vec.copy()
            bad[0] = v.n_examples + 1
            check_reply(bad, reply_range(plan, n_examples=v.n_examples))
        raw[plan.level - 1] += vec
        n_rep[plan.level - 1] += v.n_examples
        m_k[plan.level - 1] += 1
    tree = decode_ldp(base, raw, n_rep, m_k)
    # Unbiased totals: within a generous multiple of their standard error.
    totals = tree.totals()
    sd = np.sqrt(tree.node_variance[0].sum(axis=1))
    true = np.bincount(fed.labels, minlength=2)
    assert np.all(np.abs(totals - true) < 6 * sd + 1)


def test_declared_size_above_bound_is_rejected() -> None:
    plan = _plan(fe.SecureAggregation(), _fed(200, 5), max_examples=10)
    with pytest.raises(ReplyOutOfRangeError, match="max_examples"):
        reply_range(plan, n_examples=11)


def test_not_enough_clients_is_a_clear_error() -> None:
    check_enough_clients(3, 3, stage="selection")
    with pytest.raises(NotEnoughClientsError, match="only 2 client"):
        check_enough_clients(2, 3, stage="selection")


# -------------------------------------------------------------- SecAgg+ set-up
@pytest.mark.parametrize(("n", "d"), [(20, 1), (21, 2), (100, 5), (4, 1)])
def test_secagg_parameters_are_odd_and_tolerate_dropouts(n: int, d: int) -> None:
    s, t = secagg_parameters(n, max_dropouts=d)
    assert s % 2 == 1 and s <= n
    assert t == s - d and t > s // 2 and t >= 2


def test_secagg_parameters_refuse_insecure_tolerance() -> None:
    with pytest.raises(ValueError, match="majority"):
        secagg_parameters(10, max_dropouts=5)
    with pytest.raises(ValueError, match="max_dropouts"):
        secagg_parameters(10, max_dropouts=0)
    with pytest.raises(ValueError, match="at least 3"):
        secagg_parameters(2, max_dropouts=1)


def test_clipping_range_without_noise_is_the_count_bound() -> None:
    fed = _fed(500, 20)
    plan = _plan(fe.SecureAggregation(), fed, max_examples=50)
    p = choose_clipping_range(plan, max_dropouts=1)
    assert p.clipping_range == 50 and p.quantization_range == 100
    assert p.noise_tail == 0 and p.clip_probability == 0.0
    assert plan.n_shares * p.quantization_range < p.modulus_range <= 2**32


@pytest.mark.parametrize(
    "model",
    [fe.DistributedDP(epsilon=1.0), fe.DistributedDP(epsilon=1.0, noise="skellam", delta=1e-6)],
)
def test_clipping_range_bounds_honest_shares(model: object) -> None:
    fed = _fed(500, 20)
    plan = _plan(model, fed, max_examples=40, min_received=18)
    target = 1e-9
    p = choose_clipping_range(plan, max_dropouts=1, clip_probability=target)
    assert p.clipping_range == 40 + p.noise_tail
    assert 0 < p.clip_probability <= target
    # τ is the smallest such bound: τ - 1 would exceed the target.
    smaller = choose_clipping_range(plan, max_dropouts=1, clip_probability=p.clip_probability * 50)
    assert smaller.noise_tail < p.noise_tail
    # Empirically no share of 20 clients × vector length exceeds τ.
    noise = plan.mechanism().noise
    assert noise is not None
    draws = noise.share(plan.n_shares * plan.vector_length, np.random.default_rng(0))
    assert np.abs(draws).max() <= p.noise_tail


def test_clipping_delta_folds_into_the_guarantee() -> None:
    assert clipping_delta(1.0, 0.0) == 0.0
    assert clipping_delta(1.0, 1e-9) == pytest.approx((1 + math.e) * 1e-9)
    fed = _fed(500, 20)
    plan = _plan(fe.DistributedDP(epsilon=1.0), fed, min_received=19)
    tree = decode_sum(plan, np.zeros(plan.vector_length, dtype=np.int64), 20, clip_probability=1e-9)
    assert tree.guarantee.epsilon == pytest.approx(1.0)
    assert tree.guarantee.delta == pytest.approx((1 + math.e) * 1e-9)
    # At or above the threshold the guarantee is the target one: its statement gives the
    # threshold as a fraction of the parties (no count; it names the shares received only
    # below it).
    assert f"any fraction {19 / 20:.4g} of them" in tree.guarantee.statement
    assert "arrived" not in tree.guarantee.statement
    assert "SecAgg+ clipping" in tree.guarantee.statement
    ev = build_evaluation(tree, plan, n_buckets=4, n_quantiles=16)
    assert ev.delta_spent == pytest.approx((1 + math.e) * 1e-9)
    assert ev.epsilon_spent == pytest.approx(1.0)


def test_exact_sum_must_fit_the_modulus() -> None:
    fed = _fed(500, 20)
    plan = _plan(fe.SecureAggregation(), fed, max_examples=2**27)
    with pytest.raises(ValueError, match="modulus_range"):
        choose_clipping_range(plan, max_dropouts=1)


def test_fewer_shares_than_threshold_weakens_epsilon() -> None:
    fed = _fed(500, 20)
    plan = _plan(fe.DistributedDP(epsilon=1.0), fed, min_received=18)
    tree = decode_sum(plan, np.zeros(plan.vector_length, dtype=np.int64), 10)
    assert tree.guarantee.epsilon > 1.0
    # The exact weaker ε: one example shifts the vector by L1 = h = 4 (one node per
    # level), the noise per coordinate is Pólya(10/18, α) − Pólya(10/18, α) with
    # α = e^(-ε/L1), and ε = L1 × the loss of one unit shift.
    l1 = plan.height
    exact = l1 * polya_difference_epsilon(10 / 18, math.exp(-1.0 / l1), 1)
    assert tree.guarantee.epsilon == pytest.approx(exact, rel=1e-9)
    assert "only 10 of 20 shares arrived" in tree.guarantee.statement
    # The SecAgg+ clipping δ is (1 + e^ε)·δ_clip with the ε that holds.
    clipped = decode_sum(
        plan, np.zeros(plan.vector_length, dtype=np.int64), 10, clip_probability=1e-9
    )
    assert clipped.guarantee.epsilon == pytest.approx(exact, rel=1e-9)
    assert clipped.guarantee.delta == pytest.approx((1 + math.exp(exact)) * 1e-9)
    # More shares: a smaller ε, back to the target at the threshold.
    eps = [
        decode_sum(plan, np.zeros(plan.vector_length, dtype=np.int64), k).guarantee.epsilon
        for k in (5, 10, 17, 18)
    ]
    assert eps == sorted(eps, reverse=True) and eps[-1] == pytest.approx(1.0)
    # The ledger charges the weaker ε.
    ev = build_evaluation(tree, plan, n_buckets=4, n_quantiles=16)
    assert ev.epsilon_spent == pytest.approx(exact, rel=1e-9)


# ------------------------------------------------- plaintext shares (issue 12)
def test_plaintext_polya_shares_are_receipted_with_the_one_share_epsilon() -> None:
    """Without SecAgg+ the server sees every client's single Pólya share: the
    receipt, the guarantee and the ledger state the exact ε of one share alone."""
    fed = _fed(500, 20)
    model = with_client_bound(fe.DistributedDP(epsilon=1.0), 40)
    secure = _plan(model, fed, max_examples=40, min_received=18)
    plain = replace(secure, plaintext_shares=True)
    noise = secure.mechanism().noise
    assert isinstance(noise, PolyaShareNoise)
    one_share = noise.epsilon_if_received(1)
    assert one_share > 5.0  # far from the target ε = 1
    mech = plain.mechanism()
    assert mech.guarantee.epsilon == pytest.approx(one_share, rel=1e-12)
    assert "plaintext: the server sees each client's share" in mech.guarantee.statement
    assert sum(e.epsilon for e in mech.ledger_entries) == pytest.approx(one_share, rel=1e-9)
    # Whatever number of replies arrive, one share seen alone is what holds.
    tree = decode_sum(plain, np.zeros(plain.vector_length, dtype=np.int64), 20)
    assert tree.guarantee.epsilon == pytest.approx(one_share, rel=1e-12)
    ev = build_evaluation(tree, plain, n_buckets=4, n_quantiles=16)
    assert ev.epsilon_spent == pytest.approx(one_share, rel=1e-9)
    # The noise (and the clients' shares) are those of the secure plan.
    assert mech.noise == noise
    # The JSON plan (sent to clients, published in the result) says so.
    assert EvaluationPlan.from_json(plain.to_json()).plaintext_shares is True


def test_plaintext_skellam_shares_are_refused() -> None:
    fed = _fed(500, 20)
    model = with_client_bound(fe.DistributedDP(epsilon=1.0, noise="skellam", delta=1e-6), 40)
    with pytest.raises(ValueError, match="plaintext"):
        _plan(model, fed, max_examples=40, plaintext_shares=True)


def test_run_refuses_plaintext_shares_unless_allowed() -> None:
    dist = fe.DistributedDP(epsilon=1.0)
    check_run((dist,), max_examples=10, secagg=True, cohort_size=20)
    with pytest.raises(ValueError, match="allow-plaintext-shares"):
        check_run((dist,), max_examples=10, secagg=False, cohort_size=20)
    check_run((dist,), max_examples=10, secagg=False, allow_plaintext_shares=True, cohort_size=20)
    skellam = fe.DistributedDP(epsilon=1.0, noise="skellam", delta=1e-6)
    with pytest.raises(ValueError, match="Skellam"):
        check_run(
            (skellam,), max_examples=10, secagg=False, allow_plaintext_shares=True, cohort_size=20
        )
    # Local DP is plaintext by design; SA has no DP to lose.
    check_run((fe.LocalDP(epsilon=1.0),), max_examples=10, secagg=False)
    check_run((fe.SecureAggregation(),), max_examples=0, secagg=False)


# ------------------------------------------------------ client sizes (issue 12)
def test_run_under_dp_needs_a_declared_bound() -> None:
    for model in (fe.DistributedDP(epsilon=1.0), fe.LocalDP(epsilon=1.0)):
        with pytest.raises(ValueError, match="max-examples-per-client"):
            check_run((model,), max_examples=0, secagg=True, cohort_size=20)
        check_run((model,), max_examples=5, secagg=True, cohort_size=20)
    # Secure aggregation alone may take the bound from the clients' sizes.
    check_run((fe.SecureAggregation(),), max_examples=0, secagg=True)


def test_sum_replies_carry_no_size_and_ldp_replies_the_public_report_count() -> None:
    fed = _fed(500, 20)
    scores, labels = np.linspace(0.0, 1.0, 9), np.arange(9) % 2
    dist = _plan(with_client_bound(fe.DistributedDP(epsilon=1.0), 4), fed, max_examples=4)
    assert client_reply(dist, scores, labels, np.random.default_rng(0))[1] is None
    sa = _plan(fe.SecureAggregation(), fed, max_examples=4)
    assert client_reply(sa, scores, labels, np.random.default_rng(0))[1] is None
    ldp = _plan(fe.LocalDP(epsilon=1.0), fed, max_examples=4).with_level(2)
    vec, n = client_reply(ldp, scores, labels, np.random.default_rng(0))
    assert n == 4  # reports of the subsample, at most the public bound
    check_reply(vec, reply_range(ldp, n_examples=n))


def test_ldp_guarantee_says_each_clients_report_count_is_public() -> None:
    """Issue 12, finding 4: LDP clients send their number of reports in plaintext;
    LocalDP's neighbours replace one example, so the count is public by the model,
    and the guarantee's public inputs say so."""
    fed = _fed(500, 20)
    model = fe.LocalDP(epsilon=1.0)
    assert model.example_count_public
    public = _plan(model, fed, max_examples=40).mechanism().guarantee.public
    assert any("number of reports each client sends" in p for p in public), public
    assert any("max-examples-per-client = 40" in p for p in public), public
    dist = _plan(with_client_bound(fe.DistributedDP(epsilon=1.0), 40), fed, max_examples=40)
    assert any("max-examples-per-client = 40" in p for p in dist.mechanism().guarantee.public)


# -------------------------------------------------- one ledger per run (issue 12)
def _mechanisms(fed: fe.Federation) -> dict[str, Mechanism]:
    dist = _plan(with_client_bound(fe.DistributedDP(epsilon=1.0), 40), fed, max_examples=40)
    ldp = _plan(fe.LocalDP(epsilon=2.0), fed, max_examples=40)
    return {
        "distdp eps=1": release_mechanism(dist, dist.n_shares, clip_probability=1e-9),
        "ldp eps=2": ldp.mechanism(),
    }


def _receipts(mechs: dict[str, Mechanism]) -> dict[str, Receipt]:
    return {k: m.receipt for k, m in mechs.items()}


def test_one_ledger_composes_every_dp_setting_of_a_run() -> None:
    mechs = _mechanisms(_fed(500, 20))
    ledger = charge_run(mechs)
    dist_delta = (1 + math.e) * 1e-9
    assert ledger.spent_epsilon == pytest.approx(3.0)
    assert ledger.spent_delta == pytest.approx(dist_delta)
    record = ledger_record(ledger, _receipts(mechs))
    assert [s["setting"] for s in record["settings"]] == ["distdp eps=1", "ldp eps=2"]
    # DistDP's neighbours add or remove an example, LDP's replace one: the total
    # is stated for replacement. DistDP with the public bound is calibrated to a
    # swap, so it holds as is under replacement: 1 + 2.
    assert mechs["distdp eps=1"].receipt.sensitivity["neighbouring"] == "replace"
    assert record["total"]["epsilon"] == pytest.approx(3.0)
    assert record["total"]["delta"] == pytest.approx(dist_delta)
    assert record["total"]["neighbouring"] == "replace one example's data"
    assert record["ledger"]["spent_epsilon"] == pytest.approx(3.0)
    assert len(record["ledger"]["entries"]) == len(ledger.entries)
    assert record["exact_release"] is None


def test_an_add_remove_setting_counts_twice_under_replacement() -> None:
    """Without a contribution bound DistDP's noise covers adding one example only:
    under replacement it is (2ε, (1 + e^ε)δ)-DP (group privacy for two changes)."""
    fed = _fed(500, 20)
    dist = _plan(fe.DistributedDP(epsilon=1.0), fed)  # no bound: an in-process style plan
    mechs = {
        "distdp eps=1": release_mechanism(dist, dist.n_shares, clip_probability=1e-9),
        "ldp eps=2": _plan(fe.LocalDP(epsilon=2.0), fed, max_examples=40).mechanism(),
    }
    assert mechs["distdp eps=1"].receipt.sensitivity["neighbouring"] == "add_remove"
    record = ledger_record(charge_run(mechs), _receipts(mechs))
    dist_delta = (1 + math.e) * 1e-9
    assert record["total"]["epsilon"] == pytest.approx(2 * 1.0 + 2.0)
    assert record["total"]["delta"] == pytest.approx((1 + math.e) * dist_delta)
    assert record["ledger"]["spent_epsilon"] == pytest.approx(3.0)


def test_one_ledger_with_a_single_relation_adds_epsilons() -> None:
    fed = _fed(500, 20)
    a = _plan(with_client_bound(fe.DistributedDP(epsilon=1.0), 40), fed, max_examples=40)
    b = _plan(with_client_bound(fe.DistributedDP(epsilon=0.5), 40), fed, max_examples=40)
    mechs = {"a": a.mechanism(), "b": b.mechanism()}
    record = ledger_record(charge_run(mechs), _receipts(mechs))
    assert record["total"]["epsilon"] == pytest.approx(1.5)
    assert record["total"]["neighbouring"] == "add or remove one example"
    assert record["total"]["unit"] == "example"


def test_run_budget_is_enforced_before_any_round() -> None:
    mechs = _mechanisms(_fed(500, 20))
    with pytest.raises(BudgetExceededError):
        charge_run(mechs, total_epsilon=2.5)
    ledger = charge_run(mechs, total_epsilon=3.0, total_delta=1e-8)
    assert ledger.remaining_epsilon == pytest.approx(0.0, abs=1e-9)
    with pytest.raises(ValueError, match="total-epsilon"):
        check_run((fe.DistributedDP(epsilon=2.0),), max_examples=5, total_epsilon=1.0)


def test_sa_with_dp_on_the_same_clients_is_refused_unless_allowed() -> None:
    models = (fe.SecureAggregation(), fe.DistributedDP(epsilon=1.0))
    with pytest.raises(ValueError, match="allow-sa-with-dp"):
        check_run(models, max_examples=10, secagg=True, cohort_size=20)
    check_run(models, max_examples=10, secagg=True, allow_sa_with_dp=True, cohort_size=20)
    fed = _fed(500, 20)
    mechs = {"sa": _plan(fe.SecureAggregation(), fed).mechanism(), **_mechanisms(fed)}
    record = ledger_record(charge_run(mechs), _receipts(mechs))
    # SA charges nothing and is no DP setting, but the record says the DP
    # receipts do not protect against its exact sums.
    assert [s["setting"] for s in record["settings"]] == ["distdp eps=1", "ldp eps=2"]
    assert record["exact_release"] is not None
    assert "'sa'" in record["exact_release"]
    assert "do not protect against" in record["exact_release"]
