"""Clipped per-client sums of real statistics (federated Newton steps for scaling calibrators).

Each client evaluates a statistic of its own examples at the server's current
parameters, a vector that is a *sum over its examples* (example count, loss
change, NLL gradient, NLL Hessian entries), and sends it. Under user-level DP
the client clips the whole vector to L2 norm C before sending, so one client
moves the sum by at most C: the sensitivity this sketch declares. Without DP
(secure aggregation) the exact sums are sent, and the server's sums equal the
pooled sums over all examples, whatever the client sizes.

Clipping, fixed point and the sensitivity are those of every clipped client
vector (:class:`~fedeval.sketches.clipped_vector.ClippedVectorSketch`).

References
----------
.. [1] Private federated multiclass post-hoc calibration, §4.3 (user-level DP by
   clipping and Gaussian noise); H. B. McMahan, D. Ramage, K. Talwar and
   L. Zhang, ICLR 2018 (per-client clipping).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from fedeval.sketches.clipped_vector import ClippedVectorSketch
from fedeval.sketches.fixed_point import to_units

if TYPE_CHECKING:
    from fedeval.data import Federation

__all__ = ["ClientStatistic", "ClippedSumSketch"]

ClientStatistic = Callable[[NDArray[np.float64], NDArray[np.int64]], NDArray[np.float64]]
"""``stat(logits, labels) -> vector``: a sum over one client's examples."""

ClientStatistics = Callable[
    [NDArray[np.float64], NDArray[np.int64], NDArray[np.intp]], NDArray[np.float64]
]
"""``stats(logits, labels, starts) -> (K, size)``: the statistic of K clients at once.

Rows are grouped client by client, client k's first row at ``starts[k]``; row k
of the result is what the statistic gives on client k's examples alone.
"""

#: Rows evaluated at once by a batched statistic (bounds its scratch memory).
BATCH_ROWS = 2048


@dataclass(frozen=True, eq=False)
class ClippedSumSketch(ClippedVectorSketch):
    """The sum over clients of a per-client statistic, each clipped to L2 norm C.

    Parameters
    ----------
    statistic : callable
        ``statistic(scores, labels) -> vector`` of one client's examples.
    size : int
        Length of the vector.
    clip : float or None
        C; None sends the exact sums (secure aggregation only).
    batched : callable, optional
        ``batched(scores, labels, starts) -> (K, size)``, the same statistic of
        many clients at once (vectorised); clipping and fixed point are then
        applied row by row, exactly as client by client.
    """

    statistic: ClientStatistic
    size: int
    clip: float | None = None
    batched: ClientStatistics | None = None
    name = "clipped statistic sums"
    part_name = "statistic sums"
    vector_words = "vector of sums"

    @property
    def public_inputs(self) -> tuple[str, ...]:
        return ("the current scaler parameters", "the clipping norm")

    def vector_size(self) -> int:
        return int(self.size)

    def client_vector(
        self, scores: NDArray[np.float64], labels: NDArray[np.int64]
    ) -> NDArray[np.float64]:
        """The statistic of one client's examples."""
        return np.asarray(self.statistic(scores, labels), dtype=np.float64)

    def encode_clients(self, fed: Federation, clients: NDArray[np.intp] | None = None) -> Any:
        if self.clip is None:
            # Exact sums are linear in the examples: one evaluation over all of them.
            ids = np.arange(fed.n_clients) if clients is None else clients
            if ids.size == 0:
                return np.zeros(self.length, dtype=np.float64)
            rows = fed.rows_of(ids)
            return self.client_vector(fed.scores[rows], fed.labels[rows])
        if self.batched is None:
            return super().encode_clients(fed, clients)
        ids = np.arange(fed.n_clients) if clients is None else np.asarray(clients)
        ids = ids[fed.client_sizes[ids] > 0]
        # Clients of similar size together (the integer sum does not depend on the order).
        ids = ids[np.argsort(fed.client_sizes[ids], kind="stable")]
        total = np.zeros(self.length, dtype=np.int64)
        sizes = fed.client_sizes[ids]
        ends = np.cumsum(sizes)
        first = 0
        while first < ids.size:
            # Whole clients, about BATCH_ROWS rows at a time (at least one client).
            base = ends[first - 1] if first else 0
            last = max(int(np.searchsorted(ends, base + BATCH_ROWS, side="right")), first + 1)
            chunk = ids[first:last]
            rows = fed.rows_of(chunk)
            starts = np.concatenate(([0], np.cumsum(fed.client_sizes[chunk])[:-1]))
            v = np.asarray(
                self.batched(fed.scores[rows], fed.labels[rows], starts), dtype=np.float64
            )
            norms = np.sqrt(np.sum(np.square(v), axis=1))
            scale = np.where(norms > self.clip, self.clip / np.maximum(norms, 1e-300), 1.0)
            total += to_units(v * scale[:, None], self.resolution).sum(axis=0)
            first = last
        return total
