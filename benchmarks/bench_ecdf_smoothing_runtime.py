"""Figure 7 of Barczewski, Mawass & Ramon (2025): runtime of the smoothing problem (eq. 3) vs N.

Solves eq. (3) on B = all N grid points of a private ECDF of X_pois(3) (ε = 1,
replacement neighbours, discrete Laplace node noise: the library's one tree
mechanism, where the paper uses continuous Laplace) for N = 2^8 .. 2^15
(``--quick``: up to 2^12), with every solver tried:

* L1 (LP): HiGHS through ``scipy.optimize.linprog`` -- "highs" (automatic
  choice, fedeval's default), "highs-ds" (dual simplex), "highs-ipm"
  (interior point) -- and Clarabel on the epigraph form.
* L2 (QP): Clarabel (fedeval's default), and a first-order alternative: the
  dual problem min_{λ ≥ 0} ½‖Gᵀλ‖² - hᵀλ by L-BFGS-B (scipy), ν = Gᵀλ, whose
  objective gap to Clarabel is reported.

The paper used cvxopt (not installed here, so not timed). Times are the best of
``--repeats`` runs. Writes ``benchmarks/out/ecdf/fig7_smoothing_runtime.{csv,png}``.

Run: ``.venv/bin/python benchmarks/bench_ecdf_smoothing_runtime.py [--quick]``.
"""

from __future__ import annotations

import argparse
import csv
import time
from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from numpy.typing import NDArray
from scipy.optimize import minimize

from fedeval.ecdf import private_ecdf, smoothing_problem
from fedeval.postprocess.smoothing import SmoothingProblem, _solve_clarabel, _solve_highs_l1

OUT = Path(__file__).parent / "out" / "ecdf"


def dual_lbfgsb(prob: SmoothingProblem) -> NDArray[np.float64]:
    """L2 smoothing through its bound-constrained dual (projected quasi-Newton)."""
    g = prob.constraints
    gt = g.T.tocsr()
    h = prob.bounds

    def fun(lam: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        nu = gt @ lam
        return 0.5 * float(nu @ nu) - float(h @ lam), np.asarray(g @ nu - h)

    res = minimize(
        fun,
        np.zeros(g.shape[0]),
        jac=True,
        method="L-BFGS-B",
        bounds=[(0.0, None)] * g.shape[0],
        options={"maxiter": 20_000, "ftol": 1e-15, "gtol": 1e-8},
    )
    return np.asarray(gt @ res.x, dtype=np.float64)


SOLVERS: dict[str, tuple[int, Callable[[SmoothingProblem], NDArray[np.float64]]]] = {
    "L1 HiGHS (default)": (1, lambda p: _solve_highs_l1(p, "highs")),
    "L1 HiGHS dual simplex": (1, lambda p: _solve_highs_l1(p, "highs-ds")),
    "L1 HiGHS IPM": (1, lambda p: _solve_highs_l1(p, "highs-ipm")),
    "L1 Clarabel": (1, lambda p: _solve_clarabel(p, 1)),
    "L2 Clarabel (default)": (2, lambda p: _solve_clarabel(p, 2)),
    "L2 dual L-BFGS-B": (2, dual_lbfgsb),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-log2n", type=int, default=None)
    args = parser.parse_args()
    top = args.max_log2n or (12 if args.quick else 15)
    sizes = [2**k for k in range(8, top + 1)]
    rows: list[list[object]] = []
    for n in sizes:
        rng = np.random.default_rng(n)
        values = np.repeat(np.arange(n, dtype=float), rng.poisson(3.0, n))
        raw = private_ecdf(values, np.arange(n, dtype=float), epsilon=1.0, rng=rng)
        prob, _ = smoothing_problem(raw)
        ref: dict[int, float] = {}
        for name, (norm, solve) in SOLVERS.items():
            best = np.inf
            nu = np.zeros(prob.n_variables)
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                nu = solve(prob)
                best = min(best, time.perf_counter() - t0)
            obj = float(np.abs(nu).sum()) if norm == 1 else float(nu @ nu)
            ref.setdefault(norm, obj)
            gap = obj / ref[norm] - 1.0
            viol = float(np.maximum(prob.bounds - prob.constraints @ nu, 0).max())
            rows.append([n, name, best, obj, gap, viol])
            print(
                f"N={n:<6d} {name:<24s} {best * 1e3:9.1f} ms  objective gap {gap:+.1e}  "
                f"max violation {viol:.1e}",
                flush=True,
            )
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / "fig7_smoothing_runtime.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(
            ["n_points", "solver", "seconds", "objective", "rel_gap_to_default", "max_violation"]
        )
        w.writerows(rows)
    plt.figure(figsize=(6, 4))
    for name in SOLVERS:
        pts = [(r[0], r[2]) for r in rows if r[1] == name]
        if pts:
            a = np.array(pts, dtype=float)
            plt.plot(a[:, 0], a[:, 1], "o-" if name.startswith("L1") else "s--", label=name)
    plt.xscale("log", base=2)
    plt.yscale("log")
    plt.xlabel("N")
    plt.ylabel(f"seconds (best of {args.repeats})")
    plt.title("Fig. 7: runtime of eq. (3)")
    plt.legend(fontsize=7)
    plt.tight_layout()
    plt.savefig(OUT / "fig7_smoothing_runtime.png", dpi=120)
    plt.close()


if __name__ == "__main__":
    main()
