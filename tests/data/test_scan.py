"""fe.scan: streamed sources give the releases of the in-memory path, batch by batch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

import fedeval as fe
from fedeval.aggregation import release
from fedeval.sketches.hierarchy import HierarchySketch, HierarchySpec


def _data(n: int = 6000, n_clients: int = 150) -> tuple[Any, Any, Any]:
    rng = np.random.default_rng(11)
    s = rng.beta(2, 5, n)
    y = (rng.random(n) < s).astype(np.int8)
    c = rng.integers(0, n_clients, n)
    return s, y, c


def _write_parts(tmp: Path, s: Any, y: Any, c: Any, parts: int = 3, fmt: str = "parquet") -> Path:
    d = tmp / "logs"
    d.mkdir()
    bounds = np.linspace(0, s.size, parts + 1).astype(int)
    for k in range(parts):
        sl = slice(bounds[k], bounds[k + 1])
        table = pa.table({"score": s[sl], "label": y[sl], "client": c[sl], "other": s[sl]})
        if fmt == "parquet":
            pq.write_table(table, d / f"part-{k}.parquet", row_group_size=500)
        else:
            table.to_pandas().to_csv(d / f"part-{k}.csv", index=False)
    return d


def _levels_equal(a: Any, b: Any) -> bool:
    return all(np.array_equal(p, q) for p, q in zip(a.tree.levels, b.tree.levels, strict=True))


def _recorded_passes(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The columns of every pass over the files, recorded from now on."""
    import sys

    scan_type = sys.modules["fedeval.data.scan"].Scan
    read = scan_type._column_batches
    passes: list[list[str]] = []

    def recording(self: Any, columns: Any, *args: Any) -> Any:
        passes.append(list(columns))
        return read(self, columns, *args)

    monkeypatch.setattr(scan_type, "_column_batches", recording)
    return passes


@pytest.mark.parametrize(
    "privacy",
    [fe.SecureAggregation(), fe.DistributedDP(1.0), fe.LocalDP(5.0), fe.CentralDP(1.0)],
    ids=["sa", "distdp", "ldp", "central"],
)
@pytest.mark.parametrize("level_budget", ["split", "assign"])
def test_scanned_directory_releases_what_memory_releases(
    tmp_path: Path, privacy: Any, level_budget: str
) -> None:
    """Same data, same rng: the streamed release equals the in-memory one exactly.

    The batch encodings sum to the whole encoding (a linear sketch) and the
    noise is drawn once, in the same order, from the same generator.
    """
    s, y, c = _data()
    d = _write_parts(tmp_path, s, y, c)
    src = fe.scan(d, batch_size=700)
    fed = fe.Federation.from_arrays(s, y)
    try:
        b = fe.evaluate(fed, privacy, rng=4, level_budget=level_budget, height=6)
    except (TypeError, ValueError) as exc:  # a layout the model does not take: same refusal
        with pytest.raises(type(exc)):
            fe.evaluate(src, privacy, rng=4, level_budget=level_budget, height=6)
        return
    a = fe.evaluate(src, privacy, rng=4, level_budget=level_budget, height=6)
    assert _levels_equal(a, b)
    assert a.parameters == b.parameters
    assert a.roc_auc == b.roc_auc


@pytest.mark.filterwarnings("ignore:released class count not clearly above")
def test_client_column_csv_glob_and_dataset(tmp_path: Path) -> None:
    s, y, c = _data()
    d = _write_parts(tmp_path, s, y, c, fmt="csv")
    fed = fe.Federation.from_arrays(s, y, c)
    for source in (str(d / "*.csv"), pads.dataset(sorted(d.glob("*.csv")), format="csv")):
        src = fe.scan(source, client="client")
        assert src.n_clients == fed.n_clients
        assert src.n_examples == fed.n_examples
        np.testing.assert_array_equal(src.client_sizes, fed.client_sizes)
        for privacy in (
            fe.LocalDP(5.0),
            fe.DistributedDP(1.0, unit="client", contribution_bound=100),
        ):
            a = fe.evaluate(src, privacy, rng=2, height=5)
            b = fe.evaluate(fed, privacy, rng=2, height=5)
            assert _levels_equal(a, b)


