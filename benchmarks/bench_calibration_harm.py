"""Does federated calibration ever harm held-out data? (issue 27, item 5)

Real data shipped with the installed packages (nothing is downloaded):

=================  =======  =========================================================
task               rows     label
=================  =======  =========================================================
breast_cancer      569      scikit-learn ``load_breast_cancer`` (malignant)
digits-binary      1,797    scikit-learn ``load_digits``, digit ≥ 5
randhie            20,190   statsmodels RAND health insurance, any doctor visit
fair               6,366    statsmodels affairs survey, any affair
anes96             944      statsmodels 1996 election survey, vote
digits (10-class)  1,797    scikit-learn ``load_digits``, the digit (multiclass)
=================  =======  =========================================================

(statsmodels' ``spector``, 32 rows, is too small for 50 clients and left out.)

Each task is split at random (per seed) into a model-training 40 %, a
calibration 40 % and a held-out 20 %. Three models produce the scores: a
Gaussian naive Bayes (saturates at 0 and 1), a standardised logistic
regression (nearly calibrated), and a gradient-boosting model whose
probabilities are deliberately distorted, σ(2.5·logit(q) + 1) (overconfident
and shifted). The calibration rows are spread at random over K ∈ {50, 100,
200} clients (one K per seed), and calibrated by ``fe.calibrate`` under

* secure aggregation (SA), DistributedDP ε = 1, LocalDP ε = 1 and ε = 5:
  binary ``binning``, ``bbq``, ``temperature``, ``platt`` and ``auto``;
* UserLevelDP (ε = 1, δ = 1e-5, clip 1.0): binary ``temperature``,
  ``platt`` and ``auto`` (federated Newton; binary binning has no
  user-level release);
* multiclass digits: ``binning``, ``bbq``, ``temperature`` and ``vector``
  under SA and UserLevelDP (ε = 1, δ = 1e-5; clip 0.5 for scaling, (10, 50)
  for binning), 10 rounds at sampling rate 0.5.

Every calibrator does no harm by default. A case is (task, model, privacy,
seed); for every case and method the script records whether the map was kept,
and for kept maps the held-out NLL before (raw scores) and after. A kept map
*harms* when its held-out NLL exceeds the raw scores' by more than 1 %
(infinite NLL always counts). The raw scores' NLL may itself be infinite (naive
Bayes predicts exactly 0 or 1): the map is then never worse.

Prints one row per (privacy, method) and the totals; writes
``benchmarks/out/calibration_harm/results.csv``.

Run: ``.venv/bin/python benchmarks/bench_calibration_harm.py [--quick] [--seeds S]``
(``--quick``: 1 seed, the four smaller binary tasks).
"""

from __future__ import annotations

import argparse
import csv
import math
import time
import warnings
import zlib
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

import fedeval as fe
from fedeval.calibration import IdentityCalibrator, MulticlassIdentityCalibrator

OUT = Path(__file__).resolve().parent / "out" / "calibration_harm"
CLIENTS = (50, 100, 200)
HARM = 0.01
BINARY_METHODS = ("binning", "bbq", "temperature", "platt", "auto")
SCALING_METHODS = ("temperature", "platt", "auto")
MULTICLASS_METHODS = ("binning", "bbq", "temperature", "vector")

Task = tuple[NDArray[np.float64], NDArray[np.int64]]


def _statsmodels(name: str) -> Task:
    import statsmodels.datasets as smd

    df = getattr(smd, name).load_pandas().data
    if name == "randhie":
        y = (df["mdvis"] > 0).to_numpy()
        x = df.drop(columns=["mdvis"])
    elif name == "fair":
        y = (df["affairs"] > 0).to_numpy()
        x = df.drop(columns=["affairs"])
    else:  # anes96
        y = df["vote"].to_numpy()
        x = df.drop(columns=["vote"])
    return x.to_numpy(dtype=np.float64), y.astype(np.int64)


def load_task(name: str) -> Task:
    if name == "breast_cancer":
        x, y = load_breast_cancer(return_X_y=True)
        return x, (y == 0).astype(np.int64)  # malignant = 0 in scikit-learn
    if name == "digits-binary":
        x, y = load_digits(return_X_y=True)
        return x.astype(np.float64), (y >= 5).astype(np.int64)
    if name == "digits":
        x, y = load_digits(return_X_y=True)
        return x.astype(np.float64), y.astype(np.int64)
    return _statsmodels(name)


