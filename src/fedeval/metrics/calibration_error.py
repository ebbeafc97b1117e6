"""Calibration error metrics: ECE, top-label ECE, classwise ECE, MCE.

These are plain (centralized) metrics over arrays of predicted probabilities and
labels. They are what fedeval reports *after* a calibrator has been learned
(federatedly) and applied; they release nothing by themselves.

Bin-edge convention
-------------------
The probability axis ``[0, 1]`` is cut at edges ``e_0 < e_1 < ... < e_K``.
Bins are **right-closed**: bin 1 is ``[e_0, e_1]`` and bin ``k > 1`` is
``(e_{k-1}, e_k]``. A prediction lying exactly on an inner edge ``e_k`` belongs
to the *lower* bin ``k``. This is the convention of
:func:`sklearn.calibration.calibration_curve`, which assigns bins with
``np.searchsorted(edges[1:-1], p)`` (``side="left"``), so our per-bin statistics
equal sklearn's exactly, including at edges. Edges are

* ``strategy="uniform"``: ``np.linspace(0, 1, n_bins + 1)`` (equal width);
* ``strategy="quantile"``: ``np.percentile(p, linspace(0, 100, n_bins + 1))``
  with numpy's default linear interpolation (equal mass), again as sklearn.

With quantile edges, ties in the data can make edges coincide; the
corresponding bins are empty and, like all empty bins, contribute nothing.

References
----------
Naeini, Cooper and Hauskrecht, "Obtaining well calibrated probabilities using
Bayesian binning", AAAI 2015, §"Calibration measures" (ECE and MCE);
cormode-markov-2023-federated-calibration-evaluation footnote 1 (ECE as used
there); private-federated-multiclass-calibration Definition 3.3 (classwise ECE);
Guo, Pleiss, Sun and Weinberger, "On calibration of modern neural networks",
ICML 2017, §2 (top-label/confidence ECE).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from fedeval.validation import check_int_at_least

__all__ = [
    "CalibrationBins",
    "calibration_bins",
    "calibration_summary",
    "classwise_calibration_error",
    "expected_calibration_error",
    "log_loss_per_example",
    "maximum_calibration_error",
    "top_label_calibration_error",
]

BinStrategy = Literal["uniform", "quantile"]


@dataclass(frozen=True)
class CalibrationBins:
    """Per-bin statistics of predictions against outcomes.

    Attributes
    ----------
    edges : ndarray, shape (n_bins + 1,)
        Bin edges (right-closed bins, see the module docstring).
    counts : ndarray of int64, shape (n_bins,)
        Examples per bin.
    mean_predicted : ndarray, shape (n_bins,)
        Mean predicted probability per bin (NaN for empty bins).
    fraction_positive : ndarray, shape (n_bins,)
        Observed frequency of the event per bin (NaN for empty bins).
    """

    edges: NDArray[np.float64]
    counts: NDArray[np.int64]
    mean_predicted: NDArray[np.float64]
    fraction_positive: NDArray[np.float64]

    @property
    def gaps(self) -> NDArray[np.float64]:
        """|observed − predicted| per bin (NaN for empty bins)."""
        return np.abs(self.fraction_positive - self.mean_predicted)


# ------------------------------------------------------------------ validation
def _check_probs(probs: Any) -> NDArray[np.float64]:
    arr = np.asarray(probs)
    if arr.dtype.kind not in "fiub":
        raise TypeError(f"probs must be numeric, got dtype {arr.dtype}")
    arr = arr.astype(np.float64, copy=False)
    if arr.ndim not in (1, 2):
        raise ValueError(f"probs must have shape (n,) or (n, c), got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise ValueError("probs is empty; calibration error needs at least one example")
    if arr.ndim == 2 and arr.shape[1] < 2:
        raise ValueError(f"(n, c) probs need c >= 2 columns, got shape {arr.shape}")
    finite = np.isfinite(arr)
    if not finite.all():
        bad = np.argwhere(~finite)[0]
        raise ValueError(f"probs contains NaN or inf (first at index {tuple(int(i) for i in bad)})")
    if (arr < 0).any() or (arr > 1).any():
        bad = np.argwhere((arr < 0) | (arr > 1))[0]
        raise ValueError(
            f"probs must lie in [0, 1]; index {tuple(int(i) for i in bad)} has {arr[tuple(bad)]!r}"
        )
    return arr


def _check_labels(labels: Any, n: int, n_classes: int) -> NDArray[np.int64]:
    arr = np.asarray(labels)
    if arr.ndim != 1:
        raise ValueError(f"labels must be 1-dimensional, got shape {arr.shape}")
    if arr.shape[0] != n:
        raise ValueError(f"labels has {arr.shape[0]} entries but probs has {n} rows")
    if arr.dtype.kind == "b":
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"labels must be integers, got dtype {arr.dtype}")
    ok = np.isfinite(arr) & (arr == np.round(arr)) & (arr >= 0) & (arr < n_classes)
    if not ok.all():
        bad = int(np.flatnonzero(~ok)[0])
        allowed = "0 or 1" if n_classes == 2 else f"an integer in 0..{n_classes - 1}"
        raise ValueError(f"labels must be {allowed}; index {bad} has {arr[bad].item()!r}")
    return arr.astype(np.int64)


def _check_options(n_bins: Any, strategy: Any, norm: Any) -> tuple[int, BinStrategy, float]:
    nb = check_int_at_least(n_bins, 1, name="n_bins")
    if strategy not in ("uniform", "quantile"):
        raise ValueError(f"strategy must be 'uniform' or 'quantile', got {strategy!r}")
    if norm == "max" or norm == np.inf:
        p = np.inf
    else:
        try:
            p = float(norm)
        except (TypeError, ValueError):
            raise TypeError(f"norm must be a number >= 1 or 'max', got {norm!r}") from None
        if not p >= 1:
            raise ValueError(f"norm must be >= 1 (or 'max'), got {norm!r}")
    return nb, strategy, p


# --------------------------------------------------------------------- binning
def _bin_edges(p: NDArray[np.float64], n_bins: int, strategy: BinStrategy) -> NDArray[np.float64]:
    if strategy == "uniform":
        return np.linspace(0.0, 1.0, n_bins + 1)
    return np.asarray(np.percentile(p, np.linspace(0.0, 100.0, n_bins + 1)), dtype=np.float64)


def _bin_statistics(
    p: NDArray[np.float64], y: NDArray[np.float64], n_bins: int, strategy: BinStrategy
) -> CalibrationBins:
    edges = _bin_edges(p, n_bins, strategy)
    # side="left" on the inner edges: a value on edge e_k goes to the bin below it
    # (right-closed bins), exactly as sklearn.calibration.calibration_curve.
    ids = np.searchsorted(edges[1:-1], p, side="left")
    counts = np.bincount(ids, minlength=n_bins).astype(np.int64)
    sum_p = np.bincount(ids, weights=p, minlength=n_bins)
    sum_y = np.bincount(ids, weights=y, minlength=n_bins)
    nonempty = counts > 0
    mean_p = np.full(n_bins, np.nan)
    frac = np.full(n_bins, np.nan)
    mean_p[nonempty] = sum_p[nonempty] / counts[nonempty]
    frac[nonempty] = sum_y[nonempty] / counts[nonempty]
    return CalibrationBins(edges, counts, mean_p, frac)


def _aggregate(bins: CalibrationBins, norm: float) -> float:
    nonempty = bins.counts > 0
    gaps = bins.gaps[nonempty]
    if norm == np.inf:
        return float(gaps.max())
    weights = bins.counts[nonempty] / bins.counts.sum()
    return float(np.sum(weights * gaps**norm) ** (1.0 / norm))


def _event_and_prediction(
    probs: NDArray[np.float64], labels: Any
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(predicted probability, 0/1 outcome) pairs: P(y=1) for 1-D, confidence otherwise."""
    if probs.ndim == 1:
        y = _check_labels(labels, probs.shape[0], 2)
        return probs, y.astype(np.float64)
    y = _check_labels(labels, probs.shape[0], probs.shape[1])
    pred = np.argmax(probs, axis=1)
    conf = probs[np.arange(probs.shape[0]), pred]
    return conf, (pred == y).astype(np.float64)


