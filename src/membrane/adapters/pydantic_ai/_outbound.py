"""Membrane's chat messages written back as PydanticAI ``ModelMessage`` objects.

A message that names its origin (:data:`~._inbound.REF_KEY`) and comes back as it was written
turns back into the very parts it came from; parts of one PydanticAI message that come back
together make that message again (the same object when none is missing). A message Membrane
changed keeps its origin's fields and takes the new text: a tool result replaced by a stub stays
the ``ToolReturnPart`` of its call, and Membrane's final message takes the place of the user
prompt it stands for, inside that prompt's request. A message with no origin is built from its
chat form.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pydantic_ai.messages import (
    BinaryContent,
    CompactionPart,
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    NativeToolCallPart,
    NativeToolReturnPart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from membrane.adapters.pydantic_ai._inbound import (
    REDACTED_THINKING_ID,
    REF_KEY,
    ConvertedMessages,
    PartRef,
    request_chat,
    user_content,
)
from membrane.errors import InvalidInputError

__all__ = ["from_membrane"]

# Thinking blocks are Anthropic's shape, so a signed block with no origin came from Anthropic.
_THINKING_PROVIDER = "anthropic"


@dataclass(frozen=True, slots=True)
class _Piece:
    """One part on its way back, and the message it belongs to.

    ``source`` is the index of the PydanticAI message it came from (None for a new part); the
    part is None for a response that had no parts. New parts of one chat message share a group.
    """

    part: Any
    source: int | None
    response: bool
    group: int


def _text_of(content: object, where: str) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):
        return "\n".join(
            str(b["text"])
            for b in content
            if isinstance(b, Mapping) and isinstance(b.get("text"), str)
        )
    raise InvalidInputError(f"{where}.content must be a string or a list of parts", field=where)


def _key(block: Mapping[str, Any]) -> str:
    return json.dumps(block, ensure_ascii=False, sort_keys=True, default=str)


def _known_files(converted: ConvertedMessages | None) -> dict[str, Any]:
    """Each file or image of the source's user prompts, by the chat part written for it."""
    found: dict[str, Any] = {}
    for message in converted.source if converted is not None else ():
        for part in message.parts:
            if not isinstance(part, UserPromptPart) or isinstance(part.content, str):
                continue
            for item in part.content:
                written = user_content([item])
                if isinstance(written, list) and written and not isinstance(item, str):
                    found.setdefault(_key(written[0]), item)
    return found


class _ContentReader:
    """Reads chat content back into PydanticAI content and parts."""

    def __init__(self, converted: ConvertedMessages | None) -> None:
        self.files = _known_files(converted)
        self.names: dict[str, str] = {}  # tool call id -> tool name, for results with no origin

    def user_content(self, content: object, where: str) -> str | list[Any]:
        if isinstance(content, str):
            return content
        if not isinstance(content, list):
            raise InvalidInputError(f"{where}.content must be a string or a list", field=where)
        return [self.user_item(block, f"{where}.content[{j}]") for j, block in enumerate(content)]

    def user_item(self, block: object, where: str) -> Any:
        if isinstance(block, str):
            return block
        if not isinstance(block, Mapping):
            raise InvalidInputError(f"{where} must be a content part dict", field=where)
        known = self.files.get(_key(block))
        if known is not None:
            return known
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            return block["text"]
        spec = block.get("image_url")
        url = spec.get("url") if isinstance(spec, Mapping) else spec
        if kind == "image_url" and isinstance(url, str):
            return BinaryContent.from_data_uri(url) if url.startswith("data:") else ImageUrl(url)
        raise InvalidInputError(
            f"{where} is a {kind!r} part that cannot be given back without its original",
            field=where,
        )

    def response_parts(self, message: Mapping[str, Any], where: str) -> list[Any]:
        content = message.get("content")
        parts: list[Any] = []
        if isinstance(content, str):
            parts += [TextPart(content)] if content else []
        elif isinstance(content, list):
            parts += [self.block(b, f"{where}.content[{j}]") for j, b in enumerate(content)]
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            call_id = str(call.get("id") or "")
            parts.append(
                ToolCallPart(
                    str(function.get("name", "")), function.get("arguments"), tool_call_id=call_id
                )
            )
        return parts

    def block(self, block: object, where: str) -> Any:
        if isinstance(block, str):
            return TextPart(block)
        if not isinstance(block, Mapping):
            raise InvalidInputError(f"{where} must be a content part dict", field=where)
        kind = block.get("type")
        if kind == "text":
            return TextPart(str(block.get("text", "")))
        if kind == "thinking":
            signature = block.get("signature")
            return ThinkingPart(
                str(block.get("thinking", "")),
                signature=signature,
                provider_name=_THINKING_PROVIDER if signature is not None else None,
            )
        if kind == "redacted_thinking":
            return ThinkingPart(
                "",
                id=REDACTED_THINKING_ID,
                signature=str(block.get("data", "")),
                provider_name=_THINKING_PROVIDER,
            )
        if kind == "compaction":
            return CompactionPart(block.get("content"))
        if kind == "server_tool_use":
            call_id, name = str(block.get("id") or ""), str(block.get("name") or "")
            self.names[call_id] = name
            return NativeToolCallPart(name, block.get("input"), tool_call_id=call_id)
        if kind == "server_tool_result":
            call_id = str(block.get("tool_use_id") or "")
            return NativeToolReturnPart(
                self.names.get(call_id, ""), block.get("text"), tool_call_id=call_id
            )
        raise InvalidInputError(
            f"{where} is a {kind!r} block that cannot be given back without its original",
            field=where,
        )

    def request_part(self, message: Mapping[str, Any], where: str) -> Any:
        role, content = message.get("role"), message.get("content")
        if role in ("system", "developer"):
            return SystemPromptPart(_text_of(content, where))
        if role == "user":
            return UserPromptPart(self.user_content(content, where))
        if role == "tool":
            call_id = str(message.get("tool_call_id") or "")
            return ToolReturnPart(
                self.names.get(call_id, ""), _text_of(content, where), tool_call_id=call_id
            )
        raise InvalidInputError(
            f"{where} has role {role!r}, which PydanticAI has no request part for", field=where
        )

    def rewritten(self, part: Any, message: Mapping[str, Any], where: str) -> Any:
        """``part`` carrying the new content Membrane gave its message."""
        content = message.get("content")
        if isinstance(part, UserPromptPart):
            return replace(part, content=self.user_content(content, where))
        if isinstance(part, (ToolReturnPart, SystemPromptPart)):
            return replace(part, content=_text_of(content, where))
        return self.request_part(message, where)


