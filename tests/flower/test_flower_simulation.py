"""One Flower simulation (about 20 clients, SecAgg+ on) of the fedeval apps.

A single run (Ray start-up dominates) with 23 nodes: 20 with good data, one whose
file is missing, one whose file has the wrong columns and one holding more
examples than the public bound ``max-examples-per-client`` (all of them at one
score, so whichever it keeps, its counts are known). Partition 5 drops out in
the middle of every SecAgg+ round (after the keys were shared). The run
evaluates under SA, DistDP (Pólya, ε = 1) and LDP (OUE, ε = 1) on the same
clients, which it refuses unless ``allow-sa-with-dp`` is set, and checks:

* distributed DP adds or removes an example, so the number of clients that
  take part is not public: the run declares its cohort (``cohort-size``, the 23
  nodes), plans from it, and withholds the counts it observes;
* the two bad clients fail, and only the server log names them: the released
  result (``flower_result.json``) holds no counts, no client names and no sizes;
* the oversized client is not rejected: it subsampled itself to the bound;
* SA: the released leaf counts equal the in-process release of the clients used
  (the oversized one at the bound), exactly, and so does ROC AUC;
* DistDP: the model carries the public bound as its contribution bound;
  released minus exact counts has the variance of the target discrete Laplace
  scaled by received/threshold shares, and the stated variance is the one for
  the whole declared cohort (an upper bound that does not depend on who took part);
* the secure sums ran on the Ray workers and the server with fedeval's mask
  generator (the sums are exact), and each names its secure sum;
* LDP: plaintext replies, with the public report counts;
* one ledger: the composed total of the DP settings, and the warning that the
  DP receipts do not protect against the SA release;
* the same report files as ``fedeval evaluate``.
"""

from __future__ import annotations

import json
import logging
import math
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
BIG = 22
HEIGHT = 8
BIG_SCORE = 0.95


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


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
    _, largest = write_partitions(fed, N_GOOD, parts, rng=1)
    bound = largest  # the operator's public bound (set, not derived from the clients)
    # Partition 20: no file. Partition 21: wrong columns. Partition 22: more examples
    # than the bound, all positives at one score: it keeps `bound` of them.
    pd.DataFrame({"prob": [0.1, 0.9], "y": [0, 1]}).to_csv(parts / "client_21.csv", index=False)
    big = bound + 5
    pd.DataFrame({"score": np.full(big, BIG_SCORE), "label": np.ones(big, dtype=int)}).to_csv(
        parts / f"client_{BIG}.csv", index=False
    )
    out = root / "report"
    server_log = _Records()
    logger = logging.getLogger("fedeval.flower")
    level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(server_log)
    try:
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
                "allow-sa-with-dp": True,
                "height": HEIGHT,
                "n-buckets": 16,
                "n-quantiles": 64,
                "max-examples-per-client": bound,
                "cohort-size": N_GOOD + 3,
                # Planned from the cohort: two clients fail to load and one drops out.
                "max-dropouts": 3,
                "min-clients": 10,
                "out-dir": str(out),
                "seed": 0,
            },
        )
    finally:
        logger.removeHandler(server_log)
        logger.setLevel(level)
    return {
        "result": result,
        "parts": parts,
        "out": out,
        "bound": bound,
        "log": server_log.messages,
    }


def _federation_of(parts: Path, partitions: list[int], bound: int) -> fe.Federation:
    """The data the clients encoded: the big client's at the bound (all rows alike)."""
    frames = [
        pd.read_csv(parts / f"client_{p}.csv").head(bound).assign(client=p) for p in partitions
    ]
    df = pd.concat(frames, ignore_index=True)
    return fe.Federation.from_frame(df, score="score", label="label", client="client")


def _secagg_clients() -> list[int]:
    """Good partitions but the one that drops out, plus the big one."""
    return [p for p in range(N_GOOD) if p != DROPOUT] + [BIG]


def test_released_result_names_no_client_and_no_size_and_no_count(run: dict) -> None:
    text = (run["out"] / "flower_result.json").read_text()
    assert "partition" not in text and "node " not in text
    result = run["result"]
    assert result["n_nodes"] is None
    assert result["cohort_size"] == {"value": N_GOOD + 3, "declared": True}
    for ev in result["evaluations"].values():
        facts = ev["facts"]
        assert set(facts) == {
            "n_selected",
            "n_used",
            "n_failed",
            "n_rejected",
            "secure_aggregation",
            "secagg",
            "counts",
            "secure_sum",
        }
        assert all(facts[k] is None for k in ("n_selected", "n_used", "n_failed", "n_rejected"))
        assert facts["counts"].startswith("not public under 'distdp eps=1'")
        assert ev["bytes_sent_per_client"] is None
    # The operator finds the names and reasons in the server log, and no totals.
    log = "\n".join(run["log"])
    assert "partition 20" in log and "no such file" in log.lower()
    assert "partition 21" in log and "column" in log.lower()
    assert "clients used" not in log


def test_bad_clients_fail_and_the_rest_complete(run: dict) -> None:
    # Partitions 20 and 21 fail to load; partition 5 also fails every SecAgg+ round
    # (the server log says so; the result does not count them).
    log = "\n".join(run["log"])
    assert log.count(f"partition {DROPOUT}") >= 2 and "simulated dropout" in log
    assert set(run["result"]["evaluations"]) == {"sa", "distdp eps=1", "ldp eps=1"}


