"""The HTML reports in a real headless browser (Debian's chromium), as a reader sees them.

Tooling: chromium's own command line (``--headless --dump-dom`` and ``--screenshot``),
no Selenium, no Playwright, no CDP client. The reports hold no script of their own,
so the test loads a copy with one injected recorder script that notes console
errors, uncaught errors and failed loads (``error`` events, captured) and, after
``load``, how many images decoded (``complete`` and ``naturalWidth > 0``); it writes
both into an attribute of ``<html>`` that ``--dump-dom`` prints. This needs nothing
beyond the browser, which ``.ci/run`` installs when missing; a negative control page
(a broken image, a console error) shows that the check can fail.

The screenshot is kept under pytest's tmp dir and copied to ``$FEDEVAL_ARTIFACT_DIR``
when that is set (``.ci/run`` sets it).
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import fedeval as fe
from fedeval.report.calibration_report import write_calibration_report
from fedeval.report.compare_report import write_compare_report
from fedeval.report.slice_report import write_slice_report

RECORDER = """<script>
window.__errors = [];
const __err = console.error.bind(console);
console.error = (...a) => { window.__errors.push('console.error: ' + a.join(' ')); __err(...a); };
window.addEventListener('error', e => {
  const t = e.target;
  window.__errors.push(t && t !== window ? 'failed to load ' + (t.src || t.href || t.tagName)
                                          : 'error: ' + e.message);
}, true);
window.addEventListener('load', () => {
  const im = [...document.images];
  const ok = im.filter(i => i.complete && i.naturalWidth > 0).length;
  // A table wider than its box scrolls sideways: in a screenshot or a print it is cut off.
  const cut = [...document.querySelectorAll('.table-wrap')]
    .filter(w => w.scrollWidth > w.clientWidth + 1)
    .map(w => (w.previousElementSibling ? w.previousElementSibling.textContent : '?')
              + ': ' + w.scrollWidth + ' > ' + w.clientWidth + ' px');
  document.documentElement.setAttribute('data-check', JSON.stringify(
    {errors: window.__errors, images: im.length, images_ok: ok,
     width: document.documentElement.scrollWidth, cut_tables: cut}));
});
</script>"""


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    if os.environ.get("CI"):
        pytest.fail("chromium is missing in CI (.ci/run installs it with apt-get)")
    pytest.skip("chromium not installed (apt-get install chromium)")


def _run_chromium(page: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    cmd = [
        _chromium(),
        "--headless",
        "--no-sandbox",  # CI runs as root
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=5000",
        *extra,
        page.as_uri(),
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


def check_page(page: Path, tmp: Path) -> dict[str, object]:
    """Load ``page`` (a copy with the recorder) in chromium; return what the recorder saw."""
    text = page.read_text(encoding="utf-8")
    probe = tmp / f"probe-{page.name}"
    probe.write_text(text.replace("<head>", "<head>" + RECORDER, 1), encoding="utf-8")
    res = _run_chromium(probe, tmp / "profile", "--dump-dom", "--window-size=1280,3200")
    m = re.search(r"data-check=\"([^\"]*)\"", res.stdout)
    assert m, f"page did not finish loading: {res.stderr[-2000:]}"
    found: dict[str, object] = json.loads(html.unescape(m.group(1)))
    found["console"] = re.findall(r"CONSOLE[^\]]*\] (.*)", res.stderr)
    return found


def screenshot(page: Path, tmp: Path, name: str) -> Path:
    shot = tmp / name
    res = _run_chromium(
        page, tmp / "profile-shot", f"--screenshot={shot}", "--window-size=1280,3200"
    )
    assert shot.exists() and shot.stat().st_size > 20_000, res.stderr[-2000:]
    target = os.environ.get("FEDEVAL_ARTIFACT_DIR")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(target) / name)
    return shot


def _self_contained(text: str) -> None:
    refs = re.findall(r"(?:src|href)\s*=\s*[\"']([^\"']*)", text)
    assert refs and all(r.startswith(("data:", "#")) for r in refs), refs
    assert "<link" not in text and "@import" not in text and "<script" not in text


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("reports")
    rng = np.random.default_rng(3)
    n = 6000
    y = rng.integers(0, 2, n)
    s = np.clip(rng.normal(0.35 + 0.25 * y, 0.17), 0, 1)
    fed = fe.Federation.from_arrays(s, y, rng.integers(0, 600, n))
    evs = {
        "SA": fe.evaluate(fed, fe.SecureAggregation(), rng=0, bootstrap_replicates=40),
        "DistDP eps=1": fe.evaluate(fed, fe.DistributedDP(1.0), rng=1, bootstrap_replicates=40),
        "LDP eps=5": fe.evaluate(fed, fe.LocalDP(5.0), rng=2, bootstrap_replicates=40),
    }
    source = {
        "name": "scores.parquet",
        "kind": "binary",
        "n_clients": 600,
        "n_examples": None,
        "score_range": [0.0, 1.0],
    }
    # With the exact values (--compare-exact) the summary has its widest layout: issue 29
    # found that table cut off at 1400 px.
    from fedeval.cli import _exact

    thresholds = (0.25, 0.5, 0.75)
    paths = fe.report.write_report(
        evs,
        out / "ev",
        title="browser check",
        source=source,
        thresholds=thresholds,
        exact=_exact(s, y, thresholds),
    )
    train, test = fe.partition.split_clients(fed, 0.3, rng=0)
    cal = fe.calibrate(train, fe.DistributedDP(1.0), method="bbq", rng=0)
    cal_paths = write_calibration_report(cal, test.scores, test.labels, out / "cal", source="x.csv")
    # Issue 25: the paired comparison and the per-slice page, under DP.
    b = np.clip(s + rng.normal(0, 0.08, n), 0, 1)
    cmp = fe.compare(fed, b, fe.DistributedDP(1.0), rng=4)
    cmp_paths = write_compare_report(
        cmp, out / "cmp", thresholds=(0.4, 0.6), margin=0.01, names=("lr", "gb"), source=source
    )
    region = rng.choice(["EU", "US", "ASIA", "LATAM"], n)
    sev = fe.evaluate(
        fed, fe.DistributedDP(1.0), slices=region, slice_values=["EU", "US", "ASIA"], rng=5
    )
    slice_paths = write_slice_report(sev, out / "slices", source=source, slice_name="region")
    return {
        "evaluation": paths["html"],
        "calibration": cal_paths["html"],
        "comparison": cmp_paths["html"],
        "slices": slice_paths["html"],
        "trend": _trend_report(out / "trend"),
        "multiclass": _multiclass_report(out / "multiclass"),
    }


def _multiclass_report(out: Path) -> Path:
    """Issue 29: the multiclass page was plain HTML; it now has the house style."""
    from fedeval.report.multiclass_report import write_multiclass_report

    rng = np.random.default_rng(7)
    y = rng.integers(0, 4, 3000)
    logits = rng.normal(0, 1, (3000, 4)) + 2.0 * np.eye(4)[y]
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    fed = fe.Federation.from_arrays(p, y, np.arange(3000) % 300, kind="probabilities")
    ev = fe.evaluate(fed, fe.DistributedDP(1.0), rng=8)
    return write_multiclass_report(ev, out, name="DistDP ε=1")["html"]


def _trend_report(out: Path) -> Path:
    """A monitor of 16 periods whose model degrades after period 10, with its drift alarms."""
    from fedeval.report.trend_report import write_trend_report

    rng = np.random.default_rng(5)
    mon = fe.monitor(fe.DistributedDP(1.0), horizon=16, examples_per_period=2000, rng=6)
    tests = []
    for t in range(1, 17):
        y = rng.integers(0, 2, 2000)
        a = 1.0 if t <= 10 else 0.5
        s = 1 / (1 + np.exp(-(a * (2 * y - 1) + rng.normal(0, 1, 2000))))
        mon.update(fe.Federation.from_arrays(s, y))
        if t > 4:
            tests.append(mon.drift(window=4))
    return write_trend_report(mon, out, window=4, drift=tests, title="browser check")["html"]


@pytest.mark.integration
@pytest.mark.parametrize(
    "which", ["evaluation", "calibration", "comparison", "slices", "trend", "multiclass"]
)
def test_report_renders_without_errors_and_every_image_loads(
    reports: dict[str, Path], tmp_path: Path, which: str
) -> None:
    page = reports[which]
    _self_contained(page.read_text(encoding="utf-8"))
    found = check_page(page, tmp_path)
    assert found["errors"] == [] and found["console"] == [], found
    assert found["images"] == found["images_ok"] and found["images"] >= 1, found
    assert found["width"] <= 1280, found  # no horizontal overflow at a laptop width
    assert found["cut_tables"] == [], found  # issue 29: the binary summary table was cut off
    shot = screenshot(page, tmp_path, f"{which}-report.png")
    print(f"screenshot: {shot}")


def test_the_check_catches_a_broken_image_and_a_console_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.html"
    bad.write_text(
        "<!doctype html><html><head><title>x</title></head><body>"
        "<img src='missing.png' alt='x'><script>console.error('boom')</script></body></html>"
    )
    found = check_page(bad, tmp_path)
    assert found["images"] == 1 and found["images_ok"] == 0
    assert any("boom" in e for e in found["errors"])  # type: ignore[attr-defined]
    assert any("missing.png" in e for e in found["errors"])  # type: ignore[attr-defined]
