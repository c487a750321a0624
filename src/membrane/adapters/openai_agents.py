"""OpenAI Agents SDK adapter: Membrane as the run's ``call_model_input_filter``.

Needs the ``openai-agents`` extra.

>>> from agents import RunConfig
>>> from membrane import ContextCompiler
>>> from membrane.adapters.openai_agents import membrane_input_filter
>>> membrane_filter = membrane_input_filter(ContextCompiler(max_tokens=3000))
>>> config = RunConfig(call_model_input_filter=membrane_filter)

Before every model call the SDK hands the filter the items it is about to send (the session's
history, this run's input and this turn's steps, as Responses items) and the agent's
instructions. The filter compiles them with ``continue_turn=True``: the last user message is
the turn's question, the items after it are this turn's steps, the instructions are the
persona, the agent's tools are counted; it returns Membrane's system text as the
``instructions`` and the compiled items as the ``input``. Reasoning, hosted-tool and compaction
items go back exactly as they came. The session keeps every item: the filter changes only what
this one model call is sent.

What the last compile said (``ref_map``, ``metadata``, ``report``) is on
:attr:`MembraneInputFilter.last_result`, and is passed to ``on_compile`` as it happens (use that
one when runs share the filter concurrently).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeAlias

from agents import Agent, FunctionTool, Handoff, handoff
from agents.run_config import CallModelData, ModelInputData

from membrane.compiler import CompileResult, ContextCompiler
from membrane.errors import InvalidInputError
from membrane.providers import openai_responses_request

__all__ = [
    "MembraneInputFilter",
    "agent_tool_definitions",
    "chain_filters",
    "membrane_input_filter",
]

MemorySource: TypeAlias = (
    Sequence[object]
    | Callable[[CallModelData[Any]], Sequence[object] | Awaitable[Sequence[object]]]
    | None
)
"""Memory records, or a callable that gets the ``CallModelData`` and returns them (or an
awaitable of them)."""

ConversationSource: TypeAlias = str | Callable[[CallModelData[Any]], str | None] | None
InputFilter: TypeAlias = Callable[[CallModelData[Any]], ModelInputData | Awaitable[ModelInputData]]

# What a hosted tool is counted as: its kind named, no parameters (the server adds its prompt).
_NO_PARAMETERS: Mapping[str, Any] = {"type": "object", "properties": {}}


def _function(
    name: str, description: str | None, parameters: object, strict: bool
) -> dict[str, Any]:
    return {
        "type": "function",
        "name": name,
        "description": description or "",
        "parameters": parameters if isinstance(parameters, Mapping) else dict(_NO_PARAMETERS),
        "strict": strict,
    }


def _handoffs(agent: Agent[Any]) -> list[Handoff[Any, Any]]:
    found: list[Handoff[Any, Any]] = []
    for item in agent.handoffs:
        target = item if isinstance(item, Handoff) else handoff(item)
        if target.is_enabled is not False:
            found.append(target)
    return found


def agent_tool_definitions(agent: Agent[Any]) -> list[dict[str, Any]]:
    """The agent's tools and handoffs as Responses function definitions, to be counted.

    A function tool and a handoff are what the SDK sends for them. A hosted tool (web search,
    file search, computer, MCP server...) is counted as its name with no parameters: its real
    prompt is added on the provider's side. A tool whose ``is_enabled`` is ``False`` is left
    out; one decided by a callable is counted (counting one too many keeps the budget). MCP
    servers' tools are listed by the SDK only when it runs; they are not seen here.
    """
    definitions: list[dict[str, Any]] = []
    for tool in agent.tools:
        if isinstance(tool, FunctionTool):
            if tool.is_enabled is False:
                continue
            definitions.append(
                _function(
                    tool.name, tool.description, tool.params_json_schema, tool.strict_json_schema
                )
            )
        else:
            definitions.append(_function(tool.name, f"{tool.name} (hosted)", None, False))
    for target in _handoffs(agent):
        definitions.append(
            _function(
                target.tool_name,
                target.tool_description,
                target.input_json_schema,
                target.strict_json_schema,
            )
        )
    seen: set[str] = set()
    unique = []
    for definition in definitions:  # the SDK refuses a clash; counting one of them is enough
        if definition["name"] not in seen:
            seen.add(definition["name"])
            unique.append(definition)
    return unique


def _plain(item: object) -> object:
    """An input item as a dict: the SDK's items are dicts, a pydantic one is dumped."""
    dump = getattr(item, "model_dump", None)
    return dump(exclude_unset=True) if callable(dump) else item


