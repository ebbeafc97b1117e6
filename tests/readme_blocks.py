"""The fenced code blocks of README.md, for the tests that run them.

A block may be preceded by ``<!-- ci: TAG ... -->``: ``flower`` (run by the Flower
tests, which have flwr), ``skip`` (run by ``.ci/run`` itself). The first bash block
(the two set-up commands) is run verbatim by ``.ci/run``. Blocks without a language
(diagrams) are not code.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
_BLOCK = re.compile(r"(?:<!-- ci: (\w+)[^>]*-->\n)?```(\w+)\n(.*?)^```", re.S | re.M)


@dataclass(frozen=True)
class Block:
    tag: str
    lang: str
    code: str
    line: int


def readme_blocks() -> list[Block]:
    text = README.read_text(encoding="utf-8")
    return [
        Block(m.group(1) or "", m.group(2), m.group(3), text.count("\n", 0, m.start()) + 1)
        for m in _BLOCK.finditer(text)
    ]


def run_bash_block(block: Block, cwd: Path, timeout: float = 600) -> None:
    """Run a bash block with ``fedeval`` bound to this interpreter's ``fedeval.cli``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "MPLBACKEND": "Agg"}
    script = f'set -euo pipefail\nfedeval() {{ "{sys.executable}" -m fedeval.cli "$@"; }}\n'
    res = subprocess.run(
        ["bash", "-c", script + block.code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert res.returncode == 0, f"README line {block.line}:\n{block.code}\n{res.stderr[-3000:]}"
