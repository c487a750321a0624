"""The 12-turn agent of ``benchmarks._agent_scenario`` run inside PydanticAI.

    PYTHONPATH=src:. python -m benchmarks.runtimes.pydantic_ai

The model is PydanticAI's own ``FunctionModel``, scripted: on each turn it calls ``lookup`` once,
then answers citing ``[Mem:2]``. Each run is one turn; the next run gets
``message_history=result.all_messages()``. Every request the model receives is converted to
OpenAI chat shape by PydanticAI's own ``OpenAIChatModel`` mapping (what an OpenAI model would
be sent) and judged by ``check_request``. Two strategies share everything but context
management:

- ``membrane``: ``Agent(model, instructions=RULES, capabilities=[MembraneCapability(
  ContextCompiler(3000), memories=MEMORIES)])``; the prompt is the question.
- ``sliding_window``: PydanticAI's documented trimming, ``ProcessHistory(keep_recent)`` with
  ``keep_recent`` returning the last ``WINDOW_MESSAGES`` messages (the docs' example keeps 10).
  A turn is four messages (question, call, ~1,050-token result, answer), so a window of 7 never
  holds three results, which would not fit 3,000 tokens; two results, their turns, the rules and
  the tool come to about 2,450. ``ProcessHistory`` also makes the window the run's history, so
  the windows that follow are cut from it. Swept on this scenario: 4, 6 and 8 messages give 20
  to 22 requests opening with an assistant turn, 5, 7 and 9 give 10 or 11, and 10 goes over
  budget on 10 requests; 7 is the smallest of the best. The memories go in the prompt, above
  the question, as a retrieval pipeline without Membrane would send them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.tools import Tool

from benchmarks._agent_scenario import (
    BUDGET,
    MEMORIES,
    RULES,
    TOOL,
    TURNS,
    Turn,
    check_request,
    prefix_cache_reads,
    scripted_answer,
    tool_result,
)
from membrane import ContextCompiler, MemoryItem
from membrane.adapters.pydantic_ai import MembraneCapability

__all__ = [
    "STRATEGIES",
    "WINDOW_MESSAGES",
    "ScriptedModel",
    "SeenRequest",
    "keep_recent",
    "lookup_tool",
    "membrane_agent",
    "memory_items",
    "run",
    "window_agent",
    "window_prompt",
]

STRATEGIES = ("membrane", "sliding_window")
WINDOW_MESSAGES = 7


def memory_items() -> list[MemoryItem]:
    return [MemoryItem(id=ref, content=text) for ref, text in MEMORIES]


def _report_for(project: str) -> str:
    turn = next(t for t in TURNS if t.project == project)
    return tool_result(turn)


def lookup_tool() -> Tool[Any]:
    """The scenario's ``lookup`` tool with exactly the scenario's schema."""
    return Tool.from_schema(
        _report_for,
        name=TOOL["name"],
        description=TOOL["description"],
        json_schema=TOOL["parameters"],
    )


@dataclass
class SeenRequest:
    """One request the model received, in OpenAI chat shape, and the raw messages."""

    turn: Turn
    call: int
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    raw: list[ModelMessage]
    instructions: str | None


def _user_texts(chat: Sequence[dict[str, Any]]) -> list[str]:
    out = []
    for message in chat:
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                out.append(content)
            else:
                out.append(
                    " ".join(p.get("text", "") for p in content or () if isinstance(p, dict))
                )
    return out


def _turn_of(chat: Sequence[dict[str, Any]]) -> Turn:
    """The turn a request belongs to: the latest question in its last user message."""
    last = _user_texts(chat)[-1]
    return max((t for t in TURNS if t.question in last), key=lambda t: t.index)


def _answered(messages: Sequence[ModelMessage], turn: Turn) -> bool:
    last = messages[-1]
    return isinstance(last, ModelRequest) and any(
        isinstance(p, ToolReturnPart) and p.tool_call_id == turn.call_id for p in last.parts
    )


@dataclass
class ScriptedModel:
    """A ``FunctionModel`` that plays the scenario and records every request it receives."""

    seen: list[SeenRequest] = field(default_factory=list, repr=False)
    _openai: OpenAIChatModel | None = field(default=None, repr=False)

    async def _record(self, messages: list[ModelMessage], info: AgentInfo) -> Turn:
        if self._openai is None:
            # Only its message mapping is used; it never sends a request.
            self._openai = OpenAIChatModel("gpt-4o", provider=OpenAIProvider(api_key="unused"))
        chat = await self._openai._map_messages(messages, info.model_request_parameters)
        chat = [dict(m) for m in chat]
        turn = _turn_of(chat)
        tools = [
            {
                "name": t.name,
                "description": t.description or "",
                "parameters": t.parameters_json_schema,
            }
            for t in info.function_tools
        ]
        call = 2 if _answered(messages, turn) else 1
        self.seen.append(SeenRequest(turn, call, chat, tools, list(messages), info.instructions))
        return turn

    async def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turn = await self._record(messages, info)
        if _answered(messages, turn):
            return ModelResponse(parts=[TextPart(scripted_answer(turn))])
        call = ToolCallPart(TOOL["name"], {"project": turn.project}, tool_call_id=turn.call_id)
        return ModelResponse(parts=[call])

    async def stream(
        self, messages: list[ModelMessage], info: AgentInfo
    ) -> AsyncIterator[str | DeltaToolCalls]:
        turn = await self._record(messages, info)
        if _answered(messages, turn):
            answer = scripted_answer(turn)
            middle = len(answer) // 2
            yield answer[:middle]
            yield answer[middle:]
            return
        args = f'{{"project": "{turn.project}"}}'
        yield {0: DeltaToolCall(TOOL["name"], args[:5], tool_call_id=turn.call_id)}
        yield {0: DeltaToolCall(None, args[5:])}

    def model(self) -> FunctionModel:
        return FunctionModel(self.respond, stream_function=self.stream, model_name="scripted")


def membrane_agent(
    model: FunctionModel, compiler: ContextCompiler | None = None
) -> tuple[Agent[None, str], MembraneCapability]:
    """The scenario's agent with Membrane (the integration a user writes)."""
    membrane = MembraneCapability(compiler or ContextCompiler(BUDGET), memories=memory_items())
    agent = Agent(model, instructions=RULES, tools=[lookup_tool()], capabilities=[membrane])
    return agent, membrane


