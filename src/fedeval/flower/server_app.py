"""The fedeval Flower ServerApp.

One run evaluates the federation under one or more privacy models:

1. **Select** the connected nodes (all, or ``clients-per-evaluation`` of them at
   random) and ask each to load its data (``query.describe``). Clients that fail
   (missing file, wrong columns) are listed with the reason, which names the
   node; the run continues if at least ``min-clients`` remain and stops with
   :class:`~fedeval.flower.protocol.NotEnoughClientsError` otherwise.
2. **Plan**: hierarchy height and branching, the privacy model, the number of
   shares and the reconstruction threshold (:class:`EvaluationPlan`).
3. **Collect** the integer replies: SA and DistDP through SecAgg+ in its
   integer-exact configuration (odd ``num_shares``, ``num_examples = max_weight
   = 1``, ``quantization_range = 2 * clipping_range``, clipping range from
   :func:`~fedeval.flower.protocol.choose_clipping_range`); LDP in plaintext,
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
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
from flwr.app import ArrayRecord, ConfigRecord, Context, Message, RecordDict
from flwr.common import FitIns, Parameters, parameters_to_ndarrays
from flwr.common.serde import recorddict_to_proto
from flwr.server import LegacyContext, ServerConfig
from flwr.server.compat.grid_client_proxy import GridClientProxy
from flwr.server.strategy import Strategy
from flwr.server.workflow import SecAggPlusWorkflow
from flwr.server.workflow.constant import MAIN_CONFIGS_RECORD, MAIN_PARAMS_RECORD
from flwr.server.workflow.constant import Key as WorkflowKey
from flwr.serverapp import Grid, ServerApp
from numpy.typing import NDArray

from fedeval.flower.client_app import DESCRIBE, INFO_KEY, REPORT, VECTOR_KEY
from fedeval.flower.protocol import (
    PLAN_KEY,
    EvaluationPlan,
    NotEnoughClientsError,
    ReplyOutOfRangeError,
    ReplyRange,
    RunFacts,
    SecAggParameters,
    assign_levels,
    build_evaluation,
    check_enough_clients,
    check_reply,
    choose_clipping_range,
    decode_ldp,
    decode_sum,
    privacy_to_dict,
    reply_range,
    secagg_parameters,
)
from fedeval.privacy.models import privacy_model

__all__ = ["ServerSettings", "app", "make_server_app", "run_evaluations"]

log = logging.getLogger("fedeval.flower")

RESULT_FILE = "flower_result.json"
ERROR_FILE = "flower_error.txt"


@dataclass(frozen=True)
class ServerSettings:
    """Parsed server settings (see the module docstring for the keys)."""

    privacy: tuple[str, ...] = ("sa",)
    epsilon: float | None = None
    noise: str = "polya"
    delta: float | None = None
    unit: str = "example"
    contribution_bound: int | None = None
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

        names = tuple(p.strip().lower() for p in str(get("privacy", "sa")).split(",") if p.strip())
        for n in names:
            if n not in ("sa", "distdp", "ldp"):
                raise ValueError(f"privacy must be sa, distdp or ldp, got {n!r}")
        eps = opt_float("epsilon")
        if any(n != "sa" for n in names) and eps is None:
            raise ValueError("privacy distdp/ldp needs epsilon > 0")
        thresholds = get("thresholds", "0.5")
        if isinstance(thresholds, str):
            thresholds = tuple(float(t) for t in thresholds.split(",") if t.strip())
        return cls(
            privacy=names,
            epsilon=eps,
            noise=str(get("noise", "polya")),
            delta=opt_float("delta"),
            unit=str(get("unit", "example")),
            contribution_bound=opt_int("contribution-bound"),
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

    def model_for(self, name: str) -> Any:
        kwargs: dict[str, Any] = {}
        if name == "distdp":
            kwargs = {"noise": self.noise, "unit": self.unit}
            if self.contribution_bound is not None:
                kwargs["contribution_bound"] = self.contribution_bound
        return privacy_model(
            name, epsilon=self.epsilon, delta=self.delta if name == "distdp" else None, **kwargs
        )

    def setting_name(self, name: str) -> str:
        return name if name == "sa" else f"{name} eps={self.epsilon:g}"


def _as_bool(v: Any) -> bool:
    if isinstance(v, str):
        return v.strip().lower() not in ("0", "false", "no", "off", "")
    return bool(v)


# ------------------------------------------------------------------- metering
def message_bytes(msg: Message) -> int:
    """Serialized size of a message's content (what travels on the wire)."""
    if not msg.has_content():
        return 0
    return int(recorddict_to_proto(msg.content).ByteSize())


