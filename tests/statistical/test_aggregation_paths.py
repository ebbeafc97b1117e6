"""The fast (exact-in-distribution) and faithful (per-client) paths agree in distribution.

Each test releases the same hierarchy R times on each path and compares the
per-node noise (released - true) with the closed form and across paths.

Tolerances
----------
* A sample mean of N i.i.d. draws with variance σ² lies within 5σ/√N of the
  true mean (a 5-sigma band; nodes of one release have independent noise, so
  every node of every repetition is one draw).
* A sample variance lies within 5 standard errors of σ², with
  SE² = (μ4 - σ⁴)/N from the exact fourth central moment μ4.
* Distributions: chi-square goodness of fit against the exact pmf, and a
  chi-square homogeneity test between the two paths, each with p > 1e-4.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np
import pytest
from scipy import stats

from fedeval.aggregation import paths, release
from fedeval.aggregation.paths import bound_contributions, client_reports, client_vector
from fedeval.data import Federation
from fedeval.privacy.mechanism_for import Mechanism
from fedeval.privacy.mechanisms.skellam import SkellamShares
from fedeval.privacy.models import DistributedDP, LocalDP, SecureAggregation
from fedeval.privacy.sampling import client_streams
from fedeval.privacy.sensitivity import Part, Sensitivity
from fedeval.sketches.base import Sketch
from fedeval.sketches.hierarchy import HierarchySketch, HierarchySpec
from helpers import release_hierarchy

pytestmark = pytest.mark.statistical

N_CLIENTS = 30
PER_CLIENT = 20
HEIGHT = 3
R = 300
P_MIN = 1e-4


def _federation(identical_clients: bool) -> Federation:
    gen = np.random.default_rng(123)
    if identical_clients:
        s = gen.random(PER_CLIENT)
        y = gen.integers(0, 2, PER_CLIENT)
        scores, labels = np.tile(s, N_CLIENTS), np.tile(y, N_CLIENTS)
    else:
        scores = gen.random(N_CLIENTS * PER_CLIENT)
        labels = gen.integers(0, 2, N_CLIENTS * PER_CLIENT)
    clients = np.repeat(np.arange(N_CLIENTS), PER_CLIENT)
    return Federation.from_arrays(scores, labels, clients)


def _noise(fed: Federation, privacy: object, path: str, seed: int) -> np.ndarray:
    """(R, n_nodes) released minus true counts, every node of both classes."""
    true = np.concatenate(
        [lv.ravel() for lv in release_hierarchy(fed, SecureAggregation(), height=HEIGHT).levels]
    )
    gen = np.random.default_rng(seed)
    out = np.empty((R, true.size))
    for r in range(R):
        hist = release_hierarchy(fed, privacy, height=HEIGHT, path=path, rng=gen)  # type: ignore[arg-type]
        out[r] = np.concatenate([lv.ravel() for lv in hist.levels]) - true
    return out


def _check_moments(x: np.ndarray, var: float, mu4: float) -> None:
    n = x.size
    assert abs(x.mean()) <= 5 * math.sqrt(var / n), (x.mean(), var)
    se = math.sqrt((mu4 - var**2) / n)
    assert abs(x.var() - var) <= 5 * se, (x.var(), var, se)


def test_distdp_polya_fast_and_faithful_agree(
    dlaplace: Callable[..., tuple],
    two_sample_chi2_pvalue: Callable[..., float],
    gof_pvalue_int: Callable[..., float],
) -> None:
    eps = 1.0
    fed = _federation(identical_clients=False)
    alpha = math.exp(-eps / HEIGHT)
    pmf, var, mu4 = dlaplace(alpha)
    assert var == pytest.approx(2 * alpha / (1 - alpha) ** 2)
    hist = release_hierarchy(fed, DistributedDP(eps), height=HEIGHT, rng=0)
    for nv in hist.node_variance:
        np.testing.assert_allclose(nv, var, rtol=1e-12)
    samples = {}
    for path, seed in (("fast", 1), ("faithful", 2)):
        x = _noise(fed, DistributedDP(eps), path, seed)
        assert np.all(x == np.round(x))  # integer noise on counts
        _check_moments(x.ravel(), var, mu4)
        assert gof_pvalue_int(x.astype(np.int64), pmf) > P_MIN
        samples[path] = x.astype(np.int64).ravel()
    assert two_sample_chi2_pvalue(samples["fast"], samples["faithful"]) > P_MIN


def test_distdp_skellam_fast_and_faithful_agree(
    two_sample_chi2_pvalue: Callable[..., float],
    gof_pvalue_int: Callable[..., float],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # SkellamShares.calibrate (a deterministic numerical RDP search, ~40 ms) runs on
    # every release; memoise it so the 2R releases stay fast. Sampling is untouched.
    calibrate = SkellamShares.calibrate
    memo: dict[tuple[object, ...], SkellamShares] = {}

    def calibrate_once(*args: object, **kwargs: object) -> SkellamShares:
        key = (*args, *sorted(kwargs.items()))
        if key not in memo:
            memo[key] = calibrate(*args, **kwargs)  # type: ignore[arg-type]
        return memo[key]

    monkeypatch.setattr(SkellamShares, "calibrate", calibrate_once)
    eps, delta = 1.0, 1e-5
    model = DistributedDP(eps, noise="skellam", delta=delta)
    fed = _federation(identical_clients=False)
    # The whole vector is calibrated by RDP: L1 = h, L2 = sqrt(h) per example.
    mu = SkellamShares.calibrate(eps, delta, HEIGHT, math.sqrt(HEIGHT), N_CLIENTS).mu
    var = 2 * mu  # Poisson(μ) - Poisson(μ): cumulants κ2 = κ4 = 2μ
    mu4 = 2 * mu + 3 * var**2
    hist = release_hierarchy(fed, model, height=HEIGHT, rng=0)
    np.testing.assert_allclose(hist.node_variance[0], var, rtol=1e-9)

    def pmf(k: np.ndarray) -> np.ndarray:
        return stats.skellam.pmf(k, mu, mu)

    samples = {}
    for path, seed in (("fast", 3), ("faithful", 4)):
        x = _noise(fed, model, path, seed)
        _check_moments(x.ravel(), var, mu4)
        assert gof_pvalue_int(x.astype(np.int64), pmf) > P_MIN
        samples[path] = x.astype(np.int64).ravel()
    assert two_sample_chi2_pvalue(samples["fast"], samples["faithful"]) > P_MIN


def test_ldp_oue_fast_and_faithful_agree(two_sample_chi2_pvalue: Callable[..., float]) -> None:
    """LDP/OUE with identical clients, so the random split of clients into levels
    adds no sampling error: each of the h groups holds m = M/h clients whose true
    count is c/h, and the released node is h·(OUE estimate over n = m·PER_CLIENT
    reports). Wang et al. (2017): Var[estimate] = (c' p(1-p) + (n-c') q(1-q))/(p-q)²
    with p = 1/2, q = 1/(e^ε+1), c' the group's true count."""
    eps = 2.0
    fed = _federation(identical_clients=True)
    true = np.concatenate(
        [lv.ravel() for lv in release_hierarchy(fed, SecureAggregation(), height=HEIGHT).levels]
    )
    p, q = 0.5, 1.0 / (math.exp(eps) + 1.0)
    n_rep = (N_CLIENTS // HEIGHT) * PER_CLIENT
    c = true / HEIGHT
    k2 = c * p * (1 - p) + (n_rep - c) * q * (1 - q)  # variance of the group's bit count
    k4 = c * p * (1 - p) * (1 - 6 * p * (1 - p)) + (n_rep - c) * q * (1 - q) * (1 - 6 * q * (1 - q))
    var = HEIGHT**2 * k2 / (p - q) ** 2
    # Var[z²] for z = standardised estimate: μ4/σ⁴ - 1 = κ4/κ2² + 2 (binomial cumulants).
    var_z2 = float(np.mean(k4 / k2**2 + 2.0))
    samples = {}
    for path, seed in (("fast", 5), ("faithful", 6)):
        x = _noise(fed, LocalDP(eps), path, seed)
        z = (x / np.sqrt(var)).ravel()
        n = z.size
        assert abs(z.mean()) <= 5 / math.sqrt(n)
        assert abs(np.mean(z**2) - 1.0) <= 5 * math.sqrt(var_z2 / n)
        # The server received integer bit counts obs = released·(p-q)/h + n q; compare
        # obs minus a fixed integer offset per node (its rounded mean) across paths.
        obs_float = (x + true) * (p - q) / HEIGHT + n_rep * q
        obs = np.round(obs_float).astype(np.int64)
        np.testing.assert_allclose(obs_float, obs, rtol=0, atol=1e-6)
        offset = np.round(c * p + (n_rep - c) * q).astype(np.int64)
        samples[path] = (obs - offset).ravel()
    assert two_sample_chi2_pvalue(samples["fast"], samples["faithful"]) > P_MIN
    ks = stats.ks_2samp(samples["fast"], samples["faithful"])
    assert ks.pvalue > P_MIN


def test_distdp_dropout_calibrated_shares_fast_and_faithful_agree() -> None:
    """min_clients_fraction = 1/2: each of the M shares is Pólya(2/M, α) - Pólya(2/M, α)
    so that any M/2 of them reach discrete Laplace; all M together give
    Pólya(2, α) - Pólya(2, α), whose cumulants are twice the discrete Laplace's
    (κ2 = 2·2α/(1-α)², κ4 = 2·2α(1+4α+α²)/(1-α)⁴). Both paths must show it, and
    the reported node variance must say so."""
    eps = 1.0
    model = DistributedDP(eps, min_clients_fraction=0.5)
    fed = _federation(identical_clients=False)
    alpha = math.exp(-eps / HEIGHT)
    k2 = 2 * 2 * alpha / (1 - alpha) ** 2
    k4 = 2 * 2 * alpha * (1 + 4 * alpha + alpha**2) / (1 - alpha) ** 4
    hist = release_hierarchy(fed, model, height=HEIGHT, rng=0)
    np.testing.assert_allclose(hist.node_variance[-1], k2, rtol=1e-12)
    for path, seed in (("fast", 7), ("faithful", 8)):
        _check_moments(_noise(fed, model, path, seed).ravel(), k2, k4 + 3 * k2**2)


def test_limit_contributions_keeps_a_uniform_subset() -> None:
    """Each client keeps min(n_i, bound) of its examples, chosen uniformly: over
    R_LIMIT draws each of a 5-example client's examples is kept Binomial(R, 2/5)
    times; the 5 counts are tested by chi-square against 2R/5 (p > 1e-4)."""
    scores = np.arange(12) / 12
    labels = np.arange(12) % 2
    clients = np.array([0] * 5 + [1] * 2 + [2] * 5)
    fed = Federation.from_arrays(scores, labels, clients)
    assert bound_contributions(fed, 5, np.random.default_rng(0)) is fed
    gen = np.random.default_rng(9)
    r_limit = 3000
    kept = np.zeros(12)
    for _ in range(r_limit):
        out = bound_contributions(fed, 2, gen)
        np.testing.assert_array_equal(out.client_sizes, [2, 2, 2])
        for i in range(3):
            view = out.client(i)
            rows = np.searchsorted(scores, view.scores)
            assert np.all(clients[rows] == fed.client_ids[i])  # own examples only
            np.testing.assert_array_equal(view.labels, labels[rows])
            kept[rows] += 1
    np.testing.assert_array_equal(kept[5:7], r_limit)  # client at the bound: unchanged
    for block in (kept[:5], kept[7:]):
        assert block.sum() == 2 * r_limit
        assert stats.chisquare(block, np.full(5, 2 * r_limit / 5)).pvalue > P_MIN


class _LabelCounts(Sketch):
    """Counts of each label: a two-coordinate sketch for testing the paths."""

    name = "label counts"

    def __init__(self, length: int = 2) -> None:
        self.reported_length = length

    @property
    def parts(self) -> tuple[Part, ...]:
        return (Part("labels", self.reported_length),)

    def sensitivity(self, **_: object) -> Sensitivity:
        return Sensitivity("example", "add_remove", 1.0, 1.0, self.parts)

    def encode(self, scores: np.ndarray, labels: np.ndarray, clients: np.ndarray) -> np.ndarray:
        return np.bincount(labels, minlength=2)

    def decode(self, release: object) -> object:
        return release


def test_release_rejects_bad_path_and_encoder() -> None:
    fed = _federation(identical_clients=False)
    with pytest.raises(ValueError, match="path"):
        release(fed, _LabelCounts(), SecureAggregation(), path="slow")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="expected"):
        release(fed, _LabelCounts(3), SecureAggregation(), path="faithful")
    fast = release(fed, _LabelCounts(), SecureAggregation(), path="fast")
    faithful = release(fed, _LabelCounts(), SecureAggregation(), path="faithful")
    np.testing.assert_array_equal(fast.values, faithful.values)
    np.testing.assert_array_equal(fast.variance, 0.0)
    assert fast.n_clients == N_CLIENTS


def test_ldp_one_example_per_client_fast_and_faithful_agree(
    two_sample_chi2_pvalue: Callable[..., float], monkeypatch: pytest.MonkeyPatch
) -> None:
    """One example per client: the fast path draws the split of clients over the levels
    from the leaf counts (``split_counts``), the faithful path assigns every client.

    Clients differ, so the split's randomness is in the release. Part k of a release
    holds the OUE bit counts of its m_k (fixed) clients; the server's integer bit
    count of a node is recovered from the released value v as
    v·(p − q)·m_k/M + m_k·q, and its law is compared across paths, node by node
    (each node's counts are one independent draw per release; p > 1e-4/12 per node,
    Bonferroni over the 12 nodes).
    """
    eps, height, reps = 2.0, 2, 400
    gen = np.random.default_rng(77)
    n = 24
    fed = Federation.from_arrays(gen.random(n), gen.integers(0, 2, n))
    sketch = HierarchySketch(HierarchySpec(height))
    p, q = 0.5, 1.0 / (math.exp(eps) + 1.0)
    samples: dict[str, np.ndarray] = {}
    for path, seed in (("fast", 8), ("faithful", 9)):
        if path == "fast":  # the fast path must not assign clients one by one
            monkeypatch.setattr(paths, "assign_groups", _refuse)
        else:
            monkeypatch.undo()
        g = np.random.default_rng(seed)
        rows = []
        for _ in range(reps):
            rel = release(fed, sketch, LocalDP(eps), path=path, rng=g)  # type: ignore[arg-type]
            m = rel.clients_per_part
            assert m is not None
            per_coord = np.repeat(m, [part.length for part in sketch.parts])
            bits = rel.values * (p - q) * per_coord / n + per_coord * q
            rows.append(np.round(bits).astype(np.int64))
            np.testing.assert_allclose(bits, rows[-1], rtol=0, atol=1e-6)
        samples[path] = np.stack(rows)
    for j in range(samples["fast"].shape[1]):
        assert two_sample_chi2_pvalue(samples["fast"][:, j], samples["faithful"][:, j]) > P_MIN / 12


def _refuse(*args: object) -> None:
    raise AssertionError("assign_groups called")


def test_streamed_bound_keeps_a_uniform_subset_across_batches() -> None:
    """A streamed scan is bounded batch by batch (:class:`StreamedBound`): every client
    keeps exactly min(n_i, B) rows, and every B-subset of its rows is equally likely,
    wherever the rows lie. Client 0 has 5 rows over 3 batches (one or two per batch:
    decided row by row); client 2 has 20 rows, 18 of them in one batch (decided as one
    block: a hypergeometric count and a shuffle); client 1 is at the bound. Over
    R draws, the C(n, 2) pairs of clients 0 and 2 are tested by chi-square against
    uniform (p > 1e-4 each)."""
    from itertools import combinations

    from fedeval.aggregation.streamed_bound import StreamedBound

    clients = np.array([0, 2, 1, 0] + [2] * 18 + [0, 1, 2, 0, 0])
    batches = [slice(0, 3), slice(3, 22), slice(22, 24), slice(24, 27)]
    sizes = np.bincount(clients)
    r_draws = 3000  # 15.8 expected per pair of client 2
    seen: dict[int, dict[tuple[int, ...], int]] = {0: {}, 2: {}}
    for seed in range(r_draws):
        bound = StreamedBound(sizes, 2, seed)
        keep = np.concatenate([bound(clients[b]) for b in batches])
        assert keep[clients == 1].all()
        for c in (0, 2):
            pair = tuple(int(i) for i in np.flatnonzero(keep & (clients == c)))
            assert len(pair) == 2
            seen[c][pair] = seen[c].get(pair, 0) + 1
    for c in (0, 2):
        pairs = list(combinations(np.flatnonzero(clients == c).tolist(), 2))
        observed = np.array([seen[c].get(p, 0) for p in pairs])
        assert observed.sum() == r_draws
        assert stats.chisquare(observed).pvalue > P_MIN


# ------------------------------------------------- faithful blocks vs the old loop
def _per_client_loop(
    fed: Federation,
    sketch: Sketch,
    mech: Mechanism,
    rng: np.random.Generator,
    groups: np.ndarray | None = None,
) -> np.ndarray:
    """The faithful path before issue 28, kept here as the oracle: one client at a time,
    each with its own stream (``client_streams``), through ``client_vector``; the
    aggregator's noise last, from the release's generator."""
    total = np.zeros(sketch.length, dtype=np.int64 if sketch.integer else np.float64)
    for i, child in enumerate(client_streams(rng, fed.n_clients)):
        view = fed.client(i)
        part = None if groups is None else int(groups[i])
        total = total + client_vector(view.scores, view.labels, i, sketch, mech, child, part=part)
    if mech.placement == "aggregator" and mech.noise is not None:
        server = mech.noise.server(sketch.noise_size, rng)
        assert server is not None
        total = total + sketch.noise_to_values(server)
    return total


def _rank_sums(n_parties: int = 12, per_party: int = 5) -> tuple[Federation, Sketch]:
    """A vertical rank-sum release: every label party adds noise to its own two coordinates."""
    from fedeval.sketches.rank_sums import RankSumSketch

    m = n_parties * per_party
    ranks = np.arange(m, dtype=np.float64)
    parties = np.repeat(np.arange(n_parties), per_party)
    labels = np.random.default_rng(5).integers(0, 2, m)
    fed = Federation.from_arrays(ranks, labels, parties, score_range=(0.0, m - 1.0))
    return fed, RankSumSketch(ranks, parties, n_parties, "fixed")


@pytest.mark.parametrize(
    "case", ["polya", "polya-assign", "skellam", "labeldp-owner"], ids=lambda c: c
)
def test_faithful_blocks_and_the_per_client_loop_agree(
    case: str,
    dlaplace: Callable[..., tuple],
    two_sample_chi2_pvalue: Callable[..., float],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The faithful path draws every client's share (or own noise) in blocks of clients
    from the release's generator; the old loop drew each from the client's own stream.
    Different draws, the same law: over R releases of each, the noise (summed minus
    true) is compared between the two (chi-square homogeneity, p > 1e-4) and with the
    closed form (mean within 5σ/√N, variance within 5 standard errors, from the exact
    fourth moment). Blocks of 7 clients (``FAITHFUL_BLOCK_CELLS`` lowered) so that a
    release spans several blocks, the last one short."""
    from fedeval.privacy.mechanism_for import mechanism_for
    from fedeval.privacy.models import LabelDP
    from fedeval.privacy.sampling import assign_groups

    if case == "labeldp-owner":
        fed, sketch = _rank_sums()
        model: object = LabelDP(1.0)
    else:
        fed = _federation(identical_clients=False)
        sketch = HierarchySketch(HierarchySpec(HEIGHT))
        model = (
            DistributedDP(1.0, noise="skellam", delta=1e-5)
            if case == "skellam"
            # Layout "assign" scales by a client count, public only under replace-one.
            else DistributedDP(1.0, neighbouring="replace")
            if case == "polya-assign"
            else DistributedDP(1.0)
        )
    layout = "assign" if case == "polya-assign" else None
    mech = mechanism_for(model, sketch, n_clients=fed.n_clients, layout=layout)  # type: ignore[arg-type]
    monkeypatch.setattr(paths, "FAITHFUL_BLOCK_CELLS", 7 * sketch.noise_size)
    assert len(paths.client_blocks(fed.n_clients, sketch.noise_size)) >= 2
    groups = (
        assign_groups(fed.n_clients, len(sketch.parts), np.random.default_rng(0))
        if layout == "assign"
        else None
    )
    exact = np.asarray(
        paths.sum_vectors(
            fed,
            sketch,
            mechanism_for(SecureAggregation(), sketch, n_clients=fed.n_clients),
            path="fast",
            rng=np.random.default_rng(0),
            groups=groups,
        ),
        dtype=np.float64,
    )
    samples = {}
    for name, seed in (("blocks", 11), ("loop", 12)):
        gen = np.random.default_rng(seed)
        runs = [
            paths.sum_vectors(fed, sketch, mech, path="faithful", rng=gen, groups=groups)
            if name == "blocks"
            else _per_client_loop(fed, sketch, mech, gen, groups)
            for _ in range(R)
        ]
        samples[name] = (np.stack(runs).astype(np.float64) - exact).ravel()
    noise = mech.noise
    assert noise is not None
    # the closed form of every coordinate's noise: variance and fourth central moment
    if case == "skellam":
        mu = noise.shares.mu  # type: ignore[attr-defined]
        var, mu4 = np.array([2 * mu]), np.array([2 * mu + 3 * (2 * mu) ** 2])
    else:
        # discrete Laplace: α = e^(-ε/h) per level (split), e^(-ε/2) (assign: one level
        # per client, and replace-one moves two of its cells), e^(-1/t) at each label
        # party's scale t (owner)
        alphas = (
            np.exp(-1.0 / np.asarray(noise.scale, dtype=np.float64))  # type: ignore[attr-defined]
            if case == "labeldp-owner"
            else np.array([math.exp(-1.0 / (2 if layout == "assign" else HEIGHT))])
        )
        var, mu4 = (np.array([dlaplace(a)[k] for a in alphas]) for k in (1, 2))
    np.testing.assert_allclose(noise.variance(fed.n_clients), var if var.size > 1 else var[0])
    sd = np.sqrt(np.broadcast_to(var, (R, sketch.length)).ravel())
    kurt = np.broadcast_to(mu4 / var**2, (R, sketch.length)).ravel()
    for x in samples.values():
        assert np.all(x == np.round(x))
        z = x / sd
        assert abs(z.mean()) <= 5 / math.sqrt(z.size)
        assert abs(np.mean(z**2) - 1) <= 5 * math.sqrt(np.mean(kurt - 1) / z.size)
    a, b = (samples[k].astype(np.int64) for k in ("blocks", "loop"))
    assert two_sample_chi2_pvalue(a, b) > P_MIN