async def keep_recent(messages: list[ModelMessage]) -> list[ModelMessage]:
    """PydanticAI's documented sliding window, at ``WINDOW_MESSAGES`` messages."""
    return messages[-WINDOW_MESSAGES:] if len(messages) > WINDOW_MESSAGES else messages


def window_agent(model: FunctionModel) -> Agent[None, str]:
    return Agent(
        model, instructions=RULES, tools=[lookup_tool()], capabilities=[ProcessHistory(keep_recent)]
    )


def window_prompt(turn: Turn) -> str:
    lines = [f"[Mem:{n}] {text}" for n, (_, text) in enumerate(MEMORIES, start=1)]
    return "Memories:\n" + "\n".join(lines) + "\n\n" + turn.question


def _rows(seen: Sequence[SeenRequest]) -> list[dict[str, Any]]:
    reads = prefix_cache_reads([r.messages for r in seen])
    rows = []
    for request, read in zip(seen, reads, strict=True):
        check = check_request(request.messages, request.tools, request.turn)
        rows.append(
            {
                "turn": request.turn.index,
                "call": request.call,
                "tokens": check.tokens,
                "over_budget": check.over_budget,
                "problems": list(check.problems),
                "cache_read_tokens": read,
                "input_tokens": check.tokens,
            }
        )
    return rows


def run(strategy: str) -> list[dict[str, Any]]:
    """Play the 12 turns with ``strategy``; one row per model request (see the module)."""
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    scripted = ScriptedModel()
    if strategy == "membrane":
        agent, _ = membrane_agent(scripted.model())
    else:
        agent = window_agent(scripted.model())
    history: list[ModelMessage] = []
    for turn in TURNS:
        prompt = turn.question if strategy == "membrane" else window_prompt(turn)
        history = agent.run_sync(prompt, message_history=history).all_messages()
    return _rows(scripted.seen)


def main() -> None:
    for strategy in STRATEGIES:
        rows = run(strategy)
        over = sum(r["over_budget"] for r in rows)
        problems = sum(bool(r["problems"]) for r in rows)
        tokens = sum(r["input_tokens"] for r in rows)
        reads = sum(r["cache_read_tokens"] for r in rows)
        print(
            f"{strategy:15} requests={len(rows)} over_budget={over} with_problems={problems} "
            f"input={tokens} cache_read={reads} ({reads / tokens:.0%})"
        )


if __name__ == "__main__":
    main()
