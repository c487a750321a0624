"""Messages read into small typed parts, for the request builders to render.

:func:`normalize_messages` reads a compiled message list (either accepted shape) into text,
image, tool call, tool result and opaque parts, checks every part's shape, and checks the
tool pairing with the same :func:`group_units` that compile uses. It keeps nothing: each
call reads the list it is given, so an edit to ``result.messages`` is what gets sent.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from membrane.errors import InvalidInputError
from membrane.messages._pairing import group_units
from membrane.messages._responses import ITEMS_KEY, unportable_item

__all__ = [
    "Image",
    "NormalMessage",
    "Opaque",
    "Part",
    "Text",
    "ToolCall",
    "ToolResult",
    "normalize_messages",
]


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
class NormalMessage:
    """One message as parts; a tool message becomes a user message holding its result.

    ``string_content`` is the content when it was a plain string (its text is the first part
    then, if not empty), so a builder can split it where a cached prefix ends.
    """

    role: Literal["system", "user", "assistant"]
    parts: tuple[Part, ...]
    index: int  # position in the message list
    string_content: str | None = None


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
    """Reads parts; remembers each call's name for the result that answers it."""

    def __init__(self, responses_items: bool = False) -> None:
        self.responses_items = responses_items
        self.names: dict[str, str] = {}
        self._kinds: dict[str, Callable[[Mapping[str, Any], str], list[Part]]] = {
            "text": self._text,
            "image_url": self._image_url,
            "image": self._image,
            "tool_use": self._tool_use,
            "tool_result": self._tool_result,
        }

    def block(self, item: object, where: str) -> list[Part]:
        if isinstance(item, str):
            return [Text(item)] if item else []
        if not isinstance(item, Mapping):
            raise InvalidInputError(
                f"{where} must be a content part dict, got {type(item).__name__}", field=where
            )
        read = self._kinds.get(str(item.get("type")))
        return [Opaque(item)] if read is None else read(item, where)

    def _text(self, item: Mapping[str, Any], where: str) -> list[Part]:
        text = item.get("text")
        if not isinstance(text, str):
            raise InvalidInputError(f"{where}: a text part needs a 'text' string", field=where)
        return [Text(text, raw=item)] if text else []

    def _image_url(self, item: Mapping[str, Any], where: str) -> list[Part]:
        spec = item.get("image_url")
        url = spec.get("url") if isinstance(spec, Mapping) else spec
        if not isinstance(url, str) or not url:
            raise InvalidInputError(f"{where}: an image_url part needs image_url.url", field=where)
        return [Image(url)]

    def _image(self, item: Mapping[str, Any], where: str) -> list[Part]:
        source = item.get("source")
        if isinstance(source, Mapping) and source.get("type") == "base64":
            url = f"data:{source.get('media_type')};base64,{source.get('data')}"
            return [Image(url, raw=item)]
        if isinstance(source, Mapping) and source.get("type") == "url":
            return [Image(str(source.get("url")), raw=item)]
        return [Opaque(item)]

    def _tool_use(self, item: Mapping[str, Any], where: str) -> list[Part]:
        call_id, name = str(item.get("id") or ""), str(item.get("name") or "")
        self.names[call_id] = name
        args = item.get("input")
        return [ToolCall(call_id, name, dict(args) if isinstance(args, Mapping) else {}, item)]

    def _tool_result(self, item: Mapping[str, Any], where: str) -> list[Part]:
        call_id = str(item.get("tool_use_id") or "")
        content = self.result_content(item.get("content"), where)
        name = self.names.get(call_id, "")
        return [ToolResult(call_id, name, content, bool(item.get("is_error")), item)]

    def result_content(self, content: object, where: str) -> str | tuple[Text | Image, ...]:
        if content is None or isinstance(content, str):
            return content or ""
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
        return tuple(out)

    def tool_calls(self, msg: Mapping[str, Any], role: str, where: str) -> list[Part]:
        parts: list[Part] = []
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
            self.names[call_id] = fn["name"]
            signature = call.get("thought_signature")
            parts.append(
                ToolCall(
                    call_id,
                    fn["name"],
                    _parse_arguments(fn.get("arguments"), cwhere),
                    thought_signature=signature if isinstance(signature, str) else None,
                )
            )
        return parts

    def message(self, i: int, msg: object, field: str) -> NormalMessage:
        where = f"{field}[{i}]"
        if not isinstance(msg, Mapping):
            raise InvalidInputError(f"{where} must be a dict", field=where)
        role, content = msg.get("role"), msg.get("content")
        if ITEMS_KEY in msg and not self.responses_items:
            kind = unportable_item(msg)
            if kind is not None:
                raise InvalidInputError(
                    f"{where} holds a Responses {kind!r} item, which has no form outside the "
                    "Responses API; send this history with openai_responses_request",
                    field=where,
                )
        if role == "tool":
            call_id = str(msg.get("tool_call_id") or "")
            result = ToolResult(
                call_id, self.names.get(call_id, ""), self.result_content(content, where)
            )
            return NormalMessage("user", (result,), i)
        if role == "developer":
            role = "system"
        if role not in ("system", "user", "assistant"):
            raise InvalidInputError(
                f"{where} has role {role!r}; expected system, developer, user, assistant or tool",
                field=where,
            )
        parts: list[Part] = []
        if isinstance(content, str):
            parts.extend([Text(content)] if content else [])
        elif isinstance(content, list):
            for j, item in enumerate(content):
                parts.extend(self.block(item, f"{where}.content[{j}]"))
        elif content is not None:
            raise InvalidInputError(
                f"{where}.content must be a string, a list of parts or None", field=where
            )
        parts.extend(self.tool_calls(msg, role, where))
        string_content = content if isinstance(content, str) else None
        return NormalMessage(role, tuple(parts), i, string_content)


def normalize_messages(
    messages: object, *, field: str = "messages", responses_items: bool = False
) -> list[NormalMessage]:
    """Read a message list into typed parts and check its tool pairing.

    Raises :class:`InvalidInputError` for a malformed message or part and
    :class:`ToolPairingError` when the tool pairing rules are broken (see ``group_units``).
    A message read from Responses items is read in its chat form; one holding an item with no
    chat form (a hosted tool, a compaction) is refused unless ``responses_items`` says the
    caller writes those items back itself. Reasoning items are left out of the chat form.
    """
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise InvalidInputError(f"{field} must be a list of message dicts", field=field)
    reader = _Reader(responses_items)
    out = [reader.message(i, msg, field) for i, msg in enumerate(messages)]
    group_units(messages, field=field)
    return out
