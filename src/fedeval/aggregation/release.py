"""The release function: the only place where noise is added and budget charged.

::

    mech = mechanism_for(privacy, sketch, n_clients=...)   # the one dispatch (privacy/)
    ledger.charge_all(mech.ledger_entries)                  # always before any noise
    summed = federated sum on the fast or faithful path     # paths.py
    return Release(sketch, unbiased values, variance, receipt)

A :class:`Release` is what every private computation in fedeval starts from:
the decoded estimate is ``release.decode()`` (e.g. a hierarchical histogram),
and everything computed from it is post-processing.

Releases that split one budget over several sketches, where a later sketch
depends on an earlier release (the DP Hosmer–Lemeshow statistic), charge all
parts at once with :func:`reserve` and then release each with its
:class:`Reservation`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fedeval.aggregation.paths import (
    Path,
    as_float_in_place,
    bound_contributions,
    check_path,
    flip_federation_labels,
    local_reports,
    owned_int64,
    sum_vectors,
)
from fedeval.data import Federation, Scan
from fedeval.exceptions import SeededRandomnessWarning, warn_at_caller
from fedeval.privacy.ledger import BudgetExceededError, BudgetLedger
from fedeval.privacy.mechanism_for import Mechanism, mechanism_for
from fedeval.privacy.models import PrivacyModel
from fedeval.privacy.receipt import Receipt, ReceiptAccessors
from fedeval.privacy.sampling import assign_groups
from fedeval.privacy.sensitivity import Layout
from fedeval.randomness import RNGLike, as_generator, randomness_kind, randomness_statement
from fedeval.sketches.base import Sketch

__all__ = [
    "Release",
    "Reservation",
    "charge",
    "draw_from",
    "finish_reports",
    "finish_sum",
    "in_value_units",
    "release",
    "reserve",
]


@dataclass(frozen=True, eq=False)
class Release(ReceiptAccessors):
    """One private release of a sketch: unbiased values, their variance, and the receipt.

    Attributes
    ----------
    sketch : Sketch
        What was encoded; ``decode()`` is ``sketch.decode(self)``.
    values : ndarray of float64, shape (sketch.length,)
        An unbiased estimate of the sum, over the clients, of their encodings
        (local-DP reports debiased, assigned parts scaled to all clients), in
        the sketch's natural units: fixed-point encodings are multiplied back
        by ``sketch.resolution`` (:func:`in_value_units`).
    variance : ndarray of float64, shape (sketch.length,)
        Variance of every value from the known noise (0 without noise), in the
        same units.
    receipt : Receipt
        Guarantee, ledger entries, mechanism and sensitivity.
    n_clients : int
        Clients whose data is in the sum (public: they took part).
    path : str
        "fast", "faithful", or the transport that carried the sum ("flower").
    basis_variance : ndarray or None
        Variance of every noise variable when the noise has its own basis
        (such sketches count, resolution 1).
    clients_per_part : ndarray of int64 or None
        Layout "assign": clients that encoded each part.
    covariance : sparse matrix or None
        The full noise covariance when coordinates are correlated (randomized
        response on labels); None when ``variance`` says it all.
    sampling_variance : ndarray of float64 or None
        Layout "assign": the part of ``variance`` that comes from the random
        split of clients over the parts (each coordinate's own, as if the
        coordinates were sampled independently). The split's errors are
        correlated across coordinates and parts; a decoder that models that
        correlation (the hierarchy's
        :meth:`~fedeval.sketches.hierarchical_histogram.HierarchicalHistogram.joint_query_variance`)
        subtracts this diagonal and adds the exact form.
    """

    sketch: Sketch
    values: NDArray[np.float64]
    variance: NDArray[np.float64]
    receipt: Receipt
    n_clients: int
    path: str = "fast"
    basis_variance: NDArray[np.float64] | None = field(default=None, repr=False)
    clients_per_part: NDArray[np.int64] | None = field(default=None, repr=False)
    covariance: Any = field(default=None, repr=False)
    sampling_variance: NDArray[np.float64] | None = field(default=None, repr=False)

    @cached_property
    def decoded(self) -> Any:
        """``sketch.decode(self)``, computed once."""
        return self.sketch.decode(self)

    def decode(self) -> Any:
        """The sketch's estimate from this release (post-processing, no privacy cost)."""
        return self.decoded


