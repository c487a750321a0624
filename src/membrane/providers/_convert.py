"""A provider-neutral reading of compiled messages, shared by the request builders.

Messages arrive in OpenAI chat shape or with Anthropic content blocks. They are read once into
small typed parts (text, image, tool call, tool result, opaque block) with tool calls paired to
their results, then each provider module renders the parts in its own wire format.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from membrane.errors import InvalidInputError, ToolPairingError

__all__ = [
    "Breakpoint",
    "CompiledPrompt",
    "Image",
    "Location",
    "Message",
    "Opaque",
    "Part",
    "Text",
    "ToolCall",
    "ToolResult",
    "choose_anchors",
    "parse_data_url",
    "read_breakpoints",
    "read_messages",
    "render_turns",
    "require_end_placement",
    "strip_cache_control",
]


class CompiledPrompt(Protocol):
    """What the request builders need from a compile result (``CompileResult`` has both)."""

    @property
    def messages(self) -> Sequence[Mapping[str, Any]]: ...

    @property
    def metadata(self) -> Mapping[str, Any]: ...


@dataclass(frozen=True, slots=True)
class Text:
    text: str
    raw: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Image:
    url: str  # http(s), data: or s3: URL
    raw: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]
    raw: Mapping[str, Any] | None = None
    thought_signature: str | None = None


@dataclass(frozen=True, slots=True)
class ToolResult:
    call_id: str
    name: str
    content: str | tuple[Text | Image, ...]
    is_error: bool = False
    raw: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Opaque:
    """An Anthropic block with no neutral form (thinking, document, server tool blocks...)."""

    block: Mapping[str, Any]


Part = Text | Image | ToolCall | ToolResult | Opaque


@dataclass(frozen=True, slots=True)
class Message:
    role: Literal["system", "user", "assistant"]
    parts: tuple[Part, ...]
    index: int  # position in the compiled message list
    # chars offset of a cut inside the string content -> index of the part ending there
    cuts: Mapping[int, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Breakpoint:
    message_index: int
    tokens: int
    reason: str
    chars: int | None = None


def require_end_placement(result: CompiledPrompt, builder: str) -> None:
    placement = result.metadata.get("memory_placement")
    if placement != "end":
        raise InvalidInputError(
            f"{builder} needs a result compiled with memory_placement='end' (the default); "
            f"this one has memory_placement={placement!r}, which leaves no conversation turns "
            "to send",
            field="memory_placement",
        )


def strip_cache_control(block: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of a caller's block without its own cache marker (Membrane places them)."""
    return {k: copy.deepcopy(v) for k, v in block.items() if k != "cache_control"}


def parse_data_url(url: str, where: str) -> tuple[str, str]:
    """Media type and base64 payload of a ``data:`` URL."""
    head, sep, payload = url.partition(",")
    if not sep or not head.startswith("data:") or not head.endswith(";base64"):
        raise InvalidInputError(
            f"{where}: image data URLs must look like 'data:image/png;base64,<data>'",
            field=where,
        )
    return head[len("data:") : -len(";base64")], payload


def read_breakpoints(metadata: Mapping[str, Any], n_messages: int) -> list[Breakpoint]:
    """The ``cache_breakpoints`` of a compile result, checked."""
    raw = metadata.get("cache_breakpoints") or []
    if not isinstance(raw, Sequence) or isinstance(raw, (str, bytes)):
        raise InvalidInputError(
            "metadata['cache_breakpoints'] must be a list of dicts", field="cache_breakpoints"
        )
    out = []
    for i, bp in enumerate(raw):
        where = f"metadata['cache_breakpoints'][{i}]"
        if not isinstance(bp, Mapping):
            raise InvalidInputError(f"{where} must be a dict", field=where)
        index, tokens, chars = bp.get("message_index"), bp.get("tokens"), bp.get("chars")
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < n_messages:
            raise InvalidInputError(
                f"{where}['message_index'] must be an index into messages (0..{n_messages - 1})",
                field=where,
            )
        if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 0:
            raise InvalidInputError(f"{where}['tokens'] must be an integer >= 0", field=where)
        if chars is not None and (
            not isinstance(chars, int) or isinstance(chars, bool) or chars < 0
        ):
            raise InvalidInputError(f"{where}['chars'] must be an integer >= 0", field=where)
        out.append(Breakpoint(index, tokens, str(bp.get("reason", "")), chars))
    return out