def _distort(q: NDArray[np.float64]) -> NDArray[np.float64]:
    q = np.clip(q, 1e-12, 1 - 1e-12)
    z = 2.5 * (np.log(q) - np.log1p(-q)) + 1.0
    return np.asarray(1.0 / (1.0 + np.exp(-z)), dtype=np.float64)


MODELS: dict[str, Callable[[], Any]] = {
    "naive-bayes": GaussianNB,
    "logistic": lambda: make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)),
    "gbm-distorted": lambda: HistGradientBoostingClassifier(max_iter=100, random_state=0),
}


def scores(model: str, task: str, seed: int) -> tuple[Any, ...]:
    """(calibration scores, labels, held-out scores, labels) of one model on one split."""
    x, y = load_task(task)
    order = np.random.default_rng(seed).permutation(y.size)
    n_tr, n_cal = int(0.4 * y.size), int(0.4 * y.size)
    tr, cal, te = order[:n_tr], order[n_tr : n_tr + n_cal], order[n_tr + n_cal :]
    with threadpool_limits(limits=1):
        m = MODELS[model]().fit(x[tr], y[tr])
        p_cal, p_te = m.predict_proba(x[cal]), m.predict_proba(x[te])
    if task == "digits":
        if model == "gbm-distorted":  # sharpen the log-probabilities
            p_cal, p_te = (_sharpen(p) for p in (p_cal, p_te))
        return p_cal, y[cal], p_te, y[te]
    s_cal, s_te = p_cal[:, 1], p_te[:, 1]
    if model == "gbm-distorted":
        s_cal, s_te = _distort(s_cal), _distort(s_te)
    return s_cal, y[cal], s_te, y[te]


def _sharpen(p: NDArray[np.float64]) -> NDArray[np.float64]:
    z = 2.5 * np.log(np.clip(p, 1e-12, 1.0))
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return np.asarray(e / e.sum(axis=1, keepdims=True), dtype=np.float64)


def nll(p: NDArray[np.float64], y: NDArray[np.int64]) -> float:
    """Mean log loss without any clipping (infinite if a label gets probability 0)."""
    with np.errstate(divide="ignore"):
        picked = np.where(y == 1, p, 1.0 - p) if p.ndim == 1 else p[np.arange(y.size), y]
        return float(-np.mean(np.log(picked)))


def privacies(multiclass: bool) -> dict[str, tuple[Any, tuple[str, ...]]]:
    if multiclass:
        return {
            "SA": (fe.SecureAggregation(), MULTICLASS_METHODS),
            "UserLevelDP eps=1": (None, MULTICLASS_METHODS),  # clip per method
        }
    return {
        "SA": (fe.SecureAggregation(), BINARY_METHODS),
        "DistDP eps=1": (fe.DistributedDP(1.0), BINARY_METHODS),
        "LDP eps=1": (fe.LocalDP(1.0), BINARY_METHODS),
        "LDP eps=5": (fe.LocalDP(5.0), BINARY_METHODS),
        "UserLevelDP eps=1": (fe.UserLevelDP(1.0, 1e-5, clip=1.0), SCALING_METHODS),
    }


