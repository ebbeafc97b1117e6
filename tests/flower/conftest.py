"""The fedeval ServerApp and ClientApp in one process, without Ray or a SuperLink.

:class:`InProcessGrid` delivers every message the ServerApp sends (``describe``,
the four SecAgg+ stages, plaintext reports) to the fedeval ClientApp, each
node with its own persistent :class:`flwr.app.Context` (SecAgg+ keeps its
state there), and turns a ClientApp exception into an error reply, as Flower's
runtime does. Messages are deep-copied on the way, as serialisation would:
SecAgg+ reuses one content object for every node. A run of a few dozen
clients takes seconds, so tests can compare whole runs (64 against 65 clients)
that a Ray simulation could not afford.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

SERVER_NODE = 1


class _Run:
    run_id = 1


class InProcessGrid:
    """A Flower Grid whose nodes are ClientApp calls in this process."""

    def __init__(self, client_app: Any, node_configs: Mapping[int, Mapping[str, Any]]) -> None:
        from flwr.app import Context, RecordDict

        self._app = client_app
        self._contexts = {
            nid: Context(
                run_id=1, node_id=nid, node_config=dict(cfg), state=RecordDict(), run_config={}
            )
            for nid, cfg in node_configs.items()
        }
        self.run = _Run()

    def get_node_ids(self) -> list[int]:
        return sorted(self._contexts)

    def send_and_receive(self, messages: Iterable[Any], *, timeout: float | None = None) -> list:
        from flwr.app import Error, Message
        from flwr.common.constant import ErrorCode

        replies = []
        for msg in list(messages):
            nid = msg.metadata.dst_node_id
            _identity(nid)
            try:
                replies.append(self._app(copy.deepcopy(msg), self._contexts[nid]))
            except Exception as exc:
                error = Error(ErrorCode.CLIENT_APP_RAISED_EXCEPTION, f"Message: {exc}")
                replies.append(Message(error, reply_to=msg))
            finally:
                _identity(SERVER_NODE)
        return replies


def _identity(node_id: int) -> None:
    """Messages are stamped with the running task's identity (set by Flower's runtime)."""
    from flwr.supercore.task_identity import TaskIdentity

    TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = 1, node_id, 1


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.name}: {record.getMessage()}")


@dataclass
class InProcessRun:
    """What one in-process run returned, wrote and logged."""

    returned: dict[str, Any]
    flower_result: dict[str, Any]
    results: dict[str, Any]
    log: list[str]
    out: Path


class RunInProcess:
    """Callable fixture value; ``last_log`` keeps the log of the last run, even a failed one."""

    def __init__(self, run: Callable[..., InProcessRun]) -> None:
        self._run = run
        self.last_log: list[str] = []

    def __call__(self, *args: Any, **kwargs: Any) -> InProcessRun:
        return self._run(self, *args, **kwargs)


@pytest.fixture
def run_in_process(tmp_path: Path) -> RunInProcess:
    """Run the fedeval ServerApp over in-process ClientApps, one per data frame.

    Call it with the clients' frames (``score``, ``label``; ``None`` for a
    client whose file is missing), the server settings (run-config keys) and
    optional ClientApp defaults. Node ``100 + i`` has partition id ``i``.
    """
    from flwr.app import Context, RecordDict

    from fedeval.flower.client_app import make_client_app
    from fedeval.flower.server_app import ServerSettings, run_evaluations

    counter = iter(range(10**6))

    def run(
        owner: RunInProcess,
        frames: Sequence[pd.DataFrame | None],
        server: Mapping[str, Any],
        client: Mapping[str, Any] | None = None,
    ) -> InProcessRun:
        root = tmp_path / f"run{next(counter)}"
        data = root / "data"
        data.mkdir(parents=True)
        for i, frame in enumerate(frames):
            if frame is not None:
                frame.to_csv(data / f"client_{i}.csv", index=False)
        app = make_client_app(
            {"data-path": str(data / "client_{partition-id}.csv"), **dict(client or {})}
        )
        grid = InProcessGrid(app, {100 + i: {"partition-id": i} for i in range(len(frames))})
        out = root / "report"
        settings = ServerSettings.from_config({"node-wait": 0, **server, "out-dir": str(out)})
        lines = _Lines()
        loggers = [logging.getLogger("fedeval.flower"), logging.getLogger("flwr")]
        levels = [lg.level for lg in loggers]
        for lg in loggers:
            lg.setLevel(logging.INFO)
            lg.addHandler(lines)
        _identity(SERVER_NODE)
        try:
            ctx = Context(run_id=1, node_id=0, node_config={}, state=RecordDict(), run_config={})
            returned = run_evaluations(grid, ctx, settings)
        finally:
            for lg, level in zip(loggers, levels, strict=True):
                lg.removeHandler(lines)
                lg.setLevel(level)
            owner.last_log = lines.lines
        return InProcessRun(
            returned,
            json.loads((out / "flower_result.json").read_text()),
            json.loads((out / "results.json").read_text()),
            lines.lines,
            out,
        )

    return RunInProcess(run)
