"""PydanticAI ``ModelMessage`` lists read as Membrane's chat messages, keeping where each came from.

Each chat message Membrane reads is an OpenAI-shape dict (``role``, ``content``, ``tool_calls``,
``tool_call_id``). The parts map as PydanticAI's own OpenAI chat model maps them:

- a ``SystemPromptPart`` is a ``system`` message, a ``UserPromptPart`` a ``user`` message (text,
  and images as ``image_url`` parts; other files as ``file`` parts Membrane does not count);
- a ``ToolReturnPart`` is a ``tool`` message holding the text the model is shown (a retry that
  answers a tool call is one too); a ``RetryFeedbackPart`` is a ``system`` message: PydanticAI
  wrote it, not a person, so Membrane must not take it for the turn's question (the model still
  receives it in the voice PydanticAI gives it);
- a ``ModelResponse`` is one ``assistant`` message: its text, its tool calls as ``tool_calls``,
  its thinking as Anthropic ``thinking`` / ``redacted_thinking`` blocks with their signatures (in
  the same message as the calls, so no cut separates them), server-side tool calls and results
  and files as blocks of their own;
- a compaction summary is a ``compaction`` block, where Membrane starts the history.

Request parts with no chat form (instruction and tool deltas, capability parts, cache points)
travel with the chat message next to them, so they are kept or cut with it. Every message
carries :data:`REF_KEY`, a short string naming the parts it came from; :func:`from_membrane`
turns a message that comes back unchanged into those very parts.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.messages import (
    BaseToolCallPart,
    BinaryContent,
    CompactionPart,
    FilePart,
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    NativeToolCallPart,
    NativeToolReturnPart,
    RetryFeedbackPart,
    RetryPromptPart,
    SpeechPart,
    SystemPromptPart,
    TextContent,
    TextPart,
    ThinkingPart,
    ToolReturnPart,
    UserPromptPart,
)

from membrane.errors import InvalidInputError

__all__ = [
    "REDACTED_THINKING_ID",
    "REF_KEY",
    "ConvertedMessages",
    "PartRef",
    "request_chat",
    "to_membrane",
    "user_content",
]

#: The key of each chat message that names the PydanticAI parts it came from.
REF_KEY = "pydantic_ai_ref"

PartRef = tuple[int, int]
"""A part's place in the converted list: (message index, part index)."""

# Anthropic's id for a thinking block it returned redacted (the signature holds its data).
REDACTED_THINKING_ID = "redacted_thinking"


@dataclass
class ConvertedMessages:
    """PydanticAI messages as Membrane's chat dicts, and the parts each dict stands for."""

    source: list[ModelMessage]
    messages: list[dict[str, Any]] = field(default_factory=list)
    #: ``ref -> (the dict as written, the parts it stands for in order)``.
    origins: dict[str, tuple[dict[str, Any], tuple[PartRef, ...]]] = field(default_factory=dict)
    #: The ref of the last user prompt: the message Membrane's final message stands in for.
    question: str | None = None

    def part(self, ref: PartRef) -> Any:
        return self.source[ref[0]].parts[ref[1]]


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _user_item(item: object) -> dict[str, Any] | None:
    """One item of a user prompt's content as a chat content part (None: nothing to send)."""
    if isinstance(item, str):
        return {"type": "text", "text": item}
    if isinstance(item, TextContent):
        return {"type": "text", "text": item.content}
    if isinstance(item, ImageUrl):
        return {"type": "image_url", "image_url": {"url": item.url}}
    if isinstance(item, BinaryContent):
        if item.is_image:
            return {"type": "image_url", "image_url": {"url": item.data_uri}}
        return {"type": "file", "media_type": item.media_type, "bytes": len(item.data)}
    url = getattr(item, "url", None)
    if isinstance(url, str):
        return {"type": "file", "url": url}
    file_id = getattr(item, "file_id", None)
    if isinstance(file_id, str):
        return {"type": "file", "file_id": file_id}
    return None  # a cache point: a marker, not content


def user_content(content: str | Sequence[object]) -> str | list[dict[str, Any]]:
    """A user prompt's content in chat form."""
    if isinstance(content, str):
        return content
    parts = [p for p in (_user_item(item) for item in content) if p is not None]
    return parts


def request_chat(part: object) -> dict[str, Any] | None:
    """The chat message for one request part, or None for a part with no chat form."""
    if isinstance(part, SystemPromptPart):
        return {"role": "system", "content": part.content}
    if isinstance(part, UserPromptPart):
        return {"role": "user", "content": user_content(part.content)}
    if isinstance(part, ToolReturnPart):
        return {
            "role": "tool",
            "tool_call_id": part.tool_call_id,
            "content": part.model_response_str(),
        }
    if isinstance(part, RetryFeedbackPart):
        return {"role": "system", "content": part.model_response()}
    if isinstance(part, RetryPromptPart):  # the deprecated form, still in stored histories
        if part.tool_name is not None:
            return {
                "role": "tool",
                "tool_call_id": part.tool_call_id,
                "content": part.model_response(),
            }
        return {"role": "system", "content": part.model_response()}
    if isinstance(part, CompactionPart):
        return {"role": "user", "content": [{"type": "compaction", "content": part.content or ""}]}
    if isinstance(part, SpeechPart) and part.transcript:
        return {"role": "user", "content": part.transcript}
    return None