class MeteredGrid:
    """A Grid proxy that counts the bytes each node sends back (replies)."""

    def __init__(self, grid: Grid) -> None:
        self._grid = grid
        self.sent_by_node: dict[int, int] = {}

    def send_and_receive(
        self, messages: Iterable[Message], *, timeout: float | None = None
    ) -> Iterable[Message]:
        replies = list(self._grid.send_and_receive(messages, timeout=timeout))
        for r in replies:
            nid = r.metadata.src_node_id
            self.sent_by_node[nid] = self.sent_by_node.get(nid, 0) + message_bytes(r)
        return replies

    def __getattr__(self, name: str) -> Any:
        return getattr(self._grid, name)


# -------------------------------------------------------------- SecAgg+ glue
class _SumStrategy(Strategy):
    """Legacy strategy that only sends the plan and keeps the secure sum."""

    def __init__(self, grid: Grid, node_ids: list[int], config: dict[str, Any]) -> None:
        self._grid = grid
        self._node_ids = node_ids
        self._config = config
        self.mean: NDArray[np.float64] | None = None
        self.used: list[str] = []
        self.failures: list[str] = []

    def initialize_parameters(self, client_manager: Any) -> Parameters | None:
        return None

    def configure_fit(
        self, server_round: int, parameters: Parameters, client_manager: Any
    ) -> list[tuple[Any, FitIns]]:
        run_id = self._grid.run.run_id
        empty = Parameters(tensors=[], tensor_type="numpy.ndarray")
        return [
            (GridClientProxy(nid, self._grid, run_id), FitIns(empty, dict(self._config)))
            for nid in self._node_ids
        ]

    def aggregate_fit(
        self, server_round: int, results: list[tuple[Any, Any]], failures: list[Any]
    ) -> tuple[Parameters | None, dict[str, Any]]:
        self.failures = [_failure_reason(f) for f in failures]
        if results:
            self.mean = parameters_to_ndarrays(results[0][1].parameters)[0]
            self.used = [str(fitres.metrics.get("client", "?")) for _, fitres in results]
        return None, {}

    def configure_evaluate(self, server_round: int, parameters: Any, client_manager: Any) -> list:
        return []

    def aggregate_evaluate(
        self, server_round: int, results: list, failures: list
    ) -> tuple[float | None, dict[str, Any]]:
        return None, {}

    def evaluate(self, server_round: int, parameters: Any) -> None:
        return None


def _failure_reason(f: Any) -> str:
    """The client's own error message, without the simulation engine's traceback."""
    if isinstance(f, BaseException) and f.args:
        f = f.args[0]
    reason = str(getattr(f, "reason", None) or f)
    marker = "Message: "
    if marker in reason:
        reason = reason.rsplit(marker, 1)[1]
        reason = reason.removesuffix("'>").strip()
    return reason


