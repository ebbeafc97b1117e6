"""Issue 24, finding 2: a known seed removes all privacy, and nothing said so.

The package docstring's headline example passed ``rng=0``. The fast path's
noise does not depend on the data, so with the seed known one subtraction
recovers every exact count. Now: the default is fresh OS entropy (ChaCha20), a
seed under DP warns with its own class, and the receipt says what a seed means.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import fedeval as fe
from fedeval.randomness import SecureGenerator, SeededGenerator, as_generator, randomness_kind


def _fed() -> fe.Federation:
    rng = np.random.default_rng(3)
    s = rng.random(500)
    return fe.Federation.from_arrays(s, (rng.random(500) < s).astype(int), np.arange(500) % 50)


PUBLIC = fe.Public(n_clients=50)


def test_the_default_is_fresh_os_entropy_through_a_csprng() -> None:
    gen = as_generator(None)
    assert isinstance(gen, SecureGenerator)
    assert type(gen.bit_generator).__name__ == "ChaCha"
    with warnings.catch_warnings():
        warnings.simplefilter("error", fe.SeededRandomnessWarning)
        warnings.simplefilter("ignore", fe.SmallDataWarning)
        a = fe.evaluate(_fed(), fe.DistributedDP(epsilon=1.0), public=PUBLIC)
        b = fe.evaluate(_fed(), fe.DistributedDP(epsilon=1.0), public=PUBLIC)
    assert a.receipt.randomness.startswith("fresh OS entropy")
    assert not a.receipt.seeded
    # Fresh entropy each call: the noise differs.
    assert not np.array_equal(a.tree.leaves, b.tree.leaves)


def test_a_seed_under_dp_warns_with_its_own_class_and_the_receipt_says_so() -> None:
    with pytest.warns(fe.SeededRandomnessWarning, match="knows the seed"):
        ev = fe.evaluate(_fed(), fe.DistributedDP(epsilon=1.0), public=PUBLIC, rng=7)
    assert isinstance(as_generator(7), SeededGenerator)
    assert ev.receipt.seeded
    assert "no privacy against anyone who knows the seed" in ev.receipt.randomness
    assert ev.receipt.as_dict()["randomness"] == ev.receipt.randomness
    # Secure aggregation draws no noise: a seed there means nothing for privacy.
    with warnings.catch_warnings():
        warnings.simplefilter("error", fe.SeededRandomnessWarning)
        sa = fe.evaluate(_fed(), fe.SecureAggregation(), rng=7)
    assert sa.receipt.randomness == ""
    # A caller's own generator is named, and not called secure.
    ev = fe.evaluate(_fed(), fe.DistributedDP(1.0), public=PUBLIC, rng=np.random.default_rng(1))
    assert randomness_kind(np.random.default_rng(1)) == "caller"
    assert "not known to be cryptographically secure" in ev.receipt.randomness


def test_what_the_seeded_receipt_says_is_true_a_known_seed_recovers_the_counts() -> None:
    """The attack of the finding: the same seed on data the attacker knows gives the noise.

    The fast path's noise does not depend on the data, so releasing a known
    dataset with the victim's seed and subtracting recovers every exact count.
    """
    from fedeval.aggregation import release
    from fedeval.sketches.hierarchy import HierarchySketch, HierarchySpec

    sketch = HierarchySketch(HierarchySpec(5, 2, (0.0, 1.0), 2))
    fed = _fed()
    known = fe.Federation.from_arrays(np.array([0.5]), np.array([0]))
    model = fe.DistributedDP(epsilon=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fe.SeededRandomnessWarning)
        victim = release(fed, sketch, model, rng=11)
        mine = release(known, sketch, model, rng=11)
    exact_victim = np.asarray(sketch.encode_clients(fed), dtype=np.float64)
    exact_mine = np.asarray(sketch.encode_clients(known), dtype=np.float64)
    recovered = victim.values - (mine.values - exact_mine)
    assert np.array_equal(recovered, exact_victim)  # every coordinate, error 0
    assert not np.array_equal(victim.values, exact_victim)  # there was noise
    assert victim.receipt.seeded
    # With fresh OS entropy the same subtraction recovers nothing exactly.
    fresh = release(fed, sketch, model)
    assert not np.array_equal(fresh.values - (mine.values - exact_mine), exact_victim)


def test_headline_examples_show_no_fixed_seed_unless_they_say_simulation() -> None:
    doc = fe.__doc__ or ""
    assert "rng=0" not in doc
    assert "fe.Context" in doc
