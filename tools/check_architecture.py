"""Check the one-way data flow of DESIGN.md on the source tree (static, by AST).

The checker reads every module of ``src/fedeval``, builds **the full import
graph** (every ``import`` and ``from ... import``, absolute or relative,
module-level or inside functions; names imported from a package are followed
through the package ``__init__``'s re-exports to the module that defines them)
and resolves **the call sites** of the noise samplers and of the budget ledger
(through aliases, re-exports and ``import a.b.c as x; x.f(...)``).

Imports inside ``if TYPE_CHECKING:`` are type-only: DESIGN.md sets them aside,
so they are no edge of the runtime graph (they are still used to resolve what a
package re-exports: the root ``fedeval/__init__.py`` loads its names lazily,
PEP 562, and declares them to static analysis in its ``TYPE_CHECKING`` block).
Importing ``a.b.c`` also runs ``a/__init__`` and ``a/b/__init__``; those are not
counted as edges, or every module that imports ``fedeval.privacy.guarantee``
would depend on all of ``fedeval.privacy``.

Layers
------
Derived from DESIGN.md's layout and data flow (``data → sketches → aggregation +
privacy → decode → report``), then checked against the real graph. From the
bottom; a module may import its own layer and the layers below it:

 0. foundation            ``validation``, ``exceptions``, ``randomness`` (import nothing of fedeval)
 1. data                  ``data/``
 2. sketches, privacy     ``sketches/``, ``privacy/`` (sketches use privacy's vocabulary:
                          units, sensitivities, receipts; privacy uses no sketch at runtime)
 3. aggregation           ``aggregation/``
 4. public inputs         ``public_facts``, ``planning``
 5. postprocess           ``postprocess/``
 6. ecdf                  ``ecdf/``
 7. metrics               ``metrics/``
 8. calibration, vertical ``calibration/``, ``vertical/``
 9. programs              ``evaluation``, ``multiclass_evaluation``, ``context``
10. report                ``report/``
11. entry points          ``cli``, ``flower/``, the package root ``fedeval``

Where this differs from the order in DESIGN.md's layout, and why:

* ``public_facts`` and ``planning`` sit right above ``aggregation``, below
  everything that releases. ``public_facts`` is itself a release (a noisy count
  through ``aggregation``) and every releasing layer consults it
  (``ecdf.federated`` asks whether the client count is public); ``planning``
  maps public inputs to parameters and is used by calibrators
  (``calibration.binning`` plans its bins from a public size) as well as by
  ``evaluate``. Neither imports anything above ``aggregation``.
* ``ecdf`` sits below ``metrics``: it is the Barczewski et al. release family
  (a prefix-tree release and its decoded ECDF), and the DP Hosmer–Lemeshow
  statistic in ``metrics.hosmer_lemeshow`` is built on it (§5.2); ``ecdf``
  uses nothing from ``metrics``, ``calibration`` or ``vertical``.
* ``fedeval/__init__.py`` loads every public name lazily; it imports nothing
  at runtime, and a module that uses ``fe.evaluate`` depends on the module that
  defines ``evaluate``.

Rules
-----
``layer``     Imports run one way: no runtime import of a higher layer, except the
              documented :data:`KNOWN_LAYER_EXCEPTIONS` (each must disappear).
``cycle``     No import cycle among runtime imports, except the documented
              :data:`KNOWN_CYCLES` (the list must shrink to empty). Every cycle is
              printed module by module, type-only ones (allowed) separately.
``draw``      No random draw on a generator (``x.normal(...)``, ``np.random.*``,
              ``random.*``) outside ``privacy/`` and ``aggregation/``.
``noise``     No call of (or reference to) a noise function outside ``privacy/`` and
              ``aggregation/``: every function and method of ``privacy/mechanisms/*``
              and ``privacy/noise.py`` that takes a random generator (``sample_*``,
              ``.sample``, ``.share``, ``.total``, ``.server``, ``.perturb``, ...),
              whether reached by name, by alias, through a re-export or on a value.
              ``privacy/sampling.py`` draws which clients take part, not noise, and is
              not in this set (``draw`` still covers any draw made outside).
              ``draw`` and ``noise`` except data generation (``data/partition.py``,
              ``data/demo.py``) and the parametric bootstrap (``postprocess/bootstrap.py``).
``ledger``    No ledger method (``.charge``, ``.charge_all``) called or referenced and
              no :class:`LedgerEntry` built outside ``privacy/`` and ``aggregation/``:
              budgets are spent through ``fedeval.aggregation``'s ``release``,
              ``reserve`` and ``charge``, which are allowed everywhere.
``model``     No ``isinstance``/``issubclass``/``type(x) is``/``case`` on a privacy model
              outside ``privacy/`` (the dispatch is ``privacy/mechanism_for.py``).
``flower``    No encode or decode code in ``flower/`` beyond calls to the sketches and
              the pipeline.
``sketch``    ``sketches/`` imports, at runtime, nothing that draws noise or charges a
              budget: no path of runtime imports from a sketch reaches
              ``privacy/mechanisms``, ``privacy/noise``, ``privacy/sampling``,
              ``privacy/mechanism_for`` or ``aggregation/``, and no sketch imports
              ``privacy/ledger`` itself. (A decoded estimate carries a receipt, whose
              entries are ledger records: ``privacy.receipt`` imports ``LedgerEntry``,
              so the ledger module is reached indirectly; charging it is ``ledger``'s
              business.)
``private``   No private name (``_x``) imported from, or read off, another module.
``star``      No ``from fedeval... import *`` (it hides what is imported).
``placed``    Every module belongs to a layer.

Run ``python tools/check_architecture.py [SRC]``: it prints every violation with
its file and line, then the import cycles, and exits 1 if there is a violation.
``tests/test_architecture.py`` runs it and plants one violation of each kind.
"""

