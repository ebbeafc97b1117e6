"""Issue 29: bad CLI inputs give a one-line error and exit code 2 before anything runs."""

from __future__ import annotations

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
