"""Fixed-point encoding of real-valued summaries (sketches/fixed_point.py).

Reals are sent as integer multiples of a power-of-two step γ, so every noise is
discrete (Mironov 2012): the step is a power of two, rounding is to the nearest
multiple (error at most γ/2), and values on the grid convert exactly.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from fedeval.sketches.fixed_point import (
    DEFAULT_BITS,
    power_of_two_step,
    rounding_note,
    to_units,
)


@pytest.mark.parametrize("scale", [1.0, 0.3, 5.0, 1e-3, 1024.0])
def test_the_step_is_the_power_of_two_at_or_below_scale_over_2_to_the_bits(scale: float) -> None:
    step = power_of_two_step(scale)
    exponent = math.log2(step)
    assert exponent == int(exponent)
    assert step <= scale * 2.0**-DEFAULT_BITS < 2 * step
    assert power_of_two_step(scale, bits=4) == step * 2.0 ** (DEFAULT_BITS - 4)


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, math.nan])
def test_a_bad_scale_is_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="finite and > 0"):
        power_of_two_step(bad)


def test_rounding_is_to_the_nearest_multiple_within_half_a_step() -> None:
    step = 2.0**-3
    values = np.random.default_rng(0).uniform(-4, 4, 1000)
    units = to_units(values, step)
    assert units.dtype == np.int64
    assert np.max(np.abs(units * step - values)) <= step / 2
    on_grid = np.arange(-20, 21) * step
    np.testing.assert_array_equal(to_units(on_grid, step), np.arange(-20, 21))
    np.testing.assert_array_equal(to_units(on_grid, step) * step, on_grid)  # exact


def test_the_receipt_states_the_step_and_the_bias() -> None:
    note = rounding_note(2.0**-20, "probability sums")
    assert note.startswith("probability sums rounded to the nearest multiple of γ = 2^-20")
    assert "bias at most γ/2" in note
