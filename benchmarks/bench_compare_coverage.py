"""Benchmark (issue 25): coverage of the paired comparison, its SE against two unpaired evaluations.

Population: y ~ Bernoulli(0.4); z | y ~ N(1.2·y, 1); model A scores σ(z), model
B scores σ(z + e), e ~ N(0, 0.45²) (B = A + noise). Binormal, so the
population AUCs are Φ(1.2/√2) = 0.8019 and Φ(1.2/√(2·(1 + 0.45²))) = 0.7805:
ΔAUC = 0.0214 exactly.

For every seed a fresh data set of ``--n`` examples (one per client) is drawn
from that population, then, under DistDP ε = 1 and LDP ε = 5:

* ``fe.compare(fed_a, fed_b, privacy)``: does the 95 % interval from the total
  SE cover the population ΔAUC, and the one from the privacy SE alone the exact
  pooled ΔAUC of the seed's data (scikit-learn)? Target 93–98 % each;
* the total SE of the difference from two independent ``fe.evaluate`` calls at
  ε/2 each (privacy and DeLong sampling SEs, unpaired: what a user would
  otherwise run), and the ratio paired/unpaired. Target ≤ 0.7;
* non-inferiority at the margin: ``fe.compare(fed_b, fed_a)`` tests "B is
  non-inferior to A by the margin 0.0214", which is exactly the population's
  difference (H0 true, at its boundary): the rejection rate is the test's type-I
  error. Target ≤ 5 % (printed with its 95 % Clopper–Pearson upper bound).

Usage: python benchmarks/bench_compare_coverage.py [--seeds 300] [--n 50000] [--first-seed 0]
[--save per_seed.npz] [--quick]
(--quick: 20 seeds of 20,000 examples, to check the script.)
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np
from scipy.stats import beta, norm
from sklearn.metrics import roc_auc_score

import fedeval as fe

MU, TAU, BASE_RATE = 1.2, 0.45, 0.4
AUC_A = float(norm.cdf(MU / math.sqrt(2)))
AUC_B = float(norm.cdf(MU / math.sqrt(2 * (1 + TAU**2))))
DELTA = AUC_A - AUC_B


def draw(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(100_000 + seed)
    y = (rng.random(n) < BASE_RATE).astype(np.int64)
    z = rng.normal(MU * y, 1.0)
    return 1 / (1 + np.exp(-z)), 1 / (1 + np.exp(-(z + rng.normal(0, TAU, n)))), y


def upper_cp(k: int, n: int) -> float:
    return 1.0 if k == n else float(beta.ppf(0.975, k + 1, n - k))


def cp(hits: list[float]) -> str:
    """Coverage with its 95 % Clopper–Pearson interval, e.g. ``0.953 [0.928, 0.971]``."""
    k, n = int(sum(hits)), len(hits)
    lo = 0.0 if k == 0 else float(beta.ppf(0.025, k, n - k + 1))
    return f"{k / n:.3f} [{lo:.3f}, {upper_cp(k, n):.3f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=300)
    ap.add_argument("--n", type=int, default=50_000)
    ap.add_argument("--first-seed", type=int, default=0, help="seeds first … first + seeds - 1")
    ap.add_argument("--save", help="write every seed's values to this .npz")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.seeds, args.n = 20, 20_000
    warnings.simplefilter("ignore")
    print(f"population ΔAUC = {DELTA:.4f} (A {AUC_A:.4f}, B {AUC_B:.4f}); n = {args.n:,}, "
          f"{args.seeds} seeds, one example per client")  # fmt: skip
    models = {"DistDP ε=1": fe.DistributedDP(epsilon=1.0), "LDP ε=5": fe.LocalDP(epsilon=5.0)}
    rows: dict[str, dict[str, list[float]]] = {k: {} for k in models}
    t0 = time.perf_counter()
    for i, seed in enumerate(range(args.first_seed, args.first_seed + args.seeds)):
        a, b, y = draw(args.n, seed)
        pooled = roc_auc_score(y, a) - roc_auc_score(y, b)
        fa, fb = fe.Federation.from_arrays(a, y), fe.Federation.from_arrays(b, y)
        for name, privacy in models.items():
            r = rows[name]
            c = fe.compare(fa, fb, privacy, rng=seed)
            d = c.roc_auc
            ea = fe.evaluate(fa, privacy.scaled(0.5), rng=10_000 + seed)
            eb = fe.evaluate(fb, privacy.scaled(0.5), rng=20_000 + seed)
            unpaired_priv = math.hypot(ea.roc_auc_se, eb.roc_auc_se)
            unpaired = math.hypot(
                unpaired_priv, math.hypot(ea.roc_auc_sampling_se, eb.roc_auc_sampling_se)
            )
            u_est = ea.roc_auc - eb.roc_auc
            rev = fe.compare(fb, fa, privacy, rng=30_000 + seed)
            ni = rev.noninferiority(DELTA)
            for key, value in (
                ("cover_total", abs(d.estimate - DELTA) <= 1.96 * d.se),
                ("cover_privacy", abs(d.estimate - pooled) <= 1.96 * d.privacy_se),
                ("z_total", (d.estimate - DELTA) / d.se),
                ("z_privacy", (d.estimate - pooled) / d.privacy_se),
                ("se_total", d.se),
                ("se_privacy", d.privacy_se),
                ("se_sampling", d.sampling_se),
                ("se_unpaired", unpaired),
                ("ratio", d.se / unpaired),
                ("cover_unpaired", abs(u_est - DELTA) <= 1.96 * unpaired),
                ("reject_at_margin", ni.noninferior),
                ("err", d.estimate - DELTA),
                ("err_unpaired", u_est - DELTA),
            ):
                r.setdefault(key, []).append(float(value))
        if (i + 1) % 50 == 0:
            print(f"  … {i + 1} seeds, {time.perf_counter() - t0:.0f} s", flush=True)
    print()
    print("| model | cover, total SE vs population ΔAUC | cover, privacy SE vs pooled ΔAUC | "
          "z SD (total / privacy) | mean SE: total (privacy, sampling) | unpaired SE (2 × ε/2) | "
          "ratio paired/unpaired (mean, max) | RMSE paired / unpaired | NI type-I at the margin "
          "(95 % upper) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for name, r in rows.items():
        k = int(sum(r["reject_at_margin"]))
        n = len(r["reject_at_margin"])
        print(
            f"| {name} | {cp(r['cover_total'])} | {cp(r['cover_privacy'])} | "
            f"{np.std(r['z_total']):.2f} / {np.std(r['z_privacy']):.2f} | "
            f"{np.mean(r['se_total']):.2e} ({np.mean(r['se_privacy']):.2e}, "
            f"{np.mean(r['se_sampling']):.2e}) | {np.mean(r['se_unpaired']):.2e} | "
            f"{np.mean(r['ratio']):.2f}, {np.max(r['ratio']):.2f} | "
            f"{np.sqrt(np.mean(np.square(r['err']))):.2e} / "
            f"{np.sqrt(np.mean(np.square(r['err_unpaired']))):.2e} | "
            f"{k}/{n} = {k / n:.3f} ({upper_cp(k, n):.3f}) |"
        )
    print(f"\n({time.perf_counter() - t0:.0f} s; unpaired intervals covered "
          + ", ".join(f"{name} {np.mean(r['cover_unpaired']):.3f}" for name, r in rows.items())
          + ")")  # fmt: skip
    if args.save:
        np.savez(args.save, **{f"{name}/{key}": np.array(v) for name, r in rows.items()
                               for key, v in r.items()})  # fmt: skip


if __name__ == "__main__":
    main()
