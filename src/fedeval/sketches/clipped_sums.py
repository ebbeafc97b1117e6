"""Clipped per-client sums of real statistics (federated Newton steps for scaling calibrators).

Each client evaluates a statistic of its own examples at the server's current
parameters, a vector that is a *sum over its examples* (example count, loss
change, NLL gradient, NLL Hessian entries), and sends it. Under user-level DP
the client clips the whole vector to L2 norm C before sending, so one client
moves the sum by at most C: the sensitivity this sketch declares. Without DP
(secure aggregation) the exact sums are sent, and the server's sums equal the
pooled sums over all examples, whatever the client sizes.

Clipped vectors are sent in fixed point (:mod:`~fedeval.sketches.fixed_point`),
like :class:`~fedeval.sketches.scaler_updates.ScalerUpdateSketch`: each
coordinate rounded to a multiple of γ (the power of two at or below C·2^-20),
which adds at most γ√d/2 to the norm, stated in the sensitivity.

References
----------
.. [1] Private federated multiclass post-hoc calibration, §4.3 (user-level DP by
   clipping and Gaussian noise); H. B. McMahan, D. Ramage, K. Talwar and
   L. Zhang, ICLR 2018 (per-client clipping).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from fedeval.privacy.guarantee import Neighbouring, PrivacyUnit
from fedeval.privacy.sensitivity import Layout, Part, Sensitivity
from fedeval.sketches.base import Sketch
from fedeval.sketches.fixed_point import power_of_two_step, rounding_note, to_units
from fedeval.sketches.scaler_updates import clip_l2

if TYPE_CHECKING:
    from fedeval.aggregation.release import Release
    from fedeval.data import Federation

__all__ = ["ClientStatistic", "ClippedSumSketch"]

ClientStatistic = Callable[[NDArray[np.float64], NDArray[np.int64]], NDArray[np.float64]]
"""``stat(logits, labels) -> vector``: a sum over one client's examples."""


@dataclass(frozen=True, eq=False)
class ClippedSumSketch(Sketch):
    """The sum over clients of a per-client statistic, each clipped to L2 norm C.

    Parameters
    ----------
    statistic : callable
        ``statistic(scores, labels) -> vector`` of one client's examples.
    size : int
        Length of the vector.
    clip : float or None
        C; None sends the exact sums (secure aggregation only).
    """

    statistic: ClientStatistic
    size: int
    clip: float | None = None
    name = "clipped statistic sums"
    linear = False
    clips_clients = True

    @property
    def integer(self) -> bool:  # type: ignore[override]
        return self.clip is not None

    @property
    def resolution(self) -> float:
        """γ (fixed point) for clipped sums; 1 for exact float sums."""
        return 1.0 if self.clip is None else power_of_two_step(float(self.clip))

    @property
    def public_inputs(self) -> tuple[str, ...]:
        return ("the current scaler parameters", "the clipping norm")

    @property
    def parts(self) -> tuple[Part, ...]:
        return (Part("statistic sums", int(self.size)),)

    def sensitivity(
        self,
        *,
        unit: PrivacyUnit,
        neighbouring: Neighbouring,
        examples_per_unit: int,
        layout: Layout,
    ) -> Sensitivity:
        if unit != "client":
            raise ValueError(
                "clipped statistic sums are bounded per client by clipping: release them under "
                "user-level DP with one clipping norm C"
            )
        d = self.length
        if self.clip is None:
            return Sensitivity(
                "client",
                "add_remove",
                math.inf,
                math.inf,
                (Part("statistic sums", d, 1.0, math.inf, math.inf),),
                integer=False,
                derivation="no clipping: a client's sums are unbounded (exact sums only)",
            )
        c = float(self.clip)
        step = self.resolution
        l2 = c / step + math.sqrt(d) / 2
        l1 = math.sqrt(d) * l2
        return Sensitivity(
            "client",
            "add_remove",
            l1,
            l2,
            (Part("statistic sums", d, 1.0, l1, l2),),
            integer=True,
            derivation=(
                f"each client clips its vector of {d} sums to L2 norm C = {c:g}; "
                + rounding_note(step, "each clipped coordinate")
                + f", so the norm is at most C/γ + √d/2 = {l2:.6g} units"
            ),
        )

    def encode(
        self,
        scores: NDArray[np.float64],
        labels: NDArray[np.int64],
        clients: NDArray[np.int64],
    ) -> NDArray[np.float64] | NDArray[np.int64]:
        """One client's statistic; clipped ones in units of γ."""
        v = np.asarray(self.statistic(scores, labels), dtype=np.float64)
        return v if self.clip is None else to_units(clip_l2(v, self.clip), self.resolution)

    def encode_clients(self, fed: Federation, clients: NDArray[np.intp] | None = None) -> Any:
        ids = np.arange(fed.n_clients) if clients is None else clients
        total: NDArray[Any] = np.zeros(self.length, dtype=np.int64 if self.integer else np.float64)
        offsets = fed.offsets
        if self.clip is None and ids.size:
            # Exact sums are linear in the examples: one evaluation over all of them.
            rows = fed.rows_of(ids)
            return np.asarray(self.statistic(fed.scores[rows], fed.labels[rows]), dtype=np.float64)
        for k in ids:
            a, b = int(offsets[k]), int(offsets[k + 1])
            if b > a:
                total += self.encode(fed.scores[a:b], fed.labels[a:b], np.full(b - a, int(k)))
        return total

    def decode(self, release: Release) -> NDArray[np.float64]:
        """The released sums."""
        return np.asarray(release.values, dtype=np.float64)