def test_faithful_path_and_string_client_ids_read_into_memory(tmp_path: Path) -> None:
    s, y, c = _data(1500, 40)
    ids = np.array([f"c{k:03d}" for k in c])
    pq.write_table(pa.table({"score": s, "label": y, "client": ids}), tmp_path / "x.parquet")
    src = fe.scan(tmp_path / "x.parquet", client="client")
    fed = fe.Federation.from_arrays(s, y, ids)
    np.testing.assert_array_equal(src.client_ids(), fed.client_ids)
    a = fe.evaluate(src, fe.DistributedDP(1.0), path="faithful", rng=1, height=4)
    b = fe.evaluate(fed, fe.DistributedDP(1.0), path="faithful", rng=1, height=4)
    assert _levels_equal(a, b)


def test_release_and_ecdf_accept_a_scan(tmp_path: Path) -> None:
    s, y, c = _data()
    d = _write_parts(tmp_path, s, y, c)
    src = fe.scan(d)
    fed = fe.Federation.from_arrays(s, y)
    sketch = HierarchySketch(HierarchySpec(5))
    a = release(src, sketch, fe.DistributedDP(1.0), rng=9)
    b = release(fed, sketch, fe.DistributedDP(1.0), rng=9)
    np.testing.assert_array_equal(a.values, b.values)
    grid = np.linspace(0, 1, 17)
    ea = fe.ecdf.federated_ecdf(src, grid, epsilon=1.0, rng=3).query()
    eb = fe.ecdf.federated_ecdf(fed, grid, epsilon=1.0, rng=3).query()
    np.testing.assert_array_equal(ea.counts, eb.counts)


@pytest.mark.parametrize(
    ("column", "bad", "message"),
    [
        ("score", np.nan, "NaN or inf"),
        ("score", 1.5, "outside score_range"),
        ("label", 2, "is not 0 or 1"),
    ],
)
def test_bad_values_name_the_file_and_row(
    tmp_path: Path, column: str, bad: float, message: str
) -> None:
    s, y, c = _data()
    d = _write_parts(tmp_path, s, y, c)
    table = pq.read_table(d / "part-1.parquet").to_pandas()
    table[column] = table[column].astype(np.float64)
    table.loc[1234, column] = bad
    pq.write_table(pa.Table.from_pandas(table), d / "part-1.parquet", row_group_size=500)
    with pytest.raises(ValueError, match=rf"{message}.*part-1\.parquet at row 1234"):
        fe.evaluate(fe.scan(d), fe.DistributedDP(1.0), rng=0)


@pytest.mark.parametrize("bad", [2, -1])
def test_bad_integer_labels_name_the_file_and_row(tmp_path: Path, bad: int) -> None:
    """Integer labels are checked by their range (no temporaries); a bad one is still found."""
    s, y, c = _data()
    d = _write_parts(tmp_path, s, y, c)
    table = pq.read_table(d / "part-1.parquet")
    labels = table.column("label").to_numpy().astype(np.int8)
    labels[1234] = bad
    table = table.set_column(table.schema.get_field_index("label"), "label", pa.array(labels))
    pq.write_table(table, d / "part-1.parquet", row_group_size=500)
    with pytest.raises(
        ValueError, match=rf"label {bad} is not 0 or 1.*part-1\.parquet at row 1234"
    ):
        fe.evaluate(fe.scan(d), fe.DistributedDP(1.0), rng=0)


def test_missing_column_missing_path_and_unknown_format(tmp_path: Path) -> None:
    s, y, c = _data(100)
    pq.write_table(pa.table({"score": s, "label": y}), tmp_path / "a.parquet")
    with pytest.raises(ValueError, match=r"\['client'\] not found.*available columns"):
        fe.scan(tmp_path / "a.parquet", client="client")
    with pytest.raises(FileNotFoundError):
        fe.scan(tmp_path / "nope")
    (tmp_path / "b.txt").write_text("x")
    with pytest.raises(ValueError, match="format"):
        fe.scan([str(tmp_path / "b.txt")])
    with pytest.raises(TypeError, match="Federation or a Scan"):
        fe.evaluate(str(tmp_path / "a.parquet"), fe.DistributedDP(1.0))  # type: ignore[arg-type]


