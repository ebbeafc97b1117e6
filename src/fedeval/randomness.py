"""Random sources, and what each one means for privacy.

Every random draw in fedeval comes from an explicit ``rng`` argument; there is no
global state. ``rng`` may be

* ``None`` (the default): a fresh :class:`SecureGenerator`, the ChaCha20
  stream cipher (20 rounds, randomgen's ``ChaCha``) keyed with 256 bits of OS
  entropy from :mod:`secrets`. Nobody, the caller included, can reproduce or
  predict its noise. This is what a deployment uses.
* an ``int`` seed: a :class:`SeededGenerator` (numpy's PCG64 on that seed), for
  reproducible simulations and tests only. A differentially private release
  drawn from it warns (:class:`~fedeval.exceptions.SeededRandomnessWarning`)
  and its receipt says "seeded: no privacy against anyone who knows the seed":
  the noise is a function of the seed alone, so knowing the seed means
  knowing the noise, and one subtraction recovers the exact counts.
* a :class:`numpy.random.Generator`: used as given (its draws advance its
  state). The receipt names its bit generator; unless it is a
  :class:`SecureGenerator` the receipt says it is not known to be
  cryptographically secure.

numpy's PCG64 is statistically excellent but not a CSPRNG: an adversary who
sees enough of its outputs can predict later ones. ChaCha20 is; it costs
about 1.7× PCG64 per raw 64-bit word on this project's benchmark machine.

The samplers in :mod:`fedeval.privacy.mechanisms` turn raw words into noise
exactly (integer arithmetic where it matters), whatever the bit generator:
the generator decides only who can know the bits.
"""

from __future__ import annotations

import secrets
from typing import Literal

import numpy as np

RNGLike = int | np.random.Generator | None

__all__ = [
    "RNGLike",
    "RandomnessKind",
    "SecureGenerator",
    "SeededGenerator",
    "as_generator",
    "randomness_kind",
    "randomness_statement",
    "secure_generator",
    "spawn",
]

RandomnessKind = Literal["os-entropy", "seeded", "caller"]


class SecureGenerator(np.random.Generator):
    """A Generator over a cryptographically secure bit generator (ChaCha20 by default).

    Build one with :func:`secure_generator` (fresh OS entropy). Constructing it
    over another bit generator (e.g. ``SecureGenerator(np.random.PCG64(0))``)
    is for tests only: the receipt trusts the class, not the bits.
    """


class SeededGenerator(np.random.Generator):
    """A Generator built from an integer seed the caller chose (simulation only).

    Its children (:meth:`numpy.random.Generator.spawn`) are seeded generators
    too, so every release drawn from it is marked on its receipt.
    """


def secure_generator(seed: int | None = None) -> SecureGenerator:
    """ChaCha20 (20 rounds) keyed with 256 bits from :mod:`secrets`.

    Parameters
    ----------
    seed : int, optional
        For reproducible tests of the secure path only; a seeded
        SecureGenerator is as predictable as any seeded generator.
    """
    from randomgen import ChaCha  # imported on first use: ~90 ms

    key = secrets.randbits(256) if seed is None else int(seed)
    return SecureGenerator(ChaCha(seed=key, rounds=20))


def as_generator(rng: RNGLike) -> np.random.Generator:
    """Return a :class:`numpy.random.Generator` for ``rng``.

    Parameters
    ----------
    rng : int, numpy.random.Generator or None
        None: a fresh :func:`secure_generator`. An int: a
        :class:`SeededGenerator` (PCG64) on that seed. A Generator: returned
        unchanged, so draws advance its state.

    Raises
    ------
    TypeError
        If ``rng`` is of another type (e.g. the legacy ``RandomState``).
    ValueError
        A negative seed.
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None:
        return secure_generator()
    if isinstance(rng, int | np.integer) and not isinstance(rng, bool):
        if int(rng) < 0:
            raise ValueError(f"rng seed must be non-negative, got {rng}")
        return SeededGenerator(np.random.PCG64(int(rng)))
    raise TypeError(
        f"rng must be an int seed, a numpy.random.Generator or None, got {type(rng).__name__}"
    )


def spawn(rng: RNGLike, n: int) -> list[np.random.Generator]:
    """Split ``rng`` into ``n`` independent child generators (one per client)."""
    return list(as_generator(rng).spawn(n))


def randomness_kind(gen: np.random.Generator) -> RandomnessKind:
    """Whether ``gen`` is fresh OS entropy, a caller's seed, or a caller's own generator."""
    if isinstance(gen, SecureGenerator):
        return "os-entropy"
    if isinstance(gen, SeededGenerator):
        return "seeded"
    return "caller"


def randomness_statement(gen: np.random.Generator) -> str:
    """What a receipt says about where the noise's random bits came from."""
    kind = randomness_kind(gen)
    name = type(gen.bit_generator).__name__
    if kind == "os-entropy":
        return f"fresh OS entropy ({name} CSPRNG keyed from the secrets module)"
    if kind == "seeded":
        return (
            f"seeded ({name} on a caller's integer seed, for simulation): no privacy against "
            "anyone who knows the seed"
        )
    return (
        f"the caller's generator ({name}); not known to be cryptographically secure: no privacy "
        "against anyone who knows its seed or state"
    )
