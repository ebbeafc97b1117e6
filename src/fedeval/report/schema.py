"""The JSON Schema of every document fedeval writes or prints (``results.schema.json``).

Every ``results.json`` and every ``--json`` output shares one envelope: a
``schema`` string naming its kind and version (``fedeval.evaluation/1``,
``fedeval.multiclass_evaluation/1``, ``fedeval.slices/1``,
``fedeval.comparison/1``, ``fedeval.calibration/1``, ``fedeval.monitor/1``,
``fedeval.plan/1``), ``input`` with public facts only, the release's
``receipt`` (per setting in ``fedeval.evaluation/1``) whose ``guarantee_line``
is one line, and ``report`` listing the files written. NaN is null, so every
document parses as strict JSON (:func:`fedeval.report.files.json_text`).

The schema file ships with the package; :func:`validate_results` checks a
document against it with the ``jsonschema`` package (installed with
``fedeval[test]``; a plain import error otherwise).
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["SCHEMA_FILE", "results_schema", "validate_results"]

#: File name of the schema inside the ``fedeval.report`` package.
SCHEMA_FILE = "results.schema.json"


@cache
def _schema_text() -> str:
    return resources.files("fedeval.report").joinpath(SCHEMA_FILE).read_text(encoding="utf-8")


def results_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of fedeval's documents, as a fresh dict."""
    schema: dict[str, Any] = json.loads(_schema_text())
    return schema


def validate_results(document: Any) -> None:
    """Raise ``jsonschema.ValidationError`` unless ``document`` follows the schema.

    Parameters
    ----------
    document : dict
        A parsed ``results.json`` or ``--json`` output.

    Raises
    ------
    jsonschema.ValidationError
        With the path of the first field that breaks the schema.
    ImportError
        When the ``jsonschema`` package is not installed.
    """
    try:
        import jsonschema  # type: ignore[import-untyped]
    except ImportError as exc:  # pragma: no cover - exercised only without the test extra
        raise ImportError(
            "validate_results needs the jsonschema package: pip install 'fedeval[test]'"
        ) from exc
    schema = results_schema()
    validator = jsonschema.Draft202012Validator(schema)
    # oneOf reports "is not valid under any of the given schemas"; validate against the
    # branch the document names to give the field that is wrong.
    kind = document.get("schema", "") if isinstance(document, dict) else ""
    branch = kind.partition("/")[0].removeprefix("fedeval.")
    if branch in schema["$defs"]:
        branch_schema = {"$defs": schema["$defs"], "$ref": f"#/$defs/{branch}"}
        jsonschema.Draft202012Validator(branch_schema).validate(document)
    validator.validate(document)
