"""Every code block of README.md runs as written (issue 16: the quickstart raised NameError)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from readme_blocks import ROOT, readme_blocks, run_bash_block


def test_readme_opens_with_the_two_setup_commands_that_ci_runs() -> None:
    first = readme_blocks()[0]
    assert first.lang == "bash" and first.line < 6
    commands = [c for c in first.code.splitlines() if c.strip()]
    assert len(commands) == 2 and "fedeval demo" in commands[0] and "pytest" in commands[1]
    ci = (ROOT / ".ci" / "run").read_text()
    assert "README.md" in ci and 'bash -euo pipefail -c "${SETUP[0]}"' in ci
    assert 'bash -euo pipefail -c "${SETUP[1]}"' in ci


def test_readme_links_stay_inside_the_repository() -> None:
    text = (ROOT / "README.md").read_text()
    for target in re.findall(r"\]\(([^)]+)\)", text):
        assert not target.startswith(("http", "/", "..")), target
        assert (ROOT / target.split("#")[0]).exists(), target


@pytest.mark.integration
def test_every_python_and_command_block_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Python blocks run in order in one namespace; bash blocks after them, in the same dir."""
    monkeypatch.chdir(tmp_path)
    blocks = readme_blocks()[1:]  # the set-up commands are run by .ci/run
    namespace: dict[str, object] = {"__name__": "__readme__"}
    ran = 0
    for block in blocks:
        if block.lang == "python":
            exec(compile(block.code, f"README.md:{block.line}", "exec"), namespace)
            ran += 1
    assert (tmp_path / "my-report" / "report.html").exists()
    for block in blocks:
        if block.lang == "bash" and not block.tag:
            run_bash_block(block, tmp_path)
            ran += 1
    assert ran >= 7
    assert (tmp_path / "eval-report" / "report.html").exists()
    assert (tmp_path / "calibration-report" / "calibrator.json").exists()