@dataclass(eq=False)
class Reservation:
    """A mechanism whose budget is already charged, to be used by exactly one release."""

    mechanism: Mechanism
    sketch_name: str
    sensitivity: dict[str, Any]
    used: bool = False

    def claim(self, sketch: Sketch) -> Mechanism:
        """Hand out the mechanism once, for a sketch with the reserved sensitivity.

        Raises
        ------
        ValueError
            Already used, or the sketch is not the one the budget was reserved for.
        """
        if self.used:
            raise ValueError("this reservation was already used by a release")
        sens = self.mechanism.sensitivity
        if sketch.name != self.sketch_name or (
            sens is not None and _sensitivity_of(sketch, self.mechanism) != self.sensitivity
        ):
            raise ValueError(
                f"the reservation was made for a {self.sketch_name} with sensitivity "
                f"{self.sensitivity}; got a {sketch.name}"
            )
        self.used = True
        return self.mechanism


def _sensitivity_of(sketch: Sketch, mech: Mechanism) -> dict[str, Any]:
    s = mech.sensitivity
    assert s is not None
    return sketch.sensitivity(
        unit=s.unit,
        neighbouring=s.neighbouring,
        examples_per_unit=s.examples_per_unit,
        layout=mech.layout,
    ).as_dict()


def draw_from(
    mech: Mechanism, gen: np.random.Generator, ledger: BudgetLedger | None = None
) -> Mechanism:
    """The mechanism with its receipt saying where its random bits come from, and its scope.

    Every release that draws noise passes through here, right before it
    draws. A seeded generator under differential privacy warns
    (:class:`~fedeval.exceptions.SeededRandomnessWarning`): the noise is a
    function of the seed, so whoever knows the seed can subtract it.
    """
    if mech.exact:
        return mech if ledger is None or not ledger.scope else replace(mech, scope=ledger.scope)
    if randomness_kind(gen) == "seeded":
        warn_at_caller(
            "a differentially private release drew its noise from an integer seed: "
            "reproducible for simulation, but anyone who knows the seed can subtract the "
            "noise (its receipt says so); pass rng=None for fresh OS entropy",
            SeededRandomnessWarning,
        )
    scope = mech.scope if ledger is None or not ledger.scope else ledger.scope
    return replace(mech, randomness=randomness_statement(gen), scope=scope)


def charge(ledger: BudgetLedger | None, mechanisms: Sequence[Mechanism]) -> None:
    """Charge the mechanisms' entries atomically (before any noise is drawn).

    Without a ledger (a one-call release) the entries are checked against the
    models' own budgets, by basic composition of their standalone (ε, δ): a
    release never claims more than its model. With a ledger they are charged
    to its privacy filter.
    """
    entries = [e for m in mechanisms for e in m.ledger_entries]
    if not entries:
        return
    if ledger is not None:
        ledger.charge_all(entries)
        return
    eps = math.fsum(e.epsilon for e in entries)
    dlt = math.fsum(e.delta for e in entries)
    total_eps = math.fsum(float(m.model.epsilon) for m in mechanisms)
    total_delta = math.fsum(float(getattr(m.model, "delta", 0.0) or 0.0) for m in mechanisms)
    if eps > total_eps * (1 + 1e-9) + 1e-9 or dlt > total_delta * (1 + 1e-9) + 1e-15:
        raise BudgetExceededError(
            f"the release would state ε={eps:.4g}, δ={dlt:.3g}, more than its model's "
            f"ε={total_eps:.4g}, δ={total_delta:.3g}"
        )


def reserve(
    ledger: BudgetLedger | None,
    requests: Sequence[
        tuple[PrivacyModel, Sketch] | tuple[PrivacyModel, Sketch, Mapping[str, Any]]
    ],
    *,
    n_clients: int,
    layout: Layout | None = None,
) -> list[Reservation]:
    """Charge several releases at once, before any of them draws noise.

    The one way a procedure made of several releases (a count then rounds, a
    two-part statistic) spends its budget: all of it, atomically, here.

    Parameters
    ----------
    ledger : BudgetLedger or None
    requests : sequence of (privacy model, sketch[, options])
        Each sketch only needs to declare its sensitivity; its data-dependent
        parts (e.g. group boundaries, a scaler's current parameters) may be
        filled in later, as long as the sensitivity stays the same. The
        options (``rounds``, ``sampling_rate``) go to the dispatch: a request
        for T Poisson-sampled rounds is claimed by :class:`~fedeval.aggregation.Rounds`.
    n_clients : int

    Returns
    -------
    list of Reservation
        Pass each to :func:`release` (or :class:`~fedeval.aggregation.Rounds`)
        as ``reservation=``.
    """
    mechs = [
        mechanism_for(
            request[0],
            request[1],
            n_clients=n_clients,
            layout=layout,
            **(dict(request[2]) if len(request) > 2 else {}),
        )
        for request in requests
    ]
    charge(ledger, mechs)
    if ledger is not None and ledger.scope:
        mechs = [replace(m, scope=ledger.scope) for m in mechs]
    return [
        Reservation(
            m,
            sketch.name,
            {} if m.sensitivity is None else _sensitivity_of(sketch, m),
        )
        for m, (_, sketch, *_options) in zip(mechs, requests, strict=True)
    ]