# ---------------------------------------------------------------------- public
def calibration_bins(
    probs: Any,
    labels: Any,
    *,
    n_bins: int = 15,
    strategy: BinStrategy = "uniform",
) -> CalibrationBins:
    """Per-bin counts, mean prediction and observed frequency (a reliability curve).

    For 1-D ``probs`` the event is ``y = 1`` and the prediction P(y = 1); for
    (n, c) ``probs`` the event is "the top-label prediction is correct" and the
    prediction its confidence ``max_j p_ij``.

    Parameters
    ----------
    probs : array-like, shape (n,) or (n, c)
        Probabilities in [0, 1].
    labels : array-like of int, shape (n,)
        0/1 for 1-D probs, class indices 0..c-1 otherwise.
    n_bins : int
        K >= 1.
    strategy : {"uniform", "quantile"}
        Equal-width or equal-mass bins (see the module docstring for edges).

    Returns
    -------
    CalibrationBins
        Non-empty bins' statistics equal ``sklearn.calibration.calibration_curve``
        (``prob_true``, ``prob_pred``) for 1-D probs and the same ``strategy``.

    Raises
    ------
    ValueError
        NaN/inf or out-of-range probabilities, bad labels, ``n_bins < 1``,
        unknown ``strategy``.
    TypeError
        Non-numeric input or a non-integer ``n_bins``.
    """
    p_arr = _check_probs(probs)
    nb, strat, _ = _check_options(n_bins, strategy, 1)
    p, y = _event_and_prediction(p_arr, labels)
    return _bin_statistics(p, y, nb, strat)


