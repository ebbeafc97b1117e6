"""The program layer: one population, one budget, every release composed.

Users run programs, not single calls: evaluate every week, calibrate then
evaluate, compare a challenger, slice by cohort. Each one-call function
(:func:`fedeval.evaluate`, :func:`fedeval.calibrate`, ...) states a guarantee
for its own release only; run the same calls through a :class:`Context` and
the guarantee covers the whole program::

    ctx = fe.Context(fed, budget=fe.Budget(epsilon=2.0, delta=1e-6))
    cal = ctx.calibrate(fe.DistributedDP(epsilon=0.5), method="bbq")
    ev = ctx.evaluate(fe.DistributedDP(epsilon=1.0))
    ctx.spent.epsilon, ctx.remaining.epsilon, ctx.receipt()

A Context holds

* **the population** (a Federation or a Scan) and the privacy unit it
  protects: one example or one client, with add/remove or replacement
  neighbours, fixed by the first release (or by ``unit=``/``neighbouring=``)
  and the same for every release after it;
* **one budget** (:class:`Budget`), fixed in advance, spent through one
  :class:`~fedeval.privacy.ledger.BudgetLedger`: a privacy filter that stays
  valid when each release is chosen after seeing the earlier ones (pure
  releases add their ε; Gaussian-type releases compose in zCDP or Rényi DP;
  :func:`fedeval.privacy.accounting.filter_reading` gives the proof). Every
  release is charged before any of its noise is drawn; one that does not fit
  is refused with :class:`~fedeval.privacy.ledger.BudgetExceededError` and
  nothing changes;
* **declared public facts** (:class:`~fedeval.public_facts.Public`): the only
  counts a result may publish exactly besides those the privacy model makes
  public;
* **the randomness**: one generator for every release (fresh OS entropy by
  default; a seed only for simulation, and the receipts say so).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, overload

from fedeval.data import Federation, Scan
from fedeval.privacy.guarantee import Neighbouring, PrivacyUnit
from fedeval.privacy.ledger import BudgetExceededError, BudgetLedger, Composition, LedgerEntry
from fedeval.privacy.models import PrivacyModel
from fedeval.privacy.receipt import GUARANTEE_LINE_WIDTH
from fedeval.public_facts import Public
from fedeval.randomness import RNGLike, as_generator, randomness_statement
from fedeval.validation import check_epsilon

if TYPE_CHECKING:
    from fedeval.calibration.base import Calibrator
    from fedeval.comparison import Comparison
    from fedeval.ecdf.federated import FederatedECDF
    from fedeval.evaluation import Evaluation
    from fedeval.metrics.hosmer_lemeshow import HosmerLemeshowResult
    from fedeval.monitoring import Monitor
    from fedeval.multiclass_evaluation import MulticlassEvaluation
    from fedeval.planning import Plan
    from fedeval.slicing import SlicedEvaluation

__all__ = ["Budget", "Context", "ContextPlan", "ProgramReceipt", "Spent"]


@dataclass(frozen=True)
class Budget:
    """The total (ε, δ) of a program, fixed before its first release.

    Parameters
    ----------
    epsilon : float
        > 0; ``math.inf`` records without limiting.
    delta : float
        In [0, 1). With δ = 0 only pure releases fit (Gaussian-type releases
        need δ > 0).
    composition : {"tight", "basic"}
        "tight" (default): pure releases add their ε; Gaussian-type releases
        (Skellam, discrete Gaussian, user-level rounds) also compose in zCDP or
        Rényi DP, far below the sum of their ε over many releases; the
        program's δ is shared between those tracks (half to basic
        composition), so a single Gaussian-type release must leave half of δ
        spare. "basic": the releases' own (ε, δ) add up (one Gaussian-type
        release may then use the whole δ).
    """

    epsilon: float
    delta: float = 0.0
    composition: Composition = "tight"

    def __post_init__(self) -> None:
        if self.epsilon != math.inf:
            object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        d = float(self.delta)
        if not 0.0 <= d < 1.0:
            raise ValueError(f"delta must lie in [0, 1), got {self.delta!r}")
        object.__setattr__(self, "delta", d)
        if self.composition not in ("tight", "basic"):
            raise ValueError(f"composition must be 'tight' or 'basic', got {self.composition!r}")


@dataclass(frozen=True)
class Spent:
    """An (ε, δ) pair read from a program's ledger."""

    epsilon: float
    delta: float

    def __str__(self) -> str:
        return f"ε={self.epsilon:.4g}, δ={self.delta:.3g}"


