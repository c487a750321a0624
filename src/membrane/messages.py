"""Chat-message normalisation: validation, tool-call pairing and the text a message carries.

History is accepted in OpenAI shape (``tool_calls`` on assistant messages, ``role="tool"``
results) or Anthropic shape (``tool_use`` / ``tool_result`` content blocks), with string content
or content-part lists. Messages are never rewritten: the compiler sends them exactly as given.
What this module adds is the grouping of messages into *units* that must be kept or dropped
together (a tool call and all of its results).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from membrane.errors import InvalidInputError, ToolPairingError

__all__ = [
    "IMAGE_PART_TEXT",
    "HistoryUnit",
    "Message",
    "group_units",
    "message_text",
    "validate_messages",
]

Message = dict[str, Any]

_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})

# Images are counted through a fixed stand-in text; their real cost depends on size and detail.
IMAGE_PART_TEXT = "[image]"


@dataclass(frozen=True, slots=True)
class HistoryUnit:
    """Messages ``start`` (inclusive) to ``stop`` (exclusive) that live or die together."""

    start: int
    stop: int

    @property
    def size(self) -> int:
        return self.stop - self.start


def _block_text(block: Any) -> str:
    if isinstance(block, str):
        return block
    if not isinstance(block, Mapping):
        return ""
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind in ("image_url", "image", "input_image"):
        return IMAGE_PART_TEXT
    if kind == "tool_use":
        args = json.dumps(block.get("input", {}), sort_keys=True, ensure_ascii=False)
        return f"{block.get('name', '')}({args})"
    if kind == "tool_result":
        return _content_text(block.get("content"))
    if "text" in block:
        return str(block["text"])
    return ""


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "\n".join(t for t in (_block_text(b) for b in content) if t)
    return str(content)


def message_text(message: Mapping[str, Any]) -> str:
    """All the text a message carries: content, tool-call names and arguments, tool results."""
    text = _content_text(message.get("content"))
    calls = message.get("tool_calls") or ()
    call_texts = []
    for call in calls:
        fn = call.get("function", {}) if isinstance(call, Mapping) else {}
        call_texts.append(f"{fn.get('name', '')}({fn.get('arguments', '')})")
    if call_texts:
        text = "\n".join([text, *call_texts]) if text else "\n".join(call_texts)
    return text


def _call_ids(message: Mapping[str, Any]) -> list[str]:
    ids = [str(c.get("id", "")) for c in message.get("tool_calls") or () if isinstance(c, Mapping)]
    content = message.get("content")
    if isinstance(content, list):
        ids.extend(
            str(b.get("id", ""))
            for b in content
            if isinstance(b, Mapping) and b.get("type") == "tool_use"
        )
    return ids


def _result_ids(message: Mapping[str, Any]) -> list[str]:
    if message.get("role") == "tool":
        return [str(message.get("tool_call_id", ""))]
    content = message.get("content")
    if isinstance(content, list):
        return [
            str(b.get("tool_use_id", ""))
            for b in content
            if isinstance(b, Mapping) and b.get("type") == "tool_result"
        ]
    return []


def validate_messages(
    messages: object, *, field: str = "conversation_messages", start: int = 0
) -> list[Message]:
    """Check a message list and return it as a list (the dicts themselves are not copied).

    Raises :class:`InvalidInputError` for a malformed message and :class:`ToolPairingError`
    when a tool result has no earlier call or a call is never answered. ``start`` skips a
    prefix already validated (it must end where a tool call's results end).
    """
    if messages is None:
        return []
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise InvalidInputError(
            f"{field} must be a list of message dicts like {{'role': 'user', 'content': '...'}}",
            field=field,
        )
    out: list[Message] = messages if isinstance(messages, list) else list(messages)
    for i in range(start, len(out)):
        _check_message(out[i], f"{field}[{i}]")
    group_units(out[start:], field=field, offset=start)  # raises on broken tool pairing
    return out


def _check_message(msg: object, where: str) -> None:
    if not isinstance(msg, dict):
        raise InvalidInputError(
            f"{where} must be a dict with 'role' and 'content', got {type(msg).__name__}",
            field=where,
        )
    role = msg.get("role")
    if role not in _ROLES:
        raise InvalidInputError(
            f"{where} has role {role!r}; expected one of {sorted(_ROLES)}", field=where
        )
    content = msg.get("content")
    if content is not None and not isinstance(content, (str, list)):
        raise InvalidInputError(
            f"{where}.content must be a string, a list of content parts or None", field=where
        )
    if content is None and role != "assistant":
        raise InvalidInputError(f"{where}.content is missing", field=where)


def group_units(
    messages: Sequence[Mapping[str, Any]],
    *,
    field: str = "conversation_messages",
    offset: int = 0,
) -> list[HistoryUnit]:
    """Split messages into units; a tool-calling message and its results form one unit.

    ``offset`` is the position of ``messages[0]`` in the caller's list, for error messages.
    """
    units: list[HistoryUnit] = []
    i, n = 0, len(messages)
    while i < n:
        msg = messages[i]
        stray = _result_ids(msg)
        if stray:
            raise ToolPairingError(
                f"{field}[{i + offset}] is a tool result for call {stray[0]!r} but no earlier "
                "assistant message made that call; include the call or drop the result",
                field=f"{field}[{i + offset}]",
                tool_call_id=stray[0],
            )
        pending = _call_ids(msg)
        j = i + 1
        open_ids = set(pending)
        while open_ids and j < n:
            answered = _result_ids(messages[j])
            if not answered:
                break
            for rid in answered:
                if rid not in open_ids:
                    raise ToolPairingError(
                        f"{field}[{j + offset}] answers tool call {rid!r}, which the assistant "
                        f"message at {field}[{i + offset}] did not make (or was answered already)",
                        field=f"{field}[{j + offset}]",
                        tool_call_id=rid,
                    )
                open_ids.discard(rid)
            j += 1
        if open_ids:
            missing = sorted(open_ids)[0]
            raise ToolPairingError(
                f"tool call {missing!r} in {field}[{i + offset}] has no result message after it; "
                "providers reject unanswered calls, so add the result or drop the call",
                field=f"{field}[{i + offset}]",
                tool_call_id=missing,
            )
        units.append(HistoryUnit(i, j))
        i = j
    return units
