"""Every third-party package the library imports is declared where it is needed.

Default features may import only the core dependencies; the optional extras
(flwr for Flower, randomgen for the CSPRNG) must be imported lazily, inside
the functions that need them, never at module import time of ``fedeval``.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "fedeval"
#: import name -> distribution name, where they differ.
DIST = {"sklearn": "scikit-learn", "dp_accounting": "dp-accounting", "yaml": "pyyaml"}
OPTIONAL = {
    "flwr": "flower",
    "dask": "dask",
    "distributed": "dask",
    "fsspec": "dask",
    "jsonschema": "test",
}


def _declared() -> tuple[set[str], dict[str, set[str]]]:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

    def names(reqs: list[str]) -> set[str]:
        return {re.split(r"[<>=!~\[ ;]", r, maxsplit=1)[0].lower() for r in reqs}

    extras = {k: names(v) for k, v in meta.get("optional-dependencies", {}).items()}
    return names(meta["dependencies"]), extras


def _third_party_imports() -> dict[str, set[str]]:
    stdlib = set(sys.stdlib_module_names)
    found: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            mods = []
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                mods = [node.module]
            for m in mods:
                top = m.split(".")[0]
                if top not in stdlib and top not in {"fedeval", "numpy_typing"}:
                    found.setdefault(top, set()).add(path.relative_to(SRC).as_posix())
    return found


def test_every_import_is_a_declared_dependency() -> None:
    core, extras = _declared()
    for top, files in _third_party_imports().items():
        dist = DIST.get(top, top).lower().replace("_", "-")
        if top in OPTIONAL:
            assert dist in {d.replace("_", "-") for d in extras[OPTIONAL[top]]}, (top, files)
        else:
            assert dist in {d.replace("_", "-") for d in core}, f"{top} used in {sorted(files)}"


def test_importing_fedeval_does_not_load_optional_extras() -> None:
    code = (
        "import sys, fedeval, fedeval.ecdf, fedeval.flower, fedeval.calibration;"
        "import fedeval.report;"
        "print(sorted(m for m in ('flwr', 'randomgen', 'dask', 'distributed', 'jsonschema')"
        " if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_public_names_load_lazily_and_all_resolve() -> None:
    """``import fedeval`` loads no numpy/scipy/matplotlib; every name of ``__all__`` resolves."""
    code = (
        "import sys, fedeval as fe;"
        "before = sorted(m for m in ('numpy', 'scipy', 'matplotlib') if m in sys.modules);"
        "missing = [n for n in fe.__all__ if getattr(fe, n, None) is None];"
        "print(before, missing, fe.evaluate.__module__, 'evaluate' in dir(fe))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[] [] fedeval.entry_points True"
    import fedeval

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = fedeval.nope  # type: ignore[attr-defined]


def test_first_evaluate_on_arrays_loads_no_pandas_pyarrow_or_heavy_scipy() -> None:
    """Issue 28 (start-up): a binary DistDP ``fe.evaluate`` on arrays needs none of these.

    pandas and pyarrow (~0.3 s) serve readers, scans and the demo; scipy.stats
    (~0.3 s) and scipy.optimize (~0.15 s, also pulled in by scipy.interpolate)
    serve intervals, long isotonic projections, PCHIP and LPs; scipy.sparse and
    scipy.special (~0.1 s each) serve path matrices, smoothing and multiclass
    bounds: each is imported on first use.
    """
    code = (
        "import sys, warnings, numpy as np, fedeval as fe;"
        "warnings.simplefilter('ignore');"
        "s = np.random.default_rng(0).random(64); y = (s > 0.5).astype(int);"
        "fe.evaluate(fe.Federation.from_arrays(s, y), fe.DistributedDP(1.0));"
        "heavy = ('pandas', 'pyarrow', 'scipy.stats', 'scipy.optimize', 'scipy.interpolate',"
        " 'scipy.sparse', 'scipy.special');"
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.integration
def test_every_module_imports_first_in_a_fresh_interpreter(tmp_path: Path) -> None:
    """Each module of fedeval can be the first one imported (no cycle through a package
    ``__init__``). ``import fedeval.postprocess`` alone failed: consistency → sketches →
    hierarchical_histogram → consistency, half-initialised. The architecture checker does
    not count ``__init__`` runs as edges, so this import-order check stands beside it.

    The child re-imports the package once per module, so it keeps its bytecode in a
    private cache: under ``PYTHONDONTWRITEBYTECODE`` every re-import compiled the
    sources again (26 s against 17 s on a 2-core machine). Bytecode does not change
    the order in which modules run."""
    code = """
import importlib, pkgutil, sys
import fedeval
names = [m.name for m in pkgutil.walk_packages(fedeval.__path__, "fedeval.")
         if not m.name.startswith("fedeval.flower")]
failed = []
for name in names:
    for loaded in [m for m in sys.modules if m == "fedeval" or m.startswith("fedeval.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except Exception as exc:
        failed.append(f"{name}: {type(exc).__name__}: {exc}")
print(len(names))
print("\\n".join(failed))
"""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(tmp_path)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    count, *failed = out.stdout.strip().splitlines()
    assert int(count) > 100 and failed == [], failed


def test_the_sketches_package_names_resolve_lazily() -> None:
    code = (
        "import sys, fedeval.sketches as sk;"
        "loaded = 'fedeval.sketches.hierarchical_histogram' in sys.modules;"
        "names = [getattr(sk, n).__name__ for n in sk.__all__];"
        "print(loaded, len(names) == len(sk.__all__))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]
