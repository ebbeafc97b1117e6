"""Issue 29: bad CLI inputs give a one-line error and exit code 2 before anything runs."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import fedeval as fe
from fedeval.cli import main
from fedeval.report.files import OutputDirectoryError


@pytest.fixture
def csv(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    s = rng.random(200)
    path = tmp_path / "s.csv"
    pd.DataFrame({"s": s, "y": (rng.random(200) < s).astype(int)}).to_csv(path, index=False)
    return path


def _evaluate(csv: Path, out: Path, *extra: str) -> list[str]:
    return ["evaluate", str(csv), "--score", "s", "--label", "y", "--out", str(out), *extra]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--privacy", "ldp", "--epsilon", "1e300"], "epsilon <= 700"),
        (["--privacy", "distdp", "--epsilon", "1e-300"], "at least 1e-09"),
    ],
)
def test_extreme_epsilons_are_one_line_errors(
    csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    assert main(_evaluate(csv, tmp_path / "o", *extra)) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_an_out_under_a_file_is_refused_before_the_release(
    csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    ran: list[int] = []
    monkeypatch.setattr(fe, "evaluate", lambda *a, **k: ran.append(1))
    args = _evaluate(csv, afile / "sub", "--privacy", "distdp", "--epsilon", "1")
    assert main(args) == 2
    assert "exists and is not a directory" in capsys.readouterr().err
    assert ran == []


def test_a_directory_given_as_the_input_file_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    adir = tmp_path / "adir"
    adir.mkdir()
    assert main(_evaluate(adir, tmp_path / "o", "--privacy", "sa")) == 2
    assert "is a directory" in capsys.readouterr().err


def test_plan_refuses_a_negative_target_error(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["plan", "--clients", "100", "--privacy", "distdp", "--epsilon", "1"]
    assert main([*args, "--target-error", "-1"]) == 2
    assert "target_error" in capsys.readouterr().err


def test_write_report_refuses_a_non_empty_directory(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    s = rng.random(300)
    fed = fe.Federation.from_arrays(s, (rng.random(300) < s).astype(int))
    ev = fe.evaluate(fed, fe.SecureAggregation(), height=4)
    out = tmp_path / "rep"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    with pytest.raises(OutputDirectoryError, match="not empty"):
        fe.report.write_report({"sa": ev}, out)
    assert sorted(p.name for p in out.iterdir()) == ["mine.txt"]
    fe.report.write_report({"sa": ev}, out, force=True)
    assert (out / "mine.txt").read_text() == "keep me"
    assert (out / "report.html").exists()


# ------------------------------------------------------- the table of bad inputs
@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("bad")
    rng = np.random.default_rng(2)
    n = 600
    y = (rng.random(n) < 0.4).astype(int)
    s = np.clip(rng.normal(0.35 + 0.3 * y, 0.2), 0, 1)
    frame = pd.DataFrame(
        {
            "lr": s,
            "gb": np.clip(s + rng.normal(0, 0.05, n), 0, 1),
            "y": y,
            "client": np.arange(n) % 60,
            "region": rng.choice(["EU", "US"], n),
            "period": np.arange(n) % 6 + 1,
        }
    )
    frame.to_csv(folder / "b.csv", index=False)
    (folder / "afile").write_text("x")
    (folder / "adir").mkdir()
    (folder / "full").mkdir()
    (folder / "full" / "mine.txt").write_text("keep me")
    return folder


EV = ["evaluate", "b.csv", "--score", "lr", "--label", "y", "--client", "client"]
MON = ["monitor", "b.csv", "--score", "lr", "--label", "y", "--period", "period"]
#: (command line, a fragment of the one-line message). --out is "o" unless given.
BAD_INPUTS: list[tuple[list[str], str]] = [
    ([*EV, "--privacy", "ldp", "--epsilon", "1e300"], "epsilon <= 700"),
    ([*EV, "--privacy", "distdp", "--epsilon", "1e-300"], "at least 1e-09"),
    ([*EV, "--privacy", "distdp", "--epsilon", "-1"], "--epsilon must be > 0"),
    ([*EV, "--privacy", "distdp", "--epsilon", "nan"], "--epsilon must be > 0"),
    ([*EV, "--privacy", "distdp", "--epsilon", "inf"], "finite number > 0"),
    ([*EV, "--privacy", "distdp"], "needs --epsilon"),
    ([*EV, "--privacy", "sa", "--epsilon", "1"], "takes no --epsilon"),
    ([*EV, "--privacy", "gdp", "--epsilon", "1"], "invalid choice: 'gdp'"),
    ([*EV, "--privacy", "distdp", "--epsilon", "1", "--out", "afile/sub"], "not a directory"),
    ([*EV, "--privacy", "sa", "--out", "full"], "is not empty"),
    (["evaluate", "adir", "--score", "lr", "--label", "y", "--privacy", "sa"], "is a directory"),
    (["evaluate", "missing.csv", "--score", "lr", "--label", "y", "--privacy", "sa"], "missing"),
    (["evaluate", "b.csv", "--score", "nope", "--label", "y", "--privacy", "sa"], "nope"),
    (["evaluate", "b.csv", "--score", "lr", "--label", "nope", "--privacy", "sa"], "nope"),
    ([*EV[:-1], "nope", "--privacy", "sa"], "nope"),
    ([*EV, "--privacy", "distdp", "--epsilon", "1", "--thresholds", "2"], "outside the score"),
    ([*EV, "--privacy", "distdp", "--epsilon", "1", "--height", "80"], "too many"),
    ([*EV, "--privacy", "distdp", "--epsilon", "1", "--noise", "skellam"], "needs --delta"),
    (
        [*EV, "--privacy", "distdp", "--epsilon", "1", "--noise", "skellam", "--delta", "2"],
        "--delta must lie in (0, 1)",
    ),
    ([*EV, "--privacy", "distdp", "--epsilon", "1", "--delta", "1e-6"], "--delta applies only"),
    ([*EV, "--privacy", "distdp", "--epsilon", "1", "--unit", "client"], "--contribution-bound"),
    (
        [
            *EV,
            "--privacy",
            "distdp",
            "--epsilon",
            "1",
            "--unit",
            "client",
            "--contribution-bound",
            "0",
        ],
        "must be >= 1",
    ),
    ([*EV, "--privacy", "sa", "--score-min", "1", "--score-max", "0"], "must be below"),
    ([*EV, "--privacy", "distdp", "--epsilon", "1", "--seed", "-1"], "non-negative integer"),
    ([*EV, "--privacy", "sa", "--slice", "region"], "go together"),
    ([*EV, "--privacy", "sa", "--slice", "region", "--slice-values"], "expected at least one"),
    (
        [
            "compare",
            "b.csv",
            "--score-a",
            "lr",
            "--score-b",
            "lr",
            "--label",
            "y",
            "--privacy",
            "sa",
        ],
        "the same column",
    ),
    (
        [
            "compare",
            "b.csv",
            "--score-a",
            "lr",
            "--score-b",
            "gb",
            "--label",
            "y",
            "--privacy",
            "sa",
            "--margin",
            "-1",
        ],
        "--margin must be",
    ),
    (
        [
            "calibrate",
            "b.csv",
            "--score",
            "lr",
            "--label",
            "y",
            "--privacy",
            "sa",
            "--method",
            "nope",
        ],
        "invalid choice: 'nope'",
    ),
    (
        [
            "calibrate",
            "b.csv",
            "--score",
            "lr",
            "--label",
            "y",
            "--privacy",
            "userdp",
            "--epsilon",
            "1",
        ],
        "needs --delta",
    ),
    (["plan", "--clients", "0", "--privacy", "distdp", "--epsilon", "1"], "n_clients"),
    (
        [
            "plan",
            "--clients",
            "100",
            "--privacy",
            "distdp",
            "--epsilon",
            "1",
            "--target-error",
            "-1",
        ],
        "target_error",
    ),
    (
        [*MON, "--horizon", "3", "--examples-per-period", "100", "--privacy", "sa"],
        "outside 1..3",
    ),
    (
        [
            *MON,
            "--horizon",
            "6",
            "--examples-per-period",
            "100",
            "--privacy",
            "sa",
            "--window",
            "99",
        ],
        "longer than --horizon",
    ),
    ([*MON, "--examples-per-period", "100", "--privacy", "sa"], "needs --horizon"),
    (["demo", "--clients", "0"], "unrecognized arguments"),
]


def _id(case: tuple[list[str], str]) -> str:
    return " ".join(case[0][:1] + case[0][2:])[:60]


@pytest.mark.parametrize("case", BAD_INPUTS, ids=[_id(c) for c in BAD_INPUTS])
def test_every_bad_input_is_one_line_exit_2_and_nothing_written(
    case: tuple[list[str], str],
    inputs: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    argv, fragment = case
    monkeypatch.chdir(inputs)
    before = sorted(p.name for p in inputs.rglob("*"))
    if argv[0] != "plan" and "--out" not in argv:
        argv = [*argv, "--out", "o"]
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    err = capsys.readouterr().err
    # The progress bar (carriage returns) may precede; the message is one line of its own.
    lines = [ln for ln in err.replace("\r", "\n").splitlines() if ln.strip()]
    lines = [ln for ln in lines if " steps |" not in ln]
    assert code == 2, err
    assert len(lines) == 1 and " error: " in lines[0], err
    assert fragment in lines[0], lines[0]
    assert "Traceback" not in err
    assert sorted(p.name for p in inputs.rglob("*")) == before  # nothing written
    artifacts = os.environ.get("FEDEVAL_ARTIFACT_DIR")
    if artifacts:  # the bad-input table of issue 29, rebuilt by every CI run
        Path(artifacts).mkdir(parents=True, exist_ok=True)
        with open(Path(artifacts) / "bad-inputs.md", "a", encoding="utf-8") as table:
            shown = " ".join(argv).replace("|", "\\|")
            message = lines[0].replace("|", "\\|")
            table.write(f"| `fedeval {shown}` | {message} | {code} | yes |\n")
