"""The fedeval Flower ServerApp.

One run evaluates the federation under one or more privacy models (settings),
all on the same clients:

0. **Refuse** (before anything is sent, :func:`~fedeval.flower.run_privacy.check_run`):
   distributed DP without SecAgg+ unless ``allow-plaintext-shares`` (its receipt
   then states the ε of one noise share seen alone; Skellam shares are always
   refused in plaintext), a DP setting without ``max-examples-per-client``,
   secure aggregation together with DP settings unless ``allow-sa-with-dp``,
   settings whose ε add up to more than ``total-epsilon``, and a DP setting under
   which the number of participating clients is not public (client-level
   add/remove, or example-level add/remove, where one added example can be one
   added client) without a declared ``cohort-size``.
1. **Select** the connected nodes (``cohort-size`` or ``clients-per-evaluation``
   of them at random, else all) and ask each to load its data
   (``query.describe``); a client replies with its label and its SecAgg+ mask
   generator, nothing about its size. Clients that fail (missing file, wrong
   columns, another mask generator) are named with the reason in the server log
   (logger ``fedeval.flower``), counted in the result where the count is public,
   and the run continues if at least ``min-clients`` remain; it stops with
   :class:`~fedeval.flower.replies.NotEnoughClientsError` otherwise.
2. **Plan** every setting from a public number of clients, never from the
   replies where their number is private
   (:func:`~fedeval.flower.run_privacy.run_counts`): the declared
   ``cohort-size``, or the usable clients where their number is public. From it:
   hierarchy height and branching, the number of shares and the reconstruction
   threshold, the SecAgg+ clipping range and modulus (:class:`EvaluationPlan`);
   the privacy model (distributed DP carries ``max-examples-per-client`` as its
   contribution bound). Every client keeps at most the bound of its examples,
   chosen uniformly at random on the device.
3. **Charge** every setting to the run's one ledger, atomically, before any
   round (:func:`~fedeval.flower.run_privacy.charge_run`).
4. **Collect** the integer replies: SA and DistDP through SecAgg+ in its
   integer-exact configuration (odd ``num_shares``, ``num_examples = max_weight
   = 1``, ``quantization_range = 2 * clipping_range``, clipping range from
   :func:`~fedeval.flower.secagg.choose_clipping_range`), with fedeval's mask
   generator in place of flwr 1.41's 32-bit-seeded one (:mod:`fedeval.flower.masks`);
   LDP in plaintext, every reply checked against the range of an honest
   encoding and rejected otherwise.
5. **Decode** with fedeval's server code and write the same report as
   ``fedeval evaluate`` (:func:`fedeval.report.write_report`), plus
   ``flower_result.json`` with the facts of the run (the numbers of nodes and of
   clients selected, used, failed and rejected, and the bytes sent per client,
   where the number of clients is public, else ``None`` and why; the declared
   cohort size; no client names and no sizes; SecAgg+ settings; what the secure
   sum is and assumes; wall time) and the run's privacy account
   (``privacy_ledger``: every DP setting, their composed total, and, when the
   run also released exact sums, that the DP receipts do not protect against them).

Settings (run config, over the defaults given to :func:`make_server_app`):
``privacy`` (comma list of ``sa``, ``distdp``, ``ldp``), ``epsilon``, ``noise``,
``delta``, ``unit``, ``contribution-bound``, ``height``, ``branching``,
``n-buckets``, ``n-quantiles``, ``interpolation``, ``pr-strategy``,
``score-min``, ``score-max``, ``max-examples-per-client`` (the public bound on
one client's examples, required under DP; 0, only for SA alone: the largest
size the clients declare), ``max-dropouts``, ``min-clients``,
``clip-probability``, ``num-shares`` (0: all), ``secagg`` (false: plaintext
vectors, for benchmarks), ``allow-plaintext-shares`` (run DistDP without SecAgg+
anyway), ``allow-sa-with-dp`` (run SA and DP settings on the same clients
anyway), ``total-epsilon``, ``total-delta`` (the run's budget; default: none,
the ledger records what is spent), ``cohort-size`` (the number of clients the
server selects, declared public: planned from and published as given;
required by DP settings under which the number of clients is not public),
``num-clients`` (nodes to wait for; default: the cohort size),
``clients-per-evaluation`` (0: all; with a cohort, 0 or equal to it), ``seed``,
``thresholds``, ``out-dir``, ``timeout``.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from flwr.app import Context
from flwr.serverapp import Grid, ServerApp
from numpy.typing import NDArray

from fedeval.evaluation import Evaluation
from fedeval.flower.decode import (
    RunFacts,
    assign_levels,
    build_evaluation,
    decode_ldp,
    decode_sum,
    release_mechanism,
)
from fedeval.flower.masks import FlwrMaskFacts, probe_flwr_masks, secure_sum_statement
from fedeval.flower.plan import EvaluationPlan, with_client_bound
from fedeval.flower.replies import (
    NotEnoughClientsError,
    ReplyOutOfRangeError,
    ReplyRange,
    check_enough_clients,
    check_reply,
)
from fedeval.flower.run_privacy import (
    RunCounts,
    charge_run,
    check_run,
    ledger_record,
    run_counts,
    sends_sums,
)
from fedeval.flower.secagg import SecAggParameters, choose_clipping_range, secagg_parameters
from fedeval.flower.transport import (
    MeteredGrid,
    describe_nodes,
    plain_replies,
    secure_sum,
    wait_for_nodes,
    who_from_reason,
)
from fedeval.privacy.mechanism_for import Mechanism
from fedeval.privacy.models import (
    PrivacyModel,
    SecureAggregation,
    model_label,
    model_to_dict,
    privacy_model,
)
from fedeval.privacy.sampling import sample_clients, uniform_seed
from fedeval.sketches.hierarchical_histogram import HierarchicalHistogram

__all__ = ["ServerSettings", "app", "make_server_app", "run_evaluations"]

log = logging.getLogger("fedeval.flower")

RESULT_FILE = "flower_result.json"
ERROR_FILE = "flower_error.txt"


@dataclass(frozen=True)
class ServerSettings:
    """Parsed server settings (see the module docstring for the keys).

    ``privacy`` holds the privacy model objects of the evaluations, in order;
    :meth:`from_config` builds them from the run config's short names. The
    settings are checked on construction (:func:`~fedeval.flower.run_privacy.check_run`),
    so a run that would not mean what its receipts say is refused before
    anything is sent.

    Raises
    ------
    ValueError
        See :func:`~fedeval.flower.run_privacy.check_run`.
    """

    privacy: tuple[PrivacyModel, ...] = (SecureAggregation(),)
    height: int | None = None
    branching: int = 2
    n_buckets: int | None = None
    n_quantiles: int | None = None
    interpolation: str = "pchip"
    pr_strategy: str = "separate"
    score_range: tuple[float, float] = (0.0, 1.0)
    max_examples: int = 0
    max_dropouts: int = 1
    min_clients: int = 3
    clip_probability: float = 1e-9
    num_shares: int | None = None
    secagg: bool = True
    allow_plaintext_shares: bool = False
    allow_sa_with_dp: bool = False
    total_epsilon: float | None = None
    total_delta: float | None = None
    num_clients: int = 0
    clients_per_evaluation: int = 0
    cohort_size: int | None = None
    seed: int | None = None
    thresholds: tuple[float, ...] = (0.5,)
    out_dir: str = "fedeval-flower-report"
    timeout: float | None = None
    node_wait: float = 60.0

    def __post_init__(self) -> None:
        check_run(
            self.privacy,
            max_examples=self.max_examples,
            secagg=self.secagg,
            allow_plaintext_shares=self.allow_plaintext_shares,
            allow_sa_with_dp=self.allow_sa_with_dp,
            total_epsilon=self.total_epsilon,
            cohort_size=self.cohort_size,
            clients_per_evaluation=self.clients_per_evaluation,
        )

    @property
    def secure_sums(self) -> bool:
        """Whether the run sums through SecAgg+ (a setting other than local DP, SecAgg+ on)."""
        return self.secagg and any(sends_sums(m) for m in self.privacy)

    @property
    def counts(self) -> RunCounts:
        """Whether the run publishes its client counts (:func:`~fedeval.flower.run_privacy.run_counts`)."""
        return run_counts(self.privacy, cohort_size=self.cohort_size)

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> ServerSettings:
        """Parse run-config style keys (``max-dropouts``) into settings.

        ``privacy`` is either a sequence of privacy model objects (given from
        Python, e.g. to :func:`make_server_app`) or, in a run config, a comma
        list of short names (``sa``, ``distdp``, ``ldp``) built with the keys
        ``epsilon``, ``noise``, ``delta``, ``unit`` and ``contribution-bound``
        (:func:`~fedeval.privacy.models.privacy_model`).

        Raises
        ------
        ValueError
            Unknown privacy name, a missing ε, or a run the settings refuse
            (:func:`~fedeval.flower.run_privacy.check_run`).
        """

        def get(key: str, default: Any = None) -> Any:
            v = cfg.get(key, default)
            return default if v is None or v == "" else v

        def opt_int(key: str) -> int | None:
            v = get(key)
            return None if v is None or int(v) <= 0 else int(v)

        def opt_float(key: str) -> float | None:
            v = get(key)
            return None if v is None or float(v) <= 0 else float(v)

        given = get("privacy", "sa")
        if isinstance(given, str):
            models = _models_from_names(
                given,
                epsilon=opt_float("epsilon"),
                noise=str(get("noise", "polya")),
                delta=opt_float("delta"),
                unit=str(get("unit", "example")),
                contribution_bound=opt_int("contribution-bound"),
            )
        else:
            models = tuple(given)
        if not models:
            raise ValueError("privacy names no evaluation")
        thresholds = get("thresholds", "0.5")
        if isinstance(thresholds, str):
            thresholds = tuple(float(t) for t in thresholds.split(",") if t.strip())
        return cls(
            privacy=models,
            height=opt_int("height"),
            branching=int(get("branching", 2)),
            n_buckets=opt_int("n-buckets"),
            n_quantiles=opt_int("n-quantiles"),
            interpolation=str(get("interpolation", "pchip")),
            pr_strategy=str(get("pr-strategy", "separate")),
            score_range=(float(get("score-min", 0.0)), float(get("score-max", 1.0))),
            max_examples=int(get("max-examples-per-client", 0)),
            max_dropouts=int(get("max-dropouts", 1)),
            min_clients=int(get("min-clients", 3)),
            clip_probability=float(get("clip-probability", 1e-9)),
            num_shares=opt_int("num-shares"),
            secagg=_as_bool(get("secagg", True)),
            allow_plaintext_shares=_as_bool(get("allow-plaintext-shares", False)),
            allow_sa_with_dp=_as_bool(get("allow-sa-with-dp", False)),
            total_epsilon=opt_float("total-epsilon"),
            total_delta=opt_float("total-delta"),
            num_clients=int(get("num-clients", 0)),
            clients_per_evaluation=int(get("clients-per-evaluation", 0)),
            cohort_size=opt_int("cohort-size"),
            seed=None if get("seed") is None else int(get("seed")),
            thresholds=tuple(float(t) for t in thresholds),
            out_dir=str(get("out-dir", "fedeval-flower-report")),
            timeout=opt_float("timeout"),
            node_wait=float(get("node-wait", 60.0)),
        )


def _models_from_names(
    names: str,
    *,
    epsilon: float | None,
    noise: str,
    delta: float | None,
    unit: str,
    contribution_bound: int | None,
) -> tuple[PrivacyModel, ...]:
    """The run config's comma list of short names, as privacy model objects."""
    models = []
    for raw in names.split(","):
        name = raw.strip().lower()
        if not name:
            continue
        if name not in ("sa", "distdp", "ldp"):
            raise ValueError(f"privacy must be sa, distdp or ldp, got {name!r}")
        if name != "sa" and epsilon is None:
            raise ValueError("privacy distdp/ldp needs epsilon > 0")
        kwargs: dict[str, Any] = {}
        if name == "distdp":
            kwargs = {"noise": noise, "unit": unit, "delta": delta}
            if contribution_bound is not None:
                kwargs["contribution_bound"] = contribution_bound
        models.append(privacy_model(name, epsilon=None if name == "sa" else epsilon, **kwargs))
    return tuple(models)


