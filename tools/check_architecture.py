"""Check the one-way data flow of DESIGN.md on the source tree (static, by AST).

Rules (issue "one release pipeline"):

1. No random draw on a generator outside ``privacy/`` — data generation
   (``data/partition.py``, ``data/demo.py``) and the parametric bootstrap
   (``postprocess/bootstrap.py``) are the exceptions.
2. No ledger entry is built outside ``privacy/``, and the budget is charged only
   by the release function (``aggregation/release.py``).
3. No ``isinstance`` on a privacy model outside ``privacy/``.
4. No encode or decode code in ``flower/`` beyond calls to the sketches and the
   pipeline.
5. ``sketches/`` imports nothing from the ledger and nothing that draws noise.
6. No private name (``_x``) is imported across module boundaries.

Run ``python tools/check_architecture.py``; it prints every violation with its
file and line and exits 1 if there is one. ``tests/test_architecture.py`` runs it.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "fedeval"

#: Methods of numpy.random.Generator that draw random numbers.
DRAWS = frozenset(
    {
        "random", "integers", "normal", "standard_normal", "laplace", "geometric",
        "negative_binomial", "poisson", "binomial", "multinomial", "permutation",
        "permuted", "shuffle", "choice", "uniform", "gamma", "standard_gamma",
        "exponential", "standard_exponential", "dirichlet", "beta", "hypergeometric",
        "logistic", "lognormal", "bytes",
    }
)  # fmt: skip
DRAW_EXCEPTIONS = (
    "privacy/",
    "data/partition.py",
    "data/demo.py",
    "postprocess/bootstrap.py",
    # Issue 28: the streamed contribution bound's draws, until privacy/sampling.py is free.
    "aggregation/streamed_bound.py",
)
MODELS = frozenset(
    {"SecureAggregation", "DistributedDP", "LocalDP", "LabelDP", "UserLevelDP", "CentralDP",
     "PrivacyModel"}
)  # fmt: skip
CHARGERS = ("privacy/ledger.py", "aggregation/release.py")
FLOWER_FORBIDDEN = frozenset(
    {"bincount", "count_bins", "levels_from_leaves", "encode_levels", "unflatten", "estimate",
     "perturb", "sample_share", "sample_sum", "sample_aggregate", "count_variance",
     "PolyaShares", "SkellamShares", "OptimalUnaryEncoding", "RandomizedResponse"}
)  # fmt: skip
SKETCH_FORBIDDEN_IMPORTS = (
    "fedeval.privacy.ledger",
    "fedeval.privacy.mechanisms",
    "fedeval.privacy.noise",
    "fedeval.privacy.sampling",
    "fedeval.privacy.mechanism_for",
    "fedeval.aggregation",
)


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
    }


def _is_generator_call(func: ast.Attribute) -> bool:
    """Whether ``x.<draw>(...)`` may be a draw on a generator.

    Excluded: module-level numpy/math helpers (``np.random.default_rng`` is a
    constructor, ``np.random.<draw>`` would use global state and is caught by
    its own receiver ``np.random``), and methods of ``self``.
    """
    receiver = func.value
    if isinstance(receiver, ast.Name):
        return receiver.id not in {"np", "math", "self"}
    return isinstance(receiver, ast.Attribute | ast.Call | ast.Subscript)


def _type_checking_blocks(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in _names(node.test):
            for sub in node.body:
                for n in ast.walk(sub):
                    if hasattr(n, "lineno"):
                        lines.add(n.lineno)
    return lines


def check_file(path: Path) -> list[str]:
    rel = path.relative_to(SRC).as_posix()
    tree = ast.parse(path.read_text(), filename=str(path))
    guarded = _type_checking_blocks(tree)
    out: list[str] = []

    def bad(node: ast.AST, rule: str) -> None:
        out.append(f"{rel}:{getattr(node, 'lineno', 0)}: {rule}")

    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if (
                isinstance(func, ast.Attribute)
                and name in DRAWS
                and not rel.startswith(DRAW_EXCEPTIONS)
                and _is_generator_call(func)
            ):
                bad(node, f"rule 1: random draw .{name}() outside privacy/")
            if name == "LedgerEntry" and not rel.startswith("privacy/"):
                bad(node, "rule 2: ledger entry built outside privacy/")
            if (
                isinstance(func, ast.Attribute)
                and name in {"charge", "charge_all"}
                and not rel.startswith(CHARGERS)
            ):
                bad(node, "rule 2: budget charged outside the release function")
            if (
                name == "isinstance"
                and len(node.args) == 2
                and not rel.startswith("privacy/")
                and _names(node.args[1]) & MODELS
            ):
                bad(node, "rule 3: isinstance on a privacy model outside privacy/")
            if rel.startswith("flower/") and name in FLOWER_FORBIDDEN:
                bad(node, f"rule 4: encode/decode code ({name}) in flower/")
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("fedeval"):
            for alias in node.names:
                if alias.name.startswith("_") and alias.name != "__version__":
                    bad(node, f"rule 6: private name {alias.name} imported from {node.module}")
            if (
                rel.startswith("sketches/")
                and node.module.startswith(SKETCH_FORBIDDEN_IMPORTS)
                and node.lineno not in guarded
            ):
                bad(node, f"rule 5: sketches/ imports {node.module}")
    return out


def main() -> int:
    problems: list[str] = []
    for path in sorted(SRC.rglob("*.py")):
        problems.extend(check_file(path))
    for p in problems:
        print(p)
    print(f"{len(problems)} violation(s) in {SRC}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
