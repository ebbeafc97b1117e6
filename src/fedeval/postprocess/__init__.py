"""Named, budget-free post-processing steps of released values.

* :mod:`~fedeval.postprocess.consistency` — Hay et al. consistency of a hierarchy.
* :mod:`~fedeval.postprocess.smoothing` — monotone smoothing of a private ECDF.
* :mod:`~fedeval.postprocess.bootstrap` — parametric bootstrap standard errors.

Nothing here charges a budget: every step reads released values only.
"""

from __future__ import annotations

from fedeval.postprocess.bootstrap import bootstrap_se, parametric_replicate
from fedeval.postprocess.consistency import consistent_levels, consistent_node_weights

__all__ = ["bootstrap_se", "consistent_levels", "consistent_node_weights", "parametric_replicate"]
