"""The sketch interface: what a client encodes and how the server decodes it.

A sketch is the paper-specific half of a release (DESIGN.md, "The one idea"):

* it declares its coordinates, split into named parts (``parts``), and its
  sensitivity to one privacy unit (``sensitivity``), once;
* ``encode`` turns examples into a vector; for a *linear* sketch the vector of
  many clients' examples is the sum of their vectors, which is what makes the
  fast path exact;
* ``decode`` turns a :class:`fedeval.aggregation.Release` (an unbiased estimate
  of the summed vector, its variance and its receipt) into an estimate.

Sketches are pure: they import nothing that draws noise or charges a budget.
The release function (:func:`fedeval.aggregation.release`) does both, through
the mechanism that :func:`fedeval.privacy.mechanism_for.mechanism_for` chose.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from fedeval.privacy.guarantee import Neighbouring, PrivacyUnit
from fedeval.privacy.sensitivity import Layout, Part, Sensitivity

if TYPE_CHECKING:
    from fedeval.aggregation.release import Release
    from fedeval.data import Federation

__all__ = ["BatchEncoding", "Sketch"]


@dataclass(frozen=True)
class BatchEncoding:
    """A linear batch encoder of ``length`` coordinates and the map of its sum onto the sketch.

    ``expand(Σ_batches encoder(scores, labels, clients))`` equals
    ``Σ_batches sketch.encode(scores, labels, clients)`` exactly (integers).
    """

    encoder: Callable[[NDArray[np.float64], NDArray[Any], NDArray[np.int64]], NDArray[Any]]
    length: int
    expand: Callable[[NDArray[Any]], NDArray[Any]]


class Sketch(ABC):
    """Encoder/decoder of one kind of federated summary.

    Class attributes
    ----------------
    name : str
        Shown in receipts ("hierarchy", "ECDF prefix tree", ...).
    linear : bool
        encode(A ∪ B) = encode(A) + encode(B) for any split of examples.
    integer : bool
        Encoded values are integers. Every sketch that can be released with
        noise is integer: real-valued quantities are sent in fixed point
        (:mod:`fedeval.sketches.fixed_point`) and ``resolution`` says what one
        unit is worth.
    one_hot : bool
        Every example adds 1 to exactly one coordinate of each part, so it can
        send one local-DP report per part (``items``).
    label_linear : bool
        The vector is linear in the 0/1 labels with nothing at labels 0, so
        randomized response on labels can be debiased linearly.
    per_party : bool
        Every client's data touches only its own coordinates
        (:meth:`owned_coordinates`), so each can add noise to its own.
    clips_clients : bool
        Every client bounds its own contribution (clipping), so the sketch has
        a client-level sensitivity without a contribution bound.
    reads_clients : bool
        ``encode`` reads its ``clients`` argument. When False, encoding a whole
        federation does not build the client index of every example (one
        gather per example when the ids have gaps).
    counts_rows : bool
        ``encode`` is the one-coordinate vector [number of rows]: a streamed
        source's sum is its row count (after any contribution bound), known
        without reading the rows.
    public_inputs : tuple of str
        Inputs this sketch's release treats as public (domain, grid, height, ...).
    """

    name: str = "sketch"
    linear: bool = True
    integer: bool = True
    one_hot: bool = False
    label_linear: bool = False
    per_party: bool = False
    clips_clients: bool = False
    reads_clients: bool = True
    counts_rows: bool = False

    @property
    def public_inputs(self) -> tuple[str, ...]:
        return ()

    @property
    def resolution(self) -> float | NDArray[np.float64]:
        """Value of one encoded unit, per coordinate (1 for counts; γ for fixed point).

        The release function multiplies the summed integers by it (and their
        variance by its square), so a :class:`~fedeval.aggregation.Release` and
        every decoder work in the sketch's natural units.
        """
        return 1.0

    # -------------------------------------------------------------- geometry
    @property
    @abstractmethod
    def parts(self) -> tuple[Part, ...]:
        """The named blocks of coordinates, in order."""

    @property
    def length(self) -> int:
        """Number of coordinates of the encoded vector."""
        return sum(p.length for p in self.parts)

    def part_offsets(self) -> NDArray[np.int64]:
        """Start of every part, and the total length, shape (n_parts + 1,)."""
        return np.concatenate(([0], np.cumsum([p.length for p in self.parts]))).astype(np.int64)

    @property
    def noise_size(self) -> int:
        """Number of noise variables (the length, unless the noise has its own basis)."""
        return self.length

    def noise_to_values(self, noise: NDArray[Any]) -> NDArray[Any]:
        """Map noise variables onto the coordinates (the identity by default)."""
        return noise

    def noise_to_variance(self, variance: NDArray[np.float64]) -> NDArray[np.float64]:
        """Per-coordinate variance from independent noise variables' variances."""
        return variance

    # ----------------------------------------------------------------- privacy
    @abstractmethod
    def sensitivity(
        self,
        *,
        unit: PrivacyUnit,
        neighbouring: Neighbouring,
        examples_per_unit: int,
        layout: Layout,
    ) -> Sensitivity:
        """What one unit can change, in noise units (see :mod:`fedeval.privacy.sensitivity`).

        Raises
        ------
        ValueError
            A unit or layout this sketch cannot bound.
        """

    # ------------------------------------------------------------------ encode
    def batch_encoding(self) -> BatchEncoding | None:
        """A shorter linear encoding to sum over the batches of a streamed source.

        None (the default): the batches are encoded with :meth:`encode`. A
        sketch whose vector is a fixed linear map of a shorter one (the
        hierarchy's levels are sums of its leaves) returns that shorter
        encoder and the map, applied once to the sum: integer sums, so the
        result is exactly the sum of :meth:`encode` over the batches, and every
        batch (or Dask partition) adds and sends the shorter vector only.
        """
        return None

    @abstractmethod
    def encode(
        self,
        scores: NDArray[np.float64],
        labels: NDArray[np.int64],
        clients: NDArray[np.int64],
    ) -> NDArray[Any]:
        """The vector of these examples (``clients`` gives each example's client index)."""

    def encode_assigned(
        self,
        scores: NDArray[np.float64],
        labels: NDArray[np.int64],
        clients: NDArray[np.int64],
        part_of_example: NDArray[np.int64],
    ) -> NDArray[Any]:
        """The vector when every example is encoded in its own part only (layout "assign")."""
        out = np.zeros(self.length, dtype=np.int64 if self.integer else np.float64)
        offsets = self.part_offsets()
        for p in range(len(self.parts)):
            sel = part_of_example == p
            if sel.any():
                full = self.encode(scores[sel], labels[sel], clients[sel])
                out[offsets[p] : offsets[p + 1]] += full[offsets[p] : offsets[p + 1]]
        return out

    def encode_clients(
        self, fed: Federation, clients: NDArray[np.intp] | None = None
    ) -> NDArray[Any]:
        """Σ of the vectors of the given clients (all by default), each encoded on its own.

        A linear sketch encodes all their examples at once; others override
        this with a vectorised form or fall back to one encoding per client.
        """
        if clients is None:
            if self.linear:
                index = (
                    fed.client_index
                    if self.reads_clients
                    else np.broadcast_to(np.int64(0), (fed.n_examples,))  # unread
                )
                return self.encode(fed.scores, fed.labels, index)
            clients = np.arange(fed.n_clients)
        if self.linear:
            rows = fed.rows_of(clients)
            return self.encode(fed.scores[rows], fed.labels[rows], fed.client_index[rows])
        total = np.zeros(self.length, dtype=np.int64 if self.integer else np.float64)
        for i in clients:
            view = fed.client(int(i))
            total += self.encode(view.scores, view.labels, np.full(view.n_examples, int(i)))
        return total

    def items(
        self,
        scores: NDArray[np.float64],
        labels: NDArray[np.int64],
        part_of_example: NDArray[np.int64],
    ) -> NDArray[np.int64]:
        """One-hot sketches: each example's coordinate within its part."""
        raise NotImplementedError(f"the {self.name} is not one-hot")

    @property
    def n_atoms(self) -> int | None:
        """One-hot sketches: number of atoms, or None when the sketch declares none.

        Atoms are cells of the examples' domain such that an example's item
        in every part is a function of its atom (for a hierarchy: the
        (class, leaf) pairs). With them, the item counts of any group of
        examples at any part follow from the group's atom counts.
        """
        return None

    def encode_atoms(self, scores: NDArray[np.float64], labels: NDArray[Any]) -> NDArray[np.int64]:
        """Counts of the examples in every atom, shape (n_atoms,) (see :attr:`n_atoms`)."""
        raise NotImplementedError(f"the {self.name} declares no atoms")

    def parts_from_atoms(self, atom_counts: NDArray[np.int64]) -> list[NDArray[np.int64]]:
        """Item counts of part p from row p of ``atom_counts`` (shape (n_parts, n_atoms)).

        Entry p of the result equals the part-p block of ``encode_assigned``
        for examples whose atom counts are row p, all assigned to part p.
        """
        raise NotImplementedError(f"the {self.name} declares no atoms")

    def label_gram(self, scores: NDArray[np.float64], clients: NDArray[np.int64]) -> Any:
        """Label-linear sketches: Σ_i a_i a_iᵀ of the labels' coefficient vectors (sparse).

        Randomized response flips every label independently with variance
        ρ(1 − ρ), so the covariance of the debiased vector is
        ρ(1 − ρ)/(1 − 2ρ)² times this matrix.
        """
        raise NotImplementedError(f"the {self.name} is not linear in the labels")

    def owned_coordinates(self, client: int) -> NDArray[np.intp]:
        """The coordinates only this client's data touches (per-party noise); all by default."""
        return np.arange(self.length)

    def exact_variant(self) -> Sketch:
        """A possibly smaller encoding with the same decode, for exact (noise-free) sums."""
        return self

    # ------------------------------------------------------------------ decode
    @abstractmethod
    def decode(self, release: Release) -> Any:
        """The estimate from a release of this sketch (pure; no privacy cost)."""
