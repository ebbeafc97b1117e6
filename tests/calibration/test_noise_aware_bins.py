"""Binning / BBQ resolution from the predicted error at the release's noise (issue 14)."""

from __future__ import annotations

import numpy as np
import pytest

import fedeval as fe
from fedeval.calibration.binning import (
    MIN_SIGNAL_TO_NOISE,
    noise_aware_n_bins,
    predicted_bins_error,
    release_scores_hierarchy,
)


def _fed(n: int, seed: int = 0) -> fe.Federation:
    rng = np.random.default_rng(seed)
    s = rng.random(n)
    return fe.Federation.from_arrays(s, (rng.random(n) < s**2).astype(int))


def _hist(fed: fe.Federation, privacy, height: int = 10):
    return release_scores_hierarchy(
        fed, privacy, n_bins=None, n_examples=None, height=height, branching=2,
        level_budget="split", path="fast", rng=0, ledger=None,
    )  # fmt: skip


def test_without_noise_the_choice_is_the_theorem_7_rate():
    # Minimising 1/(4B) + ½√(B/M) gives B = M^{1/3} exactly (derivative zero).
    fed = _fed(64_000)
    hist = _hist(fed, fe.SecureAggregation())
    best, supported = noise_aware_n_bins(hist, 64_000.0)
    assert supported == hist.spec.n_leaves
    cands = np.arange(1, 200)
    err, _ = predicted_bins_error(hist, 64_000.0, cands)
    assert int(cands[np.argmin(err)]) == 40  # 64000^{1/3}
    assert abs(best - 40) <= 4  # the geometric candidate grid around 40


@pytest.mark.parametrize("epsilon", [0.1, 1.0])
def test_dp_never_finer_than_the_noise_supports(epsilon):
    fed = _fed(2_000)
    hist = _hist(fed, fe.DistributedDP(epsilon))
    m = 2_000.0
    best, supported = noise_aware_n_bins(hist, m)
    _, sd = predicted_bins_error(hist, m, np.array([supported]))
    assert m / supported >= MIN_SIGNAL_TO_NOISE * sd[0]
    assert best <= supported
    sa_best, _ = noise_aware_n_bins(_hist(fed, fe.SecureAggregation()), m)
    assert best <= sa_best


def test_less_budget_gives_coarser_buckets():
    fed = _fed(2_000)
    coarse, _ = noise_aware_n_bins(_hist(fed, fe.DistributedDP(0.05)), 2_000.0)
    fine, _ = noise_aware_n_bins(_hist(fed, fe.DistributedDP(5.0)), 2_000.0)
    assert coarse < fine


def test_binning_default_uses_it_and_says_so():
    fed = _fed(2_000)
    cal = fe.calibrate(fed, fe.DistributedDP(0.1), method="binning", rng=0, do_no_harm=False)
    assert any("smallest predicted error" in step for step in cal.post_processing)
