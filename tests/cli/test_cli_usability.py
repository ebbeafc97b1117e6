"""The command line a newcomer meets (issue 16): start-up, help, flags, errors, JSON."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedeval.cli import build_parser, main

HEAVY = ("numpy", "scipy", "matplotlib", "pandas", "sklearn", "pyarrow")


def test_importing_the_cli_imports_no_heavy_module() -> None:
    """``fedeval --help`` took ~1.4 s CPU importing numpy/scipy/matplotlib (issue 16)."""
    code = f"import sys, fedeval.cli; print([m for m in {HEAVY!r} if m in sys.modules])"
    src = str(Path(__file__).resolve().parents[2] / "src")
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": src, "PATH": "/usr/bin:/bin"},
    ).stdout
    assert out.strip() == "[]"


def test_help_runs_without_heavy_modules() -> None:
    code = (
        "import sys\nfrom fedeval.cli import main\n"
        "try:\n    main(['evaluate', '--help'])\nexcept SystemExit:\n    pass\n"
        f"print([m for m in {HEAVY!r} if m in sys.modules], file=sys.stderr)"
    )
    src = str(Path(__file__).resolve().parents[2] / "src")
    res = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": src, "PATH": "/usr/bin:/bin"},
    )
    assert "--compare-exact" in res.stdout
    assert res.stderr.strip() == "[]"


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("no subcommands")


def test_every_option_has_help_and_shows_its_default() -> None:
    commands = _subparsers(build_parser())
    assert set(commands) >= {"demo", "evaluate", "calibrate", "plan", "flower-sim"}
    for name, sub in commands.items():
        text = sub.format_help()
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help, f"{name} {action.option_strings or action.dest} has no help"
            meaningful = action.default not in (None, False, argparse.SUPPRESS)
            if meaningful and action.option_strings:
                assert f"(default: {action.default}" in " ".join(text.split()), (
                    name,
                    action.option_strings,
                )


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    import fedeval

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"fedeval {fedeval.__version__}"


@pytest.fixture
def scores_csv(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    n = 2000
    y = rng.integers(0, 2, n)
    s = np.clip(rng.normal(0.4 + 0.2 * y, 0.15), 0, 1)
    path = tmp_path / "scores.csv"
    pd.DataFrame({"s": s, "y": y, "c": rng.integers(0, 80, n)}).to_csv(path, index=False)
    return path


def _evaluate(path: Path, out: Path) -> list[str]:
    return ["evaluate", str(path), "--score", "s", "--label", "y", "--client", "c"]


def test_out_refuses_a_non_empty_directory_without_force(
    scores_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``evaluate`` silently overwrote the demo's report directory (issue 16)."""
    out = tmp_path / "rep"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    args = [*_evaluate(scores_csv, out), "--privacy", "sa", "--out", str(out), "--quiet"]
    assert main(args) == 2
    assert "--force" in capsys.readouterr().err
    assert {p.name for p in out.iterdir()} == {"keep.txt"}
    assert main([*args, "--force"]) == 0
    assert (out / "report.html").exists() and (out / "keep.txt").read_text() == "mine"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--privacy", "sa", "--epsilon", "1"], "takes no --epsilon"),
        (["--privacy", "ldp", "--epsilon", "1", "--noise", "polya"], "does not apply"),
        (["--privacy", "distdp", "--epsilon", "1", "--delta", "1e-5"], "--delta applies only"),
        (["--privacy", "distdp", "--epsilon", "1", "--noise", "skellam"], "needs --delta"),
        (["--privacy", "distdp", "--epsilon", "0"], "--epsilon must be > 0"),
        (["--privacy", "sa", "--score-min", "1", "--score-max", "0"], "--score-min (1)"),
    ],
)
def test_contradictory_flags_are_errors_before_any_work(
    scores_csv: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    flags: list[str],
    message: str,
) -> None:
    out = tmp_path / "rep"
    assert main([*_evaluate(scores_csv, out), *flags, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert not out.exists()


def test_errors_speak_the_command_line_not_python(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 16: ``score_range=(low, high)`` and ``np.float64(1.5)`` in error messages."""
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"s": [0.2, 1.5, 0.7], "y": [0, 1, 1]}).to_csv(bad, index=False)
    args = ["evaluate", str(bad), "--score", "s", "--label", "y", "--privacy", "sa"]
    assert main([*args, "--out", str(tmp_path / "o"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "1.5" in err and "--score-max" in err
    assert "np.float64" not in err and "score_range=" not in err


def test_one_json_schema_honours_thresholds_and_compare_exact(
    scores_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--json`` ignored ``--thresholds`` and ``--compare-exact`` (issue 16)."""
    out = tmp_path / "rep"
    args = [*_evaluate(scores_csv, out), "--privacy", "distdp", "--epsilon", "1"]
    args += ["--thresholds", "0.3", "0.6", "--compare-exact", "--seed", "0"]
    assert main([*args, "--out", str(out), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["schema"] == "fedeval.evaluation/1"
    assert payload["thresholds"] == [0.3, 0.6]
    (ev,) = payload["evaluations"].values()
    assert [a["threshold"] for a in ev["at_threshold"]] == [0.3, 0.6]
    for value in (ev["metrics"]["roc_auc"], ev["at_threshold"][1]["recall"]):
        assert value["se"] > 0 and {"estimate", "exact", "abs_error"} <= set(value)
    assert ev["receipt"]["epsilon_spent"] == pytest.approx(1.0)
    assert ev["receipt"]["guarantee"]["unit"] == "example"
    # results.json is the same document (less the paths of the report files).
    saved = json.loads((out / "results.json").read_text())
    assert saved == {k: v for k, v in payload.items() if k != "report"}
    # Without --compare-exact no exact value appears.
    assert main([*args[:-3], "--out", str(tmp_path / "b"), "--json"]) == 0
    assert '"exact"' not in capsys.readouterr().out


def test_console_table_shows_every_threshold(
    scores_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [*_evaluate(scores_csv, tmp_path), "--privacy", "sa", "--quiet"]
    assert main([*args, "--thresholds", "0.3", "0.6", "--out", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines()]
    thresholds = [r[1] for r in rows if len(r) > 2 and r[0] == "sa"]
    assert thresholds[-2:] == ["0.3", "0.6"], out


def test_progress_bar_names_each_step_on_stderr(
    scores_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [*_evaluate(scores_csv, tmp_path), "--privacy", "sa", "--out", str(tmp_path / "r")]
    assert main(args) == 0
    err = capsys.readouterr().err
    for step in ("reading scores.csv", "release under sa", "standard errors", "writing report"):
        assert step in err
    assert main([*args[:-1], str(tmp_path / "q"), "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_central_and_client_level_dp_are_offered_like_the_api(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 29: the CLI offered neither central DP nor client-level DP."""
    import numpy as np
    import pandas as pd

    from fedeval.cli import main

    f = tmp_path / "d.csv"
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 600)
    pd.DataFrame(
        {
            "s": np.clip(0.5 + 0.3 * (2 * y - 1) + rng.normal(0, 0.2, 600), 0, 1),
            "y": y,
            "c": np.arange(600) % 150,
        }
    ).to_csv(f, index=False)
    base = ["evaluate", str(f), "--score", "s", "--label", "y", "--epsilon", "1", "--json"]
    assert main([*base, "--privacy", "central", "--out", str(tmp_path / "a")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "central DP" in json.dumps(out)
    args = ["--privacy", "distdp", "--unit", "client", "--contribution-bound", "4"]
    assert main([*base, *args, "--client", "c", "--out", str(tmp_path / "b")]) == 0
    text = json.dumps(json.loads(capsys.readouterr().out))
    assert "per client" in text and "4 examples/client" in text
    for bad, says in [
        (["--privacy", "distdp", "--unit", "client"], "needs --contribution-bound"),
        (["--privacy", "ldp", "--unit", "client", "--contribution-bound", "2"], "distdp"),
        (["--privacy", "distdp", "--contribution-bound", "2"], "only with --unit client"),
        (["--privacy", "distdp", "--unit", "client", "--contribution-bound", "0"], ">= 1"),
    ]:
        assert main([*base, *bad, "--out", str(tmp_path / "x")]) == 2
        assert says in capsys.readouterr().err
