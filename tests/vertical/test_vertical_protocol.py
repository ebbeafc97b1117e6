"""Mid-ranks and the rank protocol of fedeval.vertical.protocol: worked examples, summaries."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import rankdata
from sklearn.metrics import roc_auc_score

import fedeval.vertical as fv
from helpers import vertical_data

# --- rank protocol: worked examples -----------------------------------------------------


def test_worked_example_distinct_scores():
    # Pairs (pos, neg): 0.35>0.1 yes, 0.35>0.4 no, 0.8>0.1 yes, 0.8>0.4 yes -> 3/4.
    s = np.array([0.1, 0.4, 0.35, 0.8])
    y = np.array([0, 0, 1, 1])
    np.testing.assert_array_equal(fv.mid_ranks(s), [0.0, 2.0, 1.0, 3.0])
    # eq. (1): (1 + 3 - 2*1/2) / (2*2) = 0.75
    assert fv.auc_from_rank_sum(1.0 + 3.0, 2, 4) == 0.75
    assert roc_auc_score(y, s) == 0.75
    assert fv.auc(s, y, [5, 5, 9, 9]).roc_auc == 0.75


def test_worked_example_ties_count_half():
    # Tied pairs count 1/2: (1 vs 1) 1/2, (1 vs 2) 0, (2 vs 1) 1, (2 vs 2) 1/2 -> 2/4.
    s = np.array([1.0, 1.0, 2.0, 2.0])
    y = np.array([0, 1, 0, 1])
    np.testing.assert_array_equal(fv.mid_ranks(s), [0.5, 0.5, 2.5, 2.5])
    assert fv.auc(s, y, [0, 1, 0, 1]).roc_auc == 0.5 == roc_auc_score(y, s)


def test_mid_ranks_match_scipy_average_ranks():
    s, _, _ = vertical_data(0)
    np.testing.assert_array_equal(fv.mid_ranks(s), rankdata(s) - 1)


def test_rank_protocol_summaries():
    s, y, ids = vertical_data(1)
    proto = fv.rank_protocol(s, ids)
    stats = fv.local_statistics(proto, y)
    assert proto.n_examples == s.size
    np.testing.assert_array_equal(proto.client_ids, np.unique(ids))
    assert proto.counts.sum() == s.size
    for k, cid in enumerate(proto.client_ids):
        r = proto.ranks[ids == cid]
        assert proto.max_rank[k] == r.max()
        assert proto.min_rank[k] == r.min()
        assert proto.mean_rank[k] == pytest.approx(r.mean(), rel=1e-12)
        assert proto.spread[k] == pytest.approx(np.abs(r - r.mean()).max(), rel=1e-12)
        assert stats.local_sum[k] == pytest.approx(r @ y[ids == cid], rel=1e-12)
        assert stats.local_pos[k] == y[ids == cid].sum()
    assert proto.global_mean_rank == pytest.approx(proto.ranks.mean(), rel=1e-12)
    np.testing.assert_allclose(stats.local_neg, proto.counts - stats.local_pos)
