"""The Flower server's side: from summed replies to the release and the evaluation.

The server runs the pipeline's own server steps,
:func:`~fedeval.aggregation.finish_sum` (a secure or plaintext sum of client
vectors) and :func:`~fedeval.aggregation.finish_reports` (per-level sums of
local-DP reports), with the mechanism the plan describes, then the sketch's
decode. Nothing is re-implemented here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fedeval.aggregation import finish_reports, finish_sum
from fedeval.evaluation import Evaluation, resolve_parameters
from fedeval.flower.plan import EvaluationPlan
from fedeval.flower.secagg import clipping_delta
from fedeval.privacy.guarantee import Guarantee
from fedeval.privacy.mechanism_for import Mechanism
from fedeval.privacy.sampling import assign_groups
from fedeval.public_facts import client_count_public
from fedeval.randomness import RNGLike, as_generator
from fedeval.sketches.hierarchical_histogram import HierarchicalHistogram

__all__ = [
    "RunFacts",
    "assign_levels",
    "build_evaluation",
    "decode_ldp",
    "decode_sum",
    "release_mechanism",
]


@dataclass(frozen=True)
class RunFacts:
    """What the Flower server observed, attached to the result.

    Counts only, and only where they are public: a released result names no
    client (the server log does, for the operator) and states no client's
    size. Under a privacy model where the number of participating clients is
    not public (:func:`~fedeval.flower.run_privacy.run_counts`) every count is
    ``None`` and ``counts`` says why.

    Attributes
    ----------
    n_selected : int or None
        Nodes selected for the run.
    n_used : int or None
        Clients whose reply is in the release.
    n_failed : int or None
        Clients that could not load their data, timed out or dropped out.
    n_rejected : int or None
        Plaintext replies outside the range of any honest reply.
    secure_aggregation : bool
        Whether the sum went through SecAgg+.
    secagg : dict
        The SecAgg+ parameters (public: planned from public inputs only).
    counts : str
        Whether the counts are published, and why.
    secure_sum : dict
        What the sum's transport is and assumes
        (:func:`~fedeval.flower.masks.secure_sum_statement`); empty when the
        setting sends no sum.
    """

    n_selected: int | None
    n_used: int | None
    n_failed: int | None = 0
    n_rejected: int | None = 0
    secure_aggregation: bool = True
    secagg: dict[str, Any] = field(default_factory=dict)
    counts: str = "public"
    secure_sum: dict[str, Any] = field(default_factory=dict)


def release_mechanism(
    plan: EvaluationPlan,
    n_received: int,
    *,
    clip_probability: float = 0.0,
    transport: str | None = None,
) -> Mechanism:
    """The mechanism of the release decoded from a sum of ``n_received`` replies.

    The plan's mechanism as it stands with ``n_received`` shares
    (:meth:`~fedeval.privacy.mechanism_for.Mechanism.when_received`), plus the
    δ of SecAgg+ clipping an honest share, with the ε that holds
    (:func:`~fedeval.flower.secagg.clipping_delta`). The server charges it to
    the run's ledger before the round (with all shares) and decodes with it.
    ``transport`` (the secure sum's one-line statement,
    :func:`~fedeval.flower.masks.secure_sum_statement`) is appended to the
    guarantee's statement: what the guarantee relies on.
    """
    mech = plan.mechanism()
    if transport:
        mech = _with_statement(mech, transport)
    # The clipping δ scales with the ε that holds for the shares that arrived.
    eps = mech.when_received(n_received).guarantee.epsilon
    eps = eps if math.isfinite(eps) else 0.0
    return mech.with_added_delta(
        clipping_delta(eps, clip_probability),
        "SecAgg+ clipping of honest noise shares",
        {"clip_probability": clip_probability},
    )


def decode_sum(
    plan: EvaluationPlan,
    summed: NDArray[np.int64],
    n_received: int,
    *,
    clip_probability: float = 0.0,
    transport: str | None = None,
) -> HierarchicalHistogram:
    """The released hierarchy from the sum of exact or noise-share replies.

    With fewer shares than the threshold the guarantee is the one that holds
    for that many shares (:meth:`~fedeval.privacy.mechanism_for.Mechanism.when_received`,
    applied by :func:`~fedeval.aggregation.finish_sum`); the probability that
    SecAgg+ clipped an honest share is added to δ (:func:`release_mechanism`).
    Noise shares sent in plaintext (``plan.plaintext_shares``) keep the
    guarantee of one share seen alone, whatever number of replies arrive.

    Parameters
    ----------
    plan : EvaluationPlan
    summed : ndarray of int64, shape (plan.vector_length,)
    n_received : int
        Contributions in the sum, or a public stand-in for it (the declared
        cohort) when their number is not public: it sets the stated variance.
    clip_probability : float
        Probability that clipping touched an honest share.
    transport : str, optional
        The secure sum's statement, appended to the guarantee (:func:`release_mechanism`).
    """
    mech = release_mechanism(
        plan, n_received, clip_probability=clip_probability, transport=transport
    )
    vec = np.asarray(summed, dtype=np.int64)
    sketch = plan.sent_sketch
    if vec.shape != (sketch.length,):
        raise ValueError(f"summed vector has shape {vec.shape}, expected ({sketch.length},)")
    tree: HierarchicalHistogram = finish_sum(sketch, mech, vec, n_received, path="flower").decode()
    return tree


def _with_statement(mech: Mechanism, more: str) -> Mechanism:
    """The mechanism whose guarantee (and target guarantee) statement ends with ``more``."""

    def add(g: Guarantee) -> Guarantee:
        return replace(g, statement=f"{g.statement}; {more}" if g.statement else more)

    target = None if mech.target is None else add(mech.target)
    return replace(mech, guarantee=add(mech.guarantee), target=target)


def decode_ldp(
    plan: EvaluationPlan,
    raw_by_level: Sequence[NDArray[np.int64]],
    n_reports_by_level: NDArray[np.int64],
    clients_by_level: NDArray[np.int64],
) -> HierarchicalHistogram:
    """The released hierarchy from per-level sums of local-DP reports.

    Parameters
    ----------
    plan : EvaluationPlan
    raw_by_level : list of ndarray of int64
        Level k (index k-1): summed reports, length 2·b^k.
    n_reports_by_level : ndarray of int64, shape (h,)
        Reports (examples) per level.
    clients_by_level : ndarray of int64, shape (h,)
        Clients per level (m_k).
    """
    mech = plan.mechanism()
    if mech.placement != "local":
        raise ValueError("decode_ldp handles local-DP plans; use decode_sum otherwise")
    tree: HierarchicalHistogram = finish_reports(
        plan.sketch,
        mech,
        list(raw_by_level),
        np.asarray(n_reports_by_level),
        np.asarray(clients_by_level),
        path="flower",
    ).decode()
    return tree


def build_evaluation(
    tree: HierarchicalHistogram,
    plan: EvaluationPlan,
    *,
    n_buckets: int | None = None,
    n_quantiles: int | None = None,
    interpolation: str = "pchip",
    pr_strategy: str = "separate",
    auc_buckets: str = "dense",
    height_planned: bool = False,
    bootstrap_replicates: int = 200,
    seed: int = 0,
    facts: RunFacts | None = None,
    n_clients: int | None = None,
    n_clients_source: str | None = None,
) -> Evaluation:
    """An :class:`~fedeval.evaluation.Evaluation` from a decoded (raw) tree.

    Same post-processing and parameter rules as :func:`fedeval.evaluate`
    (consistency, bucket and quantile defaults from :func:`fedeval.plan`), so
    :func:`fedeval.report.write_report` writes the same report. The height is
    the plan's (from the number of clients); buckets and quantiles come from
    the release's decoded total, noisy under DP. ``parameters``
    additionally holds ``"flower"``: the facts of the run (the numbers of
    clients selected, used, failed and rejected where they are public; SecAgg+
    settings; the secure sum's statement).

    ``n_clients`` is the public number of clients the parameters state (a
    declared cohort size, or the number used when it is public), with
    ``n_clients_source`` saying which; by default the number used when the
    model makes it public, else None.
    """
    model = plan.model
    mech = plan.mechanism()
    if n_clients_source is None:
        public = facts is not None and facts.n_used is not None and client_count_public(model)
        n_clients = facts.n_used if public and facts is not None else None
        n_clients_source = (
            "the number of clients whose replies are in the release (public under the model)"
            if public
            else "not public under the privacy model, and no cohort size was declared"
        )
    # Buckets and quantiles are chosen after the release, from its decoded total:
    # post-processing of the noisy counts under DP, the exact sum under SA alone.
    source = (
        "the exact total of the release (secure aggregation: no DP)"
        if mech.exact
        else "decoded from the noisy release (post-processing)"
    )
    chosen, params = resolve_parameters(
        model,
        n_clients=n_clients,
        n_examples=max(1, round(float(tree.totals().sum()))),
        n_examples_source=source,
        height=plan.height,
        branching=plan.branching,
        n_buckets=n_buckets,
        n_quantiles=n_quantiles,
        interpolation=interpolation,
        pr_strategy=pr_strategy,
        auc_buckets=auc_buckets,
        level_budget="assign" if mech.placement == "local" else "split",
        path="flower",
    )
    params["planned"]["height"] = height_planned
    params["public_inputs"]["n_clients"] = n_clients_source
    if facts is not None:
        params["flower"] = asdict(facts)
    consistent = tree if tree.is_consistent else tree.consistent()
    return Evaluation(consistent, params, chosen, bootstrap_replicates, seed)


def assign_levels(n_clients: int, height: int, rng: RNGLike) -> NDArray[np.int64]:
    """Levels 1..h for local-DP clients: a uniformly random near-equal split."""
    return assign_groups(n_clients, height, as_generator(rng)) + 1
