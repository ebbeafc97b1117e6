"""Readers: CSV and Parquet files into a :class:`~fedeval.data.federation.Federation`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from fedeval.data.federation import Federation, ScoreKind

__all__ = ["read"]


def read(
    path: str | Path,
    *,
    score: str | Sequence[str] = "score",
    label: str = "label",
    client: str | None = None,
    kind: ScoreKind | Literal["auto"] = "auto",
    score_range: tuple[float, float] = (0.0, 1.0),
) -> Federation:
    """Read a CSV or Parquet file into a :class:`Federation`.

    Parameters
    ----------
    path : str or Path
        ``.csv`` (optionally ``.csv.gz``) or ``.parquet``/``.pq`` file.
    score, label, client, kind, score_range
        As in :meth:`Federation.from_frame`. Only the named columns are read.

    Raises
    ------
    FileNotFoundError
        The file does not exist.
    ValueError
        Unknown extension, unreadable/malformed file, empty file, missing column.
    """
    # pandas and pyarrow on first read, not at import: fe.evaluate on arrays needs neither
    import pandas as pd
    import pyarrow as pa

    p = Path(path)
    if p.is_dir():
        raise ValueError(
            f"{p} is a directory: fe.read reads one CSV or Parquet file (fe.scan streams a "
            "directory of files)"
        )
    if not p.is_file():
        raise FileNotFoundError(f"no such file: {p}")
    suffixes = "".join(p.suffixes).lower()
    score_cols = [score] if isinstance(score, str) else list(score)
    columns = [*score_cols, label] + ([client] if client is not None else [])
    try:
        if suffixes.endswith((".parquet", ".pq")):
            import pyarrow.parquet as pq

            available = pq.read_schema(p).names
            _check_columns(columns, available, p)
            df = pq.read_table(p, columns=columns).to_pandas()
        elif suffixes.endswith((".csv", ".csv.gz")):
            header = pd.read_csv(p, nrows=0)
            _check_columns(columns, list(header.columns), p)
            df = pd.read_csv(p, usecols=columns)
        else:
            raise ValueError(f"unsupported file type {p.suffix!r}: use .csv, .csv.gz or .parquet")
    except pd.errors.EmptyDataError:
        raise ValueError(f"{p} is empty") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise ValueError(f"{p} is not a readable CSV file: {exc}") from None
    except pa.ArrowException as exc:
        raise ValueError(f"{p} is not a readable Parquet file: {exc}") from None
    except OSError as exc:
        raise ValueError(f"{p} could not be read: {exc}") from None
    if len(df) == 0:
        raise ValueError(f"{p} has a header but no rows")
    return Federation.from_frame(
        df, score=score, label=label, client=client, kind=kind, score_range=score_range
    )


def _check_columns(columns: list[str], available: list[str], path: Path) -> None:
    missing = [c for c in columns if c not in available]
    if missing:
        raise ValueError(f"column(s) {missing} not found in {path}; available columns: {available}")
