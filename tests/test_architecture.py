"""The one-way data flow of DESIGN.md holds on the source tree (tools/check_architecture.py).

The checker is also run on a small synthetic ``fedeval`` package with one layer of
each kind, into which each test plants one violation: a checker that stopped
seeing a kind of violation fails here, and so does one that flags allowed code.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SPEC = importlib.util.spec_from_file_location(
    "check_architecture", ROOT / "tools" / "check_architecture.py"
)
assert SPEC is not None and SPEC.loader is not None
checker = importlib.util.module_from_spec(SPEC)
sys.modules["check_architecture"] = checker
SPEC.loader.exec_module(checker)

#: A minimal package with the real layout: a module per layer, re-exports in the
#: package __init__s (the root's lazily, as the real one), a sampler, a ledger.
MINI: dict[str, str] = {
    "__init__.py": """
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from fedeval.evaluation import evaluate
        def __getattr__(name):
            import importlib
            return importlib.import_module("fedeval.evaluation").evaluate
    """,
    "validation.py": "def check(x):\n    return x\n",
    "data/__init__.py": "from fedeval.data.partition import iid\n",
    "data/partition.py": "def iid(n, rng):\n    return rng.permutation(n)\n",
    "privacy/__init__.py": """
        from fedeval.privacy.ledger import BudgetLedger, LedgerEntry
        from fedeval.privacy.mechanisms.laplace import DiscreteLaplace, sample_discrete_laplace
        from fedeval.privacy.models import LocalDP
    """,
    "privacy/models.py": "class LocalDP:\n    epsilon = 1.0\n",
    "privacy/ledger.py": """
        class LedgerEntry:
            pass
        class BudgetLedger:
            def charge(self, entry):
                pass
            def charge_all(self, entries):
                for e in entries:
                    self.charge(e)
    """,
    "privacy/mechanisms/__init__.py": (
        "from fedeval.privacy.mechanisms.laplace import DiscreteLaplace\n"
    ),
    "privacy/mechanisms/laplace.py": """
        class DiscreteLaplace:
            def __init__(self, scale):
                self.scale = scale
            def variance(self):
                return 2 * self.scale**2
            def sample(self, size, rng=None):
                return rng.laplace(0, self.scale, size)
        def sample_discrete_laplace(scale, rng):
            return rng.laplace(0, scale)
    """,
    "privacy/noise.py": """
        class CentralNoise:
            def server(self, size, rng):
                return rng.normal(size=size)
            def total(self, size, rng, n_received):
                return self.server(size, rng)
    """,
    "sketches/__init__.py": "from fedeval.sketches.tree import path_sums\n",
    "sketches/tree.py": "def path_sums(x):\n    return x\n\ndef _hidden():\n    return 0\n",
    "aggregation/__init__.py": (
        "from fedeval.aggregation.release import charge, release, reserve\n"
    ),
    "aggregation/release.py": """
        from fedeval.privacy.ledger import BudgetLedger, LedgerEntry
        from fedeval.privacy.noise import CentralNoise
        def charge(ledger, entries):
            ledger.charge_all(entries)
        def reserve(ledger):
            charge(ledger, [LedgerEntry()])
        def release(data, ledger, rng):
            reserve(ledger)
            return data + CentralNoise().total(1, rng, 1)
    """,
    "postprocess/__init__.py": "",
    "postprocess/bootstrap.py": "def replicate(rng):\n    return rng.standard_normal(3)\n",
    "metrics/__init__.py": "",
    "metrics/roc.py": """
        from fedeval.sketches.tree import path_sums
        def roc(x, ecdf):
            return path_sums(x), ecdf.total
    """,
    "evaluation.py": """
        from fedeval.aggregation import release
        from fedeval.metrics.roc import roc
        def evaluate(data, ledger, rng):
            return roc(release(data, ledger, rng), None)
    """,
    "cli.py": "def main():\n    import fedeval as fe\n    return fe.evaluate\n",
    "flower/__init__.py": "",
    "flower/simulate.py": "from fedeval.evaluation import evaluate\n",
}


def write_tree(root: Path, files: dict[str, str]) -> Path:
    src = root / "fedeval"
    for rel, code in files.items():
        path = src / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(code).lstrip("\n"))
    return src


def run(tmp_path: Path, planted: dict[str, str], **known: object) -> object:
    src = write_tree(tmp_path, {**MINI, **planted})
    options = {"known_cycles": {}, "known_layer_exceptions": {}, **known}
    return checker.check(src, **options)


def found(report: object) -> set[tuple[str, str]]:
    return {(v.rel, v.rule) for v in report.violations}  # type: ignore[attr-defined]


def test_source_tree_has_no_violation() -> None:
    report = checker.check()
    assert [str(v) for v in report.violations] == []


def test_the_only_runtime_cycles_are_the_known_ones() -> None:
    report = checker.check()
    assert report.cycles == []
    members = {frozenset(e.source for e in ring) for ring in report.known_cycles}
    assert members <= set(checker.KNOWN_CYCLES)
    # The prefix-tree sketch no longer reaches up into ecdf/ or postprocess/.
    ups = {
        (e.source, e.target)
        for e in report.edges
        if e.source.startswith("fedeval.sketches.")
        and e.target.startswith(("fedeval.ecdf", "fedeval.postprocess.smoothing"))
    }
    assert ups == set()


def test_mini_tree_is_clean() -> None:
    """The synthetic package itself breaks no rule, so each test below sees one planted."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        report = run(Path(tmp), {})
    assert found(report) == set()