def release(
    source: Federation | Scan,
    sketch: Sketch,
    privacy: PrivacyModel | None = None,
    *,
    path: Path = "fast",
    layout: Layout | None = None,
    rng: RNGLike = None,
    ledger: BudgetLedger | None = None,
    reservation: Reservation | None = None,
    min_received: int | None = None,
) -> Release:
    """Release ``sketch`` of the clients' data under ``privacy``.

    Parameters
    ----------
    source : Federation or Scan
        The clients and their examples, in memory or streamed
        (:func:`fedeval.scan`: a linear sketch on the fast path is encoded
        batch by batch, or partition by partition on Dask workers, and the
        noise is drawn once, here).
    sketch : Sketch
        What every client encodes.
    privacy : privacy model
        Required unless ``reservation`` is given.
    path : {"fast", "faithful"}
        Exact-in-distribution simulation, or every client's encoder and noise.
    layout : {"whole", "assign"}, optional
        See :func:`fedeval.privacy.mechanism_for.mechanism_for`.
    rng : int, Generator or None
        Source of every random draw of the release.
    ledger : BudgetLedger, optional
        Charged atomically before any noise is drawn; a refused charge raises
        and nothing is released. Default: a fresh ledger holding the model's budget.
    reservation : Reservation, optional
        A mechanism already charged by :func:`reserve`.
    min_received : int, optional
        Distributed DP: the reconstruction threshold of the secure sum.

    Returns
    -------
    Release

    Raises
    ------
    BudgetExceededError
        The ledger cannot afford the release (nothing is released).
    TypeError, ValueError
        A model the sketch cannot be released under, a bad path or layout.
    """
    if not isinstance(source, Federation | Scan):
        raise TypeError(f"source must be a Federation or a Scan, got {type(source).__name__}")
    check_path(path)
    gen = as_generator(rng)
    if reservation is not None:
        mech = reservation.claim(sketch)
    else:
        if privacy is None:
            raise TypeError("release() needs a privacy model or a reservation")
        if isinstance(source, Scan) and getattr(privacy, "contribution_bound", None) is not None:
            source.keep_ids_for_bound()  # before n_clients: its pass keeps the ids it reads
        mech = mechanism_for(
            privacy, sketch, n_clients=source.n_clients, layout=layout, min_received=min_received
        )
        charge(ledger, [mech])
    return run(source, sketch, draw_from(mech, gen, ledger), path=path, rng=gen)


def run(
    source: Federation | Scan,
    sketch: Sketch,
    mech: Mechanism,
    *,
    path: Path,
    rng: np.random.Generator,
) -> Release:
    """Run an already charged mechanism on the data (called by :func:`release` only)."""
    if mech.exact or mech.placement == "labels":
        # No additive noise (exact sums, or sums of randomized-response labels, a
        # function of discrete flips): the sketch need not be sent in fixed point.
        sketch = sketch.exact_variant()
    if isinstance(source, Scan) and (
        path == "faithful" or mech.placement == "labels" or not sketch.linear
    ):
        # Every client's own encoder, flipped labels, or a non-linear sketch: in memory.
        source = source.to_federation()
    fed = source
    if mech.contribution_bound is not None:
        fed = bound_contributions(fed, mech.contribution_bound, rng)
    n = fed.n_clients
    if mech.placement == "local":
        raw, n_reports, per_part = local_reports(fed, sketch, mech, path=path, rng=rng)
        return finish_reports(sketch, mech, raw, n_reports, per_part, path=path)
    if mech.placement == "labels":
        assert mech.flip_probability is not None and isinstance(fed, Federation)
        rho = mech.flip_probability
        flipped = flip_federation_labels(fed, rho, rng)
        noisy = np.asarray(sketch.encode_clients(flipped), dtype=np.float64)
        ones = np.asarray(
            sketch.encode(fed.scores, np.ones_like(fed.labels), fed.client_index), dtype=np.float64
        )
        values = (noisy - rho * ones) / (1.0 - 2.0 * rho)
        covariance = (
            rho * (1 - rho) / (1 - 2 * rho) ** 2 * sketch.label_gram(fed.scores, fed.client_index)
        )
        values, _ = in_value_units(sketch, values, np.zeros_like(values))
        # The covariance comes from the label coefficients in value units already.
        variance = np.asarray(covariance.diagonal(), dtype=np.float64)
        return Release(sketch, values, variance, mech.receipt, n, path, covariance=covariance)
    groups = assign_groups(n, len(sketch.parts), rng) if mech.layout == "assign" else None
    summed = sum_vectors(fed, sketch, mech, path=path, rng=rng, groups=groups)
    m_k = None if groups is None else np.bincount(groups, minlength=len(sketch.parts))
    return finish_sum(sketch, mech, summed, n, clients_per_part=m_k, path=path, owned=True)