def test_a_malformed_file_is_named_and_the_reader_thread_stops(tmp_path: Path) -> None:
    import threading

    s, y, c = _data()
    d = _write_parts(tmp_path, s, y, c, fmt="csv")
    with open(d / "part-2.csv", "a") as fh:
        fh.write("0.5,not-a-label,3,0.5\n")
    before = threading.active_count()
    with pytest.raises((TypeError, ValueError), match=r"part-2\.csv"):
        fe.evaluate(fe.scan(d), fe.DistributedDP(1.0), rng=0)
    assert threading.active_count() == before
    (tmp_path / "broken.parquet").write_bytes(b"PAR1 not really parquet")
    with pytest.raises(ValueError, match=r"broken\.parquet"):
        fe.evaluate(fe.scan(tmp_path / "broken.parquet"), fe.DistributedDP(1.0), rng=0)


def test_progress_bar_shows_rows_and_throughput(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sys

    scan_module = sys.modules["fedeval.data.scan"]
    monkeypatch.setattr(scan_module, "_PROGRESS_DELAY_S", 0.0)
    monkeypatch.setattr(scan_module, "_PROGRESS_MININTERVAL_S", 0.0)
    s, y, c = _data()
    d = _write_parts(tmp_path, s, y, c)
    fe.evaluate(fe.scan(d, batch_size=1000), fe.DistributedDP(1.0), rng=0)
    err = capsys.readouterr().err
    assert "rows" in err
    assert "MB/s" in err
    fe.evaluate(fe.scan(d, progress=False), fe.DistributedDP(1.0), rng=0)
    assert capsys.readouterr().err == ""


def test_calibrate_accepts_a_scan(tmp_path: Path) -> None:
    s, y, c = _data()
    d = _write_parts(tmp_path, s, y, c)
    a = fe.calibrate(fe.scan(d), fe.SecureAggregation(), method="binning", rng=0)
    b = fe.calibrate(
        fe.Federation.from_arrays(s, y), fe.SecureAggregation(), method="binning", rng=0
    )
    grid = np.linspace(0, 1, 11)
    np.testing.assert_array_equal(a.predict_proba(grid), b.predict_proba(grid))


@pytest.mark.parametrize(
    "kind",
    ["dense", "gaps", "marked", "wide", "negative", "strings", "to-marked", "to-merged"],
    ids=lambda k: f"ids-{k}",
)
def test_client_ids_of_every_kind_give_the_in_memory_index(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ids 0..K-1 (their own index), small ids with gaps (counted, a lookup table), ids
    from 2^23 (marked present, sizes in a second pass), ids past 2^28, negative ids and
    strings (sorted merges), and streams that move from one kind to the next half-way:
    the streamed dense index, sizes and releases equal the in-memory federation's."""
    import sys

    monkeypatch.setattr(sys.modules["fedeval.data.scan"], "_COUNT_EVERY", 1000)  # count often
    s, y, c = _data(3000, 90)
    half = np.arange(c.size) >= c.size // 2
    ids: Any = {
        "dense": c,
        "gaps": 7 * c + 3,
        "marked": c + (1 << 24),
        "wide": c + (1 << 40),
        "negative": c - 45,
        "strings": np.array([f"u{k:03d}" for k in c]),
        "to-marked": np.where(half, c + (1 << 24), c),
        "to-merged": np.where(half, c + (1 << 40), c),
    }[kind]
    d = tmp_path / "ids"
    d.mkdir()
    pq.write_table(pa.table({"score": s, "label": y, "client": ids}), d / "a.parquet")
    src = fe.scan(d, client="client", batch_size=400)
    fed = fe.Federation.from_arrays(s, y, ids)
    np.testing.assert_array_equal(src.client_ids(), fed.client_ids)
    np.testing.assert_array_equal(src.client_sizes, fed.client_sizes)
    np.testing.assert_array_equal(src.to_federation().client_index, fed.client_index)
    # LDP with clients assigned to levels reads every row's client index
    for privacy, layout in ((fe.LocalDP(5.0), "assign"), (fe.DistributedDP(1.0), "split")):
        a = fe.evaluate(src, privacy, rng=3, height=4, level_budget=layout)
        b = fe.evaluate(fed, privacy, rng=3, height=4, level_budget=layout)
        assert _levels_equal(a, b)


def test_an_encoder_that_ignores_clients_reads_no_client_column(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Example-level DistDP with a client column: the client column is read once, alone,
    to count the clients; the encoding pass reads scores and labels only. Same release
    as in memory, for the same seed."""
    s, y, c = _data()
    d = _write_parts(tmp_path, s, y, c)
    passes = _recorded_passes(monkeypatch)
    src = fe.scan(d, client="client", batch_size=700)
    a = fe.evaluate(src, fe.DistributedDP(1.0), rng=6, height=6)
    assert passes == [["client"], ["score", "label"]]
    b = fe.evaluate(fe.Federation.from_arrays(s, y, c), fe.DistributedDP(1.0), rng=6, height=6)
    assert _levels_equal(a, b)


def test_a_binding_client_bound_stays_streamed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client-level contribution bound on a local scan is applied batch by batch: nothing
    is read into memory, every client keeps min(size, B) of its own rows, and every pass
    over the bounded scan keeps the same rows."""
    import sys

    from fedeval.aggregation.paths import bound_contributions

    s, y, c = _data(6000, 40)  # ~150 rows per client, over 3 files of 500-row groups
    d = _write_parts(tmp_path, s, y, c)
    src = fe.scan(d, client="client", batch_size=300)
    scan_type = sys.modules["fedeval.data.scan"].Scan
    monkeypatch.setattr(scan_type, "to_federation", _refuse)
    bounded = bound_contributions(src, 30, np.random.default_rng(4))
    assert bounded is not src
    np.testing.assert_array_equal(bounded.client_sizes, np.minimum(src.client_sizes, 30))
    assert bounded.n_examples == int(np.minimum(src.client_sizes, 30).sum())
    passes = []
    for _ in range(2):
        parts = list(bounded.batches())  # type: ignore[union-attr]
        scores = np.concatenate([b.scores for b in parts])
        index = np.concatenate([b.clients for b in parts])
        passes.append((scores, index))
        np.testing.assert_array_equal(np.bincount(index, minlength=40), bounded.client_sizes)
    np.testing.assert_array_equal(passes[0][0], passes[1][0])
    rows = np.searchsorted(np.sort(s), passes[0][0])
    owner = c[np.argsort(s)][rows]  # every kept score is one of its own client's
    np.testing.assert_array_equal(src.client_ids()[passes[0][1]], owner)
    # Through evaluate: the released total counts B rows per client. ε = 50 over h = 3
    # levels with Δ = B = 30 per level: discrete Laplace a = exp(-50/90), sd ≈ 2.1 per
    # node, so the total of the 4 level-1 nodes has sd < 5.
    ev = fe.evaluate(
        src, fe.DistributedDP(50.0, unit="client", contribution_bound=30), rng=1, height=3
    )
    assert abs(ev.tree.totals().sum() - 30 * 40) < 30


@pytest.mark.parametrize("offset", [0, 1 << 24])
def test_a_bounded_scan_decodes_the_client_column_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, offset: int
) -> None:
    """Issue 28: the first pass (the client sizes) keeps the integer ids it read, and the
    bounded pass takes them instead of decoding the client column again. Ids from 2^23
    up are only marked present by the first pass: their sizes are counted from the kept
    ids, not from a third pass. The release is the one of a scan that keeps nothing (the
    ids are the same), for the same seed, and the scan holds no ids after the pass. An
    example-level release keeps none: it does not read the clients again."""
    import sys

    scan_module = sys.modules["fedeval.data.scan"]
    s, y, c = _data(6000, 40)
    d = _write_parts(tmp_path, s, y, c + offset)
    model = fe.DistributedDP(1.0, unit="client", contribution_bound=30)
    passes = _recorded_passes(monkeypatch)
    src = fe.scan(d, client="client", batch_size=700)
    kept = fe.evaluate(src, model, rng=5, height=5)
    assert passes == [["client"], ["score", "label"]]
    assert src._cache["pass_ids"].parts is None
    example_level = fe.scan(d, client="client", batch_size=700)
    fe.evaluate(example_level, fe.DistributedDP(1.0), rng=5, height=5)
    assert "pass_ids" not in example_level._cache  # no bound: nothing kept
    passes.clear()
    monkeypatch.setattr(scan_module, "_PASS_IDS_BYTES", 4 * 6000 - 1)  # one row too few
    read_again = fe.evaluate(fe.scan(d, client="client", batch_size=700), model, rng=5, height=5)
    sizes_pass = [["client"]] if offset else []
    assert passes == [["client"], *sizes_pass, ["score", "label", "client"]]
    assert _levels_equal(kept, read_again)


def test_kept_ids_follow_fragments_that_share_a_file(tmp_path: Path) -> None:
    """A dataset of row groups split from one file has fragments with the same path, each
    counting its rows from 0: the kept ids follow the read order, not the file names, and
    the bounded release is the one of the whole file, for the same seed."""
    s, y, c = _data(3000, 40)
    pq.write_table(
        pa.table({"score": s, "label": y, "client": c}), tmp_path / "a.parquet", row_group_size=500
    )
    whole = pads.dataset(tmp_path / "a.parquet")
    groups = [g for f in whole.get_fragments() for g in f.split_by_row_group()]
    assert len(groups) == 6 and len({g.path for g in groups}) == 1
    split = pads.FileSystemDataset(groups, whole.schema, whole.format, whole.filesystem)
    model = fe.DistributedDP(5.0, unit="client", contribution_bound=10)
    a = fe.evaluate(fe.scan(split, client="client"), model, rng=3, height=4)
    b = fe.evaluate(fe.scan(whole, client="client"), model, rng=3, height=4)
    assert _levels_equal(a, b)


@pytest.mark.parametrize("change", [1, -1])
def test_rows_added_or_removed_between_passes_are_an_error(tmp_path: Path, change: int) -> None:
    """The bounded pass reads the ids the first pass kept: a file that gained or lost a row
    between the passes is an error that names it, not a bound on misaligned ids. (CSV: a
    Parquet file rewritten under a scan fails to read, its footer being the old one.)"""
    s, y, c = _data(6000, 40)
    d = _write_parts(tmp_path, s, y, c, fmt="csv")
    src = fe.scan(d, client="client", batch_size=700)
    src.keep_ids_for_bound()  # as a release under a contribution bound does
    assert src.n_clients == 40  # the first pass: sizes, and the ids kept
    rows = slice(2000, 4000 + change)  # the file's own rows, and one more or one less
    table = pa.table({"score": s[rows], "label": y[rows], "client": c[rows], "other": s[rows]})
    table.to_pandas().to_csv(d / "part-1.csv", index=False)
    model = fe.DistributedDP(1.0, unit="client", contribution_bound=30)
    with pytest.raises(ValueError, match=r"part-1\.csv.*data changed between passes"):
        fe.evaluate(src, model, rng=5, height=5)


@pytest.mark.parametrize("spacing", [1, 2, 3])
def test_a_bound_keyed_by_id_keeps_the_rows_of_the_dense_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spacing: int
) -> None:
    """Issue 28: the streamed bound reads small integer ids as its keys (no lookup table
    per row) when the presence table is at most twice the number of clients. The id
    order is the dense order, so the same seed keeps exactly the same rows as keying by
    the dense index: ids 0..K-1 (spacing 1), every second id (2: keyed by id, zeros in
    between), every third (3: the table is too sparse, the dense index is used)."""
    import sys

    from fedeval.aggregation.paths import bound_contributions

    s, y, c = _data(6000, 40)
    d = _write_parts(tmp_path, s, y, c * spacing)
    table_type = sys.modules["fedeval.data.scan"]._ClientTable

    def kept(src: Any) -> tuple[Any, Any]:
        bounded = bound_contributions(src, 30, np.random.default_rng(4))
        parts = list(bounded.batches())  # type: ignore[union-attr]
        return (
            np.concatenate([b.scores for b in parts]),
            np.concatenate([b.clients for b in parts]),
        )

    by_id = kept(fe.scan(d, client="client", batch_size=300, progress=False))
    monkeypatch.setattr(table_type, "filter_keys", table_type.index)
    monkeypatch.setattr(table_type, "filter_sizes", lambda self, sizes: sizes)
    dense = kept(fe.scan(d, client="client", batch_size=300, progress=False))
    np.testing.assert_array_equal(by_id[0], dense[0])
    np.testing.assert_array_equal(by_id[1], dense[1])
    assert np.bincount(by_id[1], minlength=40).max() == 30


def _refuse(*args: object, **kwargs: object) -> None:
    raise AssertionError("read into memory")


@pytest.mark.parametrize("bound", [None, 30])
def test_the_planning_count_of_a_scan_reads_no_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bound: int | None
) -> None:
    """Issue 28: the count released to plan from streamed (and, under a client bound,
    bounded) every row, half the time of a client-level scan. It is the row count, from
    the metadata or Σ min(size, B): the same release, for the same seed, as the streamed
    count, and no pass over score or label for it."""

    from fedeval.sketches.client_count import ExampleCountSketch

    s, y, c = _data(6000, 40)
    d = _write_parts(tmp_path, s, y, c)
    model = (
        fe.DistributedDP(1.0)
        if bound is None
        else fe.DistributedDP(1.0, unit="client", contribution_bound=bound)
    )
    passes = _recorded_passes(monkeypatch)
    fast = fe.evaluate(fe.scan(d, client="client", batch_size=700), model, rng=5)
    assert passes.count(["score", "label", "client"]) + passes.count(["score", "label"]) == 1
    monkeypatch.setattr(ExampleCountSketch, "counts_rows", False)
    streamed = fe.evaluate(fe.scan(d, client="client", batch_size=700), model, rng=5)
    assert fast.plan is not None and streamed.plan is not None
    assert fast.parameters["height"] == streamed.parameters["height"]
    assert _levels_equal(fast, streamed)