def expected_calibration_error(
    probs: Any,
    labels: Any,
    *,
    n_bins: int = 15,
    strategy: BinStrategy = "uniform",
    norm: float | Literal["max"] = 1,
) -> float:
    r"""Expected calibration error (ECE).

    .. math:: \mathrm{ECE}_q = \Big(\sum_{k=1}^K \frac{|B_k|}{n}\,|o_k - e_k|^q\Big)^{1/q}

    where ``o_k`` is the observed frequency of the event in bin ``B_k`` and
    ``e_k`` the mean prediction there; empty bins contribute nothing. ``q = 1``
    is the ECE of Naeini et al. (Cormode–Markov footnote 1: Σ P(j)|o(j) − e(j)|),
    ``q = 2`` the RMS calibration error, ``norm="max"`` the MCE.

    For 1-D (binary) ``probs`` the event is ``y = 1`` and the prediction is
    P(y = 1). For (n, c) ``probs`` this is the top-label (confidence) ECE: the
    event is "argmax is correct", the prediction the maximum probability
    (ties in argmax go to the lowest class index).

    Parameters
    ----------
    probs : array-like, shape (n,) or (n, c)
    labels : array-like of int, shape (n,)
    n_bins : int
        Number of bins K >= 1.
    strategy : {"uniform", "quantile"}
        Equal-width or equal-mass bins; right-closed (see module docstring).
    norm : float >= 1 or "max"

    Returns
    -------
    float in [0, 1]

    Raises
    ------
    ValueError, TypeError
        As :func:`calibration_bins`; ``norm < 1``.

    References
    ----------
    Naeini et al., AAAI 2015, ECE definition; cormode-markov-2023 footnote 1;
    Guo et al., ICML 2017, eq. (3) (top-label ECE).

    Examples
    --------
    Two bins of two examples: [0, 0.5] holds 0.2, 0.3 (mean 0.25, one positive
    of two: gap 0.25); (0.5, 1] holds 0.8, 0.9 (mean 0.85, all positive: gap
    0.15). ECE = 0.5·0.25 + 0.5·0.15 = 0.2.

    >>> round(expected_calibration_error([0.2, 0.3, 0.8, 0.9], [0, 1, 1, 1], n_bins=2), 12)
    0.2
    """
    p_arr = _check_probs(probs)
    nb, strat, q = _check_options(n_bins, strategy, norm)
    p, y = _event_and_prediction(p_arr, labels)
    return _aggregate(_bin_statistics(p, y, nb, strat), q)


