"""User-level DP for federated multiclass calibration: clipping, noise, accounting.

Every federated calibration round releases one sum over the sampled clients.
Under :class:`~fedeval.privacy.models.UserLevelDP` each client first bounds its
own contribution by L2 clipping, the server adds Gaussian noise to the securely
aggregated sum, and the T rounds of Poisson-subsampled Gaussian releases are
accounted with Rényi DP by dp-accounting (through
:mod:`fedeval.privacy.accounting`).

This module also holds the privacy record every multiclass calibrator carries
(:class:`PrivacyRecord`, stored as a plain dict so it survives the JSON round
trip) and the small base class :class:`MulticlassCalibrator`.

References
----------
.. [1] Private federated multiclass post-hoc calibration (the multiclass paper),
   §4.3 and Appendix B.1 (Lemma B.7), Appendix B.2 (DP-FedAvg).
.. [2] H. B. McMahan, D. Ramage, K. Talwar and L. Zhang, "Learning differentially
   private recurrent language models", ICLR 2018 (DP-FedAvg: clip each client's
   update to norm C, noise N(0, (zC)²) on the sum, fixed denominator qK).
.. [3] I. Mironov, K. Talwar and L. Zhang, "Rényi differential privacy of the
   sampled Gaussian mechanism", 2019.
"""

from __future__ import annotations

import functools
import logging
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fedeval.calibration.base import Calibrator
from fedeval.privacy.accounting import calibrate_noise_multiplier, gaussian_rounds_epsilon
from fedeval.privacy.guarantee import Guarantee
from fedeval.privacy.ledger import LedgerEntry
from fedeval.privacy.models import SecureAggregation, UserLevelDP
from fedeval.validation import check_int_at_least, check_probability

