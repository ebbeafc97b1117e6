"""Federated scaling calibrators: temperature, vector, matrix and order-preserving maps.

The maps are :mod:`fedeval.calibration.scaling_maps`. Two optimisers:

* ``optimizer="newton"`` (default): federated damped Newton on the *pooled*
  NLL from released sums of gradients and Hessians
  (:mod:`fedeval.calibration.newton`); under secure aggregation it reaches the
  pooled optimum whatever the client sizes.
* ``optimizer="fedavg"``: the multiclass paper's Algorithm 2, FedAvg of local
  fits (:mod:`fedeval.calibration.fedavg`), DP-FedAvg under user-level DP; kept
  for the paper's reproductions.

Every family has a ridge default (:data:`DEFAULT_L2`) towards the identity
map, so that no map runs off to a degenerate (e.g. uniform) calibrator on
label-skewed clients.

References
----------
.. [1] Private federated multiclass post-hoc calibration (the multiclass paper),
   Algorithm 2, §4.2, §4.3, Appendices B.1, B.2, B.6.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from fedeval.calibration.base import register
from fedeval.calibration.do_no_harm import MulticlassIdentityCalibrator
from fedeval.calibration.fedavg import fedavg
from fedeval.calibration.multiclass import (
    MulticlassCalibrator,
    check_procedure,
    procedure_record,
    softmax,
    to_logits,
)
from fedeval.calibration.scaling_maps import (
    FAMILIES,
    ScalingFamily,
    initial_parameters,
    nll_and_grad,
    scaling_logits,
)
from fedeval.data import Federation
from fedeval.privacy.ledger import BudgetLedger
from fedeval.privacy.mechanism_for import client_clip
from fedeval.privacy.models import PrivacyModel
from fedeval.randomness import RNGLike, as_generator
from fedeval.validation import check_int_at_least, check_positive

__all__ = [
    "DEFAULT_L2",
    "DEFAULT_PROX",
    "OPTIMIZERS",
    "ScalingCalibrator",
    "check_l2",
    "fit_scaling",
]

_TEMPERATURE_BOUNDS = (1e-3, 1e3)

#: Per-example ridge λ of each family, (λ/2)‖w − w_identity‖² added to the mean NLL.
#: Small next to the NLL's curvature on a few hundred examples, large enough
#: to keep the parameters of a client (FedAvg) or of a noisy system (DP)
#: finite: with λ = 0, FedOPVector's local fits on one-class clients diverge
#: and the averaged map outputs uniform probabilities.
DEFAULT_L2: dict[str, float] = {
    "temperature": 1e-4,
    "vector": 1e-3,
    "matrix": 3e-2,
    "op-vector": 1e-2,
}
#: FedAvg's per-family proximal μ of each local fit (FedProx), in the units of the
#: mean NLL per squared parameter. Without it (μ = 0, the paper's Algorithm 2) the
#: local optima of label-skewed clients average to a map worse than none: held-out
#: NLL 1.73 (vector), 1.33 (matrix) against 1.27 uncalibrated on the multiclass
#: benchmark's synthetic task, rising with the rounds on a generated one; with
#: μ = 1 every family improves with the rounds on both and on digits (measured in
#: tests/calibration/test_fedavg_convergence.py and
#: benchmarks/bench_calibration_multiclass.py). Temperature scaling (one
#: parameter, whose local optima average well: FedTemp 1.27 → 0.67) keeps μ = 0.
DEFAULT_PROX: dict[str, float] = {
    "temperature": 0.0,
    "vector": 1.0,
    "matrix": 1.0,
    "op-vector": 1.0,
}
OPTIMIZERS: tuple[str, ...] = ("newton", "fedavg")
#: Rounds when none are given: Newton needs several steps, FedAvg (paper) one or more.
DEFAULT_NEWTON_ROUNDS = 10


def check_l2(l2: Any, *, name: str = "l2") -> float:
    """``l2`` (or another penalty called ``name``) as a finite float ≥ 0 (TypeError / ValueError)."""
    try:
        value = float(l2)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number >= 0, got {l2!r}") from None
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{name} must be a finite number >= 0, got {l2!r}")
    return value


@register
@dataclass(frozen=True)
class ScalingCalibrator(MulticlassCalibrator):
    """A scaling calibrator softmax(o(z)) learned by federated averaging.

    Attributes
    ----------
    family : {"temperature", "vector", "matrix", "op-vector"}
    params : ndarray
        Flat parameters: [τ]; [a (c), b (c)]; [A (c·c, row-major), b (c)];
        [a (c), b (c)] for op-vector.
    n_classes, input_kind, receipt, procedure
        See :class:`~fedeval.calibration.multiclass.MulticlassCalibrator`.

    Notes
    -----
    Privacy: holds only the released (noisy) parameters; using it costs no
    further budget.

    References
    ----------
    .. [1] Multiclass paper, Algorithm 2 and Appendix B.6.
    """

    kind: ClassVar[str] = "multiclass-scaling"
    array_fields: ClassVar[tuple[str, ...]] = ("params",)

    family: str
    params: NDArray[np.float64]

    @property
    def temperature(self) -> float:
        """τ of temperature scaling (ValueError for other families)."""
        if self.family != "temperature":
            raise ValueError(f"a {self.family!r} calibrator has no single temperature")
        return float(self.params[0])

    def calibrated_logits(self, scores: Any) -> NDArray[np.float64]:
        """o(z) for (n, c) logits or probabilities (log-probabilities are used as logits)."""
        return scaling_logits(self.family, self.params, self._logits(scores))

    def predict_proba(self, scores: Any) -> NDArray[np.float64]:
        """Calibrated probabilities, shape (n, c), rows summing to 1.

        Raises
        ------
        ValueError, TypeError
            Wrong shape, NaN/inf, or probabilities not summing to 1.
        """
        return softmax(self.calibrated_logits(scores))


def fit_scaling(
    fed: Federation,
    privacy: PrivacyModel,
    *,
    family: ScalingFamily = "temperature",
    rounds: int | None = None,
    sampling_rate: float = 1.0,
    optimizer: str = "newton",
    max_iter: int = 50,
    server_lr: float = 1.0,
    l2: float | None = None,
    max_step: float = 1.0,
    do_no_harm: bool = True,
    progress: bool | None = None,
    population: int | None = None,
    prox: float | None = None,
    rng: RNGLike = None,
    ledger: BudgetLedger | None = None,
) -> MulticlassCalibrator:
    """Learn a scaling map by federated Newton on the pooled NLL, or by FedAvg (Algorithm 2).

    Parameters
    ----------
    fed : Federation
        Multiclass; "probabilities" are turned into logits by log (floored at
        1e-300), which softmax maps back to the same probabilities.
    privacy : privacy model
        ``SecureAggregation()`` or ``UserLevelDP(ε, δ, clip=C)`` with one C
        (the norm of each client's update).
    family : {"temperature", "vector", "matrix", "op-vector"}, keyword-only
    rounds : int, optional
        T ≥ 1 (default: 10 for Newton, 1 for FedAvg).
    sampling_rate : float
        p ∈ (0, 1].
    optimizer : {"newton", "fedavg"}
        Federated Newton on the pooled NLL (:mod:`fedeval.calibration.newton`),
        or the paper's FedAvg of local fits (Algorithm 2).
    max_iter : int
        FedAvg: L-BFGS-B iterations of each local fit, ≥ 1 (paper: 50).
    server_lr : float
        FedAvg: η_S > 0 (paper: 1).
    l2 : float, optional
        Ridge λ ≥ 0, (λ/2)·‖w − w_identity‖² added to the mean NLL (of each
        client for FedAvg, of the pooled data for Newton). Default:
        :data:`DEFAULT_L2` of the family (the paper used 0, with which
        FedOPVector collapses to uniform outputs under label skew).
    max_step : float
        Newton: largest L2 norm of one step (trust region), > 0.
    do_no_harm : bool
        Newton: return a
        :class:`~fedeval.calibration.do_no_harm.MulticlassIdentityCalibrator`
        carrying the reason (and a warning giving the numbers) unless the
        rounds' releases show the learned map lowers the held-out NLL: the
        estimated gain, optimism-corrected, must exceed z_{1−a} standard errors
        at the one-sided level a = ``HARM_LEVEL`` (0.05); no extra budget (see
        :mod:`fedeval.calibration.newton`).
    progress : bool, optional
        Newton: a progress bar over rounds (default: only on a terminal).
    population : int, optional
        FedAvg under DP: the population size K of DP-FedAvg's fixed denominator q·K,
        declared as a public input (recorded in the receipt and in
        ``procedure["population"]``). Default: a count of the clients released
        with 5% of ε and δ, composed with the rounds in the receipt (see
        :mod:`fedeval.calibration.fedavg`). Never the true number of clients,
        which user-level DP protects. Unused without DP.
    prox : float, optional
        FedAvg: the proximal μ ≥ 0 of every local fit, (μ/2)‖w − w_t‖² added to
        the client's objective (FedProx), so that a client's update is a damped
        step towards its optimum. Default :data:`DEFAULT_PROX` of the family
        (0 for temperature, as the paper; 1 for the others, which diverge or
        stall without it on label-skewed clients). Unused by Newton.
    rng : int, Generator or None
    ledger : BudgetLedger, optional
        Charged for all rounds, once, before the first round.

    Returns
    -------
    ScalingCalibrator or MulticlassIdentityCalibrator
        The learned map, or (Newton with ``do_no_harm``) the identity carrying
        the reason it was declined; never a scaling map with the identity's
        parameters.

    Raises
    ------
    ValueError, TypeError
        Invalid federation, privacy model (including a (C+, C−) pair), T, p or option.

    Notes
    -----
    Choices where the paper is open:

    * DP clips each client's *update* w_k − w_t (DP-FedAvg, Appendix B.2)
      rather than the raw parameters (§4.3 wording): the identity map is the
      natural centre and C = 0.5 bounds a step, not a temperature.
    * Temperatures are kept in [1e-3, 1e3] (bounds of the local fit, and a
      projection after each noisy server step).
    * FedTemp averages τ itself (the paper's A = 1/τ with τ shared).

    Privacy: user-level (ε, δ)-DP under UserLevelDP by RDP accounting of T
    Poisson-subsampled rounds, composed with the release of the population
    size unless ``population`` is declared; no DP with SecureAggregation (the
    server learns the exact average). Charged once, before the first round; the
    calibrator carries the ``receipt`` and the public facts of the rounds
    (``procedure``), no exact count of clients or participations.

    Public inputs: T, q, C, the scaling family, the number of classes and a
    declared ``population``.

    References
    ----------
    .. [1] Multiclass paper, Algorithm 2, §4.2–4.3, Appendices B.1, B.2, B.6.
    .. [2] McMahan et al. (2018), DP-FedAvg (fixed-denominator estimator).
    """
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}")
    if rounds is None:
        rounds = DEFAULT_NEWTON_ROUNDS if optimizer == "newton" else 1
    t, p_rate = check_procedure(fed, rounds, sampling_rate)
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")
    iters = check_int_at_least(max_iter, 1, name="max_iter")
    lr = check_positive(server_lr, name="server_lr")
    ridge = DEFAULT_L2[family] if l2 is None else check_l2(l2)
    step_cap = check_positive(max_step, name="max_step")
    mu = DEFAULT_PROX[family] if prox is None else check_l2(prox, name="prox")
    gen = as_generator(rng)
    c = fed.n_classes
    logits = to_logits(fed.scores, fed.kind)
    if optimizer == "newton":
        from fedeval.calibration.newton import (
            federated_newton,
            pooled_procedure,
            to_calibrator_params,
        )

        run_n = federated_newton(
            fed,
            logits,
            family,
            privacy,
            rounds=t,
            sampling_rate=p_rate,
            l2=ridge,
            max_step=step_cap,
            gen=gen,
            ledger=ledger,
            do_no_harm=bool(do_no_harm),
            progress=progress,
        )
        what = (
            "per-example means of the loss change, NLL gradient and Hessian, and a count of 1, "
            "from every client (clipped)"
            if privacy.regime != "exact"
            else "sums of example counts, loss changes, NLL gradients and Hessians"
        )
        rec = pooled_procedure(
            run_n,
            f"{what} of the {family} map (federated Newton)",
            clip=client_clip(privacy),
            optimizer="newton",
            l2=ridge,
        )
        if not run_n.applied:
            return MulticlassIdentityCalibrator(
                declined=family,
                reason=run_n.reason,
                estimates={
                    "nll_change": run_n.nll_change,
                    "nll_change_se": run_n.nll_change_se,
                    "optimism": run_n.optimism,
                },
                n_classes=c,
                input_kind=fed.kind,
                receipt=run_n.schedule.mechanism.receipt.as_dict(),
                procedure=rec,
            )
        return ScalingCalibrator(
            family,
            to_calibrator_params(family, run_n.theta),
            n_classes=c,
            input_kind=fed.kind,
            receipt=run_n.schedule.mechanism.receipt.as_dict(),
            procedure=rec,
        )

    centre = initial_parameters(family, c)

    def objective(
        w: NDArray[np.float64], z: NDArray[np.float64], y: NDArray[np.int64]
    ) -> tuple[float, NDArray[np.float64]]:
        loss, grad = nll_and_grad(family, w, z, y)
        if ridge > 0:
            d = w - centre
            return loss + 0.5 * ridge * float(d @ d), grad + ridge * d
        return loss, grad

    bounds: list[tuple[float | None, float | None]] | None = None
    project = None
    if family == "temperature":
        bounds = [_TEMPERATURE_BOUNDS]

        def project(w: NDArray[np.float64]) -> NDArray[np.float64]:
            return np.clip(w, *_TEMPERATURE_BOUNDS)

    run = fedavg(
        fed,
        logits,
        centre,
        objective,
        privacy,
        rounds=t,
        sampling_rate=p_rate,
        max_iter=iters,
        server_lr=lr,
        gen=gen,
        ledger=ledger,
        bounds=bounds,
        project=project,
        population=population,
        prox=mu,
    )
    w = run.params
    procedure = procedure_record(
        run.schedule,
        f"the sum of {w.size} clipped {family}-scaling parameter updates",
        variance=run.round_variance,
        clip=client_clip(privacy),
    )
    procedure["population"] = run.population
    procedure.update(optimizer="fedavg", l2=ridge, prox=mu)
    return ScalingCalibrator(
        family,
        w,
        n_classes=c,
        input_kind=fed.kind,
        receipt=run.receipt.as_dict(),
        procedure=procedure,
    )