from __future__ import annotations

import ast
import itertools
import sys
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "fedeval"
PACKAGE = "fedeval"

#: The layers, bottom first: (name, module prefixes). ``fedeval`` matches the root only.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("foundation", ("fedeval.validation", "fedeval.exceptions", "fedeval.randomness")),
    ("data", ("fedeval.data",)),
    ("sketches, privacy", ("fedeval.sketches", "fedeval.privacy")),
    ("aggregation", ("fedeval.aggregation",)),
    ("public inputs", ("fedeval.public_facts", "fedeval.planning")),
    ("postprocess", ("fedeval.postprocess",)),
    ("ecdf", ("fedeval.ecdf",)),
    ("metrics", ("fedeval.metrics",)),
    ("calibration, vertical", ("fedeval.calibration", "fedeval.vertical")),
    ("evaluations", ("fedeval.evaluation", "fedeval.multiclass_evaluation", "fedeval.small_data")),
    (
        "programs",
        (
            "fedeval.comparison",
            "fedeval.slicing",
            "fedeval.entry_points",
            "fedeval.monitoring",
            "fedeval.context",
        ),
    ),
    ("report", ("fedeval.report",)),
    (
        "entry points",
        ("fedeval.cli", "fedeval.cli_common", "fedeval.cli_monitor", "fedeval.flower", "fedeval"),
    ),
)

#: Import cycles that exist today and are being removed by other work. Each entry is
#: the set of modules of one strongly connected component of the runtime graph. The
#: list must shrink to empty: a cycle that grows, or an entry that no longer exists,
#: is a violation.
KNOWN_CYCLES: Mapping[frozenset[str], str] = {}

#: Runtime imports of a higher layer that exist today, with the reason and the fix.
#: Like KNOWN_CYCLES, the list must shrink: an entry that no longer occurs is a violation.
KNOWN_LAYER_EXCEPTIONS: Mapping[tuple[str, str], str] = {
    # The decoded hierarchy answers every query with its exact variance on the
    # consistent tree, through the consistency map's transpose. DESIGN.md wants the
    # layer above to call postprocess/; that moves `.consistent()` and the consistent
    # query variances out of the sketch, which changes evaluation.py, metrics/dense.py
    # and calibration/*, all being changed by other work now.
    ("fedeval.sketches.hierarchical_histogram", "fedeval.postprocess.consistency"): (
        "the decoded hierarchy computes consistency itself"
    ),
}

#: Methods of numpy.random.Generator (and of the stdlib random module) that draw.
DRAWS = frozenset(
    {
        "random", "integers", "normal", "standard_normal", "laplace", "geometric",
        "negative_binomial", "poisson", "binomial", "multinomial", "permutation",
        "permuted", "shuffle", "choice", "uniform", "gamma", "standard_gamma",
        "exponential", "standard_exponential", "dirichlet", "beta", "hypergeometric",
        "logistic", "lognormal", "bytes", "chisquare", "f", "gumbel", "logseries",
        "multivariate_hypergeometric", "multivariate_normal", "noncentral_chisquare",
        "noncentral_f", "pareto", "power", "rayleigh", "standard_cauchy", "standard_t",
        "triangular", "vonmises", "wald", "weibull", "zipf", "random_raw",
        # stdlib random
        "randint", "randrange", "gauss", "normalvariate", "choices", "sample", "getrandbits",
        "randbytes", "expovariate", "betavariate", "gammavariate", "lognormvariate",
        "paretovariate", "vonmisesvariate", "weibullvariate", "binomialvariate",
    }
)  # fmt: skip
#: Modules whose module-level functions draw from a global state.
GLOBAL_RANDOM = ("numpy.random", "random")
#: Where random draws and noise-function calls are allowed.
DRAW_ALLOWED = (
    "privacy/",
    "aggregation/",
    "data/partition.py",
    "data/demo.py",
    "postprocess/bootstrap.py",
)
#: Modules whose generator-taking functions and methods are noise functions.
NOISE_MODULES = ("fedeval.privacy.mechanisms", "fedeval.privacy.noise")
#: A parameter with one of these names, or annotated with one of these types, takes randomness.
RNG_PARAMS = frozenset({"rng", "gen", "generator"})
RNG_TYPES = ("Generator", "RNGLike")
#: Method names too common to flag when merely referenced (``x.total`` is often data);
#: calls of them are flagged.
GENERIC_METHODS = frozenset({"sample", "share", "server", "total", "perturb"})