def run_case(
    task: str, model: str, seed: int, rows: list[dict[str, Any]], log: Callable[[str], None]
) -> None:
    s_cal, y_cal, s_te, y_te = scores(model, task, seed)
    multiclass = task == "digits"
    k = CLIENTS[seed % len(CLIENTS)]
    clients = np.random.default_rng(1000 + seed).permutation(y_cal.size) % k
    kind = "probabilities" if multiclass else "binary"
    fed = fe.Federation.from_arrays(s_cal, y_cal, clients=clients, kind=kind)
    before = nll(s_te, y_te)
    for pname, (privacy, methods) in privacies(multiclass).items():
        for method in methods:
            t0 = time.perf_counter()
            options: dict[str, Any] = {}
            priv = privacy
            if multiclass:
                options = {"rounds": 10, "sampling_rate": 0.5}
                if priv is None:
                    clip: Any = (10.0, 50.0) if method in ("binning", "bbq") else 0.5
                    priv = fe.UserLevelDP(1.0, 1e-5, clip=clip)
            # A noise seed of its own per (case, method): one seed shared by every case
            # would give every case the same noise draw (correlated outcomes).
            noise_seed = zlib.crc32(f"{task}/{model}/{pname}/{method}/{seed}".encode())
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cal = fe.calibrate(fed, priv, method=method, rng=noise_seed, **options)
            kept = not isinstance(cal, IdentityCalibrator | MulticlassIdentityCalibrator)
            after = nll(cal.predict_proba(s_te), y_te) if kept else before
            harmed = kept and (
                not math.isfinite(after) or (math.isfinite(before) and after > (1 + HARM) * before)
            )
            rows.append(
                {
                    "task": task,
                    "model": model,
                    "seed": seed,
                    "clients": k,
                    "privacy": pname,
                    "method": method,
                    "kept": kept,
                    "nll_before": before,
                    "nll_after": after,
                    "relative_change": (after - before) / before
                    if kept and math.isfinite(before) and before > 0
                    else (float("-inf") if kept and not math.isfinite(before) else 0.0),
                    "harmed": harmed,
                    "infinite": kept and not math.isfinite(after),
                    "chosen": (
                        cal.harm_estimates.get("method", "") if method == "auto" and kept else ""
                    ),
                    "seconds": time.perf_counter() - t0,
                }
            )
    log(f"  {task:14} {model:14} seed {seed} K={k}: done")


def summarise(rows: list[dict[str, Any]]) -> str:
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[(r["privacy"], r["method"])].append(r)
    lines = [
        f"{'privacy':<18}{'method':<12}{'runs':>5}{'kept':>6}{'harmed':>8}{'inf':>5}"
        f"{'median change kept':>20}{'worst kept':>12}"
    ]
    for (pname, method), rs in sorted(groups.items()):
        kept = [r for r in rs if r["kept"]]
        finite = [r["relative_change"] for r in kept if math.isfinite(r["relative_change"])]
        med = f"{100 * float(np.median(finite)):+.1f}%" if finite else "-"
        worst = f"{100 * max(finite):+.1f}%" if finite else "-"
        lines.append(
            f"{pname:<18}{method:<12}{len(rs):>5}{len(kept):>6}"
            f"{sum(r['harmed'] for r in rs):>8}{sum(r['infinite'] for r in rs):>5}"
            f"{med:>20}{worst:>12}"
        )
    kept = [r for r in rows if r["kept"]]
    harmed = sum(r["harmed"] for r in rows)
    cases = {(r["task"], r["model"], r["privacy"], r["seed"]) for r in rows}
    lines.append(
        f"\n{len(cases)} cases (task, model, privacy, seed), {len(rows)} calibrations, "
        f"{len(kept)} maps kept; held-out NLL worse by more than {100 * HARM:.0f}% in "
        f"{harmed} of {len(kept)} kept maps ({100 * harmed / max(len(kept), 1):.2f}%); "
        f"infinite in {sum(r['infinite'] for r in rows)}"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 seed, the four smaller tasks")
    parser.add_argument("--seeds", type=int, default=None, help="seeds per (task, model)")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument(
        "--methods", nargs="*", default=None, help="only these methods (default: all)"
    )
    args = parser.parse_args()
    if args.methods:
        global BINARY_METHODS, SCALING_METHODS, MULTICLASS_METHODS
        keep = set(args.methods)
        BINARY_METHODS = tuple(m for m in BINARY_METHODS if m in keep)
        SCALING_METHODS = tuple(m for m in SCALING_METHODS if m in keep)
        MULTICLASS_METHODS = tuple(m for m in MULTICLASS_METHODS if m in keep)
    seeds = args.seeds if args.seeds is not None else (1 if args.quick else 3)
    tasks = (
        ["breast_cancer", "digits-binary", "anes96", "fair"]
        if args.quick
        else ["breast_cancer", "digits-binary", "randhie", "fair", "anes96", "digits"]
    )
    t0 = time.perf_counter()
    rows: list[dict[str, Any]] = []
    for task in tasks:
        for model in MODELS:
            for seed in range(seeds):
                run_case(task, model, seed, rows, print)
    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / "results.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print()
    print(summarise(rows))
    print(f"\nwrote {args.out / 'results.csv'}; total {time.perf_counter() - t0:.0f}s")


if __name__ == "__main__":
    main()
