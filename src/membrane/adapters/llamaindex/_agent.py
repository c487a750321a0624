"""A LlamaIndex ``FunctionAgent`` whose every LLM request Membrane compiles under a budget.

``FunctionAgent.take_step`` sends ``[system prompt, *memory.aget(), *scratchpad]``: the
scratchpad holds this run's tool calls and results, which reach the memory only when the run
ends, so no memory class can keep them within a budget. :class:`MembraneFunctionAgent`
overrides ``take_step`` (the step hook every workflow agent implements) and builds the
request from the whole stored conversation (``memory.aget_all()``) and the scratchpad, compiled
with ``continue_turn=True``: the earlier turns cut in chunks behind an index, the memories in
this turn's question, this turn's steps counted inside the budget. The LLM call, the
scratchpad and the memory are then handled as ``FunctionAgent`` handles them; the memory keeps
every message as LlamaIndex wrote it.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.agent.workflow.agent_context import AgentContext
from llama_index.core.agent.workflow.workflow_events import AgentInput, AgentOutput
from llama_index.core.bridge.pydantic import BaseModel, Field
from llama_index.core.llms import ChatMessage, ChatResponse, MessageRole
from llama_index.core.memory import BaseMemory
from llama_index.core.tools import AsyncBaseTool
from llama_index.core.workflow import Event

from membrane.adapters.llamaindex._convert import from_llamaindex_messages, to_llamaindex_messages
from membrane.compiler import ContextCompiler
from membrane.report import CompileReport
from membrane.result import CompileResult

__all__ = ["MembraneCompiled", "MembraneFunctionAgent", "MemorySource"]

#: What ``memories=`` accepts: records, or a callable (sync or async) given the conversation.
MemorySource = (
    Sequence[object]
    | Callable[[list[ChatMessage]], Sequence[object] | Awaitable[Sequence[object]]]
    | None
)


class MembraneCompiled(Event):
    """What Membrane made of one LLM request: written to the event stream before the call.

    ``ref_map`` maps each ``[Mem:N]`` of that request to its record id; ``metadata`` is the
    compile's metadata (``report`` reads it as a typed :class:`~membrane.CompileReport`).
    """

    agent_name: str
    ref_map: dict[int, str] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)
    messages_sent: int = 0

    @property
    def budget_exceeded(self) -> bool:
        """True when even the rules, the question and this turn's steps did not fit."""
        return bool(self.metadata.get("budget_exceeded"))

    @property
    def report(self) -> CompileReport:
        return CompileReport.from_metadata(self.metadata)


