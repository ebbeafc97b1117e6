"""Every source module has a test module named after it, or a stated reason why not.

A module ``src/fedeval/<dir>/x.py`` is tested by a file ``test_x*.py`` in the
mirrored directory ``tests/<dir>/`` (or below it), or by ``test_<package>_x*.py``
anywhere under ``tests/`` (the naming of ``tests/ecdf``, ``tests/vertical`` and
``tests/statistical``: ``tests/statistical/test_aggregation_paths.py`` tests
``aggregation/paths.py``); a top-level module ``src/fedeval/x.py`` by ``test_x*.py``
anywhere under ``tests/``. The mirrored directory keeps ``tests/aggregation/
test_release.py`` from counting for ``ecdf/release.py``. A test file counts for the
module with the longest matching name only (``test_multiclass_binning.py`` tests
``calibration/multiclass_binning.py``, not ``calibration/multiclass.py``). A package
``__init__.py`` counts as a module named after its package, and needs no test
module if it only re-exports.

Any other module is listed in :data:`EXEMPT` with a one-line reason; an entry for a
module that has a test module (or no longer exists) fails, so the list only shrinks.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "fedeval"
TESTS = ROOT / "tests"

#: Modules without a test module named after them, and why (source path relative to
#: src/fedeval). "tested through <file>" names the test files that exercise the module
#: under another name; those files are checked to exist.
EXEMPT: dict[str, str] = {
    "aggregation/continual.py": (
        "a continual release charged once: tested through tests/test_monitoring.py and tests/privacy/audits/test_audit_monitor.py"
    ),
    "entry_points.py": (
        "fe.evaluate's dispatch: tested through tests/test_evaluation.py and tests/test_slicing.py"
    ),
    "metrics/paired.py": ("paired differences: tested through tests/test_comparison.py"),
    "report/compare_report.py": (
        "the comparison page: tested through tests/report/test_report_in_browser.py and tests/cli/test_cli_compare_slices.py"
    ),
    "report/slice_report.py": (
        "the per-slice page: tested through tests/report/test_report_in_browser.py and tests/cli/test_cli_compare_slices.py"
    ),
    "sketches/continual.py": ("the periodic sketch: tested through tests/test_monitoring.py"),
    "sketches/paired.py": ("the paired sketch: tested through tests/test_comparison.py"),
    "sketches/sliced.py": ("the sliced sketch: tested through tests/test_slicing.py"),
    "small_data.py": ("the small-data warning: tested through tests/metrics/test_dense.py"),
    "__init__.py": "lazy public names (PEP 562): tested through tests/test_packaging.py",
    "sketches/__init__.py": (
        "lazy public names (PEP 562): tested through tests/test_packaging.py "
        "(every name resolves; every module imports first in a fresh interpreter)"
    ),
    "calibration/api.py": "tested through tests/calibration/test_binary_api.py",
    "calibration/base.py": (
        "calibrator base classes and their JSON form: tested through "
        "tests/calibration/test_binary_binning.py and tests/calibration/test_multiclass_scaling.py"
    ),
    "calibration/bbq.py": "tested through tests/calibration/test_binary_bbq.py",
    "calibration/binning.py": (
        "tested through tests/calibration/test_binary_binning.py and "
        "tests/calibration/test_noise_aware_bins.py"
    ),
    "calibration/federated.py": (
        "tested through tests/calibration/test_multiclass_binning.py and "
        "tests/calibration/test_multiclass_privacy.py"
    ),
    "calibration/lbfgs.py": "tested through tests/calibration/test_fedcal_lbfgs.py",
    "calibration/scaling.py": "tested through tests/calibration/test_multiclass_scaling.py",
    "calibration/scaling_maps.py": (
        "tested through tests/calibration/test_multiclass_scaling.py and "
        "tests/calibration/test_newton_scaling.py"
    ),
    "cli_common.py": (
        "the subcommands' shared error type, argument definitions and public-fact helpers: "
        "tested through tests/test_cli.py, tests/cli/ and tests/privacy/test_public_facts.py"
    ),
    "data/demo.py": "the demo data of `fedeval demo`: tested through tests/test_cli.py",
    "data/grouping.py": "grouping examples by client: tested through tests/data/test_federation.py",
    "flower/client_app.py": "tested through tests/flower/test_flower_apps.py",
    "flower/decode.py": "tested through tests/flower/test_flower_protocol.py",
    "flower/plan.py": (
        "tested through tests/flower/test_flower_protocol.py and tests/flower/test_flower_apps.py"
    ),
    "flower/replies.py": "tested through tests/flower/test_flower_protocol.py",
    "flower/run_privacy.py": (
        "tested through tests/flower/test_flower_protocol.py and "
        "tests/privacy/audits/test_audit_flower.py"
    ),
    "flower/secagg.py": "SecAgg+ parameters: tested through tests/flower/test_flower_protocol.py",
    "flower/server_app.py": (
        "tested through tests/flower/test_flower_apps.py and tests/flower/test_flower_simulation.py"
    ),
    "flower/simulate.py": (
        "tested through tests/flower/test_flower_simulation.py and "
        "tests/flower/test_flower_sim_command.py"
    ),
    "flower/transport.py": (
        "Flower message plumbing, exercised only by a running Flower: tested through "
        "tests/flower/test_flower_simulation.py"
    ),
    "metrics/auc.py": (
        "tested through tests/reference/test_evaluate_vs_sklearn.py and tests/test_evaluation.py"
    ),
    "metrics/inputs.py": (
        "which hierarchy a metric reads (a release, a tree or an Evaluation): tested through "
        "tests/test_evaluation.py and tests/metrics/test_dense.py"
    ),
    "metrics/precision_recall.py": (
        "tested through tests/reference/test_evaluate_vs_sklearn.py and tests/metrics/test_dense.py"
    ),
    "metrics/quantile_ecdf.py": (
        "Xu–Cormode's quantile curves: tested through tests/test_evaluation.py and "
        "tests/statistical/test_binary_coverage.py"
    ),
    "metrics/roc.py": (
        "tested through tests/reference/test_evaluate_vs_sklearn.py and tests/test_evaluation.py"
    ),
    "postprocess/consistency.py": (
        "tested through tests/statistical/test_consistency.py and "
        "tests/postprocess/test_prefix_moments.py"
    ),
    "privacy/mechanisms/common.py": (
        "helpers of the samplers, whose laws are tested through "
        "tests/privacy/mechanisms/test_laplace.py and tests/privacy/mechanisms/test_polya.py"
    ),
    "privacy/mechanisms/discrete_gaussian.py": (
        "tested through tests/privacy/mechanisms/test_gaussian.py"
    ),
    "privacy/models.py": (
        "tested through tests/privacy/test_privacy_bad_inputs.py, tests/privacy/test_central_dp.py "
        "and tests/privacy/test_mechanism_for.py"
    ),
    "privacy/sensitivity.py": (
        "what sketches declare: tested through tests/privacy/test_mechanism_for.py and "
        "tests/statistical/test_aggregation_paths.py"
    ),
    "report/calibration_report.py": (
        "tested through tests/report/test_report_in_browser.py and "
        "tests/calibration/test_calibrate_cli.py"
    ),
    "report/evaluation_report.py": "tested through tests/report/test_report_content.py",
    "report/files.py": (
        "all-or-nothing writing of report files: tested through tests/report/test_report_content.py"
    ),
    "report/multiclass_report.py": (
        "tested through tests/test_multiclass_evaluation.py and tests/report/test_report_in_browser.py"
    ),
    "report/reliability.py": "tested through tests/metrics/test_calibration_error.py",
    "report/style.py": "tested through tests/report/test_report_content.py",
    "sketches/base.py": (
        "the Sketch base class: tested through tests/sketches/test_monoid.py (every sketch)"
    ),
    "sketches/client_count.py": "tested through tests/privacy/test_public_facts.py",
    "sketches/clipped_sums.py": "tested through tests/sketches/test_clipped_vectors.py",
    "sketches/grid.py": "tested through tests/sketches/test_count_bins.py",
    "sketches/group_sums.py": (
        "tested through tests/metrics/test_hosmer_lemeshow.py and tests/sketches/test_monoid.py"
    ),
    "sketches/multiclass.py": (
        "tested through tests/test_multiclass_evaluation.py and "
        "tests/privacy/audits/test_audit_multiclass.py"
    ),
    "sketches/rank_sums.py": (
        "tested through tests/vertical/test_vertical_estimate.py and tests/sketches/test_monoid.py"
    ),
    "sketches/scaler_updates.py": "tested through tests/sketches/test_clipped_vectors.py",
    "vertical/laplace.py": (
        "closed-form variances, eqs. (8) and (9): tested through "
        "tests/statistical/test_vertical_statistical.py and "
        "tests/vertical/test_vertical_noise_calibration.py"
    ),
}


def source_modules() -> list[str]:
    return sorted(p.relative_to(SRC).as_posix() for p in SRC.rglob("*.py"))


def only_reexports(rel: str) -> bool:
    """Whether a package ``__init__.py`` holds nothing but imports, ``__all__`` and a docstring."""
    tree = ast.parse((SRC / rel).read_text())
    for stmt in tree.body:
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue
        if isinstance(stmt, ast.Assign) and [ast.unparse(t) for t in stmt.targets] == ["__all__"]:
            continue
        return False
    return True


def candidates(test: Path, modules: list[str]) -> list[tuple[tuple[int, bool], str]]:
    """((length of the matched name, in the mirrored directory), module) per match of ``test``."""
    stem = test.stem.removeprefix("test_")
    where = test.parent.relative_to(TESTS).as_posix()
    out: list[tuple[tuple[int, bool], str]] = []
    for rel in modules:
        parts = rel.removesuffix(".py").split("/")
        name, dirs = parts[-1], parts[:-1]
        if name == "__init__":
            if not dirs:
                continue
            name, dirs = dirs[-1], dirs[:-1]
        folder = "/".join(dirs)
        mirrored = where == folder or where.startswith(folder + "/")
        if dirs and stem.startswith(f"{dirs[-1]}_{name}"):
            out.append(((len(dirs[-1]) + 1 + len(name), True), rel))
        elif stem.startswith(name) and (mirrored or not dirs):
            out.append(((len(name), mirrored), rel))
    return out


def modules_with_tests() -> dict[str, list[str]]:
    """Source module -> its test modules."""
    modules = source_modules()
    out: dict[str, list[str]] = {}
    for test in sorted(TESTS.rglob("test_*.py")):
        found = candidates(test, modules)
        if not found:
            continue
        best = max(score for score, _ in found)
        for score, rel in found:
            if score == best:
                out.setdefault(rel, []).append(test.relative_to(ROOT).as_posix())
    return out


def untested() -> list[str]:
    tested = modules_with_tests()
    return [
        rel
        for rel in source_modules()
        if rel not in tested and not (rel.endswith("__init__.py") and only_reexports(rel))
    ]


def test_every_module_has_a_test_module_or_a_reason() -> None:
    missing = [rel for rel in untested() if rel not in EXEMPT]
    assert missing == [], "add tests/<dir>/test_<module>.py or an EXEMPT entry with a reason"


def test_exemptions_only_shrink() -> None:
    """No entry for a module that is gone or that has a test module now."""
    stale = sorted(set(EXEMPT) - set(untested()))
    assert stale == []


def test_every_reason_is_one_line_and_names_real_test_files() -> None:
    for rel, reason in EXEMPT.items():
        assert reason.strip() and "\n" not in reason, rel
        for cited in re.findall(r"tests/[\w/]+\.py", reason):
            assert (ROOT / cited).is_file(), (rel, cited)


def test_the_rule_attributes_test_files_as_documented() -> None:
    tested = modules_with_tests()
    assert "tests/ecdf/test_ecdf_inverse.py" in tested["ecdf/inverse.py"]
    assert "tests/aggregation/test_release.py" in tested["aggregation/release.py"]
    assert "tests/aggregation/test_release.py" not in tested.get("ecdf/release.py", [])
    assert (
        "tests/calibration/test_multiclass_binning.py"
        in tested["calibration/multiclass_binning.py"]
    )
    assert "tests/calibration/test_multiclass_binning.py" not in tested.get(
        "calibration/multiclass.py", []
    )
    assert "tests/test_context.py" in tested["context.py"]
