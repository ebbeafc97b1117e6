"""Issue 12, "always release": the ECDF entry points and Hosmer–Lemeshow under DP.

A degenerate input (one class only, a single example) is released like any
other: an exception that depends on the data would itself reveal it. Warnings
are decided from released values only, and say so in a warning category that
is not a ``RuntimeWarning`` (those are errors for fedeval modules in this suite).
Format errors (non-binary labels, NaN scores) still raise.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import fedeval as fe
from fedeval.metrics.hosmer_lemeshow import hosmer_lemeshow

GRID = fe.ecdf.equal_width_grid(0.0, 1.0, 16)
SCORES = np.linspace(0.01, 0.99, 57)


@pytest.mark.parametrize("label", [0, 1])
def test_dp_roc_curve_with_one_class_is_released_with_a_user_warning(label: int) -> None:
    """The empty class's released total is tiny: the warning is a UserWarning (was RuntimeWarning)."""
    y = np.full(SCORES.size, label)
    seen = False
    for seed in range(10):
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            curve = fe.ecdf.dp_roc_curve(SCORES, y, GRID, epsilon=1.0, rng=seed)
        assert curve.epsilon == pytest.approx(1.0)
        assert not [w for w in record if issubclass(w.category, RuntimeWarning)]
        released = [
            w
            for w in record
            if issubclass(w.category, UserWarning)
            and not issubclass(w.category, fe.SeededRandomnessWarning)
        ]
        seen = seen or bool(released)
        for w in released:
            assert "released total" in str(w.message)
            assert "57" not in str(w.message)
    assert seen


@pytest.mark.parametrize("labels", [np.zeros(57, int), np.ones(57, int)])
def test_hosmer_lemeshow_with_one_class_is_released(labels: np.ndarray) -> None:
    res = hosmer_lemeshow(SCORES, labels, fe.DistributedDP(1.0, neighbouring="replace"), rng=0)
    assert res.epsilon == pytest.approx(1.0)
    assert math.isfinite(res.statistic) or math.isnan(res.statistic)


def test_ecdf_releases_of_a_single_value() -> None:
    one = np.array([0.3])
    fed = fe.Federation.from_arrays(one, np.zeros(1, int))
    for neighbouring in ("replace", "add_remove"):
        model = fe.DistributedDP(1.0, neighbouring=neighbouring)  # type: ignore[arg-type]
        assert fe.ecdf.private_ecdf(one, GRID, model, rng=0).counts.size == GRID.size
        fe.ecdf.federated_ecdf(fed, GRID, model, rng=0).query([0, 5])
        fe.ecdf.multi_server_ecdf(fed, GRID, model, rng=0)


def test_format_errors_still_raise() -> None:
    with pytest.raises(ValueError, match="0 or 1"):
        fe.ecdf.dp_roc_curve(SCORES, np.full(SCORES.size, 2), GRID, epsilon=1.0)
    with pytest.raises(ValueError, match="NaN"):
        fe.ecdf.private_ecdf(np.array([0.1, np.nan]), GRID, epsilon=1.0)
    with pytest.raises(ValueError, match="0 or 1"):
        hosmer_lemeshow(SCORES, np.full(SCORES.size, 3), epsilon=1.0)