def top_label_calibration_error(
    probs: Any,
    labels: Any,
    *,
    n_bins: int = 15,
    strategy: BinStrategy = "uniform",
    norm: float | Literal["max"] = 1,
) -> float:
    """Top-label (confidence) ECE, also for binary 1-D probabilities.

    1-D ``probs`` are read as P(y = 1) and turned into the two columns
    ``[1 − p, p]``, so the confidence is ``max(p, 1 − p)`` (class 0 wins the
    tie at 0.5). (n, c) input is as :func:`expected_calibration_error`.

    References
    ----------
    Guo et al., ICML 2017, eq. (3); private-federated-multiclass-calibration §3.
    """
    p_arr = _check_probs(probs)
    if p_arr.ndim == 1:
        _check_labels(labels, p_arr.shape[0], 2)
        p_arr = np.column_stack([1.0 - p_arr, p_arr])
    return expected_calibration_error(p_arr, labels, n_bins=n_bins, strategy=strategy, norm=norm)


def classwise_calibration_error(
    probs: Any,
    labels: Any,
    *,
    n_bins: int = 15,
    strategy: BinStrategy = "uniform",
    norm: float | Literal["max"] = 1,
) -> float:
    r"""Classwise ECE (cwECE): the mean over classes of one-vs-rest ECE.

    .. math:: \mathrm{cwECE} = \frac1c\sum_{j=1}^c\sum_{m=1}^M \frac{|B_{m}^{(j)}|}{N}
              \,\big|\hat p_j(m) - y_j(m)\big|

    where, for class ``j``, the examples are binned by their class-``j``
    probability ``p_ij``; ``\hat p_j(m)`` is the mean of ``p_ij`` in bin ``m``
    and ``y_j(m)`` the fraction of class-``j`` examples there. With
    ``strategy="quantile"`` each class gets its own equal-mass edges.

    1-D ``probs`` are read as P(y = 1) and expanded to ``[1 − p, p]``.

    Parameters
    ----------
    probs : array-like, shape (n,) or (n, c)
    labels : array-like of int, shape (n,)
    n_bins, strategy, norm
        As :func:`expected_calibration_error` (``norm`` applies per class).

    References
    ----------
    private-federated-multiclass-calibration Definition 3.3; Kull et al.,
    "Beyond temperature scaling", NeurIPS 2019, §2.
    """
    p_arr = _check_probs(probs)
    nb, strat, q = _check_options(n_bins, strategy, norm)
    if p_arr.ndim == 1:
        y = _check_labels(labels, p_arr.shape[0], 2)
        p_arr = np.column_stack([1.0 - p_arr, p_arr])
    else:
        y = _check_labels(labels, p_arr.shape[0], p_arr.shape[1])
    errs = [
        _aggregate(_bin_statistics(p_arr[:, j], (y == j).astype(np.float64), nb, strat), q)
        for j in range(p_arr.shape[1])
    ]
    return float(np.mean(errs))


def maximum_calibration_error(
    probs: Any,
    labels: Any,
    *,
    n_bins: int = 15,
    strategy: BinStrategy = "uniform",
) -> float:
    """Maximum calibration error (MCE): the largest |observed − predicted| over non-empty bins.

    Same events, bins and conventions as :func:`expected_calibration_error`
    (equivalent to ``norm="max"``).

    References
    ----------
    Naeini et al., AAAI 2015, MCE definition.
    """
    return expected_calibration_error(probs, labels, n_bins=n_bins, strategy=strategy, norm="max")