class MembraneFunctionAgent(FunctionAgent):
    """``FunctionAgent`` with every request compiled by ``compiler`` (one shared compiler).

    ``memories`` are records for every request, or a callable given the conversation being
    compiled (earlier turns, this turn's question, its steps; LlamaIndex messages) that returns
    them, sync or async. ``conversation_id`` names the compiler's state for this agent; by
    default it is the memory's ``session_id``. The rest are ``FunctionAgent``'s fields.

    The answer's ``AgentOutput`` carries the last request's :class:`MembraneCompiled` as
    ``output.membrane`` (``output.get("membrane")``); every request's is in the event stream.
    When ``budget_exceeded`` is set the request is still sent as compiled: nothing else could
    be cut (the rules, the question and this turn's calls with stubbed results remain).
    """

    compiler: ContextCompiler = Field(exclude=True)
    memories: Any = Field(default=None, exclude=True)
    conversation_id: str | None = None

    async def take_step(
        self,
        ctx: AgentContext,
        llm_input: list[ChatMessage],
        tools: Sequence[AsyncBaseTool],
        memory: BaseMemory,
    ) -> AgentOutput:
        """Compile the request, call the LLM, keep its reply in the scratchpad."""
        if not self.llm.metadata.is_function_calling_model:
            raise ValueError("LLM must be a FunctionCallingLLM")
        scratchpad: list[ChatMessage] = await ctx.store.get(self.scratchpad_key, default=[])
        request, compiled = await self.compile_request(llm_input, scratchpad, tools, memory)
        ctx.write_event_to_stream(compiled)
        ctx.write_event_to_stream(AgentInput(input=request, current_agent_name=self.name))
        if self.streaming:
            response = await self._get_streaming_response(ctx, request, tools)
        else:
            response = await self._get_response(request, tools)
        tool_calls = self.llm.get_tool_calls_from_response(  # type: ignore[attr-defined]
            response, error_on_no_tool_call=False
        )
        scratchpad.append(response.message)
        await ctx.store.set(self.scratchpad_key, scratchpad)
        output = AgentOutput(
            response=response.message,
            tool_calls=tool_calls or [],
            raw=_raw(response),
            current_agent_name=self.name,
        )
        output["membrane"] = compiled  # an event's dynamic field: it travels to the answer
        return output

    async def compile_request(
        self,
        llm_input: Sequence[ChatMessage],
        scratchpad: Sequence[ChatMessage],
        tools: Sequence[AsyncBaseTool],
        memory: BaseMemory,
    ) -> tuple[list[ChatMessage], MembraneCompiled]:
        """The messages to send for one step, and the evidence of their compile.

        ``llm_input`` is what ``FunctionAgent`` prepared (its system prompt, the memory's
        view); its system messages become the persona and its last user message the question.
        """
        persona, question = _persona_and_question(llm_input)
        stored = await memory.aget_all()
        conversation = _conversation(stored, question, scratchpad)
        result: CompileResult = await self.compiler.compile_async(
            await self._memories_for(conversation),
            conversation_messages=from_llamaindex_messages(conversation),
            continue_turn=True,
            agent_persona_prompt=persona,
            tools=[t.metadata.to_openai_tool(skip_length_check=True) for t in tools],
            conversation_id=self.conversation_id or _session_of(memory),
        )
        compiled = MembraneCompiled(
            agent_name=self.name,
            ref_map=dict(result.ref_map),
            metadata=dict(result.metadata),
            messages_sent=len(result.messages),
        )
        return to_llamaindex_messages(result.messages), compiled

    async def _memories_for(self, conversation: list[ChatMessage]) -> Sequence[object]:
        source = self.memories
        if source is None:
            return ()
        if not callable(source):
            return list(source)
        found = source(list(conversation))
        if inspect.isawaitable(found):
            found = await found
        return list(found)


def _persona_and_question(
    llm_input: Sequence[ChatMessage],
) -> tuple[str | None, ChatMessage | None]:
    """The leading system messages' text, and the last message when a user wrote it."""
    texts = []
    for message in llm_input:
        if message.role not in (MessageRole.SYSTEM, MessageRole.DEVELOPER):
            break
        texts.append(message.content or "")
    question = llm_input[-1] if llm_input and llm_input[-1].role == MessageRole.USER else None
    persona = "\n\n".join(t for t in texts if t)
    return persona or None, question


def _conversation(
    stored: Sequence[ChatMessage],
    question: ChatMessage | None,
    scratchpad: Sequence[ChatMessage],
) -> list[ChatMessage]:
    """The whole stored conversation with this turn's question as the agent formatted it
    (LlamaIndex may add its state or memory blocks to it), then this run's steps.

    Leading system messages are left out: the agent's input already holds them.
    """
    body = list(stored)
    while body and body[0].role in (MessageRole.SYSTEM, MessageRole.DEVELOPER):
        body.pop(0)
    users = [i for i, m in enumerate(body) if m.role == MessageRole.USER]
    if question is not None and users:
        body[users[-1]] = question
    return [*body, *scratchpad]


def _session_of(memory: BaseMemory) -> str | None:
    session = getattr(memory, "session_id", None)
    return session if isinstance(session, str) and session else None


def _raw(response: ChatResponse) -> Any:
    raw = response.raw
    return raw.model_dump() if isinstance(raw, BaseModel) else raw
