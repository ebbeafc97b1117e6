"""Issue 24, finding 1: exact client counts published, and steering what is published.

Under add/remove of a client (or of an example when every client holds one),
the number of participating clients is not public: nothing a release returns
may hold it, and no published parameter may be planned from it. Each test
below fails on the code before the fix (where ``parameters["n_clients"]`` was
the exact count and the height was planned from it).
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import fedeval as fe
from fedeval.public_facts import Public, client_count_public, public_counts

CLIENT_LEVEL = fe.DistributedDP(epsilon=1.0, unit="client", contribution_bound=2)


def _one_example_clients(n: int) -> fe.Federation:
    rng = np.random.default_rng(5)
    scores = rng.random(n)
    return fe.Federation.from_arrays(scores, (scores > 0.5).astype(int))


def _published(ev: fe.Evaluation) -> str:
    return json.dumps(ev.summary(), default=str) + json.dumps(ev.plan.as_dict(), default=str)


@pytest.mark.parametrize(
    "privacy", [CLIENT_LEVEL, fe.DistributedDP(epsilon=1.0), fe.CentralDP(epsilon=1.0)]
)
def test_no_exact_count_is_published_under_add_remove(privacy) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ev = fe.evaluate(_one_example_clients(64), privacy, rng=0)
    assert ev.parameters["n_clients"] is None
    assert ev.parameters["n_examples"] is None
    assert ev.plan.n_clients is None
    # The plan's M is the noisy count, never the exact 64.
    assert ev.parameters["n_examples_released"] != 64.0 or ev.plan.n_examples == 64
    assert "n_examples_released" in ev.parameters
    # The receipt lists the count as a release of its own; the two compose to ε.
    assert ev.receipt.entries[0].label.startswith("example count")
    assert ev.epsilon_spent == pytest.approx(1.0)


def test_height_is_not_planned_from_the_exact_client_count() -> None:
    """64 vs 65 one-example clients gave height 4 vs 5 in every trial; now it is random on both."""
    heights = {64: set(), 65: set()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for n in heights:
            fed = _one_example_clients(n)
            for seed in range(40):
                heights[n].add(fe.evaluate(fed, CLIENT_LEVEL, rng=seed).parameters["height"])
    # The noisy count (sd ≈ 57) spreads the planned height over several values on both.
    assert heights[64] == heights[65]
    assert len(heights[64]) >= 2


def test_a_declared_count_is_used_and_published_as_declared() -> None:
    fed = _one_example_clients(64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ev = fe.evaluate(fed, CLIENT_LEVEL, public=Public(n_clients=1_000), rng=0)
    assert ev.parameters["n_clients"] == 1_000
    assert "declared" in ev.parameters["public_inputs"]["n_clients"]
    assert "n_examples_released" not in ev.parameters
    assert ev.epsilon_spent == pytest.approx(1.0)
    assert len(ev.receipt.entries) == ev.parameters["height"]  # no count release


@pytest.mark.parametrize(
    ("privacy", "clients", "examples"),
    [
        (fe.SecureAggregation(), True, True),
        (fe.LocalDP(epsilon=1.0), True, True),
        (fe.DistributedDP(epsilon=1.0, neighbouring="replace"), True, True),
        (fe.DistributedDP(epsilon=1.0), False, False),
        (CLIENT_LEVEL, False, False),
        (fe.CentralDP(epsilon=1.0), False, False),
        (fe.UserLevelDP(epsilon=1.0, delta=1e-5, clip=1.0), False, False),
    ],
)
def test_which_counts_are_public(privacy, clients, examples) -> None:
    fed = _one_example_clients(10)
    counts = public_counts(privacy, fed)
    assert client_count_public(privacy) is clients
    assert (counts.n_clients is not None) is clients
    assert (counts.n_examples is not None) is examples


def test_multiclass_and_ecdf_publish_no_private_client_count() -> None:
    rng = np.random.default_rng(1)
    probs = rng.dirichlet(np.ones(3), 300)
    y = np.array([rng.choice(3, p=p) for p in probs])
    fed = fe.Federation.from_arrays(probs, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        mev = fe.evaluate(fed, fe.DistributedDP(epsilon=1.0), rng=0)
    assert mev.parameters["n_clients"] is None
    binary = _one_example_clients(50)
    from fedeval.ecdf.federated import federated_ecdf

    session = federated_ecdf(binary, np.linspace(0, 1, 9), fe.DistributedDP(epsilon=1.0), rng=0)
    assert session.n_clients is None
    assert session.cost(3)["integers_total"] is None
    assert session.cost(3, n_clients=50)["integers_total"] == 50 * session.snapshot.n_tree_points


def test_the_report_and_cli_facts_hide_a_private_client_count(tmp_path) -> None:
    from fedeval.cli import describe_facts, public_facts

    fed = _one_example_clients(64)
    facts = public_facts(fed, [CLIENT_LEVEL])
    assert facts["n_clients"] is None and facts["n_examples"] is None
    assert "64" not in describe_facts(facts)
    assert public_facts(fed, [fe.SecureAggregation()])["n_clients"] == 64
    assert public_facts(fed, [CLIENT_LEVEL], declared_clients=70)["n_clients"] == 70
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ev = fe.evaluate(fed, CLIENT_LEVEL, rng=0)
    fe.report.write_report({"client DP": ev}, tmp_path / "r")
    text = (tmp_path / "r" / "report.md").read_text() + (
        tmp_path / "r" / "results.json"
    ).read_text()
    assert "64 participating" not in text
    assert "number of clients not public" in text
