"""``fedeval compare`` and ``fedeval evaluate --slice`` (issue 25, item 3)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedeval.cli import main

N = 4_321  # an exact count that must never be printed under DP


@pytest.fixture(scope="module")
def two_models_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(0)
    y = (rng.random(N) < 0.4).astype(int)
    z = rng.normal(1.2 * y, 1.0)
    frame = pd.DataFrame(
        {
            "lr": 1 / (1 + np.exp(-z)),
            "gb": 1 / (1 + np.exp(-(z + rng.normal(0, 0.5, N)))),
            "y": y,
            "client": np.arange(N) % 300,
            "region": rng.choice(["EU", "US", "SECRET"], N, p=[0.5, 0.4, 0.1]),
            "cohort": rng.integers(0, 4, N),
        }
    )
    path = tmp_path_factory.mktemp("cli") / "two.csv"
    frame.to_csv(path, index=False)
    return path


def _compare(path: Path, out: Path, *extra: str) -> list[str]:
    return [
        "compare", str(path), "--score-a", "lr", "--score-b", "gb", "--label", "y",
        "--client", "client", "--out", str(out), "--seed", "0", "--quiet", *extra,
    ]  # fmt: skip


def test_compare_prints_paired_differences_and_writes_the_report(
    two_models_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cmp"
    argv = _compare(
        two_models_csv, out, "--privacy", "distdp", "--epsilon", "1", "--margin", "0.02"
    )
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "ROC AUC" in text and "non-inferiority (AUC, margin 0.02)" in text
    assert "one release for both models" in text
    assert not re.search(rf"(?<![\d.]){N}(?![\d.])", text.replace(",", "")), text
    for name in ("report.html", "report.md", "results.json"):
        assert (out / name).is_file()
    payload = json.loads((out / "results.json").read_text())
    assert payload["schema"] == "fedeval.comparison/1"
    assert payload["differences"]["epsilon_spent"] == pytest.approx(1.0)
    auc = payload["differences"]["roc_auc"]
    assert auc["se"] == pytest.approx(np.hypot(auc["privacy_se"], auc["sampling_se"]))
    assert payload["noninferiority"]["roc_auc"]["margin"] == 0.02
    html = (out / "report.html").read_text()
    assert "Paired differences" in html or "paired differences" in html
    assert str(N) not in html.replace(",", "")


def test_compare_json_and_exact_values(
    two_models_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = _compare(two_models_csv, tmp_path / "j", "--privacy", "sa", "--json", "--compare-exact")
    assert main(argv) == 0
    payload = json.loads(capsys.readouterr().out)
    d = payload["differences"]["roc_auc"]
    assert d["privacy_se"] == 0.0
    assert abs(d["estimate"] - payload["exact"]["ROC AUC"]) < 1e-3
    assert payload["report"]["html"].endswith("report.html")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--privacy", "distdp", "--epsilon", "1", "--margin", "-1"], "--margin must be"),
        (["--privacy", "sa", "--epsilon", "1"], "takes no --epsilon"),
        (["--privacy", "ldp", "--epsilon", "5", "--pair-bins", "12"], "pair_bins must be"),
    ],
)
def test_compare_bad_input_is_one_line(
    two_models_csv: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    message: str,
) -> None:
    out = tmp_path / "bad"
    assert main(_compare(two_models_csv, out, *extra)) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (out / "report.html").exists()


def test_compare_names_a_missing_column(
    two_models_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = _compare(two_models_csv, tmp_path / "m", "--privacy", "sa")
    argv[argv.index("gb")] = "xgb"
    assert main(argv) == 2
    assert "xgb" in capsys.readouterr().err


def _evaluate(path: Path, out: Path, *extra: str) -> list[str]:
    return [
        "evaluate", str(path), "--score", "lr", "--label", "y", "--client", "client",
        "--out", str(out), "--seed", "0", "--quiet", *extra,
    ]  # fmt: skip


def test_evaluate_by_slice_spends_one_epsilon_and_never_shows_an_undeclared_value(
    two_models_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "sl"
    argv = _evaluate(
        two_models_csv, out, "--privacy", "distdp", "--epsilon", "1",
        "--slice", "region", "--slice-values", "EU", "US",
    )  # fmt: skip
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "one release for 3 slices" in text and "worst slice" in text
    assert "SECRET" not in text
    for name in ("report.html", "report.md", "results.json"):
        assert "SECRET" not in (out / name).read_text()
    payload = json.loads((out / "results.json").read_text())
    assert payload["schema"] == "fedeval.slices/1"
    assert payload["epsilon_spent"] == pytest.approx(1.0)
    assert set(payload["slices"]) == {"EU", "US", "other"}


def test_evaluate_by_a_numeric_slice_column_types_the_values(
    two_models_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = _evaluate(
        two_models_csv, tmp_path / "n", "--privacy", "sa", "--json",
        "--slice", "cohort", "--slice-values", "0", "2",
    )  # fmt: skip
    assert main(argv) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["declared"] == ["0", "2"]
    assert payload["slices"]["0"]["n_positives_released"] > 0


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--slice", "region"], "--slice and --slice-values go together"),
        (["--slice-values", "EU"], "--slice and --slice-values go together"),
        (["--slice", "nope", "--slice-values", "EU"], "'nope' not found"),
        (["--slice", "cohort", "--slice-values", "x"], "is not a value of a numeric column"),
    ],
)
def test_evaluate_slice_bad_input_is_one_line(
    two_models_csv: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    message: str,
) -> None:
    out = tmp_path / "bad"
    assert main(_evaluate(two_models_csv, out, "--privacy", "sa", *extra)) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (out / "report.html").exists()
