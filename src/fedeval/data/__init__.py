"""Federated data: who holds which examples, and where it comes from.

* :class:`Federation` — columnar scores, labels and client ids (grouped lazily).
* :func:`read` — a CSV or Parquet file into a Federation (in memory).
* :func:`scan` — a lazy, streamed (pyarrow) or distributed (Dask) source.
* :mod:`~fedeval.data.partition` — spread examples over simulated clients.
* :mod:`~fedeval.data.demo` — the built-in demo data.
"""

from __future__ import annotations

from fedeval.data import demo, partition
from fedeval.data.federation import ClientView, Federation, ScoreKind
from fedeval.data.readers import read
from fedeval.data.scan import Scan, scan

__all__ = ["ClientView", "Federation", "Scan", "ScoreKind", "demo", "partition", "read", "scan"]
