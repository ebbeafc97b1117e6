"""One check shared by the releases that decode several hierarchies (a comparison, slices).

Under differential privacy a release never refuses because of the data; when a
released class count is not clearly above its noise the metrics of that
hierarchy are NaN or unreliable, and the caller warns once, naming the
hierarchies concerned. The check and the message use released values only.
"""

from __future__ import annotations

import math

import numpy as np

from fedeval.sketches.hierarchical_histogram import HierarchicalHistogram

__all__ = ["weak_classes"]

_CLASS_NAMES = ("negatives", "positives")


def weak_classes(tree: HierarchicalHistogram) -> str | None:
    """Which released class totals are not clearly above the noise (3 standard errors), in words.

    None when both are; a function of the release only (the noisy totals and
    their exact variance), so whatever it decides is post-processing.
    """
    if not tree.guarantee.is_private:
        return None
    totals = tree.totals()
    se = np.sqrt(np.maximum(tree.total_variance(), 0.0))
    weak = [c for c in (0, 1) if not totals[c] > 3.0 * se[c]]
    if not weak:
        return None
    return ", ".join(
        f"{_CLASS_NAMES[c]} ≈ {totals[c]:.1f} ± {se[c]:.2g}"
        for c in weak
        if math.isfinite(float(totals[c]))
    )
