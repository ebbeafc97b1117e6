"""Federated data: who holds which examples, and where it comes from.

* :class:`Federation` — columnar scores, labels and client ids, grouped by client.
* :func:`read` — a CSV or Parquet file into a Federation.
* :mod:`~fedeval.data.partition` — spread examples over simulated clients.
* :mod:`~fedeval.data.demo` — the built-in demo data.
"""

from __future__ import annotations

from fedeval.data import demo, partition
from fedeval.data.federation import ClientView, Federation, ScoreKind
from fedeval.data.readers import read

__all__ = ["ClientView", "Federation", "ScoreKind", "demo", "partition", "read"]
