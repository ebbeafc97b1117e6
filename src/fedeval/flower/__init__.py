"""Run fedeval on Flower: ClientApp and ServerApp with SecAgg+ and distributed noise.

Needs the optional extra: ``pip install 'fedeval[flower]'`` (flwr 1.41.* with its
simulation extra). ``import fedeval`` never imports flwr; importing the apps does.

* :mod:`fedeval.flower.protocol` — the plan, the faithful client encoder, range
  checks, the SecAgg+ clipping range and the server's decoding (no flwr needed).
* :mod:`fedeval.flower.client_app` — ``app``, the ClientApp.
* :mod:`fedeval.flower.server_app` — ``app``, the ServerApp.
* :mod:`fedeval.flower.simulate` — :func:`simulate` and ``fedeval flower-sim``.
"""

from __future__ import annotations

from typing import Any

from fedeval.flower.protocol import (
    EvaluationPlan,
    NotEnoughClientsError,
    ReplyOutOfRangeError,
    check_reply,
    choose_clipping_range,
    encode_client,
)

__all__ = [
    "EvaluationPlan",
    "NotEnoughClientsError",
    "ReplyOutOfRangeError",
    "check_reply",
    "choose_clipping_range",
    "encode_client",
    "make_client_app",
    "make_server_app",
    "simulate",
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
