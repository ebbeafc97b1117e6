"""Reproduce Cormode–Markov Figure 5: ECE of federated binary calibration vs number of bins.

Data (deterministic, seed 0): ``sklearn.datasets.make_classification`` with
240k examples (``--quick``: 60k); a ``HistGradientBoostingClassifier`` is
trained on the first 1/6, and its probability q is distorted by the monotone
map ``s = sqrt(q)`` (over-confident positives, ECE ≈ 0.11, comparable to the
paper's "Sep" score). The rest is split into a calibration half (the
federation, one example per client: M = 100k, or 25k with ``--quick``) and a
test half on which ECE is measured.

For each privacy model -- secure aggregation (SA), distributed DP ε = 1
(Pólya shares, example level), local DP ε = 5 (OUE) -- and each number K of
ECE bins (equal width), the methods are

* ``uncalibrated``: the distorted score itself;
* ``isotonic``: centralized ``sklearn.isotonic.IsotonicRegression`` on the raw
  calibration data (non-private baseline);
* ``binning``: :func:`fedeval.calibration.binning.histogram_binning` with
  B = K buckets (as the paper: "the same number of buckets as bins");
* ``binning-default``: histogram binning with the default B of Theorems 7–8
  (independent of K);
* ``bbq``: :func:`fedeval.calibration.bbq.bbq` over B ∈ [M^{1/3}/10, 10 M^{1/3}]
  from one height-10 hierarchy (independent of K).

Every federated calibrator is one private release; the repetitions vary the
noise (``--reps``, default 5; ``--quick`` 2). Every calibrator carries the
receipt of its release; the CSV records the ε it charged (``epsilon_spent``,
0 without DP) and whether do-no-harm kept the map (``applied``; a declined
map is the identity, the uncalibrated score, and has no bins). Writes ``benchmarks/out/calibration/fig5_ece_vs_bins.csv``
(every run; ``--out`` for another folder), ``fig5_summary.csv`` (mean and
standard deviation) and ``fig5_ece_vs_bins.png``.

Run: ``.venv/bin/python benchmarks/bench_calibration_binary.py [--quick] [--out DIR]``.
"""

from __future__ import annotations

import argparse
import csv
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from numpy.typing import NDArray
from sklearn.datasets import make_classification
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.isotonic import IsotonicRegression

from fedeval.calibration import Calibrator, IdentityCalibrator
from fedeval.calibration.bbq import BBQCalibrator, bbq
from fedeval.calibration.binning import HistogramBinningCalibrator, histogram_binning
from fedeval.data import Federation
from fedeval.metrics.calibration_error import expected_calibration_error
from fedeval.privacy.models import DistributedDP, LocalDP, SecureAggregation

OUT = Path(__file__).parent / "out" / "calibration"
BINS = (5, 10, 15, 20, 30, 40, 50)
PRIVACY: dict[str, SecureAggregation | DistributedDP | LocalDP] = {
    "SA": SecureAggregation(),
    "DistDP eps=1": DistributedDP(1.0),
    "LDP eps=5": LocalDP(5.0),
}
METHODS = ("uncalibrated", "isotonic", "binning", "binning-default", "bbq")


def make_data(
    n_total: int,
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]]:
    """(calibration scores, labels, test scores, labels) of a miscalibrated model."""
    x, y = make_classification(
        n_samples=n_total,
        n_features=20,
        n_informative=8,
        n_redundant=4,
        flip_y=0.05,
        class_sep=0.8,
        random_state=0,
    )
    n_train = n_total // 6
    model = HistGradientBoostingClassifier(max_iter=100, random_state=0)
    model.fit(x[:n_train], y[:n_train])
    q = model.predict_proba(x[n_train:])[:, 1]
    s = np.sqrt(q)  # monotone distortion: over-confident
    rest = y[n_train:].astype(np.int64)
    half = s.size // 2
    return s[:half], rest[:half], s[half:], rest[half:]


def _applied(cal: Calibrator) -> bool:
    """False when do-no-harm returned the identity instead of the learned map."""
    return not isinstance(cal, IdentityCalibrator)


def _bins(cal: Calibrator) -> int | str:
    return cal.n_bins if isinstance(cal, HistogramBinningCalibrator) else ""


