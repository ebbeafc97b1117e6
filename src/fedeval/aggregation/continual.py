"""Continual release: a sketch summed every period, every coordinate through one continual mechanism.

The budget of all T periods is charged once, up front, through
:func:`~fedeval.aggregation.reserve` (before any noise of any period is drawn);
every period then adds its clients' exact encoding to the running sums of the
strategy's rows that read it, and publishes the rows that close at that period
with fresh noise (:mod:`fedeval.privacy.mechanisms.continual` for the
strategies and their estimators).

Trust model (distributed DP)
----------------------------
The running sums are the secure aggregator's state; the server never sees an
exact per-period sum, nor any partial sum of a row:

* **Who holds the running sums.** Every row i of R is a sum Σ_s R[i, s] x_s
  over the periods it reads. It is accumulated inside the secure aggregation
  (as additive secret shares held by non-colluding servers, as in
  :mod:`fedeval.aggregation.secret_sharing`, or as masked sums whose masks
  cancel only over the row's periods): each period's clients add their
  encoding, times R[i, s], to every open row that reads their period.
* **Who adds the noise.** The clients of the period at which a row closes each
  add one noise share to it (Pólya shares summing to discrete Laplace, or
  Skellam shares), calibrated to the reconstruction threshold as for one
  release; the aggregator reveals the row only once the shares are in.
  The server sees the noisy closed rows and nothing else.
* **What is simulated.** On the fast path (the only one here) the exact
  encoding of the period and the summed noise of each closing row are drawn
  directly, exact in distribution: a sum of shares calibrated to the real
  threshold f·n is Pólya(1/f) whatever n, so the noise does not depend on how
  many clients a period has, and the number is not an input.

Under central DP the trusted curator keeps the running sums and adds the
noise itself; under secure aggregation alone the rows are exact.

Cost per period: O(L · k_t) to add the period's vector to the k_t rows that
read it (⌊log₂ T⌋ + 1 for the tree, 1 per period, up to T − t + 1 for the
factorization) and O(L · r_t) noise for the r_t rows that close, L the
sketch's length; plus encoding the period's examples, as for one release.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fedeval.aggregation.release import Release, Reservation, draw_from, reserve
from fedeval.data import Federation, Scan
from fedeval.privacy.ledger import BudgetLedger
from fedeval.privacy.mechanism_for import Mechanism
from fedeval.privacy.mechanisms.continual import ContinualStrategy
from fedeval.privacy.models import PrivacyModel
from fedeval.privacy.sampling import contribution_mask
from fedeval.randomness import RNGLike, as_generator
from fedeval.sketches.base import Sketch
from fedeval.sketches.continual import PeriodicSketch

__all__ = [
    "ContinualRelease",
    "PeriodRelease",
    "check_continual_model",
    "continual_reservation",
    "nominal_contributors",
    "periodic_sketch",
]


def nominal_contributors(privacy: PrivacyModel) -> int:
    """The number of noise shares the fast path draws a closing row's noise as.

    Shares calibrated to the real threshold f·n sum to Pólya(1/f) for every
    n ≥ 1/f (:func:`~fedeval.privacy.mechanism_for.mechanism_for`), so any such
    n gives the deployed distribution; the smallest is used. 1 without dropouts.
    """
    f = float(getattr(privacy, "min_clients_fraction", 1.0) or 1.0)
    return max(1, math.ceil(1.0 / f - 1e-12))


def periodic_sketch(period: Sketch, strategy: ContinualStrategy) -> PeriodicSketch:
    """The per-period sketch with the sensitivity of ``strategy`` over its horizon."""
    return PeriodicSketch(
        period,
        strategy.horizon,
        strategy.column_l1,
        strategy.column_l2,
        strategy.n_rows,
        strategy.describe(),
    )


@dataclass(frozen=True, eq=False)
class PeriodRelease:
    """What one period published: the noisy rows of the strategy that closed at its end.

    Attributes
    ----------
    period : int
        1-based.
    rows : ndarray of intp
        Indices of the strategy's rows published now.
    values : ndarray of int64, shape (len(rows), sketch length)
        Their noisy values, in the strategy's (fixed-point) units.
    """

    period: int
    rows: NDArray[np.intp]
    values: NDArray[np.int64]


class ContinualRelease:
    """A charged continual mechanism: ``strategy`` applied to every coordinate of ``sketch``.

    Parameters
    ----------
    sketch : Sketch
        What each period's clients encode (linear).
    strategy : ContinualStrategy
        Rows, release periods and estimator.
    privacy : privacy model, optional
        Required unless ``reservation`` is given: the guarantee of the whole
        horizon (ε once for all T periods).
    rng : int, Generator or None
        Source of the noise and of the clients' subsampling.
    ledger : BudgetLedger, optional
        Charged here, once, for all periods (through
        :func:`~fedeval.aggregation.reserve`), before any noise is drawn.
    reservation : Reservation, optional
        The mechanism of :func:`continual_reservation`, already charged.
    scope : str, optional
        What the guarantee covers, for the receipt (default: the ledger's, or
        this continual release alone).

    Raises
    ------
    BudgetExceededError
        The ledger cannot afford the horizon (nothing is charged).
    TypeError
        A model without additive noise on sums (local DP, label DP,
        user-level DP): it has no continual form here.

    Notes
    -----
    Privacy: one mechanism over the horizon; its noise is calibrated to the
    sensitivity of :class:`~fedeval.sketches.continual.PeriodicSketch` (the
    per-period sensitivity times the strategy's largest column norm), so the
    transcript of every row of every period is (ε, δ)-DP for the model's unit.
    """

    def __init__(
        self,
        sketch: Sketch,
        strategy: ContinualStrategy,
        privacy: PrivacyModel | None = None,
        *,
        rng: RNGLike = None,
        ledger: BudgetLedger | None = None,
        reservation: Reservation | None = None,
        scope: str | None = None,
    ) -> None:
        if not sketch.linear:
            raise TypeError(f"a continual release needs a linear sketch; the {sketch.name} is not")
        self.sketch = sketch
        self.strategy = strategy
        self.periodic = periodic_sketch(sketch, strategy)
        if reservation is None:
            if privacy is None:
                raise TypeError("ContinualRelease needs a privacy model or a reservation")
            reservation = continual_reservation(ledger, privacy, sketch, strategy)
        mech = reservation.claim(self.periodic)
        _check_placement(mech)
        self._gen = as_generator(rng)
        mech = draw_from(mech, self._gen, ledger)
        if scope is not None:
            mech = replace(mech, scope=scope)
        if not mech.exact:
            g = mech.guarantee
            mech = replace(
                mech,
                guarantee=replace(
                    g,
                    statement=f"{g.statement}; continual release over {strategy.horizon} "
                    f"periods by the {strategy.describe()}: ε is charged once for the whole "
                    "horizon, every row of every period included",
                ),
            )
        self.mechanism: Mechanism = mech
        self._n_shares = nominal_contributors(mech.model)
        self._open: dict[int, NDArray[np.int64]] = {}
        self._rows: list[NDArray[np.int64]] = []
        self._used: dict[object, int] = {}
        self.periods_done = 0

    # --------------------------------------------------------------- reading
    @property
    def horizon(self) -> int:
        return self.strategy.horizon

    @property
    def row_variance(self) -> float:
        """Noise variance of one coordinate of one row, in the strategy's units (0 if exact)."""
        noise = self.mechanism.noise
        if noise is None:
            return 0.0
        return float(np.mean(noise.variance(self._n_shares)))

    @property
    def transcript(self) -> NDArray[np.int64]:
        """Every row published so far, shape (rows, sketch length), in publication order."""
        if not self._rows:
            return np.zeros((0, self.sketch.length), dtype=np.int64)
        out = np.vstack(self._rows)
        out.flags.writeable = False
        return out

    # -------------------------------------------------------------- updating
    def update(self, source: Federation | Scan | None) -> PeriodRelease:
        """Add the next period's clients and publish the rows that close now.

        Parameters
        ----------
        source : Federation, Scan or None
            The period's clients; None for a period without any (its rows are
            published all the same, with their noise).

        Returns
        -------
        PeriodRelease

        Raises
        ------
        ValueError
            Every period of the horizon was already released.
        TypeError
            ``source`` is not a Federation, a Scan or None.
        """
        if self.periods_done >= self.horizon:
            raise ValueError(f"all {self.horizon} periods of the horizon were released")
        if source is not None and not isinstance(source, Federation | Scan):
            raise TypeError(
                f"a period's data must be a Federation, a Scan or None, got {type(source).__name__}"
            )
        t = self.periods_done + 1
        x = self._encode(source) if source is not None else None
        for i in self.strategy.rows_reading(t):
            acc = self._open.get(int(i))
            if acc is None:
                acc = np.zeros(self.sketch.length, dtype=np.int64)
                self._open[int(i)] = acc
            if x is not None:
                acc += int(self.strategy.matrix[i, t - 1]) * x
        rows = self.strategy.rows_released_at(t)
        out = np.empty((rows.size, self.sketch.length), dtype=np.int64)
        noise = self.mechanism.noise
        drawn = (
            None
            if noise is None or rows.size == 0
            else np.asarray(
                noise.total(rows.size * self.sketch.length, self._gen, self._n_shares),
                dtype=np.int64,
            ).reshape(rows.size, -1)
        )
        for k, i in enumerate(rows):
            acc = self._open.pop(int(i), None)
            out[k] = 0 if acc is None else acc
            if drawn is not None:
                out[k] += drawn[k]
        self._rows.append(out)
        self.periods_done = t
        return PeriodRelease(t, rows, out)

    def _encode(self, source: Federation | Scan) -> NDArray[np.int64]:
        """The period's exact summed encoding (inside the secure aggregation), clients bounded."""
        mech = self.mechanism
        bound = mech.contribution_bound
        if bound is not None and mech.guarantee.unit == "client":
            source = self._bound_over_horizon(source, bound)
        elif bound is not None:
            from fedeval.aggregation.paths import bound_contributions

            source = bound_contributions(source, bound, self._gen)
        if isinstance(source, Scan):
            encoder: Any = self.sketch.encode  # batch by batch, as the fast path of a release
            vec = source.encode(encoder, length=self.sketch.length, integer=True)
        else:
            vec = self.sketch.encode_clients(source)
        return np.asarray(vec, dtype=np.int64)

    def _bound_over_horizon(self, source: Federation | Scan, bound: int) -> Federation:
        """Every client keeps at most what remains of its bound for the horizon, at random.

        Each client counts its own contributions on its device (simulated
        here by the client's id): a client whose examples over all periods
        reach ``bound`` contributes nothing more.
        """
        fed = source.to_federation() if isinstance(source, Scan) else source
        ids = fed.client_ids
        remaining = np.array(
            [max(bound - self._used.get(_key(c), 0), 0) for c in ids], dtype=np.int64
        )
        keep = contribution_mask(fed.client_index, fed.offsets, remaining, self._gen)
        kept = np.bincount(fed.client_index[keep], minlength=fed.n_clients)
        for c, k in zip(ids, kept, strict=True):
            if k:
                self._used[_key(c)] = self._used.get(_key(c), 0) + int(k)
        return fed.keep_rows(keep)

    # ------------------------------------------------------------- estimates
    def weights(self, start: int, stop: int, t_now: int | None = None) -> NDArray[np.float64]:
        """Row weights of the estimate of periods start+1..stop (see the strategy)."""
        now = self.periods_done if t_now is None else int(t_now)
        return self.strategy.query_weights(now, start, stop)

    def estimate(self, start: int, stop: int) -> Release:
        """The period sketch's estimate of the sum of periods start+1..stop, from every row so far.

        Post-processing of the published rows (no privacy cost). Every
        coordinate's noise is independent of the others' with the same
        variance ‖u‖² σ² (u the query's row weights), which is what the period
        sketch's decoder assumes of a release; ``n_clients`` is 0 (the
        estimate pools periods whose participants are not public).

        Raises
        ------
        ValueError
            No period released yet, or a window outside 1..(periods released).
        """
        if self.periods_done == 0:
            raise ValueError("no period has been released yet")
        u = self.weights(start, stop)
        values = u @ self.transcript[: u.size].astype(np.float64)
        variance = np.full(self.sketch.length, float(u @ u) * self.row_variance)
        return Release(
            self.sketch,
            np.asarray(values, dtype=np.float64),
            variance,
            self.mechanism.receipt,
            0,
            "fast",
        )

    def covariance(self, a: tuple[int, int], b: tuple[int, int]) -> float:
        """Noise covariance of one coordinate's estimates of two windows (start, stop)."""
        ua = self.weights(*a)
        ub = self.weights(*b)
        return float(ua @ ub) * self.row_variance


_NO_CONTINUAL = (
    "has no continual release here: it needs noise added to sums (DistributedDP or "
    "CentralDP), or exact sums (SecureAggregation)"
)


def _check_placement(mech: Mechanism) -> None:
    if mech.placement not in ("none", "shares", "aggregator"):
        raise TypeError(f"{mech.model.describe()} {_NO_CONTINUAL}")


def check_continual_model(privacy: PrivacyModel, sketch: Sketch) -> None:
    """Raise TypeError unless ``privacy`` can release ``sketch`` continually (no charge, no noise)."""
    from fedeval.privacy.mechanism_for import mechanism_for
    from fedeval.privacy.mechanisms.continual import continual_strategy

    probe = periodic_sketch(sketch, continual_strategy("per-period", 1))
    try:
        mech = mechanism_for(privacy, probe, n_clients=nominal_contributors(privacy))
    except TypeError as exc:
        describe = getattr(privacy, "describe", lambda: type(privacy).__name__)
        raise TypeError(f"{describe()} {_NO_CONTINUAL} ({exc})") from exc
    _check_placement(mech)


def continual_reservation(
    ledger: BudgetLedger | None,
    privacy: PrivacyModel,
    sketch: Sketch,
    strategy: ContinualStrategy,
) -> Reservation:
    """Charge the whole horizon of ``strategy`` on ``sketch`` (before any noise), once."""
    [res] = reserve(
        ledger,
        [(privacy, periodic_sketch(sketch, strategy))],
        n_clients=nominal_contributors(privacy),
    )
    return res


def _key(client_id: object) -> object:
    return client_id.item() if isinstance(client_id, np.generic) else client_id
