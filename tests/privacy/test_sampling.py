"""Splitting clients over parts: ``split_counts`` draws what ``assign_groups`` + counting gives.

The local-DP fast path with one example per client draws every part's item
counts from the atom counts (:func:`~fedeval.privacy.sampling.split_counts`)
instead of a group per client (:func:`~fedeval.privacy.sampling.assign_groups`).
The release is a function of those counts only, so the paths release the same
distribution if (i) the count tables have the same law and (ii) a group's atom
counts map to the same part counts as its examples' assigned encoding. Both
are shown here; the end-to-end privacy audits of local DP
(``tests/privacy/audits/test_audit_evaluate.py``, one example per client) run
through the new draw.

Tolerances
----------
* Exact law of the table: chi-square goodness of fit of 20,000 tables against
  the closed-form pmf (below), and a chi-square homogeneity test between the
  two samplers, each with p > 1e-4.
* Moments at scale: the count of a kind in a group is hypergeometric, with
  mean m c/n and variance m (c/n)(1 − c/n)(n − m)/(n − 1); the sample mean of
  R tables lies within 5 standard errors of it, and the sample variance within
  5 standard errors SE² = (μ4 − σ⁴)/R, μ4 the hypergeometric 4th central
  moment (scipy).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from scipy import stats

from fedeval.privacy.sampling import (
    SPLIT_COUNTS_LIMIT,
    assign_groups,
    group_sizes,
    split_counts,
)
from fedeval.sketches.hierarchy import HierarchySketch, HierarchySpec

P_MIN = 1e-4


def _by_assignment(kinds: np.ndarray, n_groups: int, rng: np.random.Generator) -> np.ndarray:
    """The old path: a group per item, then the (group, kind) counts."""
    groups = assign_groups(kinds.size, n_groups, rng)
    n_kinds = int(kinds.max()) + 1
    return np.bincount(groups * n_kinds + kinds, minlength=n_groups * n_kinds).reshape(
        n_groups, n_kinds
    )


@pytest.mark.parametrize(("n", "g"), [(1, 1), (7, 3), (9, 3), (10, 4), (3, 5), (1000, 11)])
def test_group_sizes_are_what_assign_groups_gives(n: int, g: int) -> None:
    got = np.bincount(assign_groups(n, g, np.random.default_rng(n)), minlength=g)
    np.testing.assert_array_equal(group_sizes(n, g), got)


def test_split_counts_keeps_the_margins_and_refuses_what_it_cannot_draw() -> None:
    counts = np.array([0, 5, 3, 0, 7])
    sizes = group_sizes(15, 4)
    out = split_counts(counts, sizes, np.random.default_rng(0))
    assert out.shape == (4, 5) and out.dtype == np.int64
    np.testing.assert_array_equal(out.sum(axis=0), counts)
    np.testing.assert_array_equal(out.sum(axis=1), sizes)
    assert np.all(out[:, [0, 3]] == 0)
    with pytest.raises(ValueError, match="sum to"):
        split_counts(counts, group_sizes(14, 4), np.random.default_rng(0))
    with pytest.raises(ValueError, match="fewer than"):
        split_counts(np.array([SPLIT_COUNTS_LIMIT]), np.array([SPLIT_COUNTS_LIMIT]), None)  # type: ignore[arg-type]


def _table_log_pmf(table: np.ndarray, counts: np.ndarray, sizes: np.ndarray) -> float:
    """log P(table) when n labelled items get a uniformly random arrangement of group labels.

    Arrangements with m_g labels g: n!/∏ m_g!. Those giving the table: for each kind j,
    c_j!/∏_g C_gj! ways to place its items' labels. So
    P = ∏_j (c_j!/∏_g C_gj!) · ∏_g m_g! / n!.
    """
    lg = math.lgamma
    n = int(counts.sum())
    return (
        sum(lg(c + 1) for c in counts)
        - sum(lg(x + 1) for x in table.ravel())
        + sum(lg(m + 1) for m in sizes)
        - lg(n + 1)
    )


def _all_tables(counts: np.ndarray, sizes: np.ndarray) -> list[np.ndarray]:
    """Every non-negative table with the given column sums (counts) and row sums (sizes)."""
    if sizes.size == 1:
        return [counts[None, :].copy()]
    out = []
    ranges = [range(min(int(c), int(sizes[0])) + 1) for c in counts]
    for row in np.stack(np.meshgrid(*ranges, indexing="ij"), -1).reshape(-1, counts.size):
        if row.sum() == sizes[0]:
            for rest in _all_tables(counts - row, sizes[1:]):
                out.append(np.vstack([row, rest]))
    return out


@pytest.mark.statistical
def test_split_counts_has_the_exact_law_of_assigning_every_item(
    two_sample_chi2_pvalue: Callable[..., float],
) -> None:
    counts = np.array([3, 2, 4, 1])  # 10 items of 4 kinds over 3 groups of 4, 3, 3
    sizes = group_sizes(int(counts.sum()), 3)
    kinds = np.repeat(np.arange(counts.size), counts)
    tables = _all_tables(counts, sizes)
    pmf = np.exp([_table_log_pmf(t, counts, sizes) for t in tables])
    assert pmf.sum() == pytest.approx(1.0, abs=1e-12)  # the closed form is a distribution
    index = {t.tobytes(): i for i, t in enumerate(tables)}
    draws = 20_000
    ids = {}
    for name, seed in (("split", 1), ("assign", 2)):
        gen = np.random.default_rng(seed)
        if name == "split":
            got = [split_counts(counts, sizes, gen) for _ in range(draws)]
        else:
            got = [_by_assignment(kinds, 3, gen) for _ in range(draws)]
        ids[name] = np.array([index[t.astype(np.int64).tobytes()] for t in got])
        observed = np.bincount(ids[name], minlength=len(tables))
        expected = pmf * draws
        # merge cells expected below 5 into one
        small = expected < 5
        obs = np.r_[observed[~small], observed[small].sum()]
        exp = np.r_[expected[~small], expected[small].sum()]
        keep = exp > 0
        chi2 = stats.chisquare(obs[keep], exp[keep])
        assert chi2.pvalue > P_MIN, (name, chi2)
    assert two_sample_chi2_pvalue(ids["split"], ids["assign"]) > P_MIN


@pytest.mark.statistical
def test_every_group_count_is_hypergeometric_at_scale() -> None:
    """Counts of a 30,000-item hierarchy over 10 groups: first, middle and last (remainder) rows."""
    rng = np.random.default_rng(5)
    counts = rng.multinomial(30_000, np.full(64, 1 / 64) * np.linspace(0.2, 1.8, 64) / 1.0)
    n = int(counts.sum())
    sizes = group_sizes(n, 10)
    reps = 2_000
    draws = np.stack([split_counts(counts, sizes, rng) for _ in range(reps)])
    for g in (0, 4, 9):
        m = int(sizes[g])
        for j in (0, 31, 63):
            c = int(counts[j])
            law = stats.hypergeom(n, c, m)
            mean, var = law.mean(), law.var()
            mu4 = (
                law.moment(4) - 4 * mean * law.moment(3) + 6 * mean**2 * law.moment(2) - 3 * mean**4
            )
            x = draws[:, g, j]
            assert abs(x.mean() - mean) <= 5 * math.sqrt(var / reps), (g, j)
            assert abs(x.var() - var) <= 5 * math.sqrt((mu4 - var**2) / reps), (g, j)


@pytest.mark.parametrize("height", [1, 3])
@pytest.mark.parametrize("leaves_only", [False, True])
def test_parts_from_atoms_equal_the_assigned_encoding(height: int, leaves_only: bool) -> None:
    """Given the groups, a group's atom counts give its part exactly as encode_assigned does."""
    rng = np.random.default_rng(height)
    n = 500
    s, y = rng.random(n), rng.integers(0, 2, n)
    sketch = HierarchySketch(HierarchySpec(height), leaves_only=leaves_only)
    n_parts = len(sketch.parts)
    groups = assign_groups(n, n_parts, rng)
    assigned = sketch.encode_assigned(s, y, np.arange(n), groups)
    rows = np.stack([sketch.encode_atoms(s[groups == g], y[groups == g]) for g in range(n_parts)])
    np.testing.assert_array_equal(rows.sum(axis=0), sketch.encode_atoms(s, y))
    got = sketch.parts_from_atoms(rows)
    offsets = sketch.part_offsets()
    for g in range(n_parts):
        np.testing.assert_array_equal(got[g], assigned[offsets[g] : offsets[g + 1]])
        # and the items of the examples, counted
        items = sketch.items(s[groups == g], y[groups == g], np.full((groups == g).sum(), g))
        np.testing.assert_array_equal(got[g], np.bincount(items, minlength=got[g].size))
