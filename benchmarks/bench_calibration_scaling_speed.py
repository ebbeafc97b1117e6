"""Speed and gain of the multiclass scaling calibrators at 100K rows and 10K clients (issue 14).

Data (deterministic, seed 0): 100,000 examples of 10 classes whose logits are
``SHARPEN`` times too confident (true class probabilities softmax(z), the model
reports softmax(SHARPEN·z)); 10,000 clients of about 10 examples each;
30 % of the clients are held out. Each method calibrates with the README's
user-level DP settings (ε = 3, δ = 1e-5, C = 0.5, T = 12, q = 0.3) and with
secure aggregation (T = 12, q = 0.3), and the script prints the wall time and
the held-out top-label ECE before and after (with its standard error).

Targets (issue 14): FedCal (federated L-BFGS, the default) within 3× of the
slowest scaling method and no worse than uncalibrated; the scaling methods
keep their gain (ECE ≤ 0.01) in ≤ 20 s. The ratios are to the slowest scaling
method measured in the same run. The README's binary ``fedeval calibrate``
command at the same size is ``bench_calibration_cli_100k.py``. Issue 28: every
method under user-level DP within 3× its time under secure aggregation (the last
line of the output).

Run: ``python benchmarks/bench_calibration_scaling_speed.py [--quick]``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from fedeval.calibration.federated import calibrate_multiclass
from fedeval.data import Federation
from fedeval.data.partition import split_clients
from fedeval.metrics.calibration_error import calibration_summary
from fedeval.privacy.models import SecureAggregation, UserLevelDP

SHARPEN = 1.6
METHODS = ("temperature", "vector", "matrix", "op-vector", "fedcal")


def task(n: int, n_clients: int, seed: int = 0) -> tuple[Federation, Federation]:
    rng = np.random.default_rng(seed)
    c = 10
    z = rng.normal(scale=2.0, size=(n, c))
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    y = (p.cumsum(axis=1) > rng.random((n, 1))).argmax(axis=1)
    # Clients of ~10 examples each (Dirichlet label skew cannot fill 10K clients
    # from 100K rows: some would be empty).
    fed = Federation.from_arrays(
        SHARPEN * z, y, clients=rng.integers(0, n_clients, n), kind="logits"
    )
    return split_clients(fed, 0.3, rng=seed)


def softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="10K rows, 1K clients")
    args = ap.parse_args()
    n, k = (10_000, 1_000) if args.quick else (100_000, 10_000)
    train, test = task(n, k)
    before = calibration_summary(softmax(test.scores), test.labels)
    print(
        f"{n} rows, {train.n_clients + test.n_clients} clients; held-out top-label ECE before {before['ece_top']:.4f}"
    )
    print(
        f"{'privacy':>8} {'method':>12} {'seconds':>8} {'ECE after':>18} {'NLL after':>8} applied"
    )
    seconds: dict[str, dict[str, float]] = {}
    for name, privacy in (
        ("sa", SecureAggregation()),
        ("userdp", UserLevelDP(3.0, 1e-5, clip=0.5)),
    ):
        times = seconds.setdefault(name, {})
        for method in METHODS:
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                cal = calibrate_multiclass(
                    train, privacy, method=method, rounds=12, sampling_rate=0.3, rng=0
                )
            times[method] = time.perf_counter() - t0
            after = calibration_summary(cal.predict_proba(test.scores), test.labels)
            applied = cal.procedure.get("applied", True)
            print(
                f"{name:>8} {method:>12} {times[method]:8.2f} "
                f"{after['ece_top']:.4f} ± {after['ece_top_se']:.4f} {after['nll']:8.4f} {applied}"
            )
        slowest = max(times[m] for m in METHODS if m != "fedcal")
        print(f"{name:>8} fedcal / slowest scaling method = {times['fedcal'] / slowest:.2f}")
    # Issue 28: user-level DP within 3x the SA time, method by method. The DP rows run
    # after the SA ones, so the first (temperature) pays dp-accounting's import and a
    # fresh noise-multiplier search; the later ones find it cached.
    ratios = {m: seconds["userdp"][m] / seconds["sa"][m] for m in METHODS}
    print(
        "userdp / sa: "
        + ", ".join(f"{m} {r:.2f}x" for m, r in ratios.items())
        + f" (target ≤ 3× each: {'PASS' if max(ratios.values()) <= 3 else 'FAIL'})"
    )


if __name__ == "__main__":
    main()
