"""The one release pipeline: the only place noise is added and budget is charged.

:func:`release` turns a source of client data, a sketch and a privacy model into
a :class:`Release`: it asks :func:`fedeval.privacy.mechanism_for.mechanism_for`
for the mechanism, charges its ledger entries before any noise is drawn, sums
the clients' encodings on the fast or the faithful path (:mod:`.paths`) and
returns an unbiased estimate of the summed vector with its variance and receipt.
:mod:`.rounds` runs T rounds with Poisson sampling under one charge, and
:mod:`.secret_sharing` sums through several non-colluding servers.
"""

from __future__ import annotations

from fedeval.aggregation.paths import Path, client_reports, client_vector
from fedeval.aggregation.release import (
    Release,
    Reservation,
    finish_reports,
    finish_sum,
    release,
    reserve,
)
from fedeval.aggregation.rounds import Rounds

__all__ = [
    "Path",
    "Release",
    "Reservation",
    "Rounds",
    "client_reports",
    "client_vector",
    "finish_reports",
    "finish_sum",
    "release",
    "reserve",
]
