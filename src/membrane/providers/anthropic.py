"""Anthropic Messages API requests, with ``cache_control`` markers where cached prefixes end."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from membrane.errors import InvalidInputError
from membrane.messages import Image, Opaque, Part, Text, ToolCall, ToolResult
from membrane.providers._agent import anthropic_tools, output_cap, read_tools, tools_reach_cache
from membrane.providers._convert import (
    Breakpoint,
    CompiledPrompt,
    Location,
    Message,
    cache_anchors,
    parse_data_url,
    read_with_cuts,
    render_turns,
    request_model,
    require_end_placement,
    strip_cache_control,
)
from membrane.report import ResultView

__all__ = [
    "MAX_CACHE_BREAKPOINTS",
    "CacheMarks",
    "anthropic_cache_marks",
    "anthropic_request",
    "anthropic_system_blocks",
]

MAX_CACHE_BREAKPOINTS = 4
"""Most ``cache_control`` markers Anthropic accepts in one request (tools included)."""

_TTLS = ("5m", "1h")
# Anthropic refuses cache_control on these block types.
_UNMARKABLE = frozenset({"thinking", "redacted_thinking"})


def _cache_control(ttl: str) -> dict[str, str]:
    if ttl not in _TTLS:
        raise InvalidInputError(f"ttl must be '5m' or '1h', got {ttl!r}", field="ttl")
    return {"type": "ephemeral"} if ttl == "5m" else {"type": "ephemeral", "ttl": "1h"}


def anthropic_system_blocks(prefix: str, tail: str, *, ttl: str = "5m") -> list[dict[str, Any]]:
    """System blocks for a prompt you split yourself (e.g. with :func:`membrane.glaciate`).

    The prefix block carries ``cache_control``; empty parts are left out. Whether the prefix is
    long enough for the model to cache is not checked here.

    >>> anthropic_system_blocks("Rules.", "Today: Monday.")
    [{'type': 'text', 'text': 'Rules.', 'cache_control': {'type': 'ephemeral'}}, \
{'type': 'text', 'text': 'Today: Monday.'}]
    """
    marker = _cache_control(ttl)
    blocks: list[dict[str, Any]] = []
    if prefix:
        blocks.append({"type": "text", "text": prefix, "cache_control": marker})
    if tail:
        blocks.append({"type": "text", "text": tail})
    return blocks


def _image(image: Image, where: str) -> dict[str, Any]:
    if image.raw is not None:
        return strip_cache_control(image.raw)
    if image.url.startswith("data:"):
        media_type, data = parse_data_url(image.url, where)
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": media_type, "data": data},
        }
    return {"type": "image", "source": {"type": "url", "url": image.url}}


def _block(part: Part, where: str) -> dict[str, Any]:
    if isinstance(part, Text):
        if part.raw is not None:
            return strip_cache_control(part.raw)
        return {"type": "text", "text": part.text}
    if isinstance(part, Image):
        return _image(part, where)
    if isinstance(part, ToolCall):
        if part.raw is not None:
            return strip_cache_control(part.raw)
        return {"type": "tool_use", "id": part.id, "name": part.name, "input": part.arguments}
    if isinstance(part, ToolResult):
        if part.raw is not None:
            return strip_cache_control(part.raw)
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": part.call_id}
        if isinstance(part.content, str):
            block["content"] = part.content
        else:
            block["content"] = [_block(p, where) for p in part.content]
        if part.is_error:
            block["is_error"] = True
        return block
    return strip_cache_control(part.block)


def _mark(
    result: CompiledPrompt,
    breakpoints: list[Breakpoint],
    limit: int,
    marker: dict[str, str],
    system: list[dict[str, Any]],
    turns: tuple[list[dict[str, Any]], dict[tuple[int, int], Location | None], list[Message]],
) -> None:
    """Put ``marker`` on the last block of each of the result's cached prefixes (``limit``)."""
    out, ends, messages = turns
    model_id = ResultView.of(result).model_id
    for anchor in cache_anchors(breakpoints, messages, result, model_id, limit):
        loc = ends.get(anchor)
        if loc is None:
            continue
        section, m, b = loc
        block = system[b] if section == "system" else out[m]["content"][b]
        if block.get("type") in _UNMARKABLE:
            continue
        block["cache_control"] = copy.deepcopy(marker)


def _check_options(
    max_breakpoints: object, cache_control: object, context_management: object
) -> None:
    if not isinstance(max_breakpoints, int) or not 0 <= max_breakpoints <= MAX_CACHE_BREAKPOINTS:
        raise InvalidInputError(
            f"max_breakpoints must be between 0 and {MAX_CACHE_BREAKPOINTS}",
            field="max_breakpoints",
        )
    if not isinstance(cache_control, bool):
        raise InvalidInputError("cache_control must be True or False", field="cache_control")
    if context_management is not None and not isinstance(context_management, Mapping):
        raise InvalidInputError(
            "context_management must be the dict Anthropic takes ({'edits': [...]})",
            field="context_management",
        )


