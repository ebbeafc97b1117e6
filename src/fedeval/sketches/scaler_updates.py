"""Clipped parameter updates of a scaling calibrator (multiclass calibration, Algorithm 2).

In every FedAvg round each sampled client fits the scaler locally, starting
from the server's current parameters w, and sends its update u_k = w_k − w.
Under user-level DP the client clips u_k to L2 norm C before sending
(DP-FedAvg, McMahan et al. 2018), so one client moves the sum by at most C:
the sensitivity this sketch declares. The local fit is whatever the caller
passes (a scaling family's L-BFGS-B fit); the sketch only encodes and decodes.

A clipped update is sent in fixed point (:mod:`~fedeval.sketches.fixed_point`):
each coordinate rounded to a multiple of γ, the power of two at or below
C·2^-20, so the noise is discrete. Rounding moves the update by at most
γ√d/2 in L2 norm, which the declared sensitivity adds.

References
----------
.. [1] Private federated multiclass post-hoc calibration, Algorithm 2, §4.3,
   Appendix B.2; H. B. McMahan, D. Ramage, K. Talwar and L. Zhang, ICLR 2018.
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

if TYPE_CHECKING:
    from fedeval.aggregation.release import Release
    from fedeval.data import Federation

__all__ = ["LocalFit", "ScalerUpdateSketch", "clip_l2"]

LocalFit = Callable[
    [NDArray[np.float64], NDArray[np.float64], NDArray[np.int64]], NDArray[np.float64]
]
"""``fit(w, logits, labels) -> w_k``: one client's local fit from the global parameters."""


def clip_l2(vector: NDArray[np.float64], clip: float) -> NDArray[np.float64]:
    """``vector * min(1, C / ||vector||_2)`` (a new array)."""
    norm = float(np.sqrt(np.sum(np.square(vector))))
    if norm <= clip:
        return np.array(vector, dtype=np.float64, copy=True)
    return np.asarray(vector, dtype=np.float64) * (clip / norm)


@dataclass(frozen=True, eq=False)
class ScalerUpdateSketch(Sketch):
    """A client's (clipped) local update of the scaler's parameters.

    Parameters
    ----------
    fit : callable
        ``fit(w, logits, labels) -> w_k``.
    params : ndarray
        The server's current parameters w.
    clip : float or None
        C; None sends the exact update (secure aggregation only).
    """

    fit: LocalFit
    params: NDArray[np.float64]
    clip: float | None = None
    name = "scaler updates"
    linear = False
    clips_clients = True

    @property
    def integer(self) -> bool:  # type: ignore[override]
        return self.clip is not None

    @property
    def resolution(self) -> float:
        """γ (fixed point) for clipped updates; 1 for exact float updates."""
        return 1.0 if self.clip is None else power_of_two_step(float(self.clip))

    @property
    def public_inputs(self) -> tuple[str, ...]:
        return ("the current scaler parameters", "the clipping norm")

    @property
    def parts(self) -> tuple[Part, ...]:
        return (Part("parameter updates", int(self.params.size)),)

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
                "scaler updates are bounded per client by clipping: release them under "
                "user-level DP with one clipping norm C"
            )
        d = int(self.params.size)
        if self.clip is None:
            # Unclipped updates: one client can move the sum without bound. Only
            # exact sums (secure aggregation, no noise) can release them.
            return Sensitivity(
                "client",
                "add_remove",
                math.inf,
                math.inf,
                (Part("parameter updates", d, 1.0, math.inf, math.inf),),
                integer=False,
                derivation="no clipping: a client's update is unbounded (exact sums only)",
            )
        c = float(self.clip)
        step = self.resolution
        # In units of γ: norm ≤ C/γ + √d/2 after rounding. L1 (informational): √d times that.
        l2 = c / step + math.sqrt(d) / 2
        l1 = math.sqrt(d) * l2
        return Sensitivity(
            "client",
            "add_remove",
            l1,
            l2,
            (Part("parameter updates", d, 1.0, l1, l2),),
            integer=True,
            derivation=(
                f"each client clips its update of {d} parameters to L2 norm C = {c:g}; "
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
        """One client's update (``scores`` are its logits); clipped ones in units of γ."""
        u = self.fit(self.params, scores, labels) - self.params
        return u if self.clip is None else to_units(clip_l2(u, self.clip), self.resolution)

    def encode_clients(self, fed: Federation, clients: NDArray[np.intp] | None = None) -> Any:
        ids = np.arange(fed.n_clients) if clients is None else clients
        total: NDArray[Any] = np.zeros(self.length, dtype=np.int64 if self.integer else np.float64)
        for k in ids:
            view = fed.client(int(k))
            total += self.encode(view.scores, view.labels, np.full(view.n_examples, int(k)))
        return total

    def decode(self, release: Release) -> NDArray[np.float64]:
        """The released sum of the updates."""
        return np.asarray(release.values, dtype=np.float64)
