"""Quickstart: evaluate a classifier on bundled real data spread over clients.

scikit-learn's breast-cancer data, scored by logistic regression (cross-
validated so every score is out of sample), replicated to a population of
~57,000 examples held by 5,000 clients. Prints pooled vs private metrics.

A simulation: the split over clients uses a fixed seed so that the run is
reproducible; the private releases draw their noise from fresh OS entropy (the
default), as a deployment would. The cohort size is declared public, as a
deployment announcing how many clients it enrolled would.
"""

from __future__ import annotations

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import cross_val_predict
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import fedeval as fe

x, y = load_breast_cancer(return_X_y=True)
model = make_pipeline(StandardScaler(), LogisticRegression(C=0.05, max_iter=1000))
scores = cross_val_predict(model, x, y, cv=5, method="predict_proba")[:, 1]
reps = 100
scores, labels = np.tile(scores, reps), np.tile(y, reps)
fed = fe.partition.iid(scores, labels, n_clients=5_000, rng=0)
print(fed)
print(f"pooled ROC AUC (scikit-learn): {roc_auc_score(labels, scores):.5f}")
public = fe.Public(n_clients=fed.n_clients)
for privacy in (fe.SecureAggregation(), fe.DistributedDP(epsilon=1.0), fe.LocalDP(epsilon=5.0)):
    ev = fe.evaluate(fed, privacy, public=public)
    m = ev.at_threshold(0.5)
    print(
        f"{privacy.describe():60s} AUC {ev.roc_auc:.5f} ± {ev.roc_auc_se:.5f}  "
        f"recall@0.5 {float(m.recall):.4f} ± {float(m.recall_se):.4f}  ε spent {ev.epsilon_spent:g}"
    )
