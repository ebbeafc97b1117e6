"""The number of clients: every client that takes part contributes exactly 1.

A client's vector is ``[1]`` whatever its data (a client holds at least one
example), so adding or removing one client changes the sum by exactly 1 and
adding or removing one example by at most 1 (when it is, or was, its client's
only example). That bound holds without looking at the data, so the sketch
counts as clipping its clients (``clips_clients``): user-level DP can release
it like any other client-bounded sum.

Used where a procedure needs the population size K but K is not public, e.g.
the fixed denominator q·K of DP-FedAvg (McMahan et al. 2018) under user-level
DP, where add/remove of a whole client is what is protected.

References
----------
.. [1] H. B. McMahan, D. Ramage, K. Talwar and L. Zhang, "Learning
   differentially private recurrent language models", ICLR 2018, §2
   (the fixed-denominator estimator needs the population size).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from fedeval.privacy.guarantee import Neighbouring, PrivacyUnit
from fedeval.privacy.sensitivity import Layout, Part, Sensitivity
from fedeval.sketches.base import Sketch

if TYPE_CHECKING:
    from fedeval.aggregation.release import Release
    from fedeval.data import Federation

__all__ = ["ClientCountSketch", "ExampleCountSketch"]


@dataclass(frozen=True, eq=False)
class ClientCountSketch(Sketch):
    """One coordinate: the number of clients whose vectors are summed."""

    name = "client count"
    linear = False
    integer = True
    clips_clients = True

    @property
    def parts(self) -> tuple[Part, ...]:
        return (Part("clients", 1),)

    def sensitivity(
        self,
        *,
        unit: PrivacyUnit,
        neighbouring: Neighbouring,
        examples_per_unit: int,
        layout: Layout,
    ) -> Sensitivity:
        if unit not in ("client", "example"):
            raise ValueError(f"the client count has no sensitivity per {unit!r}")
        # Under replacement the count does not change at all; 1 is a safe bound.
        return Sensitivity(
            unit,
            neighbouring,
            1.0,
            1.0,
            (Part("clients", 1, 1.0, 1.0, 1.0),),
            integer=True,
            derivation=(
                "every client adds exactly 1 whatever its data: one client (or one example, "
                "when it is its client's only one) changes the count by at most 1"
            ),
        )

    def encode(
        self,
        scores: NDArray[np.float64],
        labels: NDArray[np.int64],
        clients: NDArray[np.int64],
    ) -> NDArray[np.int64]:
        """Number of distinct clients among these examples (1 for one client's data)."""
        return np.array([np.unique(clients).size], dtype=np.int64)

    def encode_clients(self, fed: Federation, clients: NDArray[np.intp] | None = None) -> Any:
        n = fed.n_clients if clients is None else int(np.asarray(clients).size)
        return np.array([n], dtype=np.int64)

    def decode(self, release: Release) -> float:
        """The released (noisy) count."""
        return float(release.values[0])


@dataclass(frozen=True, eq=False)
class ExampleCountSketch(Sketch):
    """One coordinate: the number of examples (every example adds 1).

    Released with a small share of a budget when a procedure must choose its
    parameters from the size of the data and no size is public
    (:func:`fedeval.public_facts.planning_size`). One-hot (every example
    reports the one item), linear, and bounded per example (1) or per client
    (its contribution bound B), so every count-releasing model can release it.
    """

    name = "example count"
    one_hot = True
    reads_clients = False
    counts_rows = True

    @property
    def parts(self) -> tuple[Part, ...]:
        return (Part("examples", 1),)

    def sensitivity(
        self,
        *,
        unit: PrivacyUnit,
        neighbouring: Neighbouring,
        examples_per_unit: int,
        layout: Layout,
    ) -> Sensitivity:
        if unit not in ("client", "example"):
            raise ValueError(f"the example count has no sensitivity per {unit!r}")
        # Replacing a unit's data keeps the count when the unit is one example; a client
        # replaced by another of up to B examples moves it by up to B.
        b = float(examples_per_unit)
        l1 = 0.0 if (neighbouring == "replace" and unit == "example") else b
        l1 = max(l1, 1.0)  # the noise needs a positive scale; 1 is a safe bound
        return Sensitivity(
            unit,
            neighbouring,
            l1,
            l1,
            (Part("examples", 1, 1.0, l1, l1),),
            integer=True,
            examples_per_unit=examples_per_unit,
            derivation=(f"every example adds 1, so one {unit} changes the count by at most {l1:g}"),
        )

    def encode(
        self,
        scores: NDArray[np.float64],
        labels: NDArray[np.int64],
        clients: NDArray[np.int64],
    ) -> NDArray[np.int64]:
        return np.array([np.asarray(scores).shape[0]], dtype=np.int64)

    def items(
        self,
        scores: NDArray[np.float64],
        labels: NDArray[np.int64],
        part_of_example: NDArray[np.int64],
    ) -> NDArray[np.int64]:
        return np.zeros(np.asarray(scores).shape[0], dtype=np.int64)

    def decode(self, release: Release) -> float:
        """The released (noisy) count."""
        return float(release.values[0])
