"""Benchmark (issue 27, item 2): AUC and AP with 10-20 positives — bias and 95 % coverage.

Tasks (291 examples each: ``--positives`` positives and the rest negatives):

* generated: "binormal" (scores Φ(N(0,1) + 0.75·y)), "beta" (positives Beta(2, 5),
  negatives Beta(1.3, 6)) and "logit" (sigmoid of N(−2.5, 1) + 0.8·y), seed 1;
* real, shipped with the packages (nothing is downloaded): "breast_cancer"
  (scikit-learn; malignant = positive; 5-fold cross-validated logistic
  regression on two weak features, mean smoothness and mean symmetry, so the
  AUC is far from 1) and "fair" (statsmodels' affairs data; affairs > 0 =
  positive; cross-validated logistic regression on all features), each
  subsampled (seed 0) to the positives and 291 − positives negatives.

Clients: one example each (291) or 29 clients of ~10. Privacy: DistributedDP
ε = 1 and LocalDP ε = 5. ``--seeds`` releases per cell (``fe.evaluate(...,
rng=seed)``, default parameters). Printed per cell: the exact AUC and AP
(scikit-learn), the estimates' mean bias, the share of runs whose nominal 95 %
interval (estimate ± 1.96 SE) covers the exact value (target ≥ 0.90), the
median effective number of positives (:func:`fedeval.metrics.dense.effective_examples`)
and the share of runs whose warning states it.

Usage: python benchmarks/bench_rare_class.py [--seeds 100] [--positives 10 17 20] [--quick]
``--quick``: 20 seeds, 17 positives, 291 clients.
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray
from scipy.stats import norm
from sklearn.metrics import average_precision_score, roc_auc_score

import fedeval as fe
from fedeval.metrics.dense import effective_examples

N = 291
Task = tuple[NDArray[np.float64], NDArray[np.int64]]


def _generated(kind: str, positives: int) -> Task:
    rng = np.random.default_rng(1)
    y = np.r_[np.ones(positives, np.int64), np.zeros(N - positives, np.int64)]
    if kind == "binormal":
        s = norm.cdf(rng.normal(0.0, 1.0, N) + 0.75 * y)
    elif kind == "beta":
        s = np.where(y == 1, rng.beta(2.0, 5.0, N), rng.beta(1.3, 6.0, N))
    else:
        s = 1.0 / (1.0 + np.exp(-(rng.normal(-2.5, 1.0, N) + 0.8 * y)))
    return np.asarray(s, dtype=np.float64), y


def _subsample(s: NDArray[np.float64], y: NDArray[np.int64], positives: int) -> Task:
    rng = np.random.default_rng(0)
    idx = np.concatenate(
        [
            rng.choice(np.flatnonzero(y == 1), positives, replace=False),
            rng.choice(np.flatnonzero(y == 0), N - positives, replace=False),
        ]
    )
    return s[idx], y[idx]


def _cross_validated(x: NDArray[np.float64], y: NDArray[np.int64]) -> NDArray[np.float64]:
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_predict
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
    return np.asarray(cross_val_predict(model, x, y, cv=5, method="predict_proba")[:, 1])


def breast_cancer(positives: int) -> Task:
    from sklearn.datasets import load_breast_cancer

    x, y = load_breast_cancer(return_X_y=True)
    y = (1 - y).astype(np.int64)  # malignant = positive
    return _subsample(_cross_validated(x[:, [4, 8]], y), y, positives)


def fair(positives: int) -> Task:
    import statsmodels.api as sm

    d = sm.datasets.fair.load_pandas().data
    y = (d["affairs"] > 0).to_numpy().astype(np.int64)
    x = d.drop(columns="affairs").to_numpy(dtype=np.float64)
    return _subsample(_cross_validated(x, y), y, positives)


TASKS: dict[str, Callable[[int], Task]] = {
    "binormal": lambda k: _generated("binormal", k),
    "beta": lambda k: _generated("beta", k),
    "logit": lambda k: _generated("logit", k),
    "breast_cancer": breast_cancer,
    "fair": fair,
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--positives", type=int, nargs="+", default=[10, 17, 20])
    ap.add_argument("--clients", type=int, nargs="+", default=[291, 29])
    ap.add_argument("--tasks", nargs="+", default=list(TASKS))
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.seeds, args.positives, args.clients = 20, [17], [291]
    print(
        "task          pos clients privacy | exact AUC   bias  cover | exact AP   bias  cover "
        "| n_eff(med) warned"
    )
    worst = {"auc": 1.0, "ap": 1.0}
    for task in args.tasks:
        for k in args.positives:
            s, y = TASKS[task](k)
            auc, avp = roc_auc_score(y, s), average_precision_score(y, s)
            for n_clients in args.clients:
                fed = fe.Federation.from_arrays(s, y, clients=np.arange(N) % n_clients)
                for name, privacy in (
                    ("distdp 1", fe.DistributedDP(1.0)),
                    ("ldp 5", fe.LocalDP(5.0)),
                ):
                    rows, warned = [], 0
                    for seed in range(args.seeds):
                        with warnings.catch_warnings(record=True) as rec:
                            warnings.simplefilter("always")
                            ev = fe.evaluate(fed, privacy, rng=seed)
                        warned += any("effective positives" in str(w.message) for w in rec)
                        n_eff = float(effective_examples(ev.tree)[1]) if ev.defined else 0.0
                        rows.append(
                            (ev.roc_auc, ev.roc_auc_se, ev.average_precision,
                             ev.average_precision_se, n_eff)
                        )  # fmt: skip
                    a, sa, p, sp, ne = (np.array(x) for x in zip(*rows, strict=True))
                    cover_a = float(np.mean(np.abs(a - auc) <= 1.96 * sa))
                    cover_p = float(np.mean(np.abs(p - avp) <= 1.96 * sp))
                    worst["auc"] = min(worst["auc"], cover_a)
                    worst["ap"] = min(worst["ap"], cover_p)
                    print(
                        f"{task:13s} {k:3d} {n_clients:7d} {name:8s}| {auc:9.3f} "
                        f"{np.nanmean(a) - auc:+6.3f} {cover_a:5.2f} | {avp:8.3f} "
                        f"{np.nanmean(p) - avp:+6.3f} {cover_p:5.2f} | {np.median(ne):9.2f} "
                        f"{warned / args.seeds:5.2f}",
                        flush=True,
                    )
    print(f"lowest coverage: AUC {worst['auc']:.2f}, AP {worst['ap']:.2f} (target >= 0.90)")


if __name__ == "__main__":
    main()
