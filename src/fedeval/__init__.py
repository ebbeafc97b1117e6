"""fedeval: private federated evaluation and calibration of classifiers.

The one pipeline: client data → encode → federated sum under a privacy model
→ decode (see DESIGN.md). Typical use::

    import fedeval as fe
    fed = fe.Federation.from_arrays(scores, labels, clients)
    ev = fe.evaluate(fed, fe.DistributedDP(epsilon=1.0), rng=0)
    ev.roc_auc, ev.roc_curve(), ev.at_threshold(0.5), ev.epsilon_spent
"""

from __future__ import annotations

from fedeval import calibration, ecdf, metrics, privacy, report, sketches, vertical
from fedeval.calibration.api import calibrate
from fedeval.data import ClientView, Federation, Scan, demo, partition, read, scan
from fedeval.evaluation import Evaluation, evaluate
from fedeval.multiclass_evaluation import MulticlassEvaluation, evaluate_multiclass
from fedeval.planning import Plan, plan
from fedeval.privacy.ledger import BudgetExceededError, BudgetLedger
from fedeval.privacy.models import (
    CentralDP,
    DistributedDP,
    LabelDP,
    LocalDP,
    SecureAggregation,
    UserLevelDP,
)
from fedeval.report.evaluation_report import write_report

__version__ = "0.1.0"

__all__ = [
    "BudgetExceededError",
    "BudgetLedger",
    "CentralDP",
    "ClientView",
    "DistributedDP",
    "Evaluation",
    "Federation",
    "LabelDP",
    "LocalDP",
    "MulticlassEvaluation",
    "Plan",
    "Scan",
    "SecureAggregation",
    "UserLevelDP",
    "__version__",
    "calibrate",
    "calibration",
    "demo",
    "ecdf",
    "evaluate",
    "evaluate_multiclass",
    "metrics",
    "partition",
    "plan",
    "privacy",
    "read",
    "report",
    "scan",
    "sketches",
    "vertical",
    "write_report",
]
