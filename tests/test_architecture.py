"""The one-way data flow of DESIGN.md holds on the source tree (tools/check_architecture.py).

Each rule is also checked on a small synthetic module, so that a checker that
stopped seeing violations would fail here.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SPEC = importlib.util.spec_from_file_location(
    "check_architecture", ROOT / "tools" / "check_architecture.py"
)
assert SPEC is not None and SPEC.loader is not None
checker = importlib.util.module_from_spec(SPEC)
sys.modules["check_architecture"] = checker
SPEC.loader.exec_module(checker)


def test_source_tree_has_no_violation() -> None:
    problems = [p for path in sorted(checker.SRC.rglob("*.py")) for p in checker.check_file(path)]
    assert problems == []


@pytest.mark.parametrize(
    ("where", "code", "rule"),
    [
        ("metrics/x.py", "def f(rng):\n    return rng.normal(0, 1, 3)\n", "rule 1"),
        ("evaluation.py", "def f(gen):\n    return gen.integers(5)\n", "rule 1"),
        (
            "metrics/x.py",
            "from fedeval.privacy.ledger import LedgerEntry\nLedgerEntry('a', 1, 0, 'example')\n",
            "rule 2",
        ),
        ("evaluation.py", "def f(ledger, e):\n    ledger.charge_all(e)\n", "rule 2"),
        (
            "metrics/x.py",
            "from fedeval.privacy.models import LocalDP\ndef f(m):\n    return isinstance(m, LocalDP)\n",
            "rule 3",
        ),
        ("flower/x.py", "import numpy as np\ndef f(x):\n    return np.bincount(x)\n", "rule 4"),
        ("sketches/x.py", "from fedeval.privacy.noise import CentralNoise\n", "rule 5"),
        ("metrics/x.py", "from fedeval.sketches.tree import _hidden\n", "rule 6"),
    ],
)
def test_checker_sees_each_kind_of_violation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str, code: str, rule: str
) -> None:
    path = tmp_path / where
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(code)
    monkeypatch.setattr(checker, "SRC", tmp_path)
    problems = checker.check_file(path)
    assert any(rule in p for p in problems), problems


def test_allowed_places_are_not_flagged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checker, "SRC", tmp_path)
    for where, code in [
        ("privacy/x.py", "def f(rng):\n    return rng.normal(0, 1, 3)\n"),
        ("data/partition.py", "def f(rng):\n    return rng.permutation(5)\n"),
        ("postprocess/bootstrap.py", "def f(rng):\n    return rng.standard_normal(5)\n"),
        ("aggregation/release.py", "def f(ledger, e):\n    ledger.charge_all(e)\n"),
        (
            "privacy/y.py",
            "from fedeval.privacy.models import LocalDP\ndef f(m):\n    return isinstance(m, LocalDP)\n",
        ),
        (
            "sketches/y.py",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from fedeval.aggregation.release import Release\n",
        ),
    ]:
        path = tmp_path / where
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(code)
        assert checker.check_file(path) == [], where
