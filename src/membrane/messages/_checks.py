"""Checks on text and message details that the provider request could not carry.

A lone surrogate (half of a UTF-16 pair) is a valid Python string character but cannot be
encoded as UTF-8, so a request holding one fails only when it is sent. The other checks turn
shapes that would be counted wrongly or rejected by a provider (tool calls that are not a list,
an assistant message that says nothing, a tool input that is not JSON) into an
:class:`~membrane.errors.InvalidInputError` at the entry, naming the field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from membrane import config
from membrane.errors import InvalidInputError

__all__ = [
    "check_message_details",
    "check_text",
    "check_text_size",
    "find_lone_surrogate",
    "has_lone_surrogate",
]

_SURROGATE = re.compile("[\ud800-\udfff]")
_MAX_DEPTH = 64


def _has_surrogate(text: str) -> bool:
    # isascii() is a fast scan; most text never reaches the pattern.
    return not text.isascii() and _SURROGATE.search(text) is not None


def has_lone_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate, which UTF-8 cannot encode."""
    return _has_surrogate(text)


def find_lone_surrogate(value: object, where: str, depth: int = 0) -> str | None:
    """Where in ``value`` (strings, dict keys and values, lists) a lone surrogate sits."""
    if isinstance(value, str):
        return where if _has_surrogate(value) else None
    if depth > _MAX_DEPTH:
        return None
    if isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str) and _has_surrogate(key):
                return f"{where}.{key}"
            if isinstance(item, str) and not _has_surrogate(item):
                continue  # the common case, without building the item's path
            inner = f"{where}.{key}" if isinstance(key, str) else where
            found = find_lone_surrogate(item, inner, depth + 1)
            if found is not None:
                return found
    elif isinstance(value, (list, tuple)):
        for j, item in enumerate(value):
            found = find_lone_surrogate(item, f"{where}[{j}]", depth + 1)
            if found is not None:
                return found
    return None


def check_text(value: object, field: str, *, optional: bool = False) -> None:
    """``value`` is a string (or None when ``optional``) that UTF-8 can encode."""
    if value is None and optional:
        return
    if not isinstance(value, str):
        kind = "a string or None" if optional else "a string"
        raise InvalidInputError(f"{field} must be {kind}, got {type(value).__name__}", field=field)
    check_text_size(value, field)
    if _has_surrogate(value):
        raise InvalidInputError(_surrogate_message(field), field=field)


def check_text_size(text: str, field: str) -> None:
    """``text`` holds at most :data:`membrane.config.MAX_TEXT_CHARS` characters."""
    config.check_within(
        len(text), "MAX_TEXT_CHARS", field, "characters", "send a shorter text or split it"
    )


def _surrogate_message(where: str) -> str:
    return (
        f"{where} holds a lone surrogate (half of a UTF-16 pair), which no request can encode; "
        "decode the source text with errors='replace' or fix it"
    )


def check_message_details(msg: Mapping[str, Any], where: str) -> None:
    """The parts of a message the shape check does not cover (see the module)."""
    calls = msg.get("tool_calls")
    if calls is not None and not isinstance(calls, list):
        raise InvalidInputError(
            f"{where}.tool_calls must be a list of tool-call dicts, got {type(calls).__name__}",
            field=f"{where}.tool_calls",
        )
    for j, call in enumerate(calls or ()):
        _check_call(call, f"{where}.tool_calls[{j}]")
    content = msg.get("content")
    if msg.get("role") == "assistant" and content is None and not calls:
        raise InvalidInputError(
            f"{where} is an assistant message with neither content nor tool calls",
            field=where,
        )
    if isinstance(content, str):
        check_text_size(content, f"{where}.content")
    elif isinstance(content, list):
        for j, block in enumerate(content):
            if not isinstance(block, Mapping):
                continue
            if block.get("type") == "tool_use":
                _check_json(block.get("input"), f"{where}.content[{j}].input")
            elif isinstance(block.get("text"), str):
                check_text_size(block["text"], f"{where}.content[{j}].text")
    found = find_lone_surrogate(msg, where)
    if found is not None:
        raise InvalidInputError(_surrogate_message(found), field=found)


def _check_call(call: object, where: str) -> None:
    if not isinstance(call, Mapping):
        raise InvalidInputError(
            f"{where} must be a tool-call dict, got {type(call).__name__}", field=where
        )
    fn = call.get("function")
    if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
        raise InvalidInputError(f"{where} needs a function dict with a name string", field=where)
    arguments = fn.get("arguments")
    if arguments is not None and not isinstance(arguments, (str, Mapping)):
        raise InvalidInputError(
            f"{where}.function.arguments must be a JSON string, got {type(arguments).__name__}",
            field=f"{where}.function.arguments",
        )


def _check_json(value: object, where: str) -> None:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidInputError(
            f"{where} must be JSON (dicts, lists, strings, finite numbers, booleans, null): "
            f"{type(exc).__name__}: {exc}",
            field=where,
        ) from None
