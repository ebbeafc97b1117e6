"""Compare two models privately: logistic regression against gradient boosting on breast_cancer.

Both models are trained on one half of scikit-learn's breast_cancer data and
score the held-out half (285 patients), spread over 57 clients (hospitals).
One DistDP ε = 1 release holds both models' score hierarchies and a pair grid;
from it, the difference of the two ROC AUCs with its paired interval is set
next to the exact difference (which a real deployment could not compute), and
next to what two separate evaluations at ε/2 each would say.

Usage: python examples/compare_breast_cancer.py [--seed N]   (no seed: fresh OS entropy)
"""

from __future__ import annotations

import argparse
import math
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import fedeval as fe


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=None, help="simulation seed of the noise")
    args = ap.parse_args()
    warnings.simplefilter("ignore", fe.SeededRandomnessWarning)
    x, y = load_breast_cancer(return_X_y=True)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.5, stratify=y, random_state=0)
    lr = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(x_tr, y_tr)
    gb = GradientBoostingClassifier(random_state=0).fit(x_tr, y_tr)
    score_lr, score_gb = lr.predict_proba(x_te)[:, 1], gb.predict_proba(x_te)[:, 1]
    clients = np.arange(y_te.size) % 57
    fed_lr = fe.Federation.from_arrays(score_lr, y_te, clients)
    fed_gb = fe.Federation.from_arrays(score_gb, y_te, clients)

    privacy = fe.DistributedDP(epsilon=1.0)
    cmp = fe.compare(fed_lr, fed_gb, privacy, rng=args.seed)
    exact = roc_auc_score(y_te, score_lr) - roc_auc_score(y_te, score_gb)
    d = cmp.roc_auc
    lo, hi = d.interval(0.95)
    plo, phi = d.interval(0.95, privacy_only=True)
    print(f"held-out half: {y_te.size} patients on 57 clients; {privacy.describe()}")
    print(f"ε spent by the one release: {cmp.epsilon_spent:.4g}")
    print(f"AUC  LR {d.a:.4f}   GB {d.b:.4f}")
    print(f"ΔAUC (LR − GB) = {d.estimate:+.4f}   exact {exact:+.4f}")
    print(f"  95 % interval, total SE {d.se:.4f}:    [{lo:+.4f}, {hi:+.4f}]  (the population's)")
    print(f"  95 % interval, privacy SE {d.privacy_se:.4f}: [{plo:+.4f}, {phi:+.4f}]  "
          f"(these patients'; covers the exact difference: {plo <= exact <= phi})")  # fmt: skip
    # What two separate evaluations at ε/2 each would report (no pairing).
    seed_b = None if args.seed is None else args.seed + 1
    ev_lr = fe.evaluate(fed_lr, privacy.scaled(0.5), rng=seed_b)
    ev_gb = fe.evaluate(fed_gb, privacy.scaled(0.5), rng=None if seed_b is None else seed_b + 1)
    unpaired = math.sqrt(
        ev_lr.roc_auc_se**2 + ev_gb.roc_auc_se**2
        + ev_lr.roc_auc_sampling_se**2 + ev_gb.roc_auc_sampling_se**2
    )  # fmt: skip
    print(f"two evaluations at ε/2: ΔAUC {ev_lr.roc_auc - ev_gb.roc_auc:+.4f}, SE {unpaired:.4f}; "
          f"paired/unpaired SE {d.se / unpaired:.2f}")  # fmt: skip
    ni = cmp.noninferiority(0.02)
    print(f"LR non-inferior to GB by 0.02 in AUC? lower bound {ni.lower:+.4f}, p = "
          f"{ni.p_value:.3g}: {'yes' if ni.noninferior else 'not shown'}")  # fmt: skip


if __name__ == "__main__":
    main()
