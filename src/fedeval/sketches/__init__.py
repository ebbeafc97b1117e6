"""Encoders and decoders only: what clients send and what the server reads from it.

Every sketch declares its parts and its sensitivity per privacy unit, encodes
examples into a vector and decodes a :class:`fedeval.aggregation.Release` into
an estimate. Nothing here draws noise or charges a budget.

* :mod:`~fedeval.sketches.tree` — the one b-ary tree geometry.
* :mod:`~fedeval.sketches.grid` — the one grid and bin-edge convention.
* :mod:`~fedeval.sketches.hierarchy` — per-class hierarchical score histograms.
* :mod:`~fedeval.sketches.paired` — two models' hierarchies and a pair grid (comparisons).
* :mod:`~fedeval.sketches.sliced` — one hierarchy per slice of the examples.
* :mod:`~fedeval.sketches.prefix_tree` — ECDF prefix counts with tree noise.
* :mod:`~fedeval.sketches.group_sums` — per-group label counts and probability sums.
* :mod:`~fedeval.sketches.rank_sums` — vertical-FL rank sums and label counts.
* :mod:`~fedeval.sketches.class_histograms` — one-vs-rest histograms (multiclass).
* :mod:`~fedeval.sketches.scaler_updates` — clipped parameter updates of a scaler.
* :mod:`~fedeval.sketches.client_count` — the number of participating clients.
* :mod:`~fedeval.sketches.fixed_point` — how real values are sent as integers.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fedeval.sketches.base import Sketch
    from fedeval.sketches.grid import UniformGrid
    from fedeval.sketches.hierarchical_histogram import HierarchicalHistogram
    from fedeval.sketches.hierarchy import HierarchySketch, HierarchySpec
    from fedeval.sketches.paired import PairedHierarchySketch
    from fedeval.sketches.sliced import SlicedHierarchySketch
    from fedeval.sketches.tree import Tree

# Loaded on first use (PEP 562): importing one submodule, e.g. ``fedeval.sketches.tree``
# from ``fedeval.postprocess.consistency``, must not import the hierarchical histogram,
# which imports that consistency module back (a cycle when postprocess is imported first).
_LAZY = {
    "HierarchicalHistogram": "fedeval.sketches.hierarchical_histogram",
    "HierarchySketch": "fedeval.sketches.hierarchy",
    "HierarchySpec": "fedeval.sketches.hierarchy",
    "PairedHierarchySketch": "fedeval.sketches.paired",
    "Sketch": "fedeval.sketches.base",
    "SlicedHierarchySketch": "fedeval.sketches.sliced",
    "Tree": "fedeval.sketches.tree",
    "UniformGrid": "fedeval.sketches.grid",
}

__all__ = [
    "HierarchicalHistogram",
    "HierarchySketch",
    "HierarchySpec",
    "PairedHierarchySketch",
    "Sketch",
    "SlicedHierarchySketch",
    "Tree",
    "UniformGrid",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'fedeval.sketches' has no attribute {name!r}")
