"""The compiled view of a LangChain conversation: what the model is sent, never what is stored.

The conversation goes to Membrane in OpenAI shape and is compiled with ``continue_turn=True``.
The messages handed back are the caller's own objects wherever Membrane kept a message as it
was given; only the system message, the final user message and a message Membrane changed (a
tool result replaced by a stub, a block given a cache marker) are new objects.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage, SystemMessage
from langchain_core.utils.function_calling import convert_to_openai_tool

from membrane.adapters._common import json_ref_map
from membrane.adapters.langchain._marks import MarkPlan, apply_marks, plan_marks
from membrane.adapters.langchain._messages import from_langchain_messages, to_langchain_messages
from membrane.compiler import CompileResult, ContextCompiler
from membrane.messages import turn_start

__all__ = [
    "CompiledView",
    "ViewInputs",
    "acompile_messages",
    "acompile_view",
    "compile_messages",
    "compile_view",
    "prepare",
    "view_of",
]


@dataclass(frozen=True)
class CompiledView:
    """The messages to send (system message apart) and the compile that made them.

    ``summary`` is the compact record the middleware puts under
    ``response_metadata["membrane"]``: the ref map (string keys), ``budget_exceeded``, the
    conversation id, the number of cache markers placed, and the compile's ``metadata``.
    """

    system: SystemMessage | None
    messages: list[BaseMessage]
    result: CompileResult
    marks: MarkPlan = field(default_factory=MarkPlan)
    conversation_id: str | None = None

    @property
    def all_messages(self) -> list[BaseMessage]:
        """The system message (when there is one) followed by the other messages."""
        return [self.system, *self.messages] if self.system is not None else list(self.messages)

    @property
    def summary(self) -> dict[str, Any]:
        result = self.result
        return {
            "ref_map": json_ref_map(result.ref_map),
            "budget_exceeded": bool(result.report.budget_exceeded),
            "conversation_id": self.conversation_id,
            "cache_markers": self.marks.placed + self.marks.tools,
            "metadata": dict(result.metadata),
        }


@dataclass(frozen=True)
class ViewInputs:
    """One compile's inputs, read from LangChain objects (see :func:`prepare`)."""

    chat: list[BaseMessage]
    history: list[dict[str, Any]]
    kwargs: dict[str, Any]
    anthropic_model: str | None


def tool_definitions(tools: Sequence[object]) -> list[dict[str, Any]]:
    """OpenAI function definitions for LangChain tools (a dict LangChain cannot read goes as is)."""
    out: list[dict[str, Any]] = []
    for tool in tools:
        try:
            out.append(convert_to_openai_tool(tool))  # type: ignore[arg-type]
        except (ValueError, TypeError):
            if not isinstance(tool, Mapping):
                raise
            out.append(dict(tool))
    return out


def _persona(compiler: ContextCompiler, system: Sequence[BaseMessage]) -> str | None:
    # A compiler built with its own rules (core_content) keeps them: the agent's prompt is
    # then not sent at all, so the rules are never given twice in two wordings.
    if compiler.settings.core_content:
        return None
    text = "\n\n".join(m.text for m in system if m.text)
    return text or None


def prepare(
    compiler: ContextCompiler,
    messages: Sequence[BaseMessage],
    *,
    system: Sequence[BaseMessage] = (),
    tools: Sequence[object] | None = None,
    conversation_id: str | None = None,
    memories: Sequence[object] | None = None,
    anthropic_model: str | None = None,
) -> ViewInputs:
    """The compile arguments for ``messages``, with ``system`` as the agent's own prompt."""
    chat = list(messages)
    history = from_langchain_messages(chat)
    kwargs: dict[str, Any] = {
        "memories": list(memories or ()),
        "conversation_messages": history,
        "continue_turn": True,
        "agent_persona_prompt": _persona(compiler, system),
        "tools": tool_definitions(tools) if tools else None,
        "conversation_id": conversation_id,
    }
    return ViewInputs(chat, history, kwargs, anthropic_model)


def _origins(
    history: Sequence[Mapping[str, Any]], compiled: Sequence[Mapping[str, Any]]
) -> dict[int, int] | None:
    """For each compiled message that came from the history, the history index it came from.

    The compiled list is ``[system, *kept history, final user message, *this turn's steps]``:
    the kept history ends just before the turn's question and the steps follow it one for
    one. None when the compile does not have that shape.
    """
    found = turn_start(history)
    question = -1 if found is None else found
    steps = len(history) - question - 1
    final = len(compiled) - 1 - steps
    lead = 1 if compiled and compiled[0].get("role") == "system" else 0
    kept = final - lead
    if question < 0 or kept < 0 or kept > question or compiled[final].get("role") != "user":
        return None
    origins = {lead + k: question - kept + k for k in range(kept)}
    origins.update({final + 1 + s: question + 1 + s for s in range(steps)})
    return origins


