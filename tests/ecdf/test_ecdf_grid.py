"""Grids and input validation of the private ECDF (Barczewski et al. 2025, §3.1)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from fedeval.ecdf import (
    check_grid,
    equal_width_grid,
    geometric_grid,
    inverse_ecdf,
    private_ecdf,
)
from fedeval.sketches.tree import binary_height


def test_equal_width_grid_endpoints_and_size() -> None:
    g = equal_width_grid(0.0, 1.0, 5)
    np.testing.assert_allclose(g, [0.0, 0.25, 0.5, 0.75, 1.0])


def test_equal_width_grid_by_step_psi() -> None:
    g = equal_width_grid(0.05, 1.0, psi=0.25)
    np.testing.assert_allclose(g, [0.25, 0.5, 0.75, 1.0])
    with pytest.raises(ValueError, match="exactly one"):
        equal_width_grid(0.0, 1.0)
    with pytest.raises(ValueError, match="exactly one"):
        equal_width_grid(0.0, 1.0, 4, psi=0.1)


def test_geometric_grid_has_constant_ratio() -> None:
    g = geometric_grid(1.0, 100.0, 0.5)
    ratios = g[1:] / g[:-1]
    np.testing.assert_allclose(ratios, math.exp(0.5))
    assert g[0] >= 1.0 and g[-1] <= 100.0
    # z runs over ceil(0/0.5) .. floor(log(100)/0.5) = 0..9
    assert g.size == 10


@pytest.mark.parametrize(("n", "height"), [(2, 1), (3, 2), (4, 2), (5, 3), (1024, 10), (1025, 11)])
def test_tree_height_is_ceil_log2(n: int, height: int) -> None:
    # The ECDF tree's height is the shared binary height of sketches.tree (was ecdf.tree_height).
    assert binary_height(n) == height == math.ceil(math.log2(n))


@pytest.mark.parametrize(
    ("grid", "match"),
    [
        ([0.0, 2.0, 1.0], "strictly increasing"),
        ([0.0, 1.0, 1.0], "strictly increasing"),
        ([0.5], "N >= 2"),
        ([], "N >= 2"),
        ([0.0, np.nan], "NaN"),
        ([[0.0, 1.0]], "1-dimensional"),
    ],
)
def test_bad_grid_is_rejected(grid: Any, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        check_grid(grid)
    with pytest.raises(ValueError, match=match):
        private_ecdf([0.1, 0.2], grid, epsilon=1.0, rng=0)


def test_non_numeric_grid_is_type_error() -> None:
    with pytest.raises(TypeError, match="numeric"):
        check_grid(["a", "b"])


@pytest.mark.parametrize("eps", [0.0, -1.0, math.inf, math.nan])
def test_bad_epsilon_is_rejected(eps: float) -> None:
    with pytest.raises(ValueError, match="epsilon"):
        private_ecdf([0.1, 0.2], [0.0, 1.0], epsilon=eps, rng=0)


def test_bad_grid_constructor_arguments() -> None:
    with pytest.raises(ValueError, match="n_points"):
        equal_width_grid(0.0, 1.0, 1)
    with pytest.raises(ValueError, match="low < high"):
        equal_width_grid(1.0, 0.0, 4)
    with pytest.raises(ValueError, match="low > 0"):
        geometric_grid(0.0, 1.0, 0.1)
    with pytest.raises(ValueError, match="fewer than 2"):
        geometric_grid(1.0, 1.1, 1.0)


@pytest.mark.parametrize("q", [-0.1, 1.5, math.nan])
def test_quantile_outside_unit_interval_is_rejected(q: float) -> None:
    ecdf = private_ecdf([0.1, 0.2, 0.7], [0.0, 0.5, 1.0], epsilon=1.0, rng=0)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        inverse_ecdf(ecdf, [0.5, q])


def test_bad_values_are_rejected() -> None:
    with pytest.raises(ValueError, match="NaN"):
        private_ecdf([0.1, np.inf], [0.0, 1.0], epsilon=1.0)
    with pytest.raises(ValueError, match="at least one"):
        private_ecdf([], [0.0, 1.0], epsilon=1.0)


def test_bad_privacy_arguments_are_rejected() -> None:
    from fedeval.privacy.models import DistributedDP

    # privacy is a model object; epsilon= is sugar for DistributedDP: exactly one of them.
    with pytest.raises(TypeError, match="exactly one"):
        private_ecdf([0.1, 0.2], [0.0, 1.0], rng=0)
    with pytest.raises(TypeError, match="exactly one"):
        private_ecdf([0.1, 0.2], [0.0, 1.0], DistributedDP(1.0), epsilon=1.0, rng=0)
    with pytest.raises(ValueError, match="neighbouring"):
        private_ecdf([0.1, 0.2], [0.0, 1.0], epsilon=1.0, neighbouring="swap", rng=0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="path"):
        private_ecdf([0.1, 0.2], [0.0, 1.0], epsilon=1.0, path="slow", rng=0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="numeric"):
        private_ecdf(["a", "b"], [0.0, 1.0], epsilon=1.0, rng=0)
    with pytest.raises(ValueError, match="1-dimensional"):
        private_ecdf([[0.1, 0.2]], [0.0, 1.0], epsilon=1.0, rng=0)