def _as_bool(v: Any) -> bool:
    if isinstance(v, str):
        return v.strip().lower() not in ("0", "false", "no", "off", "")
    return bool(v)


# ------------------------------------------------------- client selection
@dataclass(frozen=True)
class _Selection:
    """The selected nodes and those an evaluation may use.

    Attributes
    ----------
    nodes : list of int
        Every selected node.
    labels : dict
        Usable node -> its label (node and partition id; for the server log).
    failed : dict
        Label -> reason, for the nodes that failed to describe their data
        (logged; the result holds their number).
    max_examples : int
        The public bound on one client's examples.
    declared : bool
        Whether the operator declared the bound (False: SA alone took the
        largest size the clients declared).
    describe_seconds : float
    """

    nodes: list[int]
    labels: dict[int, str]
    failed: dict[str, str]
    max_examples: int
    declared: bool
    describe_seconds: float

    @property
    def usable(self) -> list[int]:
        return sorted(self.labels)


def _choose(nodes: list[int], k: int, rng: np.random.Generator) -> list[int]:
    """``k`` of ``nodes`` uniformly at random, without replacement."""
    return [nodes[int(i)] for i in sample_clients(len(nodes), k, rng)]


def _select_clients(
    grid: Grid, metered: MeteredGrid, settings: ServerSettings, rng: np.random.Generator
) -> _Selection:
    """Select the nodes and ask each to load its data.

    No client says anything about its size, unless the run is secure
    aggregation alone without a declared bound (the settings refuse that under
    DP): then the bound is the largest declared size. With a declared
    ``cohort-size`` the server selects that many nodes (at random when more are
    connected).

    Raises
    ------
    NotEnoughClientsError
        Fewer than ``min-clients`` usable clients.
    """
    wanted = settings.cohort_size or settings.clients_per_evaluation
    nodes = wait_for_nodes(grid, settings.num_clients or wanted, settings.node_wait)
    if wanted and wanted < len(nodes):
        nodes = _choose(nodes, wanted, rng)
    declared = settings.max_examples > 0
    t0 = time.perf_counter()
    labels, sizes, failed = describe_nodes(
        metered, nodes, not declared, settings.timeout, secure_sums=settings.secure_sums
    )
    describe_seconds = time.perf_counter() - t0
    check_enough_clients(
        len(labels),
        max(settings.min_clients, 1),
        stage="client selection",
        count_public=settings.counts.public,
    )
    max_examples = settings.max_examples if declared else max(1, *sizes.values())
    return _Selection(nodes, labels, failed, max_examples, declared, describe_seconds)


