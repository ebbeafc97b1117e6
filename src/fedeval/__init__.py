"""fedeval: private federated evaluation and calibration of classifiers.

The one pipeline: client data → encode → federated sum under a privacy model
→ decode (see DESIGN.md). Typical use::

    import fedeval as fe
    fed = fe.Federation.from_arrays(scores, labels, clients)
    ev = fe.evaluate(fed, fe.DistributedDP(epsilon=1.0))   # fresh OS entropy, this release alone
    ev.roc_auc, ev.roc_curve(), ev.at_threshold(0.5), ev.epsilon_spent

    # A program: several releases on one population under one budget.
    ctx = fe.Context(fed, budget=fe.Budget(epsilon=2.0))
    cal = ctx.calibrate(fe.DistributedDP(epsilon=0.5), method="bbq")
    ev = ctx.evaluate(fe.DistributedDP(epsilon=1.0))
    ctx.remaining.epsilon, ctx.receipt()

The public names are loaded on first use (PEP 562), so ``import fedeval`` and
the ``fedeval`` command start without importing numpy, scipy or matplotlib;
``fe.evaluate`` and the others behave exactly as if imported eagerly.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what static analysis sees: the same names, imported eagerly
    from fedeval import calibration, ecdf, metrics, privacy, report, sketches, vertical
    from fedeval.calibration.api import calibrate
    from fedeval.comparison import Comparison, compare
    from fedeval.context import Budget, Context, ProgramReceipt
    from fedeval.data import ClientView, Federation, Scan, demo, partition, read, scan
    from fedeval.entry_points import evaluate
    from fedeval.evaluation import Evaluation
    from fedeval.exceptions import FedevalWarning, SeededRandomnessWarning, SmallDataWarning
    from fedeval.monitoring import Monitor, monitor
    from fedeval.multiclass_evaluation import MulticlassEvaluation, evaluate_multiclass
    from fedeval.planning import MulticlassPlan, Plan, plan, plan_multiclass
    from fedeval.privacy.ledger import BudgetExceededError, BudgetLedger
    from fedeval.privacy.models import (
        CentralDP,
        DistributedDP,
        LabelDP,
        LocalDP,
        SecureAggregation,
        UserLevelDP,
    )
    from fedeval.public_facts import Public
    from fedeval.report.evaluation_report import write_report
    from fedeval.slicing import SlicedEvaluation

__version__ = "0.1.0"

# public name -> (module, attribute or None for the module itself)
_LAZY: dict[str, tuple[str, str | None]] = {
    "calibration": ("fedeval.calibration", None),
    "ecdf": ("fedeval.ecdf", None),
    "metrics": ("fedeval.metrics", None),
    "privacy": ("fedeval.privacy", None),
    "report": ("fedeval.report", None),
    "sketches": ("fedeval.sketches", None),
    "vertical": ("fedeval.vertical", None),
    "calibrate": ("fedeval.calibration.api", "calibrate"),
    "Comparison": ("fedeval.comparison", "Comparison"),
    "compare": ("fedeval.comparison", "compare"),
    "SlicedEvaluation": ("fedeval.slicing", "SlicedEvaluation"),
    "Budget": ("fedeval.context", "Budget"),
    "Context": ("fedeval.context", "Context"),
    "ProgramReceipt": ("fedeval.context", "ProgramReceipt"),
    "FedevalWarning": ("fedeval.exceptions", "FedevalWarning"),
    "SeededRandomnessWarning": ("fedeval.exceptions", "SeededRandomnessWarning"),
    "SmallDataWarning": ("fedeval.exceptions", "SmallDataWarning"),
    "Public": ("fedeval.public_facts", "Public"),
    "ClientView": ("fedeval.data", "ClientView"),
    "Federation": ("fedeval.data", "Federation"),
    "demo": ("fedeval.data", "demo"),
    "partition": ("fedeval.data", "partition"),
    "read": ("fedeval.data", "read"),
    "Scan": ("fedeval.data", "Scan"),
    "scan": ("fedeval.data", "scan"),
    "Evaluation": ("fedeval.evaluation", "Evaluation"),
    "evaluate": ("fedeval.entry_points", "evaluate"),
    "Monitor": ("fedeval.monitoring", "Monitor"),
    "monitor": ("fedeval.monitoring", "monitor"),
    "MulticlassEvaluation": ("fedeval.multiclass_evaluation", "MulticlassEvaluation"),
    "evaluate_multiclass": ("fedeval.multiclass_evaluation", "evaluate_multiclass"),
    "Plan": ("fedeval.planning", "Plan"),
    "plan": ("fedeval.planning", "plan"),
    "MulticlassPlan": ("fedeval.planning", "MulticlassPlan"),
    "plan_multiclass": ("fedeval.planning", "plan_multiclass"),
    "BudgetExceededError": ("fedeval.privacy.ledger", "BudgetExceededError"),
    "BudgetLedger": ("fedeval.privacy.ledger", "BudgetLedger"),
    "CentralDP": ("fedeval.privacy.models", "CentralDP"),
    "DistributedDP": ("fedeval.privacy.models", "DistributedDP"),
    "LabelDP": ("fedeval.privacy.models", "LabelDP"),
    "LocalDP": ("fedeval.privacy.models", "LocalDP"),
    "SecureAggregation": ("fedeval.privacy.models", "SecureAggregation"),
    "UserLevelDP": ("fedeval.privacy.models", "UserLevelDP"),
    "write_report": ("fedeval.report.evaluation_report", "write_report"),
}

__all__ = [
    "Budget",
    "BudgetExceededError",
    "BudgetLedger",
    "CentralDP",
    "ClientView",
    "Comparison",
    "Context",
    "DistributedDP",
    "Evaluation",
    "Federation",
    "FedevalWarning",
    "LabelDP",
    "LocalDP",
    "Monitor",
    "MulticlassEvaluation",
    "MulticlassPlan",
    "Plan",
    "ProgramReceipt",
    "Public",
    "Scan",
    "SecureAggregation",
    "SeededRandomnessWarning",
    "SlicedEvaluation",
    "SmallDataWarning",
    "UserLevelDP",
    "__version__",
    "calibrate",
    "calibration",
    "compare",
    "demo",
    "ecdf",
    "evaluate",
    "evaluate_multiclass",
    "metrics",
    "monitor",
    "partition",
    "plan",
    "plan_multiclass",
    "privacy",
    "read",
    "report",
    "scan",
    "sketches",
    "vertical",
    "write_report",
]


def __getattr__(name: str) -> Any:
    try:
        module_name, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'fedeval' has no attribute {name!r}") from None
    module = importlib.import_module(module_name)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value  # cache: later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
