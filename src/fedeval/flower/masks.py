"""The secure sum's masks, and what a Flower run's receipt says about its secure sum.

SecAgg+ hides each client's vector from the server behind one-time masks: a
private mask from a fresh 32-byte seed, and one pairwise mask per neighbour
from a key both ends derive by ECDH + HKDF-SHA256 (32 bytes, which flwr hands
on as 44 bytes of URL-safe base64 text). The masks are only as strong as the
generator that expands these seeds.

**What the pinned flwr does** (flwr 1.41, read from the installed source and
checked by behaviour in ``tests/flower/test_flower_masks.py``):
``flwr.common.secure_aggregation.secaggplus_utils.pseudo_rand_gen`` XOR-folds
the seed, four bytes at a time, into one 32-bit integer and draws the masks
with ``numpy.random.RandomState`` (MT19937), uniform on ``[0, modulus - 2]``.
Two seeds with the same fold give the same masks, so a private-mask seed has at
most 2^32 values, and a pairwise seed at most 2^28 (base64 text has the top bit
of every byte clear, so the fold does too). An honest-but-curious server holds
every masked vector and, by the protocol, the private-mask seed of every
client that stays; what hides a client's vector is then the sum of its pairwise
masks with its k surviving neighbours, a search over 2^(28k) seed combinations
(about 2^(14k) by meet-in-the-middle on the first coordinates). SecAgg+ allows
the server t - 1 colluding clients (t the reconstruction threshold): they hand
it all but the client's last ``s - t`` pairwise seeds (s neighbours, 1 with
the default ``max-dropouts = 1``), which it searches, 2^28 each, and unmasks the
client. So the masks give no cryptographic protection, and against the server
a client's data would be protected only by that client's own noise share
(under distributed DP, the ε of one share seen alone; under secure aggregation
alone, not at all). Newer flwr versions reportedly expand the seed
with HMAC-SHA256 in counter mode; fedeval pins 1.41 (1.42 cannot install here).

**What fedeval does.** Both fedeval apps replace that generator, in the two
flwr modules that call it (the client mod and the server workflow), with
:func:`expand_masks`: SHAKE-256 of the whole seed, uniform on ``[0, modulus)``.
The protocol is otherwise flwr's, unchanged; client and server must expand
masks the same way, so each client states its generator when the server
selects it (``describe``) and a client that states another one is not used in
a secure sum. :func:`secure_sum_statement` is what every Flower run's receipt
then says about its secure sum: the implementation and its version, the mask
generator, and what the secure sum assumes. fedeval replaces the generator
rather than refusing: with the replacement the secure sum means what SecAgg+
promises; without it no SecAgg+ run on the pinned flwr would.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "MASK_GENERATOR",
    "FlwrMaskFacts",
    "expand_masks",
    "fold_seed",
    "install_mask_generator",
    "mask_generator_installed",
    "probe_flwr_masks",
    "secure_sum_statement",
]

MASK_GENERATOR = "fedeval-shake256/1"
"""The name (and version) of fedeval's mask expansion, stated by every client."""

_DOMAIN = b"fedeval secagg+ mask v1\x00"
_FLWR_UTILS = "flwr.common.secure_aggregation.secaggplus_utils"
# The flwr modules that call pseudo_rand_gen (both import it by name).
_CALLERS = (
    "flwr.client.mod.secure_aggregation.secaggplus_mod",
    "flwr.server.workflow.secure_aggregation.secaggplus_workflow",
)


def expand_masks(
    seed: bytes, num_range: int, dimensions_list: list[tuple[int, ...]]
) -> list[NDArray[np.int64]]:
    """Masks for SecAgg+ from the whole seed: fedeval's replacement of flwr's ``pseudo_rand_gen``.

    Same signature and output as flwr's function (one int64 array per shape,
    a 0-d array for ``()``), so flwr's client mod and server workflow call it
    unchanged. The stream is SHAKE-256 of a domain tag, the seed's length and
    the seed (all of it: 256 bits of key), read as little-endian 64-bit words;
    each coordinate is one word reduced modulo ``num_range``, a power of two,
    hence exactly uniform on ``[0, num_range)``.

    Parameters
    ----------
    seed : bytes
        The private-mask seed (32 random bytes) or a pairwise key (44 bytes of
        base64 text of a 32-byte HKDF-SHA256 output).
    num_range : int
        SecAgg+'s modulus: a power of two, at most 2**62.
    dimensions_list : list of tuple of int
        The shapes of the masked arrays.

    Returns
    -------
    list of ndarray of int64

    Raises
    ------
    ValueError
        An empty seed, or a modulus that is not a power of two in [2, 2**62].
    """
    if not seed:
        raise ValueError("the mask seed is empty")
    r = int(num_range)
    if r < 2 or r > 2**62 or r & (r - 1):
        raise ValueError(f"num_range must be a power of two in [2, 2**62], got {num_range}")
    sizes = [math.prod(shape) for shape in dimensions_list]
    xof = hashlib.shake_256(_DOMAIN + len(seed).to_bytes(8, "little") + bytes(seed))
    words = np.frombuffer(xof.digest(8 * max(sum(sizes), 1)), dtype="<u8")
    coords = (words & np.uint64(r - 1)).astype(np.int64)
    out: list[NDArray[np.int64]] = []
    start = 0
    for shape, size in zip(dimensions_list, sizes, strict=True):
        out.append(coords[start : start + size].reshape(shape).copy())
        start += size
    return out