def _secure_sum(
    grid: MeteredGrid,
    context: Context,
    plan: EvaluationPlan,
    node_ids: list[int],
    params: SecAggParameters,
    round_no: int,
    timeout: float | None,
) -> tuple[NDArray[np.int64], list[str], list[str]]:
    """Run one SecAgg+ round; return (exact integer sum, clients used, failures)."""
    config = {PLAN_KEY: plan.to_json(), "fedeval-round": round_no}
    strategy = _SumStrategy(grid._grid, node_ids, config)
    legacy = LegacyContext(context, config=ServerConfig(num_rounds=1), strategy=strategy)
    legacy.state.config_records[MAIN_CONFIGS_RECORD] = ConfigRecord(
        {WorkflowKey.CURRENT_ROUND: round_no, WorkflowKey.START_TIME: time.time()}
    )
    legacy.state.array_records[MAIN_PARAMS_RECORD] = ArrayRecord()
    workflow = SecAggPlusWorkflow(
        num_shares=params.num_shares,
        reconstruction_threshold=params.reconstruction_threshold,
        max_weight=params.max_weight,
        clipping_range=float(params.clipping_range),
        quantization_range=params.quantization_range,
        modulus_range=params.modulus_range,
        timeout=timeout,
    )
    workflow(cast(Any, grid), legacy)  # MeteredGrid stands in for the Grid
    if strategy.mean is None:
        raise NotEnoughClientsError(
            f"SecAgg+ stopped for '{plan.setting}': fewer than the reconstruction threshold "
            f"({params.reconstruction_threshold}) of {len(node_ids)} clients completed. "
            f"Failures: {'; '.join(strategy.failures) or 'none reported'}"
        )
    n_used = len(strategy.used)
    total = strategy.mean * n_used
    summed = np.rint(total)
    if not np.allclose(total, summed, atol=1e-6, rtol=0):
        raise RuntimeError(
            "SecAgg+ returned a non-integer sum: the integer-exact configuration was violated"
        )
    return summed.astype(np.int64), strategy.used, strategy.failures


def _plain_replies(
    grid: MeteredGrid,
    plans: dict[int, EvaluationPlan],
    round_no: int,
    labels: dict[int, str],
    noise_tail: int,
    timeout: float | None,
) -> tuple[dict[int, tuple[NDArray[np.int64], int]], dict[str, str], dict[str, str]]:
    """Plaintext replies, each checked against the honest range; (ok, failed, rejected)."""
    msgs = [
        Message(
            RecordDict(
                {INFO_KEY: ConfigRecord({PLAN_KEY: plan.to_json(), "fedeval-round": round_no})}
            ),
            dst_node_id=nid,
            message_type=REPORT,
            group_id=str(round_no),
        )
        for nid, plan in plans.items()
    ]
    ok: dict[int, tuple[NDArray[np.int64], int]] = {}
    failed: dict[str, str] = {}
    rejected: dict[str, str] = {}
    for r in grid.send_and_receive(msgs, timeout=timeout):
        nid = r.metadata.src_node_id
        who = labels.get(nid, f"node {nid}")
        if r.has_error():
            failed[who] = _failure_reason(r.error)
            continue
        try:
            info = r.content.config_records[INFO_KEY]
            n = int(str(info["n-examples"]))
            vec = r.content.array_records[VECTOR_KEY].to_numpy_ndarrays()[0]
            expected = reply_range(plans[nid], n_examples=n, noise_tail=noise_tail)
            ok[nid] = (check_reply(vec, expected), n)
        except (ReplyOutOfRangeError, KeyError, IndexError, TypeError) as exc:
            rejected[who] = f"reply rejected: {exc}"
            log.warning("fedeval: %s: reply rejected: %s", who, exc)
    return ok, failed, rejected


# ------------------------------------------------------------------ the run
def _wait_for_nodes(grid: Grid, expected: int, wait: float) -> list[int]:
    deadline = time.monotonic() + wait
    while True:
        nodes = sorted(grid.get_node_ids())
        if (expected and len(nodes) >= expected) or (not expected and nodes):
            return nodes
        if time.monotonic() > deadline:
            return nodes
        time.sleep(0.5)


def _describe(
    grid: MeteredGrid, node_ids: list[int], settings: ServerSettings
) -> tuple[dict[int, str], dict[int, int], dict[str, str]]:
    msgs = [
        Message(
            RecordDict({INFO_KEY: ConfigRecord({"max-examples": settings.max_examples})}),
            dst_node_id=nid,
            message_type=DESCRIBE,
            group_id="describe",
        )
        for nid in node_ids
    ]
    labels: dict[int, str] = {}
    sizes: dict[int, int] = {}
    failed: dict[str, str] = {}
    for r in grid.send_and_receive(msgs, timeout=settings.timeout):
        nid = r.metadata.src_node_id
        if r.has_error():
            reason = _failure_reason(r.error)
            failed[
                _who_from_reason(reason, {}) if "fedeval client on" in reason else f"node {nid}"
            ] = reason
            log.warning("fedeval: node %s failed: %s", nid, reason)
            continue
        info = r.content.config_records[INFO_KEY]
        labels[nid] = str(info["client"])
        if "n-examples" in info:
            sizes[nid] = int(str(info["n-examples"]))
        elif not bool(info.get("within-bound", False)):
            sizes[nid] = settings.max_examples + 1  # the client says it is above the bound
    for nid in node_ids:
        if nid not in labels and f"node {nid}" not in failed:
            failed[f"node {nid}"] = "no reply (timed out)"
    return labels, sizes, failed


