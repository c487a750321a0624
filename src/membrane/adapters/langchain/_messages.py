"""LangChain messages to OpenAI-style dicts and back (tool calls and results included)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    InvalidToolCall,
    SystemMessage,
    ToolCall,
    ToolMessage,
)
from langchain_core.messages.tool import invalid_tool_call, tool_call

from membrane.errors import InvalidInputError

__all__ = ["from_langchain_messages", "to_langchain_messages"]

# Content blocks that repeat one of the message's tool calls: Claude's native ``tool_use`` and
# LangChain v1's standard ``tool_call`` (``output_version="v1"``).
_CALL_BLOCKS = frozenset({"tool_use", "tool_call"})


def from_langchain_messages(
    messages: Sequence[BaseMessage | Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """LangChain messages as OpenAI-style dicts (tool calls and tool results included).

    An ``AIMessage`` gives its ``tool_calls`` and ``invalid_tool_calls`` (arguments as the
    model wrote them) as OpenAI tool calls. Claude's messages also carry each call as a native
    ``tool_use`` block in ``content`` (a streamed one with ``partial_json`` and ``index``), and
    LangChain v1 content as a ``tool_call`` block; a block whose id is one of the message's
    calls is left out of the content, so the call is sent once. Calls are matched by id, not
    by ``response_metadata["model_provider"]``, so a message stored without it reads the same.
    Other blocks (text, ``thinking`` with its signature) stay as they are.
    """
    out: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        if isinstance(message, Mapping):
            out.append(dict(message))
            continue
        if not isinstance(message, BaseMessage):
            raise TypeError(f"history items must be LangChain messages or dicts, got {message!r}")
        out.append(_to_dict(message, f"history[{i}]"))
    return out


def _openai_call(call_id: object, name: object, arguments: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name if isinstance(name, str) else "", "arguments": arguments},
    }


def _json_arguments(args: object, where: str) -> str:
    try:
        return json.dumps(args, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidInputError(
            f"{where} must be JSON (dicts, lists, strings, finite numbers, booleans, null): "
            f"{type(exc).__name__}: {exc}",
            field=where,
        ) from None


def _ai_dict(message: AIMessage, where: str) -> dict[str, Any]:
    calls = [
        _openai_call(
            c["id"], c["name"], _json_arguments(c["args"], f"{where}.tool_calls[{j}].args")
        )
        for j, c in enumerate(message.tool_calls)
    ]
    # A call whose arguments were not a JSON object: sent with the text the model wrote.
    calls += [_openai_call(c["id"], c["name"], c["args"] or "") for c in message.invalid_tool_calls]
    content: Any = message.content
    ids = {call["id"] for call in calls if call["id"] is not None}
    if isinstance(content, list) and ids:
        content = [
            block
            for block in content
            if not (
                isinstance(block, Mapping)
                and block.get("type") in _CALL_BLOCKS
                and block.get("id") in ids
            )
        ] or None
    out: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        out["tool_calls"] = calls
    return out


def _to_dict(message: BaseMessage, where: str) -> dict[str, Any]:
    if isinstance(message, ToolMessage):
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    if isinstance(message, AIMessage):
        return _ai_dict(message, where)
    if isinstance(message, HumanMessage):
        return {"role": "user", "content": message.content}
    if isinstance(message, SystemMessage):
        role = message.additional_kwargs.get("__openai_role__", "system")
        return {"role": role, "content": message.content}
    if isinstance(message, ChatMessage):
        return {"role": message.role, "content": message.content}
    raise InvalidInputError(
        f"cannot send a LangChain {type(message).__name__} as chat history", field="history"
    )


def to_langchain_messages(messages: Sequence[Mapping[str, Any]]) -> list[BaseMessage]:
    """OpenAI-style dicts (as Membrane emits them) as LangChain messages.

    A tool call whose ``arguments`` are not a JSON object (cut-off JSON, a JSON array) becomes
    one of the ``AIMessage``'s ``invalid_tool_calls``, holding the arguments as written, which
    LangChain's chat models send back as they are.
    """
    return [_from_dict(m) for m in messages]


def _read_call(call: Mapping[str, Any]) -> ToolCall | InvalidToolCall:
    function = call.get("function") or {}
    name, call_id = str(function.get("name") or ""), call.get("id")
    raw = function.get("arguments")
    if isinstance(raw, Mapping):
        return tool_call(name=name, args=dict(raw), id=call_id)
    text = raw if isinstance(raw, str) else ""
    try:
        args = json.loads(text) if text.strip() else {}
    except (ValueError, RecursionError) as exc:
        return invalid_tool_call(
            name=name, args=text, id=call_id, error=f"arguments are not valid JSON: {exc}"
        )
    if not isinstance(args, dict):
        error = f"arguments are a JSON {type(args).__name__}, not an object"
        return invalid_tool_call(name=name, args=text, id=call_id, error=error)
    return tool_call(name=name, args=args, id=call_id)


def _from_dict(message: Mapping[str, Any]) -> BaseMessage:
    role = message.get("role")
    content = message.get("content")
    content = "" if content is None else content
    if role == "system":
        return SystemMessage(content=content)
    if role == "developer":
        return SystemMessage(content=content, additional_kwargs={"__openai_role__": "developer"})
    if role == "user":
        return HumanMessage(content=content)
    if role == "assistant":
        read = [_read_call(call) for call in message.get("tool_calls") or ()]
        calls = [c for c in read if c.get("type") == "tool_call"]
        invalid = [c for c in read if c.get("type") == "invalid_tool_call"]
        return AIMessage(content=content, tool_calls=calls, invalid_tool_calls=invalid)
    if role == "tool":
        return ToolMessage(content=content, tool_call_id=str(message.get("tool_call_id", "")))
    return ChatMessage(role=str(role), content=content)