def fold_seed(seed: bytes) -> int:
    """The 32-bit XOR fold of ``seed`` (four bytes at a time), as flwr 1.41 computes it."""
    if len(seed) % 4:
        raise ValueError(f"the seed's length must be a multiple of 4, got {len(seed)}")
    folded = 0
    for i in range(0, len(seed), 4):
        folded ^= int.from_bytes(seed[i : i + 4], "little")
    return folded


def install_mask_generator() -> None:
    """Make flwr's SecAgg+ client mod and server workflow expand masks with :func:`expand_masks`.

    Idempotent, and process-wide: every SecAgg+ round this process runs
    afterwards uses fedeval's generator (the fedeval ClientApp calls this in
    its mod, the ServerApp before each secure sum). flwr's own
    ``pseudo_rand_gen`` stays where it is, for :func:`probe_flwr_masks`.

    Raises
    ------
    RuntimeError
        The installed flwr does not call ``pseudo_rand_gen`` where flwr 1.41
        does: fedeval cannot vouch for its masks, so no secure sum is run.
    """
    for name in _CALLERS:
        module = importlib.import_module(name)
        if not hasattr(module, "pseudo_rand_gen"):
            import flwr

            raise RuntimeError(
                f"flwr {flwr.__version__}: {name} has no pseudo_rand_gen; fedeval replaces "
                "flwr 1.41's SecAgg+ mask generator there (it folds seeds to 32 bits) and "
                "cannot vouch for another version's masks. Install flwr 1.41.*"
            )
        setattr(module, "pseudo_rand_gen", expand_masks)  # noqa: B010  (module global)


def mask_generator_installed() -> bool:
    """Whether every flwr SecAgg+ caller in this process uses :func:`expand_masks`."""
    return all(
        getattr(importlib.import_module(name), "pseudo_rand_gen", None) is expand_masks
        for name in _CALLERS
    )


@dataclass(frozen=True)
class FlwrMaskFacts:
    """What the installed flwr's own mask generator does, found by running it.

    Attributes
    ----------
    flwr_version : str
    function : str
        Where the generator lives (``module.function``).
    folds_to_32_bits : bool
        Two different 32-byte seeds with the same 32-bit XOR fold give the
        same masks: at most 2^32 distinct masks per seed.
    mt19937 : bool
        The generator's source draws the masks from
        ``numpy.random.RandomState`` seeded with the fold (read with
        :func:`inspect.getsource`; fedeval makes no draw of its own to compare,
        ``tests/flower/test_flower_masks.py`` checks the masks themselves).
    pairwise_seed_bits : int or None
        Bits of the folded pairwise seed that can vary (28 when the pairwise
        key is base64 text and the generator folds); None when it does not fold.
    """

    flwr_version: str
    function: str
    folds_to_32_bits: bool
    mt19937: bool
    pairwise_seed_bits: int | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def probe_flwr_masks() -> FlwrMaskFacts:
    """Run the installed flwr's own ``pseudo_rand_gen`` on seeds chosen to tell, and read its source.

    See :class:`FlwrMaskFacts`.
    """
    import flwr
    from flwr.common.secure_aggregation.crypto.symmetric_encryption import generate_shared_key
    from flwr.supercore.primitives.asymmetric import generate_key_pairs

    generator = importlib.import_module(_FLWR_UTILS).pseudo_rand_gen
    modulus = 2**32
    shapes: list[tuple[int, ...]] = [(16,)]
    a = bytes(range(32))
    # Flip the same bits in the first two words: another seed with the same fold.
    flip = bytes([0xA5, 0x5A, 0xC3, 0x3C])
    b = bytes(x ^ y for x, y in zip(a[:8], flip * 2, strict=True)) + a[8:]
    first = generator(a, modulus, shapes)[0]
    folds = bool(np.array_equal(first, generator(b, modulus, shapes)[0]))
    try:
        source = inspect.getsource(generator)
    except (OSError, TypeError):  # no source installed: claim nothing
        source = ""
    mt = "RandomState(" in source
    sk1, _ = generate_key_pairs()
    _, pk2 = generate_key_pairs()
    key = generate_shared_key(sk1, pk2)
    ascii_key = all(byte < 0x80 for byte in key)
    return FlwrMaskFacts(
        flwr_version=str(flwr.__version__),
        function=f"{_FLWR_UTILS}.pseudo_rand_gen",
        folds_to_32_bits=folds,
        mt19937=mt,
        pairwise_seed_bits=(28 if ascii_key else 32) if folds else None,
    )