LEDGER_MODULE = "fedeval.privacy.ledger"
LEDGER_METHODS = frozenset({"charge", "charge_all"})
LEDGER_ENTRY = "LedgerEntry"
LEDGER_ALLOWED = ("privacy/", "aggregation/")
#: Where spending is sanctioned: a name resolved into this package may be called anywhere.
SPENDING_API = "fedeval.aggregation"

MODELS_MODULE = "fedeval.privacy.models"
FLOWER_FORBIDDEN = frozenset(
    {"bincount", "count_bins", "levels_from_leaves", "encode_levels", "unflatten", "estimate",
     "perturb", "sample_share", "sample_sum", "sample_aggregate", "count_variance",
     "PolyaShares", "SkellamShares", "OptimalUnaryEncoding", "RandomizedResponse"}
)  # fmt: skip

#: What a sketch may not reach by any path of runtime imports, and may not import at all.
SKETCH_UNREACHABLE = (
    "fedeval.privacy.mechanisms",
    "fedeval.privacy.noise",
    "fedeval.privacy.sampling",
    "fedeval.privacy.mechanism_for",
    "fedeval.aggregation",
)
SKETCH_NO_DIRECT = ("fedeval.privacy.ledger",)


# ---------------------------------------------------------------------------------------
# The modules and their bindings


@dataclass(frozen=True)
class Ref:
    """A resolved name: ``attr`` inside ``module`` (``attr == ""``: the module itself)."""

    module: str
    attr: str = ""

    @property
    def dotted(self) -> str:
        return f"{self.module}.{self.attr}" if self.attr else self.module

    @property
    def last(self) -> str:
        return (self.attr or self.module).rsplit(".", 1)[-1]

    def child(self, name: str) -> Ref:
        return Ref(self.module, f"{self.attr}.{name}" if self.attr else name)


@dataclass(frozen=True)
class Edge:
    """One import of ``target`` by ``source`` at ``line`` of ``source``."""

    source: str
    target: str
    line: int
    type_only: bool


@dataclass(frozen=True)
class Violation:
    """One broken rule at a file and line."""

    rel: str
    line: int
    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.rel}:{self.line}: {self.rule}: {self.message}"


@dataclass
class Module:
    """One parsed source module."""

    name: str
    rel: str
    is_package: bool
    tree: ast.Module
    #: Names bound at module level by an import (what the module re-exports).
    exports: dict[str, tuple[Ref, bool]] = field(default_factory=dict)
    #: Names defined at module level by def, class or assignment.
    defines: set[str] = field(default_factory=set)
    #: ids of the AST nodes inside ``if TYPE_CHECKING:`` bodies.
    type_only: set[int] = field(default_factory=set)

    @property
    def package(self) -> str:
        return self.name if self.is_package else self.name.rpartition(".")[0]


def module_name(path: Path, src: Path) -> str:
    """Dotted name of the module at ``path`` in the package rooted at ``src``."""
    parts = [src.name, *path.relative_to(src).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _type_only_nodes(tree: ast.Module) -> set[int]:
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for stmt in node.body:
                out.update(id(n) for n in ast.walk(stmt))
    return out


def _module_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements executed at module level (descending into if/try/with, not into defs)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If | ast.With | ast.AsyncWith):
            yield from _module_level(stmt.body)
            yield from _module_level(getattr(stmt, "orelse", []))
        elif isinstance(stmt, ast.Try):
            yield from _module_level(stmt.body)
            for handler in stmt.handlers:
                yield from _module_level(handler.body)
            yield from _module_level(stmt.orelse)
            yield from _module_level(stmt.finalbody)


def absolute_module(node: ast.ImportFrom, module: Module) -> str:
    """The absolute name of the module a ``from ... import`` reads from."""
    if not node.level:
        return node.module or ""
    base = module.package.split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def import_bindings(node: ast.Import | ast.ImportFrom, module: Module) -> list[tuple[str, Ref]]:
    """(local name, what it refers to) for every name an import statement binds."""
    out: list[tuple[str, Ref]] = []
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                out.append((alias.asname, Ref(alias.name)))
            else:
                top = alias.name.split(".")[0]
                out.append((top, Ref(top)))
        return out
    base = absolute_module(node, module)
    for alias in node.names:
        if alias.name != "*":
            out.append((alias.asname or alias.name, Ref(base, alias.name)))
    return out


