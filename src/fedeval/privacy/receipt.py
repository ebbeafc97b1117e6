"""The privacy receipt: one shape for what every release promised and charged.

A :class:`Receipt` is built by :func:`fedeval.privacy.mechanism_for.mechanism_for`
(the guarantee and the ledger entries of the mechanism it chose) and travels
with the release, the estimates decoded from it and the calibrators learned
from it. ``epsilon_spent`` is the budget charged: 0 for a release without
differential privacy, whose guarantee is :meth:`Guarantee.none`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any, Protocol

from fedeval.privacy.guarantee import Guarantee
from fedeval.privacy.ledger import LedgerEntry

__all__ = [
    "GUARANTEE_LINE_WIDTH",
    "SCOPE_ONE_RELEASE",
    "Receipt",
    "ReceiptAccessors",
    "compose",
    "entry_as_dict",
    "format_estimate",
    "privacy_fields",
    "short_model",
]

SCOPE_ONE_RELEASE = (
    "this release alone: other releases on the same data compose with it (run them in one "
    "fedeval.Context to have the total accounted)"
)


GUARANTEE_LINE_WIDTH = 120
"""The longest :attr:`Receipt.guarantee_line` (a terminal line, a table cell)."""


def short_model(model: str) -> str:
    """A privacy model's description without its budgets, each part once.

    ``"distributed DP (polya shares, ε=0.05 per example) + distributed DP (polya
    shares, ε=0.95 per example)"`` becomes ``"distributed DP (polya shares)"``:
    the items of the parentheses that state ε or δ go (a one-line guarantee
    states the total), and parts that then read the same are kept once.

    Parameters
    ----------
    model : str
        ``Receipt.model``: one ``describe()`` or several joined by ``" + "``.

    Returns
    -------
    str
    """
    parts = []
    for part in model.split(" + "):
        name, paren, rest = part.partition(" (")
        if paren and rest.endswith(")"):
            items = [
                i.strip()
                for i in rest[:-1].split(",")
                if not any(sym in i for sym in ("ε", "δ", "epsilon", "delta"))
            ]
            part = f"{name} ({', '.join(items)})" if items else name
        parts.append(part.strip())
    return " + ".join(dict.fromkeys(parts))


def format_estimate(value: float, se: float | None = None) -> str:
    """``"0.9312 ± 0.0041"`` (or ``"0.9312"`` without a standard error): for one-line reprs.

    Parameters
    ----------
    value : float
    se : float, optional

    Returns
    -------
    str
    """
    text = f"{value:.4f}" if math.isfinite(value) else "nan"
    return text if se is None else f"{text} ± {se:.2g}"


def privacy_fields(guarantee: Guarantee, epsilon_spent: float) -> str:
    """``"ε=1, unit='example'"`` (``"ε=0 (no DP), unit='none'"``): the privacy part of a repr.

    Parameters
    ----------
    guarantee : Guarantee
    epsilon_spent : float

    Returns
    -------
    str
    """
    eps = f"{epsilon_spent:.4g}" if guarantee.is_private else "0 (no DP)"
    delta = f", δ={guarantee.delta:.3g}" if guarantee.delta > 0 else ""
    return f"ε={eps}{delta}, unit={guarantee.unit!r}"


def _plain(value: Any) -> Any:
    """A copy of nested dicts, lists and tuples; other values as they are (immutable scalars)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    return value


def entry_as_dict(entry: LedgerEntry) -> dict[str, Any]:
    """A ledger entry as JSON-safe data (an infinite Rényi value becomes ``None``).

    Field by field with :func:`_plain` copies of the containers: what
    ``dataclasses.asdict`` gives, without its deep copy of every scalar (a tenth
    of a tiny release's time when its receipt is serialised).
    """
    out = {f.name: _plain(getattr(entry, f.name)) for f in fields(entry)}
    if out.get("rdp") is not None:
        out["rdp"] = [x if math.isfinite(x) else None for x in out["rdp"]]
    return out


