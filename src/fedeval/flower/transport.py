"""The server's wire: the Flower messages of one evaluation, and nothing else.

Selection (``query.describe``), the SecAgg+ round in its integer-exact
configuration (:func:`secure_sum`), plaintext replies checked against the range
of an honest encoding (:func:`plain_replies`), and byte metering. Planning,
decoding and the evaluation are in :mod:`fedeval.flower.server_app`. Clients
that fail or send an impossible reply are named in the server log (logger
``fedeval.flower``), for the operator; released results hold only their number.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterable
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
from flwr.serverapp import Grid
from numpy.typing import NDArray

from fedeval.flower.client_app import DESCRIBE, INFO_KEY, MASK_KEY, REPORT, VECTOR_KEY
from fedeval.flower.masks import MASK_GENERATOR, install_mask_generator, mask_generator_installed
from fedeval.flower.plan import PLAN_KEY, EvaluationPlan
from fedeval.flower.replies import (
    NotEnoughClientsError,
    ReplyOutOfRangeError,
    check_reply,
    reply_range,
)
from fedeval.flower.secagg import SecAggParameters

__all__ = [
    "MeteredGrid",
    "SumStrategy",
    "describe_nodes",
    "failure_reason",
    "message_bytes",
    "plain_replies",
    "secure_sum",
    "wait_for_nodes",
    "who_from_reason",
]

log = logging.getLogger("fedeval.flower")


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
class SumStrategy(Strategy):
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
        self.failures = [failure_reason(f) for f in failures]
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


def failure_reason(f: Any) -> str:
    """The client's own error message, without the simulation engine's traceback."""
    if isinstance(f, BaseException) and f.args:
        f = f.args[0]
    reason = str(getattr(f, "reason", None) or f)
    marker = "Message: "
    if marker in reason:
        reason = reason.rsplit(marker, 1)[1]
        reason = reason.removesuffix("'>").strip()
    return reason


def secure_sum(
    grid: MeteredGrid,
    context: Context,
    plan: EvaluationPlan,
    node_ids: list[int],
    params: SecAggParameters,
    round_no: int,
    timeout: float | None,
    *,
    count_public: bool = True,
) -> tuple[NDArray[np.int64], list[str], list[str]]:
    """Run one SecAgg+ round; return (exact integer sum, clients used, failures).

    Where the number of clients is not public (``count_public`` False), flwr's
    own log lines that state how many clients were sampled and replied are
    dropped, and an error does not state the number of clients either (each
    failure is in the server log, by name).
    """
    # Clients expand masks with fedeval's generator (their mod installs it): so must we.
    install_mask_generator()
    if not mask_generator_installed():
        raise RuntimeError("fedeval's SecAgg+ mask generator is not installed; no sum is run")
    config = {PLAN_KEY: plan.to_json(), "fedeval-round": round_no}
    strategy = SumStrategy(grid._grid, node_ids, config)
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
    flwr_log = logging.getLogger("flwr")
    quiet = None if count_public else _NoClientCounts()
    if quiet is not None:
        flwr_log.addFilter(quiet)
    try:
        workflow(cast(Any, grid), legacy)  # MeteredGrid stands in for the Grid
    finally:
        if quiet is not None:
            flwr_log.removeFilter(quiet)
    if strategy.mean is None:
        for reason in strategy.failures:
            log.warning("fedeval: '%s': SecAgg+ failure: %s", plan.setting, reason)
        which = (
            f"of {len(node_ids)} clients completed. Failures: "
            f"{'; '.join(strategy.failures) or 'none reported'}"
            if count_public
            else "of the selected clients completed (their failures are in the server log)"
        )
        raise NotEnoughClientsError(
            f"SecAgg+ stopped for '{plan.setting}': fewer than the reconstruction threshold "
            f"({params.reconstruction_threshold}) {which}"
        )
    n_used = len(strategy.used)
    total = strategy.mean * n_used
    summed = np.rint(total)
    if not np.allclose(total, summed, atol=1e-6, rtol=0):
        raise RuntimeError(
            "SecAgg+ returned a non-integer sum: the integer-exact configuration was violated"
        )
    return summed.astype(np.int64), strategy.used, strategy.failures


class _NoClientCounts(logging.Filter):
    """Drop flwr's log lines that fill in a number of clients or nodes.

    SecAgg+ logs how many clients it sampled, heard from and aggregated
    ("configure_fit: strategy sampled %s clients", "[Stage 2] ... from %s
    clients", "aggregate_fit: received %s results and %s failures"); lines
    without such an argument pass.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        text = str(record.msg).lower()
        counted = ("client", "node", "results and")
        return not (record.args and any(word in text for word in counted))


def plain_replies(
    grid: MeteredGrid,
    plans: dict[int, EvaluationPlan],
    round_no: int,
    labels: dict[int, str],
    noise_tail: int,
    timeout: float | None,
) -> tuple[dict[int, tuple[NDArray[np.int64], int]], dict[str, str], dict[str, str]]:
    """Plaintext replies, each checked against the honest range; (ok, failed, rejected).

    ``ok`` maps a node to its vector and, under local DP, its number of reports
    (0 for sums, whose replies carry no count). ``failed`` and ``rejected`` map
    client labels to reasons, for the server log only.
    """
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
            failed[who] = failure_reason(r.error)
            log.warning("fedeval: %s failed: %s", who, failed[who])
            continue
        try:
            plan = plans[nid]
            vec = r.content.array_records[VECTOR_KEY].to_numpy_ndarrays()[0]
            if plan.mechanism().placement == "local":
                n = int(str(r.content.config_records[INFO_KEY]["n-reports"]))
                expected = reply_range(plan, n_examples=n)
            else:
                n = 0
                expected = reply_range(plan, noise_tail=noise_tail)
            ok[nid] = (check_reply(vec, expected), n)
        except (ReplyOutOfRangeError, KeyError, IndexError, TypeError, ValueError) as exc:
            rejected[who] = f"reply rejected: {exc}"
            log.warning("fedeval: %s: reply rejected: %s", who, exc)
    for nid in plans:
        who = labels.get(nid, f"node {nid}")
        if nid not in ok and who not in failed and who not in rejected:
            failed[who] = "no reply (timed out)"
            log.warning("fedeval: %s: no reply (timed out)", who)
    return ok, failed, rejected


# --------------------------------------------------------------- transport
def wait_for_nodes(grid: Grid, expected: int, wait: float) -> list[int]:
    """The connected nodes, once ``expected`` are there (any, if 0) or ``wait`` s passed."""
    deadline = time.monotonic() + wait
    while True:
        nodes = sorted(grid.get_node_ids())
        if (expected and len(nodes) >= expected) or (not expected and nodes):
            return nodes
        if time.monotonic() > deadline:
            return nodes
        time.sleep(0.5)


def describe_nodes(
    grid: MeteredGrid,
    node_ids: list[int],
    declare_sizes: bool,
    timeout: float | None,
    *,
    secure_sums: bool = False,
) -> tuple[dict[int, str], dict[int, int], dict[str, str]]:
    """Ask every node to load its data (``query.describe``).

    Parameters
    ----------
    declare_sizes : bool
        Ask every client for its size: only for a run of secure aggregation
        alone without a declared bound. Otherwise a client replies with its
        label and nothing about its size.
    secure_sums : bool
        The run has SecAgg+ rounds: a client that does not state fedeval's
        mask generator (:data:`~fedeval.flower.masks.MASK_GENERATOR`) would
        make the sum meaningless, so it fails here.

    Returns
    -------
    (labels, sizes, failed)
        Node -> label for those that loaded their data; node -> declared size
        (only when asked); label -> reason for the others (logged here; the
        released result holds only their number).
    """
    msgs = [
        Message(
            RecordDict({INFO_KEY: ConfigRecord({"declare-size": bool(declare_sizes)})}),
            dst_node_id=nid,
            message_type=DESCRIBE,
            group_id="describe",
        )
        for nid in node_ids
    ]
    labels: dict[int, str] = {}
    sizes: dict[int, int] = {}
    failed: dict[str, str] = {}
    answered: set[int] = set()
    for r in grid.send_and_receive(msgs, timeout=timeout):
        nid = r.metadata.src_node_id
        answered.add(nid)
        if r.has_error():
            reason = failure_reason(r.error)
            failed[
                who_from_reason(reason, {}) if "fedeval client on" in reason else f"node {nid}"
            ] = reason
            log.warning("fedeval: node %s failed: %s", nid, reason)
            continue
        info = r.content.config_records[INFO_KEY]
        stated = str(info.get(MASK_KEY, "flwr's own (no generator stated)"))
        if secure_sums and stated != MASK_GENERATOR:
            who = str(info["client"])
            failed[who] = (
                f"expands SecAgg+ masks with {stated}, the server with {MASK_GENERATOR}: "
                "not used (update fedeval on the client)"
            )
            log.warning("fedeval: %s: %s", who, failed[who])
            continue
        labels[nid] = str(info["client"])
        if declare_sizes:
            sizes[nid] = int(str(info["n-examples"]))
    for nid in node_ids:
        if nid not in answered:
            failed[f"node {nid}"] = "no reply (timed out)"
            log.warning("fedeval: node %s: no reply (timed out)", nid)
    return labels, sizes, failed


def who_from_reason(reason: str, labels: dict[int, str]) -> str:
    """The client a failure message names (client errors name their node)."""
    for label in labels.values():
        if label in reason:
            return label
    m = re.search(r"node \d+(?: \(partition [^)]*\))?", reason)
    return m.group(0) if m else reason[:80] or "unknown client"