def test_sa_release_equals_in_process_pipeline_exactly(run: dict) -> None:
    ev = run["result"]["evaluations"]["sa"]
    facts = ev["facts"]
    assert facts["secure_aggregation"] is True
    assert facts["secagg"]["num_shares"] % 2 == 1
    # Exactly the clients used (partition 5 dropped, the big one took part), summed
    # by SecAgg+ with fedeval's masks on the Ray workers and the server.
    fed = _federation_of(run["parts"], _secagg_clients(), run["bound"])
    ref = release_hierarchy(fed, fe.SecureAggregation(), height=HEIGHT)
    released = [np.asarray(lv) for lv in ev["released_levels"]]
    for a, b in zip(released, ref.levels, strict=True):
        np.testing.assert_array_equal(a, b)
    direct = fe.evaluate(fed, fe.SecureAggregation(), height=HEIGHT, n_buckets=16)
    assert ev["roc_auc"] == pytest.approx(direct.roc_auc, abs=1e-12)
    secure = facts["secure_sum"]
    assert secure["flwr_version"] == flwr.__version__
    assert secure["masks"]["generator"] == "fedeval-shake256/1"
    assert ev["guarantee"].endswith(secure["summary"])


def test_distdp_noise_has_the_target_variance_and_the_model_carries_the_bound(run: dict) -> None:
    ev = run["result"]["evaluations"]["distdp eps=1"]
    facts = ev["facts"]
    plan = EvaluationPlan(**ev["plan"])
    assert plan.model == fe.DistributedDP(1.0, contribution_bound=run["bound"])
    assert plan.client_bound == run["bound"] and not plan.plaintext_shares
    assert plan.min_received == facts["secagg"]["reconstruction_threshold"]
    assert plan.n_shares == N_GOOD + 3 and plan.cohort_declared  # the declared cohort
    frac = plan.min_received / plan.n_shares
    assert f"any fraction {frac:.4g} of them" in ev["guarantee"]
    assert "arrived" not in ev["guarantee"]
    clients = _secagg_clients()
    fed = _federation_of(run["parts"], clients, run["bound"])
    exact = plan.spec.encode_levels(fed.scores, fed.labels)
    noise = np.asarray(ev["released_sum"]) - exact
    polya = plan.mechanism().noise
    assert isinstance(polya, PolyaShareNoise)
    target = polya.shares.target.variance
    # Stated: the cohort's shares, each calibrated to the threshold m (an upper bound).
    assert ev["noise_variance"] == pytest.approx(target * plan.n_shares / plan.min_received)
    # Drawn: the k shares that arrived, variance k/m × target.
    expected = target * len(clients) / plan.min_received
    n = noise.size
    se = expected * math.sqrt(5.0 / n)
    assert abs(noise.var() - expected) < 5 * se, (noise.var(), expected)
    assert abs(noise.mean()) < 5 * math.sqrt(expected / n)
    # No honest share was clipped: nothing beyond the clipping range.
    assert np.abs(noise).max() < len(clients) * facts["secagg"]["clipping_range"]
    assert ev["epsilon_spent"] == pytest.approx(1.0)
    assert 0 < ev["delta_spent"] < 1e-8
    assert "does not protect against" in ev["note"]


def test_ldp_runs_in_plaintext_with_the_public_report_counts(run: dict) -> None:
    ev = run["result"]["evaluations"]["ldp eps=1"]
    assert ev["facts"]["secure_aggregation"] is False and ev["facts"]["secure_sum"] == {}
    assert any("number of reports each client sends" in p for p in ev["public_inputs"])


def test_one_ledger_composes_the_run(run: dict) -> None:
    result = run["result"]
    record = result["privacy_ledger"]
    evs = result["evaluations"]
    dist, ldp = evs["distdp eps=1"], evs["ldp eps=1"]
    assert [s["setting"] for s in record["settings"]] == ["distdp eps=1", "ldp eps=1"]
    assert record["ledger"]["spent_epsilon"] == pytest.approx(
        dist["epsilon_spent"] + ldp["epsilon_spent"]
    )
    # DistDP adds/removes an example, LDP replaces one: the total is stated under
    # replacement, which DistDP's noise covers (calibrated to the swap its bound causes).
    assert record["total"]["neighbouring"] == "replace one example's data"
    assert record["total"]["epsilon"] == pytest.approx(dist["epsilon_spent"] + 1.0)
    assert record["total"]["delta"] == pytest.approx(dist["delta_spent"])
    assert "'sa'" in record["exact_release"]
    assert result["max_examples_per_client"] == {"value": run["bound"], "declared": True}


def test_same_report_files_as_fedeval_evaluate(run: dict) -> None:
    out = run["out"]
    for f in ("report.html", "report.md", "results.json", "flower_result.json"):
        assert (out / f).is_file()
    payload = json.loads((out / "results.json").read_text())
    assert payload["schema"] == "fedeval.evaluation/1"  # the schema of `fedeval evaluate`
    assert set(payload["evaluations"]) == {"sa", "distdp eps=1", "ldp eps=1"}
