"""Anthropic cache markers carried onto LangChain messages, where ``anthropic_request`` puts them.

``ChatAnthropic`` renders LangChain messages itself, so Membrane cannot hand it a finished
request. It can give the same blocks their ``cache_control``: the system message is split
where the core (and any other cached part) ends, and the block that ends each marked prefix
carries the marker. ``ChatAnthropic`` rebuilds the ``tool_use`` blocks of an ``AIMessage``
from its ``tool_calls`` and drops their markers, so a prefix that ends with a tool call is
marked on that message's last text block instead (a slightly shorter prefix); with no text
there, that marker is left out. Markers the messages already carried (from another
middleware, or stored with them) are removed, so the request holds Membrane's alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from langchain_core.messages import BaseMessage, SystemMessage

from membrane.compiler import CompileResult
from membrane.providers.anthropic import anthropic_cache_marks

__all__ = ["MarkPlan", "apply_marks", "plan_marks", "strip_marks"]

MARKER: dict[str, str] = {"type": "ephemeral"}
# Blocks Anthropic refuses a marker on, and blocks ChatAnthropic rebuilds without one.
_UNMARKABLE = frozenset({"thinking", "redacted_thinking", "reasoning", "tool_use", "tool_call"})


@dataclass(frozen=True)
class MarkPlan:
    """Where the markers go, by compiled message index; ``placed`` counts those set."""

    cuts: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    marks: Mapping[int, tuple[int | None, ...]] = field(default_factory=dict)
    tools: bool = False
    placed: int = 0


def plan_marks(result: CompileResult, model_name: str) -> MarkPlan:
    """The markers :func:`membrane.anthropic_request` would place for ``result``.

    ``model_name`` (``ChatAnthropic.model``) gives the cache minimum when the compiler was
    built without a ``model_id``; with neither, no prefix is marked.
    """
    model_id = None if result.report.model_id or not model_name else f"anthropic/{model_name}"
    found = anthropic_cache_marks(result, model_id=model_id)
    cuts: dict[int, set[int]] = {}
    cache = result.report.cache
    for point in cache.breakpoints if cache is not None else ():
        chars = point.get("chars")
        if isinstance(chars, int) and not isinstance(chars, bool):
            cuts.setdefault(int(point["message_index"]), set()).add(chars)
    marks: dict[int, list[int | None]] = {}
    for index, chars in found.messages:
        marks.setdefault(index, []).append(chars)
    return MarkPlan(
        {i: tuple(sorted(c)) for i, c in cuts.items()},
        {i: tuple(m) for i, m in marks.items()},
        found.tools,
    )


def _strip(block: object) -> object:
    if isinstance(block, Mapping) and "cache_control" in block:
        return {k: v for k, v in block.items() if k != "cache_control"}
    return block


def strip_marks(message: BaseMessage) -> BaseMessage:
    """``message`` without ``cache_control`` on its blocks (itself when it has none)."""
    content = message.content
    if not isinstance(content, list) or not any(
        isinstance(b, Mapping) and "cache_control" in b for b in content
    ):
        return message
    return message.model_copy(update={"content": [_strip(b) for b in content]})


def _split(text: str, cuts: Sequence[int]) -> tuple[list[dict[str, Any]], dict[int, int]]:
    """Text blocks cut at ``cuts``; and for each cut, the index of the block ending there."""
    inner = sorted({c for c in cuts if 0 < c < len(text)})
    bounds = [0, *inner, len(text)]
    blocks = [{"type": "text", "text": text[a:b]} for a, b in pairwise(bounds)]
    ends = {c: inner.index(c) if c in inner else len(blocks) - 1 for c in cuts if c > 0}
    return blocks, ends


def _last_markable(blocks: Sequence[object]) -> int | None:
    for i in range(len(blocks) - 1, -1, -1):
        block = blocks[i]
        if not isinstance(block, Mapping) or block.get("type") in _UNMARKABLE:
            continue
        if block.get("type") == "text" and not str(block.get("text", "")).strip():
            continue  # ChatAnthropic leaves empty text blocks out
        return i
    return None


def _marked(
    content: str | list[Any], cuts: Sequence[int], marks: Sequence[int | None]
) -> tuple[list[Any], int]:
    """The content as blocks with the markers set, and how many were set."""
    if isinstance(content, str):
        blocks: list[Any]
        blocks, ends = _split(content, cuts)
    else:
        blocks = [{"type": "text", "text": b} if isinstance(b, str) else b for b in content]
        ends = {}
    targets = set()
    for chars in marks:
        target = _last_markable(blocks) if chars is None else ends.get(chars)
        if target is not None:
            targets.add(target)
    for i in targets:
        blocks[i] = {**blocks[i], "cache_control": dict(MARKER)}
    return blocks, len(targets)


def _apply_one(
    message: BaseMessage, cuts: Sequence[int], marks: Sequence[int | None]
) -> tuple[BaseMessage, int]:
    if not cuts and not marks:
        return message, 0
    blocks, placed = _marked(message.content, cuts, marks)
    if isinstance(message.content, str) and len(blocks) == 1 and not placed:
        return message, 0  # nothing split, nothing marked: the plain string stays
    return message.model_copy(update={"content": blocks}), placed


def apply_marks(
    plan: MarkPlan,
    system: SystemMessage | None,
    messages: Sequence[BaseMessage],
    has_system: bool,
) -> tuple[SystemMessage | None, list[BaseMessage], MarkPlan]:
    """The system message and messages with ``plan``'s markers (and no others) set."""
    lead = 1 if has_system else 0
    out = [strip_marks(m) for m in messages]
    placed = 0
    if system is not None:
        new, n = _apply_one(system, plan.cuts.get(0, ()), plan.marks.get(0, ()))
        system, placed = SystemMessage(content=new.content), placed + n
    for index in sorted(set(plan.cuts) | set(plan.marks)):
        k = index - lead
        if index < lead or k >= len(out):
            continue
        out[k], n = _apply_one(out[k], plan.cuts.get(index, ()), plan.marks.get(index, ()))
        placed += n
    return system, out, MarkPlan(plan.cuts, plan.marks, plan.tools, placed)