@dataclass(frozen=True)
class ProgramStep:
    """One release of a program, as the program's receipt lists it."""

    what: str
    model: str
    epsilon: float
    delta: float
    receipt: dict[str, Any]


@dataclass(frozen=True)
class ProgramReceipt:
    """What a whole program promised and spent.

    Attributes
    ----------
    budget : Budget
        The guarantee of the whole program: it is (budget.epsilon,
        budget.delta)-DP for the context's unit, whatever its releases.
    spent : Spent
        The smallest budget that would have admitted the releases so far.
    track : str
        The composition that gives ``spent``: "pure" (basic composition),
        "zcdp" or "rdp".
    unit, neighbouring : str
        The protected change.
    public : dict
        The declared public facts.
    randomness : str
        Where the program's random bits come from.
    steps : list of ProgramStep
        Every release, in order, with its own receipt.
    """

    budget: Budget
    spent: Spent
    track: str
    unit: str
    neighbouring: str
    public: dict[str, Any]
    randomness: str
    steps: tuple[ProgramStep, ...] = ()

    @property
    def statement(self) -> str:
        """The program's guarantee in one sentence."""
        d = f", δ={self.budget.delta:.3g}" if self.budget.delta else ""
        return (
            f"the whole program is (ε={self.budget.epsilon:.4g}{d})-DP for "
            f"{_relation(self.unit, self.neighbouring)}: a privacy filter fixed in advance, valid "
            "when each release is chosen after seeing the earlier ones; its "
            f"{len(self.steps)} release(s) so far use {self.spent} ({self.track} composition)"
        )

    @property
    def guarantee_line(self) -> str:
        """The program's guarantee in one line (at most ``GUARANTEE_LINE_WIDTH`` characters).

        The budget fixed in advance, the unit and relation, the number of
        releases and what they used, e.g. ``"(ε=3, δ=1e-06)-DP per client
        (add/remove), program of 4 releases, spent ε=2.1, δ=1e-06 (zcdp)"``.
        The sentence a reviewer reads is :attr:`statement`; every release's
        receipt is in :attr:`guarantee_details`.
        """
        relation = "add/remove" if self.neighbouring == "add_remove" else "replace"
        n = len(self.steps)
        line = (
            f"(ε={self.budget.epsilon:.4g}, δ={self.budget.delta:.3g})-DP per {self.unit} "
            f"({relation}), program of {n} release{'s' if n != 1 else ''}, "
            f"spent {self.spent} ({self.track})"
        )
        return line[:GUARANTEE_LINE_WIDTH]

    @property
    def guarantee_details(self) -> str:
        """The program's statement, then every release with its own full guarantee."""
        lines = [self.statement]
        for i, s in enumerate(self.steps):
            statement = s.receipt.get("guarantee", {}).get("statement", "")
            lines.append(f"[{i + 1}] {s.what} ({s.model}): {statement}")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        """JSON-safe form."""
        return {
            "guarantee_line": self.guarantee_line,
            "budget": {
                "epsilon": _finite(self.budget.epsilon),
                "delta": self.budget.delta,
            },
            "spent": {"epsilon": _finite(self.spent.epsilon), "delta": self.spent.delta},
            "track": self.track,
            "unit": self.unit,
            "neighbouring": self.neighbouring,
            "public": dict(self.public),
            "randomness": self.randomness,
            "statement": self.statement,
            "releases": [
                {
                    "what": s.what,
                    "model": s.model,
                    "epsilon": s.epsilon,
                    "delta": s.delta,
                    "receipt": s.receipt,
                }
                for s in self.steps
            ],
        }

    def __str__(self) -> str:
        lines = [self.statement]
        lines += [
            f"  [{i + 1}] {s.what}: ε={s.epsilon:.4g}"
            + (f", δ={s.delta:.3g}" if s.delta else "")
            + f" ({s.model})"
            for i, s in enumerate(self.steps)
        ]
        return "\n".join(lines)


@dataclass(frozen=True)
class ContextPlan:
    """A release's plan inside a program: its parameters, errors, cost and the budget after it.

    Attributes
    ----------
    plan : Plan
        Parameters and predicted errors (:func:`fedeval.plan`).
    fits : bool
        Whether the release fits in what remains.
    spent_after, remaining_after : Spent
        The program's spend, and what remains, if the release is made.
    """

    plan: Plan
    fits: bool
    spent_after: Spent
    remaining_after: Spent


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _relation(unit: str, neighbouring: str) -> str:
    return ("adding or removing one " if neighbouring == "add_remove" else "replacing one ") + unit


