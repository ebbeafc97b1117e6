"""The trend page: files, JSON payload, alarms marked, nothing beyond what the monitor publishes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

import fedeval as fe
from fedeval.monitoring import DriftTest
from fedeval.report.trend_report import SCHEMA, plot_drift, plot_trend, write_trend_report


def _monitor() -> tuple[fe.Monitor, list[DriftTest]]:
    rng = np.random.default_rng(1)
    mon = fe.monitor(fe.DistributedDP(epsilon=1.0), horizon=10, examples_per_period=1500, rng=2)
    tests = []
    for t in range(1, 9):
        y = rng.integers(0, 2, 1500)
        a = 1.0 if t <= 5 else 0.3
        s = 1 / (1 + np.exp(-(a * (2 * y - 1) + rng.normal(0, 1, 1500))))
        mon.update(fe.Federation.from_arrays(s, y))
        if t > 3:
            tests.append(mon.drift(window=3))
    return mon, tests


def test_the_page_payload_and_markdown(tmp_path: Path) -> None:
    mon, tests = _monitor()
    paths = write_trend_report(mon, tmp_path, window=3, drift=tests, title="t")
    payload = json.loads(paths["json"].read_text())
    assert payload["schema"] == SCHEMA
    assert payload["monitor"]["periods_released"] == 8 and payload["monitor"]["horizon"] == 10
    assert payload["trend"]["periods"] == list(range(1, 9))
    assert payload["window_trend"]["window"] == 3
    assert [d["period"] for d in payload["drift"]] == list(range(4, 9))
    alarms = [d["period"] for d in payload["drift"] if d["alarm"]]
    assert alarms and min(alarms) > 5
    assert payload["receipt"]["epsilon_spent"] == 1.0
    page = paths["html"].read_text()
    assert page.count("data:image/png;base64,") == 2 and "<script" not in page
    assert "ALARM" in paths["markdown"].read_text()
    # no exact count of the data anywhere: the monitor declares no size but its plan's
    assert "n_examples_released" not in payload["monitor"]["parameters"]


def test_figures_mark_the_alarms() -> None:
    mon, tests = _monitor()
    alarms = [d.period for d in tests if d.alarm]
    fig = plot_trend(mon.trend(), mon.trend(window=3), alarms=alarms)
    ax = fig.axes[0]
    marked = [line for line in ax.get_lines() if line.get_label() == "drift alarm"]
    assert len(marked) == 1 and list(marked[0].get_xdata()) == alarms
    z = plot_drift(tests).axes[0]
    assert any(np.allclose(line.get_ydata(), tests[0].critical_z) for line in z.get_lines())
