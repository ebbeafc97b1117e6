"""fe.scan on Dask: per-partition sketches on the workers of a LocalCluster, noise on the driver."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

import fedeval as fe  # noqa: E402
from fedeval.aggregation import release  # noqa: E402
from fedeval.aggregation.paths import bound_contributions  # noqa: E402
from fedeval.sketches.hierarchy import HierarchySketch, HierarchySpec  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def _data(n: int = 8000, n_clients: int = 60) -> tuple[Any, Any, Any]:
    rng = np.random.default_rng(21)
    s = rng.beta(2, 5, n)
    y = (rng.random(n) < s).astype(np.int8)
    c = rng.integers(0, n_clients, n)
    return s, y, c


def _partitioned(tmp: Path, s: Any, y: Any, c: Any, parts: int = 4) -> Path:
    """Rows spread over files in order, so every client has rows in every partition."""
    d = tmp / "lake"
    d.mkdir()
    bounds = np.linspace(0, s.size, parts + 1).astype(int)
    for k in range(parts):
        sl = slice(bounds[k], bounds[k + 1])
        pq.write_table(
            pa.table({"score": s[sl], "label": y[sl], "client": c[sl]}), d / f"p{k}.parquet"
        )
    return d


def test_dask_partitions_release_what_memory_releases(client: Any, tmp_path: Path) -> None:
    """Under SA the released histograms are identical; under DistDP (fast path, same rng)
    the noise is drawn once on the driver from the same generator, so they are identical
    too, which implies the same distribution."""
    s, y, c = _data()
    d = _partitioned(tmp_path, s, y, c)
    ddf = dd.read_parquet(str(d))
    assert ddf.npartitions >= 2
    src = fe.scan(ddf)
    assert src.engine == "dask"
    fed = fe.Federation.from_arrays(s, y)
    for privacy in (fe.SecureAggregation(), fe.DistributedDP(1.0)):
        a = fe.evaluate(src, privacy, rng=5, height=6)
        b = fe.evaluate(fed, privacy, rng=5, height=6)
        for p, q in zip(a.tree.levels, b.tree.levels, strict=True):
            np.testing.assert_array_equal(p, q)
    # a path is read through Dask while a client is active
    assert fe.scan(d).engine == "dask"
    sketch = HierarchySketch(HierarchySpec(5))
    np.testing.assert_array_equal(
        release(fe.scan(d), sketch, fe.SecureAggregation()).values,
        release(fed, sketch, fe.SecureAggregation()).values,
    )


@pytest.mark.statistical
def test_dask_distdp_noise_has_the_in_memory_distribution(client: Any, tmp_path: Path) -> None:
    """Released minus exact counts over seeds: mean 0, variance 2a/(1-a)^2 per node.

    Discrete Laplace with a = exp(-ε/(h·Δ)), ε = 1, h = 2 levels, Δ = 1 per level:
    a = e^-0.5, variance 2a/(1-a)^2 ≈ 7.85. With 2 classes × 6 nodes × 40 seeds =
    480 draws, the sample variance has relative sd ≈ sqrt((2 + excess kurtosis)/480)
    < 0.1, so a 35% band is over 3.5 sd.
    """
    s, y, c = _data(3000)
    d = _partitioned(tmp_path, s, y, c)
    src = fe.scan(dd.read_parquet(str(d)))
    sketch = HierarchySketch(HierarchySpec(2))
    exact = release(fe.Federation.from_arrays(s, y), sketch, fe.SecureAggregation())
    exact_levels = HierarchySketch(HierarchySpec(2)).spec.encode_levels(s, y)
    diffs = np.concatenate(
        [
            release(src, sketch, fe.DistributedDP(1.0), rng=seed).values - exact_levels
            for seed in range(40)
        ]
    )
    a = np.exp(-0.5)
    var = 2 * a / (1 - a) ** 2
    assert exact.values.sum() > 0
    assert abs(diffs.mean()) < 4 * np.sqrt(var / diffs.size)
    assert abs(diffs.var() / var - 1) < 0.35


def test_dask_client_bound_holds_across_partitions(client: Any, tmp_path: Path) -> None:
    """Every client has rows in every partition; after the bound each keeps exactly B rows."""
    s, y, c = _data(8000, 40)  # about 200 rows per client, spread over 4 files
    d = _partitioned(tmp_path, s, y, c)
    src = fe.scan(dd.read_parquet(str(d)), client="client")
    fed = fe.Federation.from_arrays(s, y, c)
    bound = 30
    bounded = bound_contributions(src, bound, np.random.default_rng(0))
    assert bounded is not src
    kept = bounded.source.compute()  # type: ignore[union-attr]
    sizes = kept["client"].value_counts()
    assert len(sizes) == fed.n_clients
    assert (sizes == bound).all()  # every client exceeds B, so each keeps exactly B
    # The kept rows are a subset of each client's rows.
    merged = kept.merge(
        fed_frame(s, y, c), on=["score", "label", "client"], how="left", indicator=True
    )
    assert (merged["_merge"] == "both").all()
    # Released through evaluate: the hierarchy counts B rows per client.
    # Through evaluate: the released total counts B rows per client. ε = 50 over
    # h = 3 levels with Δ = B = 30 per level: discrete Laplace a = exp(-50/90),
    # sd ≈ 2.1 per node, so the total (2 classes at level 1: 4 nodes) has sd < 5.
    ev = fe.evaluate(
        src, fe.DistributedDP(50.0, unit="client", contribution_bound=bound), rng=1, height=3
    )
    assert abs(ev.tree.totals().sum() - bound * fed.n_clients) < 30


def fed_frame(s: Any, y: Any, c: Any) -> Any:
    import pandas as pd

    return pd.DataFrame({"score": s, "label": y, "client": c})


def test_dask_encoding_is_one_pass_unless_rows_are_the_clients(
    client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An encoder that does not read clients (the hierarchy) costs one pass over the
    partitions: no partition lengths first. One that reads the row number as the client
    (clients assigned to levels, no client column) needs them, and its release equals the
    in-memory one for the same seed."""
    s, y, c = _data()
    d = _partitioned(tmp_path, s, y, c)
    ddf = dd.read_parquet(str(d))
    fed = fe.Federation.from_arrays(s, y)
    frame_type = type(ddf)
    lengths = frame_type.map_partitions

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a pass over the partitions' lengths")

    monkeypatch.setattr(frame_type, "map_partitions", refuse)
    a = fe.evaluate(fe.scan(ddf), fe.DistributedDP(1.0), rng=3, height=5)
    b = fe.evaluate(fed, fe.DistributedDP(1.0), rng=3, height=5)
    for p, q in zip(a.tree.levels, b.tree.levels, strict=True):
        np.testing.assert_array_equal(p, q)
    monkeypatch.setattr(frame_type, "map_partitions", lengths)
    # Assigning clients to levels needs replace neighbours (issue 24: under add/remove the
    # number of clients per level is not public).
    kw: dict[str, Any] = {"rng": 3, "height": 5, "level_budget": "assign"}
    model = fe.DistributedDP(1.0, neighbouring="replace")
    a = fe.evaluate(fe.scan(ddf), model, **kw)
    b = fe.evaluate(fed, model, **kw)
    for p, q in zip(a.tree.levels, b.tree.levels, strict=True):
        np.testing.assert_array_equal(p, q)


