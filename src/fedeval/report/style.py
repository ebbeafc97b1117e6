"""Shared look of fedeval's HTML reports: one stylesheet, number formats and page shell.

Every report is one self-contained HTML file: the stylesheet is inline and every
figure is a PNG embedded as a ``data:`` URI, so the page can be mailed or
archived and renders offline. Nothing here imports numpy or matplotlib.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "STYLE",
    "fmt",
    "fmt_privacy",
    "html_table",
    "md_table",
    "page",
    "receipt_block",
    "receipt_lines",
    "unit_in_words",
]

STYLE = """
:root{--fg:#1d2330;--muted:#5b6475;--line:#dde2ea;--bg:#f6f8fb;--accent:#2a6fdb}
*{box-sizing:border-box}
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);
 max-width:1120px;margin:0 auto;padding:1.5em 1.5em 4em}
header{border-bottom:3px solid var(--accent);margin-bottom:1.5em;padding-bottom:.6em}
header h1{margin:.1em 0 .2em;font-size:1.7em}
header .input{color:var(--muted);margin:0}
header .input b{color:var(--fg)}
h2{font-size:1.25em;margin:1.8em 0 .6em;border-bottom:1px solid var(--line);padding-bottom:.2em}
h3{font-size:1.05em;margin:1.3em 0 .4em}
.figures{display:flex;flex-wrap:wrap;gap:1em}
.figures figure{flex:1 1 400px;max-width:540px}
.figures.wide figure{max-width:none;flex-basis:100%}
figure{margin:0;background:#fff;border:1px solid var(--line);border-radius:6px;padding:.5em}
figure img{display:block;width:100%;height:auto}
figcaption{color:var(--muted);font-size:.85em;max-width:520px;padding:.3em .2em 0}
.table-wrap{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;font-size:13px;margin:.4em 0 1em;font-variant-numeric:tabular-nums}
th,td{padding:4px 9px;border-bottom:1px solid var(--line);text-align:right;white-space:nowrap}
th{background:var(--bg);font-weight:600;border-bottom:2px solid var(--line);white-space:normal;
 vertical-align:bottom}
td:first-child,th:first-child{text-align:left}
td.text{white-space:normal;text-align:left;min-width:14em}
tr:hover td{background:#fafbfd}
.receipt{background:var(--bg);border:1px solid var(--line);border-radius:6px;padding:.8em 1.1em;
 margin:.8em 0}
.receipt dl{display:grid;grid-template-columns:max-content 1fr;gap:.25em 1.2em;margin:.3em 0}
.receipt dt{color:var(--muted)}
.receipt dd{margin:0}
details{margin:.4em 0}
summary{cursor:pointer;color:var(--accent)}
.note{color:var(--muted);font-size:.9em}
"""


def fmt(x: Any) -> str:
    """A table cell: floats with 4 decimals (scientific when tiny), NaN as "n/a", ints with commas."""
    if isinstance(x, bool) or x is None:
        return "" if x is None else str(x)
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, float):
        if math.isnan(x):
            return "n/a"
        if x == 0:
            return "0"
        if abs(x) < 1e-3:
            return f"{x:.1e}"
        return f"{x:.4f}" if abs(x) < 1e4 else f"{x:,.0f}"
    return str(x)


def fmt_privacy(x: float | None) -> str:
    """ε or δ for people: 4 significant digits, scientific notation below 10⁻³, ∞ for no DP.

    ``2.9999985582170847`` reads ``3``; ``1e-5`` reads ``1.0e-05``; 0 reads ``0``.
    """
    if x is None or (isinstance(x, float) and math.isinf(x)):
        return "∞ (no differential privacy)"
    x = float(x)
    if x == 0:
        return "0"
    if abs(x) < 1e-3:
        return f"{x:.1e}"
    return f"{x:.4g}"


_UNITS = {
    "example": "one example (one row of the input)",
    "client": "one client (all of its rows)",
    "label": "one example's label (scores are public)",
    "none": "none: no differential privacy (secure aggregation hides each client's "
    "summary, but the sum is released exactly)",
}


def unit_in_words(unit: str) -> str:
    """The privacy unit of a guarantee in words."""
    return _UNITS.get(unit, unit)


#: Characters beyond which a table cell of text (with spaces) may wrap.
TEXT_CELL = 28


def md_table(rows: Sequence[Mapping[str, Any]]) -> str:
    if not rows:
        return ""
    cols = list(dict.fromkeys(k for r in rows for k in r))
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(fmt(r.get(c)) for c in cols) + " |" for r in rows]
    return "\n".join(lines)


def html_table(rows: Sequence[Mapping[str, Any]]) -> str:
    if not rows:
        return ""
    cols = list(dict.fromkeys(k for r in rows for k in r))
    head = "".join(f"<th>{html.escape(c.replace('_', ' '))}</th>" for c in cols)

    def cell(value: Any) -> str:
        text = fmt(value)
        # Numbers stay on one line; prose (a model's name, a note) wraps so the table fits.
        wrap = " class='text'" if len(text) > TEXT_CELL and " " in text else ""
        return f"<td{wrap}>{html.escape(text)}</td>"

    body = "".join("<tr>" + "".join(cell(r.get(c)) for c in cols) + "</tr>" for r in rows)
    return (
        f"<div class='table-wrap'><table><thead><tr>{head}</tr></thead>"
        f"<tbody>{body}</tbody></table></div>"
    )


def page(title: str, header_lines: Sequence[str], body: str) -> str:
    """A complete HTML document: inline stylesheet, a header, then ``body`` (already HTML)."""
    lines = "".join(f"<p class='input'>{line}</p>" for line in header_lines)
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width,initial-scale=1'>"
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>"
        f"<header><h1>{html.escape(title)}</h1>{lines}</header>{body}</body></html>"
    )


def _receipt_items(receipt: Any, extra_public: Sequence[str] = ()) -> list[tuple[str, str]]:
    g = receipt.guarantee
    # The headline first: the guarantee in one line; the paragraph stays folded below.
    line = getattr(receipt, "guarantee_line", None)
    items = [("guarantee", str(line))] if line else []
    items += [
        ("privacy model", str(receipt.model)),
        ("protects", unit_in_words(g.unit)),
        ("neighbouring datasets", g.relation),
        ("ε spent", fmt_privacy(receipt.epsilon_spent if g.is_private else None)),
    ]
    if g.is_private:
        items.append(("δ spent", fmt_privacy(receipt.delta_spent)))
    items += [
        ("noise", str(receipt.mechanism)),
        ("treated as public", "; ".join([*g.public, *extra_public]) or "nothing"),
    ]
    return items


def receipt_block(receipt: Any, extra_public: Sequence[str] = ()) -> str:
    """A privacy receipt (:class:`fedeval.privacy.receipt.Receipt`) as a readable HTML block.

    The unit in words, the neighbouring relation, ε and δ (scientific notation when
    small), the noise, what is treated as public, the budget split (folded) and the
    full guarantee (folded).
    """
    dl = "".join(
        f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>"
        for k, v in _receipt_items(receipt, extra_public)
    )
    budget = [
        {"release": e.label, "ε": fmt_privacy(e.epsilon), "δ": fmt_privacy(e.delta)}
        for e in receipt.entries
    ]
    split = (
        f"<details><summary>budget split over {len(budget)} release(s)</summary>"
        f"{html_table(budget)}</details>"
        if budget
        else ""
    )
    return (
        f"<div class='receipt'><dl>{dl}</dl>{split}<details><summary>the guarantee in full"
        f"</summary><p class='note'>{html.escape(receipt.guarantee.details)}</p></details></div>"
    )


def receipt_lines(receipt: Any, extra_public: Sequence[str] = ()) -> list[str]:
    """The same receipt as Markdown bullet lines."""
    return [f"- {k}: {v}" for k, v in _receipt_items(receipt, extra_public)] + [""]