@dataclass
class Context:
    """One population, one budget, declared public facts and one source of randomness.

    Parameters
    ----------
    data : Federation or Scan
        The population every release of the program reads.
    budget : Budget
        The program's total (ε, δ), fixed now.
    public : Public, optional
        Facts declared public (:class:`~fedeval.public_facts.Public`).
    rng : int, Generator or None
        None (default): fresh OS entropy (ChaCha20). An int seed is for
        reproducible simulation only: every DP release then warns and its
        receipt says the noise is known to whoever knows the seed.
    unit : {"example", "client"}, optional
        The protected unit; by default the first DP release's.
    neighbouring : {"add_remove", "replace"}, optional
        The neighbouring relation; by default the first DP release's.

    Raises
    ------
    TypeError
        ``data`` is not a Federation or a Scan.
    ValueError
        A bad budget, or declared facts that contradict the data's declared domain.

    Notes
    -----
    Privacy: the program is (budget.epsilon, budget.delta)-DP for the
    context's unit and relation, whatever releases it makes and in whatever
    order, because every release is charged to one filter before its noise
    is drawn. Releases whose guarantee is for another unit or relation are
    refused: a client-level guarantee and an example-level one do not compose
    into either without group privacy, which fedeval does not assume. Secure
    aggregation (exact sums) is refused in a context with a finite budget.
    """

    data: Federation | Scan
    budget: Budget
    public: Public = field(default_factory=Public)
    rng: RNGLike = None
    unit: PrivacyUnit | None = None
    neighbouring: Neighbouring | None = None
    _ledger: BudgetLedger = field(init=False, repr=False)
    _gen: Any = field(init=False, repr=False)
    _steps: list[ProgramStep] = field(init=False, repr=False, default_factory=list)

    def __post_init__(self) -> None:
        if not isinstance(self.data, Federation | Scan):
            raise TypeError(f"data must be a Federation or a Scan, got {type(self.data).__name__}")
        if not isinstance(self.budget, Budget):
            raise TypeError(f"budget must be a fedeval.Budget, got {type(self.budget).__name__}")
        if self.public is None:
            self.public = Public()
        if not isinstance(self.public, Public):
            raise TypeError(f"public must be a fedeval.Public, got {type(self.public).__name__}")
        self.public.check_domain(self.data)
        if self.unit not in (None, "example", "client"):
            raise ValueError(f"unit must be 'example' or 'client', got {self.unit!r}")
        if self.neighbouring not in (None, "add_remove", "replace"):
            raise ValueError(
                f"neighbouring must be 'add_remove' or 'replace', got {self.neighbouring!r}"
            )
        self._ledger = BudgetLedger(
            self.budget.epsilon, self.budget.delta, composition=self.budget.composition
        )
        self._ledger.scope = (
            "part of a fedeval.Context program: every release on this population is charged to "
            f"one privacy filter of total ε={self.budget.epsilon:.4g}"
            + (f", δ={self.budget.delta:.3g}" if self.budget.delta else "")
            + ", which the whole program satisfies (see the context's receipt)"
        )
        self._gen = as_generator(self.rng)

    # ------------------------------------------------------------ read-outs
    @property
    def spent(self) -> Spent:
        """The smallest budget that admits every release so far."""
        r = self._ledger.reading()
        return Spent(r.epsilon, r.delta)

    @property
    def remaining(self) -> Spent:
        """Budget minus spent (a release of at most this much pure ε still fits)."""
        s = self.spent
        return Spent(
            max(self.budget.epsilon - s.epsilon, 0.0), max(self.budget.delta - s.delta, 0.0)
        )

    @property
    def ledger(self) -> BudgetLedger:
        """The program's ledger (read it; charge only through the context's releases)."""
        return self._ledger

    def receipt(self) -> ProgramReceipt:
        """Every release, composed: what the whole program promised and spent."""
        r = self._ledger.reading()
        return ProgramReceipt(
            self.budget,
            Spent(r.epsilon, r.delta),
            r.track,
            self.unit or "example",
            self.neighbouring or "add_remove",
            self.public.as_dict(),
            randomness_statement(self._gen),
            tuple(self._steps),
        )

    # ----------------------------------------------------------- the checks
    def _admit(self, privacy: PrivacyModel) -> None:
        """Refuse a release whose guarantee is for another unit or relation than the program's."""
        if getattr(privacy, "regime", None) == "exact":
            if math.isfinite(self.budget.epsilon):
                raise BudgetExceededError(
                    "secure aggregation releases exact sums (no differential privacy, ε = ∞); "
                    f"this context's budget is ε={self.budget.epsilon:.4g}. Use a DP model, or a "
                    "Context with Budget(epsilon=math.inf) to record without a limit"
                )
            return
        unit = str(privacy.unit)
        relation = str(privacy.neighbouring)
        if unit not in ("example", "client"):
            raise ValueError(
                f"a Context composes example- or client-level releases; {privacy.describe()} "
                f"protects one {unit}"
            )
        if self.unit is None:
            self.unit = unit  # type: ignore[assignment]
        if self.neighbouring is None:
            self.neighbouring = relation  # type: ignore[assignment]
        if unit != self.unit or relation != self.neighbouring:
            raise ValueError(
                f"this program protects {_relation(str(self.unit), str(self.neighbouring))}; "
                f"{privacy.describe()} protects {_relation(unit, relation)}. Releases for "
                "different protected changes do not compose into one guarantee; run them in "
                "separate contexts (or choose models with the same unit and relation)"
            )

    def _record(self, what: str, privacy: PrivacyModel, before: int, result: Any) -> None:
        new = self._ledger.entries[before:]
        receipt: Any = getattr(result, "receipt", None)
        as_dict = receipt.as_dict() if receipt is not None and hasattr(receipt, "as_dict") else {}
        self._steps.append(
            ProgramStep(
                what,
                privacy.describe(),
                math.fsum(e.epsilon for e in new),
                math.fsum(e.delta for e in new),
                as_dict,
            )
        )

    # ------------------------------------------------------------- releases
    @overload
    def evaluate(
        self, privacy: PrivacyModel, *, slices: None = None, **options: Any
    ) -> Evaluation | MulticlassEvaluation: ...

    @overload
    def evaluate(
        self, privacy: PrivacyModel, *, slices: Any, **options: Any
    ) -> SlicedEvaluation: ...

    def evaluate(
        self, privacy: PrivacyModel, **options: Any
    ) -> Evaluation | MulticlassEvaluation | SlicedEvaluation:
        """:func:`fedeval.evaluate` on the context's data, charged to its budget.

        ``options`` are :func:`fedeval.evaluate`'s (not ``rng``, ``ledger`` or
        ``public``: the context supplies them); with ``slices=`` and
        ``slice_values=`` every slice is evaluated from one release
        (:class:`~fedeval.slicing.SlicedEvaluation`, one evaluation's ε).
        """
        from fedeval.entry_points import evaluate

        self._forbid(options)
        self._admit(privacy)
        before = len(self._ledger.entries)
        ev = evaluate(
            self.data, privacy, public=self.public, rng=self._gen, ledger=self._ledger, **options
        )
        self._record(
            "evaluate" if "slices" not in options else "evaluate (slices)", privacy, before, ev
        )
        return ev

    def compare(self, fed_b: Any, privacy: PrivacyModel, **options: Any) -> Comparison:
        """:func:`fedeval.compare` of the context's data (model A) with ``fed_b`` (model B).

        ``fed_b`` holds the same examples (labels, clients, order) scored by
        the other model, or just its scores: the same population, so one
        release charged to the context's budget.
        """
        from fedeval.comparison import compare

        self._forbid(options)
        self._admit(privacy)
        before = len(self._ledger.entries)
        out = compare(
            self.data, fed_b, privacy, public=self.public, rng=self._gen, ledger=self._ledger,
            **options,
        )  # fmt: skip
        self._record("compare", privacy, before, out)
        return out

    def calibrate(self, privacy: PrivacyModel, **options: Any) -> Calibrator:
        """:func:`fedeval.calibrate` on the context's data, charged to its budget."""
        from fedeval.calibration.api import calibrate

        self._forbid(options)
        self._admit(privacy)
        before = len(self._ledger.entries)
        cal = calibrate(self.data, privacy, rng=self._gen, ledger=self._ledger, **options)
        self._record(f"calibrate ({options.get('method', 'bbq')})", privacy, before, cal)
        return cal

    def ecdf(self, grid: Any, privacy: PrivacyModel, **options: Any) -> FederatedECDF:
        """:func:`fedeval.ecdf.federated_ecdf` on the context's data, charged to its budget."""
        from fedeval.ecdf.federated import federated_ecdf

        self._forbid(options)
        self._admit(privacy)
        before = len(self._ledger.entries)
        out = federated_ecdf(
            self.data, grid, privacy, rng=self._gen, ledger=self._ledger, **options
        )
        self._record("ECDF", privacy, before, out.snapshot)
        return out

    def hosmer_lemeshow(self, privacy: PrivacyModel, **options: Any) -> HosmerLemeshowResult:
        """:func:`fedeval.metrics.hosmer_lemeshow` on the context's data, charged to its budget."""
        from fedeval.metrics.hosmer_lemeshow import hosmer_lemeshow

        self._forbid(options)
        self._admit(privacy)
        data = self.data.to_federation() if isinstance(self.data, Scan) else self.data
        before = len(self._ledger.entries)
        out = hosmer_lemeshow(
            data.scores, data.labels, privacy, rng=self._gen, ledger=self._ledger, **options
        )
        self._record("Hosmer–Lemeshow", privacy, before, out)
        return out

    def monitor(self, privacy: PrivacyModel, **options: Any) -> Monitor:
        """:func:`fedeval.monitor` charged to the context's budget: all its periods, now.

        ``options`` are :class:`~fedeval.monitoring.Monitor`'s (``horizon`` and
        ``examples_per_period`` among them; ``score_range`` defaults to the
        context's data's). The periods' data are given to ``update``; the
        charge covers every period of the horizon and is made here, before the
        first period's noise.
        """
        from types import SimpleNamespace

        from fedeval.monitoring import Monitor

        self._forbid(options)
        self._admit(privacy)
        options.setdefault("score_range", tuple(self.data.score_range))
        before = len(self._ledger.entries)
        mon = Monitor(privacy, rng=self._gen, ledger=self._ledger, **options)
        self._record(
            f"monitor ({mon.horizon} periods)",
            privacy,
            before,
            SimpleNamespace(receipt=mon.receipt()),
        )
        return mon

    def plan(self, privacy: PrivacyModel, **options: Any) -> ContextPlan:
        """Parameters, predicted errors, and the budget left after an evaluation under ``privacy``.

        From public inputs only: the declared facts and the counts the model
        makes public. When no size is public, pass ``n_examples=`` as an
        assumption (it is not published and not checked); the release itself
        would then plan from a noisy count.
        """
        from fedeval.planning import plan
        from fedeval.privacy.mechanism_for import mechanism_for
        from fedeval.public_facts import COUNT_SHARE, public_counts
        from fedeval.sketches.client_count import ExampleCountSketch
        from fedeval.sketches.hierarchy import HierarchySketch, HierarchySpec

        counts = public_counts(privacy, self.data, self.public)
        assumed = options.pop("n_examples", None)
        m = counts.n_examples if counts.n_examples is not None else assumed
        n_clients = counts.n_clients
        if m is None and n_clients is None:
            raise ValueError(
                "no size is public under this model: declare one (fe.Public(n_clients=... or "
                "n_examples=...)) or pass n_examples= as an assumption for the plan"
            )
        needs_count = counts.n_examples is None and counts.n_clients is None
        main = privacy.scaled(1.0 - COUNT_SHARE) if needs_count else privacy
        chosen = plan(main, n_clients=n_clients, n_examples=m, **options)
        n_sim = max(1, n_clients or m or 1)
        entries: list[LedgerEntry] = []
        if needs_count:
            entries += mechanism_for(
                privacy.scaled(COUNT_SHARE), ExampleCountSketch(), n_clients=n_sim
            ).ledger_entries
        sketch = HierarchySketch(
            HierarchySpec(chosen.height, chosen.branching, self.data.score_range, 2)
        )
        entries += mechanism_for(main, sketch, n_clients=n_sim).ledger_entries
        after = self._ledger.reading(entries)
        fits = self._ledger.can_afford_all(entries)
        remaining = Spent(
            max(self.budget.epsilon - after.epsilon, 0.0),
            max(self.budget.delta - after.delta, 0.0),
        )
        return ContextPlan(chosen, fits, Spent(after.epsilon, after.delta), remaining)

    @staticmethod
    def _forbid(options: dict[str, Any]) -> None:
        given = sorted(k for k in ("rng", "ledger", "public") if k in options)
        if given:
            raise TypeError(
                f"{', '.join(given)}: the context supplies these (its randomness, its ledger and "
                "its declared public facts)"
            )