def _instructions(system: Mapping[str, Any]) -> str:
    content = system.get("content")
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "".join(str(p.get("text", "")) for p in parts if isinstance(p, Mapping))


class MembraneInputFilter:
    """A ``call_model_input_filter`` that compiles each model call with one shared compiler.

    Build it with :func:`membrane_input_filter`. It is an async callable; the SDK awaits it in
    ``Runner.run``, ``Runner.run_sync`` and ``Runner.run_streamed`` alike.
    """

    def __init__(
        self,
        compiler: ContextCompiler,
        *,
        memories: MemorySource = None,
        conversation_id: ConversationSource = None,
        on_compile: Callable[[CompileResult, CallModelData[Any]], object] | None = None,
    ) -> None:
        if not isinstance(compiler, ContextCompiler):
            raise TypeError(
                f"compiler must be a membrane.ContextCompiler, got {type(compiler).__name__}"
            )
        if compiler.settings.memory_placement != "end":
            raise InvalidInputError(
                "membrane_input_filter needs a compiler with memory_placement='end' (the "
                "default): with 'system' the whole prompt is one system text, and the SDK would "
                "send an empty input",
                field="memory_placement",
            )
        self.compiler = compiler
        self.memories = memories
        self.conversation_id = conversation_id
        self.on_compile = on_compile
        #: The result of the most recent compile (None before the first model call).
        self.last_result: CompileResult | None = None

    async def _memories(self, data: CallModelData[Any]) -> Sequence[object]:
        source = self.memories
        if source is None:
            return ()
        if not callable(source):
            return source
        found = source(data)
        if inspect.isawaitable(found):
            found = await found
        return found

    def _conversation(self, data: CallModelData[Any]) -> str | None:
        source = self.conversation_id
        return source(data) if callable(source) else source

    async def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        """The compiled input for this model call (see the module).

        A history with no user message has no question to continue (the SDK's
        ``nest_handoff_history`` folds the transcript into one assistant message): the compile
        raises :class:`~membrane.InvalidInputError`, which stops the run.
        """
        result = await self.compiler.compile_async(
            await self._memories(data),
            conversation_messages=[_plain(item) for item in data.model_data.input],
            continue_turn=True,
            agent_persona_prompt=data.model_data.instructions,
            tools=agent_tool_definitions(data.agent),
            conversation_id=self._conversation(data),
        )
        self.last_result = result
        if self.on_compile is not None:
            self.on_compile(result, data)
        items = openai_responses_request(result, cache_breakpoints=False)["input"]
        if not items or items[0].get("role") != "system":  # no rules, persona or index
            return ModelInputData(input=items, instructions=None)
        return ModelInputData(input=items[1:], instructions=_instructions(items[0]) or None)


def membrane_input_filter(
    compiler: ContextCompiler,
    *,
    memories: MemorySource = None,
    conversation_id: ConversationSource = None,
    on_compile: Callable[[CompileResult, CallModelData[Any]], object] | None = None,
) -> MembraneInputFilter:
    """A filter for ``RunConfig(call_model_input_filter=...)`` that compiles every model call.

    ``memories``: records, or a callable (sync or async) that receives the ``CallModelData``
    and returns them. ``conversation_id``: a string, or a callable of the ``CallModelData``,
    naming the conversation whose cut and index the compiler keeps (one id per session; the
    default shares one state). ``on_compile(result, data)`` runs after each compile; raise
    from it to stop the run (for example when ``result.report.budget_exceeded`` is set, which
    otherwise sends the over-budget input, as compiled).
    """
    return MembraneInputFilter(
        compiler, memories=memories, conversation_id=conversation_id, on_compile=on_compile
    )


def chain_filters(
    *filters: InputFilter,
) -> Callable[[CallModelData[Any]], Awaitable[ModelInputData]]:
    """One ``call_model_input_filter`` running ``filters`` in order, each on the last's output.

    Sync filters (``ToolOutputTrimmer``) and async ones (Membrane's) mix. Put Membrane last,
    so that the budget is kept on what is really sent:
    ``chain_filters(ToolOutputTrimmer(), membrane_input_filter(compiler))``.
    """
    if not filters:
        raise ValueError("chain_filters needs at least one filter")

    async def chained(data: CallModelData[Any]) -> ModelInputData:
        current = data.model_data
        for step in filters:
            out = step(CallModelData(model_data=current, agent=data.agent, context=data.context))
            current = await out if inspect.isawaitable(out) else out
            if not isinstance(current, ModelInputData):
                raise TypeError(
                    f"{step!r} returned {type(current).__name__}; a call_model_input_filter "
                    "must return ModelInputData"
                )
        return current

    return chained
