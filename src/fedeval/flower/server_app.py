"""The fedeval Flower ServerApp.

One run evaluates the federation under one or more privacy models:

1. **Select** the connected nodes (all, or ``clients-per-evaluation`` of them at
   random) and ask each to load its data (``query.describe``). Clients that fail
   (missing file, wrong columns) are listed with the reason, which names the
   node; the run continues if at least ``min-clients`` remain and stops with
   :class:`~fedeval.flower.replies.NotEnoughClientsError` otherwise.
2. **Plan**: hierarchy height and branching, the privacy model, the number of
   shares and the reconstruction threshold (:class:`EvaluationPlan`).
3. **Collect** the integer replies: SA and DistDP through SecAgg+ in its
   integer-exact configuration (odd ``num_shares``, ``num_examples = max_weight
   = 1``, ``quantization_range = 2 * clipping_range``, clipping range from
   :func:`~fedeval.flower.secagg.choose_clipping_range`); LDP in plaintext,
   every reply checked against the range of an honest encoding and rejected
   otherwise.
4. **Decode** with fedeval's server code and write the same report as
   ``fedeval evaluate`` (:func:`fedeval.report.write_report`), plus
   ``flower_result.json`` with the facts of the run (clients selected, used,
   failed, rejected; SecAgg+ settings; bytes sent per client; wall time).

Settings (run config, over the defaults given to :func:`make_server_app`):
``privacy`` (comma list of ``sa``, ``distdp``, ``ldp``), ``epsilon``, ``noise``,
``delta``, ``unit``, ``contribution-bound``, ``height``, ``branching``,
``n-buckets``, ``n-quantiles``, ``interpolation``, ``pr-strategy``,
``score-min``, ``score-max``, ``max-examples-per-client`` (0: the largest size
the clients declare), ``max-dropouts``, ``min-clients``, ``clip-probability``,
``num-shares`` (0: all), ``secagg`` (false: plaintext sums, for benchmarks),
``num-clients`` (nodes to wait for), ``clients-per-evaluation`` (0: all),
``seed``, ``thresholds``, ``out-dir``, ``timeout``.
"""

from __future__ import annotations

import json
import logging
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
)
from fedeval.flower.plan import EvaluationPlan
from fedeval.flower.replies import (
    ReplyOutOfRangeError,
    ReplyRange,
    check_enough_clients,
    check_reply,
)
from fedeval.flower.secagg import choose_clipping_range, secagg_parameters
from fedeval.flower.transport import (
    MeteredGrid,
    describe_nodes,
    plain_replies,
    secure_sum,
    wait_for_nodes,
    who_from_reason,
)
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
    :meth:`from_config` builds them from the run config's short names.
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
    num_clients: int = 0
    clients_per_evaluation: int = 0
    seed: int | None = None
    thresholds: tuple[float, ...] = (0.5,)
    out_dir: str = "fedeval-flower-report"
    timeout: float | None = None
    node_wait: float = 60.0

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
            Unknown privacy name or a missing ε.
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
            num_clients=int(get("num-clients", 0)),
            clients_per_evaluation=int(get("clients-per-evaluation", 0)),
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
    """The selected nodes, those an evaluation may use, and why the others may not.

    Attributes
    ----------
    nodes : list of int
        Every selected node.
    labels : dict
        Usable node -> its label (node and partition id).
    failed, rejected : dict
        Label -> reason, for the nodes that failed to describe their data or hold
        more examples than the public bound.
    max_examples : int
        The public bound on one client's examples.
    describe_seconds : float
    """

    nodes: list[int]
    labels: dict[int, str]
    failed: dict[str, str]
    rejected: dict[str, str]
    max_examples: int
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
    """Select the nodes, ask each to describe its data, drop those above the bound.

    Raises
    ------
    NotEnoughClientsError
        Fewer than ``min-clients`` usable clients.
    """
    nodes = wait_for_nodes(grid, settings.num_clients, settings.node_wait)
    if settings.clients_per_evaluation and settings.clients_per_evaluation < len(nodes):
        nodes = _choose(nodes, settings.clients_per_evaluation, rng)
    t0 = time.perf_counter()
    labels, sizes, failed = describe_nodes(metered, nodes, settings.max_examples, settings.timeout)
    describe_seconds = time.perf_counter() - t0
    need = max(settings.min_clients, 1)
    check_enough_clients(len(labels), need, stage="client selection")
    max_examples = settings.max_examples or max(sizes.values())
    rejected: dict[str, str] = {}
    for nid, n in sizes.items():
        if n > max_examples:
            rejected[labels.pop(nid)] = (
                f"holds more examples than max-examples-per-client = {max_examples}"
            )
    check_enough_clients(len(labels), need, stage="client selection")
    return _Selection(nodes, labels, failed, rejected, max_examples, describe_seconds)


