"""``fedeval flower-sim`` as a user runs it (issue 16): quiet, estimates in its JSON, and a
non-zero exit status when the run fails. Also runs the README's Flower block."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedeval.report.schema import validate_results
from readme_blocks import ROOT, readme_blocks, run_bash_block

pytest.importorskip("flwr")

pytestmark = [pytest.mark.flower, pytest.mark.slow]


def _fedeval(args: list[str], cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "FLWR_TELEMETRY_ENABLED": "0",
        "FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION": "1",
        "FLWR_HOME": str(home),
        "MPLBACKEND": "Agg",
    }
    return subprocess.run(
        [sys.executable, "-m", "fedeval.cli", "flower-sim", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.fixture
def scores_csv(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 1500)
    s = np.clip(rng.normal(0.4 + 0.25 * y, 0.15), 0, 1)
    path = tmp_path / "scores.csv"
    pd.DataFrame({"score": s, "label": y}).to_csv(path, index=False)
    return path


def test_json_has_estimates_and_errors_not_raw_sums_and_no_deprecation_noise(
    scores_csv: Path, tmp_path: Path
) -> None:
    args = [str(scores_csv), "--clients", "4", "--privacy", "distdp", "--epsilon", "1"]
    args += ["--max-examples-per-client", "600", "--height", "6", "--seed", "0"]
    res = _fedeval([*args, "--out", "rep", "--json"], tmp_path, tmp_path / "home")
    assert res.returncode == 0, res.stderr[-3000:]
    assert "DEPRECATED" not in res.stderr and "deprecated" not in res.stderr.lower()
    assert len(res.stdout) < 60_000  # was 431 KB of released sums
    payload = json.loads(res.stdout)
    assert payload["schema"] == "fedeval.evaluation/1"
    validate_results(payload)  # the one schema of every command (issue 29)
    validate_results(json.loads((tmp_path / "rep" / "results.json").read_text()))
    (ev,) = payload["evaluations"].values()
    auc = ev["metrics"]["roc_auc"]
    assert 0.5 < auc["estimate"] < 1 and auc["se"] > 0
    assert ev["receipt"]["epsilon_spent"] == pytest.approx(1.0)
    assert "released_sum" not in res.stdout and "released_levels" not in res.stdout
    assert payload["flower"]["evaluations"]


def test_a_failing_run_exits_non_zero(scores_csv: Path, tmp_path: Path) -> None:
    # More clients required than exist: the ServerApp fails inside the run.
    args = [str(scores_csv), "--clients", "3", "--privacy", "sa", "--min-clients", "4"]
    res = _fedeval([*args, "--out", "rep"], tmp_path, tmp_path / "home")
    assert res.returncode != 0
    assert res.stderr.strip().splitlines()[-1].startswith("fedeval: error:"), res.stderr[-2000:]


def test_the_readme_flower_block_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FLWR_HOME", str(tmp_path / "home"))
    blocks = readme_blocks()
    namespace: dict[str, object] = {"__name__": "__readme__"}
    quickstart = next(b for b in blocks if b.lang == "python")
    exec(compile(quickstart.code, "README.md quickstart", "exec"), namespace)  # writes scores.csv
    flower = [b for b in blocks if b.tag == "flower"]
    assert flower
    for block in flower:
        run_bash_block(block, tmp_path)
    assert (tmp_path / "flower-report" / "report.html").exists()
    # As the README says: flower-sim writes no Flower configuration and starts no
    # SuperLink (unlike `flwr federation simulation-config`).
    home = tmp_path / "home"
    assert not (home / "config.toml").exists() and not (home / "local-superlink").exists()