class Project:
    """Every module of the package under ``src``, with the resolution of names."""

    def __init__(self, src: Path) -> None:
        self.src = src
        self.modules: dict[str, Module] = {}
        for path in sorted(src.rglob("*.py")):
            tree = ast.parse(path.read_text(), filename=str(path))
            mod = Module(
                module_name(path, src),
                path.relative_to(src).as_posix(),
                path.name == "__init__.py",
                tree,
            )
            mod.type_only = _type_only_nodes(tree)
            for stmt in _module_level(tree.body):
                if isinstance(stmt, ast.Import | ast.ImportFrom):
                    for local, ref in import_bindings(stmt, mod):
                        mod.exports[local] = (ref, id(stmt) in mod.type_only)
                elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    mod.defines.add(stmt.name)
                elif isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
                    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                    for t in targets:
                        mod.defines.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
            self.modules[mod.name] = mod
        self.samplers, self.noise_methods = self._noise_functions()

    def resolve(self, ref: Ref) -> Ref:
        """Follow submodules and re-exports to where ``ref`` is defined."""
        module, parts = ref.module, [p for p in ref.attr.split(".") if p]
        for _ in range(100):  # re-export chains are short; a loop means a broken import
            if not parts:
                return Ref(module)
            head = parts[0]
            if f"{module}.{head}" in self.modules:
                module, parts = f"{module}.{head}", parts[1:]
                continue
            mod = self.modules.get(module)
            if mod is None or head in mod.defines or head not in mod.exports:
                if mod is None and module != PACKAGE and not module.startswith(PACKAGE + "."):
                    # External: keep the dotted path whole (numpy.random.normal).
                    return Ref(".".join([module, *parts]))
                return Ref(module, ".".join(parts))
            target = mod.exports[head][0]
            inner = [p for p in target.attr.split(".") if p]
            module, parts = target.module, inner + parts[1:]
        return Ref(module, ".".join(parts))

    def layer(self, name: str) -> int | None:
        """Index in :data:`LAYERS` of the module ``name`` (None: in no layer)."""
        best: tuple[int, int] | None = None
        for index, (_, prefixes) in enumerate(LAYERS):
            for p in prefixes:
                hit = name == p or (p != PACKAGE and name.startswith(p + "."))
                if hit and (best is None or len(p) > best[1]):
                    best = (index, len(p))
        return None if best is None else best[0]

    def _noise_functions(self) -> tuple[set[Ref], set[str]]:
        """Functions and methods of the noise modules that take a random generator."""
        samplers: set[Ref] = set()
        methods: set[str] = set()
        for mod in self.modules.values():
            if not under(mod.name, NOISE_MODULES):
                continue
            for stmt in mod.tree.body:
                if isinstance(stmt, ast.FunctionDef) and _takes_rng(stmt):
                    samplers.add(Ref(mod.name, stmt.name))
                elif isinstance(stmt, ast.ClassDef):
                    for item in stmt.body:
                        if isinstance(item, ast.FunctionDef) and _takes_rng(item):
                            samplers.add(Ref(mod.name, f"{stmt.name}.{item.name}"))
                            methods.add(item.name)
        return samplers, methods

    def model_classes(self) -> set[Ref]:
        mod = self.modules.get(MODELS_MODULE)
        if mod is None:
            return set()
        return {Ref(mod.name, s.name) for s in mod.tree.body if isinstance(s, ast.ClassDef)}


def _takes_rng(fn: ast.FunctionDef) -> bool:
    args = [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]
    for a in args:
        if a.arg in RNG_PARAMS:
            return True
        if a.annotation is not None and any(t in ast.unparse(a.annotation) for t in RNG_TYPES):
            return True
    return False


# ---------------------------------------------------------------------------------------
# One module's imports and call sites


