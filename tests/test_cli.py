"""The fedeval command: outputs, JSON, and one-line errors with no partial files."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedeval.cli import main


@pytest.fixture
def scores_csv(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    n = 3000
    y = rng.integers(0, 2, n)
    s = np.clip(rng.normal(0.4 + 0.2 * y, 0.15), 0, 1)
    path = tmp_path / "scores.csv"
    pd.DataFrame({"s": s, "y": y, "c": rng.integers(0, 100, n)}).to_csv(path, index=False)
    return path


def test_evaluate_writes_report_and_json(
    scores_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rep"
    code = main(
        [
            "evaluate",
            str(scores_csv),
            "--score",
            "s",
            "--label",
            "y",
            "--client",
            "c",
            "--privacy",
            "distdp",
            "--epsilon",
            "1",
            "--out",
            str(out),
            "--json",
            "--seed",
            "0",
        ]
    )
    assert code == 0
    payload = json.loads(capsys.readouterr().out)
    (ev,) = payload["evaluations"].values()
    assert 0.5 < ev["metrics"]["roc_auc"]["estimate"] < 1
    assert ev["receipt"]["epsilon_spent"] == pytest.approx(1.0)
    assert {p.name for p in out.iterdir()} == {"report.html", "report.md", "results.json"}
    assert "data:image/png;base64," in (out / "report.html").read_text()


def test_plan_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["plan", "--clients", "100000", "--privacy", "distdp", "--epsilon", "1", "--json"])
        == 0
    )
    plan = json.loads(capsys.readouterr().out)
    assert plan["height"] >= 4 and plan["n_quantiles"] >= 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--score", "nope", "--label", "y", "--privacy", "sa"], "not found"),
        (["--score", "s", "--label", "y", "--privacy", "distdp"], "needs --epsilon"),
        (
            ["--score", "s", "--label", "y", "--privacy", "sa", "--thresholds", "2"],
            "outside the score domain",
        ),
    ],
)
def test_evaluate_bad_input(
    scores_csv: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    out = tmp_path / "rep"
    assert main(["evaluate", str(scores_csv), *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and err.count("\n") == 0
    assert not out.exists()


def test_one_class_and_empty_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one = tmp_path / "one.csv"
    pd.DataFrame({"s": [0.1, 0.2, 0.9], "y": [1, 1, 1]}).to_csv(one, index=False)
    assert (
        main(
            [
                "evaluate",
                str(one),
                "--score",
                "s",
                "--label",
                "y",
                "--privacy",
                "sa",
                "--out",
                str(tmp_path / "a"),
            ]
        )
        == 2
    )
    assert "undefined" in capsys.readouterr().err
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    assert (
        main(
            [
                "evaluate",
                str(empty),
                "--score",
                "s",
                "--label",
                "y",
                "--privacy",
                "sa",
                "--out",
                str(tmp_path / "b"),
            ]
        )
        == 2
    )
    assert "empty" in capsys.readouterr().err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_scores_outside_domain(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"s": [0.1, 1.7], "y": [0, 1]}).to_csv(bad, index=False)
    assert (
        main(
            [
                "evaluate",
                str(bad),
                "--score",
                "s",
                "--label",
                "y",
                "--privacy",
                "sa",
                "--out",
                str(tmp_path / "o"),
            ]
        )
        == 2
    )
    assert "--score-min" in capsys.readouterr().err


def test_calibrate_writes_calibrator_and_report(scores_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "cal"
    code = main(
        [
            "calibrate",
            str(scores_csv),
            "--score",
            "s",
            "--label",
            "y",
            "--client",
            "c",
            "--privacy",
            "distdp",
            "--epsilon",
            "1",
            "--method",
            "binning",
            "--out",
            str(out),
            "--seed",
            "0",
        ]
    )
    assert code == 0
    assert {p.name for p in out.iterdir()} == {
        "calibrator.json",
        "calibration-report.html",
        "calibration-report.md",
        "results.json",  # issue 29: calibrate wrote no results.json
    }
    results = json.loads((out / "results.json").read_text())
    assert results["schema"] == "fedeval.calibration/1" and "applied" in results
    from fedeval.calibration import calibrator_from_json

    cal = calibrator_from_json((out / "calibrator.json").read_text())
    p = cal.predict_proba(np.array([0.1, 0.5, 0.9]))
    assert np.all((p >= 0) & (p <= 1))


def test_calibrate_bad_input_leaves_no_files(
    scores_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cal"
    args = ["calibrate", str(scores_csv), "--score", "s", "--label", "y", "--out", str(out)]
    assert main([*args, "--privacy", "userdp", "--epsilon", "1"]) == 2
    assert "--delta" in capsys.readouterr().err
    # Binary scores take binning, bbq, temperature (and platt, auto); not vector scaling.
    assert main([*args, "--privacy", "sa", "--method", "vector"]) == 2
    assert "binary" in capsys.readouterr().err
    assert not out.exists()


# ------------------------------------------------- issue 12: only public facts under DP
N_PRIVATE, N_POS_PRIVATE, N_CLIENTS_PUBLIC = 1237, 611, 13


def _private_frame() -> pd.DataFrame:
    rng = np.random.default_rng(4)
    y = np.zeros(N_PRIVATE, dtype=int)
    y[rng.choice(N_PRIVATE, N_POS_PRIVATE, replace=False)] = 1
    s = np.clip(rng.normal(0.4 + 0.2 * y, 0.15), 0, 1)
    return pd.DataFrame({"score": s, "label": y, "client": np.arange(N_PRIVATE) % 13})


def _mentions_a_private_count(text: str) -> bool:
    counts = (N_PRIVATE, N_POS_PRIVATE, N_PRIVATE - N_POS_PRIVATE)
    return any(re.search(rf"(?<![\d.]){c}(?:\.0+)?(?![\d.])", text) for c in counts)


@pytest.fixture
def private_csv(tmp_path: Path) -> Path:
    path = tmp_path / "private.csv"
    _private_frame().to_csv(path, index=False)
    return path


@pytest.mark.parametrize("as_json", [False, True])
def test_evaluate_under_dp_prints_only_public_facts(
    private_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], as_json: bool
) -> None:
    """Issue 12, finding 1 / point 3: ``print(fed)`` showed the exact number of examples."""
    base = ["evaluate", str(private_csv), "--score", "score", "--label", "label"]
    base += ["--client", "client", "--out", str(tmp_path / "rep"), "--seed", "0"]
    extra = ["--json"] if as_json else []
    assert main([*base, "--privacy", "distdp", "--epsilon", "1", *extra]) == 0
    out = capsys.readouterr().out
    assert not _mentions_a_private_count(out), out
    # Issue 24: under add/remove DP the number of clients is not public either...
    assert not re.search(rf"(?<![\d.]){N_CLIENTS_PUBLIC}(?![\d.])", out), out
    # ...unless declared: then it is used and shown as given.
    base[base.index(str(tmp_path / "rep"))] = str(tmp_path / "rep-declared")
    declared = ["--public-clients", str(N_CLIENTS_PUBLIC)]
    assert main([*base, "--privacy", "distdp", "--epsilon", "1", *declared, *extra]) == 0
    out = capsys.readouterr().out
    assert not _mentions_a_private_count(out), out
    assert str(N_CLIENTS_PUBLIC) in out
    # Without DP (secure aggregation) the count is no secret and is shown.
    base[base.index(str(tmp_path / "rep-declared"))] = str(tmp_path / "rep-sa")
    assert main([*base, "--privacy", "sa", *extra]) == 0
    assert str(N_PRIVATE) in capsys.readouterr().out.replace(",", "")


def test_evaluate_takes_a_declared_example_count(
    private_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["evaluate", str(private_csv), "--score", "score", "--label", "label"]
    args += ["--client", "client", "--privacy", "distdp", "--epsilon", "1", "--examples", "5000"]
    assert main([*args, "--out", str(tmp_path / "rep"), "--seed", "0", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    (ev,) = payload["evaluations"].values()
    assert ev["parameters"]["n_examples"] == 5000
    assert payload["input"]["n_examples"] == 5000
    assert "declared" in payload["input"]["n_examples_source"]


@pytest.mark.parametrize("as_json", [False, True])
def test_demo_prints_only_public_facts(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    as_json: bool,
) -> None:
    import fedeval as fe

    monkeypatch.setattr(fe.demo, "demo_frame", lambda *a, **k: _private_frame())
    extra = ["--json"] if as_json else []
    assert main(["demo", "--out", str(tmp_path / "demo"), "--quiet", *extra]) == 0
    out = capsys.readouterr().out
    assert not _mentions_a_private_count(out), out
    assert str(N_CLIENTS_PUBLIC) in out


def test_one_class_under_dp_is_released_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one = tmp_path / "one.csv"
    pd.DataFrame({"s": np.linspace(0, 1, 50), "y": 1}).to_csv(one, index=False)
    args = ["evaluate", str(one), "--score", "s", "--label", "y", "--privacy", "distdp"]
    code = main([*args, "--epsilon", "1", "--out", str(tmp_path / "a"), "--seed", "1"])
    assert code == 0
    assert (tmp_path / "a" / "report.html").exists()
    # Issue 29: each warning is one line of its own, without source paths or code lines.
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if "warning" in ln]
    assert lines and all(ln.startswith("fedeval: warning: ") for ln in lines), err
    assert any("released" in ln for ln in lines)
    assert ".py:" not in err and "warnings.warn" not in err
    assert len(lines) == len(set(lines))
    # The command's warnings show whatever filters the process set before (a caller's
    # "ignore", or a warning shown once already by an earlier call at the same line).
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main([*args, "--epsilon", "1", "--out", str(tmp_path / "b"), "--seed", "1"])
    again = [ln for ln in capsys.readouterr().err.splitlines() if "warning" in ln]
    assert code == 0 and sorted(again) == sorted(lines)


@pytest.mark.parametrize(
    ("privacy", "extra"),
    [("distdp", ["--epsilon", "1"]), ("ldp", ["--epsilon", "2"])],
)
@pytest.mark.parametrize("labels", ["one class", "one client"])
def test_calibrate_under_dp_never_refuses_depending_on_the_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], privacy: str, extra: list[str], labels: str
) -> None:
    """Issue 24, finding 4: a one-class file was refused under every model.

    Neighbouring files (one example more or less) must not give output versus an
    error; the exact held-out figures are labelled as a simulation check, outside
    the receipt.
    """
    n = 40
    frame = pd.DataFrame(
        {
            "s": np.linspace(0.05, 0.95, n),
            "y": np.ones(n, dtype=int) if labels == "one class" else np.arange(n) % 2,
            "c": np.arange(n) % 8 if labels == "one class" else np.zeros(n, dtype=int),
        }
    )
    path = tmp_path / "f.csv"
    frame.to_csv(path, index=False)
    args = ["calibrate", str(path), "--score", "s", "--label", "y", "--client", "c"]
    args += ["--privacy", privacy, *extra, "--method", "binning", "--out", str(tmp_path / "o")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert main(args) == 0
    out = capsys.readouterr().out
    assert "not covered by the privacy receipt" in out
    assert (tmp_path / "o" / "calibrator.json").exists()
    # Without DP nothing is protected and the one-class refusal stays.
    if labels == "one class":
        sa = ["calibrate", str(path), "--score", "s", "--label", "y", "--privacy", "sa"]
        assert main([*sa, "--out", str(tmp_path / "sa")]) == 2
