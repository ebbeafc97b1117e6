"""The validation helpers of the public boundaries (validation.py, DESIGN.md convention 5).

Each names the bad value and the allowed range, raises TypeError for a value of
the wrong kind and ValueError for one out of range, and returns the value
converted (so callers use what was checked).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from fedeval.validation import (
    check_binary_labels,
    check_delta,
    check_epsilon,
    check_int_at_least,
    check_positive,
    check_probability,
    check_scores,
)


@pytest.mark.parametrize("check", [check_epsilon, check_positive])
def test_positive_numbers(check: Any) -> None:
    kw = {} if check is check_epsilon else {"name": "epsilon"}
    assert check(np.float32(0.5), **kw) == 0.5 and isinstance(check(2, **kw), float)
    for bad in (0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match=rf"epsilon must be a finite number > 0, got {bad!r}"):
            check(bad, **kw)
    with pytest.raises(TypeError, match="epsilon must be a positive number, got 'one'"):
        check("one", **kw)


def test_delta_lies_in_the_open_unit_interval() -> None:
    assert check_delta(1e-6) == 1e-6
    for bad in (0.0, 1.0, 2.0, math.nan):
        with pytest.raises(ValueError, match=r"open interval \(0, 1\)"):
            check_delta(bad)
    with pytest.raises(TypeError, match="delta must be a number"):
        check_delta(None)


def test_probability_ends_are_selectable() -> None:
    assert check_probability(1.0, name="p") == 1.0
    assert check_probability(0.0, name="p", open_low=False) == 0.0
    with pytest.raises(ValueError, match=r"p must lie in \(0, 1\], got 0.0"):
        check_probability(0.0, name="p")
    with pytest.raises(ValueError, match=r"p must lie in \[0, 1\), got 1.0"):
        check_probability(1.0, name="p", open_low=False, open_high=True)
    with pytest.raises(TypeError, match="p must be a number in"):
        check_probability([0.5], name="p")


def test_integers_refuse_bools_and_floats() -> None:
    assert check_int_at_least(np.int64(3), 2, name="height") == 3
    assert type(check_int_at_least(np.int64(3), 2, name="height")) is int
    for bad in (True, 2.0, "2"):
        with pytest.raises(TypeError, match="height must be an integer >= 2"):
            check_int_at_least(bad, 2, name="height")
    with pytest.raises(ValueError, match="height must be an integer >= 2, got 1"):
        check_int_at_least(1, 2, name="height")


def test_scores_name_the_first_bad_index() -> None:
    ok = check_scores([0, 0.5, 1])
    assert ok.dtype == np.float64
    assert check_scores(np.array([-3.0, 4.0]), score_range=(-5.0, 5.0)).tolist() == [-3.0, 4.0]
    with pytest.raises(ValueError, match=r"NaN or inf \(first at index 2: nan\)"):
        check_scores([0.1, 0.2, np.nan, np.inf])
    with pytest.raises(ValueError, match=r"index 1 has 1.5.*score_range=\(low, high\)"):
        check_scores([0.1, 1.5])
    with pytest.raises(ValueError, match="1-dimensional"):
        check_scores(np.zeros((2, 2)))
    with pytest.raises(TypeError, match="numeric"):
        check_scores(["a"])
    assert check_scores([]).size == 0


def test_binary_labels_accept_bool_int_and_integral_floats() -> None:
    np.testing.assert_array_equal(check_binary_labels([True, False]), [1, 0])
    np.testing.assert_array_equal(check_binary_labels(np.array([0.0, 1.0])), [0, 1])
    assert check_binary_labels(np.array([1, 0], dtype=np.uint8)).dtype == np.int8
    with pytest.raises(ValueError, match="labels must be 0 or 1; index 1 has 2"):
        check_binary_labels([0, 2])
    with pytest.raises(ValueError, match=r"index 0 has 0\.5"):
        check_binary_labels([0.5])
    with pytest.raises(TypeError, match="0/1 integers or booleans"):
        check_binary_labels(["0"])
    with pytest.raises(ValueError, match="1-dimensional"):
        check_binary_labels([[0, 1]])


def _two_pass_accepts(arr: np.ndarray, lo: float, hi: float) -> bool:
    """The rule before the one-pass check: min and max within [lo, hi] (NaN fails both)."""
    return bool(arr.min() >= lo and arr.max() <= hi)


@pytest.mark.parametrize("hi", [1.0, 0.5, 100.0, 5e-324])
def test_one_pass_score_check_accepts_and_rejects_what_two_passes_do(hi: float) -> None:
    """Issue 28: one max over the bit patterns, then the full check where it is inconclusive.

    Every edge: ±0, the range's end and its float neighbours, subnormals, ±inf,
    NaN with either sign bit, and negative values; each alone and among valid scores.
    """
    from fedeval.validation import _within_zero_to

    edges = [0.0, -0.0, hi, np.nextafter(hi, np.inf), np.nextafter(hi, 0.0), 5e-324, -5e-324,
             np.inf, -np.inf, np.nan, -np.nan, -1.0, 1e308, hi / 2]  # fmt: skip
    valid = np.linspace(0.0, hi, 7)
    for x in edges:
        for arr in (np.array([x]), np.append(valid, x), np.insert(valid, 3, x)):
            fast = _within_zero_to(arr, hi)
            assert not fast or _two_pass_accepts(arr, 0.0, hi)  # never accepts what it must not
            assert fast == (_two_pass_accepts(arr, 0.0, hi) and not np.signbit(arr).any())
            if _two_pass_accepts(arr, 0.0, hi):
                assert check_scores(arr, score_range=(0.0, hi)) is not None
            else:
                with pytest.raises(ValueError):
                    check_scores(arr, score_range=(0.0, hi))


@pytest.mark.parametrize("dtype", ["i1", "i2", "i4", "i8", "u1", "u8"])
def test_one_pass_label_check_accepts_and_rejects_what_two_passes_do(dtype: str) -> None:
    info = np.iinfo(dtype)
    for bad in sorted({info.min, -1 if info.min < 0 else 2, 2, info.max} - {0, 1}):
        labels = np.array([0, 1, 1, 0, bad], dtype=dtype)
        with pytest.raises(ValueError, match="must be 0 or 1"):
            check_binary_labels(labels)
    good = np.array([0, 1, 1, 0], dtype=dtype)
    np.testing.assert_array_equal(check_binary_labels(good), [0, 1, 1, 0])
