"""examples/flower declares what ``flwr run`` can install (issue 16: exit code 608)."""

from __future__ import annotations

import tomllib

from readme_blocks import ROOT

APP = ROOT / "examples" / "flower"


def test_the_app_declares_no_dependency_flower_would_fetch_from_an_index() -> None:
    # Flower runs `uv sync` on the app's dependencies at run time; "fedeval[flower]" is
    # on no package index, so `flwr run .` failed with "no versions of fedeval[flower]".
    project = tomllib.loads((APP / "pyproject.toml").read_text())["project"]
    assert not any(d.lower().startswith("fedeval") for d in project["dependencies"])
    assert "pip install -e '../..[flower]'" in (APP / "README.md").read_text()


def test_components_point_at_modules_of_the_app() -> None:
    flwr = tomllib.loads((APP / "pyproject.toml").read_text())["tool"]["flwr"]["app"]
    for ref in flwr["components"].values():
        module = ref.split(":")[0]
        assert (APP / (module.replace(".", "/") + ".py")).exists(), ref


def test_the_readme_the_defaults_and_prepare_data_state_one_bound_and_cohort() -> None:
    """Issue 29: the README suggested 200 examples per client where prepare_data printed
    400 (and pyproject.toml said 500); a distdp run also needs the cohort it simulates.
    The top-level README's Flower section states the same bound."""
    import re

    readme = (APP / "README.md").read_text()
    config = tomllib.loads((APP / "pyproject.toml").read_text())["tool"]["flwr"]["app"]["config"]
    prepare = (APP / "fedeval_flower_example" / "prepare_data.py").read_text()
    examples = int(re.search(r'"--examples", type=int, default=(\d+)', prepare).group(1))
    clients = int(re.search(r'"--clients", type=int, default=(\d+)', prepare).group(1))
    printed = max(-(-examples // clients), 1)  # prepare_data's bound: an even split
    assert printed == 200  # what the README has always suggested
    in_readme = {int(v) for v in re.findall(r"max-examples-per-client[ =](\d+)", readme)}
    assert in_readme == {printed} == {config["max-examples-per-client"]}
    top = (APP.parents[1] / "README.md").read_text()
    start = top.index("\n## Flower")
    flower = top[start : top.index("\n## ", start + 1)]
    in_top = {int(v) for v in re.findall(r"max-examples-per-client[ =](\d+)", flower)}
    assert in_top == {printed}
    # Each flwr run command declares the cohort it runs on: the simulated SuperNodes, or
    # the three SuperNodes of the deployment section.
    supernodes = int(re.search(r"--num-supernodes (\d+)", readme).group(1))
    assert supernodes == clients == config["cohort-size"]
    cohorts = [int(v) for v in re.findall(r"'[^'\n]*cohort-size=(\d+)[^'\n]*'", readme)]
    assert cohorts == [supernodes, readme.count("flower-supernode --insecure")]
    assert "cohort-size={args.clients}" in prepare


def test_the_readme_says_what_simulation_config_leaves_behind() -> None:
    """Issue 29: `flwr federation simulation-config` writes ~/.flwr/config.toml and leaves
    a local SuperLink running; the README says so, and how to stop it."""
    readme = (APP / "README.md").read_text()
    assert "~/.flwr/config.toml" in readme and "creates it" in readme
    assert "leaves it running" in readme and "kill <pid>" in readme
    assert 'export FLWR_HOME="$PWD/.flwr"' in readme
    top = (APP.parents[1] / "README.md").read_text()
    start = top.index("\n## Flower")
    flower = top[start : top.index("\n## ", start + 1)]
    assert "flwr federation simulation-config" in flower and "~/.flwr/config.toml" in flower
    assert "keeps running" in flower and "kill <pid>" in flower