def _levels_equal(a: Any, b: Any) -> bool:
    return all(np.array_equal(p, q) for p, q in zip(a.tree.levels, b.tree.levels, strict=True))


def test_dask_parquet_is_read_by_pyarrow_on_workers_and_counted_from_metadata(
    client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 28: a Dask frame that is read_parquet of local files costs one pass. The
    planning count comes from the footers (no Len computed), every partition is read by
    pyarrow on a worker (not Dask's partitions), and the evaluation, no height given (the
    planning count, then the hierarchy), releases exactly what the in-process scan of the
    same files releases for the same seed. The row-number client index (clients assigned
    to levels) takes its partition offsets from the footers too."""
    import sys

    import pyarrow.dataset as pads

    scan_module = sys.modules["fedeval.data.scan"]
    s, y, c = _data(9000)
    d = tmp_path / "lake"
    d.mkdir()
    bounds = [0, 2500, 6000, 9000]
    for k in range(3):  # row groups of up to 1000 rows: 10 ragged partitions
        sl = slice(bounds[k], bounds[k + 1])
        pq.write_table(
            pa.table({"score": s[sl], "label": y[sl], "client": c[sl]}),
            d / f"p{k}.parquet",
            row_group_size=1000,
        )
    ddf = dd.read_parquet(str(d), split_row_groups=True)
    assert ddf.npartitions == 10
    local = pads.dataset(str(d))  # the in-process (arrow) engine, even with a client active
    frame_type = type(ddf)

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the data went through Dask's own partitions or a Len")

    monkeypatch.setattr(frame_type, "to_delayed", refuse)
    monkeypatch.setattr(frame_type, "map_partitions", refuse)
    monkeypatch.setattr(frame_type, "shape", property(refuse))
    monkeypatch.setattr(scan_module, "_encode_partition", refuse)
    src = fe.scan(ddf)
    assert src.n_examples == 9000
    for model, kw in (
        (fe.DistributedDP(1.0), {}),
        (fe.SecureAggregation(), {}),
        (fe.DistributedDP(1.0, neighbouring="replace"), {"height": 5, "level_budget": "assign"}),
    ):
        a = fe.evaluate(fe.scan(ddf), model, rng=5, **kw)
        b = fe.evaluate(fe.scan(local), model, rng=5, **kw)
        assert fe.scan(local).engine == "arrow"
        assert a.parameters["height"] == b.parameters["height"]
        assert _levels_equal(a, b)
    # a selection of partitions is still read directly, and counted from the footers
    part = fe.scan(ddf.partitions[[1, 4]])
    assert part.n_examples == 2000
    # with a client column: the same release as the in-process scan (ids read on workers)
    sketch = HierarchySketch(HierarchySpec(4))
    np.testing.assert_array_equal(
        release(fe.scan(ddf, client="client"), sketch, fe.DistributedDP(1.0), rng=2).values,
        release(fe.scan(local, client="client"), sketch, fe.DistributedDP(1.0), rng=2).values,
    )


def test_dask_frames_not_read_from_parquet_files_keep_dasks_partitions(
    client: Any, tmp_path: Path
) -> None:
    """The fallback: a frame with a computed step (a filter, in the reader or not, a frame
    from pandas) is encoded from Dask's own partitions, and still releases what the
    in-memory federation releases for the same seed."""
    import pandas as pd

    s, y, c = _data(6000)
    d = _partitioned(tmp_path, s, y, c)
    fed = fe.Federation.from_arrays(s, y)
    ddf = dd.read_parquet(str(d))
    frames = [
        ddf[ddf["score"] >= 0.0],
        dd.read_parquet(str(d), filters=[("score", ">=", 0.0)]),
        dd.from_pandas(pd.DataFrame({"score": s, "label": y}), npartitions=3),
    ]
    from fedeval.data.scan import _dask_parquet_pieces

    for frame in frames:
        src = fe.scan(frame)
        assert _dask_parquet_pieces(src) is None
        for model in (fe.DistributedDP(1.0), fe.SecureAggregation()):
            a = fe.evaluate(src, model, rng=9)
            b = fe.evaluate(fed, model, rng=9)
            assert a.parameters["height"] == b.parameters["height"]
            assert _levels_equal(a, b)


def test_dask_parquet_errors_name_the_partition_and_file(client: Any, tmp_path: Path) -> None:
    s, y, c = _data(3000)
    s[2100] = np.nan
    d = _partitioned(tmp_path, s, y, c, parts=3)
    with pytest.raises(ValueError, match=r"partition 2 \(.*p2\.parquet\) at row 100"):
        fe.evaluate(fe.scan(dd.read_parquet(str(d))), fe.SecureAggregation(), height=3)


def test_a_dask_client_bound_counts_its_rows_without_the_shuffle(
    client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Σ min(size, B) is the bounded scan's row count: the planning count under a client
    bound reads no rows past the client column's one pass (no shuffle, no Len)."""
    s, y, c = _data(8000, 40)
    d = _partitioned(tmp_path, s, y, c)
    src = fe.scan(dd.read_parquet(str(d)), client="client")
    sizes = src.client_sizes
    bounded = bound_contributions(src, 150, np.random.default_rng(0))
    monkeypatch.setattr(type(bounded.source), "shape", property(lambda self: 1 / 0))
    assert bounded.n_examples == int(np.minimum(sizes, 150).sum())
    np.testing.assert_array_equal(bounded.client_sizes, np.minimum(sizes, 150))
