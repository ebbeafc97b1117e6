"""Readers (fedeval.data.read): CSV/Parquet round trips and bad files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fedeval.data import read
from helpers import client_sets, expected_client_sets, toy_arrays


# ------------------------------------------------------------------ readers
@pytest.fixture
def frame() -> pd.DataFrame:
    scores, labels, clients = toy_arrays(40, 6, seed=3)
    return pd.DataFrame({"score": scores, "label": labels, "client": clients, "note": "n"})


@pytest.mark.parametrize("suffix", [".csv", ".csv.gz", ".parquet", ".pq"])
def test_read_round_trip(tmp_path: Path, frame: pd.DataFrame, suffix: str) -> None:
    path = tmp_path / f"data{suffix}"
    if "csv" in suffix:
        frame.to_csv(path, index=False)
    else:
        pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path)
    fed = read(path, client="client")
    expected = expected_client_sets(
        frame["score"].to_numpy(), frame["label"].to_numpy(), frame["client"].to_numpy()
    )
    got = client_sets(fed)
    assert got.keys() == expected.keys()
    for c in expected:  # CSV round-trips floats with repr precision
        np.testing.assert_allclose(np.array(got[c]), np.array(expected[c]), rtol=0, atol=1e-15)
    assert read(str(path)).n_clients == len(frame)


def test_read_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read(tmp_path / "nope.csv")


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_read_missing_column_lists_available(
    tmp_path: Path, frame: pd.DataFrame, suffix: str
) -> None:
    path = tmp_path / f"data{suffix}"
    if suffix == ".csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path)
    with pytest.raises(ValueError, match=r"\['prob'\] not found.*available columns.*'score'"):
        read(path, score="prob")


def test_read_empty_csv(tmp_path: Path) -> None:
    path = tmp_path / "empty.csv"
    path.write_text("")
    with pytest.raises(ValueError, match="empty"):
        read(path)
    header_only = tmp_path / "header.csv"
    header_only.write_text("score,label\n")
    with pytest.raises(ValueError, match="no rows"):
        read(header_only)


def test_read_malformed_csv(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text('score,label\n0.1,1\n0.2,0,7,8\n"0.3,1\n')
    # The message names the file and says what is wrong, not a parser's internals.
    with pytest.raises(ValueError, match=r"bad\.csv is not a readable CSV file"):
        read(path)
    binary = tmp_path / "binary.csv"
    binary.write_bytes(b"score,label\n\xff\xfe\x00\x81,1\n")
    with pytest.raises(ValueError, match=r"binary\.csv is not a readable CSV file"):
        read(binary)


def test_read_bad_values_in_file(tmp_path: Path) -> None:
    path = tmp_path / "values.csv"
    path.write_text("score,label\n0.1,1\n1.7,0\n")
    with pytest.raises(ValueError, match="score_range"):
        read(path)


def test_read_malformed_parquet(tmp_path: Path) -> None:
    path = tmp_path / "bad.parquet"
    path.write_bytes(b"this is not parquet at all")
    with pytest.raises(ValueError, match=r"bad\.parquet is not a readable Parquet file"):
        read(path)


def test_read_unsupported_extension(tmp_path: Path) -> None:
    path = tmp_path / "data.xlsx"
    path.write_text("score,label\n0.1,1\n")
    with pytest.raises(ValueError, match=r"unsupported file type '\.xlsx'"):
        read(path)
