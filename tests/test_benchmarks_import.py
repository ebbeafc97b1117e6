"""Every benchmark script still imports: the names it uses exist after a refactor.

The benchmarks run for minutes and are not part of the suite; importing them
(each guards its work behind ``if __name__ == "__main__"``) is cheap and catches
the commonest rot, a renamed or removed fedeval name.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).parents[1] / "benchmarks").glob("*.py"))


@pytest.mark.parametrize("script", BENCHMARKS, ids=lambda p: p.stem)
def test_benchmark_imports(script: Path) -> None:
    source = script.read_text()
    assert 'if __name__ == "__main__":' in source, f"{script.name} runs on import"
    spec = importlib.util.spec_from_file_location(f"_bench_{script.stem}", script)
    assert spec is not None and spec.loader is not None
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
