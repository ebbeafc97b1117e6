"""Writing report files all-or-nothing."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["write_all_or_nothing", "write_report_files"]


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
