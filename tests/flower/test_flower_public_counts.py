"""Issue 24, item 3 on Flower: what a run publishes does not depend on how many clients took part.

Under client-level add/remove DP, and under example-level add/remove when every
client holds one example, adding a unit can add a client, so the number of
participating clients is not public (:mod:`fedeval.public_facts`). The audited
case is 64 against 65 one-example clients under
``DistributedDP(unit="client", contribution_bound=2)``: the server planned the
height from the replies it received (4 against 5) and published the exact
counts. Here the whole ServerApp runs twice in-process (real SecAgg+ rounds,
no Ray), and everything it returns, writes and logs must be the same on both
runs except what is computed from the noisy release. The operator declares the
cohort size (``cohort-size``), which the server plans from and publishes as
declared; the counts it observes are withheld, with the reason.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("flwr")

import fedeval as fe

pytestmark = pytest.mark.flower

COHORT = 65

# Computed from the noisy release (or timings): they differ between any two runs.
NOISY = {
    "released_sum",
    "released_levels",
    "roc_auc",
    "metrics",
    "at_threshold",
    "wall_seconds",
    "describe_seconds",
}


def _frames(n: int) -> list[pd.DataFrame]:
    """n one-example clients; the first 64 are the same in both runs."""
    rng = np.random.default_rng(7)
    scores = rng.random(COHORT)
    return [pd.DataFrame({"score": [scores[i]], "label": [i % 2]}) for i in range(n)]


def _server(model: object, **extra: object) -> dict[str, Any]:
    return {
        "privacy": [model],
        "max-examples-per-client": 2,
        "num-shares": 5,  # small neighbourhoods keep 65 in-process SecAgg+ clients fast
        "n-buckets": 4,
        "n-quantiles": 8,
        "seed": 0,
        **extra,
    }


def _without(obj: Any, keys: set[str]) -> Any:
    if isinstance(obj, dict):
        return {k: _without(v, keys) for k, v in obj.items() if k not in keys}
    if isinstance(obj, list):
        return [_without(v, keys) for v in obj]
    return obj


def _public_view(run: Any) -> dict[str, Any]:
    """Everything the run returned, wrote and logged, minus what the noise decides."""
    results = _without(run.results, NOISY)
    for ev in results["evaluations"].values():
        # The number of examples decoded from the noisy release (post-processing).
        ev["parameters"].pop("n_examples")
        ev.pop("public_inputs")  # the same decoded number, in words
    returned = {
        name: (_without(ev.parameters, {"n_examples"}), ev.receipt.as_dict())
        for name, ev in run.returned["evaluations"].items()
    }
    log = [re.sub(r"\d+\.\d+\s*s\b", "<time>", line) for line in run.log]
    return {
        "flower_result.json": _without(run.flower_result, NOISY),
        "results.json": results,
        "returned": returned,
        "log": log,
    }


@pytest.mark.parametrize(
    "model",
    [
        fe.DistributedDP(1.0, unit="client", contribution_bound=2),
        fe.DistributedDP(1.0),  # example-level add/remove, one example per client
    ],
    ids=["client-level", "example-level"],
)
def test_64_and_65_clients_publish_the_same_facts(run_in_process: Any, model: object) -> None:
    server = _server(model, **{"cohort-size": COHORT})
    clients = {"client-seed": 3}  # reproducible noise shares (tests only)
    small = _public_view(run_in_process(_frames(64), server, clients))
    large = _public_view(run_in_process(_frames(65), server, clients))
    for part in small:
        assert small[part] == large[part], part


def test_the_result_says_what_is_withheld_and_names_the_declared_cohort(
    run_in_process: Any,
) -> None:
    model = fe.DistributedDP(1.0, unit="client", contribution_bound=2)
    run = run_in_process(_frames(65), _server(model, **{"cohort-size": COHORT}))
    result = run.flower_result
    assert result["n_nodes"] is None
    assert result["cohort_size"] == {"value": COHORT, "declared": True}
    (ev,) = result["evaluations"].values()
    facts = ev["facts"]
    for key in ("n_selected", "n_used", "n_failed", "n_rejected"):
        assert facts[key] is None
    assert "not public" in facts["counts"] and "cohort-size" in facts["counts"]
    assert ev["bytes_sent_per_client"] is None
    # The plan and the SecAgg+ parameters come from the declared cohort alone.
    assert ev["plan"]["n_shares"] == COHORT
    assert ev["plan"]["height"] == fe.plan(model, n_clients=COHORT).height
    (params,) = (e.parameters for e in run.returned["evaluations"].values())
    assert params["n_clients"] == COHORT
    assert "declared" in params["public_inputs"]["n_clients"]
    assert not any(" 65 " in line or "65 clients" in line for line in run.log)


def test_a_run_whose_counts_are_public_still_publishes_them(run_in_process: Any) -> None:
    frames: list[pd.DataFrame | None] = [*_frames(4), None]  # partition 4: no file
    run = run_in_process(frames, {"privacy": "sa", "seed": 0})
    facts = run.flower_result["evaluations"]["sa"]["facts"]
    assert (facts["n_selected"], facts["n_used"], facts["n_failed"]) == (5, 4, 1)
    assert facts["counts"].startswith("public")
    assert run.flower_result["n_nodes"] == 5
    assert any("4 of 5 clients used" in line for line in run.log)


def test_dp_whose_client_count_is_private_needs_a_declared_cohort() -> None:
    from fedeval.flower.server_app import ServerSettings

    base = {"max-examples-per-client": 2, "epsilon": 1.0}
    for model in (
        fe.DistributedDP(1.0),
        fe.DistributedDP(1.0, unit="client", contribution_bound=2),
    ):
        with pytest.raises(ValueError, match="cohort-size"):
            ServerSettings.from_config({**base, "privacy": [model]})
        settings = ServerSettings.from_config({**base, "privacy": [model], "cohort-size": 9})
        assert settings.cohort_size == 9
    # Public counts: replacement neighbours, local DP (replacement), secure aggregation.
    for names in ("ldp", "sa"):
        ServerSettings.from_config({**base, "privacy": names})
    ServerSettings.from_config({**base, "privacy": [fe.DistributedDP(1.0, neighbouring="replace")]})
    with pytest.raises(ValueError, match="clients-per-evaluation"):
        ServerSettings.from_config(
            {**base, "privacy": "distdp", "cohort-size": 9, "clients-per-evaluation": 5}
        )


def test_a_declared_cohort_replaces_the_share_count_among_the_public_inputs() -> None:
    from fedeval.flower.plan import SHARES_INPUT, EvaluationPlan, with_client_bound
    from fedeval.privacy.models import model_to_dict

    def plan(declared: bool) -> EvaluationPlan:
        return EvaluationPlan(
            privacy=model_to_dict(with_client_bound(fe.DistributedDP(1.0), 2)),
            height=3,
            branching=2,
            score_range=(0.0, 1.0),
            max_examples=2,
            n_shares=9,
            min_received=7,
            cohort_declared=declared,
        )

    # The dispatch names the share count as public; with a declared cohort the plan says
    # where it came from instead (fails if the dispatch's wording drifts from SHARES_INPUT).
    assert SHARES_INPUT in plan(False).mechanism().guarantee.public
    public = plan(True).mechanism().guarantee.public
    assert SHARES_INPUT not in public
    assert any(p.startswith("cohort-size = 9, declared public") for p in public)
    assert "threshold 7" in public[-1]


def test_a_cohort_short_of_its_threshold_stops_without_stating_the_count(
    run_in_process: Any,
) -> None:
    from fedeval.flower.replies import NotEnoughClientsError

    # Cohort 7 (threshold 6 with one dropout); three of its clients have no file.
    frames: list[pd.DataFrame | None] = [*_frames(4), None, None, None]
    model = fe.DistributedDP(1.0, unit="client", contribution_bound=2)
    server = _server(model, **{"cohort-size": 7, "num-shares": 0})
    with pytest.raises(NotEnoughClientsError, match="threshold 6 planned from 7") as err:
        run_in_process(frames, server)
    assert "max-dropouts" in str(err.value) and "4" not in str(err.value)
    assert not any("SecAgg" in line and "commencing" in line for line in run_in_process.last_log)
