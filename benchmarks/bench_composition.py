"""Composition of a program's releases: the filter's ε against basic composition and PLD.

Prints, for programs of T Gaussian-type releases at (ε, δ) = (1, 1e-6) each
(discrete Gaussian of ρ = the zCDP of one such release), the ε that a
``fe.Context`` (its ledger's tight filter) states at δ = T·1e-6 and at
δ = 1e-6, next to basic composition (T·1 at δ = T·1e-6) and the optimal
non-adaptive composition by dp-accounting's PLD (a lower bound no valid
accountant can beat). Also user-level DP rounds: the PLD versus RDP ε of one
T-round release at the calibrated noise.

Run: ``.venv/bin/python benchmarks/bench_composition.py``
"""

from __future__ import annotations

import argparse
import math
import os

from scipy.optimize import brentq

import fedeval as fe
from fedeval.privacy.accounting import (
    _pld_rounds_epsilon,
    _rdp_rounds_epsilon,
    calibrate_noise_multiplier,
    zcdp_to_approx_dp,
)
from fedeval.privacy.ledger import LedgerEntry


def program_epsilon(t: int, rho: float, delta_total: float) -> tuple[float, str]:
    ledger = fe.BudgetLedger(math.inf, delta_total, composition="tight")
    ledger.charge_all([LedgerEntry(f"week {i}", 1.0, 1e-6, "example", rho=rho) for i in range(t)])
    r = ledger.reading()
    return r.epsilon, r.track


def pld_epsilon(t: int, rho: float, delta: float) -> float:
    from dp_accounting import GaussianDpEvent, SelfComposedDpEvent
    from dp_accounting.pld import PLDAccountant

    acc = PLDAccountant(value_discretization_interval=1e-4)
    acc.compose(SelfComposedDpEvent(GaussianDpEvent(1.0 / math.sqrt(2.0 * rho)), t))
    return float(acc.get_epsilon(delta))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args()
    rho = brentq(lambda r: zcdp_to_approx_dp(r, 1e-6) - 1.0, 1e-6, 1.0)
    print(f"one release at (1, 1e-6): ρ = {rho:.5f}-zCDP")
    print("| T | δ | Context (track) | basic | PLD (optimal, non-adaptive) | Context / basic |")
    print("|---|---|---|---|---|---|")
    for t in (1, 4, 12, 52):
        for delta in sorted({1e-6 * t, 1e-6}):
            eps, track = program_epsilon(t, rho, delta)
            fits = delta >= t * 1e-6  # basic composition needs δ ≥ Σ δ_i
            basic = f"{t:g}" if fits else "n/a (δ < Σδᵢ)"
            ratio = f"{eps / t:.3f}" if fits else "—"
            print(
                f"| {t} | {delta:.2g} | {eps:.3f} ({track}) | {basic} | "
                f"{pld_epsilon(t, rho, delta):.3f} | {ratio} |"
            )
    print()
    print("User-level DP rounds (one release of T rounds, q = sampling rate), δ = 1e-5:")
    print("| T | q | z (calibrated) | PLD ε | RDP ε | PLD / RDP |")
    print("|---|---|---|---|---|---|")
    for t, q in ((12, 0.1), (50, 0.05), (100, 0.01), (20, 1.0)):
        z = calibrate_noise_multiplier(1.0, 1e-5, t, q)
        pld = _pld_rounds_epsilon(z, t, q, 1e-5)
        rdp = _rdp_rounds_epsilon(z, t, q, 1e-5, None)
        print(f"| {t} | {q:g} | {z:.4f} | {pld:.3f} | {rdp:.3f} | {pld / rdp:.3f} |")
    print(f"\nload average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
