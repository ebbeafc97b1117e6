"""Reproduce Figures 2-6 of Barczewski, Mawass & Ramon (2025) on generated data.

* Figure 2: smoothing error ratio ‖F - F́‖²/‖F - F̂‖² vs ε on X_pois(λ = 3), p = 1, 2.
* Figure 3: the same ratio vs λ at ε = 1.
* Figure 4: MSE of F̂ and of the inverse ECDF (raw F̂⁻¹ and L2-smoothed F́⁻¹, by
  Algorithm 1) at uniformly drawn points vs ε on X_pois(3). Inverse errors are
  in units of the domain length (grid index / N).
* Figure 5: L1 distance between the true and the smoothed DP ROC curve vs ε, for
  a logistic regression on a generated "Bank-like" data set (45,211 examples,
  11.7 % positives, 16 features; the real Bank data is not shipped).
* Figure 6: relative MSE E[(Ĥ - H)²]/H² of the DP Hosmer-Lemeshow statistic
  (Algorithm 2, Q = 10, L = 10) vs ε on the same model.

Every release goes through the one pipeline: ``private_ecdf(..., epsilon=ε)`` is
``DistributedDP(ε, neighbouring="replace")`` (Theorem 1), with discrete Laplace
noise on the tree nodes (Pólya shares summing to discrete Laplace) where the
paper draws continuous Laplace; its variance 2α/(1-α)², α = e^{-ε/(L+1)}, is
slightly below the paper's 2((L+1)/ε)², so the curves are comparable. The ROC
curve uses scikit-learn's rule "score ≥ t" and the Hosmer–Lemeshow groups are
left-closed, [t_{q-1}, t_q).

X_pois(λ): for every i in [N] the number of examples with value i is Pois(λ);
N = 2^15 as in the paper (``--quick``: N = 2^10 and fewer runs/ε values).
The paper averages 100 runs; the default here is 10 (``--runs``).

Writes ``benchmarks/out/ecdf/fig{2..6}_*.csv`` and ``.png``.

Run: ``.venv/bin/python benchmarks/bench_ecdf_figures.py [--quick] [--runs R]``.
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from numpy.typing import NDArray
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_curve

from fedeval.ecdf import (
    dp_roc_curve,
    empirical_cdf,
    equal_width_grid,
    private_ecdf,
    roc_l1_distance,
)
from fedeval.metrics.hosmer_lemeshow import hosmer_lemeshow

OUT = Path(__file__).parent / "out" / "ecdf"


def x_pois(n_points: int, lam: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """Values 0..N-1, value i repeated Pois(λ) times (§6.2)."""
    return np.repeat(np.arange(n_points, dtype=np.float64), rng.poisson(lam, n_points))


def write(name: str, header: list[str], rows: list[list[float]]) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / f"{name}.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)


def smoothing_ratio(
    values: NDArray[np.float64], n_points: int, eps: float, seed: int
) -> tuple[float, float]:
    grid = np.arange(n_points, dtype=np.float64)
    exact = empirical_cdf(values, grid).values
    raw = private_ecdf(values, grid, epsilon=eps, rng=seed)
    base = float(np.sum((raw.values - exact) ** 2))
    out = []
    for norm in (1, 2):
        sm = raw.smoothed(norm)  # type: ignore[arg-type]
        out.append(float(np.sum((sm.values - exact) ** 2)) / base)
    return out[0], out[1]


def fig2(n_points: int, eps_list: list[float], runs: int) -> None:
    rows = []
    for eps in eps_list:
        r = np.array(
            [
                smoothing_ratio(
                    x_pois(n_points, 3.0, np.random.default_rng(s)), n_points, eps, 10_000 + s
                )
                for s in range(runs)
            ]
        )
        rows.append([eps, *r.mean(axis=0), *(r.std(axis=0, ddof=1) / np.sqrt(runs))])
        print(f"fig2 eps={eps:<6g} ratio L1={rows[-1][1]:.3f} L2={rows[-1][2]:.3f}", flush=True)
    write("fig2_smoothing_vs_epsilon", ["epsilon", "ratio_l1", "ratio_l2", "se_l1", "se_l2"], rows)
    a = np.array(rows)
    plt.figure(figsize=(5, 3.5))
    plt.errorbar(a[:, 0], a[:, 1], a[:, 3], marker="o", label="p = 1")
    plt.errorbar(a[:, 0], a[:, 2], a[:, 4], marker="s", label="p = 2")
    plt.axhline(1.0, color="grey", lw=0.8)
    plt.xscale("log")
    plt.xlabel("ε")
    plt.ylabel("‖F - F́‖² / ‖F - F̂‖²")
    plt.title(f"Fig. 2: smoothing, λ = 3, N = {n_points}")
    plt.legend()
    plt.tight_layout()
    plt.savefig(OUT / "fig2_smoothing_vs_epsilon.png", dpi=120)
    plt.close()


def fig3(n_points: int, lam_list: list[float], runs: int) -> None:
    rows = []
    for lam in lam_list:
        r = np.array(
            [
                smoothing_ratio(
                    x_pois(n_points, lam, np.random.default_rng(s)), n_points, 1.0, 20_000 + s
                )
                for s in range(runs)
            ]
        )
        rows.append([lam, *r.mean(axis=0), *(r.std(axis=0, ddof=1) / np.sqrt(runs))])
        print(f"fig3 lam={lam:<6g} ratio L1={rows[-1][1]:.3f} L2={rows[-1][2]:.3f}", flush=True)
    write("fig3_smoothing_vs_lambda", ["lambda", "ratio_l1", "ratio_l2", "se_l1", "se_l2"], rows)
    a = np.array(rows)
    plt.figure(figsize=(5, 3.5))
    plt.errorbar(a[:, 0], a[:, 1], a[:, 3], marker="o", label="p = 1")
    plt.errorbar(a[:, 0], a[:, 2], a[:, 4], marker="s", label="p = 2")
    plt.axhline(1.0, color="grey", lw=0.8)
    plt.xscale("log")
    plt.xlabel("λ")
    plt.ylabel("‖F - F́‖² / ‖F - F̂‖²")
    plt.title(f"Fig. 3: smoothing, ε = 1, N = {n_points}")
    plt.legend()
    plt.tight_layout()
    plt.savefig(OUT / "fig3_smoothing_vs_lambda.png", dpi=120)
    plt.close()


def fig4(n_points: int, eps_list: list[float], runs: int, n_queries: int = 1000) -> None:
    rows = []
    grid = np.arange(n_points, dtype=np.float64)
    for eps in eps_list:
        errs = []
        for s in range(runs):
            rng = np.random.default_rng(30_000 + s)
            values = x_pois(n_points, 3.0, rng)
            exact = empirical_cdf(values, grid)
            raw = private_ecdf(values, grid, epsilon=eps, rng=rng)
            sm = raw.smoothed(2)
            t = rng.uniform(0, n_points - 1, n_queries)
            q = rng.uniform(0, 1, n_queries)
            true_inv = exact.inverse(q, precision=0.5)
            errs.append(
                [
                    float(np.mean((raw(t) - exact(t)) ** 2)),
                    float(np.mean(((raw.inverse(q, precision=0.5) - true_inv) / n_points) ** 2)),
                    float(np.mean(((sm.inverse(q, precision=0.5) - true_inv) / n_points) ** 2)),
                ]
            )
        m = np.mean(errs, axis=0)
        rows.append([eps, *m])
        print(
            f"fig4 eps={eps:<6g} mse F={m[0]:.3g} inv raw={m[1]:.3g} inv smooth={m[2]:.3g}",
            flush=True,
        )
    write(
        "fig4_inverse_ecdf",
        ["epsilon", "mse_ecdf", "mse_inverse_raw", "mse_inverse_smoothed"],
        rows,
    )
    a = np.array(rows)
    plt.figure(figsize=(5, 3.5))
    plt.plot(a[:, 0], a[:, 1], "o-", label="F̂")
    plt.plot(a[:, 0], a[:, 2], "s-", label="F̂⁻¹ (raw)")
    plt.plot(a[:, 0], a[:, 3], "^-", label="F́⁻¹ (L2-smoothed)")
    plt.xscale("log")
    plt.yscale("log")
    plt.xlabel("ε")
    plt.ylabel("MSE")
    plt.title(f"Fig. 4: ECDF and inverse, λ = 3, N = {n_points}")
    plt.legend()
    plt.tight_layout()
    plt.savefig(OUT / "fig4_inverse_ecdf.png", dpi=120)
    plt.close()


def bank_like_model(seed: int = 0) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Predicted probabilities of a logistic regression on Bank-sized generated data."""
    x, y = make_classification(
        n_samples=45_211,
        n_features=16,
        n_informative=6,
        weights=[0.883],
        flip_y=0.03,
        class_sep=0.8,
        random_state=seed,
    )
    model = LogisticRegression(max_iter=1000).fit(x, y)
    return model.predict_proba(x)[:, 1], y.astype(np.int64)