def _thinking_block(part: ThinkingPart) -> dict[str, Any]:
    if part.id == REDACTED_THINKING_ID:
        return {"type": "redacted_thinking", "data": part.signature or ""}
    block: dict[str, Any] = {"type": "thinking", "thinking": part.content}
    if part.signature is not None:
        block["signature"] = part.signature
    return block


def _response_block(part: object) -> dict[str, Any] | None:
    """A response part as a content block (None for a tool call, which is not a block)."""
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.content}
    if isinstance(part, ThinkingPart):
        return _thinking_block(part)
    if isinstance(part, NativeToolCallPart):
        return {
            "type": "server_tool_use",
            "id": part.tool_call_id,
            "name": part.tool_name,
            "input": part.args_as_dict(),
        }
    if isinstance(part, NativeToolReturnPart):
        # Counted as text: the provider sends the result back to the model.
        return {
            "type": "server_tool_result",
            "tool_use_id": part.tool_call_id,
            "text": part.model_response_str(),
        }
    if isinstance(part, CompactionPart):
        return {"type": "compaction", "content": part.content or ""}
    if isinstance(part, FilePart):
        return {"type": "file", "media_type": part.content.media_type}
    if isinstance(part, SpeechPart):
        return {"type": "text", "text": part.transcript or ""}
    if isinstance(part, BaseToolCallPart):
        return None
    return {"type": "pydantic_ai_part", "part_kind": str(getattr(part, "part_kind", ""))}


def _response_message(message: ModelResponse) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for part in message.parts:
        block = _response_block(part)
        if block is not None:
            blocks.append(block)
        elif isinstance(part, BaseToolCallPart):
            calls.append(
                {
                    "id": part.tool_call_id,
                    "type": "function",
                    "function": {"name": part.tool_name, "arguments": part.args_as_json_str()},
                }
            )
    content: str | list[dict[str, Any]] | None = blocks
    if not blocks:
        content = None if calls else ""
    elif all(b["type"] == "text" for b in blocks):
        # As PydanticAI's OpenAI chat model sends them: one string.
        content = "\n\n".join(b["text"] for b in blocks)
    out: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        out["tool_calls"] = calls
    return out


class _Writer:
    """Builds the chat list; parts with no chat form wait for the next message."""

    def __init__(self, source: list[ModelMessage]) -> None:
        self.out = ConvertedMessages(source)
        self.pending: list[PartRef] = []

    def emit(self, message: dict[str, Any], refs: list[PartRef]) -> None:
        # A system message becomes Membrane's persona and does not come back: nothing rides on it.
        if message["role"] != "system":
            refs = [*self.pending, *refs]
            self.pending = []
        ref = f"{refs[0][0]}.{refs[0][1]}"
        message[REF_KEY] = ref
        self.out.messages.append(message)
        self.out.origins[ref] = (message, tuple(refs))

    def request(self, i: int, message: ModelRequest) -> None:
        sent = False  # whether a message other than a system prompt came from this request
        for j, part in enumerate(message.parts):
            chat = request_chat(part)
            if chat is None:
                self.pending.append((i, j))
                continue
            self.emit(chat, [(i, j)])
            sent = sent or chat["role"] != "system"
            if isinstance(part, UserPromptPart):
                self.out.question = chat[REF_KEY]
        if sent and self.pending:
            self.attach_to_last()

    def attach_to_last(self) -> None:
        """Trailing parts ride with the last chat message that is not a system message."""
        last = next((m for m in reversed(self.out.messages) if m["role"] != "system"), None)
        if last is None:
            return  # only system prompts so far: the parts wait for the next message
        ref = last[REF_KEY]
        written, refs = self.out.origins[ref]
        self.out.origins[ref] = (written, (*refs, *self.pending))
        self.pending = []

    def finish(self) -> ConvertedMessages:
        if self.pending:
            self.attach_to_last()
        # Parts still pending had no chat message to travel with: a list holding nothing a
        # model reads. They are not sent.
        self.pending = []
        return self.out


def to_membrane(messages: Sequence[ModelMessage]) -> ConvertedMessages:
    """Read PydanticAI messages into Membrane's chat dicts (see the module)."""
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise InvalidInputError(
            "messages must be a list of PydanticAI ModelMessage objects", field="messages"
        )
    source = list(messages)
    writer = _Writer(source)
    for i, message in enumerate(source):
        if isinstance(message, ModelRequest):
            writer.request(i, message)
        elif isinstance(message, ModelResponse):
            writer.emit(
                _response_message(message), [(i, j) for j in range(len(message.parts))] or [(i, -1)]
            )
        else:
            raise InvalidInputError(
                f"messages[{i}] must be a PydanticAI ModelRequest or ModelResponse, got "
                f"{type(message).__name__}",
                field=f"messages[{i}]",
            )
    return writer.finish()
