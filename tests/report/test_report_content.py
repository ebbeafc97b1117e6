"""What the evaluation report says: header, readable receipt, bands, formatted numbers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import fedeval as fe
from fedeval.report.evaluation_report import pr_band
from fedeval.report.style import fmt, fmt_privacy


def test_privacy_numbers_read_like_numbers() -> None:
    # Issue 16: "ε spent 2.9999985582170847" and "δ 0.00000" for a real δ of 1e-5.
    assert fmt_privacy(2.9999985582170847) == "3"
    assert fmt_privacy(1e-5) == "1.0e-05"
    assert fmt_privacy(0.0) == "0"
    assert fmt_privacy(float("inf")).startswith("∞")
    assert fmt(0.123456789) == "0.1235" and fmt(3.2e-6) == "3.2e-06" and fmt(12345) == "12,345"
    assert fmt(float("nan")) == "n/a"


@pytest.fixture(scope="module")
def fed() -> fe.Federation:
    rng = np.random.default_rng(7)
    n = 4000
    y = rng.integers(0, 2, n)
    s = np.clip(rng.normal(0.35 + 0.25 * y, 0.17), 0, 1)
    return fe.Federation.from_arrays(s, y, rng.integers(0, 400, n))


def test_header_names_the_input_and_only_public_sizes(fed: fe.Federation, tmp_path: Path) -> None:
    ev = fe.evaluate(fed, fe.DistributedDP(1.0), rng=0, bootstrap_replicates=20)
    source = {"name": "scores.parquet", "kind": "binary", "n_clients": 400}
    source |= {"n_examples": None, "score_range": [0.0, 1.0]}
    paths = fe.report.write_report({"dp": ev}, tmp_path, source=source)
    text = paths["html"].read_text()
    header = text[text.index("<header>") : text.index("</header>")]
    assert "scores.parquet" in header and "400 clients" in header
    assert "number of examples not public" in header
    assert "4,000" not in text and "4000" not in re.sub(r"base64,[^'\"]+", "", text)
    # The readable receipt: unit in words, neighbours, ε as a number, what is public.
    for words in ("one example (one row of the input)", "add or remove one example", "ε spent"):
        assert words in text
    assert "2.99999" not in text and "0.00000" not in text


def test_delta_is_written_in_scientific_notation(fed: fe.Federation, tmp_path: Path) -> None:
    ev = fe.evaluate(
        fed, fe.DistributedDP(1.0, noise="skellam", delta=1e-5), rng=0, bootstrap_replicates=20
    )
    text = fe.report.write_report({"skellam": ev}, tmp_path)["html"].read_text()
    assert re.search(r"δ spent</dt><dd>\d\.\de-0\d", text), "δ not in scientific notation"


def test_pr_band_has_width_under_dp_and_none_without(fed: fe.Federation) -> None:
    dp = fe.evaluate(fed, fe.LocalDP(3.0), rng=0, bootstrap_replicates=30)
    grid, lo, hi = pr_band(dp)
    inside = (grid > 0.1) & (grid < 0.9)
    assert np.all(lo[inside] <= hi[inside]) and np.median((hi - lo)[inside]) > 0
    sa = fe.evaluate(fed, fe.SecureAggregation(), rng=0)
    _, lo, hi = pr_band(sa)
    assert np.array_equal(lo, hi, equal_nan=True)


def test_results_json_is_the_cli_schema_without_nan(fed: fe.Federation, tmp_path: Path) -> None:
    ev = fe.evaluate(fed, fe.DistributedDP(1.0), rng=0, bootstrap_replicates=20)
    paths = fe.report.write_report({"dp": ev}, tmp_path, thresholds=(0.2, 0.8))
    raw = paths["json"].read_text()
    assert "NaN" not in raw and "Infinity" not in raw
    payload = json.loads(raw)
    assert payload["schema"] == "fedeval.evaluation/1"
    assert [a["threshold"] for a in payload["evaluations"]["dp"]["at_threshold"]] == [0.2, 0.8]


def test_the_receipt_opens_with_the_one_line_guarantee(fed: fe.Federation, tmp_path: Path) -> None:
    import html

    ev = fe.evaluate(fed, fe.DistributedDP(1.0), rng=0, bootstrap_replicates=20)
    paths = fe.report.write_report({"dp": ev}, tmp_path)
    text = paths["html"].read_text()
    receipt = text[text.index("<div class='receipt'>") :]
    assert receipt.index(html.escape(ev.guarantee_line)) < receipt.index("privacy model")
    assert f"- guarantee: {ev.guarantee_line}" in paths["markdown"].read_text()


def test_json_text_is_strict_json_with_null_for_undefined_numbers() -> None:
    """Issue 29: NaN is not JSON (JSON.parse fails on it); every writer goes through json_text."""
    from fedeval.report.files import json_safe, json_text

    obj = {"a": float("nan"), "b": [np.float64("inf"), np.int64(3)], "c": np.array([1.0, np.nan])}
    text = json_text(obj)
    assert json.loads(text, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}")) == {
        "a": None,
        "b": [None, 3],
        "c": [1.0, None],
    }
    assert json_safe((1.5, "x")) == [1.5, "x"]


def test_the_cli_prints_strict_json_even_for_an_undefined_release(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A release whose AUC is NaN (one class) still prints parseable JSON under --json."""
    import pandas as pd

    from fedeval.cli import main

    f = tmp_path / "one.csv"
    pd.DataFrame({"s": np.linspace(0, 1, 40), "y": 1}).to_csv(f, index=False)
    args = ["evaluate", str(f), "--score", "s", "--label", "y", "--json"]
    assert main([*args, "--privacy", "distdp", "--epsilon", "1", "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    json.loads(out, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
    written = (tmp_path / "o" / "results.json").read_text()
    json.loads(written, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))


def test_the_calibration_plot_legend_and_its_table_state_the_same_ece(tmp_path: Path) -> None:
    """Issue 29: the legend showed 0.1620 (ECE of P(y=1)) where the table showed 0.1683
    (top-label ECE): every ECE the legend prints is in the table under the same name."""
    from fedeval.report.calibration_report import write_calibration_report
    from fedeval.report.reliability import reliability_diagram

    rng = np.random.default_rng(3)
    n = 3000
    s = rng.beta(2, 3, n)
    y = (rng.random(n) < s**1.5).astype(int)  # miscalibrated: the two ECEs differ
    fed = fe.Federation.from_arrays(s, y, np.arange(n) % 60)
    train, test = fe.partition.split_clients(fed, 0.3, rng=0)
    cal = fe.calibrate(train, fe.SecureAggregation(), method="binning")
    paths = write_calibration_report(cal, test.scores, test.labels, tmp_path / "c")
    md = paths["markdown"].read_text()
    for probs, name in ((test.scores, "uncalibrated"), (cal.predict_proba(test.scores), "")):
        fig = reliability_diagram(probs, test.labels, n_bins=15, label=name or "calibrated")
        legend = fig.axes[0].get_legend().get_texts()[0].get_text()
        value = re.search(r"ECE[^=]*=([0-9.]+)", legend)
        assert value and "P(y=1)" in legend, legend
        assert value.group(1) in md, (legend, md)
