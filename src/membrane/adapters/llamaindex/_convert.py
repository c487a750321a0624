"""LlamaIndex ``ChatMessage`` objects read as Membrane's chat messages, and back.

Membrane reads messages in OpenAI chat shape. Each LlamaIndex message becomes one dict:

- the role: ``system``, ``developer``, ``user`` and ``assistant`` as they are; ``tool`` (and the
  legacy ``function``) as ``tool``; ``chatbot`` and ``model`` as ``assistant``;
- the blocks as content: one text block as a plain string, otherwise a list of parts in block
  order: ``text``; ``image_url`` for an image with a URL or inline data (the data as a
  ``data:`` URL); ``thinking`` with its ``signature`` for a thinking block (Anthropic's form,
  which Membrane counts and keeps in the message of the calls it led to); a part holding only
  the block's ``text`` for citable and citation blocks; a ``llamaindex_block`` part, passed
  through and not counted, for what has no chat form (audio, video, documents, images known
  only by a local path);
- the tool calls, whether 0.14 keeps them as ``ToolCallBlock`` blocks or an integration keeps
  them in ``additional_kwargs["tool_calls"]`` (OpenAI or Anthropic form), as ``tool_calls``;
- a tool result's ``additional_kwargs["tool_call_id"]`` as ``tool_call_id``.

Each dict also holds the message it was read from under :data:`SOURCE_KEY`. On the way back,
a dict whose chat form is still the one its message gives is turned into that very message, so
what Membrane keeps reaches the LLM exactly as LlamaIndex stored it (signatures, cache points,
every ``additional_kwargs`` entry). A dict Membrane wrote (its system message, the final
message, a stub in place of an oversized tool result) or one edited after conversion is built
from its chat form: text, images, thinking, ``ToolCallBlock`` calls and the result's
``tool_call_id``, the way 0.14 stores them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from llama_index.core.base.llms.types import (
    CitableBlock,
    CitationBlock,
    ImageBlock,
    MessageRole,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
)
from llama_index.core.llms import ChatMessage

from membrane.errors import InvalidInputError

__all__ = ["SOURCE_KEY", "from_llamaindex_messages", "to_llamaindex_messages"]

#: Where a converted dict keeps the ``ChatMessage`` it was read from.
SOURCE_KEY = "llamaindex_message"

_CHAT_ROLES = {
    "system": "system",
    "developer": "developer",
    "user": "user",
    "assistant": "assistant",
    "chatbot": "assistant",
    "model": "assistant",
    "tool": "tool",
    "function": "tool",
}


def from_llamaindex_messages(messages: Iterable[ChatMessage]) -> list[dict[str, Any]]:
    """LlamaIndex messages as Membrane's chat dicts, each keeping its source message.

    >>> from llama_index.core.llms import ChatMessage
    >>> [d["content"] for d in from_llamaindex_messages([ChatMessage(content="Hi")])]
    ['Hi']
    """
    out = []
    for i, message in enumerate(messages):
        if not isinstance(message, ChatMessage):
            raise InvalidInputError(
                f"messages[{i}] must be a llama_index ChatMessage, got {type(message).__name__}",
                field=f"messages[{i}]",
            )
        out.append({**chat_form(message), SOURCE_KEY: message})
    return out


def to_llamaindex_messages(messages: Iterable[Mapping[str, Any]]) -> list[ChatMessage]:
    """Membrane's chat dicts (a compile's ``result.messages``) as LlamaIndex messages."""
    out: list[ChatMessage] = []
    for message in messages:
        source = message.get(SOURCE_KEY)
        if isinstance(source, ChatMessage) and _same_chat_form(message, source):
            out.append(source)
        else:
            out.append(_built(message))
    return out


def chat_form(message: ChatMessage) -> dict[str, Any]:
    """The OpenAI chat form of one message (without its source)."""
    role = _CHAT_ROLES.get(message.role.value, "assistant")
    parts: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for block in message.blocks:
        if isinstance(block, ToolCallBlock):
            calls.append(_call_from_block(block))
        else:
            parts.extend(_parts_of(block))
    if not calls and role == "assistant":
        calls = [_call_from_kwargs(c) for c in message.additional_kwargs.get("tool_calls") or ()]
    out: dict[str, Any] = {"role": role, "content": _content(parts, bool(calls))}
    if calls:
        out["tool_calls"] = calls
    if role == "tool":
        out["tool_call_id"] = str(message.additional_kwargs.get("tool_call_id") or "")
    return out


def _same_chat_form(message: Mapping[str, Any], source: ChatMessage) -> bool:
    return {k: v for k, v in message.items() if k != SOURCE_KEY} == chat_form(source)


def _content(parts: list[dict[str, Any]], has_calls: bool) -> str | list[dict[str, Any]] | None:
    if len(parts) == 1 and set(parts[0]) == {"type", "text"} and parts[0]["type"] == "text":
        return str(parts[0]["text"])
    if parts:
        return parts
    return None if has_calls else ""


def _parts_of(block: Any) -> list[dict[str, Any]]:
    if isinstance(block, TextBlock):
        return [{"type": "text", "text": block.text}]
    if isinstance(block, ImageBlock):
        return [_image_part(block)]
    if isinstance(block, ThinkingBlock):
        return [_thinking_part(block)]
    if isinstance(block, (CitableBlock, CitationBlock)):
        return [{"type": f"llamaindex_{block.block_type}", "text": _cited_text(block)}]
    kind = getattr(block, "block_type", type(block).__name__)
    if kind == "cache":
        return []  # a cache marker says nothing; its message keeps it
    return [{"type": "llamaindex_block", "block_type": str(kind)}]


def _image_part(block: ImageBlock) -> dict[str, Any]:
    if isinstance(block.image, bytes) and block.image:
        url = f"data:{block.image_mimetype or 'image/png'};base64,{block.image.decode('ascii')}"
    elif block.url is not None:
        url = str(block.url)
    else:
        return {"type": "llamaindex_block", "block_type": "image"}
    spec: dict[str, Any] = {"url": url}
    if block.detail:
        spec["detail"] = block.detail
    return {"type": "image_url", "image_url": spec}


def _thinking_part(block: ThinkingBlock) -> dict[str, Any]:
    part: dict[str, Any] = {"type": "thinking", "thinking": block.content or ""}
    signature = block.additional_information.get("signature")
    if isinstance(signature, str):
        part["signature"] = signature
    return part


def _cited_text(block: CitableBlock | CitationBlock) -> str:
    inner = block.content if isinstance(block, CitableBlock) else [block.cited_content]
    return "\n".join(b.text for b in inner if isinstance(b, TextBlock))


def _arguments(kwargs: object) -> str:
    return kwargs if isinstance(kwargs, str) else json.dumps(kwargs, ensure_ascii=False)


def _call_from_block(block: ToolCallBlock) -> dict[str, Any]:
    return {
        "id": block.tool_call_id or "",
        "type": "function",
        "function": {"name": block.tool_name, "arguments": _arguments(block.tool_kwargs)},
    }


def _call_from_kwargs(call: object) -> dict[str, Any]:
    """One entry of ``additional_kwargs["tool_calls"]``: an OpenAI SDK object or its dict,
    or an Anthropic ``tool_use`` dict (``name`` and ``input``)."""
    raw = call.model_dump() if hasattr(call, "model_dump") else call
    if not isinstance(raw, Mapping):
        raise InvalidInputError(
            f"additional_kwargs['tool_calls'] holds a {type(call).__name__}; expected an "
            "OpenAI tool call or a dict",
            field="additional_kwargs.tool_calls",
        )
    function = raw.get("function")
    if isinstance(function, Mapping):
        name, arguments = function.get("name"), function.get("arguments")
    else:
        name, arguments = raw.get("name"), raw.get("input", raw.get("arguments"))
    return {
        "id": str(raw.get("id") or ""),
        "type": "function",
        "function": {"name": str(name or ""), "arguments": _arguments(arguments or {})},
    }


def _built(message: Mapping[str, Any]) -> ChatMessage:
    role = str(message.get("role") or "")
    if role not in _CHAT_ROLES:
        raise InvalidInputError(f"a message has role {role!r}", field="role")
    blocks: list[Any] = _blocks_of(message.get("content"))
    blocks += [_call_block(call) for call in message.get("tool_calls") or ()]
    kwargs = {"tool_call_id": message.get("tool_call_id")} if role == "tool" else {}
    return ChatMessage(role=MessageRole(role), blocks=blocks, additional_kwargs=kwargs)


def _blocks_of(content: object) -> list[Any]:
    if content is None:
        return []
    if isinstance(content, str):
        return [TextBlock(text=content)]
    if not isinstance(content, Sequence):
        raise InvalidInputError("message content must be a string or a list", field="content")
    blocks: list[Any] = []
    for part in content:
        if isinstance(part, str):
            blocks.append(TextBlock(text=part))
        elif isinstance(part, Mapping):
            blocks.extend(_block_of(part))
    return blocks


def _block_of(part: Mapping[str, Any]) -> list[Any]:
    kind = part.get("type")
    if kind == "text":
        return [TextBlock(text=str(part.get("text", "")))]
    if kind == "image_url":
        spec = part.get("image_url")
        url = spec.get("url") if isinstance(spec, Mapping) else spec
        detail = spec.get("detail") if isinstance(spec, Mapping) else None
        return [_image_block(str(url), detail)]
    if kind == "thinking":
        signature = part.get("signature")
        info = {"signature": signature} if isinstance(signature, str) else {}
        return [ThinkingBlock(content=part.get("thinking"), additional_information=info)]
    if isinstance(part.get("text"), str):
        return [TextBlock(text=part["text"])]
    return []


def _image_block(url: str, detail: object) -> ImageBlock:
    level = detail if isinstance(detail, str) else None
    if url.startswith("data:") and ";base64," in url:
        head, data = url[len("data:") :].split(";base64,", 1)
        return ImageBlock(image=data.encode("ascii"), image_mimetype=head or None, detail=level)
    return ImageBlock(url=url, detail=level)


def _call_block(call: Mapping[str, Any]) -> ToolCallBlock:
    function = call.get("function") or {}
    arguments = function.get("arguments", "")
    try:
        kwargs = json.loads(arguments) if isinstance(arguments, str) else arguments
    except json.JSONDecodeError:
        kwargs = arguments  # a partial call keeps its text, as 0.14 allows
    return ToolCallBlock(
        tool_call_id=call.get("id") or None,
        tool_name=str(function.get("name", "")),
        tool_kwargs=kwargs if isinstance(kwargs, (dict, str)) else {},
    )