__all__ = [
    "MulticlassCalibrator",
    "NoisePlan",
    "check_multiclass_scores",
    "check_procedure",
    "clip_l2",
    "clip_rows_l2",
    "plan_noise",
    "poisson_sample",
    "privacy_record",
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


def clip_l2(vector: NDArray[np.float64], clip: float) -> NDArray[np.float64]:
    """Scale ``vector`` down so that its L2 norm is at most ``clip``.

    Parameters
    ----------
    vector : ndarray of float
        Any shape; the norm is taken over all entries.
    clip : float
        C > 0 (trusted: validated by the privacy model).

    Returns
    -------
    ndarray
        ``vector * min(1, C / ||vector||_2)`` (a new array).
    """
    norm = float(np.sqrt(np.sum(np.square(vector))))
    if norm <= clip:
        return np.array(vector, dtype=np.float64, copy=True)
    return np.asarray(vector, dtype=np.float64) * (clip / norm)


def clip_rows_l2(matrix: NDArray[np.float64], clip: float) -> NDArray[np.float64]:
    """Clip every row of a 2-D array (one histogram per row) to L2 norm ``clip``."""
    m = np.asarray(matrix, dtype=np.float64)
    norms = np.sqrt(np.sum(np.square(m), axis=-1, keepdims=True))
    scale = np.minimum(1.0, clip / np.maximum(norms, np.finfo(np.float64).tiny))
    return m * scale


@dataclass(frozen=True)
class NoisePlan:
    """How much Gaussian noise each round's aggregate gets, and what it buys.

    Attributes
    ----------
    noise_multiplier : float
        z: the noise standard deviation over the L2 sensitivity of one round's
        (normalised) sum; 0 under secure aggregation alone.
    epsilon, delta : float
        The (ε, δ) the T rounds spend (ε = inf, δ = 0 without DP). ε is
        recomputed from z by dp-accounting, so it is at most the model's ε.
    rounds : int
    sampling_rate : float
    """

    noise_multiplier: float
    epsilon: float
    delta: float
    rounds: int
    sampling_rate: float

    @property
    def is_private(self) -> bool:
        return self.noise_multiplier > 0.0


def plan_noise(
    privacy: SecureAggregation | UserLevelDP, *, rounds: int, sampling_rate: float
) -> NoisePlan:
    """The noise multiplier meeting ``privacy``'s (ε, δ) over ``rounds`` rounds.

    The smallest z for which T-fold composition of the Poisson-subsampled
    (rate p) Gaussian mechanism with noise multiplier z is (ε, δ)-DP under
    RDP accounting (dp-accounting 0.6 via
    :func:`fedeval.privacy.accounting.calibrate_noise_multiplier`).

    Notes
    -----
    The paper (Lemma B.7) accounts with zCDP, σ = C·sqrt(T/(2ρ)), and mentions
    RDP subsampling amplification for p < 1 (Appendix B.1). We use RDP with
    amplification throughout: for p = 1 it agrees with zCDP to within the
    conversion's slack, and for p < 1 it needs less noise for the same (ε, δ).

    References
    ----------
    .. [1] Multiclass paper, Appendix B.1, Lemma B.7.
    .. [2] Mironov, Talwar & Zhang (2019).
    """
    if isinstance(privacy, SecureAggregation):
        return NoisePlan(0.0, math.inf, 0.0, rounds, sampling_rate)
    z, eps = _calibrated(privacy.epsilon, privacy.delta, rounds, sampling_rate)
    return NoisePlan(z, eps, privacy.delta, rounds, sampling_rate)


@functools.lru_cache(maxsize=256)
def _calibrated(
    epsilon: float, delta: float, rounds: int, sampling_rate: float
) -> tuple[float, float]:
    # A pure function of public parameters, and the bisection costs seconds: cache it.
    # dp-accounting logs a warning for every RDP order whose series does not
    # converge (it then drops that order, which only loosens ε): silence that.
    absl_logger = logging.getLogger("absl")
    level = absl_logger.level
    absl_logger.setLevel(logging.ERROR)
    try:
        z = calibrate_noise_multiplier(epsilon, delta, rounds, sampling_rate)
        eps = gaussian_rounds_epsilon(z, rounds, sampling_rate, delta)
    finally:
        absl_logger.setLevel(level)
    return z, eps


def privacy_record(
    privacy: SecureAggregation | UserLevelDP,
    plan: NoisePlan,
    *,
    release: str,
    l2_sensitivity: float | None = None,
    noise_std: dict[str, float] | None = None,
) -> dict[str, Any]:
    """The JSON-able description of what a federated calibration spent.

    Parameters
    ----------
    privacy : SecureAggregation or UserLevelDP
    plan : NoisePlan
    release : str
        What each round released (e.g. "2c clipped histograms").
    l2_sensitivity : float, optional
        Per-round L2 sensitivity of the released sum (user-level).
    noise_std : dict, optional
        Per-coordinate noise standard deviations of one round's sum.
    """
    rec: dict[str, Any] = {
        "model": "userdp" if isinstance(privacy, UserLevelDP) else "sa",
        "unit": "client" if isinstance(privacy, UserLevelDP) else "none",
        "epsilon": None if not plan.is_private else float(plan.epsilon),
        "delta": float(plan.delta),
        "rounds": int(plan.rounds),
        "sampling_rate": float(plan.sampling_rate),
        "noise_multiplier": float(plan.noise_multiplier),
        "release": release,
        "accountant": "RDP, Poisson-subsampled Gaussian (dp-accounting 0.6)"
        if plan.is_private
        else "none",
    }
    if isinstance(privacy, UserLevelDP):
        clip = privacy.clip
        rec["clip"] = list(clip) if isinstance(clip, tuple) else float(clip)
    if l2_sensitivity is not None:
        rec["l2_sensitivity"] = float(l2_sensitivity)
    if noise_std is not None:
        rec["noise_std"] = {k: float(v) for k, v in noise_std.items()}
    return rec


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
    privacy : dict
        Built by :func:`privacy_record`: model ("sa" or "userdp"), ε (None when
        no DP), δ, rounds, sampling rate, noise multiplier, clipping norms and
        what each round released. Kept as a plain dict so that it survives
        :meth:`~fedeval.calibration.base.Calibrator.to_json`.
    """

    n_classes: int = field(kw_only=True)
    input_kind: str = field(kw_only=True)
    privacy: dict[str, Any] = field(default_factory=dict, kw_only=True)

    def _check_input(self, scores: Any) -> NDArray[np.float64]:
        """Validate an (n, c) array of logits or probabilities (as declared at fit time)."""
        return check_multiclass_scores(scores, self.n_classes, self.input_kind)

    def _probabilities(self, scores: Any) -> NDArray[np.float64]:
        return to_probabilities(self._check_input(scores), self.input_kind)

    def _logits(self, scores: Any) -> NDArray[np.float64]:
        return to_logits(self._check_input(scores), self.input_kind)

    @property
    def epsilon_spent(self) -> float:
        """ε charged (the user-level guarantee's ε): 0 under secure aggregation,
        which charges no budget and gives no DP guarantee (as ``Evaluation.epsilon_spent``)."""
        eps = self.privacy.get("epsilon")
        return 0.0 if eps is None else float(eps)

    @property
    def delta_spent(self) -> float:
        return float(self.privacy.get("delta", 0.0))

    @property
    def guarantee(self) -> Guarantee:
        """The (ε, δ) user-level guarantee of the procedure that built this calibrator."""
        if self.privacy.get("model") != "userdp":
            return Guarantee(
                math.inf,
                0.0,
                "none",
                "secure aggregation only: exact sums of client contributions, no DP",
            )
        return Guarantee(
            self.epsilon_spent,
            self.delta_spent,
            "client",
            (
                f"{self.privacy['rounds']} rounds of Poisson-subsampled (rate "
                f"{self.privacy['sampling_rate']:.3g}) Gaussian releases of "
                f"{self.privacy['release']}, noise multiplier "
                f"{self.privacy['noise_multiplier']:.4g}, clip {self.privacy.get('clip')}, "
                "RDP accounting (dp-accounting)"
            ),
        )

    def ledger_entry(self) -> LedgerEntry:
        """The whole federated calibration as one ledger entry (ε = 0 without DP)."""
        g = self.guarantee
        eps = 0.0 if math.isinf(g.epsilon) else g.epsilon
        return LedgerEntry(
            f"federated multiclass calibration ({self.kind})",
            eps,
            g.delta,
            g.unit,
            dict(self.privacy),
        )


def poisson_sample(
    n_clients: int, sampling_rate: float, rng: np.random.Generator
) -> NDArray[np.intp]:
    """Indices of the clients taking part in one round: each independently with probability p.

    Poisson sampling is what the subsampled-Gaussian accountant assumes, so the
    number of participants varies from round to round (it may be 0; a DP round
    then releases pure noise, a non-DP round changes nothing).

    References
    ----------
    .. [1] Multiclass paper, Algorithms 1 and 2 ("Server samples participants
       with probability p").
    """
    if sampling_rate >= 1.0:
        return np.arange(n_clients)
    return np.flatnonzero(rng.random(n_clients) < sampling_rate)


def check_procedure(
    fed: Any, privacy: Any, rounds: Any, sampling_rate: Any
) -> tuple[SecureAggregation | UserLevelDP, int, float]:
    """Validate the inputs every federated multiclass procedure shares.

    Raises
    ------
    TypeError
        ``fed`` is not a Federation, ``privacy`` is not SecureAggregation or
        UserLevelDP, ``rounds`` is not an integer.
    ValueError
        ``fed`` is binary, its scores are NaN/inf or its labels lie outside
        0..c-1; T < 1; p outside (0, 1].
    """
    from fedeval.data import Federation

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
    if not isinstance(privacy, SecureAggregation | UserLevelDP):
        raise TypeError(
            "privacy must be SecureAggregation() or UserLevelDP(epsilon, delta, clip) for "
            f"multiclass calibration, got {type(privacy).__name__}"
        )
    t = check_int_at_least(rounds, 1, name="rounds")
    p = check_probability(sampling_rate, name="sampling_rate")
    return privacy, t, p
