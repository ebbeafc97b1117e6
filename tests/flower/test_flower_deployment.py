"""fedeval's Flower apps on Flower's deployment engine, with SecAgg+.

The test starts a local ``flower-superlink`` and three ``flower-supernode`` processes
(``--insecure``, 127.0.0.1, free ports), each SuperNode holding one client file
given in its ``--node-config``, submits ``examples/flower`` with ``flwr run`` to that
SuperLink, and stops every process it started (by its own handle), whatever
happens. Everything is bounded in time: start-up 60 s, the run 600 s.

The run evaluates under secure aggregation (SecAgg+ sum of the three clients'
integer vectors): its released hierarchy must equal the in-process release of the
pooled client files exactly, as in the simulation test.

Environment, as DESIGN.md's Flower notes ask: ``FLWR_TELEMETRY_ENABLED=0``,
``FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION=1`` and a fresh ``FLWR_HOME``.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from helpers import release_hierarchy
from readme_blocks import ROOT

pytest.importorskip("flwr")

import fedeval as fe
from fedeval.flower.simulate import write_partitions

pytestmark = [pytest.mark.flower, pytest.mark.slow]

BIN = Path(sys.executable).parent
N_NODES = 3
HEIGHT = 6


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"SuperLink exited: {log.read_text()[-3000:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.3)
    raise TimeoutError(f"SuperLink did not listen on {port} within {timeout} s")


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[dict[str, object]]:
    if not (BIN / "flower-superlink").exists():
        pytest.skip("flower-superlink not installed next to this interpreter")
    home = tmp_path / "flwr-home"
    home.mkdir()
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",  # flower-superexec, flwr-*
        "PYTHONPATH": str(ROOT / "src"),
        "FLWR_HOME": str(home),
        "FLWR_TELEMETRY_ENABLED": "0",
        "FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION": "1",
        "MPLBACKEND": "Agg",
    }
    link_port = _free_port()
    (home / "config.toml").write_text(
        f'[superlink]\ndefault = "deploy"\n\n[superlink.deploy]\n'
        f'address = "127.0.0.1:{link_port}"\ninsecure = true\n'
    )
    rng = np.random.default_rng(5)
    y = rng.integers(0, 2, 900)
    s = np.clip(rng.normal(0.4 + 0.25 * y, 0.15), 0, 1)
    paths, _ = write_partitions(fe.Federation.from_arrays(s, y), N_NODES, tmp_path / "data", rng=0)
    procs: list[subprocess.Popen[bytes]] = []
    logs = tmp_path / "logs"
    logs.mkdir()

    def start(name: str, cmd: list[str]) -> subprocess.Popen[bytes]:
        out = (logs / f"{name}.log").open("wb")
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path)
        procs.append(proc)
        return proc

    try:
        link = start(
            "superlink",
            [
                str(BIN / "flower-superlink"),
                "--insecure",
                "--host",
                "127.0.0.1",
                "--port",
                str(link_port),
            ],
        )
        _wait_for_port(link_port, link, logs / "superlink.log", 60)
        for i, path in enumerate(paths):
            start(
                f"supernode-{i}",
                [
                    str(BIN / "flower-supernode"),
                    "--insecure",
                    *("--superlink", f"127.0.0.1:{link_port}"),
                    *("--host", "127.0.0.1", "--port", str(_free_port())),
                    *("--node-config", f'data-path="{path.resolve()}"'),
                ],
            )
        yield {"env": env, "paths": paths, "logs": logs, "tmp": tmp_path}
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in reversed(procs):
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


def test_apps_run_on_superlink_and_three_supernodes_with_secagg(
    deployment: dict[str, object],
) -> None:
    tmp = deployment["tmp"]
    assert isinstance(tmp, Path)
    out = tmp / "report"
    config = f'out-dir="{out}" privacy="sa" height={HEIGHT} max-examples-per-client=400 '
    # The three SuperNodes are the cohort (the app's default cohort-size is the 20 simulated
    # SuperNodes of its README), as in the README's deployment command.
    config += f"min-clients={N_NODES} cohort-size={N_NODES} max-dropouts=1"
    start = time.monotonic()
    res = subprocess.run(
        [
            *(str(BIN / "flwr"), "run", str(ROOT / "examples" / "flower"), "deploy"),
            *("--stream", "--run-config", config),
        ],
        env=deployment["env"],  # type: ignore[arg-type]
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=tmp,
    )
    wall = time.monotonic() - start
    print(f"deployment run: {wall:.1f} s wall")
    logs = deployment["logs"]
    assert isinstance(logs, Path)
    detail = res.stdout[-3000:] + "".join(p.read_text()[-1500:] for p in sorted(logs.glob("*.log")))
    assert res.returncode == 0, detail
    assert (out / "flower_result.json").exists(), detail
    result = json.loads((out / "flower_result.json").read_text())
    ev = result["evaluations"]["sa"]
    facts = ev["facts"]
    assert facts["n_used"] == N_NODES and facts["n_failed"] == 0
    assert facts["secure_aggregation"] is True and facts["secagg"]["num_shares"] == N_NODES
    # Client and server processes both expanded masks with fedeval's generator (the
    # sum below is exact), and the receipt names it.
    assert facts["secure_sum"]["masks"]["generator"] == "fedeval-shake256/1"
    # The SecAgg+ sum is the exact in-process release of the three client files.
    paths = deployment["paths"]
    assert isinstance(paths, list)
    df = pd.concat([pd.read_csv(p).assign(client=i) for i, p in enumerate(paths)])
    fed = fe.Federation.from_frame(df, score="score", label="label", client="client")
    ref = release_hierarchy(fed, fe.SecureAggregation(), height=HEIGHT)
    for got, want in zip(ev["released_levels"], ref.levels, strict=True):
        np.testing.assert_array_equal(np.asarray(got), want)
    payload = json.loads((out / "results.json").read_text())
    assert payload["schema"] == "fedeval.evaluation/1"
    assert "data:image/png;base64," in (out / "report.html").read_text()
