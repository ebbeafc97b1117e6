"""Every warning fedeval raises is a FedevalWarning (issue 29), and the CLI prints it as one line."""

from __future__ import annotations

import ast
from pathlib import Path

import fedeval as fe
from fedeval import exceptions

SRC = Path(__file__).resolve().parents[1] / "src" / "fedeval"
OURS = {
    n
    for n in exceptions.__all__
    if isinstance(getattr(exceptions, n), type)
    and issubclass(getattr(exceptions, n), fe.FedevalWarning)
}


def _warn_calls() -> list[tuple[str, int, str | None]]:
    """(file, line, category name or None) of every ``warnings.warn(...)`` in the source."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            f = node.func
            if not (
                f.attr == "warn" and isinstance(f.value, ast.Name) and f.value.id == "warnings"
            ):
                continue
            cat = node.args[1] if len(node.args) > 1 else None
            for kw in node.keywords:
                if kw.arg == "category":
                    cat = kw.value
            name = cat.id if isinstance(cat, ast.Name) else ast.unparse(cat) if cat else None
            found.append((str(path.relative_to(SRC)), node.lineno, name))
    return found


def test_every_warning_fedeval_raises_is_a_fedeval_warning() -> None:
    calls = _warn_calls()
    assert len(calls) >= 5  # the scan finds the calls
    # warn_at_caller passes its (FedevalWarning-typed) parameter through.
    helper = [c for c in calls if c[0] == "exceptions.py" and c[2] == "category"]
    assert len(helper) == 1
    assert [c for c in calls if c[2] not in OURS and c not in helper] == []


def test_a_seeded_release_warns_at_the_users_line_whatever_the_entry_point() -> None:
    """The seeded-noise warning pointed into fedeval (evaluation.py, entry_points.py)."""
    import warnings

    import numpy as np

    fed = fe.Federation.from_arrays(np.linspace(0, 1, 200), np.arange(200) % 2)
    for call in (
        lambda: fe.evaluate(fed, fe.DistributedDP(1.0), rng=3),
        lambda: fe.Context(fed, budget=fe.Budget(epsilon=2.0), rng=3).evaluate(
            fe.DistributedDP(1.0)
        ),
    ):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            call()
        seeded = [w for w in rec if issubclass(w.category, fe.SeededRandomnessWarning)]
        assert seeded and {Path(w.filename).name for w in seeded} == {Path(__file__).name}


def test_the_hierarchy_lets_users_filter_fedeval_alone() -> None:
    for name in OURS:
        assert issubclass(getattr(exceptions, name), UserWarning)
    assert {"SmallDataWarning", "SeededRandomnessWarning", "PublicFactWarning"} <= OURS


def test_certainly_ignored_reads_only_filters_that_match_every_message_module_and_line() -> None:
    """The first filter for the category decides, and only an unconditional "ignore" counts."""
    import warnings

    from fedeval.exceptions import certainly_ignored

    small = fe.SmallDataWarning
    cases = [
        (lambda: warnings.simplefilter("ignore"), True),
        (lambda: warnings.simplefilter("ignore", fe.FedevalWarning), True),
        (lambda: warnings.simplefilter("ignore", small), True),
        (lambda: warnings.simplefilter("ignore", fe.SeededRandomnessWarning), False),
        (lambda: warnings.simplefilter("always"), False),
        (lambda: warnings.simplefilter("error", small), False),
        (
            lambda: warnings.filterwarnings("ignore", message="released class", category=small),
            False,
        ),
        (lambda: warnings.filterwarnings("ignore", category=small, module="mine"), False),
        (lambda: warnings.filterwarnings("ignore", category=small, lineno=3), False),
    ]
    for install, expected in cases:
        with warnings.catch_warnings():
            warnings.resetwarnings()  # no filter at all: Python's default shows it
            assert not certainly_ignored(small)
            install()
            assert certainly_ignored(small) is expected
    with warnings.catch_warnings():  # the first matching filter wins, as in warnings.warn
        warnings.simplefilter("ignore")
        warnings.simplefilter("always", small)
        assert not certainly_ignored(small)
        warnings.simplefilter("ignore", fe.FedevalWarning)
        assert certainly_ignored(small)