class ModuleScan(ast.NodeVisitor):
    """Walks one module: its import edges and the rules on its names and call sites."""

    def __init__(self, project: Project, module: Module) -> None:
        self.project = project
        self.module = module
        self.rel = module.rel
        self.edges: list[Edge] = []
        self.violations: list[Violation] = []
        #: name -> (what it refers to, bound by a type-only import); None: a local value.
        #: The module scope starts with every module-level import, so a function defined
        #: above an import still sees it.
        self.scopes: list[dict[str, tuple[Ref | None, bool]]] = [dict(module.exports)]
        self.models = project.model_classes()
        self.draws_allowed = self.rel.startswith(DRAW_ALLOWED)
        self.ledger_allowed = self.rel.startswith(LEDGER_ALLOWED)
        self.models_allowed = self.rel.startswith("privacy/")

    # -- helpers
    def bad(self, node: ast.AST, rule: str, message: str) -> None:
        self.violations.append(Violation(self.rel, getattr(node, "lineno", 0), rule, message))

    def edge(self, target: str, node: ast.AST, *, type_only: bool = False) -> None:
        if target.split(".")[0] == PACKAGE and target != self.module.name:
            line = getattr(node, "lineno", 0)
            type_only = type_only or id(node) in self.module.type_only
            self.edges.append(Edge(self.module.name, target, line, type_only))

    def bind(self, name: str, ref: Ref | None, *, type_only: bool = False) -> None:
        self.scopes[-1][name] = (ref, type_only)

    def lookup(self, name: str) -> tuple[Ref | None, bool]:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None, False

    def resolve_expr(self, expr: ast.expr) -> Ref | None:
        """What an expression names, if it is a chain of names rooted at an import."""
        if isinstance(expr, ast.Name):
            ref = self.lookup(expr.id)[0]
            return None if ref is None else self.project.resolve(ref)
        if isinstance(expr, ast.Attribute):
            base = self.resolve_expr(expr.value)
            return None if base is None else self.project.resolve(base.child(expr.attr))
        return None

    @staticmethod
    def is_fedeval_module(ref: Ref | None) -> bool:
        return ref is not None and ref.attr == "" and ref.module.split(".")[0] == PACKAGE

    # -- scopes
    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._function(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._function(node)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        # Annotations are not visited: with `from __future__ import annotations` they
        # are never evaluated, so they are no runtime use.
        for deco in node.decorator_list:
            self.visit(deco)
        for default in [*node.args.defaults, *node.args.kw_defaults]:
            if default is not None:
                self.visit(default)
        self.bind(node.name, None)
        self.scopes.append({})
        args = node.args
        for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
            if a is not None:
                self.bind(a.arg, None)  # a parameter shadows an imported name
        for stmt in node.body:
            self.visit(stmt)
        self.scopes.pop()

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.scopes.append({})
        for a in node.args.args:
            self.bind(a.arg, None)
        self.visit(node.body)
        self.scopes.pop()

    def _comprehension(
        self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp
    ) -> None:
        self.scopes.append({})  # comprehension variables do not leak (Python 3)
        for gen in node.generators:
            self.visit(gen.iter)
            self.visit(gen.target)
            for cond in gen.ifs:
                self.visit(cond)
        if isinstance(node, ast.DictComp):
            self.visit(node.key)
            self.visit(node.value)
        else:
            self.visit(node.elt)
        self.scopes.pop()

    def visit_ListComp(self, node: ast.ListComp) -> None:
        self._comprehension(node)

    def visit_SetComp(self, node: ast.SetComp) -> None:
        self._comprehension(node)

    def visit_GeneratorExp(self, node: ast.GeneratorExp) -> None:
        self._comprehension(node)

    def visit_DictComp(self, node: ast.DictComp) -> None:
        self._comprehension(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
        self.visit(node.target)

    def visit_arg(self, node: ast.arg) -> None:
        return  # annotations only

    # -- imports
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.edge(alias.name, node)
            parts = alias.name.split(".")
            if parts[0] == PACKAGE and any(_private(p) for p in parts):
                self.bad(node, "private", f"private module {alias.name} imported")
        for local, ref in import_bindings(node, self.module):
            self.bind(local, ref, type_only=id(node) in self.module.type_only)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = absolute_module(node, self.module)
        fedeval = base.split(".")[0] == PACKAGE
        for alias in node.names:
            if alias.name == "*":
                if fedeval:
                    self.bad(node, "star", f"from {base} import * hides what is imported")
                continue
            if not fedeval:
                continue
            if _private(alias.name):
                self.bad(node, "private", f"private name {alias.name} imported from {base}")
            submodule = f"{base}.{alias.name}"
            base_mod = self.project.modules.get(base)
            if submodule in self.project.modules:
                self.edge(submodule, node)
            elif base_mod is not None and base_mod.is_package:
                # Through the package's re-exports, to the module that defines the name.
                self.edge(self.project.resolve(Ref(base, alias.name)).module, node)
            else:
                self.edge(base, node)
        for local, ref in import_bindings(node, self.module):
            self.bind(local, ref, type_only=id(node) in self.module.type_only)

    # -- names, attributes, assignments
    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        value = self.resolve_expr(node.value)
        for target in node.targets:
            self.visit(target)
            if isinstance(target, ast.Name):
                # `x = L.sample_discrete_laplace` makes x an alias of the sampler.
                self.bind(target.id, value)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Store | ast.Del):
            self.bind(node.id, None)
            return
        self._check_reference(node, self.resolve_expr(node), node.id, called=False)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self._attribute(node, called=False)

    def _attribute(self, node: ast.Attribute, *, called: bool) -> None:
        chain: list[ast.Attribute] = []
        inner: ast.expr = node
        while isinstance(inner, ast.Attribute):
            chain.append(inner)
            inner = inner.value
        self.visit(inner)
        root_type_only = isinstance(inner, ast.Name) and self.lookup(inner.id)[1]
        for link in chain:
            base = self.resolve_expr(link.value)
            if self.is_fedeval_module(base) and _private(link.attr):
                assert base is not None
                if base.module != self.module.name:
                    self.bad(link, "private", f"private name {link.attr} read off {base.module}")
        base = self.resolve_expr(node.value)
        ref = None if base is None else self.project.resolve(base.child(node.attr))
        if ref is not None and base is not None and base.module.split(".")[0] == PACKAGE:
            # `fe.evaluate`, `agg.release`: an import of the defining module, at the use.
            self.edge(ref.module, node, type_only=root_type_only)
        if isinstance(node.ctx, ast.Load):
            self._check_reference(node, ref, node.attr, called=called)

    def visit_Call(self, node: ast.Call) -> None:
        func = self.resolve_expr(node.func)
        if (
            func is not None
            and func.dotted == "importlib.import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            self.edge(node.args[0].value, node)
        if isinstance(node.func, ast.Attribute):
            self._attribute(node.func, called=True)
        elif isinstance(node.func, ast.Name):
            self._check_reference(node.func, func, node.func.id, called=True)
        else:
            self.visit(node.func)
        self._check_call(node, func)
        for arg in node.args:
            self.visit(arg)
        for kw in node.keywords:
            self.visit(kw.value)

    def visit_Match(self, node: ast.Match) -> None:
        self.visit(node.subject)
        for case in node.cases:
            for pattern in ast.walk(case.pattern):
                if isinstance(pattern, ast.MatchClass):
                    cls = self.resolve_expr(pattern.cls)
                    if not self.models_allowed and cls in self.models:
                        assert cls is not None
                        self.bad(pattern, "model", f"case {cls.attr}() outside privacy/")
                elif isinstance(pattern, ast.MatchAs | ast.MatchStar) and pattern.name:
                    self.bind(pattern.name, None)
            if case.guard is not None:
                self.visit(case.guard)
            for stmt in case.body:
                self.visit(stmt)

    def visit_Compare(self, node: ast.Compare) -> None:
        sides = [node.left, *node.comparators]
        if not self.models_allowed and any(
            isinstance(s, ast.Call) and isinstance(s.func, ast.Name) and s.func.id == "type"
            for s in sides
        ):
            for s in sides:
                ref = self.resolve_expr(s)
                if ref in self.models:
                    assert ref is not None
                    self.bad(node, "model", f"type(...) compared with {ref.attr} outside privacy/")
        self.generic_visit(node)

    # -- the rules on names and calls
    def _check_reference(self, node: ast.expr, ref: Ref | None, name: str, *, called: bool) -> None:
        """A name or attribute that is read (``called``: in call position)."""
        what = "calls" if called else "refers to"
        if not self.draws_allowed:
            if ref is not None and ref in self.project.samplers:
                if called or ref.last not in GENERIC_METHODS:
                    self.bad(node, "noise", f"{what} noise function {ref.dotted} outside privacy/")
            elif (
                ref is None
                and isinstance(node, ast.Attribute)
                and name in self.project.noise_methods
                and (called or name not in GENERIC_METHODS)
            ):
                self.bad(node, "noise", f"{what} noise method .{name} outside privacy/")
        if not self.ledger_allowed:
            if ref is not None and under(ref.module, (SPENDING_API,)):
                return  # fedeval.aggregation's release/reserve/charge: the sanctioned way
            if ref is not None and ref.module == LEDGER_MODULE and ref.last in LEDGER_METHODS:
                self.bad(node, "ledger", f"{what} ledger method {ref.attr} outside aggregation/")
            elif ref is not None and ref == Ref(LEDGER_MODULE, LEDGER_ENTRY) and called:
                self.bad(node, "ledger", "LedgerEntry built outside privacy/ and aggregation/")
            elif isinstance(node, ast.Attribute) and name in LEDGER_METHODS:
                self.bad(
                    node,
                    "ledger",
                    f"{what} .{name} outside aggregation/ "
                    "(spend through fedeval.aggregation's release/reserve/charge)",
                )

    def _check_call(self, node: ast.Call, func: Ref | None) -> None:
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
        if not self.draws_allowed:
            if isinstance(f, ast.Attribute) and f.attr in DRAWS:
                receiver = self.resolve_expr(f.value)
                global_state = receiver is not None and receiver.dotted in GLOBAL_RANDOM
                # `x.sample(...)` on a value is reported once, by the noise rule.
                is_value = (
                    receiver is None
                    and f.attr not in self.project.noise_methods
                    and not (isinstance(f.value, ast.Name) and f.value.id in ("self", "cls"))
                )
                if global_state or is_value:
                    self.bad(node, "draw", f"random draw .{f.attr}() outside privacy/")
            elif (
                func is not None
                and func.dotted.rpartition(".")[0] in GLOBAL_RANDOM
                and func.last in DRAWS
            ):
                self.bad(node, "draw", f"random draw {func.dotted}() outside privacy/")
        if (
            not self.ledger_allowed
            and name == "getattr"
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value in LEDGER_METHODS | self.project.noise_methods
        ):
            self.bad(node, "ledger", f"getattr(..., {node.args[1].value!r}) outside aggregation/")
        if name in ("isinstance", "issubclass") and len(node.args) == 2 and not self.models_allowed:
            for n in ast.walk(node.args[1]):
                if isinstance(n, ast.Name | ast.Attribute):
                    ref = self.resolve_expr(n)
                    if ref in self.models:
                        assert ref is not None
                        self.bad(node, "model", f"{name} on {ref.attr} outside privacy/")
        if self.rel.startswith("flower/"):
            last = func.last if func is not None else name
            if last in FLOWER_FORBIDDEN or name in FLOWER_FORBIDDEN:
                self.bad(node, "flower", f"encode/decode code ({last}) in flower/")


def under(name: str, prefixes: tuple[str, ...]) -> bool:
    """Whether module ``name`` is one of ``prefixes`` or inside one of them."""
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


# ---------------------------------------------------------------------------------------
# The graph rules


@dataclass
class Report:
    """What the checker found."""

    violations: list[Violation]
    cycles: list[list[Edge]]
    known_cycles: list[list[Edge]]
    type_only_cycles: list[list[Edge]]
    edges: list[Edge]


def strongly_connected(nodes: Iterable[str], succ: Mapping[str, Iterable[str]]) -> list[set[str]]:
    """Tarjan's strongly connected components (iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[set[str]] = []
    counter = 0
    for root in sorted(nodes):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(succ.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(succ.get(w, ())))))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp: set[str] = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                out.append(comp)
    return out


def cycles_in(component: set[str], edges: Mapping[tuple[str, str], Edge]) -> list[list[Edge]]:
    """The shortest cycle through each module of a component, without repeats."""
    succ: dict[str, list[str]] = {}
    for s, t in edges:
        if s in component and t in component:
            succ.setdefault(s, []).append(t)
    seen: set[tuple[str, ...]] = set()
    out: list[list[Edge]] = []
    for start in sorted(component):
        parent: dict[str, str] = {}
        queue = deque([start])
        found = False
        while queue and not found:
            v = queue.popleft()
            for w in sorted(succ.get(v, ())):
                if w == start:
                    parent[start] = v
                    found = True
                    break
                if w not in parent:
                    parent[w] = v
                    queue.append(w)
        if not found:
            continue
        back = [start]  # start, then its predecessors on the cycle, walking back
        v = parent[start]
        while v != start:
            back.append(v)
            v = parent[v]
        nodes = [start, *reversed(back[1:])]
        k = nodes.index(min(nodes))
        key = tuple(nodes[k:] + nodes[:k])
        if key in seen:
            continue
        seen.add(key)
        ring = [*key, key[0]]
        out.append([edges[(a, b)] for a, b in itertools.pairwise(ring)])
    return out


def check(
    src: Path = SRC,
    *,
    known_cycles: Mapping[frozenset[str], str] = KNOWN_CYCLES,
    known_layer_exceptions: Mapping[tuple[str, str], str] = KNOWN_LAYER_EXCEPTIONS,
) -> Report:
    """Run every rule on the package under ``src``."""
    project = Project(src)
    violations: list[Violation] = []
    edges: list[Edge] = []
    for mod in project.modules.values():
        scan = ModuleScan(project, mod)
        scan.visit(mod.tree)
        violations.extend(scan.violations)
        edges.extend(e for e in scan.edges if e.target in project.modules)
        if project.layer(mod.name) is None:
            violations.append(Violation(mod.rel, 1, "placed", f"{mod.name} is in no layer"))

    runtime: dict[tuple[str, str], Edge] = {}
    every: dict[tuple[str, str], Edge] = {}
    for e in sorted(edges, key=lambda e: (e.type_only, e.line)):
        every.setdefault((e.source, e.target), e)
        if not e.type_only:
            runtime.setdefault((e.source, e.target), e)

    # layer
    used_exceptions: set[tuple[str, str]] = set()
    for (s, t), e in sorted(runtime.items()):
        ls, lt = project.layer(s), project.layer(t)
        if ls is None or lt is None or lt <= ls:
            continue
        if (s, t) in known_layer_exceptions:
            used_exceptions.add((s, t))
            continue
        violations.append(
            Violation(
                project.modules[s].rel,
                e.line,
                "layer",
                f"{s} ({LAYERS[ls][0]}) imports {t} ({LAYERS[lt][0]}), a higher layer",
            )
        )
    for s, t in sorted(set(known_layer_exceptions) - used_exceptions):
        violations.append(
            Violation("tools/check_architecture.py", 0, "layer",
                      f"known exception {s} -> {t} no longer occurs: remove it")
        )  # fmt: skip

    # cycle
    succ: dict[str, set[str]] = {}
    for s, t in runtime:
        succ.setdefault(s, set()).add(t)
    cycles: list[list[Edge]] = []
    known: list[list[Edge]] = []
    used_cycles: set[frozenset[str]] = set()
    for comp in strongly_connected(project.modules, succ):
        if len(comp) < 2 and (next(iter(comp)), next(iter(comp))) not in runtime:
            continue
        found = cycles_in(comp, runtime)
        if frozenset(comp) in known_cycles:
            used_cycles.add(frozenset(comp))
            known.extend(found)
            continue
        cycles.extend(found)
        for ring in found:
            first = ring[0]
            violations.append(
                Violation(project.modules[first.source].rel, first.line, "cycle", describe(ring))
            )
    for stale in sorted(set(known_cycles) - used_cycles, key=sorted):
        violations.append(
            Violation("tools/check_architecture.py", 0, "cycle",
                      f"known cycle {known_cycles[stale]} no longer exists: remove it")
        )  # fmt: skip

    # type-only cycles: need a TYPE_CHECKING import to close (DESIGN.md allows them)
    succ_all: dict[str, set[str]] = {}
    for s, t in every:
        succ_all.setdefault(s, set()).add(t)
    type_only: list[list[Edge]] = []
    for comp in strongly_connected(project.modules, succ_all):
        if len(comp) > 1:
            type_only.extend(r for r in cycles_in(comp, every) if any(e.type_only for e in r))

    # sketch
    for mod in project.modules.values():
        if not under(mod.name, (f"{PACKAGE}.sketches",)):
            continue
        for (s, t), e in runtime.items():
            if s == mod.name and under(t, SKETCH_NO_DIRECT):
                violations.append(Violation(mod.rel, e.line, "sketch", f"{s} imports {t}"))
        path = _reach(mod.name, succ, SKETCH_UNREACHABLE)
        if path is not None:
            first = runtime[(path[0], path[1])]
            violations.append(
                Violation(
                    mod.rel,
                    first.line,
                    "sketch",
                    "imports what draws noise or charges a budget: " + " -> ".join(path),
                )
            )

    violations.sort(key=lambda v: (v.rel, v.line, v.rule, v.message))
    return Report(violations, cycles, known, type_only, sorted(edges, key=_edge_key))


def _edge_key(e: Edge) -> tuple[str, str, int]:
    return (e.source, e.target, e.line)


def _reach(start: str, succ: Mapping[str, set[str]], targets: tuple[str, ...]) -> list[str] | None:
    """The shortest import path from ``start`` to a module under one of ``targets``."""
    parent: dict[str, str] = {start: start}
    queue = deque([start])
    while queue:
        v = queue.popleft()
        for w in sorted(succ.get(v, ())):
            if w in parent:
                continue
            parent[w] = v
            if under(w, targets):
                path = [w]
                while path[-1] != start:
                    path.append(parent[path[-1]])
                return path[::-1]
            queue.append(w)
    return None


def describe(ring: list[Edge]) -> str:
    """``a -> b (a.py:3) -> a (b.py:7)``, module by module, with the importing line."""
    parts = [ring[0].source]
    for e in ring:
        where = e.source.removeprefix(PACKAGE + ".").replace(".", "/")
        mark = ", type-only" if e.type_only else ""
        parts.append(f"{e.target} ({where}:{e.line}{mark})")
    return " -> ".join(parts)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    src = Path(args[0]).resolve() if args else SRC
    report = check(src)
    for v in report.violations:
        print(v)
    print(f"{len(report.violations)} violation(s) in {src}")
    print(f"\nimport cycles (runtime imports): {len(report.cycles) + len(report.known_cycles)}")
    for ring in report.cycles:
        print(f"  [violation] {describe(ring)}")
    for ring in report.known_cycles:
        print(f"  [known, allow-listed in KNOWN_CYCLES] {describe(ring)}")
    print(f"type-only cycles (closed by a TYPE_CHECKING import; allowed by DESIGN.md): "
          f"{len(report.type_only_cycles)}")  # fmt: skip
    for ring in report.type_only_cycles:
        print(f"  {describe(ring)}")
    return 1 if report.violations else 0


if __name__ == "__main__":
    sys.exit(main())