@pytest.mark.parametrize("noise", ["polya", "skellam"])
def test_faithful_jump_blocks_and_the_per_client_loop_agree(
    noise: str,
    dlaplace: Callable[..., tuple],
    two_sample_chi2_pvalue: Callable[..., float],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 28: with enough clients every block's shares are drawn as compound-Poisson
    jumps (``shares_sum``), not cell by cell as the old per-client loop draws them
    (``share`` from each client's own stream). 200 clients of one example, blocks of 30
    clients (the last one short), R releases of each: the noise (released − true) against
    the closed form (discrete Laplace with α = e^(−1/h), or Skellam with variance 2μ:
    mean within 5σ/√N, variance within 5 standard errors) and between the two (chi-square
    homogeneity, p > 1e-4)."""
    from fedeval.privacy.mechanism_for import mechanism_for
    from fedeval.privacy.mechanisms.share_jumps import SPARSE_JUMPS_PER_CELL

    n_clients, height, reps = 200, 3, 150
    gen = np.random.default_rng(99)
    fed = Federation.from_arrays(gen.random(n_clients), gen.integers(0, 2, n_clients))
    sketch = HierarchySketch(HierarchySpec(height))
    model = (
        DistributedDP(1.0, noise="skellam", delta=1e-5)
        if noise == "skellam"
        else DistributedDP(1.0)
    )
    mech = mechanism_for(model, sketch, n_clients=n_clients)
    shares = mech.noise.shares  # type: ignore[union-attr]
    per_side = shares.share_mu if noise == "skellam" else shares.jump_rate
    assert 2 * per_side <= SPARSE_JUMPS_PER_CELL  # the jump route, not the old draws
    monkeypatch.setattr(paths, "FAITHFUL_BLOCK_CELLS", 30 * sketch.noise_size)
    assert len(paths.client_blocks(n_clients, sketch.noise_size)) == 7
    secure = mechanism_for(SecureAggregation(), sketch, n_clients=n_clients)
    exact = np.asarray(
        paths.sum_vectors(fed, sketch, secure, path="fast", rng=np.random.default_rng(0)),
        dtype=np.float64,
    )
    samples = {}
    for name, seed in (("blocks", 21), ("loop", 22)):
        g = np.random.default_rng(seed)
        runs = [
            paths.sum_vectors(fed, sketch, mech, path="faithful", rng=g)
            if name == "blocks"
            else _per_client_loop(fed, sketch, mech, g)
            for _ in range(reps)
        ]
        samples[name] = (np.stack(runs).astype(np.float64) - exact).ravel()
    if noise == "skellam":
        var = 2 * shares.mu
        mu4 = var + 3 * var**2
    else:
        _, var, mu4 = dlaplace(math.exp(-1.0 / height))
    for x in samples.values():
        assert np.all(x == np.round(x))
        assert abs(x.mean()) <= 5 * math.sqrt(var / x.size)
        assert abs(np.mean(x**2) - var) <= 5 * math.sqrt((mu4 - var**2) / x.size)
    a, b = (samples[k].astype(np.int64) for k in ("blocks", "loop"))
    assert two_sample_chi2_pvalue(a, b) > P_MIN


def test_faithful_blocks_release_the_old_loop_s_values_where_the_draws_are_unchanged() -> None:
    """No client noise (secure aggregation: no draw; central DP: the curator's draw comes
    from the release's generator in both): the same seed gives the very same sum."""
    from fedeval.privacy.mechanism_for import mechanism_for
    from fedeval.privacy.models import CentralDP

    fed = _federation(identical_clients=False)
    sketch = HierarchySketch(HierarchySpec(HEIGHT))
    for model in (SecureAggregation(), CentralDP(1.0)):
        mech = mechanism_for(model, sketch, n_clients=fed.n_clients)
        a = paths.sum_vectors(fed, sketch, mech, path="faithful", rng=np.random.default_rng(4))
        b = _per_client_loop(fed, sketch, mech, np.random.default_rng(4))
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


def test_faithful_local_reports_and_the_per_client_loop_agree(
    two_sample_chi2_pvalue: Callable[..., float], monkeypatch: pytest.MonkeyPatch
) -> None:
    """LDP on the faithful path: every example's OUE report is its own draw, made for many
    clients' examples at once (chunks of at most ``FAITHFUL_BLOCK_CELLS`` bits, lowered
    here so a part spans several chunks) instead of client by client (``client_reports``
    with each client's own stream). For a fixed split of the clients over the parts, each
    node's summed bit count is compared between the two over R releases (chi-square
    homogeneity, p > 1e-4/12 per node, Bonferroni), and its mean with the closed form
    (a sum of Bernoulli(p) and Bernoulli(q) bits: mean c·p + (n − c)·q within 5 sd)."""
    from fedeval.privacy.mechanism_for import mechanism_for
    from fedeval.privacy.sampling import assign_groups

    eps = 2.0
    fed = _federation(identical_clients=False)
    sketch = HierarchySketch(HierarchySpec(2))
    mech = mechanism_for(LocalDP(eps), sketch, n_clients=fed.n_clients)
    groups = assign_groups(fed.n_clients, len(sketch.parts), np.random.default_rng(1))
    monkeypatch.setattr(paths, "FAITHFUL_BLOCK_CELLS", 64)
    runs: dict[str, list[np.ndarray]] = {"blocks": [], "loop": []}
    for name, seed in (("blocks", 13), ("loop", 14)):
        gen = np.random.default_rng(seed)
        for _ in range(R):
            if name == "blocks":
                raw, _ = paths.sum_reports(fed, sketch, mech, groups, path="faithful", rng=gen)
            else:
                raw = [np.zeros(p.length, dtype=np.int64) for p in sketch.parts]
                for i, child in enumerate(client_streams(gen, fed.n_clients)):
                    view = fed.client(i)
                    g = int(groups[i])
                    raw[g] += client_reports(view.scores, view.labels, sketch, mech, g, child)
            runs[name].append(np.concatenate(raw))
    blocks, loop = np.stack(runs["blocks"]), np.stack(runs["loop"])
    # closed form: part g's node j counts c Bernoulli(p) bits and n_g - c Bernoulli(q)
    p, q = 0.5, 1.0 / (math.exp(eps) + 1.0)
    group_of_example = groups[fed.client_index]
    offsets = sketch.part_offsets()
    for g in range(len(sketch.parts)):
        mine = group_of_example == g
        items = sketch.items(fed.scores[mine], fed.labels[mine], np.full(mine.sum(), g))
        c = np.bincount(items, minlength=sketch.parts[g].length)
        n_g = int(mine.sum())
        mean, var = c * p + (n_g - c) * q, c * p * (1 - p) + (n_g - c) * q * (1 - q)
        for x in (blocks, loop):
            got = x[:, offsets[g] : offsets[g + 1]].mean(axis=0)
            assert np.all(np.abs(got - mean) <= 5 * np.sqrt(var / R))
    for j in range(blocks.shape[1]):
        assert two_sample_chi2_pvalue(blocks[:, j], loop[:, j]) > P_MIN / blocks.shape[1]


def test_client_vector_draws_what_it_drew_before() -> None:
    """One client's vector (what a Flower client sends) is unchanged for a seed: its
    encoding plus ``noise.share(size, rng)`` (Pólya), or its label-party noise on its
    own coordinates (``server`` of the restricted noise), drawn from the same stream."""
    from fedeval.privacy.mechanism_for import mechanism_for
    from fedeval.privacy.models import LabelDP
    from fedeval.privacy.noise import restrict

    fed = _federation(identical_clients=False)
    sketch = HierarchySketch(HierarchySpec(HEIGHT))
    mech = mechanism_for(DistributedDP(1.0), sketch, n_clients=fed.n_clients)
    view = fed.client(3)
    idx = np.full(view.n_examples, 3)
    got = client_vector(view.scores, view.labels, 3, sketch, mech, np.random.default_rng(5))
    assert mech.noise is not None
    share = mech.noise.share(sketch.noise_size, np.random.default_rng(5))
    assert share is not None
    np.testing.assert_array_equal(got, sketch.encode(view.scores, view.labels, idx) + share)
    fed, ranks = _rank_sums()
    mech = mechanism_for(LabelDP(1.0), ranks, n_clients=fed.n_clients)
    view = fed.client(2)
    idx = np.full(view.n_examples, 2)
    got = client_vector(view.scores, view.labels, 2, ranks, mech, np.random.default_rng(6))
    expected = np.array(ranks.encode(view.scores, view.labels, idx), dtype=np.float64)
    coords = ranks.owned_coordinates(2)
    assert mech.noise is not None
    own = restrict(mech.noise, coords).server(coords.size, np.random.default_rng(6))
    expected[coords] += own
    np.testing.assert_array_equal(got, expected)


def _streamed_keeps(
    clients: np.ndarray, batches: list[slice], bound: int, r_draws: int
) -> np.ndarray:
    """Rows kept by :class:`StreamedBound` over ``batches``, one row of the result per seed."""
    from fedeval.aggregation.streamed_bound import StreamedBound

    sizes = np.bincount(clients)
    out = np.empty((r_draws, clients.size), dtype=bool)
    for seed in range(r_draws):
        bounder = StreamedBound(sizes, bound, seed)
        out[seed] = np.concatenate([bounder(clients[b]) for b in batches])
    return out


@pytest.mark.slow
@pytest.mark.parametrize("small_clients", [0, 60])
def test_streamed_bound_marginals_and_pairs_match_the_closed_form(small_clients: int) -> None:
    """The law of the streamed bound (issue 28 rewrote its per-batch steps, so the rows
    kept for a seed changed): over R seeds, every client keeps exactly min(B, n_c)
    rows; a row is kept with probability min(B, n_c)/n_c and two rows of one client
    with probability B(B-1)/(n_c(n_c-1)) (n_c > B), wherever the rows lie.

    A small federation in three "files" of batches, rows in a random order: clients
    of 2, 4, 5, 7, 9 and 12 rows spread over the files (one or two rows per batch:
    decided a rank at a time), a client of 20 rows with 18 in one batch (a block),
    and, in the second case, 60 clients at or below the bound (their rows are set
    aside before grouping). Every kept-row and kept-pair count is Binomial(R, p);
    its two-sided tail beyond the observed count must exceed 1e-4 / (number of
    counts) (Bonferroni: the family fails with probability below 1e-4).
    """
    bound, r_draws = 3, 2000
    gen = np.random.default_rng(2028)
    spread = np.repeat(np.arange(7), [2, 4, 5, 7, 9, 12, 2])  # client 6 has 20 rows: 2 here
    spread = np.concatenate(
        [spread, np.repeat(np.arange(7, 7 + small_clients), 1 + np.arange(small_clients) % 3)]
    )
    spread = spread[gen.permutation(spread.size)]
    half = spread.size // 2
    clients = np.concatenate([spread[:half], np.full(18, 6), spread[half:]])
    # three files of batches of 5 rows, the 18-row run inside one batch of 20
    cuts = sorted(
        {*range(0, half - 1, 5), half - 1, half + 19, *range(half + 19, clients.size, 5)}
        | {clients.size}
    )
    batches = [slice(a, b) for a, b in itertools.pairwise(cuts)]
    sizes = np.bincount(clients)

    from fedeval.aggregation.streamed_bound import StreamedBound

    assert (StreamedBound(sizes, bound, 0).over is None) == (small_clients == 0)
    keeps = _streamed_keeps(clients, batches, bound, r_draws)

    kept_per_client = np.stack([np.bincount(clients[k], minlength=sizes.size) for k in keeps])
    assert (kept_per_client == np.minimum(sizes, bound)).all()
    counts, probs = [], []
    for c in np.flatnonzero(sizes > bound):
        n, rows = int(sizes[c]), np.flatnonzero(clients == c)
        counts += keeps[:, rows].sum(axis=0).tolist()
        probs += [bound / n] * n
        both = keeps[:, rows][:, :, None] & keeps[:, rows][:, None, :]
        upper = np.triu_indices(n, 1)
        counts += both.sum(axis=0)[upper].tolist()
        probs += [bound * (bound - 1) / (n * (n - 1))] * len(upper[0])
    counts_a, probs_a = np.array(counts), np.array(probs)
    tail = 2 * np.minimum(
        stats.binom.cdf(counts_a, r_draws, probs_a), stats.binom.sf(counts_a - 1, r_draws, probs_a)
    )
    assert tail.min() > 1e-4 / counts_a.size, (tail.argmin(), counts_a[tail.argmin()])
    assert keeps[:, sizes[clients] <= bound].all()
