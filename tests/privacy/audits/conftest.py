"""Fixtures shared by the end-to-end privacy audits."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from audit_cases import patch_mechanism_for


@pytest.fixture
def half_the_noise(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A deliberately broken release: the noise of 2ε, while ε is claimed and charged.

    Every mechanism is calibrated by the one dispatch
    (:func:`fedeval.privacy.mechanism_for.mechanism_for`) to twice the budget —
    half the discrete Laplace scale, OUE at 2ε for local DP, the continual
    strategy's rows at 2ε — while its ledger entries and guarantee stay those
    of ε, so receipts, contexts and monitors account exactly as for an honest
    release. The audits compare with the ε the caller asked for; each twin
    must see the broken release exceed it.
    """
    original = importlib.import_module("fedeval.privacy.mechanism_for").mechanism_for

    def weak(privacy: Any, sketch: Any, **kwargs: Any) -> Any:
        claimed = original(privacy, sketch, **kwargs)
        return replace(
            original(privacy.scaled(2.0), sketch, **kwargs),
            ledger_entries=claimed.ledger_entries,
            guarantee=claimed.guarantee,
        )

    patch_mechanism_for(monkeypatch, weak)
    yield