@dataclass(frozen=True)
class Receipt:
    """What one release promised and what it charged.

    Attributes
    ----------
    model : str
        The privacy model in words (``model.describe()``).
    guarantee : Guarantee
        ε, δ, unit, neighbouring relation, public inputs and the mechanism in words.
    entries : tuple of LedgerEntry
        What the release charged to the budget ledger, one entry per budget
        share (e.g. one per hierarchy level); empty without DP.
    mechanism : str
        The noise (or randomiser) used, e.g. "Pólya shares summing to discrete Laplace".
    sensitivity : dict
        The sensitivity the noise was calibrated to (L1/L2 in noise units, the
        contribution bound, the split over parts), as the release used it.
    randomness : str
        Where the noise's random bits came from
        (:func:`fedeval.randomness.randomness_statement`): fresh OS entropy, or
        a seed, in which case the release has no privacy against anyone who
        knows it. Empty for a release without noise.
    scope : str
        What the guarantee covers: this release alone (a one-call function),
        or its place in a :class:`fedeval.Context` program.
    releases : int
        How many releases the receipt covers (a composed receipt adds them up),
        e.g. 2 for a noisy count planned from and the hierarchy released after it.
    """

    model: str
    guarantee: Guarantee
    entries: tuple[LedgerEntry, ...] = ()
    mechanism: str = "none"
    sensitivity: dict[str, Any] = field(default_factory=dict)
    randomness: str = ""
    scope: str = SCOPE_ONE_RELEASE
    releases: int = 1

    @property
    def guarantee_line(self) -> str:
        """The guarantee in one line of at most :data:`GUARANTEE_LINE_WIDTH` characters.

        ε, δ, the privacy unit, the neighbouring relation, the privacy model
        without its per-part budgets (the line states the total), and the
        number of releases, e.g. ``"(ε=1, δ=0)-DP per example (add/remove),
        distributed DP (polya shares), 2 releases"``. The full text a privacy
        reviewer checks is :attr:`guarantee_details`.

        Returns
        -------
        str
            One line, no newline; a long model name is shortened with "…".
        """
        g = self.guarantee
        model = short_model(self.model)
        if not g.is_private:
            # e.g. "secure aggregation (exact sums, no differential privacy)": its name only.
            name = model.partition(" (")[0]
            inner = "exact sums" if name in ("", "none") else f"{name}, exact sums"
            line = f"no differential privacy ({inner})"
        else:
            relation = "add/remove" if g.neighbouring == "add_remove" else "replace"
            releases = f"{self.releases} release" + ("s" if self.releases != 1 else "")
            head = f"(ε={g.epsilon:.4g}, δ={g.delta:.3g})-DP per {g.unit} ({relation})"
            room = GUARANTEE_LINE_WIDTH - len(head) - len(releases) - 4
            if len(model) > room:
                model = model[: max(room - 1, 0)].rstrip(" ,(") + "…"
            line = f"{head}, {model}, {releases}"
        return line[:GUARANTEE_LINE_WIDTH]

    @property
    def guarantee_details(self) -> str:
        """The guarantee in full (``receipt.guarantee.details``): every mechanism and sensitivity."""
        return self.guarantee.details

    @property
    def seeded(self) -> bool:
        """Whether the noise came from a caller's seed (no privacy against its holder)."""
        return self.randomness.startswith("seeded")

    @property
    def epsilon_spent(self) -> float:
        """ε charged (0 when the release gives no DP and charges nothing)."""
        return math.fsum(e.epsilon for e in self.entries)

    @property
    def delta_spent(self) -> float:
        return math.fsum(e.delta for e in self.entries)

    def rows(self) -> list[dict[str, Any]]:
        """One row per budget share: what was released, ε, δ, unit and relation."""
        g = self.guarantee
        if not self.entries:
            return [
                {
                    "release": "exact sums",
                    "epsilon": 0.0,
                    "delta": 0.0,
                    "unit": g.unit,
                    "neighbouring": g.relation,
                    "model": self.model,
                }
            ]
        return [
            {
                "release": e.label,
                "epsilon": e.epsilon,
                "delta": e.delta,
                "unit": e.unit,
                "neighbouring": g.relation,
                "model": self.model,
            }
            for e in self.entries
        ]

    def as_dict(self) -> dict[str, Any]:
        """JSON-safe form (the guarantee's ε is ``None`` when there is no DP)."""
        return {
            "model": self.model,
            "mechanism": self.mechanism,
            "guarantee": self.guarantee.as_dict(),
            "guarantee_line": self.guarantee_line,
            "epsilon_spent": self.epsilon_spent,
            "delta_spent": self.delta_spent,
            "sensitivity": dict(self.sensitivity),
            "entries": [entry_as_dict(e) for e in self.entries],
            "randomness": self.randomness,
            "scope": self.scope,
            "releases": self.releases,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Receipt:
        """Inverse of :meth:`as_dict` (for calibrators loaded from JSON)."""
        g = data["guarantee"]
        eps = math.inf if g.get("epsilon") is None else float(g["epsilon"])
        relation = str(g.get("neighbouring", ""))
        neighbouring = "replace" if relation.startswith("replace") else "add_remove"
        guarantee = Guarantee(
            eps,
            float(g.get("delta", 0.0)),
            g.get("unit", "none"),
            str(g.get("statement", "")),
            neighbouring,  # type: ignore[arg-type]
            tuple(g.get("public_inputs", ())),
        )
        entries = tuple(
            LedgerEntry(
                e["label"],
                e["epsilon"],
                e["delta"],
                e["unit"],
                dict(e.get("details", {})),
                rho=e.get("rho"),
                rdp=None
                if e.get("rdp") is None
                else tuple(math.inf if x is None else float(x) for x in e["rdp"]),
                failure_delta=float(e.get("failure_delta", 0.0)),
            )
            for e in data.get("entries", ())
        )
        return cls(
            str(data.get("model", "")),
            guarantee,
            entries,
            str(data.get("mechanism", "none")),
            dict(data.get("sensitivity", {})),
            str(data.get("randomness", "")),
            str(data.get("scope", SCOPE_ONE_RELEASE)),
            int(data.get("releases", 1)),
        )


class _CarriesReceipt(Protocol):
    @property
    def receipt(self) -> Receipt: ...


class ReceiptAccessors:
    """The privacy accessors of a release and of every result decoded from one.

    A class with a ``receipt`` (a field, as :class:`~fedeval.aggregation.Release`,
    or a property, as :class:`fedeval.Evaluation` and
    :class:`fedeval.MulticlassEvaluation`) gets the same ``epsilon_spent``,
    ``delta_spent``, ``guarantee`` and ``privacy_receipt()``, read from it.
    """

    @property
    def epsilon_spent(self: _CarriesReceipt) -> float:
        """ε charged by the release (0 without differential privacy)."""
        return self.receipt.epsilon_spent

    @property
    def delta_spent(self: _CarriesReceipt) -> float:
        return self.receipt.delta_spent

    @property
    def guarantee(self: _CarriesReceipt) -> Guarantee:
        return self.receipt.guarantee

    @property
    def guarantee_line(self: _CarriesReceipt) -> str:
        """The guarantee in one line (:attr:`Receipt.guarantee_line`)."""
        return self.receipt.guarantee_line

    @property
    def guarantee_details(self: _CarriesReceipt) -> str:
        """The guarantee in full (:attr:`Receipt.guarantee_details`)."""
        return self.receipt.guarantee_details

    def privacy_receipt(self: _CarriesReceipt) -> list[dict[str, Any]]:
        """Model, ε per release, unit and neighbouring relation: one row per ledger entry."""
        return self.receipt.rows()


def compose(receipts: list[Receipt], what: str) -> Receipt:
    """The receipt of several releases on the same data (basic composition: ε and δ add).

    Parameters
    ----------
    receipts : list of Receipt
        Releases with the same privacy unit.
    what : str
        What the composed result is, e.g. "DP ROC curve".
    """
    if not receipts:
        raise ValueError("compose needs at least one receipt")
    first = receipts[0].guarantee
    releases = sum(r.releases for r in receipts)
    if not first.is_private:
        return Receipt(
            receipts[0].model,
            first,
            (),
            receipts[0].mechanism,
            receipts[0].sensitivity,
            releases=releases,
        )
    eps = math.fsum(r.guarantee.epsilon for r in receipts)
    delta = math.fsum(r.guarantee.delta for r in receipts)
    statement = (
        f"{what}: "
        + "; ".join(
            f"[{i + 1}] {r.guarantee.statement} (ε={r.guarantee.epsilon:.4g})"
            for i, r in enumerate(receipts)
        )
        + "; composed sequentially"
    )
    public = tuple(dict.fromkeys(p for r in receipts for p in r.guarantee.public))
    guarantee = Guarantee(eps, delta, first.unit, statement, first.neighbouring, public)
    entries = tuple(e for r in receipts for e in r.entries)
    randomness = "; ".join(dict.fromkeys(r.randomness for r in receipts if r.randomness))
    if any(r.seeded for r in receipts) and not randomness.startswith("seeded"):
        randomness = "seeded (in part): " + randomness
    # Each part's model, once: e.g. "DistDP ε=0.05 + DistDP ε=0.95" for a count and
    # the release planned from it (the first part's alone would understate the spend).
    model = " + ".join(dict.fromkeys(r.model for r in receipts))
    return Receipt(
        model,
        guarantee,
        entries,
        "; ".join(r.mechanism for r in receipts),
        randomness=randomness,
        scope=receipts[0].scope,
        releases=releases,
    )