class _Reader:
    """Turns chat dicts back into pieces, then runs of pieces into messages."""

    def __init__(self, converted: ConvertedMessages | None) -> None:
        self.converted = converted
        self.content = _ContentReader(converted)
        self.pieces: list[_Piece] = []
        self.groups = 0

    def add(self, part: Any, source: int | None, response: bool) -> None:
        self.pieces.append(_Piece(part, source, response, self.groups))

    def new_message(self, message: Mapping[str, Any], where: str) -> None:
        """A message with no origin, built from its chat form."""
        if message.get("role") == "assistant":
            for part in self.content.response_parts(message, where):
                self.add(part, None, True)
        else:
            self.add(self.content.request_part(message, where), None, False)

    def from_origin(
        self, message: Mapping[str, Any], refs: Sequence[PartRef], changed: bool, where: str
    ) -> None:
        """A message written from PydanticAI parts; ``changed`` when Membrane rewrote it.

        Parts with no chat form that travel with the message come back as they were; a changed
        assistant message is rebuilt from its chat form inside its own response.
        """
        assert self.converted is not None
        source = self.converted.source
        rebuilt = changed and message.get("role") == "assistant"
        done: set[int] = set()  # responses already rebuilt
        for i, j in refs:
            response = isinstance(source[i], ModelResponse)
            if rebuilt and response:
                if i not in done:
                    done.add(i)
                    for part in self.content.response_parts(message, where):
                        self.add(part, i, True)
                continue
            part = None if j < 0 else source[i].parts[j]
            if changed and request_chat(part) is not None:
                part = self.content.rewritten(part, message, where)
            self.add(part, i, response)

    def read(self, messages: Sequence[object]) -> None:
        converted = self.converted
        present = {m.get(REF_KEY) for m in messages if isinstance(m, Mapping)}
        # Membrane's final message stands in for the last user prompt, which it does not send.
        question = converted.question if converted is not None else None
        open_question = question is not None and question not in present
        for i, message in enumerate(messages):
            where = f"messages[{i}]"
            if not isinstance(message, Mapping):
                raise InvalidInputError(f"{where} must be a chat message dict", field=where)
            self.groups += 1
            for call in message.get("tool_calls") or ():
                name = (call.get("function") or {}).get("name", "")
                self.content.names[str(call.get("id") or "")] = str(name)
            ref = message.get(REF_KEY)
            origin = converted.origins.get(ref) if converted and isinstance(ref, str) else None
            if origin is not None:
                written, refs = origin
                self.from_origin(message, refs, message != written, where)
            elif open_question and message.get("role") == "user":
                assert converted is not None and question is not None
                open_question = False
                self.from_origin(message, converted.origins[question][1], True, where)
            else:
                self.new_message(message, where)

    def messages(self) -> list[ModelMessage]:
        out: list[ModelMessage] = []
        run: list[_Piece] = []
        for piece in self.pieces:
            if run and not _same_message(run[-1], piece):
                out.append(self.build(run))
                run = []
            run.append(piece)
        if run:
            out.append(self.build(run))
        return out

    def build(self, run: list[_Piece]) -> ModelMessage:
        head = run[0]
        parts = [p.part for p in run if p.part is not None]
        if head.source is None:
            return ModelResponse(parts=parts) if head.response else ModelRequest(parts=parts)
        assert self.converted is not None
        original = self.converted.source[head.source]
        if len(parts) == len(original.parts) and all(
            a is b for a, b in zip(parts, original.parts, strict=True)
        ):
            return original
        if isinstance(original, ModelRequest):
            return replace(original, parts=parts)
        return replace(original, parts=parts)


def _same_message(a: _Piece, b: _Piece) -> bool:
    """Whether ``b`` joins the message ``a`` is in: parts of one source message, or new
    request parts in a row (as PydanticAI puts tool results in one request)."""
    if a.source != b.source:
        return False
    if a.source is not None:
        return True
    return a.response == b.response and (not a.response or a.group == b.group)


def from_membrane(
    messages: Sequence[object], converted: ConvertedMessages | None = None
) -> list[ModelMessage]:
    """Write Membrane's chat messages back as PydanticAI messages (see the module).

    ``converted`` is what :func:`~._inbound.to_membrane` returned for the history these
    messages were compiled from; without it every message is built from its chat form.
    """
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise InvalidInputError("messages must be a list of chat message dicts", field="messages")
    reader = _Reader(converted)
    reader.read(messages)
    return reader.messages()
