"""The agent scenario inside LangChain's ``create_agent``: fake models, runs and the judge.

Two models play the scenario: ``ScriptedChat`` (LangChain's ``FakeMessagesListChatModel`` with
its tool calls scripted, recording the messages of every call) and ``ScriptedClaude`` (the real
``ChatAnthropic`` with a scripted client, recording every Anthropic payload it built).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    convert_to_openai_messages,
)
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from benchmarks._agent_scenario import BUDGET, RULES, TOOL, TURNS, check_request, scripted_answer
from benchmarks._agent_scenario import tool_result as report_of
from benchmarks.runtimes._claude import ScriptedClaude, for_judge, request_turn
from benchmarks.runtimes.langchain import lookup_tool, memory_items
from membrane import CompileResult, ContextCompiler
from membrane.adapters.langchain import MembraneMiddleware

__all__ = [
    "ASYNC_MODES",
    "SYNC_MODES",
    "RecordingCompiler",
    "ScriptedChat",
    "ScriptedClaude",
    "agent_with",
    "arun_turns",
    "assert_history_complete",
    "judge_chat_requests",
    "judge_claude_payloads",
    "new_compiler",
    "run_turns",
    "scripted_responses",
]

SYNC_MODES = ("invoke", "stream")
ASYNC_MODES = ("ainvoke", "astream")


def scripted_responses() -> list[BaseMessage]:
    """Each turn: a ``lookup`` call, then the answer citing ``[Mem:2]``."""
    out: list[BaseMessage] = []
    for turn in TURNS:
        call = {"name": "lookup", "args": {"project": turn.project}, "id": turn.call_id}
        out += [AIMessage(content="", tool_calls=[call]), AIMessage(content=scripted_answer(turn))]
    return out


class ScriptedChat(FakeMessagesListChatModel):
    """LangChain's fake list model, able to bind tools; ``requests`` holds every call's input."""

    requests: list[list[BaseMessage]] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChat:  # type: ignore[override]
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.requests.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


class RecordingCompiler(ContextCompiler):
    """A compiler that keeps every result it returned (``compile_async`` goes through it)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.results: list[CompileResult] = []

    def compile(self, *args: Any, **kwargs: Any) -> CompileResult:
        result = super().compile(*args, **kwargs)
        self.results.append(result)
        return result


def new_compiler(budget: int = BUDGET, **options: Any) -> RecordingCompiler:
    """The scenario's compiler, as a user writes it: ``ContextCompiler(3000)``."""
    return RecordingCompiler(budget, **options)


def agent_with(model: Any, middleware: Sequence[Any] | None = None, **kwargs: Any) -> Any:
    """``create_agent`` over ``model`` with the scenario's tool and rules, checkpointed."""
    if middleware is None:
        middleware = [MembraneMiddleware(new_compiler(), memories=memory_items())]
    return create_agent(
        model,
        [lookup_tool()],
        system_prompt=RULES,
        middleware=list(middleware),
        checkpointer=InMemorySaver(),
        **kwargs,
    )


def run_turns(
    agent: Any, mode: str, thread: str = "thread-1", turns: int = len(TURNS)
) -> list[Any]:
    """Play ``turns`` turns through ``agent`` (``invoke`` or ``stream``); the stored messages."""
    config = {"configurable": {"thread_id": thread}}
    for turn in TURNS[:turns]:
        message = {"messages": [{"role": "user", "content": turn.question}]}
        if mode == "invoke":
            agent.invoke(message, config)
        else:
            for _ in agent.stream(message, config, stream_mode=["updates", "messages"]):
                pass
    return list(agent.get_state(config).values["messages"])


async def arun_turns(
    agent: Any, mode: str, thread: str = "thread-1", turns: int = len(TURNS)
) -> list[Any]:
    """:func:`run_turns` for ``ainvoke`` and ``astream``."""
    config = {"configurable": {"thread_id": thread}}
    for turn in TURNS[:turns]:
        message = {"messages": [{"role": "user", "content": turn.question}]}
        if mode == "ainvoke":
            await agent.ainvoke(message, config)
        else:
            async for _ in agent.astream(message, config, stream_mode=["updates", "messages"]):
                pass
    state = await agent.aget_state(config)
    return list(state.values["messages"])


def judge_chat_requests(requests: Sequence[Sequence[BaseMessage]]) -> list[Any]:
    """``check_request`` on each request a ``ScriptedChat`` received (LangChain's conversion)."""
    checks = []
    for position, request in enumerate(requests):
        turn, _ = request_turn(position)
        checks.append(check_request(convert_to_openai_messages(list(request)), [TOOL], turn))
    return checks


def judge_claude_payloads(payloads: Sequence[dict[str, Any]]) -> list[Any]:
    """``check_request`` on each Anthropic payload ``ScriptedClaude`` built."""
    return [
        check_request(for_judge(payload), [TOOL], request_turn(position)[0])
        for position, payload in enumerate(payloads)
    ]


def assert_history_complete(stored: Sequence[BaseMessage], turns: int = len(TURNS)) -> None:
    """The thread keeps every message of every turn as it happened (nothing compiled)."""
    assert len(stored) == 4 * turns
    for turn, (question, call, result, answer) in zip(
        TURNS, (stored[i : i + 4] for i in range(0, len(stored), 4)), strict=False
    ):
        assert isinstance(question, HumanMessage) and question.content == turn.question
        assert isinstance(call, AIMessage) and call.tool_calls[0]["args"] == {
            "project": turn.project
        }
        assert isinstance(result, ToolMessage) and result.content == report_of(turn)
        assert result.tool_call_id == call.tool_calls[0]["id"]
        assert isinstance(answer, AIMessage) and answer.text == scripted_answer(turn)
