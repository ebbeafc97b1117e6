"""Writing report files all-or-nothing."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "OutputDirectoryError",
    "json_safe",
    "json_text",
    "prepare_out_dir",
    "write_all_or_nothing",
    "write_report_files",
]


def json_safe(obj: Any) -> Any:
    """``obj`` with every NaN or infinity as None and numpy values as Python ones.

    JSON has no NaN: ``JSON.parse`` and strict parsers reject Python's ``NaN``.
    An undefined estimate (a release whose class total is not positive) is
    ``null`` in every file and every ``--json`` document fedeval writes.
    """
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, Mapping):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_safe(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return json_safe(obj.tolist())
    if isinstance(obj, np.generic):
        return json_safe(obj.item())
    return obj


def json_text(obj: Any, *, indent: int | None = None) -> str:
    """Strict JSON of ``obj`` (:func:`json_safe` first; ``allow_nan=False`` checks it)."""
    return json.dumps(json_safe(obj), indent=indent, allow_nan=False, default=float)


class OutputDirectoryError(ValueError):
    """The report directory cannot be used: not a directory, or not empty without ``force``."""


def prepare_out_dir(out: str | Path, *, force: bool = False) -> Path:
    """Create the report directory, refusing a non-empty one unless ``force``.

    fedeval never writes into a non-empty directory unless told to: another
    run's files would be mixed with these, or overwritten.

    Raises
    ------
    OutputDirectoryError
        ``out`` or one of its parents exists and is not a directory, or ``out``
        is a non-empty directory and ``force`` is False.
    """
    path = Path(out)
    for parent in (path, *path.parents):
        if parent.exists() and not parent.is_dir():
            raise OutputDirectoryError(f"{parent} exists and is not a directory")
        if parent.exists():
            break
    if path.is_dir() and any(path.iterdir()) and not force:
        raise OutputDirectoryError(
            f"{path} is not empty; choose another directory, or pass force=True (--force) to "
            "overwrite the report files in it"
        )
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_all_or_nothing(contents: Mapping[Path, str]) -> None:
    """Write every file to a temporary name, then rename them all.

    A failure while writing leaves no partial file behind (the temporaries are
    removed); the renames only start once every file has been written.
    """
    tmp = {path: path.with_suffix(path.suffix + ".tmp") for path in contents}
    try:
        for path, text in contents.items():
            tmp[path].write_text(text, encoding="utf-8")
        for path, t in tmp.items():
            t.replace(path)
    finally:
        for t in tmp.values():
            t.unlink(missing_ok=True)


def write_report_files(out: Path, html: str, markdown: str, results: Any) -> dict[str, Path]:
    """Write an evaluation report's three files (``report.html``, ``report.md``,
    ``results.json``) all-or-nothing, and return their paths by kind."""
    targets = {
        "html": out / "report.html",
        "markdown": out / "report.md",
        "json": out / "results.json",
    }
    contents = {
        "html": html,
        "markdown": markdown,
        "json": json_text(results, indent=2),
    }
    write_all_or_nothing({targets[k]: contents[k] for k in targets})
    return targets
