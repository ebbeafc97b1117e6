"""The Flower apps in-process, without a simulation (issue 12).

* The ServerApp's settings refuse, before anything is sent: distributed DP
  without SecAgg+ (unless ``allow-plaintext-shares``; Skellam always), a DP
  setting without a declared ``max-examples-per-client``, SA together with DP
  on the same clients (unless ``allow-sa-with-dp``), and a run whose settings
  exceed ``total-epsilon``.
* The ClientApp's replies carry no size and no within-bound bit: ``describe``
  answers with the client's label only, sums carry no count, and local-DP
  replies carry the number of reports (public under LocalDP), at most the bound.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

flwr = pytest.importorskip("flwr")

import fedeval as fe  # noqa: E402
from fedeval.flower.plan import PLAN_KEY, EvaluationPlan, with_client_bound  # noqa: E402
from fedeval.privacy.models import model_to_dict  # noqa: E402

pytestmark = pytest.mark.flower

# A declared cohort: distributed DP adds or removes an example, so the number of
# participating clients is not public (test_flower_public_counts.py).
BASE = {"max-examples-per-client": 50, "epsilon": 1.0, "cohort-size": 20}


# ------------------------------------------------------------------ server settings
def _settings(**cfg: object):
    from fedeval.flower.server_app import ServerSettings

    return ServerSettings.from_config({**BASE, **cfg})


def test_run_config_names_build_the_same_models() -> None:
    from fedeval.flower.server_app import ServerSettings

    cfg = {
        "privacy": "sa, distdp,ldp",
        "delta": 1e-9,
        "noise": "skellam",
        "allow-sa-with-dp": True,
    }
    settings = _settings(**cfg)
    assert settings.privacy == (
        fe.SecureAggregation(),
        fe.DistributedDP(1.0, noise="skellam", delta=1e-9),
        fe.LocalDP(1.0),
    )
    models = (fe.DistributedDP(2.0, unit="client", contribution_bound=3),)
    assert _settings(privacy=models).privacy == models
    with pytest.raises(ValueError, match="needs epsilon"):
        ServerSettings.from_config(
            {"privacy": "distdp", "max-examples-per-client": 5, "cohort-size": 20}
        )
    with pytest.raises(ValueError, match="sa, distdp or ldp"):
        _settings(privacy="central")


def test_distdp_without_secagg_is_refused_unless_allowed() -> None:
    with pytest.raises(ValueError, match="allow-plaintext-shares"):
        _settings(privacy="distdp", secagg=False)
    settings = _settings(privacy="distdp", secagg=False, **{"allow-plaintext-shares": True})
    assert settings.allow_plaintext_shares and not settings.secagg
    with pytest.raises(ValueError, match="Skellam"):
        _settings(
            privacy="distdp",
            noise="skellam",
            delta=1e-6,
            secagg=False,
            **{"allow-plaintext-shares": True},
        )


def test_dp_needs_a_declared_bound_and_sa_alone_does_not() -> None:
    with pytest.raises(ValueError, match="max-examples-per-client"):
        _settings(privacy="distdp", **{"max-examples-per-client": 0})
    with pytest.raises(ValueError, match="max-examples-per-client"):
        _settings(privacy="ldp", **{"max-examples-per-client": 0})
    assert _settings(privacy="sa", epsilon=None, **{"max-examples-per-client": 0}).max_examples == 0


def test_sa_with_dp_is_refused_unless_allowed() -> None:
    with pytest.raises(ValueError, match="allow-sa-with-dp"):
        _settings(privacy="sa,distdp")
    assert _settings(privacy="sa,distdp", **{"allow-sa-with-dp": "true"}).allow_sa_with_dp


def test_total_epsilon_is_checked_before_the_run() -> None:
    with pytest.raises(ValueError, match="total-epsilon"):
        _settings(privacy="distdp,ldp", **{"total-epsilon": 1.5})
    assert _settings(privacy="distdp,ldp", **{"total-epsilon": 2.0}).total_epsilon == 2.0


# ----------------------------------------------------------------- client replies
@pytest.fixture
def task_identity() -> Iterator[None]:
    """Messages need the identity of the running task (set by Flower's runtime)."""
    from flwr.supercore.task_identity import TaskIdentity

    saved = (TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id)
    TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = 1, 1, 1
    yield
    TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id = saved


def _call(app, message_type: str, config: dict, data: Path, pid: int = 0):
    from flwr.app import ConfigRecord, Context, Message, RecordDict

    from fedeval.flower.client_app import INFO_KEY

    msg = Message(
        RecordDict({INFO_KEY: ConfigRecord(config)}),
        dst_node_id=7,
        message_type=message_type,
        group_id="g",
    )
    ctx = Context(
        run_id=1, node_id=7, node_config={"partition-id": pid}, state=RecordDict(), run_config={}
    )
    reply = app(msg, ctx)
    assert not reply.has_error(), reply.error
    return reply


@pytest.fixture
def client_files(tmp_path: Path) -> Path:
    # Partition 0 holds 3 examples, partition 1 holds 12 (above the bound of 5).
    for pid, n in ((0, 3), (1, 12)):
        pd.DataFrame({"score": np.linspace(0.05, 0.95, n), "label": np.arange(n) % 2}).to_csv(
            tmp_path / f"client_{pid}.csv", index=False
        )
    return tmp_path


def _plan(model: object, **kw: object) -> EvaluationPlan:
    args: dict = {
        "privacy": model_to_dict(with_client_bound(model, 5)),  # type: ignore[arg-type]
        "height": 3,
        "branching": 2,
        "score_range": (0.0, 1.0),
        "max_examples": 5,
        "n_shares": 4,
        "min_received": 3,
    }
    args.update(kw)
    return EvaluationPlan(**args)


@pytest.mark.usefixtures("task_identity")
def test_describe_sends_no_size_and_no_within_bound_bit(client_files: Path) -> None:
    from fedeval.flower.client_app import DESCRIBE, INFO_KEY, MASK_KEY, make_client_app
    from fedeval.flower.masks import MASK_GENERATOR

    app = make_client_app({"data-path": str(client_files / "client_{partition-id}.csv")})
    infos = [
        dict(_call(app, DESCRIBE, {"declare-size": False}, client_files, pid).content
             .config_records[INFO_KEY])
        for pid in (0, 1)
    ]  # fmt: skip
    # Under and over the bound, the reply is the client's label and its SecAgg+ mask
    # generator (the same for every client), nothing else.
    assert [set(i) for i in infos] == [{"client", MASK_KEY}, {"client", MASK_KEY}]
    assert {i[MASK_KEY] for i in infos} == {MASK_GENERATOR}
    # Secure aggregation alone with no declared bound: the server asks for sizes.
    asked = _call(app, DESCRIBE, {"declare-size": True}, client_files, 1)
    assert asked.content.config_records[INFO_KEY]["n-examples"] == 12


@pytest.mark.usefixtures("task_identity")
@pytest.mark.parametrize(
    ("model", "extra", "count"),
    [
        (fe.SecureAggregation(), {}, None),
        (fe.DistributedDP(1.0), {"plaintext_shares": True}, None),
        (fe.LocalDP(2.0), {"level": 2}, 5),
    ],
)
def test_plaintext_reports_carry_only_the_public_report_count(
    client_files: Path, model: object, extra: dict, count: int | None
) -> None:
    from fedeval.flower.client_app import INFO_KEY, REPORT, VECTOR_KEY, make_client_app

    app = make_client_app(
        {"data-path": str(client_files / "client_{partition-id}.csv"), "client-seed": 3}
    )
    plan = _plan(model, **extra)
    cfg = {PLAN_KEY: plan.to_json(), "fedeval-round": 1}
    reply = _call(app, REPORT, cfg, client_files, pid=1)  # 12 examples, bound 5
    info = dict(reply.content.config_records[INFO_KEY])
    assert info.pop("n-reports", None) == count
    assert set(info) == {"client"}
    vec = reply.content.array_records[VECTOR_KEY].to_numpy_ndarrays()[0]
    assert vec.shape == (plan.vector_length,)
    if count is None and model == fe.SecureAggregation():
        assert vec.sum() == 5  # the client kept exactly the bound


# ------------------------------------------------------------------ flower-sim output
def test_flower_sim_describes_the_file_and_the_simulated_cohort_apart() -> None:
    """Issue 29: `fedeval flower-sim` printed "20,000 clients", then "simulation with 5
    clients": the file's one-example clients are not the Flower clients."""
    import argparse

    from fedeval.cli_common import public_facts
    from fedeval.flower.simulate import _counts_text, _input_line

    rng = np.random.default_rng(0)
    fed = fe.Federation.from_arrays(rng.random(20_000), rng.integers(0, 2, 20_000))
    args = argparse.Namespace(clients=5, client=None)
    sa = _input_line(public_facts(fed, [fe.SecureAggregation()]), args)
    assert "20,000 examples" in sa and "20,000 clients" not in sa
    assert "its rows split over 5 simulated clients (the cohort size, declared public)" in sa
    dp = _input_line(public_facts(fed, [fe.DistributedDP(1.0)]), args)
    assert "number of examples not public" in dp and "20,000" not in dp
    withheld = {"n_selected": None, "n_used": None, "n_failed": None, "n_rejected": None}
    line = _counts_text({"facts": withheld, "wall_seconds": 1.0, "bytes_sent_per_client": None})
    assert "not public" in line and "None" not in line
    public = {"n_selected": 5, "n_used": 4, "n_failed": 1, "n_rejected": 0}
    line = _counts_text({"facts": public, "wall_seconds": 1.0, "bytes_sent_per_client": 10.0})
    assert "clients used 4/5" in line and "10 B/client" in line