def _plan_for(
    model: PrivacyModel, selection: _Selection, settings: ServerSettings
) -> EvaluationPlan:
    """The plan of one evaluation: height (planned unless set), model, shares, threshold."""
    import fedeval as fe

    n_ok = len(selection.labels)
    height = settings.height
    if height is None:
        height = fe.plan(model, n_clients=n_ok, branching=settings.branching).height
    _, threshold = (
        secagg_parameters(n_ok, max_dropouts=settings.max_dropouts, num_shares=settings.num_shares)
        if n_ok >= 3
        else (n_ok, n_ok)
    )
    plan = EvaluationPlan(
        privacy=model_to_dict(model),
        height=height,
        branching=settings.branching,
        score_range=settings.score_range,
        max_examples=selection.max_examples,
        n_shares=n_ok,
        min_received=threshold,
        setting=model_label(model),
    )
    # The reconstruction threshold matters only to noise shares; elsewhere it is 1.
    return plan if plan.mechanism().placement == "shares" else replace(plan, min_received=1)


# ------------------------------------------------------------------ rounds
@dataclass(frozen=True)
class _Collected:
    """What one evaluation round collected and released."""

    tree: HierarchicalHistogram
    used: list[str]
    failed: dict[str, str]
    rejected: dict[str, str]
    secure: bool
    secagg: dict[str, Any] = field(default_factory=dict)
    summed: list[int] | None = None


def _ldp_round(
    metered: MeteredGrid,
    plan: EvaluationPlan,
    selection: _Selection,
    round_no: int,
    settings: ServerSettings,
    rng: np.random.Generator,
) -> _Collected:
    """Local DP: every client reports at one random level, in plaintext.

    The server adds the checked replies level by level (the transport's sum)
    and decodes them with the pipeline's :func:`~fedeval.aggregation.finish_reports`.
    """
    nodes = selection.usable
    levels = assign_levels(len(nodes), plan.height, rng)
    plans = {nid: plan.with_level(int(lv)) for nid, lv in zip(nodes, levels, strict=True)}
    replies, failed, rejected = plain_replies(
        metered, plans, round_no, selection.labels, 0, settings.timeout
    )
    check_enough_clients(len(replies), settings.min_clients, stage=f"'{plan.setting}' replies")
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
        rejected={**selection.rejected, **rejected},
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
    """Plaintext sum of checked replies (benchmarks only); (sum, used, failed, rejected)."""
    plans = dict.fromkeys(selection.usable, plan)
    replies, failed, rejected = plain_replies(
        metered, plans, round_no, selection.labels, noise_tail, settings.timeout
    )
    check_enough_clients(len(replies), plan.min_received, stage=f"'{plan.setting}' replies")
    summed = np.sum([v for v, _ in replies.values()], axis=0).astype(np.int64)
    used = [selection.labels[nid] for nid in sorted(replies)]
    return summed, used, failed, rejected


def _check_exact_sum(plan: EvaluationPlan, summed: NDArray[np.int64], n_used: int) -> None:
    """An exact sum of honest leaf counts lies in [0, n_used · max_examples].

    SecAgg+ enforces each client's range by clipping; this catches the rest.
    """
    try:
        check_reply(summed, ReplyRange(len(summed), 0, n_used * plan.max_examples))
    except ReplyOutOfRangeError as exc:
        raise ReplyOutOfRangeError(
            f"'{plan.setting}': the secure sum is outside the range of any honest sum "
            f"({exc}); a client sent an invalid vector, nothing is released"
        ) from None


