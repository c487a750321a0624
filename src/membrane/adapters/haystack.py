"""Haystack adapter: a chat prompt builder component that compiles with Membrane.

Needs the ``haystack`` extra (``haystack-ai``). :class:`MembranePromptBuilder` has the output
of Haystack's ``ChatPromptBuilder`` (``prompt``: a list of ``ChatMessage``) plus ``ref_map``
and ``metadata``, so it drops into a ``Pipeline`` in front of any chat generator. Tool calls
in the history (``ToolCall`` / ``ToolCallResult``) are sent on unchanged. Each run builds a
compiler of its own.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from haystack import Document, component
from haystack.dataclasses import ChatMessage, ChatRole, ToolCall

from membrane.adapters._common import shared_compiler
from membrane.errors import InvalidInputError
from membrane.records import MemoryItem, MemoryKind

__all__ = [
    "MembranePromptBuilder",
    "from_haystack_messages",
    "haystack_document_to_memory",
    "to_haystack_messages",
]


@component
class MembranePromptBuilder:
    """Builds the chat prompt for a Pipeline with Membrane's budget, layout and citations.

    ``documents`` (Haystack ``Document``) and ``memories`` (``MemoryItem`` or typed records)
    are offered as memories, documents first; ``history`` is the conversation so far.
    ``compiler_options`` go to :class:`~membrane.ContextCompiler` unchanged.
    """

    def __init__(
        self,
        max_tokens: int,
        model_id: str | None = None,
        core_content: str = "",
        compiler_options: dict[str, Any] | None = None,
    ) -> None:
        self.max_tokens = max_tokens
        self.model_id = model_id
        self.core_content = core_content
        self.compiler_options = dict(compiler_options or {})

    @component.output_types(
        prompt=list[ChatMessage], ref_map=dict[int, str], metadata=dict[str, Any]
    )
    def run(
        self,
        question: str,
        documents: list[Document] | None = None,
        memories: list[Any] | None = None,
        history: list[ChatMessage] | None = None,
    ) -> dict[str, Any]:
        """Compile one turn; ``prompt`` is what the chat generator should receive."""
        options = {
            "model_id": self.model_id,
            "core_content": self.core_content,
            **self.compiler_options,
        }
        offered: list[object] = [haystack_document_to_memory(d) for d in documents or ()]
        offered.extend(memories or ())
        result = shared_compiler(self.max_tokens, options).compile(
            offered, question, conversation_messages=from_haystack_messages(history or ())
        )
        return {
            "prompt": to_haystack_messages(result.messages),
            "ref_map": dict(result.ref_map),
            "metadata": dict(result.metadata),
        }


def haystack_document_to_memory(
    doc: Document,
    *,
    memory_type: MemoryKind = "semantic",
    priority: int | None = None,
    kind: str = "document",
) -> MemoryItem:
    """A Haystack ``Document`` as a :class:`~membrane.MemoryItem` with the document's id.

    The metadata keys ``memory_type`` and ``priority`` override the arguments.
    """
    if not doc.id:
        raise InvalidInputError("Document has no id to cite", field="id")
    return MemoryItem(
        id=doc.id,
        content=doc.content or "",
        memory_type=doc.meta.get("memory_type", memory_type),
        priority=doc.meta.get("priority", priority),
        kind=kind,
        metadata=dict(doc.meta),
    )


def from_haystack_messages(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """Haystack chat messages as OpenAI-style dicts (one ``tool`` message per tool result)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message.role
        if role == ChatRole.TOOL:
            for res in message.tool_call_results:
                if not isinstance(res.result, str):
                    raise InvalidInputError(
                        "only text tool results can be sent through Membrane", field="history"
                    )
                out.append({"role": "tool", "tool_call_id": res.origin.id, "content": res.result})
            continue
        if role == ChatRole.ASSISTANT and message.tool_calls:
            out.append(
                {
                    "role": "assistant",
                    "content": message.text,
                    "tool_calls": [
                        {
                            "id": call.id,
                            "type": "function",
                            "function": {
                                "name": call.tool_name,
                                "arguments": json.dumps(call.arguments, ensure_ascii=False),
                            },
                        }
                        for call in message.tool_calls
                    ],
                }
            )
            continue
        out.append({"role": role.value, "content": message.text or ""})
    return out


def to_haystack_messages(messages: Sequence[dict[str, Any]]) -> list[ChatMessage]:
    """OpenAI-style dicts (as Membrane emits them) as Haystack chat messages."""
    calls: dict[str, ToolCall] = {}
    out: list[ChatMessage] = []
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        text = content if isinstance(content, str) else None
        if role in ("system", "developer"):
            out.append(ChatMessage.from_system(text or ""))
        elif role == "user":
            out.append(ChatMessage.from_user(text or ""))
        elif role == "assistant":
            tool_calls = []
            for raw in message.get("tool_calls") or ():
                call = ToolCall(
                    tool_name=raw["function"]["name"],
                    arguments=json.loads(raw["function"].get("arguments") or "{}"),
                    id=raw.get("id"),
                )
                calls[str(raw.get("id"))] = call
                tool_calls.append(call)
            out.append(ChatMessage.from_assistant(text, tool_calls=tool_calls or None))
        elif role == "tool":
            origin = calls.get(str(message.get("tool_call_id")))
            if origin is None:
                raise InvalidInputError("a tool result has no call before it", field="messages")
            out.append(ChatMessage.from_tool(text or "", origin=origin))
        else:
            raise InvalidInputError(f"unknown message role {role!r}", field="messages")
    return out