def _flwr_generator_in_words(facts: FlwrMaskFacts) -> str:
    if not facts.folds_to_32_bits:
        return (
            f"flwr {facts.flwr_version}'s own {facts.function} (not used) gives different masks "
            "for seeds with the same 32-bit fold"
        )
    prg = "numpy's RandomState (MT19937)" if facts.mt19937 else "a generator seeded with it"
    return (
        f"flwr {facts.flwr_version}'s own {facts.function} (not used) XOR-folds each seed into "
        f"32 bits and draws the masks with {prg}: at most 2^32 private-mask seeds, which the "
        f"server rebuilds anyway, and 2^{facts.pairwise_seed_bits} pairwise seeds (the pairwise "
        "key is base64 text). A server with the t - 1 colluding clients SecAgg+ allows learns "
        "all but s - t of a client's pairwise masks and searches the rest, "
        f"2^{facts.pairwise_seed_bits} seeds each; alone it searches the pairwise seeds of the "
        "client's k surviving neighbours jointly (about 2^(14k) work by meet-in-the-middle). "
        "Either way it unmasks the client's vector: these masks are not cryptographic"
    )


def secure_sum_statement(
    *,
    threshold: int,
    num_shares: int,
    one_share_epsilon: float | None,
    facts: FlwrMaskFacts | None = None,
) -> dict[str, Any]:
    """What a Flower run's receipt says about one secure sum.

    Parameters
    ----------
    threshold : int
        SecAgg+'s reconstruction threshold t (public: planned from public inputs).
    num_shares : int
        Neighbours per client, itself included (public).
    one_share_epsilon : float or None
        Distributed DP: the exact ε of one client's noise share seen alone,
        what protects a client against a server that unmasks its vector;
        None for secure aggregation alone (no noise: no protection then);
        infinite for a share that states no guarantee alone (Skellam).
    facts : FlwrMaskFacts, optional
        The installed flwr's own generator (default: :func:`probe_flwr_masks`).

    Returns
    -------
    dict
        ``implementation``, ``flwr_version``, ``masks`` (the generator used and
        flwr's own, with what it would have allowed), ``assumptions`` (list),
        ``summary`` (one sentence, also appended to the release's guarantee).
    """
    facts = probe_flwr_masks() if facts is None else facts
    if one_share_epsilon is None:
        exposed = "its exact vector, unprotected (secure aggregation alone adds no noise)"
    elif not math.isfinite(one_share_epsilon):
        exposed = "its vector with its own noise share only, for which no guarantee is stated"
    else:
        exposed = (
            f"its vector with its own noise share only: ε = {one_share_epsilon:.6g} for that "
            "client's data instead of the target"
        )
    masks = {
        "generator": MASK_GENERATOR,
        "description": (
            "fedeval's expand_masks: SHAKE-256 of the whole seed (the 32-byte private-mask seed; "
            "the pairwise key, 32 bytes from ECDH and HKDF-SHA256), uniform modulo the SecAgg+ "
            "modulus; installed in flwr's client mod and server workflow by both fedeval apps"
        ),
        "flwr_pseudo_rand_gen": {
            **facts.as_dict(),
            "in_words": _flwr_generator_in_words(facts),
            "what_a_server_would_see_of_a_client_with_it": exposed,
        },
    }
    assumptions = [
        "an honest-but-curious server: it follows the protocol. flwr's SecAgg+ has no "
        "consistency round, so a server that tells clients different sets of dropped clients "
        "can collect both a client's mask seed and its key shares and unmask it",
        f"the server colludes with fewer than t = {threshold} clients among any client's "
        f"{num_shares} neighbours (itself included); t or more can rebuild its masks",
        f"the sum is released only when at least t = {threshold} clients contribute",
        "the server distributes the clients' public keys (there is no PKI): a server that "
        "substitutes keys is not honest-but-curious and is not covered",
        "the transport between SuperNodes and the SuperLink is TLS (a deployment started with "
        "--insecure, or the local simulation, relies on the host alone)",
        "the secure sum hides the individual vectors computationally (256-bit seeds); the DP "
        "guarantee of the sum holds against anyone, the server included, under these "
        "assumptions",
    ]
    summary = (
        f"secure sum: SecAgg+ of flwr {facts.flwr_version} with fedeval's {MASK_GENERATOR} masks "
        "(flwr's own generator folds seeds to 32 bits and is not used), assuming an "
        f"honest-but-curious server colluding with fewer than {threshold} clients"
        if facts.folds_to_32_bits
        else f"secure sum: SecAgg+ of flwr {facts.flwr_version} with fedeval's {MASK_GENERATOR} "
        f"masks, assuming an honest-but-curious server colluding with fewer than {threshold} "
        "clients"
    )
    return {
        "implementation": (
            "Flower SecAgg+ (flwr.client.mod.secaggplus_mod and "
            "flwr.server.workflow.SecAggPlusWorkflow), integer-exact configuration"
        ),
        "flwr_version": facts.flwr_version,
        "masks": masks,
        "assumptions": assumptions,
        "summary": summary,
    }