def _rebuilt(
    chat: Sequence[BaseMessage],
    history: Sequence[Mapping[str, Any]],
    compiled: Sequence[Mapping[str, Any]],
) -> list[BaseMessage]:
    """The compiled messages (system left out) as LangChain messages, reusing the caller's."""
    origins = _origins(history, compiled)
    lead = 1 if compiled and compiled[0].get("role") == "system" else 0
    if origins is None:
        return to_langchain_messages(compiled[lead:])
    question = chat[turn_start(history) or 0]
    out: list[BaseMessage] = []
    for i in range(lead, len(compiled)):
        j = origins.get(i)
        if j is None:
            out.append(_with_content(question, compiled[i].get("content")))
        elif dict(compiled[i]) == history[j]:
            out.append(chat[j])
        else:
            out.append(_with_content(chat[j], compiled[i].get("content")))
    return out


def _with_content(original: BaseMessage, content: object) -> BaseMessage:
    """The caller's message with Membrane's content: ids, names and tool-call ids stay."""
    return original.model_copy(update={"content": "" if content is None else content})


def view_of(inputs: ViewInputs, result: CompileResult) -> CompiledView:
    """The LangChain messages of a compile (cache markers placed for an Anthropic model)."""
    compiled = list(result.messages)
    messages = _rebuilt(inputs.chat, inputs.history, compiled)
    has_system = bool(compiled) and compiled[0].get("role") == "system"
    system = SystemMessage(content=compiled[0].get("content") or "") if has_system else None
    plan = MarkPlan()
    if inputs.anthropic_model is not None:
        wanted = plan_marks(result, inputs.anthropic_model)
        system, messages, plan = apply_marks(wanted, system, messages, has_system)
    cid = inputs.kwargs.get("conversation_id")
    return CompiledView(system, messages, result, plan, cid)


def _split_system(messages: Sequence[BaseMessage]) -> tuple[list[BaseMessage], list[BaseMessage]]:
    lead = 0
    while lead < len(messages) and isinstance(messages[lead], SystemMessage):
        lead += 1
    return list(messages[:lead]), list(messages[lead:])


def compile_view(
    compiler: ContextCompiler,
    messages: Sequence[BaseMessage],
    *,
    tools: Sequence[object] | None = None,
    conversation_id: str | None = None,
    memories: Sequence[object] | None = None,
    anthropic_model: str | None = None,
) -> CompiledView:
    """:func:`compile_messages` with the compile result and the system message kept apart.

    ``anthropic_model`` (a Claude model name) places Anthropic cache markers as
    :func:`membrane.anthropic_request` would.
    """
    system, chat = _split_system(messages)
    inputs = prepare(
        compiler,
        chat,
        system=system,
        tools=tools,
        conversation_id=conversation_id,
        memories=memories,
        anthropic_model=anthropic_model,
    )
    return view_of(inputs, compiler.compile(**inputs.kwargs))


async def acompile_view(
    compiler: ContextCompiler,
    messages: Sequence[BaseMessage],
    *,
    tools: Sequence[object] | None = None,
    conversation_id: str | None = None,
    memories: Sequence[object] | None = None,
    anthropic_model: str | None = None,
) -> CompiledView:
    """:func:`compile_view` through ``compile_async`` (off the event loop when it is heavy)."""
    system, chat = _split_system(messages)
    inputs = prepare(
        compiler,
        chat,
        system=system,
        tools=tools,
        conversation_id=conversation_id,
        memories=memories,
        anthropic_model=anthropic_model,
    )
    return view_of(inputs, await compiler.compile_async(**inputs.kwargs))


def compile_messages(
    compiler: ContextCompiler,
    messages: Sequence[BaseMessage],
    *,
    tools: Sequence[object] | None = None,
    conversation_id: str | None = None,
    memories: Sequence[object] | None = None,
) -> list[BaseMessage]:
    """The messages to send the model for a conversation, compiled under the budget.

    For a LangGraph node or any loop of your own: keep every message in the graph's state and
    send only this view. A leading ``SystemMessage`` is the agent's own prompt (left out when
    the compiler has ``core_content``); the last ``HumanMessage`` is this turn's question and
    what follows it are the turn's tool steps; ``tools`` (LangChain tools or dicts) are counted
    in the budget. Use :func:`compile_view` for the ref map and metadata.
    """
    view = compile_view(
        compiler, messages, tools=tools, conversation_id=conversation_id, memories=memories
    )
    return view.all_messages


async def acompile_messages(
    compiler: ContextCompiler,
    messages: Sequence[BaseMessage],
    *,
    tools: Sequence[object] | None = None,
    conversation_id: str | None = None,
    memories: Sequence[object] | None = None,
) -> list[BaseMessage]:
    """:func:`compile_messages` for async code."""
    view = await acompile_view(
        compiler, messages, tools=tools, conversation_id=conversation_id, memories=memories
    )
    return view.all_messages