# ---------------------------------------------------------------- server side
def finish_sum(
    sketch: Sketch,
    mech: Mechanism,
    summed: NDArray[Any],
    n_received: int,
    *,
    clients_per_part: NDArray[np.int64] | None = None,
    path: str = "fast",
    owned: bool = False,
) -> Release:
    """The release from a (noisy) sum of client vectors: what the server computes.

    Shared by the in-process paths and the Flower server. With fewer noise
    shares than the threshold the guarantee is the one that still holds
    (:meth:`~fedeval.privacy.mechanism_for.Mechanism.when_received`).

    ``owned=True`` says that ``summed`` is the caller's to give away (the
    in-process sum, which nothing else holds): it then becomes the release's
    values without a copy (:func:`_as_float`).
    """
    vec = np.asarray(summed)
    if vec.shape != (sketch.length,):
        raise ValueError(f"summed vector has shape {vec.shape}, expected ({sketch.length},)")
    mech = mech.when_received(n_received)
    values = _as_float(vec, owned=owned)
    basis_var: NDArray[np.float64] | None = None
    if mech.noise is None:
        variance = np.zeros(sketch.length)
    else:
        # One variance for every noise variable (the usual case) stays a read-only
        # broadcast view: no vector-sized array (134 MB at h = 22), and a write fails.
        basis_var = np.broadcast_to(
            np.asarray(mech.noise.variance(n_received), dtype=np.float64), (sketch.noise_size,)
        )
        variance = np.asarray(sketch.noise_to_variance(basis_var), dtype=np.float64)
    sampling = None
    if clients_per_part is not None:
        values, variance, sampling = _scale_assigned(sketch, values, variance, clients_per_part)
        sampling = in_value_units(sketch, sampling, sampling)[1]
    values, variance = in_value_units(sketch, values, variance)
    return Release(
        sketch,
        values,
        variance,
        mech.receipt,
        n_received,
        path,
        basis_var,
        None if clients_per_part is None else np.asarray(clients_per_part, dtype=np.int64),
        sampling_variance=sampling,
    )


def finish_reports(
    sketch: Sketch,
    mech: Mechanism,
    raw_by_part: Sequence[NDArray[np.int64]],
    n_reports_by_part: NDArray[np.int64],
    clients_by_part: NDArray[np.int64],
    *,
    path: str = "fast",
) -> Release:
    """The release from per-part sums of local-DP reports: what the server computes.

    Part k's debiased estimates count the examples of the m_k clients assigned
    to it; they are scaled by M/m_k (unbiased under the uniform split of
    clients), and each coordinate's variance is the oracle's variance (with
    the estimate plugged in for the unknown true count, clamped to what the
    part's one-hot reports can hold) times the scale², plus the sampling
    variance of the split.
    """
    n_clients = int(np.sum(clients_by_part))
    n_examples = int(np.sum(n_reports_by_part))
    values, variances, sampling = [], [], []
    for k, part in enumerate(sketch.parts):
        oracle = mech.oracle(part.length)
        n_k = int(n_reports_by_part[k])
        m = int(clients_by_part[k])
        scale = n_clients / max(m, 1)
        est = np.asarray(oracle.estimate(np.asarray(raw_by_part[k], dtype=np.int64), n_k))
        clamped = np.clip(est, 0, None)
        if clamped.sum() > n_k:  # one-hot reports: true counts sum to at most n_k
            clamped *= n_k / clamped.sum()
        plug_in = np.floor(clamped).astype(np.int64)
        if mech.oracle_kind == "rr" and plug_in.size:  # RR counts must account for every report
            plug_in[np.argmax(plug_in)] += n_k - int(plug_in.sum())
        noise_var = oracle.count_variance(plug_in, n_k)
        samp = sampling_variance(np.clip(est * scale, 0, None), m, n_clients, n_examples)
        values.append(est * scale)
        variances.append(noise_var * scale**2 + samp)
        sampling.append(samp)
    return Release(
        sketch,
        np.concatenate(values),
        np.concatenate(variances),
        mech.receipt,
        n_clients,
        path,
        None,
        np.asarray(clients_by_part, dtype=np.int64),
        sampling_variance=np.concatenate(sampling),
    )


