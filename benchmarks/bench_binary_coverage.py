"""Benchmark (issue 13): coverage of the nominal 95 % intervals of the AUC and AP.

For each task and privacy model, ``--seeds`` independent releases
(``fe.evaluate(..., rng=seed)``, default parameters). The interval is
estimate ± 1.96 × the privacy standard error (``roc_auc_se``,
``average_precision_se``, delta method); the target is the exact pooled AUC / AP
of the same examples (scikit-learn), which the privacy noise and the
bucketization separate from the estimate. Printed: coverage, the mean and SD of
the z-scores (estimate − exact)/SE (a calibrated SE gives SD ≈ 1), the number of
runs with SE 0, and the runs whose AUC was exactly 1. Target: coverage 90–98 %.

Tasks: "breast_cancer" (569 rows, 5-fold cross-validated logistic-regression
scores, 57 clients of ~10 rows) and "generated" (the 200,000-example task of
``bench_dense_vs_quantile.py``, one example per client).

Usage: python benchmarks/bench_binary_coverage.py [--seeds 100] [--tasks breast_cancer generated]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.metrics import average_precision_score, roc_auc_score

import fedeval as fe

sys.path.insert(0, str(Path(__file__).parent))
from bench_dense_vs_quantile import breast_cancer_task, generated_task


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--tasks", nargs="+", default=["breast_cancer", "generated"])
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    print(
        "task           privacy  | AUC cover  z mean  z sd | AP cover  z mean  z sd | "
        "SE=0 runs  AUC=1 runs | mean SE auc/ap  sampling SE"
    )
    for task in args.tasks:
        t0 = time.perf_counter()
        if task == "breast_cancer":
            s, y = breast_cancer_task(1)
            fed = fe.Federation.from_arrays(s, y, clients=np.arange(y.size) % 57)
        else:
            s, y = generated_task()
            fed = fe.Federation.from_arrays(s, y)
        auc, avp = roc_auc_score(y, s), average_precision_score(y, s)
        for name, privacy in (
            ("distdp", fe.DistributedDP(epsilon=1.0)),
            ("ldp", fe.LocalDP(epsilon=5.0)),
        ):
            za, zp, se0, ones, ses, samp = [], [], 0, 0, [], []
            for seed in range(args.seeds):
                ev = fe.evaluate(fed, privacy, rng=seed)
                sa, sp = ev.roc_auc_se, ev.average_precision_se
                se0 += int(sa == 0) + int(sp == 0)
                ones += int(ev.roc_auc == 1.0)
                with np.errstate(divide="ignore", invalid="ignore"):
                    za.append(np.float64(ev.roc_auc - auc) / sa)
                    zp.append(np.float64(ev.average_precision - avp) / sp)
                ses.append((sa, sp))
                samp.append(ev.roc_auc_sampling_se)
            a, p = np.array(za), np.array(zp)
            m = np.nanmean(np.array(ses), axis=0)
            print(
                f"{task:14s} {name:7s} | {np.mean(np.abs(a) <= 1.96):8.2f}  {np.nanmean(a):6.2f} "
                f"{np.nanstd(a):5.2f} | {np.mean(np.abs(p) <= 1.96):7.2f}  {np.nanmean(p):6.2f} "
                f"{np.nanstd(p):5.2f} | {se0:9d}  {ones:10d} | {m[0]:.2e}/{m[1]:.2e}  "
                f"{np.nanmean(samp):.2e}",
                flush=True,
            )
        print(f"  ({task}: exact AUC {auc:.4f}, AP {avp:.4f}; {time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