def _plan_for(
    model: PrivacyModel, selection: _Selection, settings: ServerSettings
) -> EvaluationPlan:
    """The plan of one evaluation: height (planned unless set), model, shares, threshold.

    Everything is planned from a public number of clients
    (:meth:`~fedeval.flower.run_privacy.RunCounts.planning_size`): the declared
    ``cohort-size``, or the usable clients where their number is public. The
    model carries the public bound as its contribution bound
    (:func:`~fedeval.flower.plan.with_client_bound`); noise shares travel in
    plaintext only when SecAgg+ is off (and the settings allowed it).
    """
    import fedeval as fe

    n_plan = settings.counts.planning_size(len(selection.labels))
    label = model_label(model)
    model = with_client_bound(model, selection.max_examples)
    height = settings.height
    if height is None:
        height = fe.plan(model, n_clients=n_plan, branching=settings.branching).height
    _, threshold = (
        secagg_parameters(
            n_plan, max_dropouts=settings.max_dropouts, num_shares=settings.num_shares
        )
        if n_plan >= 3
        else (n_plan, n_plan)
    )
    plan = EvaluationPlan(
        privacy=model_to_dict(model),
        height=height,
        branching=settings.branching,
        score_range=settings.score_range,
        max_examples=selection.max_examples,
        n_shares=n_plan,
        min_received=threshold,
        setting=label,
        cohort_declared=settings.cohort_size is not None,
    )
    if plan.mechanism().placement != "shares":
        # The reconstruction threshold matters only to noise shares; elsewhere it is 1.
        return replace(plan, min_received=1)
    return plan if settings.secagg else replace(plan, plaintext_shares=True)


