"""Every JSON document fedeval writes or prints follows ``results.schema.json`` (issue 29).

Each CLI command runs once with ``--json``; the printed document and the
``results.json`` it wrote are validated against the shipped schema, and the
two must be the same document (``--json`` adds only ``report``, the paths).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pandas as pd
import pytest

import fedeval as fe
from fedeval.cli import main
from fedeval.report.schema import results_schema, validate_results

N = 1_800
K = 4


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    rng = np.random.default_rng(0)
    folder = tmp_path_factory.mktemp("schema")
    y = (rng.random(N) < 0.4).astype(int)
    z = rng.normal(1.2 * y, 1.0)
    binary = pd.DataFrame(
        {
            "lr": 1 / (1 + np.exp(-z)),
            "gb": 1 / (1 + np.exp(-(z + rng.normal(0, 0.5, N)))),
            "y": y,
            "client": np.arange(N) % 180,
            "region": rng.choice(["EU", "US"], N),
            "period": np.arange(N) % 6 + 1,
        }
    )
    labels = rng.integers(0, K, N)
    p = rng.dirichlet(np.ones(K), N)
    p[np.arange(N), labels] += 1.0
    p /= p.sum(axis=1, keepdims=True)
    multi = pd.DataFrame({f"p{j}": p[:, j] for j in range(K)})
    multi["y"] = labels
    multi["client"] = np.arange(N) % 180
    binary.to_csv(folder / "binary.csv", index=False)
    multi.to_csv(folder / "multi.csv", index=False)
    return {"binary": folder / "binary.csv", "multi": folder / "multi.csv"}


def _commands(data: dict[str, Path]) -> dict[str, list[str]]:
    b, m = str(data["binary"]), str(data["multi"])
    base = ["--label", "y", "--client", "client"]
    cols = [f"p{j}" for j in range(K)]
    dp = ["--privacy", "distdp", "--epsilon", "1"]
    return {
        "evaluate": ["evaluate", b, "--score", "lr", *base, *dp],
        "evaluate-client-level": [
            "evaluate", b, "--score", "lr", *base, *dp, "--unit", "client",
            "--contribution-bound", "12",
        ],
        "evaluate-multiclass": ["evaluate", m, "--score", *cols, *base, *dp, "--compare-exact"],
        "evaluate-slices": [
            "evaluate", b, "--score", "lr", *base, *dp, "--slice", "region",
            "--slice-values", "EU", "US",
        ],
        "compare": ["compare", b, "--score-a", "lr", "--score-b", "gb", *base, *dp, "--margin", "0.02"],
        "calibrate": ["calibrate", b, "--score", "lr", *base, "--privacy", "sa"],
        "calibrate-multiclass": ["calibrate", m, "--score", *cols, *base, "--privacy", "sa"],
        "monitor": [
            "monitor", b, "--score", "lr", *base, "--period", "period", "--horizon", "6",
            "--examples-per-period", "300", *dp,
        ],
    }  # fmt: skip


KINDS = {
    "evaluate": "fedeval.evaluation/1",
    "evaluate-client-level": "fedeval.evaluation/1",
    "evaluate-multiclass": "fedeval.multiclass_evaluation/1",
    "evaluate-slices": "fedeval.slices/1",
    "compare": "fedeval.comparison/1",
    "calibrate": "fedeval.calibration/1",
    "calibrate-multiclass": "fedeval.calibration/1",
    "monitor": "fedeval.monitor/1",
}


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(argv) == 0, capsys.readouterr().err
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return document


@pytest.mark.parametrize("command", list(KINDS))
def test_every_command_prints_and_writes_one_schema(
    command: str, data: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    argv = [*_commands(data)[command], "--out", str(out), "--seed", "0", "--json", "--quiet"]
    printed = _run(argv, capsys)
    assert printed["schema"] == KINDS[command]
    validate_results(printed)
    written = json.loads((out / "results.json").read_text())
    validate_results(written)
    # --json prints the document results.json holds, plus the paths of the files written.
    assert Path(printed["report"]["json"]) == out / "results.json"
    assert {k: v for k, v in printed.items() if k != "report"} == {
        k: v for k, v in written.items() if k != "report"
    }


def test_demo_and_plan_follow_the_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = _run(
        ["demo", "--out", str(tmp_path / "demo"), "--seed", "0", "--json", "--quiet"], capsys
    )
    validate_results(demo)
    validate_results(json.loads((tmp_path / "demo" / "results.json").read_text()))
    plan = _run(
        ["plan", "--clients", "1000", "--privacy", "distdp", "--epsilon", "1", "--json"], capsys
    )
    assert plan["schema"] == "fedeval.plan/1"
    validate_results(plan)


def test_the_library_writers_follow_the_schema(tmp_path: Path) -> None:
    """The same documents from the Python API (fe.report writers, no CLI facts)."""
    rng = np.random.default_rng(1)
    y = (rng.random(600) < 0.5).astype(int)
    s = np.clip(rng.normal(0.35 + 0.3 * y, 0.2), 0, 1)
    fed = fe.Federation.from_arrays(s, y, clients=np.arange(600) % 60)
    ev = fe.evaluate(fed, fe.DistributedDP(1.0), rng=2)
    paths = fe.report.write_report({"DistDP": ev}, tmp_path / "ev")
    validate_results(json.loads(paths["json"].read_text()))


def _document(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> dict[str, Any]:
    return _run(
        ["plan", "--clients", "500", "--privacy", "distdp", "--epsilon", "1", "--json"], capsys
    )


@pytest.mark.parametrize(
    "break_it",
    [
        pytest.param(lambda d: d.update(schema="fedeval.plan/9"), id="unknown version"),
        pytest.param(lambda d: d.update(extra_field=1), id="a field outside the layout"),
        pytest.param(lambda d: d.pop("height"), id="a required field missing"),
        pytest.param(lambda d: d.update(height="10"), id="a number as a string"),
    ],
)
def test_the_schema_rejects_a_changed_layout(
    break_it: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    document = _document(capsys, tmp_path)
    validate_results(document)
    break_it(document)
    with pytest.raises(jsonschema.ValidationError):
        validate_results(document)


def test_receipts_carry_a_one_line_guarantee_and_nan_is_null(tmp_path: Path) -> None:
    """A guarantee line with a newline, or a NaN written as NaN, breaks the schema."""
    rng = np.random.default_rng(3)
    fed = fe.Federation.from_arrays(rng.random(300), (rng.random(300) < 0.5).astype(int))
    ev = fe.evaluate(fed, fe.DistributedDP(1.0), rng=4)
    document = json.loads(fe.report.write_report({"a": ev}, tmp_path / "r")["json"].read_text())
    receipt = document["evaluations"]["a"]["receipt"]
    assert receipt["guarantee_line"] == ev.guarantee_line and "\n" not in ev.guarantee_line
    broken = json.loads(json.dumps(document))
    broken["evaluations"]["a"]["receipt"]["guarantee_line"] = "first line\nsecond line"
    with pytest.raises(jsonschema.ValidationError):
        validate_results(broken)
    broken = json.loads(json.dumps(document))
    broken["evaluations"]["a"]["metrics"]["roc_auc"]["estimate"] = "NaN"
    with pytest.raises(jsonschema.ValidationError):
        validate_results(broken)


def test_the_schema_is_a_valid_draft_2020_12_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(results_schema())


def test_comparison_and_slice_reports_state_the_guarantee_in_one_line(
    data: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 29: their Markdown printed the ~600-character paragraph as the receipt."""
    for command in ("compare", "evaluate-slices"):
        out = tmp_path / command
        document = _run(
            [*_commands(data)[command], "--out", str(out), "--seed", "0", "--json", "--quiet"],
            capsys,
        )
        markdown = (out / "report.md").read_text()
        receipt = markdown.split("## Privacy receipt", 1)[1]
        line = document["receipt"]["guarantee_line"]
        assert f"- guarantee: {line}" in receipt
        assert document["receipt"]["guarantee"]["statement"] not in markdown
