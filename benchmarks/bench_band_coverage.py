"""Benchmark (issue 27, item 3): pointwise 90 % bands, coverage by position along the curve.

The companion of ``bench_binary_coverage.py`` (same tasks, same releases:
``fe.evaluate(fed, privacy, rng=seed)`` with default parameters), for the
bands instead of the AUC and AP intervals: ``ev.roc_band(grid)`` (TPR over a
grid of FPR) and ``ev.pr_band(grid)`` (precision over a grid of recall) at the
deciles 0.1..0.9, nominal level 0.90. The target at a grid point is the exact
curve of the same examples there (scikit-learn's ``roc_curve`` /
``precision_recall_curve``, linear between its points). Printed per task,
model and curve: the coverage at every decile (target 0.88–0.97) and the
band's mean half-width there relative to the estimate's RMSE there (a
calibrated 90 % band has about 1.645).

Tasks: "breast_cancer" (569 rows, cross-validated logistic regression, 57
clients of ~10 rows), "fair" (statsmodels' affairs data, 6,366 rows,
cross-validated logistic regression, one example per client) and
"generated" (the 200,000-example task of ``bench_dense_vs_quantile.py``).

Usage: python benchmarks/bench_band_coverage.py [--seeds 100] [--tasks ...] [--quick]
``--quick``: 20 seeds, breast_cancer only.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from sklearn.metrics import precision_recall_curve, roc_curve

import fedeval as fe

sys.path.insert(0, str(Path(__file__).parent))
from bench_dense_vs_quantile import breast_cancer_task, generated_task

GRID = np.round(np.arange(1, 10) / 10, 2)


def fair_task() -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """statsmodels' affairs data (affairs > 0), 5-fold cross-validated logistic regression."""
    import statsmodels.api as sm
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_predict
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    d = sm.datasets.fair.load_pandas().data
    y = (d["affairs"] > 0).to_numpy().astype(np.int64)
    x = d.drop(columns="affairs").to_numpy(dtype=np.float64)
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
    s = cross_val_predict(model, x, y, cv=5, method="predict_proba")[:, 1]
    return np.asarray(s, dtype=np.float64), y


def exact_curves(
    s: NDArray[np.float64], y: NDArray[np.int64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The exact TPR at the FPR deciles and precision at the recall deciles."""
    fpr, tpr, _ = roc_curve(y, s, drop_intermediate=False)
    prec, rec, _ = precision_recall_curve(y, s)
    order = np.argsort(rec, kind="stable")
    return np.interp(GRID, fpr, tpr), np.interp(GRID, rec[order], prec[order])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--tasks", nargs="+", default=["breast_cancer", "fair", "generated"])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.seeds, args.tasks = 20, ["breast_cancer"]
    warnings.simplefilter("ignore")
    print("coverage of the 90 % band at each decile (target 0.88-0.97); width = half-width / RMSE")
    print("task           privacy curve | " + " ".join(f"{g:5.1f}" for g in GRID) + " | width")
    for task in args.tasks:
        t0 = time.perf_counter()
        if task == "breast_cancer":
            s, y = breast_cancer_task(1)
            fed = fe.Federation.from_arrays(s, y, clients=np.arange(y.size) % 57)
        elif task == "fair":
            s, y = fair_task()
            fed = fe.Federation.from_arrays(s, y)
        else:
            s, y = generated_task()
            fed = fe.Federation.from_arrays(s, y)
        roc_truth, pr_truth = exact_curves(s, y)
        for name, privacy in (("distdp", fe.DistributedDP(1.0)), ("ldp", fe.LocalDP(5.0))):
            rows: dict[str, list[tuple[NDArray[np.float64], ...]]] = {"roc": [], "pr": []}
            for seed in range(args.seeds):
                ev = fe.evaluate(fed, privacy, rng=seed)
                if not ev.defined:
                    continue
                for curve, band in (("roc", ev.roc_band), ("pr", ev.pr_band)):
                    _, lo, hi = band(GRID, level=0.9)
                    fpr_or_rec, val = (
                        (ev.roc_curve()[0], ev.roc_curve()[1])
                        if curve == "roc"
                        else (ev.precision_recall_curve()[1], ev.precision_recall_curve()[0])
                    )
                    order = np.argsort(fpr_or_rec, kind="stable")
                    centre = np.interp(GRID, fpr_or_rec[order], val[order])
                    rows[curve].append((lo, hi, centre))
            for curve, truth in (("roc", roc_truth), ("pr", pr_truth)):
                lo, hi, centre = (np.array(x) for x in zip(*rows[curve], strict=True))
                cover = np.mean((lo <= truth) & (truth <= hi), axis=0)
                rmse = np.sqrt(np.mean((centre - truth) ** 2, axis=0))
                width = np.mean((hi - lo) / 2, axis=0) / np.maximum(rmse, 1e-12)
                print(
                    f"{task:14s} {name:7s} {curve:5s} | "
                    + " ".join(f"{c:5.2f}" for c in cover)
                    + f" | {np.median(width):.2f} (min {width.min():.2f}, max {width.max():.2f})",
                    flush=True,
                )
        print(f"  ({task}: {time.perf_counter() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
