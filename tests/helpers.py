"""Small helpers shared by the tests (on ``sys.path`` through ``pythonpath`` in pyproject)."""

from __future__ import annotations

from typing import Any

from fedeval.aggregation import release
from fedeval.data import Federation
from fedeval.privacy.ledger import BudgetLedger
from fedeval.sketches.hierarchical_histogram import HierarchicalHistogram
from fedeval.sketches.hierarchy import HierarchySketch, HierarchySpec, LevelBudget, layout_of


def release_hierarchy(
    fed: Federation,
    privacy: Any,
    *,
    height: int,
    branching: int = 2,
    level_budget: LevelBudget = "split",
    path: str = "fast",
    rng: Any = None,
    ledger: BudgetLedger | None = None,
) -> HierarchicalHistogram:
    """The raw (not yet consistent) per-class hierarchy of ``fed`` released under ``privacy``."""
    if fed.kind != "binary":
        raise ValueError("hierarchical score histograms need a binary task (1-D scores)")
    sketch = HierarchySketch(HierarchySpec(height, branching, fed.score_range, 2))
    tree: HierarchicalHistogram = release(
        fed,
        sketch,
        privacy,
        layout=layout_of(level_budget),
        path=path,  # type: ignore[arg-type]
        rng=rng,
        ledger=ledger,
    ).decode()
    return tree
