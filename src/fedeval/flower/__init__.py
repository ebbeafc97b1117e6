"""Run fedeval on Flower: ClientApp and ServerApp with SecAgg+ and distributed noise.

Needs the optional extra: ``pip install 'fedeval[flower]'`` (flwr 1.41.* with its
simulation extra). ``import fedeval`` never imports flwr; importing the apps does.

* :mod:`fedeval.flower.plan` — the public parameters the server sends (no flwr needed),
  including the public bound every client subsamples itself to.
* :mod:`fedeval.flower.replies` — the client's reply (the pipeline's own client
  functions) and the range of an honest reply.
* :mod:`fedeval.flower.run_privacy` — what a run may release (refusals made
  before anything is sent), whether it may publish its client counts, and the
  one ledger all its settings are charged to.
* :mod:`fedeval.flower.secagg` — the integer-exact SecAgg+ configuration.
* :mod:`fedeval.flower.masks` — SecAgg+ masks from the whole seed (flwr 1.41's
  own generator folds seeds to 32 bits) and what a run's receipt says about its
  secure sum.
* :mod:`fedeval.flower.decode` — the server's decoding (the pipeline's own server steps).
* :mod:`fedeval.flower.client_app` — ``app``, the ClientApp.
* :mod:`fedeval.flower.server_app` — ``app``, the ServerApp.
* :mod:`fedeval.flower.transport` — the server's Flower messages (selection, SecAgg+,
  plaintext replies, byte metering).
* :mod:`fedeval.flower.simulate` — :func:`simulate` and ``fedeval flower-sim``.
"""

from __future__ import annotations

from typing import Any

from fedeval.flower.plan import EvaluationPlan, with_client_bound
from fedeval.flower.replies import (
    NotEnoughClientsError,
    ReplyOutOfRangeError,
    check_reply,
    client_reply,
    encode_client,
)
from fedeval.flower.run_privacy import check_run
from fedeval.flower.secagg import choose_clipping_range

__all__ = [
    "EvaluationPlan",
    "NotEnoughClientsError",
    "ReplyOutOfRangeError",
    "check_reply",
    "check_run",
    "choose_clipping_range",
    "client_reply",
    "encode_client",
    "make_client_app",
    "make_server_app",
    "simulate",
    "with_client_bound",
]


def __getattr__(name: str) -> Any:
    # The apps import flwr: load them only when asked for.
    if name == "make_client_app":
        from fedeval.flower.client_app import make_client_app

        return make_client_app
    if name == "make_server_app":
        from fedeval.flower.server_app import make_server_app

        return make_server_app
    if name == "simulate":
        from fedeval.flower.simulate import simulate

        return simulate
    raise AttributeError(f"module 'fedeval.flower' has no attribute {name!r}")
