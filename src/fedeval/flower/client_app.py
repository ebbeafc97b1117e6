"""The fedeval Flower ClientApp.

A client loads its own scores and labels from a local file, keeps at most the
public bound ``max_examples`` of them (chosen uniformly at random with its own
random source), encodes them with fedeval's faithful client encoder
(:func:`fedeval.flower.replies.client_reply`) and replies with one integer
vector. Nothing it sends reveals its size:

* ``query.describe`` (plaintext): load and validate the local data; reply with
  the client's label only. A missing file or wrong columns fail here, with a
  message naming the node, so the server can drop the client before secure
  aggregation. Only when the server asks (``declare-size``: a run of secure
  aggregation alone, without a declared bound) does the client add its size.
  The reply also states the client's SecAgg+ mask generator
  (:data:`~fedeval.flower.masks.MASK_GENERATOR`), so that the server uses only
  clients that expand masks as it does.
* ``train`` (through ``secaggplus_mod``, behind :func:`fedeval_secaggplus_mod`,
  which first replaces flwr 1.41's 32-bit-seeded mask generator in this process:
  :mod:`fedeval.flower.masks`): SA leaf counts or DistDP counts plus the
  client's own noise share, sent as a float vector inside the integer-exact
  SecAgg+ configuration (``num_examples = 1``).
* ``query.report`` (plaintext): local-DP reports (OUE/RR) with their number
  (public under LocalDP), or, when the server runs without SecAgg+, the same
  vector as ``train`` and no count.

Configuration (node config first, then run config, then the defaults given to
:func:`make_client_app`):

``data-path``
    CSV/Parquet file; ``{partition-id}`` is replaced by the node's partition id
    (simulation).
``score-column``, ``label-column``
    Column names (default ``score``, ``label``).
``client-seed``
    Tests only: seed of the client's random stream (with its partition id). By
    default the stream is a CSPRNG (``randomgen`` ChaCha20 if installed, else
    numpy seeded from the OS), so the server cannot predict the noise.
``simulate-dropout``
    Tests only: comma-separated partition ids that fail during the SecAgg+
    masked-vector stage, i.e. drop out after the keys were shared.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from flwr.app import ArrayRecord, ConfigRecord, Context, Message, RecordDict
from flwr.client.mod import secaggplus_mod
from flwr.clientapp import ClientApp
from flwr.clientapp.typing import ClientAppCallable
from flwr.common import Code, FitRes, Status, ndarrays_to_parameters
from flwr.compat.common import recorddict_compat as compat
from numpy.typing import NDArray

from fedeval.flower.masks import MASK_GENERATOR, install_mask_generator
from fedeval.flower.plan import PLAN_KEY, EvaluationPlan
from fedeval.flower.replies import client_reply

__all__ = [
    "MASK_KEY",
    "app",
    "client_label",
    "fedeval_secaggplus_mod",
    "load_client_data",
    "make_client_app",
]

DESCRIBE = "query.describe"
REPORT = "query.report"
VECTOR_KEY = "fedeval-vector"
INFO_KEY = "fedeval-info"
MASK_KEY = "mask-generator"
"""Key of the ``describe`` reply that states the client's SecAgg+ mask generator."""


def fedeval_secaggplus_mod(msg: Message, context: Context, call_next: ClientAppCallable) -> Message:
    """flwr's ``secaggplus_mod`` with fedeval's mask generator installed in this process first.

    The mod runs in whatever process Flower starts for the ClientApp, so the
    replacement (:func:`~fedeval.flower.masks.install_mask_generator`) is made
    here, before every SecAgg+ stage, not once at start-up.
    """
    install_mask_generator()
    return secaggplus_mod(msg, context, call_next)


def _setting(context: Context, defaults: Mapping[str, Any], key: str, default: Any = None) -> Any:
    for source in (context.node_config, context.run_config, defaults):
        if key in source:
            return source[key]
    return default


def client_label(context: Context) -> str:
    """How this client is named in results and errors: node id and partition id."""
    pid = context.node_config.get("partition-id")
    return f"node {context.node_id}" + (f" (partition {pid})" if pid is not None else "")


