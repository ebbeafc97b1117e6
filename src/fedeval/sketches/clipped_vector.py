"""One clipped real vector per client, summed: the shared encoding of user-level DP sums.

Under user-level DP a client sends one real vector (a scaler update, a vector of
statistic sums), clipped to L2 norm C so that one client moves the sum by at
most C (McMahan et al. 2018). Clipped vectors are sent in fixed point
(:mod:`~fedeval.sketches.fixed_point`): each coordinate is rounded to a multiple
of γ, the power of two at or below C·2^-20, so the noise is discrete; rounding
moves a vector by at most γ√d/2 in L2 norm, which the declared sensitivity adds.
Without clipping (secure aggregation only) the exact float vectors are summed.

Subclasses say what the vector is (:meth:`ClippedVectorSketch.client_vector`,
:attr:`ClippedVectorSketch.size`) and name it; encoding, sensitivity and
decoding are here, once.

References
----------
.. [1] H. B. McMahan, D. Ramage, K. Talwar and L. Zhang, "Learning differentially
   private recurrent language models", ICLR 2018 (per-client clipping).
"""

from __future__ import annotations

import math
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

__all__ = ["ClippedVectorSketch", "clip_l2"]


def clip_l2(vector: NDArray[np.float64], clip: float) -> NDArray[np.float64]:
    """``vector * min(1, C / ||vector||_2)`` (a new array)."""
    norm = float(np.sqrt(np.sum(np.square(vector))))
    if norm <= clip:
        return np.array(vector, dtype=np.float64, copy=True)
    return np.asarray(vector, dtype=np.float64) * (clip / norm)


class ClippedVectorSketch(Sketch):
    """Base of the sketches whose client summary is one clipped real vector.

    Subclasses are frozen dataclasses with a field ``clip: float | None`` (C;
    None sends exact sums, secure aggregation only) and define ``part_name``
    (the part's name), ``vector_words`` (what one client's vector is, for the
    sensitivity's derivation), :meth:`vector_size` and :meth:`client_vector`.
    """

    clip: float | None
    part_name: str = "clipped vectors"
    vector_words: str = "vector"
    linear = False
    clips_clients = True

    def vector_size(self) -> int:
        """Length d of one client's vector."""
        raise NotImplementedError

    def client_vector(
        self, scores: NDArray[np.float64], labels: NDArray[np.int64]
    ) -> NDArray[np.float64]:
        """One client's real vector, before clipping."""
        raise NotImplementedError

    @property
    def integer(self) -> bool:  # type: ignore[override]
        return self.clip is not None

    @property
    def resolution(self) -> float:
        """γ (fixed point) for clipped vectors; 1 for exact float sums."""
        return 1.0 if self.clip is None else power_of_two_step(float(self.clip))

    @property
    def parts(self) -> tuple[Part, ...]:
        return (Part(self.part_name, int(self.vector_size())),)

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
                f"{self.part_name} are bounded per client by clipping: release them under "
                "user-level DP with one clipping norm C"
            )
        d = self.length
        if self.clip is None:
            # Unclipped vectors: one client can move the sum without bound. Only
            # exact sums (secure aggregation, no noise) can release them.
            return Sensitivity(
                "client",
                "add_remove",
                math.inf,
                math.inf,
                (Part(self.part_name, d, 1.0, math.inf, math.inf),),
                integer=False,
                derivation=f"no clipping: a client's {self.vector_words} is unbounded "
                "(exact sums only)",
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
            (Part(self.part_name, d, 1.0, l1, l2),),
            integer=True,
            derivation=(
                f"each client clips its {self.vector_words} ({d} values) to L2 norm C = {c:g}; "
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
        """One client's vector; clipped ones in units of γ."""
        v = np.asarray(self.client_vector(scores, labels), dtype=np.float64)
        return v if self.clip is None else to_units(clip_l2(v, self.clip), self.resolution)

    def encode_clients(self, fed: Federation, clients: NDArray[np.intp] | None = None) -> Any:
        ids = np.arange(fed.n_clients) if clients is None else clients
        total: NDArray[Any] = np.zeros(self.length, dtype=np.int64 if self.integer else np.float64)
        for k in ids:
            view = fed.client(int(k))
            if view.n_examples:
                total += self.encode(view.scores, view.labels, np.full(view.n_examples, int(k)))
        return total

    def decode(self, release: Release) -> NDArray[np.float64]:
        """The released sum of the vectors."""
        return np.asarray(release.values, dtype=np.float64)