def _sum_round(
    metered: MeteredGrid,
    context: Context,
    plan: EvaluationPlan,
    selection: _Selection,
    round_no: int,
    settings: ServerSettings,
) -> _Collected:
    """SA or distributed DP: one secure (SecAgg+) or plaintext sum, decoded by the pipeline."""
    params = choose_clipping_range(
        plan,
        max_dropouts=settings.max_dropouts,
        clip_probability=settings.clip_probability,
        num_shares=settings.num_shares,
    )
    failed = dict(selection.failed)
    rejected = dict(selection.rejected)
    if settings.secagg:
        summed, used, failures = secure_sum(
            metered, context, plan, selection.usable, params, round_no, settings.timeout
        )
        failed.update({who_from_reason(r, selection.labels): r for r in failures})
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
    return _Collected(
        tree=decode_sum(plan, summed, len(used), clip_probability=clip_probability),
        used=used,
        failed=failed,
        rejected=rejected,
        secure=settings.secagg,
        secagg=params.as_dict(),
        summed=summed.tolist(),
    )


# ---------------------------------------------------------------- outcome
def _outcome_record(
    plan: EvaluationPlan,
    got: _Collected,
    facts: RunFacts,
    ev: Evaluation,
    wall: float,
    bytes_sent: list[int],
) -> dict[str, Any]:
    """One evaluation's entry in ``flower_result.json``."""
    return {
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
        "guarantee": str(ev.tree.guarantee),
        "epsilon_spent": ev.epsilon_spent,
        "delta_spent": ev.delta_spent,
        "wall_seconds": wall,
        "bytes_sent_per_client": float(np.mean(bytes_sent)) if bytes_sent else 0.0,
        "roc_auc": ev.roc_auc,
    }


def _evaluate_one(
    model: PrivacyModel,
    round_no: int,
    metered: MeteredGrid,
    context: Context,
    selection: _Selection,
    settings: ServerSettings,
    rng: np.random.Generator,
) -> tuple[EvaluationPlan, Evaluation, dict[str, Any]]:
    """Plan, collect, decode and evaluate under one privacy model."""
    plan = _plan_for(model, selection, settings)
    before = dict(metered.sent_by_node)
    start = time.perf_counter()
    if plan.mechanism().placement == "local":
        got = _ldp_round(metered, plan, selection, round_no, settings, rng)
    else:
        got = _sum_round(metered, context, plan, selection, round_no, settings)
    wall = time.perf_counter() - start
    facts = RunFacts(
        n_selected=len(selection.nodes),
        n_used=len(got.used),
        used_clients=sorted(got.used),
        failed=got.failed,
        rejected=got.rejected,
        secure_aggregation=got.secure,
        secagg=got.secagg,
    )
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
    )
    bytes_sent = [
        metered.sent_by_node.get(nid, 0) - before.get(nid, 0)
        for nid in selection.usable
        if selection.labels[nid] in got.used
    ]
    log.info(
        "fedeval: %s: %d of %d clients used, %d failed, %d rejected, %.2fs",
        plan.setting,
        len(got.used),
        len(selection.nodes),
        len(got.failed),
        len(got.rejected),
        wall,
    )
    return plan, ev, _outcome_record(plan, got, facts, ev, wall, bytes_sent)


# ------------------------------------------------------------------ the run
def run_evaluations(grid: Grid, context: Context, settings: ServerSettings) -> dict[str, Any]:
    """Run every configured evaluation; write the report; return the outcome.

    Returns
    -------
    dict
        ``{"evaluations": {name: Evaluation}, "result": <flower_result.json content>}``.

    Raises
    ------
    NotEnoughClientsError
        Fewer than ``min-clients`` clients can take part.
    """
    import fedeval as fe

    rng = np.random.default_rng(settings.seed)
    metered = MeteredGrid(grid)
    selection = _select_clients(grid, metered, settings, rng)
    evaluations: dict[str, Evaluation] = {}
    outcomes: dict[str, dict[str, Any]] = {}
    for round_no, model in enumerate(settings.privacy, start=1):
        plan, ev, record = _evaluate_one(
            model, round_no, metered, context, selection, settings, rng
        )
        evaluations[plan.setting] = ev
        outcomes[plan.setting] = record
    result = {
        "n_nodes": len(selection.nodes),
        "describe_seconds": selection.describe_seconds,
        "evaluations": outcomes,
    }
    out = Path(settings.out_dir)
    fe.report.write_report(
        evaluations, out, thresholds=settings.thresholds, title="fedeval on Flower"
    )
    (out / RESULT_FILE).write_text(json.dumps(result, indent=2, default=float))
    return {"evaluations": evaluations, "result": result}


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
