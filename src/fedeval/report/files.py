"""Writing report files all-or-nothing."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["OutputDirectoryError", "prepare_out_dir", "write_all_or_nothing", "write_report_files"]


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
        "json": json.dumps(results, indent=2, default=float),
    }
    write_all_or_nothing({targets[k]: contents[k] for k in targets})
    return targets
