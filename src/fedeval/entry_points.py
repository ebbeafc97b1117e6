"""``fe.evaluate``: the public entry point that chooses which release to make.

One function for every evaluation a user asks for, each one release:

* a binary Federation or Scan → :func:`fedeval.evaluation.evaluate`
  (the per-class hierarchy);
* a multiclass Federation → the multiclass sketch (through the same function);
* ``slices=`` given → :func:`fedeval.slicing.evaluate_slices` (one release
  of the sliced hierarchy, parallel composition over the slices).

It lives above both so that neither imports the other back (DESIGN.md:
imports run one way).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, overload

from fedeval.data import Federation, Scan
from fedeval.evaluation import evaluate as evaluate_release
from fedeval.privacy.models import PrivacyModel
from fedeval.slicing import SlicedEvaluation, evaluate_slices

if TYPE_CHECKING:
    from fedeval.evaluation import Evaluation
    from fedeval.multiclass_evaluation import MulticlassEvaluation

__all__ = ["evaluate"]


@overload
def evaluate(
    fed: Federation | Scan,
    privacy: PrivacyModel,
    *,
    slices: None = None,
    slice_values: None = None,
    **options: Any,
) -> Evaluation | MulticlassEvaluation: ...


@overload
def evaluate(
    fed: Federation | Scan,
    privacy: PrivacyModel,
    *,
    slices: Any,
    slice_values: Any,
    **options: Any,
) -> SlicedEvaluation: ...


def evaluate(
    fed: Federation | Scan,
    privacy: PrivacyModel,
    *,
    slices: Any = None,
    slice_values: Any = None,
    **options: Any,
) -> Evaluation | MulticlassEvaluation | SlicedEvaluation:
    """Evaluate a classifier on federated scores and labels, privately: one release.

    Parameters
    ----------
    fed : Federation or Scan
    privacy : privacy model
    slices : array-like of shape (n_examples,), or mapping client id → value, optional
        Evaluate every slice from one release (parallel composition):
        :func:`fedeval.slicing.evaluate_slices`, which returns a
        :class:`~fedeval.slicing.SlicedEvaluation`.
    slice_values : sequence, optional
        With ``slices``: the declared public slice values (any other value
        goes to the "other" slice, and is never published).
    **options
        Those of :func:`fedeval.evaluation.evaluate` (``public``, ``height``,
        ``rng``, ``ledger``, ...).

    Returns
    -------
    Evaluation, MulticlassEvaluation or SlicedEvaluation

    Raises
    ------
    ValueError
        ``slice_values`` without ``slices``, and every error of the release chosen.

    Notes
    -----
    Privacy: exactly one release, as documented by the function it goes to.
    """
    if not isinstance(fed, Federation | Scan):
        raise TypeError(f"fed must be a Federation or a Scan, got {type(fed).__name__}")
    if slices is None and slice_values is None:
        return evaluate_release(fed, privacy, **options)
    if slices is None:
        raise ValueError("slice_values was given without slices (each example's slice value)")
    return evaluate_slices(fed, privacy, slices=slices, slice_values=slice_values, **options)
