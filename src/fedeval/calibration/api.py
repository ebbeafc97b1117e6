"""The public calibration entry point, :func:`calibrate`.

It routes a federation to the right federated calibrator:

=================  ===========================  ==========================================
task (fed.kind)    method                       implementation
=================  ===========================  ==========================================
binary             "binning"                    :func:`fedeval.calibration.binning.histogram_binning`
binary             "bbq"                        :func:`fedeval.calibration.bbq.bbq`
binary             "temperature", "platt"       :func:`fedeval.calibration.binary_scaling.binary_scaling`
binary             "auto"                       :func:`fedeval.calibration.auto.auto_calibrate`
probabilities,     "binning", "bbq",            ``fedeval.calibration.federated.calibrate_multiclass``
logits             "temperature", "vector",     (FedBin/FedBBQ and FedTemp/FedVector/FedMatrix/
                   "matrix", "op-vector"        FedOPVector over rounds)
=================  ===========================  ==========================================
"""

from __future__ import annotations

import importlib
from typing import Any, Literal

from fedeval.calibration.base import Calibrator
from fedeval.data import Federation, Scan
from fedeval.randomness import RNGLike

__all__ = ["METHODS", "Method", "calibrate"]

Method = Literal[
    "binning", "bbq", "temperature", "platt", "auto", "vector", "matrix", "op-vector", "fedcal"
]

METHODS: tuple[str, ...] = (
    "binning",
    "bbq",
    "temperature",
    "platt",
    "auto",
    "vector",
    "matrix",
    "op-vector",
    "fedcal",
)
_BINARY_METHODS = ("binning", "bbq", "temperature", "platt", "auto")
_BINARY_ONLY = ("platt", "auto")
_MULTICLASS_ONLY = ("vector", "matrix", "op-vector", "fedcal")