def choose_anchors(
    breakpoints: Sequence[Breakpoint],
    messages: Sequence[Message],
    *,
    token_scale: float,
    min_tokens: int,
    limit: int,
) -> list[tuple[int, int]]:
    """Where cache markers go: ``(message_index, part_index)`` of each marked prefix's last part.

    A breakpoint qualifies when its prefix, in provider tokens, reaches ``min_tokens``.
    """
    by_index = {m.index: m for m in messages}
    anchors: list[tuple[int, tuple[int, int]]] = []
    for bp in sorted(breakpoints, key=lambda b: (b.tokens, b.message_index)):
        if bp.tokens * token_scale < min_tokens:
            continue
        msg = by_index.get(bp.message_index)
        if msg is None:
            continue
        if bp.chars is None:
            part = len(msg.parts) - 1
        elif bp.chars in msg.cuts:
            part = msg.cuts[bp.chars]
        else:
            continue  # the cut could not be honoured (content is not a string)
        anchors.append((bp.tokens, (msg.index, part)))
    seen: set[tuple[int, int]] = set()
    unique = []
    for _, anchor in anchors:
        if anchor not in seen:
            seen.add(anchor)
            unique.append(anchor)
    # Providers cap the number of markers (Anthropic and Bedrock allow 4). When more qualify,
    # keep the longest prefixes: a hit on a longer prefix saves more, and on a miss the
    # provider still finds the shorter cached prefixes behind the last marker on its own.
    return unique[-limit:] if limit > 0 else []


def _cut_string(
    text: str, cut_points: Sequence[int], where: str
) -> tuple[list[Text], dict[int, int]]:
    if not text:
        return [], {}
    pieces: list[Text] = []
    cuts: dict[int, int] = {}
    start = 0
    for c in sorted(set(cut_points)):
        if c > len(text):
            raise InvalidInputError(
                f"{where}: a cache breakpoint cuts at char {c}, past the end of the message "
                f"({len(text)} chars)",
                field="cache_breakpoints",
            )
        if c == 0:
            continue
        if c > start:
            pieces.append(Text(text[start:c]))
            start = c
        cuts[c] = len(pieces) - 1
    if start < len(text):
        pieces.append(Text(text[start:]))
    return pieces, cuts


def _parse_arguments(raw: object, where: str) -> dict[str, Any]:
    if raw is None or raw == "":
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    if not isinstance(raw, str):
        raise InvalidInputError(f"{where}: function.arguments must be a JSON string", field=where)
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(
            f"{where}: function.arguments is not valid JSON ({exc.msg}); providers other than "
            "OpenAI need the arguments as an object",
            field=where,
        ) from None
    if not isinstance(value, dict):
        raise InvalidInputError(
            f"{where}: function.arguments must encode a JSON object, got {type(value).__name__}",
            field=where,
        )
    return value