def fig5(eps_list: list[float], runs: int, n_grid: int) -> None:
    probs, y = bank_like_model()
    fpr, tpr, _ = roc_curve(y, probs)
    grid = equal_width_grid(0.0, 1.0, n_grid)
    rows = []
    for eps in eps_list:
        errs = []
        for s in range(runs):
            r = []
            for norm in (1, 2):
                c = dp_roc_curve(probs, y, grid, epsilon=eps, rng=40_000 + s, smoothing=norm)  # type: ignore[arg-type]
                r.append(roc_l1_distance(fpr, tpr, c.fpr, c.tpr))
            errs.append(r)
        m = np.mean(errs, axis=0)
        rows.append([eps, *m])
        print(f"fig5 eps={eps:<6g} ROC L1 error p=1 {m[0]:.4f} p=2 {m[1]:.4f}", flush=True)
    write("fig5_roc_error", ["epsilon", "l1_error_p1", "l1_error_p2"], rows)
    a = np.array(rows)
    plt.figure(figsize=(5, 3.5))
    plt.plot(a[:, 0], a[:, 1], "o-", label="p = 1")
    plt.plot(a[:, 0], a[:, 2], "s-", label="p = 2")
    plt.xscale("log")
    plt.yscale("log")
    plt.xlabel("ε")
    plt.ylabel("∫|TPR - TPR_DP| dFPR")
    plt.title(f"Fig. 5: smoothed DP ROC, N = {n_grid}")
    plt.legend()
    plt.tight_layout()
    plt.savefig(OUT / "fig5_roc_error.png", dpi=120)
    plt.close()


