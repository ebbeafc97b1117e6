"""Issue 24, item 7: a Flower run's receipt names its secure sum, and says what holds for it.

One public report says SecAgg+ masks in some flwr versions come from a
non-cryptographic generator with a 32-bit seed. These tests read the
*installed* flwr (the version fedeval pins, ``flwr[simulation]==1.41.*``),
establish what its mask generator does from its source and its behaviour, and
check that the receipt fedeval writes says exactly that; then that fedeval's
replacement is what both parties of a secure sum actually use, and that the
sum is still exact, dropouts included.
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

flwr = pytest.importorskip("flwr")

import fedeval as fe  # noqa: E402
from fedeval.flower.masks import (  # noqa: E402
    MASK_GENERATOR,
    expand_masks,
    fold_seed,
    install_mask_generator,
    mask_generator_installed,
    probe_flwr_masks,
    secure_sum_statement,
)
from helpers import release_hierarchy  # noqa: E402

pytestmark = pytest.mark.flower

UTILS = "flwr.common.secure_aggregation.secaggplus_utils"
CALLERS = (
    "flwr.client.mod.secure_aggregation.secaggplus_mod",
    "flwr.server.workflow.secure_aggregation.secaggplus_workflow",
)


def _flwr_generator():
    return importlib.import_module(UTILS).pseudo_rand_gen


def _same_fold(seed: bytes) -> bytes:
    """Another seed with the same 32-bit XOR fold: flip the same bits in two words."""
    flip = bytes([0x0F, 0xF0, 0x81, 0x18])
    other = bytes(a ^ b for a, b in zip(seed[:8], flip * 2, strict=True)) + seed[8:]
    assert other != seed and fold_seed(other) == fold_seed(seed)
    return other


def _statement(**kw: object) -> dict:
    args: dict = {"threshold": 4, "num_shares": 5, "one_share_epsilon": 3.2}
    args.update(kw)
    return secure_sum_statement(**args)


def test_the_probe_claims_neither_fold_nor_mt19937_for_a_generator_without_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The receipt's facts come from the installed generator, not from a constant."""
    monkeypatch.setattr(importlib.import_module(UTILS), "pseudo_rand_gen", expand_masks)
    facts = probe_flwr_masks()
    assert not facts.folds_to_32_bits and not facts.mt19937
    assert facts.pairwise_seed_bits is None


def test_the_pinned_flwr_is_the_version_fedeval_declares() -> None:
    pin = (Path(__file__).parents[2] / "pyproject.toml").read_text()
    assert 'flwr[simulation]==1.41.*"' in pin
    assert flwr.__version__.startswith("1.41.")


def test_installed_flwr_masks_come_from_a_32_bit_fold_and_mt19937_as_the_receipt_says() -> None:
    generator = _flwr_generator()
    source = inspect.getsource(generator)
    # The installed source: XOR-fold to 32 bits, then numpy's legacy MT19937.
    assert "seed32 ^=" in source and "RandomState(seed32)" in source
    # Its behaviour: different 32-byte seeds with the same fold give the same masks,
    # which are MT19937 draws from the fold.
    rng = np.random.default_rng(5)
    seed = rng.bytes(32)
    shapes = [(40,), (3, 2), ()]
    a = generator(seed, 2**20, shapes)
    b = generator(_same_fold(seed), 2**20, shapes)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    mt = np.random.RandomState(fold_seed(seed)).randint(0, 2**20 - 1, (40,), dtype=np.int64)
    np.testing.assert_array_equal(a[0], mt)
    # The receipt says exactly this.
    facts = probe_flwr_masks()
    assert facts.folds_to_32_bits and facts.mt19937
    assert facts.flwr_version == flwr.__version__
    flwr_part = _statement(facts=facts)["masks"]["flwr_pseudo_rand_gen"]
    assert flwr_part["function"] == f"{UTILS}.pseudo_rand_gen"
    words = flwr_part["in_words"]
    assert "XOR-folds each seed into 32 bits" in words and "MT19937" in words
    assert "not cryptographic" in words
    assert "noise share only: ε = 3.2" in flwr_part["what_a_server_would_see_of_a_client_with_it"]


def test_pairwise_seeds_are_base64_text_so_their_fold_has_28_bits() -> None:
    from flwr.common.secure_aggregation.crypto.symmetric_encryption import generate_shared_key
    from flwr.supercore.primitives.asymmetric import generate_key_pairs

    for _ in range(20):
        sk, _pk = generate_key_pairs()
        _sk, pk = generate_key_pairs()
        key = generate_shared_key(sk, pk)
        assert len(key) == 44 and fold_seed(key) & 0x80808080 == 0
    assert probe_flwr_masks().pairwise_seed_bits == 28
    assert "2^28 pairwise seeds" in _statement()["masks"]["flwr_pseudo_rand_gen"]["in_words"]


