"""``membrane inspect --html``: one self-contained page that draws the prompt against its budget.

The page's skeleton and stylesheet live in ``page.html`` beside this module, a
:class:`string.Template`; this module builds the repeated parts (bar segments, breakpoint marks,
table rows, message pieces) and fills the placeholders. Every value that comes from the prompt
or its metadata is HTML-escaped on the way in.
"""

from __future__ import annotations

import html
import json
from functools import cache
from importlib import resources
from string import Template
from typing import TYPE_CHECKING

from membrane.anatomy import (
    REGION_LABELS,
    REGIONS,
    Anatomy,
    Region,
    RegionPiece,
    breakpoint_positions,
    cacheable_prefix_tokens,
)
from membrane.cli._text import plural
from membrane.report import CompileReport

if TYPE_CHECKING:
    from membrane.compiler import CompileResult

__all__ = ["render_html"]

COLOURS: dict[Region, str] = {
    "core": "#3b5b92",
    "index": "#7a8fb8",
    "history": "#4f9a8c",
    "memories": "#d08a2e",
    "recall": "#b35d8c",
    "current": "#c4473a",
}

_esc = html.escape


class _Markup(str):
    """HTML assembled here from escaped values; the page takes it as it is."""

    __slots__ = ()


@cache
def _template() -> Template:
    page = resources.files("membrane.cli").joinpath("page.html")
    return Template(page.read_text(encoding="utf-8"))


def _page(**values: str) -> str:
    """The page with each placeholder filled; plain strings are escaped, ``_Markup`` is not."""
    return _template().substitute(
        {k: v if isinstance(v, _Markup) else _esc(v) for k, v in values.items()}
    )


def _pct(part: float, whole: float) -> str:
    return f"{part / whole * 100:.4f}%" if whole else "0%"


def render_html(result: CompileResult, anatomy: Anatomy) -> str:
    """The whole page for one compile."""
    report = result.report
    totals = anatomy.totals()
    content = report.token_count
    framing = report.message_framing_tokens
    sent = content + framing
    budget_counted = report.tokens_budget_counted
    axis = max(budget_counted, sent, 1)
    title = f"Membrane: compiled prompt for {report.model_id or 'no model'}"
    return _page(
        title=title,
        placement=report.placement,
        budget=f"{report.tokens_budget:,}",
        budget_counted=f"{budget_counted:,}",
        token_scale=f"{report.token_scale:g}",
        stats=_stats(result, report, sent),
        segments=_segments(totals, framing, axis),
        marks=_marks(result, anatomy, axis),
        braces=_braces(report, totals, content, axis),
        legend_rows=_legend_rows(totals, framing, budget_counted, sent, axis),
        messages=_messages(result, anatomy),
        ref_rows=_ref_rows(result),
        metadata_rows=_Markup(
            "".join(
                f"<tr><td><code>{_esc(key)}</code></td><td><code>"
                f"{_esc(json.dumps(value, ensure_ascii=False, default=str))}</code></td></tr>"
                for key, value in result.metadata.items()
            )
        ),
    )


def _stats(result: CompileResult, report: CompileReport, sent: int) -> _Markup:
    prefix = cacheable_prefix_tokens(result)
    offered, kept = report.tail.segments_offered, report.tail.segments_kept
    dropped, recalled = report.history_messages_dropped, report.tail.messages_recalled
    stats = [
        (f"{sent:,} / {report.tokens_budget:,}", "tokens sent / budget"),
        (f"{prefix / sent * 100 if sent else 0:.0f}%", "cacheable prefix"),
        (f"{kept} / {offered}", "memories kept / offered"),
        (f"{dropped} / {recalled}", "history dropped / recalled"),
        ("yes" if report.prompt_cache_used else "no", "prompt cache used"),
    ]
    return _Markup(
        "".join(
            f'<div class="stat"><b>{_esc(value)}</b><span>{_esc(label)}</span></div>'
            for value, label in stats
        )
    )


def _segments(totals: dict[str, int], framing: int, axis: int) -> _Markup:
    """One bar segment per region, then the message framing."""
    out = []
    for region in REGIONS:
        n = totals[region]
        # Narrow segments keep only what fits; the table below has every number.
        label = f"<b>{n:,}</b>" if n / axis >= 0.025 else ""
        if n / axis >= 0.08:
            label += _esc(REGION_LABELS[region])
        out.append(
            f'<div class="region" data-region="{region}" data-tokens="{n}" '
            f'title="{_esc(REGION_LABELS[region])}: {n:,} tokens" '
            f'style="width:{_pct(n, axis)};background:{COLOURS[region]}">{label}</div>'
        )
    out.append(
        f'<div class="region framing" data-part="framing" data-tokens="{framing}" '
        f'title="message framing: {framing} tokens" style="width:{_pct(framing, axis)}"></div>'
    )
    return _Markup("".join(out))


