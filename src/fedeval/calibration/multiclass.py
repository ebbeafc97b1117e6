"""What every federated multiclass calibrator shares: inputs, conversions, the base class.

The privacy side (clipping, the Gaussian noise of every round, the RDP
accounting of T Poisson-subsampled rounds) is not here: the sketches clip
(:mod:`fedeval.sketches.class_histograms`, :mod:`fedeval.sketches.scaler_updates`),
:func:`fedeval.privacy.mechanism_for.mechanism_for` calibrates the noise and
:class:`fedeval.aggregation.Rounds` adds it and charges the budget once.

Every calibrator carries the receipt of its rounds (``receipt``, see
:class:`~fedeval.calibration.base.Calibrator`) and the facts of the procedure
that a reader needs to interpret it (``procedure``: rounds, sampling rate,
clipping norms, noise standard deviations; public facts only, never a count
taken from the data).

References
----------
.. [1] Private federated multiclass post-hoc calibration (the multiclass paper),
   §4.3 and Appendix B.1 (Lemma B.7), Appendix B.2 (DP-FedAvg).
.. [2] H. B. McMahan, D. Ramage, K. Talwar and L. Zhang, "Learning differentially
   private recurrent language models", ICLR 2018 (DP-FedAvg).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from fedeval.calibration.base import Calibrator
from fedeval.data import Federation
from fedeval.validation import check_int_at_least, check_probability

if TYPE_CHECKING:
    from fedeval.aggregation import Rounds

__all__ = [
    "MulticlassCalibrator",
    "check_multiclass_scores",
    "check_procedure",
    "procedure_record",
    "softmax",
    "to_logits",
    "to_probabilities",
]


_PROBA_TOLERANCE = 1e-6
_LOG_FLOOR = 1e-300


def check_multiclass_scores(scores: Any, n_classes: int, kind: str) -> NDArray[np.float64]:
    """Validate (n, c) logits or probabilities at a public boundary.

    Raises
    ------
    TypeError
        Non-numeric input.
    ValueError
        Wrong shape, NaN/inf, or (for ``kind="probabilities"``) entries outside
        [0, 1] or rows not summing to 1 within 1e-6.
    """
    arr = np.asarray(scores)
    if arr.dtype.kind not in "fiu":
        raise TypeError(f"scores must be a numeric (n, c) array, got dtype {arr.dtype}")
    if arr.ndim != 2 or arr.shape[1] != n_classes:
        raise ValueError(
            f"scores must have shape (n, {n_classes}) for this {n_classes}-class calibrator, "
            f"got {arr.shape}"
        )
    x = arr.astype(np.float64, copy=False)
    finite = np.isfinite(x).all(axis=1)
    if not finite.all():
        raise ValueError(
            f"{kind} contain NaN or inf (first at row {int(np.flatnonzero(~finite)[0])})"
        )
    if kind == "probabilities":
        if x.size and ((x < 0).any() or (x > 1).any()):
            raise ValueError(
                "probabilities must lie in [0, 1]; this calibrator was fitted on probabilities"
            )
        err = np.abs(x.sum(axis=1) - 1.0)
        if err.size and (err > _PROBA_TOLERANCE).any():
            row = int(np.argmax(err))
            raise ValueError(
                f"probability rows must sum to 1 within {_PROBA_TOLERANCE:g} "
                f"(row {row} sums to {x[row].sum():.6g})"
            )
    return x


def softmax(logits: NDArray[np.float64]) -> NDArray[np.float64]:
    """Row-wise softmax, shifted by the row maximum so that nothing overflows."""
    z = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(z)
    return np.asarray(e / e.sum(axis=1, keepdims=True), dtype=np.float64)


def to_probabilities(scores: NDArray[np.float64], kind: str) -> NDArray[np.float64]:
    """Probabilities from validated scores (softmax of logits)."""
    return softmax(scores) if kind == "logits" else scores


def to_logits(scores: NDArray[np.float64], kind: str) -> NDArray[np.float64]:
    """Logits from validated scores: log-probabilities (floored at 1e-300) for probabilities."""
    return scores if kind == "logits" else np.log(np.maximum(scores, _LOG_FLOOR))


@dataclass(frozen=True)
class MulticlassCalibrator(Calibrator):
    """Base of the federated multiclass calibrators: carries the privacy spent.

    Attributes
    ----------
    n_classes : int
        c, the number of classes the calibrator maps.
    input_kind : {"probabilities", "logits"}
        What :meth:`predict_proba` expects, as declared by the federation it was
        fitted on. Binning calibrators apply a softmax to logits; scaling
        calibrators take log-probabilities of probability inputs.
    procedure : dict
        Facts of the procedure: rounds, sampling rate, what each round
        released, clipping norms, per-coordinate noise standard deviations
        and, for DP-FedAvg, where the population size came from. Public facts
        and released (noisy) values only: no exact count of clients,
        participations or examples.
        A plain dict so that it survives
        :meth:`~fedeval.calibration.base.Calibrator.to_json`.
    """

    n_classes: int = field(kw_only=True)
    input_kind: str = field(kw_only=True)
    procedure: dict[str, Any] = field(default_factory=dict, kw_only=True)

    def _check_input(self, scores: Any) -> NDArray[np.float64]:
        """Validate an (n, c) array of logits or probabilities (as declared at fit time)."""
        return check_multiclass_scores(scores, self.n_classes, self.input_kind)

    def _probabilities(self, scores: Any) -> NDArray[np.float64]:
        return to_probabilities(self._check_input(scores), self.input_kind)

    def _logits(self, scores: Any) -> NDArray[np.float64]:
        return to_logits(self._check_input(scores), self.input_kind)


def check_procedure(fed: Any, rounds: Any, sampling_rate: Any) -> tuple[int, float]:
    """Validate the inputs every federated multiclass procedure shares.

    Which privacy models a procedure accepts is decided by the dispatch
    (:func:`fedeval.privacy.mechanism_for.mechanism_for`) from the sketch's
    declared sensitivity, not here.

    Raises
    ------
    TypeError
        ``fed`` is not a Federation, ``rounds`` is not an integer.
    ValueError
        ``fed`` is binary, its scores are NaN/inf or its labels lie outside
        0..c-1; T < 1; p outside (0, 1].
    """
    if not isinstance(fed, Federation):
        raise TypeError(f"fed must be a fedeval.Federation, got {type(fed).__name__}")
    if fed.kind not in ("probabilities", "logits"):
        raise ValueError(
            f"multiclass calibration needs a federation of kind 'probabilities' or 'logits', "
            f"got kind={fed.kind!r}"
        )
    # Federation's constructor trusts its inputs, so re-check what the maths relies on.
    check_multiclass_scores(fed.scores, fed.n_classes, fed.kind)
    c = fed.n_classes
    bad = (fed.labels < 0) | (fed.labels >= c)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"labels must lie in 0..{c - 1}; index {i} has {fed.labels[i]!r}")
    t = check_int_at_least(rounds, 1, name="rounds")
    p = check_probability(sampling_rate, name="sampling_rate")
    return t, p


def procedure_record(
    schedule: Rounds,
    release: str,
    *,
    variance: NDArray[np.float64] | None = None,
    clip: float | tuple[float, float] | None = None,
) -> dict[str, Any]:
    """The facts of a rounds-based procedure, JSON-able, for ``MulticlassCalibrator.procedure``.

    Only public facts: the rounds T, the sampling rate q, what each round
    released, the clipping norm(s) and the per-part noise standard deviation
    of one round's sum, in the released values' units (from a
    :class:`~fedeval.aggregation.Release`'s ``variance``; 0 without DP). No
    count taken from the data (clients, participations, examples) is
    recorded: under user-level DP the number of clients is what add/remove of
    a client changes, and at q = 1 the participations would be exactly T
    times it.

    Parameters
    ----------
    schedule : Rounds
    release : str
        What each round released, in words.
    variance : ndarray, optional
        Per-coordinate noise variance of one round's release.
    clip : float or (float, float), optional
        The clipping norm(s) of user-level DP (public).
    """
    mech = schedule.mechanism
    rec: dict[str, Any] = {
        "rounds": schedule.rounds,
        "sampling_rate": mech.sampling_rate,
        "release": release,
    }
    if clip is not None:
        rec["clip"] = list(clip) if isinstance(clip, tuple) else float(clip)
    sens = mech.sensitivity
    if sens is not None and variance is not None:
        var = np.asarray(variance, dtype=np.float64)
        start = 0
        stds: dict[str, float] = {}
        for part in sens.parts:
            stds[part.name] = float(np.sqrt(var[start])) if part.length else 0.0
            start += part.length
        rec["noise_std"] = stds
    return rec
