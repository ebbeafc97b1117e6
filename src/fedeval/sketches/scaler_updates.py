"""Clipped parameter updates of a scaling calibrator (multiclass calibration, Algorithm 2).

In every FedAvg round each sampled client fits the scaler locally, starting
from the server's current parameters w, and sends its update u_k = w_k − w.
Under user-level DP the client clips u_k to L2 norm C before sending
(DP-FedAvg, McMahan et al. 2018), so one client moves the sum by at most C:
the sensitivity this sketch declares. The local fit is whatever the caller
passes (a scaling family's L-BFGS-B fit); the sketch only encodes and decodes.

Clipping, fixed point and the sensitivity are those of every clipped client
vector (:class:`~fedeval.sketches.clipped_vector.ClippedVectorSketch`).

References
----------
.. [1] Private federated multiclass post-hoc calibration, Algorithm 2, §4.3,
   Appendix B.2; H. B. McMahan, D. Ramage, K. Talwar and L. Zhang, ICLR 2018.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from fedeval.sketches.clipped_vector import ClippedVectorSketch

__all__ = ["LocalFit", "ScalerUpdateSketch"]

LocalFit = Callable[
    [NDArray[np.float64], NDArray[np.float64], NDArray[np.int64]], NDArray[np.float64]
]
"""``fit(w, logits, labels) -> w_k``: one client's local fit from the global parameters."""


@dataclass(frozen=True, eq=False)
class ScalerUpdateSketch(ClippedVectorSketch):
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
    part_name = "parameter updates"
    vector_words = "update of the parameters"

    @property
    def public_inputs(self) -> tuple[str, ...]:
        return ("the current scaler parameters", "the clipping norm")

    def vector_size(self) -> int:
        return int(self.params.size)

    def client_vector(
        self, scores: NDArray[np.float64], labels: NDArray[np.int64]
    ) -> NDArray[np.float64]:
        """One client's update u_k = fit(w) − w (``scores`` are its logits)."""
        return np.asarray(self.fit(self.params, scores, labels) - self.params, dtype=np.float64)
