"""Issue 26: the monitor's noise matches its closed forms (fixed seeds, 5-sigma tolerances).

* Window estimates: every coordinate of the estimate of periods a+1..b is the
  truth plus noise of variance ‖u‖²σ² (u the window's row weights, σ² one
  row's noise variance), and two windows' noises have covariance u_A·u_B σ²,
  the correlation :meth:`Monitor.drift` relies on. The sample variance of N
  independent coordinates lies within 5 standard errors of the closed form,
  SE² = (μ₄ − σ⁴)/N with μ₄ = 3σ⁴ + κ₄ Σ u_i⁴ (κ₄ the fourth cumulant of one
  row's discrete Laplace noise, twice a geometric's); the sample covariance
  within 5 standard errors √((σ_A² σ_B² + c²)/N) (normal approximation).
* The drift test's covariance: on fixed data (no sampling variation), over
  R runs, the sample covariance of the reference's and the window's AUCs lies
  within 5 standard errors (√((V_A V_B + C²)/R)) of the mean delta-method
  covariance :meth:`Monitor.drift` uses (negative: the two windows split one
  prefix). The standardised difference then spreads no more than 1 + 5/√(2R):
  the windows' own SEs are Evaluation's, which carry a bias allowance and a
  floor (measured: SD 0.87 for the tree under Pólya noise, 0.83 for the
  factorization under Skellam noise; ignoring the covariance gave 0.996 and
  0.925, right only because the two errors offset).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import fedeval as fe

pytestmark = pytest.mark.statistical


def _periods(t: int, n: int, seed: int = 11) -> list[fe.Federation]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(t):
        y = rng.integers(0, 2, n)
        s = 1 / (1 + np.exp(-(rng.normal(0, 1, n) + 0.9 * (2 * y - 1))))
        out.append(fe.Federation.from_arrays(s, y))
    return out


def _row_cumulants(mon: fe.Monitor) -> tuple[float, float]:
    """(variance, fourth cumulant) of one row's discrete Laplace noise, from its receipt."""
    l1 = float(mon.receipt().sensitivity["l1"])
    alpha = math.exp(-1.0 / l1)  # ε = 1
    p = 1 - alpha  # a geometric count of failures, success probability p
    var = 2 * alpha / p**2
    k4 = 2 * alpha * (6 - 6 * p + p**2) / p**4
    return var, k4


def test_window_estimates_have_the_closed_form_variance_and_covariance() -> None:
    t_total, reps = 8, 60
    feds = _periods(t_total, 300)
    exact = fe.monitor(
        fe.SecureAggregation(), horizon=t_total, examples_per_period=300, height=3,
        mechanism="tree",
    )  # fmt: skip
    for f in feds:
        exact.update(f)
    a, b = (0, 5), (5, 8)  # periods 1..5 and 6..8
    truth_a = exact._release.estimate(*a).values
    truth_b = exact._release.estimate(*b).values
    noise_a, noise_b = [], []
    for r in range(reps):
        mon = fe.monitor(
            fe.DistributedDP(epsilon=1.0), horizon=t_total, examples_per_period=300, height=3,
            mechanism="tree", rng=1000 + r,
        )  # fmt: skip
        for f in feds:
            mon.update(f)
        noise_a.append(mon._release.estimate(*a).values - truth_a)
        noise_b.append(mon._release.estimate(*b).values - truth_b)
    xa, xb = np.concatenate(noise_a), np.concatenate(noise_b)
    var, k4 = _row_cumulants(mon)
    ua, ub = mon._release.weights(*a), mon._release.weights(*b)
    va, vb, c = var * ua @ ua, var * ub @ ub, var * ua @ ub
    n = xa.size
    assert c < 0  # periods 1..5 and 6..8 share the root [1, 8]: negatively correlated
    for x, v, u in ((xa, va, ua), (xb, vb, ub)):
        mu4 = 3 * v**2 + k4 * np.sum(u**4)
        assert abs(x.mean()) < 5 * math.sqrt(v / n)
        assert abs(x.var() - v) < 5 * math.sqrt((mu4 - v**2) / n)
    cov = float(np.mean((xa - xa.mean()) * (xb - xb.mean())))
    assert abs(cov - c) < 5 * math.sqrt((va * vb + c**2) / n)


@pytest.mark.slow
@pytest.mark.parametrize(
    "model,mechanism",
    [
        (fe.DistributedDP(epsilon=1.0), "tree"),
        (fe.DistributedDP(epsilon=1.0, noise="skellam", delta=1e-6), "factorization"),
    ],
    ids=["polya-tree", "skellam-factorization"],
)
def test_drift_covariance_is_calibrated_and_its_se_is_not_optimistic(
    model: object, mechanism: str
) -> None:
    t_total, reps, w = 16, 150, 4
    feds = _periods(t_total, 1500)
    before, recent, covs, diffs, ses = [], [], [], [], []
    for r in range(reps):
        mon = fe.monitor(
            model, horizon=t_total, examples_per_period=1500, height=7,  # type: ignore[arg-type]
            mechanism=mechanism, rng=5000 + r,
        )  # fmt: skip
        for f in feds:
            mon.update(f)
        ev_a, ev_b = mon.evaluation(t_total - w), mon.evaluation(window=w)
        before.append(ev_a.roc_auc)
        recent.append(ev_b.roc_auc)
        covs.append(mon._auc_covariance(ev_a, ev_b, (0, t_total - w), (t_total - w, t_total)))
        d = mon.drift(window=w)
        diffs.append(d.difference)
        ses.append(d.privacy_se)
    a, b = np.asarray(before), np.asarray(recent)
    emp = float(np.cov(a, b)[0, 1])
    predicted = float(np.mean(covs))
    assert predicted < 0  # the reference and the window split the same prefix
    assert abs(emp - predicted) < 5 * math.sqrt((a.var() * b.var() + emp**2) / reps), (
        emp,
        predicted,
    )
    # The windows' own SEs carry Evaluation's bias allowance and floor (conservative by
    # design), so the standardised difference may spread less than 1, never clearly more.
    z = (np.asarray(diffs) - np.mean(diffs)) / np.asarray(ses)
    assert float(np.std(z, ddof=1)) < 1 + 5 / math.sqrt(2 * reps)
