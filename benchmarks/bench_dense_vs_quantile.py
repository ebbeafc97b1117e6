"""Benchmark (issue 13): fedeval's dense curves vs a from-scratch Xu–Cormode quantile method.

Both are computed from the *same* release (one ``fe.evaluate`` per cell and seed):

* fedeval: ``ev.roc_curve()`` / ``ev.precision_recall_curve()`` (dense prefix
  counts of one level, :mod:`fedeval.metrics.dense`).
* reference: written here from the paper only (Xu & Cormode 2025, §3.1-3.2 and
  Algorithm 1): from the consistent hierarchy of each class, read Q + 1 evenly
  spaced quantiles (levels j/Q) by the top-down search of Hay et al. (negative
  counts read as 0; inside the final leaf, linear), interpolate the ECDF through
  (q_j, j/Q) with PCHIP, and evaluate F = 1 − Φ⁻, T = 1 − Φ⁺ and
  P = T n⁺ / (T n⁺ + F n⁻) (eqs. 1-3) at the union of both classes' quantiles
  and 2,001 evenly spaced thresholds (denser than the paper's knots, so the
  reference is not penalised by how it is interpolated).

Area Error (Def. 4.1) against the exact scikit-learn curves of the same examples,
graded by one function for both (:func:`fedeval.metrics.roc_area_error`,
:func:`fedeval.metrics.pr_area_error`). Reported: median and p90 over seeds, and
their ratios fedeval / reference (target <= 0.5).

Tasks: "generated" (200,000 examples of ``make_classification`` scored by a
gradient-boosting model trained on a disjoint 50,000, as in
``repro_xu_cormode.py``) and "breast_cancer" (scikit-learn's 569 rows, 5-fold
cross-validated logistic-regression scores, replicated ``--replicate`` times).
One example per client. Heights 7/9/12 (Q = 32/128/1024, h = log2 Q + 2).

Usage: python benchmarks/bench_dense_vs_quantile.py [--seeds 10] [--first-seed 0]
       [--heights 7 9 12] [--tasks generated breast_cancer] [--privacy sa distdp ldp]
       [--replicate 100]

``--first-seed`` moves the seeds to first-seed .. first-seed + seeds − 1, for a
check on seeds that no estimator choice was made on (decisions on 0-9).
"""

from __future__ import annotations

import argparse
import time
import warnings
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.interpolate import PchipInterpolator
from sklearn.metrics import precision_recall_curve, roc_curve

import fedeval as fe
from fedeval.metrics import pr_area_error, roc_area_error

Curves = tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]


def generated_task(n: int = 200_000) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    from sklearn.datasets import make_classification
    from sklearn.ensemble import HistGradientBoostingClassifier

    n_train = 50_000
    x, y = make_classification(
        n_samples=n + n_train,
        n_features=20,
        n_informative=8,
        n_redundant=4,
        weights=[0.7],
        flip_y=0.05,
        class_sep=0.8,
        random_state=13,
    )
    model = HistGradientBoostingClassifier(max_iter=60, max_leaf_nodes=15, random_state=13)
    model.fit(x[:n_train], y[:n_train])
    return model.predict_proba(x[n_train:])[:, 1].astype(np.float64), y[n_train:].astype(np.int64)


def breast_cancer_task(replicate: int) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_predict
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x, y = load_breast_cancer(return_X_y=True)
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    s = cross_val_predict(model, x, y, cv=5, method="predict_proba")[:, 1]
    return np.tile(s, replicate), np.tile(y, replicate).astype(np.int64)


