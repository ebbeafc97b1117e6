"""T rounds of Poisson-sampled releases under one charge (federated multiclass calibration).

Each round samples every client independently with probability q (Poisson
sampling, :func:`fedeval.privacy.sampling.poisson_sample`), sums the sampled
clients' encodings of a sketch that may depend on the server's current state
(e.g. clipped parameter updates from the current scaler), and, under
user-level DP, adds Gaussian noise to the sum every round, also when nobody
was sampled. The whole procedure is accounted once (RDP over T rounds) and
charged once, before the first round draws anything.

References
----------
.. [1] Private federated multiclass post-hoc calibration, Algorithms 1–2, §4.3,
   Appendix B.1; McMahan et al., ICLR 2018 (DP-FedAvg).
"""

from __future__ import annotations

import numpy as np

from fedeval.aggregation.paths import bound_contributions
from fedeval.aggregation.release import Release, Reservation, charge, draw_from, in_value_units
from fedeval.data import Federation
from fedeval.privacy.ledger import BudgetLedger
from fedeval.privacy.mechanism_for import Mechanism, mechanism_for
from fedeval.privacy.models import PrivacyModel
from fedeval.privacy.sampling import poisson_sample
from fedeval.randomness import RNGLike, as_generator
from fedeval.sketches.base import Sketch

__all__ = ["Rounds"]


class Rounds:
    """A charged budget for ``rounds`` Poisson-sampled releases of one kind of sketch.

    Parameters
    ----------
    source : Federation
    sketch : Sketch
        Any sketch of the kind released every round; it fixes the sensitivity.
    privacy : SecureAggregation or UserLevelDP
    rounds : int
        T ≥ 1.
    sampling_rate : float
        q ∈ (0, 1].
    rng : int, Generator or None
        Source of the client sampling and of the noise.
    ledger : BudgetLedger, optional
        Charged once, here, for all rounds.
    reservation : Reservation, optional
        The rounds' mechanism, already charged by
        :func:`~fedeval.aggregation.reserve` together with other releases
        (then ``privacy``, ``rounds``, ``sampling_rate`` and ``ledger`` are
        taken from it and must not be given).

    Raises
    ------
    BudgetExceededError
        The ledger cannot afford the rounds (nothing is released).
    """

    def __init__(
        self,
        source: Federation,
        sketch: Sketch,
        privacy: PrivacyModel | None = None,
        *,
        rounds: int | None = None,
        sampling_rate: float | None = None,
        rng: RNGLike = None,
        ledger: BudgetLedger | None = None,
        reservation: Reservation | None = None,
    ) -> None:
        self.source = source
        if reservation is not None:
            if privacy is not None or rounds is not None or sampling_rate is not None:
                raise TypeError("a reservation already fixes the model, rounds and sampling rate")
            self.mechanism: Mechanism = reservation.claim(sketch)
        else:
            if privacy is None or rounds is None or sampling_rate is None:
                raise TypeError("Rounds needs privacy, rounds and sampling_rate, or a reservation")
            self.mechanism = mechanism_for(
                privacy,
                sketch,
                n_clients=source.n_clients,
                rounds=rounds,
                sampling_rate=sampling_rate,
            )
            charge(ledger, [self.mechanism])
        self._gen = as_generator(rng)
        self.mechanism = draw_from(self.mechanism, self._gen, ledger)
        if self.mechanism.contribution_bound is not None:
            # Client-level DP with a contribution bound: every client keeps at most B
            # random examples, once, for all rounds (the sensitivity charged assumes it).
            bounded = bound_contributions(source, self.mechanism.contribution_bound, self._gen)
            assert isinstance(bounded, Federation)
            self.source = bounded
        self.rounds_done = 0
        self.participations = 0

    @property
    def rounds(self) -> int:
        return self.mechanism.rounds

    @property
    def private(self) -> bool:
        return not self.mechanism.exact

    def release(self, sketch: Sketch) -> Release:
        """Run the next round: sample clients, sum their encodings of ``sketch``, add noise.

        Returns
        -------
        Release
            ``n_clients`` is the number of clients sampled this round.

        Raises
        ------
        ValueError
            All rounds were used, or the sketch's sensitivity differs from the
            one the budget was charged for.
        """
        if self.rounds_done >= self.rounds:
            raise ValueError(f"all {self.rounds} charged rounds were used")
        mech = self.mechanism
        charged = mech.sensitivity
        if charged is not None:
            now = sketch.sensitivity(
                unit=charged.unit,
                neighbouring=charged.neighbouring,
                examples_per_unit=charged.examples_per_unit,
                layout=mech.layout,
            )
            if now.as_dict() != charged.as_dict():
                raise ValueError("this round's sketch has another sensitivity than the charged one")
        chosen = poisson_sample(self.source.n_clients, mech.sampling_rate, self._gen)
        self.rounds_done += 1
        self.participations += int(chosen.size)
        if chosen.size:
            total = np.asarray(sketch.encode_clients(self.source, chosen), dtype=np.float64)
        else:
            total = np.zeros(sketch.length)
        variance = np.zeros(sketch.length)
        if mech.noise is not None:
            # Noise shares (distributed DP: one round of every client) come from the clients
            # whose encodings are summed; the server's Gaussian ignores the count.
            received = int(chosen.size)
            total = total + sketch.noise_to_values(
                mech.noise.total(sketch.noise_size, self._gen, received)
            )
            variance = np.broadcast_to(
                np.asarray(mech.noise.variance(received), dtype=np.float64), (sketch.length,)
            ).copy()
        total, variance = in_value_units(sketch, total, variance)
        return Release(sketch, total, variance, mech.receipt, int(chosen.size), "fast")