@dataclass
class _Outcome:
    evaluation: Any
    facts: RunFacts
    summed: list[int] | None = None
    wall_seconds: float = 0.0
    bytes_per_client: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


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
    nodes = _wait_for_nodes(grid, settings.num_clients, settings.node_wait)
    if settings.clients_per_evaluation and settings.clients_per_evaluation < len(nodes):
        nodes = sorted(rng.choice(nodes, settings.clients_per_evaluation, replace=False).tolist())
    t0 = time.perf_counter()
    labels, sizes, failed0 = _describe(metered, nodes, settings)
    describe_seconds = time.perf_counter() - t0
    check_enough_clients(len(labels), max(settings.min_clients, 1), stage="client selection")
    max_examples = settings.max_examples or max(sizes.values())
    rejected0: dict[str, str] = {}
    for nid, n in list(sizes.items()):
        if n > max_examples:
            rejected0[labels[nid]] = (
                f"holds more examples than max-examples-per-client = {max_examples}"
            )
            del labels[nid]
    check_enough_clients(len(labels), max(settings.min_clients, 1), stage="client selection")
    ok_nodes = sorted(labels)
    n_ok = len(ok_nodes)

    evaluations: dict[str, Any] = {}
    outcomes: dict[str, dict[str, Any]] = {}
    for round_no, name in enumerate(settings.privacy, start=1):
        model = settings.model_for(name)
        setting = settings.setting_name(name)
        spec_height = settings.height
        if spec_height is None:
            spec_height = fe.plan(
                n_clients=n_ok,
                epsilon=settings.epsilon if name != "sa" else None,
                privacy=name,
                branching=settings.branching,
            ).height
        secure = settings.secagg and name != "ldp"
        _, threshold = (
            secagg_parameters(
                n_ok, max_dropouts=settings.max_dropouts, num_shares=settings.num_shares
            )
            if n_ok >= 3
            else (n_ok, n_ok)
        )
        base = EvaluationPlan(
            privacy=privacy_to_dict(model),
            height=spec_height,
            branching=settings.branching,
            score_range=settings.score_range,
            max_examples=max_examples,
            n_shares=n_ok,
            min_received=threshold if name == "distdp" else 1,
            setting=setting,
        )
        before = dict(metered.sent_by_node)
        start = time.perf_counter()
        failed = dict(failed0)
        rejected = dict(rejected0)
        secagg_info: dict[str, Any] = {}
        summed_list: list[int] | None = None
        if name == "ldp":
            levels = assign_levels(n_ok, spec_height, rng)
            plans = {
                nid: base.with_level(int(lv)) for nid, lv in zip(ok_nodes, levels, strict=True)
            }
            replies, f, rj = _plain_replies(metered, plans, round_no, labels, 0, settings.timeout)
            failed.update(f)
            rejected.update(rj)
            check_enough_clients(len(replies), settings.min_clients, stage=f"'{setting}' replies")
            h = spec_height
            raw = [np.zeros(2 * base.spec.level_size(k), dtype=np.int64) for k in range(1, h + 1)]
            n_reports = np.zeros(h, dtype=np.int64)
            m_k = np.zeros(h, dtype=np.int64)
            for nid, (vec, n) in replies.items():
                k = plans[nid].level - 1
                raw[k] += vec
                n_reports[k] += n
                m_k[k] += 1
            tree = decode_ldp(base, raw, n_reports, m_k)
            used = [labels[nid] for nid in sorted(replies)]
        else:
            params = choose_clipping_range(
                base,
                max_dropouts=settings.max_dropouts,
                clip_probability=settings.clip_probability,
                num_shares=settings.num_shares,
            )
            secagg_info = params.as_dict()
            if secure:
                summed, used, failures = _secure_sum(
                    metered, context, base, ok_nodes, params, round_no, settings.timeout
                )
                for reason in failures:
                    failed[_who_from_reason(reason, labels)] = reason
                clip_p = params.clip_probability
            else:
                plans = dict.fromkeys(ok_nodes, base)
                replies, f, rj = _plain_replies(
                    metered, plans, round_no, labels, params.noise_tail, settings.timeout
                )
                failed.update(f)
                rejected.update(rj)
                check_enough_clients(len(replies), base.min_received, stage=f"'{setting}' replies")
                summed = np.sum([v for v, _ in replies.values()], axis=0).astype(np.int64)
                used = [labels[nid] for nid in sorted(replies)]
                clip_p = 0.0
            if name == "sa":
                # Per-client ranges are enforced by clipping inside SecAgg+; the sum of
                # honest leaf counts must also lie in [0, n_used * max_examples].
                try:
                    check_reply(summed, ReplyRange(len(summed), 0, len(used) * max_examples))
                except ReplyOutOfRangeError as exc:
                    raise ReplyOutOfRangeError(
                        f"'{setting}': the secure sum is outside the range of any honest sum "
                        f"({exc}); a client sent an invalid vector, nothing is released"
                    ) from None
            tree = decode_sum(base, summed, len(used), clip_probability=clip_p, secure=secure)
            summed_list = summed.tolist()
        wall = time.perf_counter() - start
        sent = {nid: metered.sent_by_node.get(nid, 0) - before.get(nid, 0) for nid in ok_nodes}
        facts = RunFacts(
            n_selected=len(nodes),
            n_used=len(used),
            used_clients=sorted(used),
            failed=failed,
            rejected=rejected,
            secure_aggregation=secure,
            secagg=secagg_info,
        )
        ev = build_evaluation(
            tree,
            base,
            n_buckets=settings.n_buckets,
            n_quantiles=settings.n_quantiles,
            interpolation=settings.interpolation,
            pr_strategy=settings.pr_strategy,
            height_planned=settings.height is None,
            seed=int(rng.integers(2**31)),
            facts=facts,
        )
        evaluations[setting] = ev
        contributing = [v for nid, v in sent.items() if labels.get(nid) in used]
        outcomes[setting] = {
            "privacy": name,
            "facts": asdict(facts),
            "plan": json.loads(base.to_json()),
            "released_sum": summed_list,
            "released_levels": [lv.tolist() for lv in tree.levels],
            "noise_variance": float(tree.node_variance[0].flat[0]) if name == "distdp" else None,
            "guarantee": str(ev.tree.guarantee),
            "epsilon_spent": ev.epsilon_spent,
            "delta_spent": ev.delta_spent,
            "wall_seconds": wall,
            "bytes_sent_per_client": float(np.mean(contributing)) if contributing else 0.0,
            "roc_auc": ev.roc_auc,
        }
        log.info(
            "fedeval: %s: %d of %d clients used, %d failed, %d rejected, %.2fs",
            setting,
            len(used),
            len(nodes),
            len(failed),
            len(rejected),
            wall,
        )
    result = {
        "n_nodes": len(nodes),
        "describe_seconds": describe_seconds,
        "evaluations": outcomes,
    }
    out = Path(settings.out_dir)
    fe.report.write_report(
        evaluations, out, thresholds=settings.thresholds, title="fedeval on Flower"
    )
    (out / RESULT_FILE).write_text(json.dumps(result, indent=2, default=float))
    return {"evaluations": evaluations, "result": result}


def _who_from_reason(reason: str, labels: dict[int, str]) -> str:
    """The client a failure message names (client errors name their node)."""
    for label in labels.values():
        if label in reason:
            return label
    m = re.search(r"node \d+(?: \(partition [^)]*\))?", reason)
    return m.group(0) if m else reason[:80] or "unknown client"


def make_server_app(defaults: Mapping[str, Any] | None = None) -> ServerApp:
    """Build the fedeval ServerApp.

    Parameters
    ----------
    defaults : mapping, optional
        Settings (run-config keys) used where the run config has none.

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
