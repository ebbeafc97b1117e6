"""Issue 24, finding 2: a known seed removes all privacy, and nothing said so.

The package docstring's headline example passed ``rng=0``. The fast path's
noise does not depend on the data, so with the seed known one subtraction
recovers every exact count. Now: the default is fresh OS entropy (ChaCha20), a
seed under DP warns with its own class, and the receipt says what a seed means.
"""

from __future__ import annotations

import warnings
from typing import Any

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


@pytest.mark.statistical
@pytest.mark.parametrize(
    "model",
    [fe.DistributedDP(1.0), fe.CentralDP(1.0), fe.DistributedDP(1.0, noise="skellam", delta=1e-6)],
    ids=["distdp-laplace", "central", "distdp-skellam"],
)
def test_a_32_bit_bit_generator_gives_the_stated_noise(model: Any, two_sample_chi2_pvalue) -> None:
    """A Generator over MT19937 (32-bit raw words) releases noise of the stated law.

    The samplers read 64-bit words. ``random_raw`` of a 32-bit bit generator
    returns 32-bit values, so its words had 32 zero top bits: U < 2⁻³¹ in
    every draw, the discrete Laplace magnitude was at least about 21.5 scales,
    and no small noise value was ever released (an output one count away
    had probability 0 under a neighbour: ε = ∞). The released noise must have
    the law PCG64's has: a two-sample chi-square over every coordinate of
    several releases, and the variance the release states.
    """
    from fedeval.aggregation import release
    from fedeval.sketches.hierarchy import HierarchySketch, HierarchySpec

    sketch = HierarchySketch(HierarchySpec(5, 2, (0.0, 1.0), 2))
    fed = _fed()
    exact = np.asarray(sketch.encode_clients(fed), dtype=np.float64)

    def noise(bitgen: np.random.BitGenerator) -> tuple[np.ndarray, np.ndarray]:
        gen = np.random.Generator(bitgen)
        draws, variances = [], []
        for _ in range(40):
            out = release(fed, sketch, model, rng=gen)
            draws.append(np.asarray(out.values, dtype=np.float64) - exact)
            variances.append(np.broadcast_to(out.variance, exact.shape))
        return np.concatenate(draws), np.concatenate(variances)

    ours, var = noise(np.random.MT19937(5))
    reference, _ = noise(np.random.PCG64(6))
    assert two_sample_chi2_pvalue(ours.astype(np.int64), reference.astype(np.int64)) > 1e-4
    z2 = np.square(ours) / var  # E = 1; Var(z²) = κ − 1 ≤ 6 for these laws (Laplace's kurtosis)
    assert abs(z2.mean() - 1.0) <= 5.0 * np.sqrt(6.0 / z2.size)
