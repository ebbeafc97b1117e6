"""`fedeval calibrate` reports held-out calibration before/after (issue 14)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedeval.cli import main


def _binary_csv(path: Path, *, one_class: bool = False) -> Path:
    rng = np.random.default_rng(0)
    s = rng.random(4000)
    y = (rng.random(4000) < s**2).astype(int)
    if one_class:
        y[:] = 1
    pd.DataFrame({"score": s, "label": y, "client": np.arange(4000) % 200}).to_csv(
        path, index=False
    )
    return path


def test_json_carries_heldout_ece_and_nll_before_and_after(tmp_path: Path, capsys) -> None:
    f = _binary_csv(tmp_path / "s.csv")
    code = main(
        ["calibrate", str(f), "--score", "score", "--label", "label", "--client", "client",
         "--privacy", "sa", "--method", "binning", "--seed", "0", "--out", str(tmp_path / "o"),
         "--json"]
    )  # fmt: skip
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    for when in ("before", "after"):
        for key in ("ece_top", "ece_top_se", "cwece", "cwece_se", "nll", "nll_se", "accuracy"):
            assert np.isfinite(out["heldout"][when][key])
    # s² calibration of uniform scores: binning under SA must remove most of the error.
    assert out["heldout"]["after"]["ece_top"] < out["heldout"]["before"]["ece_top"]
    # One schema family across commands: schema, public input facts, receipt, report paths.
    assert out["schema"] == "fedeval.calibration/1"
    assert out["receipt"]["epsilon_spent"] == 0.0  # secure aggregation spends no ε
    assert set(out["report"]) >= {"html", "calibrator"}


def test_console_prints_the_table(tmp_path: Path, capsys) -> None:
    f = _binary_csv(tmp_path / "s.csv")
    main(
        ["calibrate", str(f), "--score", "score", "--label", "label", "--client", "client",
         "--privacy", "sa", "--method", "bbq", "--seed", "0", "--out", str(tmp_path / "o")]
    )  # fmt: skip
    text = capsys.readouterr().out
    assert "top-label ECE" in text and "NLL" in text and "before" in text and "after" in text


def test_single_class_input_is_refused_clearly(tmp_path: Path, capsys) -> None:
    f = _binary_csv(tmp_path / "one.csv", one_class=True)
    code = main(
        ["calibrate", str(f), "--score", "score", "--label", "label", "--client", "client",
         "--privacy", "sa", "--method", "bbq", "--out", str(tmp_path / "o")]
    )  # fmt: skip
    assert code == 2
    assert "at least two classes" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("flag", [[], ["--json"]])
def test_multiclass_logits(tmp_path: Path, capsys, flag: list[str]) -> None:
    rng = np.random.default_rng(1)
    z = 3 * rng.normal(size=(1500, 3))
    y = np.argmax(z / 3 + rng.normal(size=(1500, 3)), axis=1)
    df = pd.DataFrame({"z0": z[:, 0], "z1": z[:, 1], "z2": z[:, 2], "y": y})
    df["c"] = np.arange(1500) % 50
    df.to_csv(tmp_path / "l.csv", index=False)
    code = main(
        ["calibrate", str(tmp_path / "l.csv"), "--score", "z0", "z1", "z2", "--kind", "logits",
         "--label", "y", "--client", "c", "--privacy", "sa", "--method", "temperature",
         "--seed", "0", "--out", str(tmp_path / "o"), *flag]
    )  # fmt: skip
    assert code == 0
    text = capsys.readouterr().out
    if flag:
        out = json.loads(text)
        assert out["heldout"]["after"]["nll"] < out["heldout"]["before"]["nll"]