def _sum_parameters(plan: EvaluationPlan, settings: ServerSettings) -> SecAggParameters:
    return choose_clipping_range(
        plan,
        max_dropouts=settings.max_dropouts,
        clip_probability=settings.clip_probability,
        num_shares=settings.num_shares,
    )


def _charged_mechanism(
    plan: EvaluationPlan, params: SecAggParameters | None, settings: ServerSettings
) -> Mechanism:
    """What the setting is charged before its round: the release with every share."""
    if params is None:  # local DP
        return plan.mechanism()
    clip = params.clip_probability if settings.secagg else 0.0
    return release_mechanism(plan, plan.n_shares, clip_probability=clip)


# ------------------------------------------------------------------ rounds
@dataclass(frozen=True)
class _Collected:
    """What one evaluation round collected and released (names: for the log only)."""

    tree: HierarchicalHistogram
    used: list[str]
    failed: dict[str, str]
    rejected: dict[str, str]
    secure: bool
    secagg: dict[str, Any] = field(default_factory=dict)
    summed: list[int] | None = None
    secure_sum: dict[str, Any] = field(default_factory=dict)


def _ldp_round(
    metered: MeteredGrid,
    plan: EvaluationPlan,
    selection: _Selection,
    round_no: int,
    settings: ServerSettings,
    rng: np.random.Generator,
) -> _Collected:
    """Local DP: every client reports at one random level, in plaintext.

    Each reply carries the client's number of reports, public under LocalDP
    (its neighbours replace one example) and stated so in the guarantee. The
    server adds the checked replies level by level and decodes them with the
    pipeline's :func:`~fedeval.aggregation.finish_reports`.
    """
    nodes = selection.usable
    levels = assign_levels(len(nodes), plan.height, rng)
    plans = {nid: plan.with_level(int(lv)) for nid, lv in zip(nodes, levels, strict=True)}
    replies, failed, rejected = plain_replies(
        metered, plans, round_no, selection.labels, 0, settings.timeout
    )
    check_enough_clients(
        len(replies),
        settings.min_clients,
        stage=f"'{plan.setting}' replies",
        count_public=settings.counts.public,
    )
    parts = plan.sketch.parts
    raw = [np.zeros(part.length, dtype=np.int64) for part in parts]
    n_reports = np.zeros(len(parts), dtype=np.int64)
    n_clients = np.zeros(len(parts), dtype=np.int64)
    for nid, (vec, n) in replies.items():
        k = plans[nid].level - 1
        raw[k] += vec
        n_reports[k] += n
        n_clients[k] += 1
    return _Collected(
        tree=decode_ldp(plan, raw, n_reports, n_clients),
        used=[selection.labels[nid] for nid in sorted(replies)],
        failed={**selection.failed, **failed},
        rejected=rejected,
        secure=False,
    )


