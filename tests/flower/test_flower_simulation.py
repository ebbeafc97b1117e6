"""One Flower simulation (about 20 clients, SecAgg+ on) of the fedeval apps.

A single run (Ray start-up dominates) with 23 nodes: 20 with good data, one whose
file is missing, one whose file has the wrong columns and one holding more
examples than the public bound. Partition 5 drops out
in the middle of every SecAgg+ round (after the keys were shared). The run
evaluates under SA, DistDP (Pólya, ε = 1) and LDP (OUE, ε = 4), and checks:

* the two bad clients fail with messages naming their node, the oversized one is
  rejected (and the result says so), and the server completes with the rest;
* SA: the released leaf counts equal the in-process release of the clients used,
  exactly (so the integer-exact SecAgg+ configuration held), and so does ROC AUC;
* DistDP: released minus exact counts has the variance of the target discrete
  Laplace scaled by received/threshold shares, and the result states that 19 of
  20 clients were used;
* LDP: plaintext replies, all 20 used, unbiased class totals;
* the same report files as ``fedeval evaluate``.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

flwr = pytest.importorskip("flwr")

import fedeval as fe  # noqa: E402
from fedeval.flower.plan import EvaluationPlan  # noqa: E402
from fedeval.flower.simulate import (  # noqa: E402
    quiet_flower_environment,
    run_flower_simulation,
    write_partitions,
)
from fedeval.privacy.noise import PolyaShareNoise  # noqa: E402
from helpers import release_hierarchy  # noqa: E402

pytestmark = pytest.mark.flower

N_GOOD = 20
DROPOUT = 5
HEIGHT = 8


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("flower")
    quiet_flower_environment(root / "flwr-home")
    rng = np.random.default_rng(2024)
    n = 4000
    y = rng.integers(0, 2, n)
    s = np.clip(rng.normal(0.4 + 0.25 * y, 0.15), 0.0, 1.0)
    fed = fe.Federation.from_arrays(s, y)
    parts = root / "parts"
    _, max_examples = write_partitions(fed, N_GOOD, parts, rng=1)
    # Partition 20: no file. Partition 21: wrong columns. Partition 22: more examples
    # than the public bound (rejected before secure aggregation).
    pd.DataFrame({"prob": [0.1, 0.9], "y": [0, 1]}).to_csv(parts / "client_21.csv", index=False)
    big = max_examples + 5
    pd.DataFrame({"score": np.linspace(0, 1, big), "label": np.arange(big) % 2}).to_csv(
        parts / "client_22.csv", index=False
    )
    out = root / "report"
    result = run_flower_simulation(
        num_supernodes=N_GOOD + 3,
        client_config={
            "data-path": str(parts / "client_{partition-id}.csv"),
            "client-seed": 11,
            "simulate-dropout": str(DROPOUT),
        },
        server_config={
            # Model objects, as a Python caller gives them (the run config's names
            # build the same models: test_run_config_names_build_the_same_models).
            "privacy": [fe.SecureAggregation(), fe.DistributedDP(1.0), fe.LocalDP(1.0)],
            "height": HEIGHT,
            "n-buckets": 16,
            "n-quantiles": 64,
            "max-examples-per-client": max_examples,
            "max-dropouts": 1,
            "min-clients": 10,
            "out-dir": str(out),
            "seed": 0,
        },
    )
    return {"result": result, "parts": parts, "out": out}


def _partition(label: str) -> int:
    m = re.search(r"partition (\d+)", label)
    assert m, label
    return int(m.group(1))


def _federation_of(parts: Path, labels: list[str]) -> fe.Federation:
    frames = [
        pd.read_csv(parts / f"client_{_partition(lab)}.csv").assign(client=_partition(lab))
        for lab in labels
    ]
    df = pd.concat(frames, ignore_index=True)
    return fe.Federation.from_frame(df, score="score", label="label", client="client")


def test_run_config_names_build_the_same_models() -> None:
    from fedeval.flower.server_app import ServerSettings

    cfg = {"privacy": "sa, distdp,ldp", "epsilon": 1.0, "delta": 1e-9, "noise": "skellam"}
    settings = ServerSettings.from_config(cfg)
    assert settings.privacy == (
        fe.SecureAggregation(),
        fe.DistributedDP(1.0, noise="skellam", delta=1e-9),
        fe.LocalDP(1.0),
    )
    models = (fe.DistributedDP(2.0, unit="client", contribution_bound=3),)
    assert ServerSettings.from_config({"privacy": models}).privacy == models
    with pytest.raises(ValueError, match="needs epsilon"):
        ServerSettings.from_config({"privacy": "distdp"})
    with pytest.raises(ValueError, match="sa, distdp or ldp"):
        ServerSettings.from_config({"privacy": "central", "epsilon": 1.0})


def test_bad_clients_fail_with_their_node_named_and_the_rest_complete(run: dict) -> None:
    for ev in run["result"]["evaluations"].values():
        failed = ev["facts"]["failed"]
        missing = [w for w, why in failed.items() if "partition 20" in w]
        wrong = [w for w, why in failed.items() if "partition 21" in w]
        assert missing and "no such file" in failed[missing[0]]
        assert re.search(r"node \d+ \(partition 20\)", failed[missing[0]])
        assert wrong and "column" in failed[wrong[0]].lower()
        assert ev["facts"]["n_selected"] == N_GOOD + 3
        rejected = ev["facts"]["rejected"]
        assert list(rejected) == [w for w in rejected if "partition 22" in w] and rejected
        assert "max-examples-per-client" in next(iter(rejected.values()))


def test_sa_release_equals_in_process_pipeline_exactly(run: dict) -> None:
    ev = run["result"]["evaluations"]["sa"]
    facts = ev["facts"]
    assert facts["secure_aggregation"] is True
    assert facts["secagg"]["num_shares"] % 2 == 1
    assert facts["n_used"] == N_GOOD - 1  # partition 5 dropped mid-protocol
    assert all(_partition(w) != DROPOUT for w in facts["used_clients"])
    assert any(f"partition {DROPOUT}" in w for w in facts["failed"])
    fed = _federation_of(run["parts"], facts["used_clients"])
    ref = release_hierarchy(fed, fe.SecureAggregation(), height=HEIGHT)
    released = [np.asarray(lv) for lv in ev["released_levels"]]
    for a, b in zip(released, ref.levels, strict=True):
        np.testing.assert_array_equal(a, b)
    direct = fe.evaluate(fed, fe.SecureAggregation(), height=HEIGHT, n_buckets=16, n_quantiles=64)
    assert ev["roc_auc"] == pytest.approx(direct.roc_auc, abs=1e-12)


def test_distdp_noise_has_the_target_variance_and_states_clients_used(run: dict) -> None:
    ev = run["result"]["evaluations"]["distdp eps=1"]
    facts = ev["facts"]
    assert facts["n_used"] == N_GOOD - 1
    plan = EvaluationPlan(**ev["plan"])
    assert plan.min_received == facts["secagg"]["reconstruction_threshold"]
    # At the threshold the guarantee is the target one; it names the clients adding
    # shares and the threshold (shares received are named only below it; the facts
    # state the clients used).
    assert plan.n_shares == N_GOOD
    assert f"from {N_GOOD} parties, any {plan.min_received} of which" in ev["guarantee"]
    assert "arrived" not in ev["guarantee"]
    fed = _federation_of(run["parts"], facts["used_clients"])
    exact = plan.spec.encode_levels(fed.scores, fed.labels)
    noise = np.asarray(ev["released_sum"]) - exact
    polya = plan.mechanism().noise
    assert isinstance(polya, PolyaShareNoise)
    # k received shares, each calibrated to the threshold m: variance k/m × target.
    expected = polya.shares.target.variance * facts["n_used"] / plan.min_received
    assert ev["noise_variance"] == pytest.approx(expected)
    n = noise.size
    se = expected * math.sqrt(5.0 / n)
    assert abs(noise.var() - expected) < 5 * se, (noise.var(), expected)
    assert abs(noise.mean()) < 5 * math.sqrt(expected / n)
    # No honest share was clipped: nothing beyond the clipping range.
    assert np.abs(noise).max() < facts["n_used"] * facts["secagg"]["clipping_range"]
    assert ev["epsilon_spent"] == pytest.approx(1.0)
    assert 0 < ev["delta_spent"] < 1e-8


def test_ldp_runs_in_plaintext_with_all_good_clients(run: dict) -> None:
    ev = run["result"]["evaluations"]["ldp eps=1"]
    assert ev["facts"]["secure_aggregation"] is False
    assert ev["facts"]["n_used"] == N_GOOD  # the dropout only fails SecAgg+ rounds
    assert all("partition 22" in w for w in ev["facts"]["rejected"])


def test_same_report_files_as_fedeval_evaluate(run: dict) -> None:
    out = run["out"]
    for f in ("report.html", "report.md", "results.json", "flower_result.json"):
        assert (out / f).is_file()
    payload = json.loads((out / "results.json").read_text())
    assert {row["setting"] for row in payload["summary"]} == {"sa", "distdp eps=1", "ldp eps=1"}
