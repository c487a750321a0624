"""The demo's explanations: the column legend, the citations and the provider request.

:mod:`membrane.demo` prints the per-turn table; this module prints what a reader needs to read
it (every column explained) and the two things the table cannot show: how ``[Mem:N]`` in a
reply leads back to a record id, and where a provider request carries its cache markers.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

from membrane.prompt_text import mem_numbers
from membrane.providers import anthropic_request, openai_request
from membrane.records import MemoryItem
from membrane.result import CompileResult

__all__ = ["citations", "legend", "provider_request"]

_WIDTH = 100
_COLUMNS = (
    ("core", "system rules and the interrupt instruction: the start of the cached prefix"),
    (
        "index",
        "the eviction index in the system message: one keyframe line (the densest sentence) "
        "per history message dropped from the window; it changes only when the cut moves",
    ),
    ("hist", "history messages still sent in full, exactly as given"),
    ("mem", "retrieved memories, as [Mem:N] lines in the final user message"),
    (
        "recall",
        "passages of dropped history brought back into this turn because they match the question",
    ),
    ("turn", "the current user message"),
    ("total/budget", "tokens sent (content plus per-message framing) against the budget"),
    (
        "kept/th/dr",
        "memories kept in full / thinned to their keyframe (the densest sentence, so the "
        "citation survives) / dropped",
    ),
    ("drop/rec", "history messages dropped from the window so far / passages recalled now"),
    ("prefix share", "the cacheable prefix (system message and kept history) over tokens sent"),
)


def legend(min_cacheable_tokens: int) -> list[str]:
    """One entry per column of the table."""
    columns = (
        *_COLUMNS,
        (
            "prefix vs last turn",
            "'hit' when the previous turn's prefix comes back byte for byte and has at least "
            f"the {min_cacheable_tokens:,} tokens the provider caches, 'too small' when it "
            "comes back but is shorter, 'changed' when the history cut moved",
        ),
    )
    lines = ["Columns"]
    for name, text in columns:
        wrapped = textwrap.wrap(text, width=_WIDTH - 23)
        lines.append(f"  {name:<20} {wrapped[0]}")
        lines.extend(f"  {'':<20} {more}" for more in wrapped[1:])
    return lines


def citations(result: CompileResult, store: Sequence[MemoryItem]) -> list[str]:
    """The final turn's ref map, and a reply's citations resolved to record ids."""
    by_id = {m.id: m for m in store}
    lines = ["Citations: result.ref_map maps each [Mem:N] in the prompt to your record id"]
    for number, ref in sorted(result.ref_map.items()):
        text = by_id[ref].content if ref in by_id else ""
        clipped = text if len(text) <= 44 else text[:41].rstrip() + "..."
        lines.append(f"  [Mem:{number}] -> {ref:<24} {result.ref_map_type[number]:<11} {clipped}")
    numbers = sorted(result.ref_map)[-2:]
    if numbers:
        reply = "Per our rules " + " and ".join(f"[Mem:{n}]" for n in numbers) + ", ..."
        resolved = ", ".join(f"{result.ref_map[n]!r}" for n in sorted(mem_numbers(reply)))
        lines.append(f"  a reply saying {reply!r}")
        lines.append(f"  cites records {resolved}")
    return lines


def _cached_blocks(request: dict[str, Any]) -> list[tuple[str, str]]:
    out = []
    for i, block in enumerate(request.get("system", [])):
        if "cache_control" in block:
            out.append((f"system[{i}]", str(block["cache_control"])))
    for i, message in enumerate(request["messages"]):
        content = message["content"]
        for j, block in enumerate(content if isinstance(content, list) else []):
            if isinstance(block, dict) and "cache_control" in block:
                where = f"messages[{i}] ({message['role']}) block {j}"
                out.append((where, str(block["cache_control"])))
    return out


def provider_request(result: CompileResult, conversation_id: str) -> list[str]:
    """Where the final turn's requests carry their cache markers."""
    report = result.report
    request = anthropic_request(result)
    openai = openai_request(result, model="gpt-4o", prompt_cache_key=conversation_id)
    lines = [
        "Provider requests for the final turn",
        f"  metadata['cache_breakpoints'] ({report.cache_mode or 'no'} caching for "
        f"{report.model_id}):",
    ]
    for point in report.cache_breakpoints:
        lines.append(
            f"    after message {point['message_index']:>2}: {point['tokens']:>5,} tokens "
            f"({point['reason']})"
        )
    lines.append(
        f"  anthropic_request(result): {len(request['system'])} system blocks, "
        f"{len(request['messages'])} messages; cache_control on:"
    )
    marked = _cached_blocks(request)
    lines.extend(f"    {where:<38} {marker}" for where, marker in marked)
    if not marked:
        lines.append("    nothing: no prefix reaches the model's minimum cacheable size")
    notes = (
        "A breakpoint below the model's minimum cacheable size gets no marker. Anthropic takes "
        "the system text apart, so its messages[i] is compiled message i + 1. "
        f"openai_request(result, model='gpt-4o', prompt_cache_key={conversation_id!r}) sends "
        f"the {len(openai['messages'])} messages as compiled with keys {sorted(openai)}: "
        "OpenAI caches the longest repeated prefix on its own."
    )
    lines.extend(f"  {line}" for line in textwrap.wrap(notes, width=_WIDTH - 2))
    return lines