def _as_float(vec: NDArray[Any], *, owned: bool) -> NDArray[np.float64]:
    """``vec`` as float64: a copy, or, when the caller gives it away, itself
    (already float64) or converted in its own memory (:func:`as_float_in_place`)."""
    if owned and vec.dtype == np.float64 and vec.flags.writeable:
        return vec  # e.g. sum_vectors' noisy sum, already float in the encoding's memory
    if owned and owned_int64(vec):
        return as_float_in_place(vec)
    return vec.astype(np.float64)


def in_value_units(
    sketch: Sketch, values: NDArray[np.float64], variance: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Summed integer units → the sketch's values: × resolution, variance × resolution².

    Every release passes through here, so a fixed-point sketch
    (:mod:`fedeval.sketches.fixed_point`) is decoded in its natural units.
    """
    res = np.asarray(sketch.resolution, dtype=np.float64)
    if res.ndim == 0 and float(res) == 1.0:
        return values, variance
    return values * res, variance * res**2


def _scale_assigned(
    sketch: Sketch,
    values: NDArray[np.float64],
    variance: NDArray[np.float64],
    clients_per_part: NDArray[np.int64],
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Layout "assign": scale part k by M/m_k and add the sampling variance of the split.

    Returns the scaled values, their variance, and the sampling part of it.
    """
    offsets = sketch.part_offsets()
    n_clients = int(np.sum(clients_per_part))
    n_parts = len(sketch.parts)
    # Every example adds 1 to its part (one-hot), so a part's scaled sum estimates n.
    n_examples_est = float(
        sum(
            values[offsets[k] : offsets[k + 1]].sum() * n_clients / max(int(clients_per_part[k]), 1)
            for k in range(n_parts)
        )
        / n_parts
    )
    out_v, out_var, out_samp = values.copy(), variance.copy(), np.zeros_like(variance)
    for k in range(n_parts):
        sl = slice(offsets[k], offsets[k + 1])
        m = int(clients_per_part[k])
        scale = n_clients / max(m, 1)
        est = values[sl] * scale
        out_v[sl] = est
        samp = sampling_variance(np.clip(est, 0, None), m, n_clients, max(n_examples_est, 1.0))
        out_var[sl] = variance[sl] * scale**2 + samp
        out_samp[sl] = samp
    return out_v, out_var, out_samp


def sampling_variance(
    count: NDArray[np.float64], m: int, n_clients: int, n_examples: float
) -> NDArray[np.float64]:
    """Variance of (M/m)·(count among m of M random clients), one example per client.

    Hypergeometric: Var = (M/m)² · m p(1-p) (M-m)/(M-1) with p = count/M. With
    several examples per client this treats examples as independent, an
    approximation stated in the docs.
    """
    if m >= n_clients or n_clients <= 1:
        return np.zeros_like(count)
    if m == 0:
        # No client encoded this part: its estimate (0) says nothing about a count that
        # lies in [0, n]; give it the largest variance such a count can have, n²/4, so
        # that later weighting (consistency) all but ignores it.
        return np.full(count.shape, max(n_examples, 1.0) ** 2 / 4.0, dtype=np.float64)
    scale = n_clients / m
    p = np.clip(count / max(n_examples, 1.0), 0.0, 1.0)
    n = max(n_examples, 1.0)
    frac = m / n_clients
    m_ex = n * frac
    return np.asarray(
        scale**2 * m_ex * p * (1 - p) * (n - m_ex) / max(n - 1.0, 1.0), dtype=np.float64
    )