def _plain_sum(
    metered: MeteredGrid,
    plan: EvaluationPlan,
    selection: _Selection,
    round_no: int,
    noise_tail: int,
    settings: ServerSettings,
) -> tuple[NDArray[np.int64], list[str], dict[str, str], dict[str, str]]:
    """Plaintext sum of checked replies (no SecAgg+); (sum, used, failed, rejected)."""
    plans = dict.fromkeys(selection.usable, plan)
    replies, failed, rejected = plain_replies(
        metered, plans, round_no, selection.labels, noise_tail, settings.timeout
    )
    need = max(plan.min_received, settings.min_clients)
    check_enough_clients(
        len(replies), need, stage=f"'{plan.setting}' replies", count_public=settings.counts.public
    )
    summed = np.sum([v for v, _ in replies.values()], axis=0).astype(np.int64)
    used = [selection.labels[nid] for nid in sorted(replies)]
    return summed, used, failed, rejected


def _check_exact_sum(plan: EvaluationPlan, summed: NDArray[np.int64], n_used: int) -> None:
    """An exact sum of honest leaf counts lies in [0, n_used · client_bound].

    SecAgg+ enforces each client's range by clipping; this catches the rest.
    """
    try:
        check_reply(summed, ReplyRange(len(summed), 0, n_used * plan.client_bound))
    except ReplyOutOfRangeError as exc:
        raise ReplyOutOfRangeError(
            f"'{plan.setting}': the secure sum is outside the range of any honest sum "
            f"({exc}); a client sent an invalid vector, nothing is released"
        ) from None


