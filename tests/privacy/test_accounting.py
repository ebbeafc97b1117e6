"""Composition and conversion maths against dp-accounting."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest

from fedeval.privacy import (
    Guarantee,
    basic_composition,
    calibrate_noise_multiplier,
    gaussian_rounds_epsilon,
    rdp_to_approx_dp,
    zcdp_to_approx_dp,
)


def test_basic_composition() -> None:
    g = Guarantee(0.5, 1e-6, "example", "x")
    eps, delta = basic_composition([(1.0, 0.0), (0.25, 1e-5), g])
    assert eps == pytest.approx(1.75)
    assert delta == pytest.approx(1.1e-5)
    assert basic_composition([]) == (0.0, 0.0)
    assert basic_composition([(1.0, 0.7), (1.0, 0.7)])[1] == 1.0
    with pytest.raises(ValueError, match="epsilon"):
        basic_composition([(float("nan"), 0.0)])
    with pytest.raises(ValueError, match="delta"):
        basic_composition([(1.0, 1.5)])
    with pytest.raises(TypeError):
        basic_composition([1.0])  # type: ignore[list-item]


@pytest.mark.parametrize("rho", [1e-4, 0.05, 0.5, 3.0])
def test_zcdp_conversion(rho) -> None:
    delta = 1e-6
    eps = zcdp_to_approx_dp(rho, delta)
    classic = rho + 2 * math.sqrt(rho * math.log(1 / delta))
    assert 0 < eps <= classic
    # dp-accounting's RDP accountant applies the same conversion on a grid of orders.
    orders = list(np.linspace(1.01, 20, 2000)) + list(np.linspace(20, 20000, 4000))
    acc = dp_accounting.rdp.RdpAccountant(orders)
    acc.compose(dp_accounting.ZCDpEvent(rho))
    reference = acc.get_epsilon(delta)
    assert eps <= reference + 1e-12
    assert eps == pytest.approx(reference, rel=1e-3)
    assert zcdp_to_approx_dp(0.0, delta) == 0.0


def test_rdp_to_approx_dp_delegates() -> None:
    orders = [2.0, 4.0, 8.0, 16.0]
    rdp = [0.1, 0.2, 0.4, 0.8]
    expected, _ = dp_accounting.rdp.compute_epsilon(orders, rdp, 1e-5)
    assert rdp_to_approx_dp(orders, rdp, 1e-5) == pytest.approx(expected)


@pytest.mark.parametrize(("z", "rounds", "q"), [(1.1, 100, 0.01), (0.8, 10, 1.0)])
def test_gaussian_rounds_epsilon_matches_dp_accounting(z, rounds, q) -> None:
    event = dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(z)), rounds
    )
    acc = dp_accounting.rdp.RdpAccountant()
    acc.compose(event)
    pld = dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-4)
    pld.compose(event)
    got = gaussian_rounds_epsilon(z, rounds, q, 1e-5)
    # The tighter of the two accountants, RDP kept as the cross-check: never above RDP,
    # and equal to the PLD bound (discretised more coarsely, so pessimistic by < 1e-3).
    assert got <= acc.get_epsilon(1e-5) + 1e-12
    assert got == pytest.approx(min(acc.get_epsilon(1e-5), pld.get_epsilon(1e-5)), abs=2e-3)


def test_calibrate_noise_multiplier() -> None:
    z = calibrate_noise_multiplier(2.0, 1e-5, 50, 0.05)
    assert gaussian_rounds_epsilon(z, 50, 0.05, 1e-5) <= 2.0
    # The PLD refinement stops at a relative bracket of 1e-3.
    assert gaussian_rounds_epsilon(z * (1 - 2e-3), 50, 0.05, 1e-5) > 2.0
    # PLD lets less noise meet the same target than RDP alone would.
    z_rdp = calibrate_noise_multiplier(2.0, 1e-5, 50, 0.05, rtol=1e-6)
    acc = dp_accounting.rdp.RdpAccountant()
    acc.compose(
        dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(0.05, dp_accounting.GaussianDpEvent(z_rdp)), 50
        )
    )
    assert acc.get_epsilon(1e-5) > 2.0


def test_accounting_bad_inputs() -> None:
    with pytest.raises(ValueError, match="sampling_rate"):
        gaussian_rounds_epsilon(1.0, 10, 0.0, 1e-5)
    with pytest.raises(ValueError, match="rounds"):
        gaussian_rounds_epsilon(1.0, 0, 0.5, 1e-5)
    with pytest.raises(ValueError, match="delta"):
        gaussian_rounds_epsilon(1.0, 10, 0.5, 1.0)
    with pytest.raises(ValueError, match="rho"):
        zcdp_to_approx_dp(-1.0, 1e-5)
    with pytest.raises(ValueError, match="epsilon"):
        calibrate_noise_multiplier(0.0, 1e-5, 10, 0.5)


@pytest.mark.parametrize(
    ("epsilon", "rounds", "q"), [(3.0, 12, 0.3), (1.0, 12, 1.0), (0.5, 5, 1.0)]
)
def test_calibrated_multiplier_meets_epsilon_and_is_minimal_to_two_per_mille(
    epsilon, rounds, q
) -> None:
    """The secant search (coarse RDP bracket, then the tighter accountants) returns a
    multiplier that meets ε under gaussian_rounds_epsilon (dp-accounting's default
    orders and PLD) and whose 0.2 % smaller neighbour does not (the README's user-level
    setting, and two without sampling)."""
    z = calibrate_noise_multiplier(epsilon, 1e-5, rounds, q)
    assert gaussian_rounds_epsilon(z, rounds, q, 1e-5) <= epsilon
    assert gaussian_rounds_epsilon(z * (1 - 2e-3), rounds, q, 1e-5) > epsilon


def test_search_skips_the_rdp_only_where_pld_meets_epsilon(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inside the final bracket the search builds the RDP at dp-accounting's orders only
    where PLD misses ε (elsewhere the minimum meets ε whatever the RDP): every point
    evaluated without it had PLD <= ε, some were, and the multiplier still meets ε
    under the full bound and is minimal to 2 per mille."""
    from fedeval.privacy import accounting

    rdp_at: dict[float, float] = {}
    pld_at: dict[float, float] = {}
    rdp, pld = accounting._rdp_rounds_epsilon, accounting._pld_rounds_epsilon

    def spy_rdp(z: float, *args: object) -> float:
        out = rdp(z, *args)
        if args[-1] is None:  # dp-accounting's own orders (the bracket uses fedeval's)
            rdp_at[z] = out
        return out

    def spy_pld(z: float, *args: object) -> float:
        pld_at[z] = pld(z, *args)
        return pld_at[z]

    monkeypatch.setattr(accounting, "_rdp_rounds_epsilon", spy_rdp)
    monkeypatch.setattr(accounting, "_pld_rounds_epsilon", spy_pld)
    z = accounting.calibrate_noise_multiplier(3.0, 1e-5, 12, 0.3)
    skipped = [x for x in pld_at if x not in rdp_at]
    assert skipped and all(pld_at[x] <= 3.0 for x in skipped)
    monkeypatch.undo()
    assert gaussian_rounds_epsilon(z, 12, 0.3, 1e-5) <= 3.0
    assert gaussian_rounds_epsilon(z * (1 - 2e-3), 12, 0.3, 1e-5) > 3.0