def test_a_statement_follows_the_generator_it_is_given() -> None:
    """Had flwr's generator not folded, the receipt would not claim it does."""
    from dataclasses import replace

    strong = replace(probe_flwr_masks(), folds_to_32_bits=False, pairwise_seed_bits=None)
    statement = _statement(facts=strong)
    assert "folds" not in statement["summary"]
    assert "XOR-folds" not in statement["masks"]["flwr_pseudo_rand_gen"]["in_words"]
    sa = _statement(one_share_epsilon=None)
    assert (
        "unprotected"
        in sa["masks"]["flwr_pseudo_rand_gen"]["what_a_server_would_see_of_a_client_with_it"]
    )


def test_fedeval_masks_use_the_whole_seed_and_are_uniform() -> None:
    rng = np.random.default_rng(9)
    seed = rng.bytes(32)
    shapes = [(5000,), (2, 3), ()]
    a = expand_masks(seed, 2**16, shapes)
    assert [x.shape for x in a] == [(5000,), (2, 3), ()]
    assert all(x.dtype == np.int64 for x in a)
    # Deterministic in the seed (both parties must agree), different for a same-fold seed.
    assert all(
        np.array_equal(x, y) for x, y in zip(a, expand_masks(seed, 2**16, shapes), strict=True)
    )
    assert not np.array_equal(a[0], expand_masks(_same_fold(seed), 2**16, shapes)[0])
    # Uniform on [0, modulus): every value reachable, mean and range as expected.
    big = expand_masks(seed, 4, [(40_000,)])[0]
    assert set(np.unique(big)) == {0, 1, 2, 3}
    assert np.bincount(big).min() > 9_500
    assert a[0].min() >= 0 and a[0].max() < 2**16
    with pytest.raises(ValueError, match="power of two"):
        expand_masks(seed, 1000, shapes)


def test_fedeval_replaces_every_use_of_flwr_generator_in_both_parties() -> None:
    root = Path(flwr.__file__).parent
    users = {
        ".".join(p.relative_to(root.parent).with_suffix("").parts)
        for p in root.rglob("*.py")
        if "pseudo_rand_gen" in p.read_text(encoding="utf-8")
    }
    assert users == {UTILS, *CALLERS}  # nothing else in flwr expands masks
    install_mask_generator()
    assert mask_generator_installed()
    for name in CALLERS:
        assert importlib.import_module(name).pseudo_rand_gen is expand_masks
    # flwr's own function stays where it is (the receipt describes it).
    assert _flwr_generator() is not expand_masks


def test_a_secure_sum_with_a_dropout_is_exact_and_its_receipt_names_it(
    run_in_process, tmp_path: Path
) -> None:
    """Server and clients unmask with fedeval's generator: the sum is exact, a dropout
    included (the server rebuilds the dropped client's pairwise masks)."""
    rng = np.random.default_rng(3)
    frames = [
        pd.DataFrame({"score": rng.random(4), "label": rng.integers(0, 2, 4)}) for _ in range(6)
    ]
    run = run_in_process(
        frames,
        {"privacy": "sa", "height": 3, "seed": 0, "max-dropouts": 1},
        {"simulate-dropout": "2"},
    )
    ev = run.flower_result["evaluations"]["sa"]
    kept = [f for i, f in enumerate(frames) if i != 2]
    df = pd.concat([f.assign(client=i) for i, f in enumerate(kept)], ignore_index=True)
    fed = fe.Federation.from_frame(df, score="score", label="label", client="client")
    ref = release_hierarchy(fed, fe.SecureAggregation(), height=3)
    for got, want in zip(ev["released_levels"], ref.levels, strict=True):
        np.testing.assert_array_equal(np.asarray(got), want)
    secure = ev["facts"]["secure_sum"]
    assert secure["flwr_version"] == flwr.__version__
    assert secure["masks"]["generator"] == MASK_GENERATOR
    assert "SecAggPlusWorkflow" in secure["implementation"]
    text = " ".join(secure["assumptions"])
    for needed in ("honest-but-curious", "fewer than t = ", "TLS", "no PKI"):
        assert needed in text
    # The release's guarantee ends with the one-line statement of its secure sum.
    assert ev["guarantee"].endswith(secure["summary"])
    assert f"SecAgg+ of flwr {flwr.__version__}" in secure["summary"]


def test_a_client_with_another_mask_generator_is_not_summed(
    run_in_process, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fedeval.flower.client_app as client_app

    monkeypatch.setattr(client_app, "MASK_GENERATOR", "flwr's own")
    frames = [pd.DataFrame({"score": [0.2, 0.7], "label": [0, 1]}) for _ in range(4)]
    from fedeval.flower.replies import NotEnoughClientsError

    with pytest.raises(NotEnoughClientsError, match="client selection"):
        run_in_process(frames, {"privacy": "sa", "seed": 0})
    assert any("expands SecAgg+ masks with flwr's own" in line for line in run_in_process.last_log)