def _bbq_top_bins(cal: Calibrator) -> int | str:
    if not isinstance(cal, BBQCalibrator):
        return ""
    return cal.n_bins[int(np.argmax(cal.weights))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="60k examples, 2 repetitions")
    parser.add_argument("--reps", type=int, default=None)
    parser.add_argument("--out", type=Path, default=OUT, help=f"output folder (default {OUT})")
    args = parser.parse_args()
    n_total = 60_000 if args.quick else 240_000
    reps = args.reps if args.reps is not None else (2 if args.quick else 5)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)

    t0 = time.perf_counter()
    s_cal, y_cal, s_test, y_test = make_data(n_total)
    fed = Federation.from_arrays(s_cal, y_cal)  # one example per client
    print(
        f"data: M = {fed.n_examples} calibration, {s_test.size} test ({time.perf_counter() - t0:.1f}s)"
    )

    iso = IsotonicRegression(out_of_bounds="clip", y_min=0.0, y_max=1.0).fit(s_cal, y_cal)
    fixed = {"uncalibrated": s_test, "isotonic": np.asarray(iso.predict(s_test), dtype=np.float64)}

    rows: list[dict[str, Any]] = []
    for pname, privacy in PRIVACY.items():
        t1 = time.perf_counter()
        for rep in range(reps):
            seed = 1000 * rep + 17
            preds: dict[str, NDArray[np.float64]] = dict(fixed)
            default = histogram_binning(fed, privacy, rng=seed)
            preds["binning-default"] = default.predict_proba(s_test)
            bq = bbq(fed, privacy, rng=seed + 1)
            preds["bbq"] = bq.predict_proba(s_test)
            for k in BINS:
                cal = histogram_binning(fed, privacy, n_bins=k, rng=seed + 2 + k)
                preds_k = dict(preds, binning=cal.predict_proba(s_test))
                for method in METHODS:
                    if rep > 0 and method in fixed:
                        continue  # deterministic baselines: one row per K
                    e = expected_calibration_error(preds_k[method], y_test, n_bins=k)
                    charged = {"binning": cal, "binning-default": default, "bbq": bq}.get(method)
                    rows.append(
                        {
                            "privacy": pname,
                            "method": method,
                            "n_bins": k,
                            "rep": rep,
                            "ece": e,
                            # "" when do-no-harm declined the map (an IdentityCalibrator).
                            "calibrator_bins": (
                                _bins(cal)
                                if method == "binning"
                                else _bins(default)
                                if method == "binning-default"
                                else ""
                            ),
                            "bbq_top_bins": _bbq_top_bins(bq) if method == "bbq" else "",
                            "applied": "" if charged is None else _applied(charged),
                            # ε charged by the calibrator's one release (its receipt)
                            "epsilon_spent": "" if charged is None else charged.epsilon_spent,
                        }
                    )
        print(f"{pname}: {reps} repetitions in {time.perf_counter() - t1:.1f}s")

    with (out / "fig5_ece_vs_bins.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)

    groups: dict[tuple[str, str, int], list[float]] = defaultdict(list)
    for r in rows:
        groups[(str(r["privacy"]), str(r["method"]), int(r["n_bins"]))].append(float(r["ece"]))
    summary: list[dict[str, Any]] = [
        {
            "privacy": p,
            "method": m,
            "n_bins": k,
            "ece_mean": float(np.mean(v)),
            "ece_std": float(np.std(v)),
            "runs": len(v),
        }
        for (p, m, k), v in sorted(groups.items())
    ]
    with (out / "fig5_summary.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(summary[0]))
        writer.writeheader()
        writer.writerows(summary)

    fig = Figure(figsize=(13, 4), layout="constrained")
    axes = fig.subplots(1, len(PRIVACY), sharey=True)
    for ax, pname in zip(axes, PRIVACY, strict=True):
        for method in METHODS:
            pts = [r for r in summary if r["privacy"] == pname and r["method"] == method]
            ks = [int(r["n_bins"]) for r in pts]
            mean = np.array([float(r["ece_mean"]) for r in pts])
            std = np.array([float(r["ece_std"]) for r in pts])
            ax.errorbar(ks, mean, yerr=std, marker="o", markersize=3, capsize=2, label=method)
        ax.set_title(f"{pname} (M = {fed.n_examples})")
        ax.set_xlabel("number of ECE bins (= buckets for 'binning')")
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("ECE on test half")
    axes[0].legend(fontsize="small")
    fig.savefig(out / "fig5_ece_vs_bins.png", dpi=120)

    print(f"\n{'privacy':<14}{'method':<17}" + "".join(f"K={k:<7}" for k in BINS))
    for pname in PRIVACY:
        for method in METHODS:
            vals = {
                int(r["n_bins"]): float(r["ece_mean"])
                for r in summary
                if r["privacy"] == pname and r["method"] == method
            }
            print(f"{pname:<14}{method:<17}" + "".join(f"{vals[k]:<9.4f}" for k in BINS))
    print(f"\nwrote {out}/fig5_ece_vs_bins.csv, fig5_summary.csv, fig5_ece_vs_bins.png")
    print(f"total {time.perf_counter() - t0:.1f}s")


if __name__ == "__main__":
    main()
