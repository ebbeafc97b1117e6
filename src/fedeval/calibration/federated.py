"""Federated multiclass calibration: one entry point over T rounds with client sampling.

:func:`calibrate_multiclass` runs one of the multiclass paper's procedures on a
multiclass :class:`~fedeval.data.Federation`:

| method | procedure | what a client sends per round |
|---|---|---|
| "binning" | FedBin (Algorithm 1, single histogram) | 2c histograms |
| "bbq" | FedBBQ (Algorithm 1, 2^M bins merged by powers of two) | 2c histograms of 2^M bins |
| "temperature" | federated Newton (default) or FedTemp (Algorithm 2) | [n, ΔL, gradient, Hessian] sums, or 1 parameter update |
| "vector" | federated Newton or FedVector (Algorithm 2) | sums, or 2c parameter updates |
| "matrix" | federated Newton or FedMatrix (Algorithm 2) | sums, or c² + c parameter updates |
| "op-vector" | federated Newton or FedOPVector (Algorithm 2 + order preservation) | sums, or 2c parameter updates |
| "fedcal" | FedCal's MLP scaler: federated L-BFGS (default) or FedAvg (baseline) | [n, ΔL, gradient] sums, or all MLP parameter updates |

Every round samples each client independently with probability p (Poisson
sampling, :func:`sample_participants`). Under
:class:`~fedeval.privacy.models.UserLevelDP` the T rounds together are
(ε, δ)-DP at the client level; the returned calibrator records what was spent
(``cal.receipt``, ``cal.guarantee``, ``cal.epsilon_spent``).

References
----------
.. [1] Private federated multiclass post-hoc calibration, Algorithms 1 and 2,
   §4, Appendix B.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from fedeval.calibration.multiclass import MulticlassCalibrator, check_procedure
from fedeval.data import Federation
from fedeval.privacy.ledger import BudgetLedger
from fedeval.privacy.models import PrivacyModel
from fedeval.privacy.sampling import poisson_sample
from fedeval.randomness import RNGLike, as_generator

__all__ = ["METHODS", "MulticlassMethod", "calibrate_multiclass", "sample_participants"]

MulticlassMethod = Literal[
    "binning", "bbq", "temperature", "vector", "matrix", "op-vector", "fedcal"
]
METHODS: tuple[str, ...] = (
    "binning",
    "bbq",
    "temperature",
    "vector",
    "matrix",
    "op-vector",
    "fedcal",
)

_BINNING_OPTIONS = frozenset({"weighting", "n_bins", "levels", "prior_strength", "do_no_harm"})
_SCALING_OPTIONS = frozenset(
    {
        "optimizer",
        "max_iter",
        "server_lr",
        "l2",
        "max_step",
        "do_no_harm",
        "progress",
        "population",
        "prox",
    }
)
_FEDCAL_OPTIONS = frozenset(
    {
        "hidden",
        "optimizer",
        "l2",
        "max_step",
        "do_no_harm",
        "progress",
        "max_iter",
        "server_lr",
        "population",
    }
)


def sample_participants(
    n_clients: int, sampling_rate: float, rng: RNGLike = None
) -> NDArray[np.intp]:
    """Clients taking part in one round: each independently with probability p.

    Parameters
    ----------
    n_clients : int
        K ≥ 1.
    sampling_rate : float
        p ∈ (0, 1]; p = 1 takes everybody.
    rng : int, Generator or None

    Returns
    -------
    ndarray of intp
        Sorted client indices (possibly empty).

    References
    ----------
    .. [1] Multiclass paper, Algorithms 1–2 ("samples participants with
       probability p"); the accountant assumes exactly this Poisson sampling.
    """
    from fedeval.validation import check_int_at_least, check_probability

    k = check_int_at_least(n_clients, 1, name="n_clients")
    p = check_probability(sampling_rate, name="sampling_rate")
    return poisson_sample(k, p, as_generator(rng))


def calibrate_multiclass(
    fed: Federation,
    privacy: PrivacyModel,
    *,
    method: MulticlassMethod = "bbq",
    rounds: int | None = None,
    sampling_rate: float = 1.0,
    rng: RNGLike = None,
    ledger: BudgetLedger | None = None,
    **options: Any,
) -> MulticlassCalibrator:
    """Learn a multiclass calibrator over T federated rounds.

    Parameters
    ----------
    fed : Federation
        kind "probabilities" or "logits"; labels 0..c−1.
    privacy : privacy model
        SecureAggregation() or UserLevelDP(ε, δ, clip): clip is C (scaling: update norm; binning: both
        histograms) or (C+, C−) (binning only). The paper uses C = 0.5 for
        scaling and (C+, C−) = (10, 50) for binning.
    method : {"binning", "bbq", "temperature", "vector", "matrix", "op-vector", "fedcal"}
    rounds : int, optional
        T ≥ 1 (paper: 1 to 30, 12 in the tables). Default: 10 for the scaling
        methods' federated Newton, 20 for FedCal's federated L-BFGS, 1 otherwise.
    sampling_rate : float
        p ∈ (0, 1] (paper: 0.1 with 100 clients).
    rng : int, Generator or None
        Client sampling, DP noise and (FedCal) initial weights.
    ledger : BudgetLedger, optional
        Charged for the whole procedure, once, before the first round draws
        anything (refused with BudgetExceededError, leaving it unchanged, if it
        does not fit).
    **options
        Method options:

        * binning/bbq: ``weighting`` ("all" default, "changed", "none"),
          ``n_bins`` (FedBin, 15), ``levels`` (FedBBQ's M, 7),
          ``prior_strength`` (BBQ's N', 2), ``do_no_harm`` (True);
        * temperature/vector/matrix/op-vector: ``optimizer`` ("newton", the
          pooled NLL by federated Newton; "fedavg", the paper's Algorithm 2),
          ``l2`` (per-family default, ``scaling.DEFAULT_L2``), ``max_step``
          (1), ``do_no_harm`` (True), ``progress`` (None: on a terminal);
          FedAvg only: ``max_iter`` (50), ``server_lr`` (1), ``population`` (None),
          ``prox`` (FedProx μ of the local fits, ``scaling.DEFAULT_PROX``);
        * fedcal: ``hidden`` (64), ``optimizer`` ("lbfgs", the pooled NLL by
          federated L-BFGS; "fedavg", FedAvg of local fits as the paper runs
          FedCal); L-BFGS: ``l2`` (``fedcal.DEFAULT_FEDCAL_L2``), ``max_step``
          (0.5), ``do_no_harm`` (True), ``progress`` (None); FedAvg only:
          ``max_iter`` (20), ``server_lr`` (1), ``population`` (None).

        ``population`` is the K of DP-FedAvg's fixed denominator q·K under DP,
        declared public by the user; by default a count of the clients is
        released with 5% of the budget (:mod:`fedeval.calibration.fedavg`).

    Returns
    -------
    MulticlassCalibrator
        A registered, JSON round-trippable calibrator whose
        ``predict_proba((n, c)) -> (n, c)`` rows sum to 1; ``receipt`` /
        ``guarantee`` / ``epsilon_spent`` state the (ε, δ) spent and
        ``procedure`` the rounds, sampling rate and noise scales.

    Raises
    ------
    TypeError
        Not a Federation / unknown option / a privacy model the released sums
        cannot be released under (decided by
        :func:`fedeval.privacy.mechanism_for.mechanism_for`: DistributedDP,
        LocalDP and LabelDP cannot release client-clipped sums).
    ValueError
        Binary federation, NaN/inf scores, labels outside 0..c−1, T < 1,
        p ∉ (0, 1], unknown method, bad option values; several rounds (or
        p < 1) with a model that covers one release.
    BudgetExceededError
        The ledger cannot afford the procedure.

    Notes
    -----
    Privacy: with UserLevelDP the noise multiplier is the smallest one whose
    T-fold Poisson-subsampled composition is (ε, δ)-DP under RDP accounting
    (dp-accounting), so the recorded ε ≤ the model's ε. The scaling methods
    without a declared ``population`` also release the number of clients
    (5% of ε and δ, the rounds 95%) and the receipt composes the two. With
    SecureAggregation the server sees exact sums (no DP, ε = inf).

    Public inputs: T, q, the clipping norms, the method and its options, the
    number of classes, and a declared ``population``. Neither the calibrator
    nor its receipt holds an exact count of clients, participations or
    examples (neighbours add or remove one client). Degenerate data (a class
    nobody holds, a client with one example) give a calibrator, never a
    refusal that depends on the data; only malformed inputs raise.

    References
    ----------
    .. [1] Multiclass paper, Algorithms 1–2, §4.3, Lemma B.7.
    """
    scaling = method in ("temperature", "vector", "matrix", "op-vector")
    if rounds is None:
        optimizer = options.get("optimizer", "newton" if scaling else "lbfgs")
        if scaling and optimizer == "newton":
            rounds = 10
        elif method == "fedcal" and optimizer == "lbfgs":
            rounds = 20
        else:
            rounds = 1
    t, p = check_procedure(fed, rounds, sampling_rate)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    allowed = (
        _BINNING_OPTIONS
        if method in ("binning", "bbq")
        else _FEDCAL_OPTIONS
        if method == "fedcal"
        else _SCALING_OPTIONS
    )
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise TypeError(
            f"unknown option(s) {unknown} for method {method!r}; allowed: {sorted(allowed)}"
        )
    if ledger is not None and not isinstance(ledger, BudgetLedger):
        raise TypeError(f"ledger must be a BudgetLedger or None, got {type(ledger).__name__}")

    cal: MulticlassCalibrator
    if method in ("binning", "bbq"):
        from fedeval.calibration.multiclass_binning import fit_multiclass_binning

        cal = fit_multiclass_binning(
            fed,
            privacy,
            method=method,
            rounds=t,
            sampling_rate=p,
            rng=rng,
            ledger=ledger,
            **options,
        )
    elif method == "fedcal":
        from fedeval.calibration.fedcal import fit_fedcal

        cal = fit_fedcal(fed, privacy, rounds=t, sampling_rate=p, rng=rng, ledger=ledger, **options)
    else:
        from fedeval.calibration.scaling import ScalingFamily, fit_scaling

        family: ScalingFamily = method  # type: ignore[assignment]

        cal = fit_scaling(
            fed,
            privacy,
            family=family,
            rounds=t,
            sampling_rate=p,
            rng=rng,
            ledger=ledger,
            **options,
        )
    return cal
