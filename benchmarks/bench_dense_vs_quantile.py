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
their ratios fedeval / reference. Targets: <= 0.5 (issue 13); PR under DistDP
<= 1.0 at the median and at p90 on every task (issue 27, item 4).

Tasks: "generated" (200,000 examples of ``make_classification`` scored by a
gradient-boosting model trained on a disjoint 50,000, as in
``repro_xu_cormode.py``), "breast_cancer" (scikit-learn's 569 rows, 5-fold
cross-validated logistic-regression scores, replicated ``--replicate`` times),
and two real tabular tasks statsmodels ships (no download), each a 5-fold
cross-validated logit tiled to about ``--replicate`` × 569 examples: "fair"
(Fair's affairs survey, 6,366 rows, affairs > 0, 32 % positive, AUC 0.74; 9
copies) and "anes96" (1996 American National Election Study, 944 rows, vote,
42 % positive, AUC 0.96; 60 copies). One example per client. Heights 7/9/12
(Q = 32/128/1024, h = log2 Q + 2).

Usage: python benchmarks/bench_dense_vs_quantile.py [--seeds 10] [--first-seed 0]
       [--heights 7 9 12] [--tasks generated breast_cancer fair anes96]
       [--privacy sa distdp ldp] [--replicate 100]

``--first-seed`` moves the seeds to first-seed .. first-seed + seeds − 1, for a
check on seeds that no estimator choice was made on (decisions on 0-9).

Measured (issue 27, item 4; ``--privacy distdp ldp --seeds 50`` with
``--first-seed 0`` and ``--first-seed 100``; SA with ``--privacy sa``). Ratio
fedeval / reference of the median / p90 Area Error, seeds 0-49 then 100-149:

    PR, DistDP ε = 1      h = 7                  h = 9                  h = 12
    generated       0.05/0.07 0.05/0.07    0.22/0.24 0.26/0.24    0.59/0.54 0.65/0.55
    breast_cancer   1.00/1.03 0.99/1.03    0.23/0.39 0.24/0.37    0.85/0.73 0.86/0.90
    fair            0.34/0.23 0.36/0.22    0.48/0.40 0.57/0.38    0.93/0.88 0.98/0.88
    anes96          0.36/0.31 0.35/0.31    0.35/0.52 0.34/0.50    0.76/0.64 0.86/0.68

    PR, LDP ε = 5
    generated       0.47/0.65 0.44/0.59    0.94/0.94 0.93/1.04    0.83/0.72 0.99/0.79
    breast_cancer   0.79/0.71 0.80/0.79    1.00/0.95 0.92/0.93    0.93/0.94 0.98/1.02
    fair            1.03/0.91 0.93/1.01    0.94/1.03 1.02/0.97    0.98/1.04 0.99/1.12
    anes96          1.24/1.11 1.32/1.17    1.62/1.63 1.62/1.41    1.29/1.24 1.40/1.02

ROC: DistDP 0.04-0.98 (median) and 0.04-1.00 (p90), the highest fair h = 12;
LDP 0.44-0.99 and 0.56-1.04. SA PR: 0.02-0.28 except breast_cancer h = 7, 0.99.

Item 4 is met in 23 of the 24 DistDP PR median/p90 cells of each seed set; the
exception, and the cell met without margin:

* breast_cancer h = 7, p90 1.03 (100 seeds: 1.03, 90 % bootstrap interval
  1.01-1.05; median 1.00). Bucketization, not noise: without noise the ratio
  is 0.99. 66 % of the positives and one negative score (×100) share the top
  leaf [127/128, 1]. The bins do not say where in the leaf that negative
  lies; the dense curve spreads both classes evenly over it (its PR curve is
  flat inside a leaf whenever both classes are given the same shape there),
  while the truth has precision 1 up to recall 0.55. The p90 excess is the noise of that leaf's negative count
  (SD ≈ 7 of 100; the error is about linear in it). ``bench_dense_oracle.py`` 1b: no
  estimator's p90 is below 0.77 of the reference's on both of two data sets
  that get this release.
* fair h = 12, median 0.93 and 0.98 (100 seeds: 0.98, interval 0.93-1.03;
  10-seed blocks 0.89-1.13, so ``--seeds 10`` can print 1.09). Noise: three
  quarters of the error lie at recall < 0.2, where precision is a ratio of two noisy
  prefix counts; both methods read the same counts and dense is lower there.

LDP (outside item 4) loses on the real tasks: anes96 PR 1.24-1.62, fair about
1.0. On anes96 the exact precision is 1 at recall < 0.05; the shrinkage
spreads a coarse node's sparse negatives evenly up to the domain's top (split
SD 150-230 against 60 true negatives in the top 1/32), so dense precision
there is 0.6-0.97, while the reference's top negative quantile stops below the
top (its search reads negative counts as 0, which inflates the cumulative
sums) and reads 1.0.

