"""LangChain adapter: a prompt template that compiles with Membrane, and memory hygiene.

Needs the ``langchain`` extra (``langchain-core`` 1.x).

>>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
>>> from membrane.adapters.langchain import MembranePromptTemplate, cited_chain
>>> prompt = MembranePromptTemplate(max_tokens=1000, core_content="Cite as [Mem:N].")
>>> chain = cited_chain(prompt, FakeListChatModel(responses=["30 days [Mem:1]."]))
>>> from membrane import MemoryItem
>>> out = chain.invoke({"question": "Refund window?",
...                     "memories": [MemoryItem(id="doc-381", content="Refunds: 30 days.")]})
>>> out["answer"], out["ref_map"]
('30 days [Mem:1].', {1: 'doc-381'})

``MembranePromptTemplate`` is a real ``BasePromptTemplate``: ``prompt | model | parser``
works, and its output is a :class:`MembranePromptValue`, a ``ChatPromptValue`` that also
carries the compile's ``ref_map``, ``ref_map_type`` and ``metadata``. Nothing is kept on the
template, so one template serves concurrent calls (``chain.batch``) and each answer gets the
ref map of its own request. Every call builds a compiler of its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from operator import itemgetter
from typing import Any, Literal

from langchain_core.documents import Document
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    InvalidToolCall,
    SystemMessage,
    ToolCall,
    ToolMessage,
    get_buffer_string,
)
from langchain_core.messages.tool import invalid_tool_call, tool_call
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompt_values import ChatPromptValue
from langchain_core.prompts import BasePromptTemplate
from langchain_core.runnables import Runnable, RunnableLambda, RunnablePassthrough
from langchain_core.runnables.history import RunnableWithMessageHistory
from pydantic import Field

from membrane.adapters._common import new_compiler
from membrane.compiler import CompileResult
from membrane.errors import InvalidInputError, MemoryCollisionError
from membrane.records import MemoryItem, MemoryKind

__all__ = [
    "MembranePromptTemplate",
    "MembranePromptValue",
    "cited_chain",
    "detect_memory_collision",
    "disable_langchain_memory",
    "from_langchain_messages",
    "langchain_doc_to_memory",
    "to_langchain_messages",
]


class MembranePromptValue(ChatPromptValue):
    """The compiled messages, plus the evidence of the compile that made them."""

    ref_map: dict[int, str] = Field(default_factory=dict)
    ref_map_type: dict[int, str] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)
    type: Literal["MembranePromptValue"] = "MembranePromptValue"

    @classmethod
    def from_result(cls, result: CompileResult) -> MembranePromptValue:
        """Wrap a :class:`~membrane.CompileResult` (messages converted to LangChain's)."""
        return cls(
            messages=to_langchain_messages(result.messages),
            ref_map=dict(result.ref_map),
            ref_map_type=dict(result.ref_map_type),
            metadata=dict(result.metadata),
        )


class MembranePromptTemplate(BasePromptTemplate[str]):
    """A chat prompt compiled by Membrane under ``max_tokens``.

    Input keys (names configurable): ``question`` (required, the current user turn),
    ``memories`` (``MemoryItem`` rows, typed records or LangChain ``Document`` objects) and
    ``history`` (LangChain messages or OpenAI-style dicts; tool calls are kept).
    ``compiler_options`` go to :class:`~membrane.ContextCompiler` unchanged.
    """

    max_tokens: int
    model_id: str | None = None
    core_content: str = ""
    compiler_options: dict[str, Any] = Field(default_factory=dict)
    compile_options: dict[str, Any] = Field(default_factory=dict)
    question_key: str = "question"
    memories_key: str = "memories"
    history_key: str = "history"
    input_variables: list[str] = Field(default_factory=lambda: ["question"])
    optional_variables: list[str] = Field(default_factory=lambda: ["memories", "history"])

    @property
    def _prompt_type(self) -> str:
        return "membrane"

    def compile_result(self, **kwargs: Any) -> CompileResult:
        """Compile the inputs and return Membrane's own result."""
        values = self._merge_partial_and_user_variables(**kwargs)
        if self.question_key not in values:
            raise InvalidInputError(
                f"MembranePromptTemplate needs the current user turn under {self.question_key!r}",
                field=self.question_key,
            )
        options = {
            "model_id": self.model_id,
            "core_content": self.core_content,
            **self.compiler_options,
        }
        memories = [_as_memory(m) for m in values.get(self.memories_key) or ()]
        history = from_langchain_messages(values.get(self.history_key) or ())
        return new_compiler(self.max_tokens, options).compile(
            memories,
            str(values[self.question_key]),
            conversation_messages=history,
            **self.compile_options,
        )

    def format_prompt(self, **kwargs: Any) -> MembranePromptValue:
        """Compile the inputs into a :class:`MembranePromptValue`."""
        return MembranePromptValue.from_result(self.compile_result(**kwargs))

    def format(self, **kwargs: Any) -> str:
        """The compiled messages as one transcript string."""
        return get_buffer_string(self.format_prompt(**kwargs).messages)


def cited_chain(
    prompt: MembranePromptTemplate,
    model: Runnable[Any, Any],
    parser: Runnable[Any, Any] | None = None,
) -> Runnable[dict[str, Any], dict[str, Any]]:
    """``prompt | model | parser`` returning ``{"answer", "ref_map", "metadata"}`` per input.

    The compiled prompt value travels beside the answer (``RunnablePassthrough.assign``), so
    the ref map returned is the one of the very request that produced the answer, also under
    ``batch`` with concurrency.
    """
    answer = itemgetter("prompt") | model | (parser if parser is not None else StrOutputParser())
    return (
        RunnablePassthrough.assign(prompt=prompt)
        | RunnablePassthrough.assign(answer=answer)
        | RunnableLambda(_answer_and_refs)
    )


def _answer_and_refs(values: dict[str, Any]) -> dict[str, Any]:
    value: MembranePromptValue = values["prompt"]
    return {"answer": values["answer"], "ref_map": value.ref_map, "metadata": value.metadata}


# ---------------------------------------------------------------------------- documents


def langchain_doc_to_memory(
    doc: Document,
    *,
    id_key: str = "id",
    memory_type: MemoryKind = "semantic",
    priority: int | None = None,
    kind: str = "document",
) -> MemoryItem:
    """A LangChain ``Document`` as a :class:`~membrane.MemoryItem`.

    The id is ``doc.id`` when set, else ``doc.metadata[id_key]``; a document with neither
    raises :class:`~membrane.errors.InvalidInputError` (citations need a stable id). The
    metadata keys ``memory_type`` and ``priority`` override the arguments.
    """
    raw_id = doc.id if doc.id else doc.metadata.get(id_key)
    if raw_id is None or raw_id == "":
        raise InvalidInputError(
            f"Document has no id: set Document(id=...) or metadata[{id_key!r}] so [Mem:N] "
            "citations can be mapped back to it",
            field="id",
        )
    return MemoryItem(
        id=str(raw_id),
        content=doc.page_content,
        memory_type=doc.metadata.get("memory_type", memory_type),
        priority=doc.metadata.get("priority", priority),
        kind=kind,
        metadata=dict(doc.metadata),
    )


def _as_memory(item: object) -> object:
    return langchain_doc_to_memory(item) if isinstance(item, Document) else item


# ---------------------------------------------------------------------------- messages


def from_langchain_messages(
    messages: Sequence[BaseMessage | Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """LangChain messages as OpenAI-style dicts (tool calls and tool results included).

    An ``AIMessage`` gives its ``tool_calls`` and ``invalid_tool_calls`` (arguments as the
    model wrote them) as OpenAI tool calls. Claude's messages also carry each call as a native
    ``tool_use`` block in ``content``; a block whose id is one of the message's calls is left
    out of the content, so the call is sent once. Other blocks (text, ``thinking`` with its
    signature) stay as they are.
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
                and block.get("type") == "tool_use"
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


# ---------------------------------------------------------------------------- memory hygiene


def _children(node: object) -> Iterator[object]:
    if isinstance(node, RunnableWithMessageHistory):
        yield from _unwrapped(node)
        return
    fields = getattr(type(node), "model_fields", None)
    if isinstance(fields, Mapping):
        for name in fields:
            yield getattr(node, name, None)
    for attr in ("steps", "first", "middle", "last", "bound", "mapper", "runnable", "fallbacks"):
        if not (isinstance(fields, Mapping) and attr in fields) and hasattr(node, attr):
            yield getattr(node, attr, None)


def _unwrapped(wrapper: RunnableWithMessageHistory) -> Iterator[Runnable[Any, Any]]:
    # The wrapped runnable sits behind a RunnableLambda whose closure holds it; ``deps`` is
    # LangChain's own public view of the runnables a lambda closes over.
    bound = wrapper.bound
    steps = getattr(bound, "steps", ())
    for step in steps[1:]:
        for dep in getattr(step, "deps", ()):
            yield getattr(dep, "bound", dep)


def _walk(root: object) -> Iterator[tuple[str, object]]:
    seen: set[int] = set()
    stack: list[tuple[str, object]] = [("chain", root)]
    while stack:
        path, node = stack.pop()
        if node is None or id(node) in seen or isinstance(node, (str, bytes, int, float)):
            continue
        seen.add(id(node))
        if isinstance(node, Mapping):
            stack.extend((f"{path}[{k!r}]", v) for k, v in node.items())
            continue
        if isinstance(node, (list, tuple)):
            stack.extend((f"{path}[{i}]", v) for i, v in enumerate(node))
            continue
        if not isinstance(node, Runnable) and not hasattr(node, "memory"):
            continue
        yield path, node
        for child in _children(node):
            stack.append((f"{path}.{type(child).__name__}", child))


def _legacy_memory(node: object) -> object | None:
    memory: object | None = getattr(node, "memory", None)
    if memory is not None and hasattr(memory, "load_memory_variables"):
        return memory
    return None


def detect_memory_collision(chain: object, membrane_active: bool = True) -> list[str]:
    """Find LangChain conversation memory in ``chain``; raise if Membrane is also managing it.

    Looks through the whole runnable graph for ``RunnableWithMessageHistory`` wrappers and
    legacy (``langchain-classic``) chains with a ``.memory``. Returns where each was found;
    with ``membrane_active`` (the default) any finding raises
    :class:`~membrane.errors.MemoryCollisionError`.
    """
    found: list[str] = []
    for path, node in _walk(chain):
        if isinstance(node, RunnableWithMessageHistory):
            found.append(f"{path}: RunnableWithMessageHistory")
        elif _legacy_memory(node) is not None:
            found.append(f"{path}: {type(node).__name__}.memory={type(node.memory).__name__}")  # type: ignore[attr-defined]
    if found and membrane_active:
        raise MemoryCollisionError(
            "LangChain memory is active next to Membrane, so history would be sent twice and "
            f"outside the budget ({'; '.join(found)}). Pass the history to the Membrane prompt "
            "instead: call disable_langchain_memory(chain) or build the chain without "
            "RunnableWithMessageHistory / memory=...",
            framework="langchain",
            locations=tuple(found),
        )
    return found


def disable_langchain_memory(chain: Runnable[Any, Any]) -> Runnable[Any, Any]:
    """``chain`` without LangChain's conversation memory.

    A ``RunnableWithMessageHistory`` is replaced by the runnable it wraps (also inside a
    ``RunnableSequence``); a legacy chain's ``.memory`` is set to ``None`` in place. Give the
    history to :class:`MembranePromptTemplate` instead.
    """
    if isinstance(chain, RunnableWithMessageHistory):
        inner = list(_unwrapped(chain))
        if len(inner) != 1:
            raise MemoryCollisionError(
                "cannot find the runnable inside this RunnableWithMessageHistory; rebuild the "
                "chain without the wrapper and pass history to MembranePromptTemplate",
                framework="langchain",
                locations=("chain",),
            )
        return disable_langchain_memory(inner[0])
    steps = getattr(chain, "steps", None)
    if isinstance(steps, list) and type(chain).__name__ == "RunnableSequence" and len(steps) > 1:
        from langchain_core.runnables import RunnableSequence

        new_steps = [disable_langchain_memory(step) for step in steps]
        if any(a is not b for a, b in zip(new_steps, steps, strict=True)):
            return RunnableSequence(*new_steps)
    for _path, node in _walk(chain):
        if _legacy_memory(node) is not None:
            node.memory = None  # type: ignore[attr-defined]
    return chain