class _Reader:
    def __init__(self) -> None:
        self.calls: dict[str, str] = {}
        self.call_where: dict[str, str] = {}
        self.answered: set[str] = set()

    def call(self, call_id: str, name: str, where: str) -> None:
        if not call_id:
            raise InvalidInputError(f"{where}: a tool call needs a non-empty id", field=where)
        if call_id in self.calls:
            raise ToolPairingError(
                f"{where}: tool call id {call_id!r} is used twice; ids must be unique",
                field=where,
                tool_call_id=call_id,
            )
        self.calls[call_id] = name
        self.call_where[call_id] = where

    def result(self, call_id: str, where: str) -> str:
        if call_id not in self.calls:
            raise ToolPairingError(
                f"{where} is a tool result for call {call_id!r}, but no earlier message makes "
                "that call; include the call or drop the result",
                field=where,
                tool_call_id=call_id,
            )
        if call_id in self.answered:
            raise ToolPairingError(
                f"{where} answers tool call {call_id!r} a second time",
                field=where,
                tool_call_id=call_id,
            )
        self.answered.add(call_id)
        return self.calls[call_id]

    def finish(self) -> None:
        for call_id, where in self.call_where.items():
            if call_id not in self.answered:
                raise ToolPairingError(
                    f"tool call {call_id!r} in {where} has no result; providers reject "
                    "unanswered calls, so add the result or drop the call",
                    field=where,
                    tool_call_id=call_id,
                )

    def block(self, item: object, where: str) -> list[Part]:
        if isinstance(item, str):
            return [Text(item)] if item else []
        if not isinstance(item, Mapping):
            raise InvalidInputError(
                f"{where} must be a content part dict, got {type(item).__name__}", field=where
            )
        kind = item.get("type")
        if kind == "text":
            text = item.get("text")
            if not isinstance(text, str):
                raise InvalidInputError(f"{where}: a text part needs a 'text' string", field=where)
            return [Text(text, raw=item)] if text else []
        if kind == "image_url":
            spec = item.get("image_url")
            url = spec.get("url") if isinstance(spec, Mapping) else spec
            if not isinstance(url, str) or not url:
                raise InvalidInputError(
                    f"{where}: an image_url part needs image_url.url", field=where
                )
            return [Image(url)]
        if kind == "image":
            source = item.get("source")
            if isinstance(source, Mapping) and source.get("type") == "base64":
                url = f"data:{source.get('media_type')};base64,{source.get('data')}"
                return [Image(url, raw=item)]
            if isinstance(source, Mapping) and source.get("type") == "url":
                return [Image(str(source.get("url")), raw=item)]
            return [Opaque(item)]
        if kind == "tool_use":
            call_id, name = str(item.get("id") or ""), str(item.get("name") or "")
            self.call(call_id, name, where)
            args = item.get("input")
            return [ToolCall(call_id, name, dict(args) if isinstance(args, Mapping) else {}, item)]
        if kind == "tool_result":
            call_id = str(item.get("tool_use_id") or "")
            name = self.result(call_id, where)
            content = item.get("content")
            parsed: str | tuple[Text | Image, ...]
            if content is None or isinstance(content, str):
                parsed = content or ""
            else:
                parsed = tuple(self.result_parts(content, where))
            return [ToolResult(call_id, name, parsed, bool(item.get("is_error")), item)]
        return [Opaque(item)]

    def result_parts(self, content: object, where: str) -> list[Text | Image]:
        if not isinstance(content, list):
            raise InvalidInputError(
                f"{where}: tool result content must be a string or a list of parts", field=where
            )
        out: list[Text | Image] = []
        for j, item in enumerate(content):
            for part in self.block(item, f"{where}.content[{j}]"):
                if not isinstance(part, (Text, Image)):
                    raise InvalidInputError(
                        f"{where}.content[{j}]: a tool result may hold only text and images",
                        field=where,
                    )
                out.append(part)
        return out