def fig6(eps_list: list[float], runs: int) -> None:
    probs, y = bank_like_model()
    h = hosmer_lemeshow(probs, y).statistic
    rows = []
    for eps in eps_list:
        est = np.array(
            [hosmer_lemeshow(probs, y, epsilon=eps, rng=50_000 + s).statistic for s in range(runs)]
        )
        rel = float(np.mean((est - h) ** 2) / h**2)
        rows.append([eps, rel, float(np.median(est)), h])
        print(
            f"fig6 eps={eps:<6g} HL relative MSE {rel:.4g} (H = {h:.3f}, median Ĥ = {rows[-1][2]:.3f})",
            flush=True,
        )
    write(
        "fig6_hosmer_lemeshow",
        ["epsilon", "relative_mse", "median_estimate", "true_statistic"],
        rows,
    )
    a = np.array(rows)
    plt.figure(figsize=(5, 3.5))
    plt.plot(a[:, 0], a[:, 1], "o-")
    plt.xscale("log")
    plt.yscale("log")
    plt.xlabel("ε")
    plt.ylabel("E[(Ĥ - H)²] / H²")
    plt.title("Fig. 6: DP Hosmer-Lemeshow (Q = 10, L = 10)")
    plt.tight_layout()
    plt.savefig(OUT / "fig6_hosmer_lemeshow.png", dpi=120)
    plt.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N = 2^10, 3 runs, fewer ε")
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--only", type=str, default="23456", help="figures to run, e.g. 245")
    args = parser.parse_args()
    if args.quick:
        n_points, runs = 2**10, args.runs or 3
        eps_list = [0.1, 0.5, 2.0, 10.0]
        lam_list = [0.3, 3.0, 30.0]
    else:
        n_points, runs = 2**15, args.runs or 10
        eps_list = [0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0]
        lam_list = [0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0]
    start = time.perf_counter()
    if "2" in args.only:
        fig2(n_points, eps_list, runs)
    if "3" in args.only:
        fig3(n_points, lam_list, runs)
    if "4" in args.only:
        fig4(n_points, eps_list, runs)
    if "5" in args.only:
        fig5([0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0], runs, 256 if args.quick else 1024)
    if "6" in args.only:
        fig6([0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0], max(runs, 10) if not args.quick else 5)
    print(f"total {time.perf_counter() - start:.1f} s; outputs in {OUT}")


if __name__ == "__main__":
    main()
