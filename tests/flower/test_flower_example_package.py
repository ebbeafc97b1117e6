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