def _sum_round(
    metered: MeteredGrid,
    context: Context,
    plan: EvaluationPlan,
    params: SecAggParameters,
    selection: _Selection,
    round_no: int,
    settings: ServerSettings,
    mask_facts: FlwrMaskFacts | None = None,
) -> _Collected:
    """SA or distributed DP: one secure (SecAgg+) or plaintext sum, decoded by the pipeline.

    A secure sum's receipt states the secure sum
    (:func:`~fedeval.flower.masks.secure_sum_statement`): the record in
    ``flower_result.json``, and one sentence at the end of the guarantee.

    Where the number of clients is not public, the release's variance (hence
    every standard error) is stated for the ``plan.n_shares`` shares of the
    declared cohort, not for the shares that arrived: at least the threshold
    and at most the cohort arrive, so the guarantee is the same, the stated
    variance is an upper bound, and nothing published depends on the count.
    """
    failed = dict(selection.failed)
    rejected: dict[str, str] = {}
    counts_public = settings.counts.public
    statement: dict[str, Any] = {}
    if settings.secagg and len(selection.usable) < params.reconstruction_threshold:
        # SecAgg+ would stop anyway; say why before any key is exchanged.
        raise NotEnoughClientsError(
            f"'{plan.setting}': fewer usable clients than the SecAgg+ reconstruction threshold "
            f"{params.reconstruction_threshold} planned from {plan.n_shares} clients with "
            f"max-dropouts = {settings.max_dropouts}: no sum can be released (clients that "
            "fail to load their data count against max-dropouts; see the server log)"
        )
    if settings.secagg:
        statement = secure_sum_statement(
            threshold=params.reconstruction_threshold,
            num_shares=params.num_shares,
            one_share_epsilon=_one_share_epsilon(plan),
            facts=mask_facts,
        )
        summed, used, failures = secure_sum(
            metered,
            context,
            plan,
            selection.usable,
            params,
            round_no,
            settings.timeout,
            count_public=counts_public,
        )
        for reason in failures:
            who = who_from_reason(reason, selection.labels)
            failed[who] = reason
            log.warning("fedeval: '%s': %s failed: %s", plan.setting, who, reason)
        clip_probability = params.clip_probability
    else:
        summed, used, f, rj = _plain_sum(
            metered, plan, selection, round_no, params.noise_tail, settings
        )
        failed.update(f)
        rejected.update(rj)
        clip_probability = 0.0
    if plan.mechanism().exact:
        _check_exact_sum(plan, summed, len(used))
    stated = len(used) if counts_public else plan.n_shares
    return _Collected(
        tree=decode_sum(
            plan,
            summed,
            stated,
            clip_probability=clip_probability,
            transport=statement.get("summary"),
        ),
        used=used,
        failed=failed,
        rejected=rejected,
        secure=settings.secagg,
        secagg=params.as_dict(),
        summed=summed.tolist(),
        secure_sum=statement,
    )


def _one_share_epsilon(plan: EvaluationPlan) -> float | None:
    """ε of one client's noise share seen alone (None without noise, ∞ if none can be stated)."""
    mech = plan.mechanism()
    if mech.placement != "shares":
        return None
    try:
        return float(mech.when_received(1).guarantee.epsilon)
    except ValueError:  # Skellam shares state no guarantee alone
        return math.inf


# ---------------------------------------------------------------- outcome
EXACT_NOTE = (
    "this run also released exact sums under secure aggregation of the same clients' "
    "data: this receipt does not protect against that release"
)


def _outcome_record(
    plan: EvaluationPlan,
    got: _Collected,
    facts: RunFacts,
    ev: Evaluation,
    wall: float,
    bytes_sent: list[int],
    note: str | None,
) -> dict[str, Any]:
    """One evaluation's entry in ``flower_result.json`` (public counts only, no client names)."""
    record = {
        "privacy": plan.privacy["name"],
        "facts": asdict(facts),
        "plan": json.loads(plan.to_json()),
        "released_sum": got.summed,
        "released_levels": [lv.tolist() for lv in got.tree.levels],
        "noise_variance": (
            float(got.tree.node_variance[0].flat[0])
            if plan.mechanism().placement == "shares"
            else None
        ),
        "guarantee": ev.tree.guarantee.details,
        "public_inputs": list(ev.tree.guarantee.public),
        "epsilon_spent": ev.epsilon_spent,
        "delta_spent": ev.delta_spent,
        "wall_seconds": wall,
        # SecAgg+ messages grow with the number of neighbours: published with the counts.
        "bytes_sent_per_client": (
            (float(np.mean(bytes_sent)) if bytes_sent else 0.0)
            if facts.n_used is not None
            else None
        ),
        "roc_auc": ev.roc_auc,
    }
    if note is not None:
        record["note"] = note
    return record