def load_client_data(
    context: Context, defaults: Mapping[str, Any] | None = None
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Read this client's scores and labels from its configured file.

    Raises
    ------
    ValueError
        No ``data-path`` configured, missing file, wrong columns, bad values; the
        message names the node.
    """
    import fedeval as fe

    d = defaults or {}
    who = client_label(context)
    template = _setting(context, d, "data-path")
    if not template:
        raise ValueError(f"fedeval client on {who}: no data-path in the node or run config")
    pid = context.node_config.get("partition-id", "")
    path = Path(str(template).replace("{partition-id}", str(pid)))
    score = str(_setting(context, d, "score-column", "score"))
    label = str(_setting(context, d, "label-column", "label"))
    lo = float(_setting(context, d, "score-min", 0.0))
    hi = float(_setting(context, d, "score-max", 1.0))
    try:
        fed = fe.read(path, score=score, label=label, client=None, score_range=(lo, hi))
    except (ValueError, FileNotFoundError, TypeError) as exc:
        raise ValueError(f"fedeval client on {who} cannot load {path}: {exc}") from None
    if fed.kind != "binary":
        raise ValueError(f"fedeval client on {who}: {path} is not a binary task")
    return fed.scores, fed.labels


def _rng(context: Context, defaults: Mapping[str, Any], salt: int) -> np.random.Generator:
    seed = _setting(context, defaults, "client-seed")
    if seed is not None and str(seed) != "":
        pid = int(context.node_config.get("partition-id", context.node_id % 2**31))
        return np.random.default_rng([int(seed), pid, salt])
    try:
        from fedeval.randomness import secure_generator

        return secure_generator()
    except ImportError:
        return np.random.default_rng(secrets.randbits(128))


def _as_bool(v: Any) -> bool:
    if isinstance(v, str):
        return v.strip().lower() not in ("0", "false", "no", "off", "")
    return bool(v)


def _dropouts(context: Context, defaults: Mapping[str, Any]) -> set[str]:
    raw = str(_setting(context, defaults, "simulate-dropout", "") or "")
    return {p.strip() for p in raw.split(",") if p.strip()}


def make_client_app(defaults: Mapping[str, Any] | None = None) -> ClientApp:
    """Build the fedeval ClientApp.

    Parameters
    ----------
    defaults : mapping, optional
        Settings used when neither the node nor the run config has them (the
        programmatic simulation passes the data-path template and columns here).

    Returns
    -------
    flwr.clientapp.ClientApp
    """
    d: dict[str, Any] = dict(defaults or {})
    client_app = ClientApp()

    def _encode(msg_plan: str, context: Context, salt: int) -> tuple[NDArray[np.int64], int | None]:
        who = client_label(context)
        try:
            plan = EvaluationPlan.from_json(msg_plan)
            scores, labels = load_client_data(context, d)
            return client_reply(plan, scores, labels, _rng(context, d, salt))
        except ValueError as exc:
            msg = str(exc)
            raise ValueError(msg if who in msg else f"fedeval client on {who}: {msg}") from None

    @client_app.query("describe")
    def describe(msg: Message, context: Context) -> Message:
        scores, _ = load_client_data(context, d)
        info = ConfigRecord({"client": client_label(context), MASK_KEY: MASK_GENERATOR})
        if _as_bool(msg.content.config_records[INFO_KEY].get("declare-size", False)):
            # Secure aggregation alone without a declared bound: the server takes
            # the largest size as the bound (no DP setting is in such a run).
            info["n-examples"] = int(scores.shape[0])
        return Message(RecordDict({INFO_KEY: info}), reply_to=msg)

    @client_app.train(mods=[fedeval_secaggplus_mod])
    def train(msg: Message, context: Context) -> Message:
        fitins = compat.recorddict_to_fitins(msg.content, keep_input=True)
        pid = str(context.node_config.get("partition-id", ""))
        if pid and pid in _dropouts(context, d):
            raise RuntimeError(f"simulated dropout of {client_label(context)}")
        round_salt = int(fitins.config.get("fedeval-round", 0))
        vec, _ = _encode(str(fitins.config[PLAN_KEY]), context, round_salt)
        res = FitRes(
            Status(Code.OK, ""),
            ndarrays_to_parameters([vec.astype(np.float64)]),
            1,  # num_examples == max_weight == 1: SecAgg+ then sums exactly
            {"client": client_label(context)},
        )
        return Message(compat.fitres_to_recorddict(res, keep_input=False), reply_to=msg)

    @client_app.query("report")
    def report(msg: Message, context: Context) -> Message:
        cfg = msg.content.config_records[INFO_KEY]
        salt = int(str(cfg.get("fedeval-round", 0)))
        vec, n_reports = _encode(str(cfg[PLAN_KEY]), context, salt)
        info = ConfigRecord({"client": client_label(context)})
        if n_reports is not None:  # local DP: the number of reports is public
            info["n-reports"] = n_reports
        arrays = ArrayRecord([vec.astype(np.int64)])
        return Message(RecordDict({INFO_KEY: info, VECTOR_KEY: arrays}), reply_to=msg)

    return client_app


app = make_client_app()
"""The ClientApp ``flwr run`` loads (settings from the node and run config)."""
