"""The text a chat message carries, and how a dropped one is labelled and summarised.

Reads both accepted shapes: OpenAI (``tool_calls`` on assistant messages, ``role="tool"``
results) and Anthropic (``tool_use`` / ``tool_result`` content blocks), with string content or
content-part lists.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from membrane.messages._responses import ITEMS_KEY, opaque_text
from membrane.prompt_text import call_label

__all__ = [
    "IMAGE_PART_TEXT",
    "MAX_NAME_CHARS",
    "PERSON_ROLES",
    "Message",
    "history_text",
    "is_call_stub",
    "message_key",
    "message_role",
    "message_text",
    "speaker_label",
    "tool_call_labels",
    "writer_name",
]

Message = dict[str, Any]

#: The roles a person writes as (tool results have no person behind them).
PERSON_ROLES = ("user", "assistant")
#: How much of a person's name is read (a longer one is cut, a longer speakers key refused).
MAX_NAME_CHARS = 200

# Images are counted through a fixed stand-in text; their real cost depends on size and detail.
IMAGE_PART_TEXT = "[image]"
# A tool call's label names its arguments up to this many characters.
_CALL_LABEL_CHARS = 80


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
    if kind == "compaction":
        # The summary, and the opaque metadata beside it counted as text (an overestimate).
        parts = (block.get("content"), block.get("encrypted_content"))
        return "\n".join(p for p in parts if isinstance(p, str))
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
    """All the text a message carries: content, tool-call names and arguments, tool results,
    Anthropic thinking blocks, and the JSON of the opaque Responses items it carries
    (reasoning, hosted tools). Thinking and opaque items are paid for but are not words
    anyone said: the index and recall read :func:`history_text`."""
    content = message.get("content")
    if content.__class__ is str and not message.get("tool_calls") and ITEMS_KEY not in message:
        return content  # plain chat, the usual case: nothing else to read
    text = _visible_text(message)
    for hidden in (_thinking_text(message.get("content")), opaque_text(message)):
        if hidden:
            text = f"{text}\n{hidden}" if text else hidden
    return text


def _thinking_text(content: Any) -> str:
    """Anthropic thinking blocks as they are sent back: the thinking and its signature, or a
    redacted block's data."""
    if content.__class__ is not list:
        return ""
    out = []
    for block in content:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "thinking":
            signed = (block.get("thinking"), block.get("signature"))
            out += [v for v in signed if isinstance(v, str)]
        elif kind == "redacted_thinking" and isinstance(block.get("data"), str):
            out.append(block["data"])
    return "\n".join(out)


def _visible_text(message: Mapping[str, Any]) -> str:
    text = _content_text(message.get("content"))
    calls = message.get("tool_calls") or ()
    call_texts = []
    for call in calls:
        fn = call.get("function", {}) if isinstance(call, Mapping) else {}
        call_texts.append(f"{fn.get('name', '')}({fn.get('arguments', '')})")
    if call_texts:
        text = "\n".join([text, *call_texts]) if text else "\n".join(call_texts)
    return text


def message_role(message: Mapping[str, Any]) -> str:
    """The message's role ("" when it has none)."""
    return str(message.get("role", ""))


def message_key(message: Mapping[str, Any]) -> tuple[str, str]:
    """The role and text of a message: what tells two messages apart for the history."""
    return (str(message.get("role", "")), message_text(message))


def history_text(message: Mapping[str, Any]) -> str:
    """The text a message stands for once dropped from the history.

    For most messages that is :func:`message_text`. An assistant message that calls tools
    gives its own words with the called tools named at the end (``... (called search)``), or
    "" when it says nothing besides the calls: its results carry the information.
    """
    calls = message.get("tool_calls")
    if message.get("role") != "assistant" or not calls:
        return _visible_text(message)  # opaque items are not words anyone said
    content = message.get("content")
    text = content if isinstance(content, str) else ""
    names = [str(c.get("function", {}).get("name", "")) for c in calls if isinstance(c, Mapping)]
    if names and text.strip():
        text = f"{text} (called {', '.join(names)})"
    return text


def is_call_stub(message: Mapping[str, Any]) -> bool:
    """An assistant message that only calls tools: its results carry the information."""
    if message.get("role") != "assistant":
        return False
    content = message.get("content")
    if isinstance(content, list):
        return all(isinstance(b, Mapping) and b.get("type") == "tool_use" for b in content)
    has_calls = bool(message.get("tool_calls"))
    return has_calls and not (isinstance(content, str) and content.strip())


def _call_label(name: str, arguments: Any) -> str:
    """A tool's name with what it was asked, e.g. ``search_crm {"entity": "Slate Health"}``.

    The arguments are quoted as data (:func:`~membrane.prompt_text.call_label`): they were
    written by a model that may have read an attacker's text.
    """
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError):
            return call_label(name, (), _CALL_LABEL_CHARS)
    if not isinstance(arguments, Mapping):
        return call_label(name, (), _CALL_LABEL_CHARS)
    asked = [
        (str(key), value)
        for key, value in arguments.items()
        if isinstance(value, str) or (isinstance(value, (int, float)) and _shows(value))
    ]
    return call_label(name, asked, _CALL_LABEL_CHARS)


def _shows(number: int | float) -> bool:
    """Whether a number can be written as JSON (an int of more than 4,300 digits cannot)."""
    try:
        json.dumps(number)
    except ValueError:
        return False
    return True


def tool_call_labels(messages: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Call id -> the call's label (tool name and arguments) for every call in ``messages``."""
    labels: dict[str, str] = {}
    for m in messages:
        for call in m.get("tool_calls") or ():
            if isinstance(call, Mapping):
                function = call.get("function", {})
                labels[str(call.get("id", ""))] = _call_label(
                    str(function.get("name", "")), function.get("arguments")
                )
        content = m.get("content")
        if isinstance(content, list):
            for b in content:
                if isinstance(b, Mapping) and b.get("type") == "tool_use":
                    labels[str(b.get("id", ""))] = _call_label(
                        str(b.get("name", "")), b.get("input")
                    )
    return labels


def speaker_label(message: Mapping[str, Any], calls: Mapping[str, str]) -> str:
    """``user``/``assistant``, or ``tool result (<call>)`` naming the call it answers.

    ``calls`` maps call ids to labels, as :func:`tool_call_labels` gives them.
    """
    role = str(message.get("role", "user"))
    if role == "tool":
        call = calls.get(str(message.get("tool_call_id", "")), "tool")
        name = message.get("name")
        return f"tool result ({call_label(str(name), (), 0) if name else call})"
    content = message.get("content")
    if isinstance(content, list):
        answered = [
            calls.get(str(b.get("tool_use_id", "")), "")
            for b in content
            if isinstance(b, Mapping) and b.get("type") == "tool_result"
        ]
        if answered:
            named = "; ".join(a for a in answered if a)
            return f"tool result ({named})" if named else "tool result"
    return role


def writer_name(message: Mapping[str, Any]) -> str | None:
    """Who wrote a user or assistant message, by its own ``name`` field (OpenAI's), when that is
    a usable string (at most its first 200 characters); None otherwise."""
    name = message.get("name")
    if message.get("role") not in PERSON_ROLES or not isinstance(name, str):
        return None
    return name[:MAX_NAME_CHARS] or None
