"""Random sources.

Every random draw in fedeval comes from an explicit ``rng`` argument; there is no
global state. ``rng`` may be an ``int`` seed, a :class:`numpy.random.Generator`, or
``None`` (fresh OS entropy).

numpy's default bit generator (PCG64) is fast and statistically excellent but it
is *not* a cryptographically secure PRNG: an adversary who sees enough outputs
can predict later ones, which would let them subtract DP noise. For deployment,
:func:`secure_generator` returns a Generator backed by a CSPRNG (ChaCha20 from the
optional ``randomgen`` package, ``pip install fedeval[secure]``).
"""

from __future__ import annotations

import secrets

import numpy as np

RNGLike = int | np.random.Generator | None

__all__ = ["RNGLike", "SecureGenerator", "as_generator", "secure_generator", "spawn"]


def as_generator(rng: RNGLike) -> np.random.Generator:
    """Return a :class:`numpy.random.Generator` for ``rng``.

    Parameters
    ----------
    rng : int, numpy.random.Generator or None
        A seed, an existing generator (returned unchanged, so draws advance its
        state), or None for a generator seeded from OS entropy.

    Raises
    ------
    TypeError
        If ``rng`` is of another type (e.g. the legacy ``RandomState``).
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or (isinstance(rng, int | np.integer) and not isinstance(rng, bool)):
        if rng is not None and int(rng) < 0:
            raise ValueError(f"rng seed must be non-negative, got {rng}")
        return np.random.default_rng(None if rng is None else int(rng))
    raise TypeError(
        f"rng must be an int seed, a numpy.random.Generator or None, got {type(rng).__name__}"
    )


def spawn(rng: RNGLike, n: int) -> list[np.random.Generator]:
    """Split ``rng`` into ``n`` independent child generators (one per client)."""
    return list(as_generator(rng).spawn(n))


class SecureGenerator(np.random.Generator):
    """A Generator that selects secure mode: exact integer samplers, not just other bits.

    A plain CSPRNG changes where the random bits come from, not how noise is
    computed from them. Passing a ``SecureGenerator`` as ``rng`` also makes the
    central noise samplers (discrete Laplace, discrete Gaussian) use the exact
    integer-arithmetic algorithms of :mod:`fedeval.privacy.mechanisms.exact`.
    Build one over a CSPRNG with :func:`secure_generator`; over any other bit
    generator (e.g. ``SecureGenerator(np.random.PCG64(0))``) only for tests.
    Pólya and Skellam noise shares have no exact sampler here: they are drawn
    with numpy's negative-binomial and Poisson samplers on these bits
    (integer-valued, accurate to double precision).
    """


def secure_generator(seed: int | None = None) -> SecureGenerator:
    """Secure mode: the ChaCha20 CSPRNG (needs ``randomgen``) and exact samplers.

    Parameters
    ----------
    seed : int, optional
        For reproducible tests only. By default 256 bits from :mod:`secrets`.

    Raises
    ------
    ImportError
        If ``randomgen`` is not installed (``pip install fedeval[secure]``).
    """
    try:
        from randomgen import ChaCha
    except ImportError as exc:  # pragma: no cover - depends on the optional extra
        raise ImportError(
            "secure_generator needs the optional 'randomgen' package: pip install 'fedeval[secure]'"
        ) from exc
    key = secrets.randbits(256) if seed is None else seed
    return SecureGenerator(ChaCha(seed=key, rounds=20))