X = "metrics/x.py"
HELPER = {"sketches/helper.py": "import fedeval.privacy.mechanisms.laplace\n"}
B_IMPORTS_A = {"metrics/b.py": "def g():\n    from fedeval.metrics.a import f\n"}

#: (what, planted files, expected (file, rule) violations): one of each kind.
PLANTED: list[tuple[str, dict[str, str], set[tuple[str, str]]]] = [
    ("draw on a generator",
     {X: "def f(rng):\n    return rng.normal(0, 1, 3)\n"}, {(X, "draw")}),
    ("draw from numpy's global state",
     {X: "import numpy as np\ndef f():\n    return np.random.normal(size=3)\n"}, {(X, "draw")}),
    ("draw of raw bits",
     {X: "def f(rng):\n    return rng.bit_generator.random_raw()\n"}, {(X, "draw")}),
    ("draw by a bare numpy.random name",
     {X: "from numpy.random import normal\ndef f():\n    return normal()\n"}, {(X, "draw")}),
    ("sampler through a plain module import",
     {X: "import fedeval.privacy.mechanisms.laplace as L\n"
         "def f(rng):\n    return L.sample_discrete_laplace(1.0, rng)\n"}, {(X, "noise")}),
    ("sampler through the full dotted path",
     {X: "import fedeval.privacy.mechanisms.laplace\ndef f(rng):\n"
         "    return fedeval.privacy.mechanisms.laplace.sample_discrete_laplace(1, rng)\n"},
     {(X, "noise")}),
    ("sampler through a re-export",
     {X: "from fedeval.privacy import sample_discrete_laplace as draw\n"
         "def f(rng):\n    return draw(1.0, rng)\n"}, {(X, "noise")}),
    ("sampler method on a mechanism",
     {X: "from fedeval.privacy import DiscreteLaplace\n"
         "def f(rng):\n    return DiscreteLaplace(1.0).sample(3, rng)\n"}, {(X, "noise")}),
    ("noise total on a value",
     {X: "def f(noise, rng):\n    return noise.total(3, rng, 5)\n"}, {(X, "noise")}),
    ("sampler passed on by reference",
     {X: "import fedeval.privacy.mechanisms.laplace as L\n"
         "def f(run):\n    return run(L.sample_discrete_laplace)\n"}, {(X, "noise")}),
    ("sampler imported below its use",
     {X: "def f(rng):\n    return L.sample_discrete_laplace(1, rng)\n"
         "import fedeval.privacy.mechanisms.laplace as L\n"}, {(X, "noise")}),
    ("sampler after a comprehension reusing its alias",
     {X: "import fedeval.privacy.mechanisms.laplace as L\ndef f(xs, rng):\n"
         "    ys = [L for L in xs]\n    return L.sample_discrete_laplace(1, rng), ys\n"},
     {(X, "noise")}),
    ("ledger method called",
     {X: "def f(ledger, e):\n    ledger.charge(e)\n"}, {(X, "ledger")}),
    ("bare charge(...) bound to a ledger method",
     {X: "def f(ledger, e):\n    charge = ledger.charge_all\n    charge([e])\n"},
     {(X, "ledger")}),
    ("ledger method off the class",
     {X: "from fedeval.privacy.ledger import BudgetLedger\n"
         "def f(ledger, e):\n    BudgetLedger.charge(ledger, e)\n"}, {(X, "ledger")}),
    ("ledger method by getattr",
     {X: "def f(ledger, e):\n    getattr(ledger, 'charge')(e)\n"}, {(X, "ledger")}),
    ("LedgerEntry built through a re-export",
     {X: "from fedeval.privacy import LedgerEntry\ndef f():\n    return LedgerEntry()\n"},
     {(X, "ledger")}),
    ("isinstance on a privacy model",
     {X: "from fedeval.privacy import LocalDP\ndef f(m):\n    return isinstance(m, LocalDP)\n"},
     {(X, "model")}),
    ("case on a privacy model",
     {X: "import fedeval.privacy.models as M\n"
         "def f(m):\n    match m:\n        case M.LocalDP():\n            return 1\n"},
     {(X, "model")}),
    ("decoding in flower/",
     {"flower/x.py": "import numpy as np\ndef f(x):\n    return np.bincount(x)\n"},
     {("flower/x.py", "flower")}),
    ("sketch importing a noise module",
     {"sketches/x.py": "from fedeval.privacy.noise import CentralNoise\n"},
     {("sketches/x.py", "sketch")}),
    ("sketch importing the ledger",
     {"sketches/x.py": "from fedeval.privacy.ledger import LedgerEntry\n"},
     {("sketches/x.py", "sketch")}),
    ("sketch reaching a sampler through another module",
     {"sketches/x.py": "import fedeval.sketches.helper\n", **HELPER},
     {("sketches/x.py", "sketch"), ("sketches/helper.py", "sketch")}),
    ("private name imported",
     {X: "from fedeval.sketches.tree import _hidden\n"}, {(X, "private")}),
    ("private name read off a module",
     {X: "import fedeval.sketches.tree as T\ndef f():\n    return T._hidden()\n"},
     {(X, "private")}),
    ("star import", {X: "from fedeval.sketches import *\n"}, {(X, "star")}),
    ("lower layer importing a higher one",
     {X: "from fedeval.evaluation import evaluate\n"}, {(X, "layer")}),
    ("higher layer reached through a package re-export",
     {"data/x.py": "from fedeval.aggregation import release\n"}, {("data/x.py", "layer")}),
    ("higher layer reached through the lazy root",
     {X: "def f(x):\n    import fedeval as fe\n    return fe.evaluate(x)\n"}, {(X, "layer")}),
    ("higher layer imported inside a function",
     {"sketches/x.py": "def f():\n    from fedeval.metrics.roc import roc\n    return roc\n"},
     {("sketches/x.py", "layer")}),
    ("higher layer imported relatively",
     {"sketches/x.py": "from ..metrics import roc\n"}, {("sketches/x.py", "layer")}),
    ("two-module cycle",
     {"metrics/a.py": "import fedeval.metrics.b\n", **B_IMPORTS_A}, {("metrics/a.py", "cycle")}),
    ("module in no layer", {"newthing.py": "X = 1\n"}, {("newthing.py", "placed")}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("planted", "expected"), [pytest.param(p, e, id=what) for what, p, e in PLANTED]
)
def test_checker_sees_each_kind_of_violation(
    tmp_path: Path, planted: dict[str, str], expected: set[tuple[str, str]]
) -> None:
    report = run(tmp_path, planted)
    assert found(report) == expected, [str(v) for v in report.violations]


def test_a_violation_names_file_and_line(tmp_path: Path) -> None:
    code = "import numpy as np\n\n\ndef f(ledger, e):\n    ledger.charge(e)\n"
    report = run(tmp_path, {"metrics/x.py": code})
    assert [str(v) for v in report.violations] == [
        "metrics/x.py:5: ledger: calls .charge outside aggregation/ "
        "(spend through fedeval.aggregation's release/reserve/charge)"
    ]


def test_a_cycle_is_reported_module_by_module(tmp_path: Path) -> None:
    report = run(tmp_path, {"metrics/a.py": "import fedeval.metrics.b\n", **B_IMPORTS_A})
    (ring,) = report.cycles  # type: ignore[attr-defined]
    assert [(e.source, e.target, e.line) for e in ring] == [
        ("fedeval.metrics.a", "fedeval.metrics.b", 1),
        ("fedeval.metrics.b", "fedeval.metrics.a", 2),
    ]
    assert checker.describe(ring) == (
        "fedeval.metrics.a -> fedeval.metrics.b (metrics/a:1) -> fedeval.metrics.a (metrics/b:2)"
    )


def test_a_longer_cycle_is_walked_in_import_order(tmp_path: Path) -> None:
    ring3 = {
        "metrics/a.py": "import fedeval.metrics.c\n",
        "metrics/b.py": "import fedeval.metrics.a\n",
        "metrics/c.py": "X = 1\n\nimport fedeval.metrics.b\n",
    }
    report = run(tmp_path, ring3)
    (ring,) = report.cycles  # type: ignore[attr-defined]
    assert [(e.source, e.target, e.line) for e in ring] == [
        ("fedeval.metrics.a", "fedeval.metrics.c", 1),
        ("fedeval.metrics.c", "fedeval.metrics.b", 3),
        ("fedeval.metrics.b", "fedeval.metrics.a", 1),
    ]


def test_a_type_only_cycle_is_reported_but_allowed(tmp_path: Path) -> None:
    b = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from fedeval.metrics.a import f\n"
    report = run(tmp_path, {"metrics/a.py": "import fedeval.metrics.b\n", "metrics/b.py": b})
    assert found(report) == set()
    (ring,) = report.type_only_cycles  # type: ignore[attr-defined]
    assert [e.type_only for e in ring] == [False, True]


def test_known_cycles_are_allowed_until_they_grow_or_go(tmp_path: Path) -> None:
    loop = {
        "cli.py": "from fedeval.flower.simulate import run\n",
        "flower/simulate.py": "import fedeval.cli\nrun = 1\n",
    }
    known = {frozenset({"fedeval.cli", "fedeval.flower.simulate"}): "cli <-> flower/simulate"}
    allowed = run(tmp_path / "a", loop, known_cycles=known)
    assert found(allowed) == set()
    assert len(allowed.known_cycles) == 1  # type: ignore[attr-defined]
    assert found(run(tmp_path / "b", loop)) == {("cli.py", "cycle")}
    grown = {**loop, "flower/simulate.py": "import fedeval.cli\nimport fedeval.flower.x\nrun = 1\n",
             "flower/x.py": "import fedeval.cli\n"}  # fmt: skip
    assert ("cli.py", "cycle") in found(run(tmp_path / "c", grown, known_cycles=known))
    stale = run(tmp_path / "d", {}, known_cycles=known)
    assert found(stale) == {("tools/check_architecture.py", "cycle")}


def test_known_layer_exceptions_must_shrink(tmp_path: Path) -> None:
    code = "from fedeval.evaluation import evaluate\n"
    known = {("fedeval.metrics.x", "fedeval.evaluation"): "documented"}
    assert found(run(tmp_path / "a", {"metrics/x.py": code}, known_layer_exceptions=known)) == set()
    stale = run(tmp_path / "b", {}, known_layer_exceptions=known)
    assert found(stale) == {("tools/check_architecture.py", "layer")}


def test_allowed_places_are_not_flagged(tmp_path: Path) -> None:
    allowed = {
        "privacy/x.py": "def f(rng):\n    return rng.normal(0, 1, 3)\n",
        "aggregation/x.py": (
            "from fedeval.privacy import DiscreteLaplace, LedgerEntry\n"
            "def f(ledger, rng):\n    ledger.charge_all([LedgerEntry()])\n"
            "    return DiscreteLaplace(1.0).sample(3, rng)\n"
        ),
        "data/partition.py": "def f(rng):\n    return rng.permutation(5)\n",
        "postprocess/bootstrap.py": "def f(rng):\n    return rng.standard_normal(5)\n",
        "privacy/y.py": (
            "from fedeval.privacy.models import LocalDP\n"
            "def f(m):\n    return isinstance(m, LocalDP)\n"
        ),
        # spending through fedeval.aggregation is the sanctioned way, from any layer
        "metrics/x.py": (
            "from fedeval.aggregation import charge\nimport fedeval.aggregation as agg\n"
            "def f(ledger, e):\n    charge(ledger, e)\n    agg.charge(ledger, e)\n"
        ),
        # type-only imports of a higher layer; data attributes named like noise methods
        "sketches/y.py": (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from fedeval.aggregation.release import release\n"
            "def f(ecdf, noise: 'release'):\n    return ecdf.total, noise.share\n"
        ),
        # math and scipy functions named like draws are not draws; own private names are fine
        "metrics/z.py": (
            "import math\nfrom scipy import special\nfrom fedeval.sketches.tree import path_sums\n"
            "def _own():\n    return 1\n"
            "def f(x):\n    return math.gamma(x) + special.beta(x, x) + _own()\n"
        ),
        # a parameter shadows an imported sampler of the same spelling
        "metrics/w.py": (
            "from fedeval.privacy import sample_discrete_laplace\n"
            "def f(sample_discrete_laplace):\n    return sample_discrete_laplace(1.0)\n"
        ),
    }
    report = run(tmp_path, allowed)
    assert [str(v) for v in report.violations] == []  # type: ignore[attr-defined]


def test_script_prints_violations_and_exits_1(tmp_path: Path) -> None:
    src = write_tree(tmp_path, {**MINI, "metrics/x.py": "def f(rng):\n    return rng.normal()\n"})
    out = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "check_architecture.py"), str(src)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 1
    assert "metrics/x.py:2: draw: random draw .normal() outside privacy/" in out.stdout
    assert "import cycles (runtime imports)" in out.stdout
