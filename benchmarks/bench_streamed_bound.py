"""Benchmark: where the time of a client-level bound on a streamed scan goes (issue 28).

Issue 28 asks ``fe.scan`` with a client column and a binding client-level
contribution bound for ≤ 3× a pyarrow batch scan of the same columns
(``bench_scale.py --cases f`` measures that row). This benchmark takes that
row apart, so that what would move it is measured rather than guessed.

On the Parquet data of case (f) (``--rows`` rows, ``--clients`` client ids
spread over 3 files), interleaved over ``--rounds`` rounds (best of each):

* ``pyarrow floor``: a batch scan of score, label and client that bins and
  counts every batch (bench_scale's floor);
* ``bounded``: ``fe.evaluate(fe.scan(...), DistributedDP(1, unit="client",
  contribution_bound=B))`` with every metric, wall and CPU time (all threads);
* ``bounded, decisions free``: the same with
  :class:`fedeval.aggregation.streamed_bound.StreamedBound`'s decisions
  replaced by "keep every other row" (about the share the bound keeps, so the
  encoding after it does the same work). Not a valid release: it shows what
  faster decisions alone could give (the grouping of each batch, in the reader
  thread, still runs);
* for one ``bounded`` run: the time spent in the first pass
  (``Scan._clients``), in ``StreamedBound.prepare`` (the grouping sort of every
  batch, reader thread) and in ``StreamedBound.__call__`` (the decisions, main
  thread), wall time inside each call.

Then in memory, the same ``--rows`` ids over ``--clients`` clients in batches
of 2^20 rows (CPU time, one thread):

* ``numpy``: ``prepare`` then the decisions, batch after batch (what the scan
  runs, its two halves on two threads);
* ``compiled``, only where numba is importable (it is not a dependency of
  fedeval): the same law (Knuth's Algorithm S, one 32-bit word per row,
  Lemire's exact rejection) decided row by row in stream order by one compiled
  loop, which needs no grouping at all. It keeps other rows than the numpy
  path for a seed (the words meet the rows in another order), but every client
  keeps exactly min(size, B) rows in both, which is checked.

The last two rows are what a compiled dependency would buy; the "decisions
free" row is what it would not.

Run: ``PYTHONPATH=src .venv/bin/python benchmarks/bench_streamed_bound.py
[--rows 30000000] [--clients 3000000] [--bound 5] [--rounds 3] [--dir DIR]``
(``--dir``: where the Parquet files go; a directory that already holds them
is reused and kept, else they are written there, or under /tmp, and deleted).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import importlib
import os
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_scale

import fedeval as fe
from fedeval.aggregation import streamed_bound
from fedeval.privacy.sampling import raw_words

BATCH = 1 << 20


def bounded_run(path: Path, bound: int, heights: list[int]) -> Callable[[], None]:
    """The bounded evaluation; appends the height it planned to ``heights``."""

    def run() -> None:
        src = fe.scan(path, client="client", progress=False)
        privacy = fe.DistributedDP(1.0, unit="client", contribution_bound=bound)
        ev = fe.evaluate(src, privacy, rng=0)
        bench_scale.all_metrics(ev)
        heights.append(int(ev.parameters["height"]))

    return run


def decisions_free(run: Callable[[], None]) -> Callable[[], None]:
    """``run`` with the bound's decisions replaced by "every other row" (timing, not a release).

    Every other row is about the share a bound of 5 keeps of clients of ~10 rows
    (0.496 of the rows here), so the encoding after the decisions does the same work.
    """
    original = streamed_bound.StreamedBound.__call__

    def keep_half(self: Any, batch: Any) -> np.ndarray:
        b = batch if isinstance(batch, streamed_bound._Grouped) else self.prepare(batch)
        keep = np.zeros(b.n_rows, dtype=bool)
        keep[::2] = True
        return keep

    def patched() -> None:
        streamed_bound.StreamedBound.__call__ = keep_half  # type: ignore[method-assign]
        try:
            run()
        finally:
            streamed_bound.StreamedBound.__call__ = original  # type: ignore[method-assign]

    return patched


def breakdown(run: Callable[[], None]) -> dict[str, float]:
    """Seconds inside the first pass, the grouping (reader) and the decisions (main), one run."""
    scan_module = importlib.import_module("fedeval.data.scan")
    spent: dict[str, float] = collections.defaultdict(float)
    targets = [
        (scan_module.Scan, "_clients", "first pass (client column, sizes)"),
        (streamed_bound.StreamedBound, "prepare", "grouping of each batch (reader thread)"),
        (streamed_bound.StreamedBound, "__call__", "decisions (main thread)"),
    ]
    originals = [(owner, name, getattr(owner, name)) for owner, name, _ in targets]

    def timed(fn: Callable[..., Any], label: str) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[label] += time.perf_counter() - t0

        return wrapper

    for (owner, name, label), (_, _, fn) in zip(targets, originals, strict=True):
        setattr(owner, name, timed(fn, label))
    try:
        t0 = time.perf_counter()
        run()
        spent["whole evaluation"] = time.perf_counter() - t0
    finally:
        for owner, name, fn in originals:
            setattr(owner, name, fn)
    return dict(spent)


def numpy_batches(ids: np.ndarray, sizes: np.ndarray, bound: int) -> np.ndarray:
    """Kept rows of the numpy path, batch after batch (``prepare`` then the decisions)."""
    bounder = streamed_bound.StreamedBound(sizes, bound, 0)
    return np.concatenate(
        [bounder(bounder.prepare(ids[lo : lo + BATCH])) for lo in range(0, ids.size, BATCH)]
    )


def compiled_kernel() -> Callable[..., int] | None:
    """Algorithm S row by row in one compiled loop, or None without numba.

    Returns ``decide(clients, words, state, keep, start, shift, slots)``: decides
    rows ``start..`` in order, writes ``keep`` and the packed states; returns the
    number of rows, or the row whose word Lemire's rejection refuses (draw it
    again and call from there), or ``-1 - row`` for a client with no row left.
    """
    try:
        numba = importlib.import_module("numba")
    except ImportError:
        return None

    @numba.njit(nogil=True)  # type: ignore[misc]
    def decide(clients, words, state, keep, start, shift, slots):  # type: ignore[no-untyped-def]
        # StreamedBound's packed 32-bit states (u rows unseen, s slots left); s = 0 and
        # s = u need no branch of their own: the comparison decides them with certainty.
        sh = np.uint32(shift)
        mask = np.uint32(slots)
        one = np.uint32(1) << sh
        low_bits = np.uint64(0xFFFFFFFF)
        for i in range(start, clients.shape[0]):
            c = clients[i]
            st = state[c]
            u = st >> sh
            if u == 0:
                return -1 - i
            m = np.uint64(words[i]) * np.uint64(u)
            low = m & low_bits
            # Lemire's rejection: only a low half below u can fall below 2^32 mod u
            if low < np.uint64(u) and low < (np.uint64(1) << np.uint64(32)) % np.uint64(u):
                return i
            k = np.uint32((m >> np.uint64(32)) < np.uint64(st & mask))
            keep[i] = k != 0
            state[c] = st - one - k
        return clients.shape[0]

    return decide  # type: ignore[no-any-return]


def compiled_batches(
    decide: Callable[..., int], ids: np.ndarray, sizes: np.ndarray, bound: int
) -> np.ndarray:
    """Kept rows of the compiled loop, batch after batch (words drawn as the numpy path does)."""
    template = streamed_bound.StreamedBound(sizes, bound, 0)
    if template.state.dtype != np.uint32:
        raise ValueError("the compiled loop here handles 32-bit states only")
    state, shift, slots = template.state.copy(), template.shift, int(template.slots)
    gen = np.random.default_rng(0)
    out = np.empty(ids.size, dtype=bool)
    for lo in range(0, ids.size, BATCH):
        clients = ids[lo : lo + BATCH]
        n = clients.size
        words = raw_words(gen, (n + 1) // 2).view(np.uint32)[:n]  # a fresh array: writable
        keep = out[lo : lo + n]
        row = 0
        while True:
            row = decide(clients, words, state, keep, row, shift, slots)
            if row == n:
                break
            if row < 0:
                raise ValueError("a client has more rows than counted")
            words[row] = raw_words(gen, 1).view(np.uint32)[0]
    return out


def elapsed(step: Callable[[], Any], clock: Callable[[], float]) -> float:
    t0 = clock()
    step()
    return clock() - t0


def interleaved(steps: dict[str, Callable[[], Any]], rounds: int) -> dict[str, list[float]]:
    """Wall and CPU seconds of every step, each round running every step once, in turn."""
    for fn in steps.values():
        fn()  # warm: imports, compilation, the page cache
    times: dict[str, list[float]] = {f"{k} {c}": [] for k in steps for c in ("wall", "cpu")}
    for _ in range(rounds):
        for name, fn in steps.items():
            w0, c0 = time.perf_counter(), time.process_time()
            fn()
            times[f"{name} wall"].append(time.perf_counter() - w0)
            times[f"{name} cpu"].append(time.process_time() - c0)
    return times


@contextlib.contextmanager
def data_dir(args: argparse.Namespace) -> Iterator[Path]:
    if args.dir is not None and any(Path(args.dir).glob("*.parquet")):
        yield Path(args.dir)
        return
    root = Path(args.dir) if args.dir is not None else Path(tempfile.mkdtemp(prefix="fedeval-"))
    path = root / "bounded"
    t0 = time.perf_counter()
    bench_scale.write_parquet(path, args.rows, files=3, n_clients=args.clients)
    print(
        f"wrote {args.rows:,} rows ({args.clients:,} clients) in {time.perf_counter() - t0:.1f} s"
    )
    try:
        yield path
    finally:
        shutil.rmtree(path)
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=30_000_000)
    ap.add_argument("--clients", type=int, default=3_000_000)
    ap.add_argument("--bound", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    warnings.simplefilter("ignore", fe.SeededRandomnessWarning)  # a benchmark: seeded noise
    print(f"load average before: {os.getloadavg()}")
    with data_dir(args) as path:
        heights: list[int] = []
        run = bounded_run(path, args.bound, heights)
        run()  # warm, and the height the floor's bincount uses
        steps = {
            "pyarrow floor": bench_scale.pyarrow_floor(
                path, ["score", "label", "client"], heights[-1]
            ),
            "bounded": run,
            "bounded, decisions free": decisions_free(run),
        }
        times = interleaved(steps, args.rounds)
        floor = min(times["pyarrow floor wall"])
        print(f"\nscan of {args.rows:,} rows, {args.clients:,} clients, bound {args.bound}")
        print(f"{'step':28s} {'wall s (rounds)':>26s} {'best':>7s} {'/floor':>7s} {'cpu s':>7s}")
        for name in steps:
            wall, cpu = times[f"{name} wall"], times[f"{name} cpu"]
            rounds = " ".join(f"{t:.2f}" for t in wall)
            print(
                f"{name:28s} {rounds:>26s} {min(wall):7.2f} {min(wall) / floor:6.2f}x "
                f"{min(cpu):7.2f}"
            )
        ratio = min(times["bounded wall"]) / floor
        at_size = (args.rows, args.clients) == (30_000_000, 3_000_000)
        print(
            f"target ≤ 3× the pyarrow floor, client-level bound: {ratio:.2f}× "
            + (
                f"({'PASS' if ratio <= 3 else 'FAIL'})"
                if at_size
                else "(set at 30M rows, 3M clients)"
            )
        )
        gain = max(min(times["bounded wall"]) - min(times["bounded, decisions free wall"]), 0.0)
        print(f"at most {gain:.2f} s of the bounded run is the decisions' (their cost made 0)")
        print("\none bounded run, seconds inside (wall, per thread):")
        for label, seconds in breakdown(run).items():
            print(f"  {label:42s} {seconds:6.2f}")

    gen = np.random.default_rng(1)
    ids = gen.integers(0, args.clients, args.rows)
    sizes = np.bincount(ids, minlength=args.clients)
    expected = np.minimum(sizes, args.bound)
    in_memory: dict[str, Callable[[], np.ndarray]] = {
        "numpy (prepare + decisions)": lambda: numpy_batches(ids, sizes, args.bound)
    }
    decide = compiled_kernel()
    if decide is not None:
        in_memory["compiled loop (numba)"] = lambda: compiled_batches(
            decide, ids, sizes, args.bound
        )
    print(f"\nin memory: {args.rows:,} ids over {args.clients:,} clients, batches of {BATCH:,}")
    cpu: dict[str, float] = {}
    for name, fn in in_memory.items():
        keep = fn()  # warm (compiles the loop) and check the law's invariant
        assert np.array_equal(np.bincount(ids[keep], minlength=args.clients), expected), name
        cpu[name] = min(elapsed(fn, time.process_time) for _ in range(args.rounds))
    base = cpu["numpy (prepare + decisions)"]
    for name, seconds in cpu.items():
        print(f"  {name:32s} {seconds:6.2f} s CPU  {seconds / base:5.2f}x numpy")
    if decide is None:
        print("  compiled loop: numba is not importable here (not a fedeval dependency)")
    print(f"\nload average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
