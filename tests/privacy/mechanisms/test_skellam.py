"""Skellam shares: sum distribution, variance, RDP calibration."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
from scipy import stats

from fedeval.privacy import SkellamShares, skellam_epsilon, skellam_rdp
from fedeval.privacy.mechanisms.skellam import SKELLAM_RDP_ORDERS


@pytest.mark.statistical
def test_sum_variance_fast_path(variance_tolerance) -> None:
    sk = SkellamShares(5.0, 100)
    assert sk.variance == 10.0
    n = 200_000
    x = sk.sample_sum(n, rng=11)
    # Poisson(μ) - Poisson(μ): cumulants κ2 = κ4 = 2μ, so μ4 = 2μ + 3(2μ)².
    mu4 = 2 * sk.mu + 3 * sk.variance**2
    assert abs(x.mean()) <= 5 * math.sqrt(sk.variance / n)
    assert abs(x.var(ddof=1) - sk.variance) <= variance_tolerance(sk.variance, mu4, n)


@pytest.mark.statistical
def test_faithful_sum_matches_skellam(gof_pvalue) -> None:
    sk = SkellamShares(3.0, 25)
    assert sk.share_variance == pytest.approx(2 * 3.0 / 25)
    total = sk.sample_share((25, 100_000), rng=8).sum(axis=0)
    assert gof_pvalue(total, lambda k: stats.skellam.pmf(k, 3.0, 3.0), 200) > 1e-4
    fast = sk.sample_sum(100_000, rng=9)
    assert gof_pvalue(fast, lambda k: stats.skellam.pmf(k, 3.0, 3.0), 200) > 1e-4


def test_rdp_formula_by_hand() -> None:
    # α = 2, μ = 5 (V = 10), Δ1 = 2, Δ2 = √2:
    # 2·2/20 + min((3·2 + 12)/400, 6/20) = 0.2 + 0.045.
    assert float(skellam_rdp(2, 5.0, 2.0, math.sqrt(2.0))) == pytest.approx(0.245, rel=1e-12)


def test_calibrate_is_tight() -> None:
    sk = SkellamShares.calibrate(1.0, 1e-5, 1.0, 1.0, n_shares=10)
    assert sk.n_shares == 10 and sk.delta == 1e-5
    assert skellam_epsilon(sk.mu, 1e-5) <= 1.0
    assert skellam_epsilon(sk.mu * (1 - 1e-6), 1e-5) > 1.0
    g = sk.guarantee("client")
    assert g.epsilon <= 1.0 and g.epsilon == pytest.approx(1.0, abs=1e-6)
    assert (g.delta, g.unit) == (1e-5, "client")
    assert sk.guarantee(delta=1e-3).epsilon < g.epsilon


def test_large_mu_approaches_gaussian_rdp() -> None:
    # The discreteness term vanishes: ε must tend to the Gaussian-RDP ε at σ² = 2μ.
    mu = 500.0
    orders = [float(a) for a in SKELLAM_RDP_ORDERS]
    acc = dp_accounting.rdp.RdpAccountant(orders)
    acc.compose(dp_accounting.GaussianDpEvent(math.sqrt(2 * mu)))
    gauss = acc.get_epsilon(1e-5)
    sk = skellam_epsilon(mu, 1e-5)
    assert gauss <= sk <= gauss * 1.01


def test_guarantee_needs_delta() -> None:
    with pytest.raises(ValueError, match="delta"):
        SkellamShares(5.0, 3).guarantee()
    assert SkellamShares(5.0, 3).guarantee(delta=1e-6).delta == 1e-6


def test_sample_shapes() -> None:
    sk = SkellamShares(2.0, 4)
    assert sk.sample_share((2, 3), rng=0).shape == (2, 3)
    assert sk.sample_sum(5, rng=0).dtype == np.int64