def _marks(result: CompileResult, anatomy: Anatomy, axis: int) -> _Markup:
    """A dashed line with a label at each cache breakpoint."""
    out = []
    positions = breakpoint_positions(result, anatomy)
    for k, (position, point) in enumerate(positions):
        # The leftmost label sits highest so no dashed line crosses a label; labels near the
        # right edge open to the left.
        flip = " flip" if position / axis > 0.7 else ""
        reason = _esc(str(point["reason"]))
        out.append(
            f'<div class="mark{flip}" data-breakpoint="{reason}" '
            f'data-tokens="{_esc(str(point["tokens"]))}" '
            f'style="left:{_pct(position, axis)};top:{-8 - 20 * (len(positions) - k)}px">'
            f"<span>cache breakpoint: {reason} ({int(point['tokens']):,} tok)</span></div>"
        )
    return _Markup("".join(out))


def _braces(report: CompileReport, totals: dict[str, int], content: int, axis: int) -> _Markup:
    """Brackets under the bar for the stable prefix and the dynamic tail (end placement)."""
    if report.placement != "end" or not report.cache_breakpoints:
        return _Markup("")
    prefix = totals["core"] + totals["index"] + totals["history"]
    return _Markup(
        f'<div class="brace" style="left:0;width:{_pct(prefix, axis)}">'
        "<span>stable prefix (byte-identical while nothing is cut)</span></div>"
        f'<div class="brace" style="left:{_pct(prefix, axis)};'
        f'width:{_pct(content - prefix, axis)}"><span>dynamic tail</span></div>'
    )


def _legend_rows(
    totals: dict[str, int], framing: int, budget_counted: int, sent: int, axis: int
) -> _Markup:
    rows = "".join(
        f'<tr><td><span class="sw" style="background:{COLOURS[r]}"></span>'
        f"{_esc(REGION_LABELS[r])}</td><td class=n>{totals[r]:,}</td>"
        f"<td class=n>{totals[r] / axis * 100:.1f}%</td></tr>"
        for r in REGIONS
    )
    unused = max(budget_counted - sent, 0)
    rows += (
        f"<tr><td>message framing</td><td class=n>{framing:,}</td>"
        f"<td class=n>{framing / axis * 100:.1f}%</td></tr>"
        f"<tr><td>unused budget</td><td class=n>{unused:,}</td>"
        f"<td class=n>{unused / axis * 100:.1f}%</td></tr>"
    )
    return _Markup(rows)


def _ref_rows(result: CompileResult) -> _Markup:
    rows = "".join(
        f"<tr><td><code>[Mem:{n}]</code></td><td>{_esc(ref)}</td>"
        f"<td>{_esc(result.ref_map_type.get(n, ''))}</td></tr>"
        for n, ref in sorted(result.ref_map.items())
    )
    return _Markup(rows or '<tr><td colspan="3">no memory reached the prompt</td></tr>')


def _messages(result: CompileResult, anatomy: Anatomy) -> _Markup:
    """Every compiled message, its pieces shown in their region's colour."""
    by_message: dict[int, list[RegionPiece]] = {}
    for piece in anatomy.pieces:
        by_message.setdefault(piece.message_index, []).append(piece)
    out = []
    for index, message in enumerate(result.messages):
        pieces = by_message.get(index, [])
        total = sum(p.tokens for p in pieces)
        body = "".join(
            f'<div class="piece" style="border-color:{COLOURS[p.region]}">'
            f"<small>{_esc(REGION_LABELS[p.region])}: {plural(p.tokens, 'token')}</small>"
            f"<pre>{_esc(_abbreviate(p.text.strip(), 20_000))}</pre></div>"
            for p in pieces
        )
        out.append(
            f'<section class="msg"><header>[{index}] {_esc(str(message.get("role")))} '
            f"&middot; {plural(total, 'token')}</header>{body}</section>"
        )
    return _Markup("".join(out))


def _abbreviate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    keep = limit // 2
    return f"{text[:keep]}\n[... {len(text) - 2 * keep:,} characters not shown ...]\n{text[-keep:]}"
