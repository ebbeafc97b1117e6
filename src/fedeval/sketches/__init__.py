"""Client-side encodings and their server-side decoders (histograms, hierarchies)."""

from __future__ import annotations

from fedeval.sketches.hierarchy import HierarchicalHistogram, HierarchySpec, release_hierarchy
from fedeval.sketches.histogram import UniformGrid

__all__ = ["HierarchicalHistogram", "HierarchySpec", "UniformGrid", "release_hierarchy"]