def _room(
    result: CompiledPrompt, has_tools: bool, max_breakpoints: int, top_level: bool, model_id: object
) -> tuple[bool, int]:
    """Whether the last tool is marked, and how many markers are left for the messages."""
    room = max_breakpoints - 1 if top_level else max_breakpoints
    mark_tools = has_tools and room > 0 and tools_reach_cache(result, model_id)
    return mark_tools, room - mark_tools


def anthropic_request(
    result: CompiledPrompt,
    ttl: str = "5m",
    *,
    max_breakpoints: int = MAX_CACHE_BREAKPOINTS,
    max_tokens: int | None = None,
    model: str | None = None,
    cache_control: bool = False,
    context_management: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``system`` and ``messages`` of an Anthropic Messages API request for a compile result.

    ``model`` is included when you pass it, or when the result's ``model_id`` names exactly
    one Claude API model in the capability map (``anthropic/claude-opus-5.5`` ->
    ``claude-opus-5-5``); a Claude id matched only by family adds none. A message's ``name``
    becomes a ``"<name>: "`` label in front of its text (Anthropic has no speaker field).

    OpenAI-shape history is converted: tool calls become ``tool_use`` blocks, tool messages
    ``tool_result`` blocks in a user turn, content parts text and image blocks; Anthropic blocks
    pass through (their own ``cache_control`` is removed), a ``compaction`` block first.
    ``cache_control`` goes on the last block of each cached prefix listed in
    ``metadata["cache_breakpoints"]`` that reaches the model's minimum cacheable size, at most
    ``max_breakpoints`` of them (lower it to keep room for markers you place yourself), the
    last tool's among them when the tools alone reach that size. Needs end placement; ``ttl``
    is ``"5m"`` or ``"1h"``. ``cache_control=True`` adds Anthropic's top-level marker, which
    takes one of the places; ``context_management`` goes as given (send with
    ``client.beta.messages.create``).

    ``max_tokens`` is yours to set: this argument, else the ``reserve_output_tokens`` you passed
    to compile. Membrane's default reserve is not sent. Anthropic requires ``max_tokens``, so
    without either the request has none and the SDK refuses the bare spread: write it as the
    seed does, ``{"model": ..., "max_tokens": 1024, **anthropic_request(result)}``. With
    thinking on (Claude 5 models think by default) the thinking counts against it.
    """
    marker = _cache_control(ttl)
    require_end_placement(result, "anthropic_request")
    _check_options(max_breakpoints, cache_control, context_management)
    breakpoints, messages = read_with_cuts(result)
    system, out, ends = render_turns(
        messages, provider="Anthropic", system_block=_block, block=_block
    )
    specs = read_tools(result)
    model_id = ResultView.of(result).model_id
    mark_tools, room = _room(result, bool(specs), max_breakpoints, cache_control, model_id)
    _mark(result, breakpoints, room, marker, system, (out, ends, messages))
    request = request_model(result, model, "anthropic")
    if specs:
        request["tools"] = anthropic_tools(specs, marker if mark_tools else None)
    if system:
        request["system"] = system
    request["messages"] = out
    cap = max_tokens if max_tokens is not None else output_cap(result)
    if cap is not None:
        request["max_tokens"] = cap
    if cache_control:
        request["cache_control"] = copy.deepcopy(marker)
    if context_management is not None:
        request["context_management"] = copy.deepcopy(dict(context_management))
    return request


@dataclass(frozen=True, slots=True)
class CacheMarks:
    """Where :func:`anthropic_request` puts ``cache_control``, in the compiled messages' terms.

    Each ``(message_index, chars)`` in ``messages`` is a marked prefix that ends ``chars``
    characters into that message's string content, or with the message's last block when
    ``chars`` is None. ``tools`` is True when the last tool definition is marked.
    """

    messages: tuple[tuple[int, int | None], ...] = ()
    tools: bool = False


def anthropic_cache_marks(
    result: CompiledPrompt,
    *,
    max_breakpoints: int = MAX_CACHE_BREAKPOINTS,
    cache_control: bool = False,
    model_id: str | None = None,
) -> CacheMarks:
    """The markers :func:`anthropic_request` would place, for a request built another way.

    A framework that renders the compiled messages itself (LangChain's ``ChatAnthropic``)
    puts ``cache_control`` on its own blocks at these places. ``model_id`` stands in for the
    result's when the compiler had none, for the model's minimum cacheable size; the other
    arguments are :func:`anthropic_request`'s.
    """
    require_end_placement(result, "anthropic_cache_marks")
    _check_options(max_breakpoints, cache_control, None)
    breakpoints, messages = read_with_cuts(result)
    model = model_id if model_id is not None else ResultView.of(result).model_id
    has_tools = bool(read_tools(result))
    mark_tools, room = _room(result, has_tools, max_breakpoints, cache_control, model)
    by_index = {m.index: m for m in messages}
    marks: list[tuple[int, int | None]] = []
    for index, part_index in cache_anchors(breakpoints, messages, result, model, room):
        message = by_index[index]
        part = message.parts[part_index]
        if isinstance(part, Opaque) and part.block.get("type") in _UNMARKABLE:
            continue
        chars = next((c for c, p in message.cuts.items() if p == part_index), None)
        marks.append((index, chars))
    return CacheMarks(tuple(marks), mark_tools)