def test_parquet_pages_are_streamed_unless_the_caller_set_scan_options(tmp_path: Path) -> None:
    """Default Parquet scan options are replaced by streamed pages (no pre-buffered row
    group); options a caller set on their own dataset are kept, and the release is the same."""
    from fedeval.data.scan import _streamed_parquet

    s, y, c = _data()
    (tmp_path / "pq").mkdir()
    (tmp_path / "csv").mkdir()
    d = _write_parts(tmp_path / "pq", s, y, c)
    frag = next(iter(pads.dataset(d).get_fragments()))
    (opts,) = _streamed_parquet(frag).values()
    assert opts.pre_buffer is False
    custom = pads.ParquetFragmentScanOptions(use_buffered_stream=True, buffer_size=1 << 12)
    fmt = pads.ParquetFileFormat(default_fragment_scan_options=custom)
    own = pads.dataset(d, format=fmt)
    assert _streamed_parquet(next(iter(own.get_fragments()))) == {}
    csv = _write_parts(tmp_path / "csv", s, y, c, fmt="csv")
    assert _streamed_parquet(next(iter(pads.dataset(csv, format="csv").get_fragments()))) == {}
    a = fe.evaluate(fe.scan(own, client="client"), fe.DistributedDP(1.0), rng=4, height=6)
    b = fe.evaluate(fe.scan(d, client="client"), fe.DistributedDP(1.0), rng=4, height=6)
    assert _levels_equal(a, b)


def test_parquet_on_a_remote_filesystem_keeps_pre_buffering(tmp_path: Path) -> None:
    """Streamed pages are small reads: on a filesystem other than the local disk (S3,
    GCS, or any wrapper of them) pyarrow's coalesced pre-buffered reads are kept."""
    import pyarrow.fs as pafs

    from fedeval.data.scan import _streamed_parquet

    s, y, c = _data()
    d = _write_parts(tmp_path, s, y, c)
    wrapped = pafs.SubTreeFileSystem(str(d), pafs.LocalFileSystem())
    remote = pads.dataset("", filesystem=wrapped, format="parquet")
    assert _streamed_parquet(next(iter(remote.get_fragments()))) == {}
    a = fe.evaluate(fe.scan(remote, client="client"), fe.DistributedDP(1.0), rng=5, height=6)
    b = fe.evaluate(fe.scan(d, client="client"), fe.DistributedDP(1.0), rng=5, height=6)
    assert _levels_equal(a, b)