def _evaluate_one(
    plan: EvaluationPlan,
    params: SecAggParameters | None,
    charged: Mechanism,
    round_no: int,
    metered: MeteredGrid,
    context: Context,
    selection: _Selection,
    settings: ServerSettings,
    rng: np.random.Generator,
    note: str | None,
    mask_facts: FlwrMaskFacts | None = None,
) -> tuple[Evaluation, dict[str, Any]]:
    """Collect, decode and evaluate one planned (and charged) setting."""
    before = dict(metered.sent_by_node)
    start = time.perf_counter()
    if params is None:
        got = _ldp_round(metered, plan, selection, round_no, settings, rng)
    else:
        got = _sum_round(metered, context, plan, params, selection, round_no, settings, mask_facts)
    wall = time.perf_counter() - start
    spent = got.tree.receipt
    slack = 1 + 1e-9
    if (
        spent.epsilon_spent > charged.receipt.epsilon_spent * slack + 1e-12
        or spent.delta_spent > charged.receipt.delta_spent * slack + 1e-15
    ):
        # SecAgg+ releases a sum only with enough shares, so this does not happen.
        raise RuntimeError(
            f"'{plan.setting}': the release spends ε={spent.epsilon_spent:.4g}, "
            f"δ={spent.delta_spent:.3g}, more than the run charged for it; nothing is released"
        )
    counts = settings.counts
    public = counts.public
    facts = RunFacts(
        n_selected=len(selection.nodes) if public else None,
        n_used=len(got.used) if public else None,
        n_failed=len(got.failed) if public else None,
        n_rejected=len(got.rejected) if public else None,
        secure_aggregation=got.secure,
        secagg=got.secagg,
        counts=counts.statement,
        secure_sum=got.secure_sum,
    )
    if counts.cohort_size is not None:
        n_clients: int | None = counts.cohort_size
        n_clients_source = (
            f"cohort-size = {counts.cohort_size}, declared public by the operator (used as "
            "given, not checked against the clients that took part)"
        )
    elif public:
        n_clients = len(got.used)
        n_clients_source = "the number of clients whose replies are in the release (public)"
    else:  # check_run requires a cohort size here; stated for completeness
        n_clients, n_clients_source = None, counts.statement
    ev = build_evaluation(
        got.tree,
        plan,
        n_buckets=settings.n_buckets,
        n_quantiles=settings.n_quantiles,
        interpolation=settings.interpolation,
        pr_strategy=settings.pr_strategy,
        height_planned=settings.height is None,
        seed=uniform_seed(rng),
        facts=facts,
        n_clients=n_clients,
        n_clients_source=n_clients_source,
    )
    bytes_sent = [
        metered.sent_by_node.get(nid, 0) - before.get(nid, 0)
        for nid in selection.usable
        if selection.labels[nid] in got.used
    ]
    if public:
        log.info(
            "fedeval: %s: %d of %d clients used, %d failed (%s), %d rejected (%s), %.2fs",
            plan.setting,
            len(got.used),
            len(selection.nodes),
            len(got.failed),
            "; ".join(sorted(got.failed)) or "none",
            len(got.rejected),
            "; ".join(sorted(got.rejected)) or "none",
            wall,
        )
    else:
        # Each failure was logged, by name, as it happened; no totals.
        log.info("fedeval: %s: released (client counts not public), %.2fs", plan.setting, wall)
    return ev, _outcome_record(plan, got, facts, ev, wall, bytes_sent, note)