def reference_quantile_curves(tree: Any, q: int) -> Curves:
    """Xu–Cormode's construction from the consistent leaves (see the module docstring)."""
    lo, hi = tree.spec.score_range
    edges = np.linspace(lo, hi, tree.spec.n_leaves + 1)
    levels = np.arange(q + 1) / q
    ecdfs = []
    totals = []
    b = tree.branching
    for c in (0, 1):
        # Top-down search (Hay et al.): at each level enter the first child whose
        # cumulative count, negative counts read as 0, reaches the remaining target.
        lv_counts = [np.maximum(np.asarray(x[c], dtype=np.float64), 0.0) for x in tree.levels]
        total = float(lv_counts[0].sum())
        totals.append(total)
        target = levels * total
        node = np.zeros(levels.size, dtype=np.int64)
        for k, cnt in enumerate(lv_counts):
            kids = node[:, None] * b + np.arange(b) if k else np.tile(np.arange(b), (node.size, 1))
            cum = np.cumsum(cnt[kids], axis=1)
            pick = np.minimum((cum < target[:, None] - 1e-9).sum(axis=1), b - 1)
            before = np.where(pick > 0, cum[np.arange(node.size), np.maximum(pick - 1, 0)], 0.0)
            target = target - before
            node = kids[np.arange(node.size), pick]
        leaf = lv_counts[-1][node]
        inside = np.clip(np.where(leaf > 0, target / np.where(leaf > 0, leaf, 1.0), 0.0), 0, 1)
        quant = edges[node] + inside * (edges[1] - edges[0])
        quant = np.maximum.accumulate(quant)
        knots, idx = np.unique(quant[::-1], return_index=True)  # highest level at tied knots
        lv = np.maximum.accumulate(levels[::-1][idx])
        ecdfs.append((knots, lv))
    thresholds = np.unique(np.concatenate([ecdfs[0][0], ecdfs[1][0], np.linspace(lo, hi, 2001)]))

    def phi(knots: NDArray[np.float64], lv: NDArray[np.float64]) -> NDArray[np.float64]:
        if knots.size == 1:
            return np.where(thresholds >= knots[0], 1.0, 0.0)
        val = PchipInterpolator(knots, lv, extrapolate=False)(thresholds)
        val = np.where(thresholds < knots[0], 0.0, val)
        val = np.where(thresholds >= knots[-1], 1.0, val)
        return np.clip(val, 0.0, 1.0)

    f = 1.0 - phi(*ecdfs[0])
    t = 1.0 - phi(*ecdfs[1])
    order = np.argsort(thresholds)[::-1]  # ROC: decreasing thresholds
    fpr = np.concatenate(([0.0], np.maximum.accumulate(f[order])))
    tpr = np.concatenate(([0.0], np.maximum.accumulate(t[order])))
    n_neg, n_pos = totals
    denom = t * n_pos + f * n_neg
    ok = denom > 0
    precision = np.concatenate(((t * n_pos)[ok] / denom[ok], [1.0]))
    recall = np.concatenate((t[ok], [0.0]))
    return fpr, tpr, precision, recall


def privacy_of(name: str) -> Any:
    return {
        "sa": fe.SecureAggregation(),
        "distdp": fe.DistributedDP(epsilon=1.0),
        "ldp": fe.LocalDP(epsilon=5.0),
    }[name]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--heights", type=int, nargs="+", default=[7, 9, 12])
    ap.add_argument("--tasks", nargs="+", default=["generated", "breast_cancer"])
    ap.add_argument("--privacy", nargs="+", default=["sa", "distdp", "ldp"])
    ap.add_argument("--replicate", type=int, default=100)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    t_start = time.perf_counter()
    print(
        "task           privacy  h    Q | ROC AE med/p90: fedeval  reference  ratio | "
        "PR AE med/p90: fedeval  reference  ratio"
    )
    worst = 0.0
    for task in args.tasks:
        s, y = generated_task() if task == "generated" else breast_cancer_task(args.replicate)
        fed = fe.Federation.from_arrays(s, y)
        f_ref, t_ref, _ = roc_curve(y, s)
        p_ref, r_ref, _ = precision_recall_curve(y, s)
        for name in args.privacy:
            for h in args.heights:
                q = 2 ** (h - 2)
                n_seeds = 1 if name == "sa" else args.seeds
                seeds = range(args.first_seed, args.first_seed + n_seeds)
                rows = []
                for seed in seeds:
                    ev = fe.evaluate(fed, privacy_of(name), height=h, rng=seed)
                    fpr, tpr, _ = ev.roc_curve()
                    p, r, _ = ev.precision_recall_curve()
                    xf, xt, xp, xr = reference_quantile_curves(ev.tree, q)
                    rows.append(
                        (
                            roc_area_error(fpr, tpr, f_ref, t_ref),
                            roc_area_error(xf, xt, f_ref, t_ref),
                            pr_area_error(p, r, p_ref, r_ref),
                            pr_area_error(xp, xr, p_ref, r_ref),
                        )
                    )
                a = np.array(rows)
                med, p90 = np.median(a, axis=0), np.quantile(a, 0.9, axis=0)
                ratios = [med[0] / med[1], p90[0] / p90[1], med[2] / med[3], p90[2] / p90[3]]
                worst = max(worst, *ratios)
                print(
                    f"{task:14s} {name:7s} {h:2d} {q:4d} | "
                    f"{med[0]:.2e}/{p90[0]:.2e}  {med[1]:.2e}/{p90[1]:.2e}  "
                    f"{ratios[0]:.2f}/{ratios[1]:.2f} | "
                    f"{med[2]:.2e}/{p90[2]:.2e}  {med[3]:.2e}/{p90[3]:.2e}  "
                    f"{ratios[2]:.2f}/{ratios[3]:.2f}",
                    flush=True,
                )
    print(f"largest ratio fedeval/reference: {worst:.2f} (target <= 0.5)")
    print(f"total time {time.perf_counter() - t_start:.0f} s")


if __name__ == "__main__":
    main()
