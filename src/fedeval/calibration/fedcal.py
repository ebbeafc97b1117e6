"""FedCal's MLP scaler (Peng et al. 2024), the multiclass paper's baseline.

A small multilayer perceptron h maps the (shifted) logits to c per-class
scores v = h(z − max z); they enter the same order-preserving construction as
FedOPVector (:func:`fedeval.calibration.scaling.order_preserving_logits`), so
the calibrated ranking of the classes, hence top-1 accuracy, is unchanged. The
MLP has two hidden layers of ``hidden`` tanh units (64 in FedCal) and is
trained by FedAvg / DP-FedAvg like the other scalers, with local L-BFGS-B fits
instead of FedCal's three SGD epochs (numpy/scipy only, no deep-learning
framework).

References
----------
.. [1] H. Peng, H. Yu, X. Tang and X. Li, "FedCal: Achieving local and global
   calibration in federated learning via aggregated parameterized scaler",
   ICML 2024 (the MLP scaler; post-hoc variant only).
.. [2] Private federated multiclass post-hoc calibration, §4.2 (FedCal with
   order-preserving training), §5, Appendix A.6 (two hidden layers of 64).
.. [3] Rahimi et al. (2020), Theorem 1 (order preservation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from fedeval.calibration.base import register
from fedeval.calibration.fedavg import fedavg
from fedeval.calibration.multiclass import (
    MulticlassCalibrator,
    check_procedure,
    procedure_record,
    softmax,
    to_logits,
)
from fedeval.calibration.scaling_maps import (
    nll_residual,
    order_preserving_backward,
    order_preserving_logits,
)
from fedeval.data import Federation
from fedeval.privacy.ledger import BudgetLedger
from fedeval.privacy.mechanism_for import client_clip
from fedeval.privacy.models import PrivacyModel
from fedeval.privacy.sampling import public_uniform
from fedeval.randomness import RNGLike, as_generator
from fedeval.validation import check_int_at_least, check_positive

__all__ = ["FedCalCalibrator", "fit_fedcal", "mlp_nll_and_grad"]

_SOFTPLUS_INV_ONE = math.log(math.e - 1.0)


def _shapes(c: int, hidden: int) -> list[tuple[int, ...]]:
    return [(c, hidden), (hidden,), (hidden, hidden), (hidden,), (hidden, c), (c,)]


def _unpack(w: NDArray[np.float64], c: int, hidden: int) -> list[NDArray[np.float64]]:
    out = []
    i = 0
    for shape in _shapes(c, hidden):
        size = math.prod(shape)
        out.append(w[i : i + size].reshape(shape))
        i += size
    return out


def initial_mlp(c: int, hidden: int, rng: np.random.Generator) -> NDArray[np.float64]:
    """Glorot-uniform hidden layers, a zero output layer with bias softplus⁻¹(1).

    The initial calibrator is therefore the identity map (every gap scaled by
    1), and the random hidden weights are public server randomness.
    """
    parts = []
    for shape in _shapes(c, hidden):
        if len(shape) == 2 and shape[1] == hidden:
            limit = math.sqrt(6.0 / (shape[0] + shape[1]))
            parts.append(public_uniform(-limit, limit, shape, rng).ravel())
        elif shape == (c,):
            parts.append(np.full(c, _SOFTPLUS_INV_ONE))
        else:
            parts.append(np.zeros(math.prod(shape)))
    return np.concatenate(parts)


def _forward(
    w: NDArray[np.float64], z: NDArray[np.float64], hidden: int
) -> tuple[NDArray[np.float64], tuple[Any, ...]]:
    c = z.shape[1]
    w1, b1, w2, b2, w3, b3 = _unpack(w, c, hidden)
    x = z - z.max(axis=1, keepdims=True)
    h1 = np.tanh(x @ w1 + b1)
    h2 = np.tanh(h1 @ w2 + b2)
    v = h2 @ w3 + b3
    return v, (x, h1, h2, w2, w3)


def mlp_nll_and_grad(
    w: NDArray[np.float64], z: NDArray[np.float64], y: NDArray[np.int64], hidden: int
) -> tuple[float, NDArray[np.float64]]:
    """Mean NLL of the order-preserving MLP scaler and its gradient (backpropagation)."""
    v, (x, h1, h2, w2, w3) = _forward(w, z, hidden)
    o, cache = order_preserving_logits(z, v)
    loss, r = nll_residual(o, y)
    g_v = order_preserving_backward(cache, r)
    g_w3 = h2.T @ g_v
    g_b3 = g_v.sum(axis=0)
    g_a2 = (g_v @ w3.T) * (1.0 - h2**2)
    g_w2 = h1.T @ g_a2
    g_b2 = g_a2.sum(axis=0)
    g_a1 = (g_a2 @ w2.T) * (1.0 - h1**2)
    g_w1 = x.T @ g_a1
    g_b1 = g_a1.sum(axis=0)
    grad = np.concatenate([g.ravel() for g in (g_w1, g_b1, g_w2, g_b2, g_w3, g_b3)])
    return loss, grad


@register
@dataclass(frozen=True)
class FedCalCalibrator(MulticlassCalibrator):
    """FedCal's order-preserving MLP scaler.

    Attributes
    ----------
    params : ndarray
        Flat [W1 (c×H), b1 (H), W2 (H×H), b2 (H), W3 (H×c), b3 (c)], row-major.
    hidden : int
        H, units in each of the two hidden layers.
    n_classes, input_kind, receipt, procedure
        See :class:`~fedeval.calibration.multiclass.MulticlassCalibrator`.

    Notes
    -----
    Privacy: holds only released (noisy) parameters; using it costs nothing more.

    References
    ----------
    .. [1] Peng et al. (2024); multiclass paper §4.2 and Appendix A.6.
    """

    kind: ClassVar[str] = "fedcal-mlp"
    array_fields: ClassVar[tuple[str, ...]] = ("params",)

    params: NDArray[np.float64]
    hidden: int

    def predict_proba(self, scores: Any) -> NDArray[np.float64]:
        """Calibrated probabilities, shape (n, c), rows summing to 1, ranking unchanged.

        Raises
        ------
        ValueError, TypeError
            Wrong shape, NaN/inf, or probabilities not summing to 1.
        """
        z = self._logits(scores)
        v, _ = _forward(self.params, z, self.hidden)
        return softmax(order_preserving_logits(z, v)[0])


def fit_fedcal(
    fed: Federation,
    privacy: PrivacyModel,
    *,
    rounds: int = 1,
    sampling_rate: float = 1.0,
    hidden: int = 64,
    max_iter: int = 20,
    server_lr: float = 1.0,
    population: int | None = None,
    rng: RNGLike = None,
    ledger: BudgetLedger | None = None,
) -> FedCalCalibrator:
    """Train FedCal's MLP scaler by FedAvg (DP-FedAvg under UserLevelDP).

    Parameters
    ----------
    fed : Federation
        Multiclass ("probabilities" are turned into log-probabilities).
    privacy : SecureAggregation or UserLevelDP
        UserLevelDP's ``clip`` must be one C (update norm).
    rounds : int
        T ≥ 1.
    sampling_rate : float
        p ∈ (0, 1].
    hidden : int
        Units per hidden layer, ≥ 1 (FedCal: 64).
    max_iter : int
        L-BFGS-B iterations per local fit, ≥ 1 (default 20, in place of
        FedCal's 3 SGD epochs).
    server_lr : float
        η_S > 0.
    population : int, optional
        Under DP, the population size K of DP-FedAvg's denominator q·K,
        declared public; default a count released with 5% of the budget (see
        :mod:`fedeval.calibration.fedavg`). Unused without DP.
    rng : int, Generator or None
        Also draws the public initial hidden weights.

    Returns
    -------
    FedCalCalibrator

    Notes
    -----
    Privacy: user-level (ε, δ)-DP under UserLevelDP (clipped updates of all
    ~H² + 2cH parameters, Gaussian noise on the sum, RDP accounting of T
    Poisson-subsampled rounds, composed with the release of the population
    size unless ``population`` is declared); none under SecureAggregation. With thousands
    of parameters sharing one clipping norm, the noise per parameter is large:
    this is the paper's reason FedCal degrades most under DP (§5, RQ3).

    References
    ----------
    .. [1] Peng et al. (2024); multiclass paper §4.2, §5 and Appendix A.6.
    """
    t, p_rate = check_procedure(fed, rounds, sampling_rate)
    h = check_int_at_least(hidden, 1, name="hidden")
    iters = check_int_at_least(max_iter, 1, name="max_iter")
    lr = check_positive(server_lr, name="server_lr")
    gen = as_generator(rng)
    c = fed.n_classes
    logits = to_logits(fed.scores, fed.kind)

    def objective(
        w: NDArray[np.float64], z: NDArray[np.float64], y: NDArray[np.int64]
    ) -> tuple[float, NDArray[np.float64]]:
        return mlp_nll_and_grad(w, z, y, h)

    run = fedavg(
        fed,
        logits,
        initial_mlp(c, h, gen),
        objective,
        privacy,
        rounds=t,
        sampling_rate=p_rate,
        max_iter=iters,
        server_lr=lr,
        gen=gen,
        ledger=ledger,
        population=population,
    )
    w = run.params
    procedure = procedure_record(
        run.schedule,
        f"the sum of clipped updates of {w.size} MLP-scaler parameters",
        variance=run.round_variance,
        clip=client_clip(privacy),
    )
    procedure["population"] = run.population
    return FedCalCalibrator(
        w,
        h,
        n_classes=c,
        input_kind=fed.kind,
        receipt=run.receipt.as_dict(),
        procedure=procedure,
    )
