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

Measured (2026-11-27, ``PYTHONPATH=src python benchmarks/bench_compare_coverage.py
--seeds 1000 --n 50000 [--first-seed 1000]``, 2 cores shared with a test run and
another benchmark, load average 3.2-4.0 for seeds 0-999 (240 s), 1.3-1.9 for
seeds 1000-1999 (143 s)). Coverage and type-I error with their 95 %
Clopper–Pearson intervals; z SD = SD of (estimate − target)/SE, ≈ ±0.015:

| model | seeds | cover, total SE vs population | cover, privacy SE vs pooled | z SD (total / privacy) | ratio paired/unpaired (mean, max) | RMSE paired / unpaired | NI type-I at the margin |
|---|---|---|---|---|---|---|---|
| DistDP ε=1 | 0-999 | 0.955 [0.940, 0.967] | 0.948 [0.932, 0.961] | 0.94 / 0.99 | 0.57, 0.63 | 1.68e-03 / 1.56e-03 | 0.032 [0.022, 0.045] |
| DistDP ε=1 | 1000-1999 | 0.952 [0.937, 0.964] | 0.941 [0.925, 0.955] | 0.99 / 1.00 | 0.57, 0.63 | 1.77e-03 / 1.48e-03 | 0.043 [0.031, 0.057] |
| DistDP ε=1 | all 2000 | 0.954 [0.943, 0.962] | 0.945 [0.934, 0.954] | 0.96 / 1.00 | 0.57, 0.63 | 1.73e-03 / 1.52e-03 | 0.037 [0.030, 0.047] |
| LDP ε=5 | 0-999 | 0.979 [0.968, 0.987] | 0.978 [0.967, 0.986] | 0.87 / 0.87 | 0.63, 0.80 | 9.73e-03 / 1.57e-02 | 0.024 [0.015, 0.036] |
| LDP ε=5 | 1000-1999 | 0.956 [0.941, 0.968] | 0.957 [0.943, 0.969] | 0.94 / 0.94 | 0.63, 0.82 | 1.05e-02 / 1.56e-02 | 0.048 [0.036, 0.063] |
| LDP ε=5 | all 2000 | 0.968 [0.959, 0.975] | 0.968 [0.959, 0.975] | 0.91 / 0.91 | 0.63, 0.83 | 1.01e-02 / 1.57e-02 | 0.036 [0.028, 0.045] |

Every target holds: coverage 93-98 % (each interval inside or straddling the
band, the pooled ones inside it), mean ratio ≤ 0.7, type-I ≤ 5 % (the
pooled upper bounds 4.7 % and 4.5 %; the test is one-sided at level 0.95).
The earlier reading LDP 0.983 (seeds 0-299) is the high end of seeds 0-999
(0.979 there), not a miss: fresh seeds 1000-1999 give 0.956.

What the table does show, measured on seed 0's data over 300 LDP releases:
the LDP privacy SE is conservative by about 10 % (z SD 0.91 ± 0.014), from
two known parts, neither a miss. (1) The delta method's variance, a
quadratic form in the gradient, is computed at each release's own noisy
gradient, and E[ĝᵀΣĝ] = ḡᵀΣḡ + E[(ĝ − ḡ)ᵀΣ(ĝ − ḡ)]: model A's AUC spread
7.09e-3, the mean gradient's SE 7.09e-3, the per-release SE 7.56e-3 (the
gradient-noise term 2.7e-3 as an SE). The linear-query variances themselves are
exact (fixed weights, 300 releases: empirical/closed form 0.99, 1.03 and 0.94,
99 % χ² band [0.80, 1.22]). (2) The shrinkage-bias allowance (bias_A −
bias_B)² carries the noise of its estimate too (RMS 2.1e-3). Under DistDP
the SE is right (z SD 0.96-1.00). Not changed: the coverage is in the band,
and removing (1) would need a second-order correction that these tasks do
not ask for. Also measured: under DistDP the ΔAUC of two evaluations at ε/2
is *more accurate* than the paired release's (RMSE 1.52e-03 against 1.73e-03):
the pair grid's weight 4 of 24 units leaves each level ε/24, not ε/20, so
the paired privacy SE per model is 1.1e-3 against 0.9e-3. The ratio target
passes because the unpaired SE ignores the pairing (its intervals cover in
100 % of seeds); the paired release's gain is a valid, 0.57× narrower
interval, not a smaller error. Under LDP the paired release is more accurate
(1.01e-02 against 1.57e-02): each client reports one part there.

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
