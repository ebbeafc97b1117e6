"""FedCal's MLP scaler (Peng et al. 2024), the multiclass paper's baseline.

A small multilayer perceptron h maps the (shifted) logits to c per-class
scores v = h(z − max z); they enter the same order-preserving construction as
FedOPVector (:func:`fedeval.calibration.scaling.order_preserving_logits`), so
the calibrated ranking of the classes, hence top-1 accuracy, is unchanged. The
MLP has two hidden layers of ``hidden`` tanh units (64 in FedCal). Two
optimisers (numpy/scipy only, no deep-learning framework):

* ``optimizer="lbfgs"`` (default): federated L-BFGS on the *pooled* ridge NLL
  from released sums of example counts, loss changes and gradients
  (:mod:`fedeval.calibration.lbfgs`), the first-order counterpart of the
  Newton scalers (the MLP has too many parameters for a released Hessian);
  under secure aggregation it descends the pooled objective whatever the
  client sizes, and do no harm returns the identity map unless the released
  loss change shows a gain.
* ``optimizer="fedavg"``: FedAvg / DP-FedAvg of local L-BFGS-B fits, as the
  multiclass paper runs FedCal (instead of FedCal's three SGD epochs); kept
  for the reproductions.

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
from scipy.sparse import csr_matrix

from fedeval.calibration.base import register
from fedeval.calibration.fedavg import fedavg
from fedeval.calibration.multiclass import (
    MulticlassCalibrator,
    check_procedure,
    procedure_record,
    softmax,
    to_logits,
)
from fedeval.calibration.scaling import check_l2
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

__all__ = [
    "DEFAULT_FEDCAL_L2",
    "FEDCAL_OPTIMIZERS",
    "FedCalCalibrator",
    "fit_fedcal",
    "mlp_nll_and_grad",
]

#: Per-example ridge λ of the L-BFGS optimiser, (λ/2)‖w − w₀‖² added to the mean
#: NLL (w₀ the public initial weights, an identity map): small next to the NLL,
#: enough to keep thousands of weights from fitting noise.
DEFAULT_FEDCAL_L2 = 1e-3
FEDCAL_OPTIMIZERS: tuple[str, ...] = ("lbfgs", "fedavg")
#: Rounds when none are given for L-BFGS (one gradient per round).
DEFAULT_LBFGS_ROUNDS = 20

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


def _example_losses(
    w: NDArray[np.float64], z: NDArray[np.float64], y: NDArray[np.int64], hidden: int
) -> tuple[NDArray[np.float64], Any]:
    """Per-example NLL of the MLP scaler, and what its backward pass needs."""
    v, (x, h1, h2, w2, w3) = _forward(w, z, hidden)
    o, cache = order_preserving_logits(z, v)
    shift = o.max(axis=1, keepdims=True)
    e = np.exp(o - shift)
    s = e.sum(axis=1, keepdims=True)
    rows = np.arange(o.shape[0])
    loss = np.log(s)[:, 0] + shift[:, 0] - o[rows, y]
    r = e / s
    r[rows, y] -= 1.0
    return loss, (x, h1, h2, w2, w3, cache, r)


def mlp_client_sums(
    w: NDArray[np.float64],
    w0: NDArray[np.float64],
    z: NDArray[np.float64],
    y: NDArray[np.int64],
    starts: NDArray[np.intp],
    hidden: int,
) -> NDArray[np.float64]:
    """``[n_k, Σ ℓ(w) − ℓ(w0), Σ ∇ℓ(w)]`` of each client k, one row per client.

    ``z``, ``y`` hold the clients' rows grouped client by client, client k's
    first row at ``starts[k]`` (every client non-empty). The gradient is the
    backpropagation of :func:`mlp_nll_and_grad`, summed per client
    (segment sums of per-example outer products, so thousands of small
    clients cost a few array operations instead of a Python loop).
    """
    n = z.shape[0]
    loss, (x, h1, h2, w2, w3, cache, r) = _example_losses(w, z, y, hidden)
    loss0, _ = _example_losses(w0, z, y, hidden)
    g_v = order_preserving_backward(cache, r)
    g_a2 = (g_v @ w3.T) * (1.0 - h2**2)
    g_a1 = (g_a2 @ w2.T) * (1.0 - h1**2)
    sizes = np.diff(np.append(starts, n))
    # Client-by-row indicator: segment sums as one sparse product (np.add.reduceat
    # is several times slower on the wide outer-product rows).
    member = csr_matrix(
        (np.ones(n), (np.repeat(np.arange(sizes.size), sizes), np.arange(n))),
        shape=(sizes.size, n),
    )

    def seg(a: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(member @ a, dtype=np.float64)

    # Σ_{i ∈ k} a_i b_iᵀ as one batched matrix product over clients padded
    # with zero rows to the largest client (the sketch groups clients of similar size).
    width = int(sizes.max())
    slot = np.full((sizes.size, width), n)
    within = np.arange(n) - np.repeat(starts, sizes)
    slot[np.repeat(np.arange(sizes.size), sizes), within] = np.arange(n)

    def outer(a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
        pa = np.vstack([a, np.zeros((1, a.shape[1]))])[slot]
        pb = np.vstack([b, np.zeros((1, b.shape[1]))])[slot]
        return np.matmul(pa.transpose(0, 2, 1), pb).reshape(sizes.size, -1)

    return np.concatenate(
        [
            sizes[:, None].astype(np.float64),
            seg(loss - loss0)[:, None],
            outer(x, g_a1),
            seg(g_a1),
            outer(h1, g_a2),
            seg(g_a2),
            outer(h2, g_v),
            seg(g_v),
        ],
        axis=1,
    )


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
    rounds: int | None = None,
    sampling_rate: float = 1.0,
    hidden: int = 64,
    optimizer: str = "lbfgs",
    l2: float | None = None,
    max_step: float = 0.5,
    do_no_harm: bool = True,
    progress: bool | None = None,
    max_iter: int = 20,
    server_lr: float = 1.0,
    population: int | None = None,
    rng: RNGLike = None,
    ledger: BudgetLedger | None = None,
) -> FedCalCalibrator:
    """Train FedCal's MLP scaler by federated L-BFGS on the pooled NLL, or by FedAvg.

    Parameters
    ----------
    fed : Federation
        Multiclass ("probabilities" are turned into log-probabilities).
    privacy : SecureAggregation or UserLevelDP
        UserLevelDP's ``clip`` must be one C (norm of each client's vector).
    rounds : int, optional
        T ≥ 1 (default: 20 for L-BFGS, 1 for FedAvg).
    sampling_rate : float
        p ∈ (0, 1].
    hidden : int
        Units per hidden layer, ≥ 1 (FedCal: 64).
    optimizer : {"lbfgs", "fedavg"}
        Federated L-BFGS on the pooled NLL (:mod:`fedeval.calibration.lbfgs`)
        or FedAvg of local fits (the paper's FedCal runs).
    l2 : float, optional
        L-BFGS: ridge λ ≥ 0 per example towards the initial (identity) weights;
        default :data:`DEFAULT_FEDCAL_L2`. FedAvg fits are unregularised, as
        the paper.
    max_step : float
        L-BFGS: largest move of any weight in one step, > 0.
    do_no_harm : bool
        L-BFGS: return the identity map, with a warning giving the numbers,
        unless a round's release shows the learned map lowers the pooled NLL
        by more than one standard error (no extra budget).
    progress : bool, optional
        L-BFGS: a progress bar over rounds (default: only on a terminal).
    max_iter : int
        FedAvg: L-BFGS-B iterations per local fit, ≥ 1 (default 20, in place
        of FedCal's 3 SGD epochs).
    server_lr : float
        FedAvg: η_S > 0.
    population : int, optional
        FedAvg under DP: the population size K of DP-FedAvg's denominator q·K,
        declared public; default a count released with 5% of the budget (see
        :mod:`fedeval.calibration.fedavg`). Unused otherwise.
    rng : int, Generator or None
        Also draws the public initial hidden weights.
    ledger : BudgetLedger, optional
        Charged for all rounds, once, before the first round.

    Returns
    -------
    FedCalCalibrator

    Notes
    -----
    Privacy: user-level (ε, δ)-DP under UserLevelDP by RDP accounting of T
    Poisson-subsampled rounds; none under SecureAggregation. L-BFGS releases
    each round the sum of the clients' ``[n, ΔL, gradient]`` vectors clipped to
    C (the clipped statistic sums of the Newton scalers); FedAvg the clipped
    updates of all ~H² + 2cH parameters, composed with the release of the
    population size unless ``population`` is declared. With thousands of
    parameters sharing one clipping norm, the noise per parameter is large:
    the paper's reason FedCal degrades most under DP (§5, RQ3); L-BFGS then
    usually declines (do no harm).

    References
    ----------
    .. [1] Peng et al. (2024); multiclass paper §4.2, §5 and Appendix A.6.
    .. [2] Nocedal & Wright (2006), Algorithm 7.4 (L-BFGS).
    """
    if optimizer not in FEDCAL_OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {FEDCAL_OPTIMIZERS}, got {optimizer!r}")
    if rounds is None:
        rounds = DEFAULT_LBFGS_ROUNDS if optimizer == "lbfgs" else 1
    t, p_rate = check_procedure(fed, rounds, sampling_rate)
    h = check_int_at_least(hidden, 1, name="hidden")
    iters = check_int_at_least(max_iter, 1, name="max_iter")
    lr = check_positive(server_lr, name="server_lr")
    step_cap = check_positive(max_step, name="max_step")
    ridge = DEFAULT_FEDCAL_L2 if l2 is None else check_l2(l2)
    gen = as_generator(rng)
    c = fed.n_classes
    logits = to_logits(fed.scores, fed.kind)
    w0 = initial_mlp(c, h, gen)
    clip = client_clip(privacy)
    if optimizer == "lbfgs":
        from fedeval.calibration.lbfgs import federated_lbfgs
        from fedeval.calibration.newton import pooled_procedure

        def summed(
            w: NDArray[np.float64], z: NDArray[np.float64], y: NDArray[np.int64]
        ) -> tuple[float, NDArray[np.float64]]:
            loss, grad = mlp_nll_and_grad(w, z, y, h)
            return loss * z.shape[0], grad * z.shape[0]

        run_l = federated_lbfgs(
            fed,
            logits,
            w0,
            summed,
            privacy,
            name="FedCal MLP scaler",
            rounds=t,
            sampling_rate=p_rate,
            l2=ridge,
            max_step=step_cap,
            gen=gen,
            ledger=ledger,
            do_no_harm=bool(do_no_harm),
            progress=progress,
            client_sums=lambda w, z, y, starts: mlp_client_sums(w, w0, z, y, starts, h),
        )
        rec = pooled_procedure(
            run_l,
            f"clipped sums of example counts, loss changes and NLL gradients of {w0.size} "
            "MLP-scaler parameters (federated L-BFGS)",
            clip=clip,
            optimizer="lbfgs",
            l2=ridge,
        )
        return FedCalCalibrator(
            run_l.theta,
            h,
            n_classes=c,
            input_kind=fed.kind,
            receipt=run_l.schedule.mechanism.receipt.as_dict(),
            procedure=rec,
        )

    def objective(
        w: NDArray[np.float64], z: NDArray[np.float64], y: NDArray[np.int64]
    ) -> tuple[float, NDArray[np.float64]]:
        return mlp_nll_and_grad(w, z, y, h)

    run = fedavg(
        fed,
        logits,
        w0,
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
        clip=clip,
    )
    procedure["population"] = run.population
    procedure["optimizer"] = "fedavg"
    return FedCalCalibrator(
        w,
        h,
        n_classes=c,
        input_kind=fed.kind,
        receipt=run.receipt.as_dict(),
        procedure=procedure,
    )
