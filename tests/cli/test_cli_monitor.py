"""``fedeval monitor``: a folder of periods or a period column, the trend page, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedeval.cli import main

PERIODS = 10
CHANGE = 6  # the model degrades after this period


def _frames() -> list[pd.DataFrame]:
    rng = np.random.default_rng(8)
    out = []
    for t in range(1, PERIODS + 1):
        n = 1500
        y = rng.integers(0, 2, n)
        a = 1.0 if t <= CHANGE else 0.3
        s = 1 / (1 + np.exp(-(a * (2 * y - 1) + rng.normal(0, 1, n))))
        out.append(pd.DataFrame({"s": s, "y": y, "c": rng.integers(0, 200, n)}))
    return out


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    d = tmp_path / "weeks"
    d.mkdir()
    for t, df in enumerate(_frames(), 1):
        df.to_csv(d / f"week{t:02d}.csv", index=False)
    return d


@pytest.fixture
def one_file(tmp_path: Path) -> Path:
    frames = [df.assign(week=t) for t, df in enumerate(_frames(), 1)]
    path = tmp_path / "all.parquet"
    pd.concat(frames).to_parquet(path)
    return path


BASE = ["--score", "s", "--label", "y", "--examples-per-period", "1500", "--window", "3"]


def test_a_folder_of_periods_gives_a_trend_page_with_the_alarm_after_the_change(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rep"
    args = [str(folder), *BASE, "--privacy", "distdp", "--epsilon", "1", "--seed", "1"]
    code = main(["monitor", *args, "--out", str(out), "--json", "--compare-exact"])
    assert code == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["schema"] == "fedeval.monitor/1"
    assert payload["monitor"]["horizon"] == PERIODS
    assert payload["monitor"]["periods_released"] == PERIODS
    assert payload["monitor"]["epsilon_spent"] == pytest.approx(1.0)
    alarms = [d["period"] for d in payload["drift"] if d["alarm"]]
    assert alarms and min(alarms) > CHANGE  # no false alarm before, caught after
    assert len(payload["exact"]["cumulative"]) == PERIODS
    html = (out / "report.html").read_text()
    assert "drift test" in html and "data:image/png;base64," in html
    assert json.loads((out / "results.json").read_text())["schema"] == "fedeval.monitor/1"
    # the console table
    code = main(["monitor", *args, "--out", str(out), "--force"])
    text = capsys.readouterr().out
    assert code == 0 and "ALARM" in text and "drift alarms" in text


def test_a_period_column_releases_every_declared_period(
    one_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [
        str(one_file), *BASE, "--period", "week", "--horizon", str(PERIODS + 2),
        "--privacy", "distdp", "--epsilon", "1", "--client", "c", "--contribution-bound", "20",
        "--out", str(tmp_path / "rep"), "--json", "--seed", "2",
    ]  # fmt: skip
    assert main(["monitor", *args]) == 0
    payload = json.loads(capsys.readouterr().out)
    # the two declared periods without rows are released all the same
    assert payload["monitor"]["periods_released"] == PERIODS + 2
    assert payload["receipt"]["guarantee"]["unit"] == "client"


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--privacy", "distdp"], "needs --epsilon"),
        (["--privacy", "sa", "--epsilon", "1"], "takes no --epsilon"),
        (["--privacy", "distdp", "--epsilon", "1", "--delta", "1e-6"], "--delta applies"),
        (["--privacy", "distdp", "--epsilon", "1", "--noise", "skellam"], "needs --delta"),
        (["--privacy", "distdp", "--epsilon", "1", "--contribution-bound", "3"], "--client"),
        (["--privacy", "distdp", "--epsilon", "1", "--period", "week"], "needs --horizon"),
        (["--privacy", "distdp", "--epsilon", "1", "--horizon", "3"], "shorter than"),
        (["--privacy", "distdp", "--epsilon", "1", "--alpha", "2"], "--alpha"),
    ],
)
def test_bad_flags_are_one_line_errors_and_write_nothing(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    out = tmp_path / "rep"
    assert main(["monitor", str(folder), *BASE, *extra, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not out.exists()


def test_a_file_without_period_column_and_out_of_range_periods_are_refused(
    one_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = [str(one_file), *BASE, "--privacy", "distdp", "--epsilon", "1"]
    assert main(["monitor", *base, "--out", str(tmp_path / "a")]) == 2
    assert "--period" in capsys.readouterr().err
    code = main(
        ["monitor", *base, "--period", "week", "--horizon", "4", "--out", str(tmp_path / "b")]
    )
    assert code == 2 and "outside 1..4" in capsys.readouterr().err