def calibrate(
    fed: Federation | Scan,
    privacy: Any,
    *,
    method: Method = "bbq",
    rng: RNGLike = None,
    **options: Any,
) -> Calibrator:
    """Learn a calibrator from federated data under a privacy model.

    Parameters
    ----------
    fed : Federation or Scan
        A :func:`fedeval.scan` source is read into memory first.
        Binary scores (``fed.kind == "binary"``) or multiclass probabilities /
        logits (``"probabilities"``, ``"logits"``).
    privacy : privacy model
        Binary: :class:`~fedeval.privacy.models.SecureAggregation`,
        :class:`~fedeval.privacy.models.DistributedDP` or
        :class:`~fedeval.privacy.models.LocalDP` (every method), and
        :class:`~fedeval.privacy.models.UserLevelDP` ("temperature", "platt",
        "auto": federated Newton). Multiclass: as accepted by
        ``fedeval.calibration.federated.calibrate_multiclass`` (e.g.
        ``UserLevelDP``).
    method : {"binning", "bbq", "temperature", "platt", "auto", "vector", "matrix", "op-vector", "fedcal"}
        Binary tasks support "binning" (histogram binning, Cormode–Markov §6),
        "bbq" (Bayesian binning into quantiles, §7.3), "temperature" and
        "platt" (scikit-learn's sigmoid calibration on the logit), and "auto"
        (the candidate with the best released NLL estimate, within one
        budget). Multiclass tasks support "binning", "bbq", "temperature",
        "vector", "matrix", "op-vector" and "fedcal". Every binary method does
        no harm (``do_no_harm=True``): a map its release does not show to help
        is an :class:`~fedeval.calibration.do_no_harm.IdentityCalibrator`
        carrying the reason.
    rng : int, Generator or None
        Source of every random draw (noise, client sampling).
    **options
        Passed to the implementation: for binary tasks see
        :func:`~fedeval.calibration.binning.histogram_binning` (``n_bins``,
        ``n_examples``, ``height``, ``branching``, ``level_budget``, ``path``,
        ``ledger``, ``prob_floor``, ``harm_level``),
        :func:`~fedeval.calibration.bbq.bbq` (``candidate_bins``,
        ``n_candidates``, ``prior_strength``, ...),
        :func:`~fedeval.calibration.binary_scaling.binary_scaling` (``l2``,
        ``rounds``, ``sampling_rate``, ...) and
        :func:`~fedeval.calibration.auto.auto_calibrate`; for
        multiclass tasks ``calibrate_multiclass`` (``rounds``,
        ``sampling_rate``, ``population``, ...).

    Returns
    -------
    Calibrator
        ``predict_proba`` maps scores (n,) to P(y = 1), or logits/probabilities
        (n, c) to calibrated rows; ``to_json`` ships it to clients.

    Raises
    ------
    TypeError
        ``fed`` is not a Federation; unsupported privacy model; unknown option.
    ValueError
        Unknown ``method``, or a method that does not fit the task (scaling
        methods on binary scores).
    BudgetExceededError
        The ledger cannot afford the release.

    Privacy
    -------
    Binary: one release, the per-class score hierarchy, with the guarantee of
    ``privacy`` (under UserLevelDP: the rounds of federated Newton; "auto"
    splits (ε, δ) evenly over its two runs up front); the calibrator records
    it and the ledger entries. Multiclass:
    as documented by ``calibrate_multiclass`` (T rounds, composed; DP-FedAvg
    without a declared ``population`` also releases the number of clients).

    Public inputs: the score domain, the method and its options, the number
    of participating clients under models where it is public (the binary
    height is planned from it, or from a declared ``n_examples``), T, q and
    the clipping norms. Nothing the calibrator publishes (``to_json``,
    ``repr``, the receipt, ``procedure``) holds an exact count the model
    protects; under DP, degenerate data give a calibrator and a warning, and
    only malformed inputs raise.

    References
    ----------
    cormode-markov-2023-federated-calibration-evaluation §6, §7.3;
    private-federated-multiclass-calibration §4.

    Examples
    --------
    >>> import numpy as np
    >>> from fedeval.calibration.api import calibrate
    >>> from fedeval.data import Federation, Scan
    >>> from fedeval.privacy.models import SecureAggregation
    >>> rng = np.random.default_rng(0)
    >>> s = rng.random(10_000)
    >>> y = (rng.random(10_000) < s**2).astype(int)
    >>> fed = Federation.from_arrays(s, y)
    >>> cal = calibrate(fed, SecureAggregation(), method="binning", rng=0)
    >>> bool(abs(cal.predict_proba(np.array([0.5]))[0] - 0.25) < 0.05)
    True
    """
    if method not in METHODS:
        raise ValueError(f"unknown calibration method {method!r}; choose one of {list(METHODS)}")
    if isinstance(fed, Scan):
        # A streamed source is read into memory (validated batch by batch).
        fed = fed.to_federation()
    if not isinstance(fed, Federation):
        raise TypeError(f"fed must be a fedeval.Federation, got {type(fed).__name__}")
    if fed.kind == "binary":
        if method in _MULTICLASS_ONLY:
            raise ValueError(
                f"method {method!r} scales multiclass logits (c >= 2 columns); this federation "
                "holds binary scores (1-D). Use method='binning', 'bbq', 'temperature', "
                "'platt' or 'auto' for binary scores, or build the federation from (n, 2) "
                "logits/probabilities (kind='logits' or 'probabilities')."
            )
        if method == "binning":
            from fedeval.calibration.binning import histogram_binning

            return histogram_binning(fed, privacy, rng=rng, **options)
        if method in ("temperature", "platt"):
            from fedeval.calibration.binary_scaling import binary_scaling

            return binary_scaling(fed, privacy, family=method, rng=rng, **options)
        if method == "auto":
            from fedeval.calibration.auto import auto_calibrate

            return auto_calibrate(fed, privacy, rng=rng, **options)
        from fedeval.calibration.bbq import bbq

        return bbq(fed, privacy, rng=rng, **options)
    if method in _BINARY_ONLY:
        raise ValueError(
            f"method {method!r} calibrates binary scores (1-D); this federation holds "
            f"{fed.n_classes}-class {fed.kind}: use 'binning', 'bbq', 'temperature', 'vector', "
            "'matrix', 'op-vector' or 'fedcal'"
        )
    # Multiclass: the rounds-based implementation lives in calibration.federated,
    # imported lazily (and by name, so this module type-checks without it).
    try:
        federated = importlib.import_module("fedeval.calibration.federated")
    except ImportError as exc:  # pragma: no cover - depends on the other module's presence
        raise NotImplementedError(
            f"multiclass calibration (kind={fed.kind!r}) needs fedeval.calibration.federated, "
            f"which could not be imported: {exc}"
        ) from exc
    result: Calibrator = federated.calibrate_multiclass(
        fed, privacy, method=method, rng=rng, **options
    )
    return result
