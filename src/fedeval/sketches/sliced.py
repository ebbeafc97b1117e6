"""One hierarchy per slice of the examples, in one sketch: the encoder and decoder of sliced evaluation.

Every example belongs to exactly one slice (a declared public value, or the
catch-all "other" slice), and the sketch holds, per slice and per class, the
hierarchical score histogram of :mod:`fedeval.sketches.hierarchy`. It *is* that
hierarchy with 2·k classes, the class of an example being ``2·slice + label``
(:func:`slice_labels`): the encoders, the local-DP items, the atoms and the
level layouts are the hierarchy's, unchanged.

Parallel composition
--------------------
One example adds 1 to one node per level of its own slice's hierarchy and
nothing to any other slice's. The sensitivity to one example is therefore the
sensitivity of one hierarchy, whatever the number of slices: k slices cost
one evaluation's ε, not k·ε. A unit of several examples (a client of at most
B of them) may spread them over up to min(B, k) slices; each example still
adds one node per level, so the L1 over the whole vector is B·h (and the L2
at most B·√h, reached when all B sit in one node) however they spread: the
noise, calibrated to the whole vector, covers every slice a bounded client
can touch. When slices are client cohorts a client touches one slice only.

Decoding gives one :class:`~fedeval.sketches.hierarchical_histogram.HierarchicalHistogram`
per slice (:class:`SlicedHistograms`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from fedeval.privacy.guarantee import Neighbouring, PrivacyUnit
from fedeval.privacy.receipt import Receipt
from fedeval.privacy.sensitivity import Layout, Sensitivity
from fedeval.sketches.hierarchical_histogram import HierarchicalHistogram
from fedeval.sketches.hierarchy import HierarchySketch, HierarchySpec
from fedeval.validation import check_int_at_least

if TYPE_CHECKING:
    from fedeval.aggregation.release import Release

__all__ = ["SlicedHierarchySketch", "SlicedHistograms", "slice_labels"]


def slice_labels(labels: NDArray[Any], slice_index: NDArray[np.integer[Any]]) -> NDArray[Any]:
    """The class of every example in the sliced hierarchy: ``2·slice + label``.

    In the narrowest signed integer type that holds them (int16 below 16,384
    slices): two passes over small integers.
    """
    idx = np.asarray(slice_index)
    top = 2 * (int(idx.max()) if idx.size else 0) + 1
    dtype = np.int16 if top < 2**15 else np.int32 if top < 2**31 else np.int64
    out = np.left_shift(idx, 1, dtype=dtype)
    out += np.asarray(labels).astype(dtype, copy=False)
    return out


@dataclass(frozen=True)
class SlicedHistograms:
    """What one release of a :class:`SlicedHierarchySketch` decodes to: a tree per slice."""

    trees: tuple[HierarchicalHistogram, ...]
    receipt: Receipt


@dataclass(frozen=True)
class SlicedHierarchySketch(HierarchySketch):
    """Per-slice, per-class hierarchical score histograms (see the module docstring).

    Parameters
    ----------
    spec : HierarchySpec
        With ``n_classes = 2 · n_slices``: class ``2·s + y`` is label y of slice s.
    leaves_only : bool
        Encode the leaves only (exact sums).
    n_slices : int
        Slices, the catch-all one included.

    Notes
    -----
    ``encode`` reads the combined classes of :func:`slice_labels` as its labels.
    """

    n_slices: int = 1
    name = "sliced hierarchy"

    def __post_init__(self) -> None:
        check_int_at_least(self.n_slices, 1, name="n_slices")
        if self.spec.n_classes != 2 * self.n_slices:
            raise ValueError(
                f"a sliced hierarchy of {self.n_slices} slices has {2 * self.n_slices} classes, "
                f"got {self.spec.n_classes}"
            )

    @classmethod
    def of(cls, spec: HierarchySpec, n_slices: int) -> SlicedHierarchySketch:
        """The sliced sketch of a two-class hierarchy ``spec`` over ``n_slices`` slices."""
        return cls(replace(spec, n_classes=2 * int(n_slices)), n_slices=int(n_slices))

    @property
    def public_inputs(self) -> tuple[str, ...]:
        return (*super().public_inputs, "the declared slice values")

    def sensitivity(
        self,
        *,
        unit: PrivacyUnit,
        neighbouring: Neighbouring,
        examples_per_unit: int,
        layout: Layout,
    ) -> Sensitivity:
        """The hierarchy's sensitivity: one example is in exactly one slice (parallel composition).

        See the module docstring: the bound over the whole vector of all slices
        is that of one hierarchy for every unit, so the release of k slices
        costs one evaluation's budget.
        """
        one = super().sensitivity(
            unit=unit,
            neighbouring=neighbouring,
            examples_per_unit=examples_per_unit,
            layout=layout,
        )
        b = int(examples_per_unit)
        k = self.n_slices
        spread = (
            f"; a unit of {b} examples touches at most {min(b, k)} of the {k} slices and adds "
            "one node per level per example wherever they are, so the bound over all slices "
            "is the bound above"
            if b > 1
            else f"; the example is in exactly one of the {k} slices and changes nothing in the "
            "others (parallel composition over slices: one evaluation's budget, not k of them)"
        )
        return replace(one, derivation=one.derivation + spread)

    def exact_variant(self) -> SlicedHierarchySketch:
        return SlicedHierarchySketch(self.spec, leaves_only=True, n_slices=self.n_slices)

    def decode(self, release: Release) -> SlicedHistograms:  # type: ignore[override]
        whole = super().decode(release)
        examples = float(np.clip(whole.leaves, 0.0, None).sum())
        trees = []
        for s in range(self.n_slices):
            cls = slice(2 * s, 2 * s + 2)
            sampling = (
                None
                if whole.node_sampling_variance is None
                else tuple(v[cls] for v in whole.node_sampling_variance)
            )
            trees.append(
                replace(
                    whole,
                    spec=replace(self.spec, n_classes=2),
                    levels=tuple(lv[cls] for lv in whole.levels),
                    node_variance=tuple(v[cls] for v in whole.node_variance),
                    node_sampling_variance=sampling,
                    split_examples=examples if sampling is not None else None,
                )
            )
        return SlicedHistograms(tuple(trees), release.receipt)