Estimator variants measured on seeds 0-19 or 0-9 (PR median/p90 ratio, DistDP
unless named) and not adopted, each worse somewhere by more than it gained: PCHIP of each
class's prefix counts inside a bin (breast_cancer h = 7 1.00/1.08 →
1.04/1.12); a PCHIP ROC (TP as a function of FP) inside a bin (0.74 without
noise, 1.17/2.16 with it); a coarser level (L − 1: breast_cancer h = 7 0.98/1.04, no
other cell better by more than 0.01, breast_cancer h = 9 0.27 → 2.74); the
Wiener threshold scaled by 0.5-3 (breast_cancer h = 7 p90 1.05-1.09 throughout,
fair h = 12 worse from 1.5 on);
shrinking each split towards the other class's or the pooled split instead of
an even one (breast_cancer h = 7 0.97/0.99, fair h = 12 0.89/0.93, but
breast_cancer h = 12 0.74 → 1.01, LDP anes96 1.38 → 2.43); an
average-interpolating (quadratic) prediction of each split (breast_cancer
h = 12 0.74 → 1.55); pooling adjacent bins to a monotone positive rate
(isotonic, the ROC's concave hull: LDP anes96 h = 9 1.52 → 1.10, but DistDP
breast_cancer h = 12 0.74 → 4.27). Beyond the grid, DistDP PR at h = 13-14 is
0.94-1.07 (median) on fair and anes96 (20 seeds).
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


def statsmodels_task(name: str, replicate: int) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """A logit on a data set statsmodels ships (no download), 5-fold CV scores, tiled.

    "fair": Fair's affairs survey (6,366 rows; outcome affairs > 0, 32 % positive;
    AUC 0.74). "anes96": the 1996 American National Election Study (944 rows;
    outcome vote, 42 % positive; AUC 0.96). Tiled to about ``replicate`` × 569
    examples, the size of the breast_cancer task.
    """
    import statsmodels.datasets as smd
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_predict
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if name == "fair":
        frame = smd.fair.load_pandas().data
        y = (frame["affairs"] > 0).to_numpy(dtype=np.int64)
        x = frame.drop(columns="affairs").to_numpy(dtype=np.float64)
    elif name == "anes96":
        frame = smd.anes96.load_pandas().data
        y = frame["vote"].to_numpy(dtype=np.int64)
        x = frame.drop(columns="vote").to_numpy(dtype=np.float64)
    else:
        raise ValueError(f"unknown statsmodels task {name!r}")
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    s = cross_val_predict(model, x, y, cv=5, method="predict_proba")[:, 1]
    reps = max(1, round(replicate * 569 / y.size))
    return np.tile(s, reps), np.tile(y, reps)


def task_data(task: str, replicate: int) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    if task == "generated":
        return generated_task()
    if task == "breast_cancer":
        return breast_cancer_task(replicate)
    return statsmodels_task(task, replicate)


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
    ap.add_argument(
        "--tasks",
        nargs="+",
        default=["generated", "breast_cancer", "fair", "anes96"],
        choices=["generated", "breast_cancer", "fair", "anes96"],
    )
    ap.add_argument("--privacy", nargs="+", default=["sa", "distdp", "ldp"])
    ap.add_argument("--replicate", type=int, default=100)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    t_start = time.perf_counter()
    print(
        "task           privacy  h    Q | ROC AE med/p90: fedeval  reference  ratio | "
        "PR AE med/p90: fedeval  reference  ratio"
    )
    worst: dict[tuple[str, str], float] = {}
    for task in args.tasks:
        s, y = task_data(task, args.replicate)
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
                for curve, pair in (("ROC", ratios[:2]), ("PR", ratios[2:])):
                    worst[name, curve] = max(worst.get((name, curve), 0.0), *pair)
                print(
                    f"{task:14s} {name:7s} {h:2d} {q:4d} | "
                    f"{med[0]:.2e}/{p90[0]:.2e}  {med[1]:.2e}/{p90[1]:.2e}  "
                    f"{ratios[0]:.2f}/{ratios[1]:.2f} | "
                    f"{med[2]:.2e}/{p90[2]:.2e}  {med[3]:.2e}/{p90[3]:.2e}  "
                    f"{ratios[2]:.2f}/{ratios[3]:.2f}",
                    flush=True,
                )
    for (name, curve), value in worst.items():
        print(f"largest median/p90 ratio fedeval/reference, {name} {curve}: {value:.2f}")
    print("targets: <= 0.5 (issue 13); DistDP PR <= 1.0 at the median and p90 (issue 27)")
    print(f"total time {time.perf_counter() - t_start:.0f} s")


if __name__ == "__main__":
    main()
