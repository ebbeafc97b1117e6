"""Calibrators: maps from raw scores/logits to calibrated probabilities.

A calibrator is learned by a federated procedure (server side, from released
aggregates) and then shipped to clients, so every calibrator

* is a frozen dataclass holding only public, released parameters;
* carries the receipt of the release(s) it was learned from (``receipt``, the
  JSON form of :class:`~fedeval.privacy.receipt.Receipt`), so its guarantee and
  the budget it spent travel with it;
* has ``predict_proba(scores_or_logits)``;
* serialises to JSON (:meth:`Calibrator.to_json`) and back
  (:func:`calibrator_from_json`), so the server can send the map to clients.

Subclasses register themselves with :func:`register` under a stable ``kind``
string that goes into the JSON.
"""

from __future__ import annotations

import json
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, TypeVar

import numpy as np
from numpy.typing import NDArray

from fedeval.exceptions import FedevalWarning, warn_at_caller
from fedeval.privacy.guarantee import Guarantee
from fedeval.privacy.receipt import Receipt

__all__ = [
    "PROBABILITY_FLOOR",
    "Calibrator",
    "calibrator_from_json",
    "check_prob_floor",
    "check_raw_scores",
    "register",
    "warn_degenerate",
]

#: Smallest probability a binning / scaling calibrator predicts (its complement
#: the largest). A public constant: a released bin value of 0 (a bin with no
#: positive) would make the held-out NLL infinite; 1e-4 bounds one such
#: example's NLL by −log(1e-4) ≈ 9.2 nats.
PROBABILITY_FLOOR = 1e-4


def check_prob_floor(value: Any) -> float:
    """``prob_floor`` as a float in (0, 0.5) (ValueError / TypeError otherwise)."""
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"prob_floor must be a number in (0, 0.5), got {value!r}") from None
    if not 0.0 < f < 0.5:
        raise ValueError(f"prob_floor must lie in (0, 0.5), got {value!r}")
    return f


_REGISTRY: dict[str, type[Calibrator]] = {}

C = TypeVar("C", bound="type[Calibrator]")


def warn_degenerate(message: str) -> None:
    """Warn (UserWarning) about a degenerate but released result, at the caller's line.

    Under DP degenerate data never raise (that would depend on the data): the
    calibrator is released with a fallback and this warning says which. The
    warning points at the first frame outside fedeval, however deep the call.
    """
    warn_at_caller(message, FedevalWarning)


def register(cls: C) -> C:
    """Class decorator: make a calibrator loadable from JSON by its ``kind``."""
    kind = cls.kind
    if kind in _REGISTRY and _REGISTRY[kind] is not cls:
        raise ValueError(f"calibrator kind {kind!r} registered twice")
    _REGISTRY[kind] = cls
    return cls


@dataclass(frozen=True)
class Calibrator(ABC):
    """Base class of all calibrators.

    Subclasses are frozen dataclasses whose fields are JSON-able: floats, ints,
    strings, lists, dicts, and numpy arrays (stored as nested lists and restored
    as float64 arrays; declare such fields with type ``NDArray`` and list their
    names in ``array_fields``).
    """

    kind: ClassVar[str] = "abstract"
    array_fields: ClassVar[tuple[str, ...]] = ()

    receipt: dict[str, Any] = field(default_factory=dict, kw_only=True)

    @property
    def privacy_receipt(self) -> Receipt:
        """The receipt of the release(s) this calibrator was learned from."""
        if not self.receipt:
            return Receipt("none", Guarantee.none("no release recorded"))
        return Receipt.from_dict(self.receipt)

    @property
    def guarantee(self) -> Guarantee:
        return self.privacy_receipt.guarantee

    @property
    def epsilon_spent(self) -> float:
        """ε charged to learn this calibrator (0 without DP)."""
        return self.privacy_receipt.epsilon_spent

    @property
    def delta_spent(self) -> float:
        return self.privacy_receipt.delta_spent

    @abstractmethod
    def predict_proba(self, scores: Any) -> NDArray[np.float64]:
        """Calibrated probabilities.

        Binary calibrators take scores of shape (n,) and return P(y = 1), shape
        (n,). Multiclass calibrators take (n, c) logits or probabilities and
        return (n, c) rows summing to 1.
        """

    def to_dict(self) -> dict[str, Any]:
        """JSON-able fields; non-finite numbers become ``None`` (NaN) or ``"inf"``/``"-inf"``.

        Noisy releases legitimately produce NaN (e.g. the standard error of a
        bucket whose released total is not positive), and a calibrator must
        serialise whatever the noise did: strict JSON has no NaN.
        """
        out: dict[str, Any] = {"kind": self.kind}
        for f in fields(self):
            out[f.name] = _jsonable(getattr(self, f.name))
        return out

    def to_json(self) -> str:
        """JSON text that :func:`calibrator_from_json` turns back into an equal calibrator."""
        return json.dumps(self.to_dict(), allow_nan=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Calibrator:
        kwargs = {k: v for k, v in data.items() if k != "kind"}
        for name in cls.array_fields:
            if kwargs.get(name) is not None:
                kwargs[name] = _float_array(kwargs[name])
        return cls(**kwargs)


_NON_FINITE = {"inf": math.inf, "-inf": -math.inf}


def _jsonable(value: Any) -> Any:
    """Arrays to nested lists, with NaN as None and ±inf as "inf"/"-inf" (strict JSON)."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, float | np.floating):
        x = float(value)
        if math.isnan(x):
            return None
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return x
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


def _float_array(value: Any) -> NDArray[np.float64]:
    """Inverse of :func:`_jsonable` for an array field."""

    def back(v: Any) -> Any:
        if isinstance(v, list):
            return [back(x) for x in v]
        if v is None:
            return math.nan
        if isinstance(v, str):
            return _NON_FINITE[v]
        return v

    return np.asarray(back(value), dtype=np.float64)


def calibrator_from_json(text: str) -> Calibrator:
    """Load a calibrator written by :meth:`Calibrator.to_json`.

    Raises
    ------
    ValueError
        Malformed JSON or an unknown calibrator kind.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not a calibrator JSON document: {exc}") from None
    if not isinstance(data, dict) or "kind" not in data:
        raise ValueError("calibrator JSON must be an object with a 'kind' field")
    kind = data["kind"]
    if kind not in _REGISTRY:
        raise ValueError(f"unknown calibrator kind {kind!r}; known: {sorted(_REGISTRY)}")
    return _REGISTRY[kind].from_dict(data)


def check_raw_scores(scores: Any) -> NDArray[np.float64]:
    """Binary scores to calibrate: numeric, 1-D and finite (a clear error otherwise)."""
    arr = np.asarray(scores)
    if arr.dtype.kind not in "fiub":
        raise TypeError(f"scores must be numeric, got dtype {arr.dtype}")
    arr = arr.astype(np.float64, copy=False)
    if arr.ndim != 1:
        raise ValueError(f"a binary calibrator takes scores of shape (n,), got shape {arr.shape}")
    finite = np.isfinite(arr)
    if not finite.all():
        bad = int(np.flatnonzero(~finite)[0])
        raise ValueError(f"scores contains NaN or inf (first at index {bad}: {arr[bad]})")
    return arr
