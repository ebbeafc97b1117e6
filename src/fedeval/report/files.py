"""Writing report files all-or-nothing."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

__all__ = ["write_all_or_nothing"]


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