def log_loss_per_example(probs: Any, labels: Any) -> NDArray[np.float64]:
    """−log p_i(y_i) of every example (probabilities floored at 1e-300); 1-D = P(y = 1)."""
    p_arr = _check_probs(probs)
    if p_arr.ndim == 1:
        y = _check_labels(labels, p_arr.shape[0], 2)
        p_arr = np.column_stack([1.0 - p_arr, p_arr])
    else:
        y = _check_labels(labels, p_arr.shape[0], p_arr.shape[1])
    picked = p_arr[np.arange(p_arr.shape[0]), y]
    return np.asarray(-np.log(np.maximum(picked, 1e-300)), dtype=np.float64)


def _ece_se(conf: NDArray[np.float64], hit: NDArray[np.float64], n_bins: int) -> float:
    """Delta-method SE of an equal-width-bin ECE: √(Σ_b n_b s_b²) / N.

    ECE = Σ_b (n_b/N)|ȳ_b − p̄_b|; with the bins held fixed and every gap away
    from 0, its variance is Σ_b (n_b/N)² s_b²/n_b, s_b² the sample variance of
    y − p in bin b.
    """
    n = conf.size
    if n < 2:
        return float("nan")
    b = np.minimum((conf * n_bins).astype(np.int64), n_bins - 1)
    r = hit - conf
    total = 0.0
    for k in np.unique(b):
        rk = r[b == k]
        if rk.size > 1:
            total += rk.size * float(np.var(rk, ddof=1))
    return float(np.sqrt(total) / n)


def calibration_summary(
    probs: Any,
    labels: Any,
    *,
    n_bins: int = 15,
) -> dict[str, float]:
    """Held-out top-label ECE, classwise ECE, NLL and accuracy, each with a standard error.

    Standard errors: NLL and accuracy from the sample standard deviation of
    the per-example values over √n (they are means of i.i.d. terms); the
    ECEs by the delta method with the bins held fixed, √(Σ_b n_b s_b²)/N, s_b²
    the variance of y − p in bin b (cwECE: √(Σ_j SE_j²)/c, treating classes as
    independent). These describe sampling variability on the held-out set, not
    the binning bias of ECE.

    Parameters
    ----------
    probs : array-like, shape (n,) or (n, c)
    labels : array-like of int, shape (n,)
    n_bins : int
        Equal-width bins of both ECEs (15, as the multiclass paper).

    Returns
    -------
    dict
        ``ece_top``, ``ece_top_se``, ``cwece``, ``cwece_se``, ``nll``,
        ``nll_se``, ``accuracy``, ``accuracy_se`` (fractions, not %).

    References
    ----------
    Guo et al., ICML 2017 (ECE, NLL); private-federated-multiclass-calibration
    Definition 3.3 (cwECE).
    """
    p_arr = _check_probs(probs)
    if p_arr.ndim == 1:
        y = _check_labels(labels, p_arr.shape[0], 2)
        p2 = np.column_stack([1.0 - p_arr, p_arr])
    else:
        y = _check_labels(labels, p_arr.shape[0], p_arr.shape[1])
        p2 = p_arr
    n = p2.shape[0]
    losses = log_loss_per_example(p2, y)
    top = np.argmax(p2, axis=1)
    correct = (top == y).astype(np.float64)
    conf = p2[np.arange(n), top]
    top_se = _ece_se(conf, correct, n_bins)
    c = p2.shape[1]
    cw_se = float(
        np.sqrt(sum(_ece_se(p2[:, j], (y == j).astype(np.float64), n_bins) ** 2 for j in range(c)))
        / c
    )
    root = np.sqrt(max(n, 1))
    return {
        "ece_top": top_label_calibration_error(p2, y, n_bins=n_bins),
        "ece_top_se": top_se,
        "cwece": classwise_calibration_error(p2, y, n_bins=n_bins),
        "cwece_se": cw_se,
        "nll": float(np.mean(losses)),
        "nll_se": float(np.std(losses, ddof=1) / root) if n > 1 else float("nan"),
        "accuracy": float(np.mean(correct)),
        "accuracy_se": float(np.std(correct, ddof=1) / root) if n > 1 else float("nan"),
    }
