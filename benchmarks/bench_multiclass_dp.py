"""Benchmark (issue 27, item 1): the multiclass evaluation under DP stays in range and covers.

Task: scikit-learn digits, a logistic regression trained on a stratified half
(``random_state=0``), evaluated on the other 899 examples, spread over 100
clients (example i on client i mod 100). Privacy: DistributedDP ε = 1 and
LocalDP ε = 5 (OUE). ``--seeds`` releases per model (``rng=seed``), with the
number of examples declared public (``n_examples=899``) and, with
``--undeclared``, without it (planned from the 100 clients).

Printed per model and ``metrics=`` request:

* out of range: the share of published estimates outside their range over
  all runs (every scalar and per-class metric in [0, 1], the log loss in
  [0, −log p_min], the Brier score in [0, 2], top-k non-decreasing, every
  confusion cell ≥ 0, the row-normalised heat map and every per-class ROC/PR
  curve in [0, 1], every SE finite and ≥ 0 where its value is);
* coverage of nominal 95 % intervals (value ± 1.96 SE) of the exact values on
  the same 899 examples: accuracy, macro one-vs-rest AUC
  (``sklearn.metrics.roc_auc_score(multi_class="ovr")``) and top-label ECE
  with the evaluation's own ECE bins (equal-width, left-closed, from the raw
  probabilities); target 0.90–0.98; with the mean and SD of the z-scores;
* the mean SE and RMSE of each.

Usage: python benchmarks/bench_multiclass_dp.py [--seeds 100] [--quick] [--undeclared]
``--quick``: 10 seeds, the default request only.
"""

from __future__ import annotations

import argparse
import time
import warnings
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split

import fedeval as fe

N_CLIENTS = 100
REQUESTS: dict[str, list[str] | None] = {
    "all": None,
    "acc+auc+ece": ["accuracy", "roc_auc", "ece_top_label"],
}


def digits_task() -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Held-out probabilities of a logistic regression on digits (899 examples, 10 classes)."""
    x, y = load_digits(return_X_y=True)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.5, random_state=0, stratify=y)
    model = LogisticRegression(max_iter=5000).fit(x_tr, y_tr)
    return model.predict_proba(x_te).astype(np.float64), y_te.astype(np.int64)


def exact_top_label_ece(p: NDArray[np.float64], y: NDArray[np.int64], bins: int) -> float:
    """Σ_m |correct_m − Σ conf_m| / n over equal-width left-closed bins of the confidence."""
    conf = p.max(axis=1)
    correct = (p.argmax(axis=1) == y).astype(np.float64)
    m = np.minimum((conf * bins).astype(np.int64), bins - 1)
    gap = np.bincount(m, weights=correct - conf, minlength=bins)
    return float(np.abs(gap).sum() / y.size)


def out_of_range(ev: Any) -> tuple[int, int]:
    """(estimates outside their range, estimates checked) of one evaluation."""
    bad = total = 0

    def check(x: Any, lo: float, hi: float) -> None:
        nonlocal bad, total
        a = np.asarray(x, dtype=np.float64).ravel()
        a = a[~np.isnan(a)]
        total += a.size
        bad += int(np.sum((a < lo - 1e-9) | (a > hi + 1e-9)))

    ranges = {"log_loss": ev.parameters["log_loss_bound"], "brier": 2.0}
    for key, value in ev.values.items():
        check(value, 0.0, ranges.get(key, 1.0))
        se = np.asarray(ev.standard_errors[key], dtype=np.float64)
        v = np.asarray(value, dtype=np.float64)
        total += se.size
        bad += int(np.sum(np.isfinite(v) & ~(np.isfinite(se) & (se >= 0))))
    if "top_k_accuracy" in ev.values:
        total += 1
        bad += int(np.any(np.diff(ev.values["top_k_accuracy"]) < -1e-12))
    if ev.sketch.has("confusion"):
        cm = ev.confusion_matrix()
        check(cm, 0.0, np.inf)
        with np.errstate(divide="ignore", invalid="ignore"):
            check(cm / cm.sum(axis=1, keepdims=True), 0.0, 1.0)  # the heat map
    if ev.sketch.has("one_vs_rest"):
        for j in range(ev.n_classes):
            for curve in (ev.roc_curve(j), ev.precision_recall_curve(j)):
                check(curve[0], 0.0, 1.0)
                check(curve[1], 0.0, 1.0)
    return bad, total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--undeclared", action="store_true", help="also plan without n_examples")
    args = ap.parse_args()
    seeds = range(args.first_seed, args.first_seed + (10 if args.quick else args.seeds))
    requests = {"all": None} if args.quick else REQUESTS
    warnings.simplefilter("ignore")
    p, y = digits_task()
    fed = fe.Federation.from_arrays(p, y, np.arange(y.size) % N_CLIENTS, kind="probabilities")
    exact_acc = float(np.mean(p.argmax(axis=1) == y))
    exact_auc = float(roc_auc_score(y, p, multi_class="ovr"))
    print(f"digits: {y.size} examples, {N_CLIENTS} clients; exact accuracy {exact_acc:.4f}, "
          f"macro OvR AUC {exact_auc:.4f}; seeds {seeds.start}..{seeds.stop - 1}")  # fmt: skip
    print(
        "privacy   metrics=      n_examples | out of range  | accuracy cover z-mean z-sd  SE   RMSE"
        " | macro AUC cover z-mean z-sd  SE   RMSE | top ECE cover z-mean z-sd  SE   RMSE | s/run"
    )
    declared = [899, None] if args.undeclared else [899]
    for name, privacy in (("distdp 1", fe.DistributedDP(1.0)), ("ldp 5", fe.LocalDP(5.0))):
        for req, metrics in requests.items():
            for n_ex in declared:
                rows: dict[str, list[tuple[float, float, float]]] = {
                    "accuracy": [],
                    "roc_auc": [],
                    "ece_top_label": [],
                }
                bad = total = 0
                t0 = time.perf_counter()
                for seed in seeds:
                    ev = fe.evaluate_multiclass(
                        fed, privacy, metrics=metrics, n_examples=n_ex, rng=seed
                    )
                    b, t = out_of_range(ev)
                    bad, total = bad + b, total + t
                    truth = {
                        "accuracy": exact_acc,
                        "roc_auc": exact_auc,
                        "ece_top_label": exact_top_label_ece(p, y, ev.parameters["ece_bins"]),
                    }
                    for key in rows:
                        rows[key].append((ev.values[key], ev.standard_errors[key], truth[key]))
                secs = (time.perf_counter() - t0) / len(seeds)
                cells = []
                for key in rows:
                    v, se, tr = (np.array(x) for x in zip(*rows[key], strict=True))
                    with np.errstate(divide="ignore", invalid="ignore"):
                        z = (v - tr) / se
                    cover = float(np.mean(np.abs(v - tr) <= 1.96 * se))
                    rmse = float(np.sqrt(np.nanmean((v - tr) ** 2)))
                    cells.append(
                        f"{cover:5.2f} {np.nanmean(z):+5.2f} {np.nanstd(z):4.2f} "
                        f"{np.nanmean(se):.3f} {rmse:.3f}"
                    )
                print(
                    f"{name:9s} {req:12s} {n_ex!s:>10s} | {bad:4d}/{total:7d}  | "
                    + " | ".join(f"        {c}" for c in cells)
                    + f" | {secs:.2f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