def read_messages(
    messages: Sequence[Mapping[str, Any]], cut_points: Mapping[int, Sequence[int]] | None = None
) -> list[Message]:
    """Read compiled messages into neutral parts and check that tool calls pair with results.

    ``cut_points`` maps a message index to character offsets at which its string content is
    split into separate text parts (where a cached prefix ends inside the message).
    Raises :class:`ToolPairingError` for a result without an earlier call, a call answered
    twice, or a call never answered.
    """
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise InvalidInputError("result.messages must be a list of message dicts")
    reader = _Reader()
    cut_points = cut_points or {}
    out: list[Message] = []
    for i, msg in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(msg, Mapping):
            raise InvalidInputError(f"{where} must be a dict", field=where)
        role = msg.get("role")
        content = msg.get("content")
        if role == "tool":
            call_id = str(msg.get("tool_call_id") or "")
            name = reader.result(call_id, where)
            parsed: str | tuple[Text | Image, ...]
            if content is None or isinstance(content, str):
                parsed = content or ""
            else:
                parsed = tuple(reader.result_parts(content, where))
            out.append(Message("user", (ToolResult(call_id, name, parsed),), i))
            continue
        if role == "developer":
            role = "system"
        if role not in ("system", "user", "assistant"):
            raise InvalidInputError(
                f"{where} has role {role!r}; expected system, developer, user, assistant or tool",
                field=where,
            )
        parts: list[Part] = []
        cuts: dict[int, int] = {}
        if isinstance(content, str):
            texts, cuts = _cut_string(content, cut_points.get(i, ()), where)
            parts.extend(texts)
        elif isinstance(content, list):
            for j, item in enumerate(content):
                parts.extend(reader.block(item, f"{where}.content[{j}]"))
        elif content is not None:
            raise InvalidInputError(
                f"{where}.content must be a string, a list of parts or None", field=where
            )
        for j, call in enumerate(msg.get("tool_calls") or ()):
            cwhere = f"{where}.tool_calls[{j}]"
            if role != "assistant" or not isinstance(call, Mapping):
                raise InvalidInputError(
                    f"{cwhere}: tool calls belong on assistant messages, as dicts", field=cwhere
                )
            fn = call.get("function")
            if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
                raise InvalidInputError(
                    f"{cwhere} needs function.name and function.arguments", field=cwhere
                )
            call_id = str(call.get("id") or "")
            reader.call(call_id, fn["name"], cwhere)
            signature = call.get("thought_signature")
            parts.append(
                ToolCall(
                    call_id,
                    fn["name"],
                    _parse_arguments(fn.get("arguments"), cwhere),
                    thought_signature=signature if isinstance(signature, str) else None,
                )
            )
        out.append(Message(role, tuple(parts), i, cuts))
    reader.finish()
    return out


Location = tuple[str, int, int]
"""Where a rendered block landed: ("system", 0, block) or ("messages", turn, block)."""


def render_turns(
    messages: Sequence[Message],
    *,
    provider: str,
    system_block: Callable[[Text, str], dict[str, Any]],
    block: Callable[[Part, str], dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[tuple[int, int], Location | None]]:
    """System blocks, alternating turns, and where each (message, part) ended up.

    For APIs that take the system text apart and want user and assistant turns to alternate
    (Anthropic, Bedrock Converse, Gemini): consecutive messages of one role merge into one
    turn, so a tool result and the user text after it become one user turn.
    ``ends[(message, -1)]`` is the location of a message's last block, for cache markers.
    """
    system: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    ends: dict[tuple[int, int], Location | None] = {}
    last: Location | None = None
    for msg in messages:
        where = f"messages[{msg.index}]"
        if msg.role == "system":
            if out:
                raise InvalidInputError(
                    f"{where} is a system message after the conversation started; {provider} "
                    "takes system text only before the first turn (put it in core_content)",
                    field=where,
                )
            for p, part in enumerate(msg.parts):
                if not isinstance(part, Text):
                    raise InvalidInputError(
                        f"{where}: {provider} system prompts hold text only", field=where
                    )
                system.append(system_block(part, where))
                last = ("system", 0, len(system) - 1)
                ends[(msg.index, p)] = last
            ends[(msg.index, -1)] = last
            continue
        for p, part in enumerate(msg.parts):
            rendered = block(part, where)
            if not out or out[-1]["role"] != msg.role:
                out.append({"role": msg.role, "content": []})
            out[-1]["content"].append(rendered)
            last = ("messages", len(out) - 1, len(out[-1]["content"]) - 1)
            ends[(msg.index, p)] = last
        ends[(msg.index, -1)] = last
    return system, out, ends
