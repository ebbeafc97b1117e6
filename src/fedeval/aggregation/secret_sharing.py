"""A federated sum through m non-colluding servers; clients go offline after one upload.

Protocol (Barczewski et al. 2025, §4.2, with additive instead of function
secret sharing):

1. *Upload (once).* Every client encodes its data with the sketch and splits
   the vector into m additive shares modulo 2^64
   (:func:`fedeval.privacy.sampling.additive_shares`); share j goes to server j.
   Any m − 1 shares are uniform whatever the data.
2. *Accumulate.* Server j adds the shares it received; the clients can leave.
3. *Answer (any number of times).* Server j publishes its accumulated words
   plus its own share of the noise, re-derived from its secret seed, so every
   answer sees the same noise and all answers together are one release. The
   noise shares are calibrated so that any m − 1 of them already reach the
   target noise: the sum is private against the analyst, and a single curious
   server, who can subtract its own share, still faces full noise.

The budget is charged once, before the upload.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from fedeval.aggregation.release import Release, charge, finish_sum
from fedeval.data import Federation
from fedeval.privacy.ledger import BudgetLedger
from fedeval.privacy.mechanism_for import Mechanism, mechanism_for
from fedeval.privacy.models import PrivacyModel
from fedeval.privacy.sampling import (
    additive_shares,
    client_streams,
    reconstruct_shares,
    uniform_seed,
)
from fedeval.randomness import RNGLike, as_generator
from fedeval.sketches.base import Sketch

__all__ = ["ServerState", "SharedSum", "shared_sum"]


@dataclass(frozen=True)
class ServerState:
    """What server j holds after the upload: the sum of its shares and its noise seed."""

    index: int
    accumulated: NDArray[np.uint64] = field(repr=False)
    noise_seed: int = field(repr=False)


@dataclass(frozen=True)
class SharedSum:
    """The servers' state after the upload, and the (charged) mechanism they answer with.

    Attributes
    ----------
    sketch : Sketch
        The sketch every client uploaded (all its coordinates).
    servers : tuple of ServerState
    mechanism : Mechanism
        Noise shares for the m servers, any m − 1 of which suffice.
    n_clients : int
    """

    sketch: Sketch
    servers: tuple[ServerState, ...]
    mechanism: Mechanism
    n_clients: int

    @property
    def n_servers(self) -> int:
        return len(self.servers)

    def server_answer(
        self, j: int, positions: NDArray[np.intp], sketch: Sketch
    ) -> NDArray[np.uint64]:
        """Server j's published words at ``positions``: share sums plus its noise share (mod 2^64).

        ``sketch`` is the uploaded sketch restricted to those positions (it
        maps the noise onto them).
        """
        server = self.servers[j]
        noise = self.mechanism.noise
        assert noise is not None
        share = noise.share(sketch.noise_size, np.random.default_rng(server.noise_seed))
        assert share is not None
        words = np.asarray(sketch.noise_to_values(share), dtype=np.int64).view(np.uint64)
        return server.accumulated[positions] + words

    def query(self, positions: NDArray[np.intp], sketch: Sketch) -> Release:
        """The release at ``positions``, answered by the servers alone (no client online)."""
        answers = np.stack(
            [self.server_answer(j, positions, sketch) for j in range(self.n_servers)]
        )
        summed = reconstruct_shares(answers)
        return finish_sum(sketch, self.mechanism, summed, self.n_servers, path="multi-server")


def shared_sum(
    source: Federation,
    sketch: Sketch,
    privacy: PrivacyModel,
    *,
    n_servers: int,
    rng: RNGLike = None,
    ledger: BudgetLedger | None = None,
) -> SharedSum:
    """Charge the release, then let every client secret-share its encoding among the servers.

    Parameters
    ----------
    source : Federation
    sketch : Sketch
        Integer-valued; its coordinates must stay below 2^63.
    privacy : privacy model
        The noise is split among the ``n_servers`` servers (any m − 1 suffice).
    n_servers : int
        m ≥ 2.
    rng : int, Generator or None
        Source of the shares and of the servers' noise seeds (use a CSPRNG in
        deployment).
    ledger : BudgetLedger, optional
        Charged once, here, before anything is uploaded.
    """
    m = int(n_servers)
    mech = mechanism_for(privacy, sketch, n_clients=m, min_received=m - 1)
    charge(ledger, [mech])
    gen = as_generator(rng)
    acc = np.zeros((m, sketch.length), dtype=np.uint64)
    for i, child in enumerate(client_streams(gen, source.n_clients)):
        view = source.client(i)
        vec = sketch.encode(view.scores, view.labels, np.full(view.n_examples, i))
        acc += additive_shares(vec, m, child)
    servers = tuple(ServerState(j, acc[j].copy(), uniform_seed(gen)) for j in range(m))
    return SharedSum(sketch, servers, mech, source.n_clients)