# ------------------------------------------------------------------ the run
def run_evaluations(grid: Grid, context: Context, settings: ServerSettings) -> dict[str, Any]:
    """Run every configured evaluation; write the report; return the outcome.

    Every setting is planned and charged to the run's one ledger before the
    first round, so a run over its budget sends nothing beyond ``describe``.

    Returns
    -------
    dict
        ``{"evaluations": {name: Evaluation}, "result": <flower_result.json content>}``.

    Raises
    ------
    NotEnoughClientsError
        Fewer than ``min-clients`` clients can take part.
    BudgetExceededError
        The settings together exceed ``total-epsilon`` / ``total-delta``.
    """
    import fedeval as fe

    rng = np.random.default_rng(settings.seed)
    metered = MeteredGrid(grid)
    selection = _select_clients(grid, metered, settings, rng)
    plans = [_plan_for(model, selection, settings) for model in settings.privacy]
    params = [
        None if p.mechanism().placement == "local" else _sum_parameters(p, settings) for p in plans
    ]
    charged = {
        p.setting: _charged_mechanism(p, q, settings) for p, q in zip(plans, params, strict=True)
    }
    ledger = charge_run(
        charged, total_epsilon=settings.total_epsilon, total_delta=settings.total_delta
    )
    mixed = any(m.exact for m in charged.values()) and not all(m.exact for m in charged.values())
    if mixed:
        log.warning("fedeval: %s", EXACT_NOTE)
    # What the installed flwr's own mask generator does, for the receipts (it is replaced).
    mask_facts = probe_flwr_masks() if settings.secure_sums else None
    evaluations: dict[str, Evaluation] = {}
    outcomes: dict[str, dict[str, Any]] = {}
    for round_no, (plan, q) in enumerate(zip(plans, params, strict=True), start=1):
        mech = charged[plan.setting]
        note = EXACT_NOTE if mixed and not mech.exact else None
        ev, record = _evaluate_one(
            plan, q, mech, round_no, metered, context, selection, settings, rng, note, mask_facts
        )
        evaluations[plan.setting] = ev
        outcomes[plan.setting] = record
    counts = settings.counts
    result = {
        "n_nodes": len(selection.nodes) if counts.public else None,
        "cohort_size": {"value": counts.cohort_size, "declared": counts.cohort_size is not None},
        "counts": counts.statement,
        "describe_seconds": selection.describe_seconds,
        "max_examples_per_client": {
            "value": selection.max_examples,
            "declared": selection.declared,
        },
        "evaluations": outcomes,
        "privacy_ledger": ledger_record(
            ledger, {name: ev.receipt for name, ev in evaluations.items()}
        ),
    }
    out = Path(settings.out_dir)
    # The command that started the run checked --out; the run's own files may be rewritten.
    fe.report.write_report(
        evaluations, out, thresholds=settings.thresholds, title="fedeval on Flower", force=True
    )
    (out / RESULT_FILE).write_text(json.dumps(result, indent=2, default=_json_default))
    return {"evaluations": evaluations, "result": result}


def _json_default(v: Any) -> Any:
    f = float(v)
    return f if math.isfinite(f) else None


def make_server_app(defaults: Mapping[str, Any] | None = None) -> ServerApp:
    """Build the fedeval ServerApp.

    Parameters
    ----------
    defaults : mapping, optional
        Settings (run-config keys) used where the run config has none; from
        Python, ``"privacy"`` may be a sequence of privacy model objects, e.g.
        ``{"privacy": [fe.SecureAggregation(), fe.DistributedDP(1.0)]}``.

    Returns
    -------
    flwr.serverapp.ServerApp
    """
    base = dict(defaults or {})
    server_app = ServerApp()

    @server_app.main()
    def main(grid: Grid, context: Context) -> None:
        settings = ServerSettings.from_config({**base, **dict(context.run_config)})
        error_file = Path(settings.out_dir) / ERROR_FILE
        error_file.unlink(missing_ok=True)
        try:
            run_evaluations(grid, context, settings)
        except Exception as exc:
            # Flower logs a ServerApp exception but does not hand it to the caller of
            # the simulation: leave it where simulate() and the user can find it.
            Path(settings.out_dir).mkdir(parents=True, exist_ok=True)
            error_file.write_text(f"{type(exc).__name__}: {exc}\n")
            log.error("fedeval: %s: %s", type(exc).__name__, exc)
            raise

    return server_app


app = make_server_app()
"""The ServerApp ``flwr run`` loads (settings from the run config)."""
