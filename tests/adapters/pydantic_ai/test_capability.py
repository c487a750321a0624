"""MembraneCapability inside real PydanticAI agents, driven by PydanticAI's own FunctionModel.

The 12-turn agent of ``benchmarks._agent_scenario`` (a ~1,050-token tool result per turn, a
3,000-token budget) runs through ``run_sync``, ``run``, ``run_stream`` and ``iter``. Every request
the model receives is mapped to OpenAI chat shape by PydanticAI's own ``OpenAIChatModel`` and
judged by the scenario's independent ``check_request``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

pytest.importorskip(
    "pydantic_ai", reason="pydantic-ai is not installed: pip install -e '.[pydantic-ai]'"
)

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import RunContext

from benchmarks._agent_scenario import (
    MEMORIES,
    RULES,
    TURNS,
    check_request,
    scripted_answer,
    tool_result,
)
from benchmarks.runtimes.pydantic_ai import ScriptedModel, lookup_tool, membrane_agent
from membrane import ContextCompiler, MemoryItem
from membrane.adapters.pydantic_ai import MembraneCapability
from membrane.state import InMemoryStateStore

Play = Callable[[Agent[None, str], str, list[ModelMessage]], Awaitable[tuple[str, Any]]]


async def _run(
    agent: Agent[None, str], prompt: str, history: list[ModelMessage]
) -> tuple[str, Any]:
    result = await agent.run(prompt, message_history=history)
    return result.output, result


async def _run_stream(
    agent: Agent[None, str], prompt: str, history: list[ModelMessage]
) -> tuple[str, Any]:
    async with agent.run_stream(prompt, message_history=history) as stream:
        chunks = [chunk async for chunk in stream.stream_text(delta=True)]
        output = await stream.get_output()
    assert "".join(chunks) == output
    return output, stream


async def _iter(
    agent: Agent[None, str], prompt: str, history: list[ModelMessage]
) -> tuple[str, Any]:
    async with agent.iter(prompt, message_history=history) as run:
        nodes = [node async for node in run]
    assert run.result is not None
    assert sum(Agent.is_model_request_node(n) for n in nodes) == 2
    return run.result.output, run.result


async def _twelve_turns(play: Play) -> tuple[ScriptedModel, MembraneCapability, list[Any]]:
    scripted = ScriptedModel()
    agent, membrane = membrane_agent(scripted.model())
    history: list[ModelMessage] = []
    results = []
    for turn in TURNS:
        output, result = await play(agent, turn.question, history)
        assert output == scripted_answer(turn)
        history = result.all_messages()
        results.append(result)
    return scripted, membrane, results


def _assert_history_complete(history: list[ModelMessage]) -> None:
    """The run kept every message as PydanticAI made it: no Membrane text, nothing cut."""
    assert len(history) == 4 * len(TURNS)
    for turn, i in zip(TURNS, range(0, len(history), 4), strict=True):
        question, call, result, answer = history[i : i + 4]
        assert isinstance(question, ModelRequest) and question.instructions == RULES
        assert question.parts == [
            UserPromptPart(turn.question, timestamp=question.parts[0].timestamp)
        ]
        assert isinstance(call, ModelResponse) and call.parts[0].tool_call_id == turn.call_id
        assert isinstance(result, ModelRequest)
        assert result.parts[0].content == tool_result(turn)
        assert isinstance(answer, ModelResponse) and answer.parts == [
            TextPart(scripted_answer(turn))
        ]


@pytest.mark.parametrize("play", [_run, _run_stream, _iter], ids=["run", "run_stream", "iter"])
def test_twelve_turns_fit_and_keep_the_history(play: Play) -> None:
    scripted, membrane, results = asyncio.run(_twelve_turns(play))
    assert len(scripted.seen) == 2 * len(TURNS)
    for request in scripted.seen:
        check = check_request(request.messages, request.tools, request.turn)
        assert check.ok, (request.turn.index, request.call, check)
    _assert_history_complete(results[-1].all_messages())
    for result in results:
        record = membrane.record(result)
        assert len(record.compiles) == 2
        assert record.ref_map[2] == "team-2"  # the answer's [Mem:2]
        assert not any(c.report.budget_exceeded for c in record.compiles)


def test_twelve_turns_with_run_sync() -> None:
    scripted = ScriptedModel()
    agent, membrane = membrane_agent(scripted.model())
    history: list[ModelMessage] = []
    for turn in TURNS:
        result = agent.run_sync(turn.question, message_history=history)
        history = result.all_messages()
        assert membrane.record(result).ref_map[2] == "team-2"
    assert [check_request(r.messages, r.tools, r.turn).problems for r in scripted.seen] == [
        [] for _ in scripted.seen
    ]
    assert max(check_request(r.messages, r.tools, r.turn).tokens for r in scripted.seen) <= 3_000
    _assert_history_complete(history)
    # Mid-turn calls send the turn's steps after the question, as the run stored them.
    second = scripted.seen[-1].raw
    assert second[-2] is history[-3] and second[-1] is history[-2]


def _window(messages: list[ModelMessage]) -> list[dict[str, Any]]:
    return [m for m in messages if m.get("role") != "system"]


def _three_turns(capabilities: list[MembraneCapability]) -> ScriptedModel:
    scripted = ScriptedModel()
    agent = Agent(
        scripted.model(), instructions=RULES, tools=[lookup_tool()], capabilities=capabilities
    )
    history: list[ModelMessage] = []
    for turn in TURNS[:3]:
        history = agent.run_sync(turn.question, message_history=history).all_messages()
    return scripted


@pytest.mark.parametrize("interrupt", [False, True])
def test_with_nothing_cut_the_model_gets_what_pydantic_ai_would_send(interrupt: bool) -> None:
    """What differs, in OpenAI chat shape: the question message opens with Membrane's
    current-message header, and (unless turned off) the system message adds Membrane's
    interrupt instruction after the rules. Every other message, and the tools, are equal."""
    plain = _three_turns([])
    compiler = ContextCompiler(100_000, include_interrupt_instruction=interrupt)
    compiled = _three_turns([MembraneCapability(compiler)])
    assert len(compiled.seen) == len(plain.seen) == 6
    for sent, expected in zip(compiled.seen, plain.seen, strict=True):
        assert sent.tools == expected.tools
        assert expected.messages[0] == {"role": "system", "content": RULES}
        system = sent.messages[0]["content"]
        if interrupt:
            assert system.startswith(RULES + "\n\n") and "SYSTEM_INTERRUPT_FETCH" in system
        else:
            assert system == RULES
        question = next(
            i for i, m in enumerate(expected.messages) if m.get("content") == sent.turn.question
        )
        final = sent.messages[question]["content"]
        assert final == "--- Current user message ---\n" + sent.turn.question
        rest = [m for i, m in enumerate(sent.messages) if i not in (0, question)]
        assert rest == [m for i, m in enumerate(expected.messages) if i not in (0, question)]


def test_the_model_receives_the_runs_own_message_objects() -> None:
    scripted = ScriptedModel()
    agent, _ = membrane_agent(scripted.model(), ContextCompiler(100_000))
    first = agent.run_sync(TURNS[0].question)
    second = agent.run_sync(TURNS[1].question, message_history=first.all_messages())
    stored = second.all_messages()
    sent = scripted.seen[-1].raw  # the second turn's mid-turn call
    question = next(
        i for i, m in enumerate(sent) if isinstance(m, ModelRequest) and "Current user" in str(m)
    )
    assert question == 4
    for i, message in enumerate(sent):
        if i != question:
            assert message is stored[i]
    assert sent[question].parts[0].timestamp == stored[question].parts[0].timestamp
    assert stored[question].parts[0].content == TURNS[1].question


def test_a_system_prompt_agent_gets_membranes_system_prompt_instead() -> None:
    scripted = ScriptedModel()
    membrane = MembraneCapability(ContextCompiler(3_000))
    agent = Agent(
        scripted.model(), system_prompt=RULES, tools=[lookup_tool()], capabilities=[membrane]
    )
    result = agent.run_sync(TURNS[0].question)
    for request in scripted.seen:
        assert request.instructions is None
        first = request.raw[0]
        assert isinstance(first, ModelRequest)
        assert first.parts[0].content.startswith(RULES + "\n\n")
        assert check_request(request.messages, request.tools, request.turn, memories=()).ok
    assert result.all_messages()[0].parts[0].content == RULES  # the stored prompt is untouched


def test_thinking_stays_with_its_call_and_keeps_its_signature() -> None:
    thinking = ThinkingPart("Look it up first.", signature="sig-9", provider_name="anthropic")
    seen: list[list[ModelMessage]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(messages)
        if isinstance(messages[-1].parts[-1], ToolReturnPart):
            return ModelResponse(parts=[TextPart("Done.")])
        call = ToolCallPart("lookup", {"project": "atlas"}, tool_call_id="call_1")
        return ModelResponse(parts=[thinking, call], model_name="claude")

    membrane = MembraneCapability(ContextCompiler(3_000))
    agent = Agent(
        FunctionModel(model), instructions=RULES, tools=[lookup_tool()], capabilities=[membrane]
    )
    agent.run_sync(TURNS[0].question)
    response = seen[1][1]
    assert isinstance(response, ModelResponse)
    assert response.parts[0] is thinking and response.parts[0].signature == "sig-9"


def test_memories_come_from_a_callable_once_per_run() -> None:
    calls: list[RunContext[str]] = []

    async def retrieve(ctx: RunContext[str]) -> list[MemoryItem]:
        calls.append(ctx)
        return [MemoryItem(id=ref, content=f"{text} (for {ctx.deps})") for ref, text in MEMORIES]

    scripted = ScriptedModel()
    membrane = MembraneCapability(ContextCompiler(3_000), memories=retrieve)
    agent = Agent(
        scripted.model(),
        deps_type=str,
        instructions=RULES,
        tools=[lookup_tool()],
        capabilities=[membrane],
    )
    result = agent.run_sync(TURNS[0].question, deps="ana")
    assert len(calls) == 1 and calls[0].prompt == TURNS[0].question
    record = membrane.record(result.run_id)
    assert [str(getattr(m, "id", "")) for m in record.memories] == ["pref-7", "team-2"]
    for request in scripted.seen:
        final = next(m for m in request.messages if TURNS[0].question in str(m.get("content")))
        assert "(for ana)" in final["content"]
    assert record.ref_map == {1: "pref-7", 2: "team-2"}


def test_a_sync_memory_callable_works_too() -> None:
    scripted = ScriptedModel()
    membrane = MembraneCapability(
        ContextCompiler(3_000), memories=lambda ctx: [MemoryItem(id="team-2", content="Ana.")]
    )
    agent = Agent(
        scripted.model(), instructions=RULES, tools=[lookup_tool()], capabilities=[membrane]
    )
    result = agent.run_sync(TURNS[0].question)
    assert membrane.record(result).ref_map == {1: "team-2"}


class _KeyLog(InMemoryStateStore):
    """The in-process store, noting the keys compiles write."""

    def __init__(self) -> None:
        super().__init__()
        self.keys: list[str] = []

    def put(self, key: str, value: dict[str, Any]) -> None:
        self.keys.append(key)
        super().put(key, value)


def test_the_conversation_id_is_pydantic_ais_unless_given() -> None:
    store = _KeyLog()
    scripted = ScriptedModel()
    agent, _ = membrane_agent(scripted.model(), ContextCompiler(3_000, state_store=store))
    history: list[ModelMessage] = []
    for turn in TURNS[:3]:
        result = agent.run_sync(turn.question, message_history=history)
        history = result.all_messages()
    assert any(f"conversation:{{{result.conversation_id}}}" in key for key in store.keys)

    tenant = _KeyLog()
    membrane = MembraneCapability(
        ContextCompiler(3_000, state_store=tenant),
        conversation_id=lambda ctx: f"acme/{ctx.conversation_id}",
    )
    agent = Agent(
        scripted.model(), instructions=RULES, tools=[lookup_tool()], capabilities=[membrane]
    )
    history = []
    for turn in TURNS[:3]:
        result = agent.run_sync(turn.question, message_history=history)
        history = result.all_messages()
    assert any(f"acme/{result.conversation_id}" in key for key in tenant.keys)


def test_over_budget_the_request_is_sent_and_flagged() -> None:
    """Membrane never cuts the rules or the question: when they alone exceed the budget, the
    request goes to the model as compiled and the record says so."""
    scripted = ScriptedModel()
    membrane = MembraneCapability(ContextCompiler(150), memories=[MemoryItem(id="m", content="x")])
    agent = Agent(
        scripted.model(), instructions=RULES * 5, tools=[lookup_tool()], capabilities=[membrane]
    )
    result = agent.run_sync(TURNS[0].question)
    compiles = membrane.record(result).compiles
    assert compiles and all(c.report.budget_exceeded for c in compiles)
    assert all(c.metadata["budget_exceeded"] for c in compiles)
    assert scripted.seen[0].instructions.startswith(RULES * 5)
    assert result.output == scripted_answer(TURNS[0])


def test_records_are_per_run_and_unknown_runs_raise() -> None:
    scripted = ScriptedModel()
    agent, membrane = membrane_agent(scripted.model())
    first = agent.run_sync(TURNS[0].question)
    second = agent.run_sync(TURNS[1].question, message_history=first.all_messages())
    assert membrane.record(first) is not membrane.record(second)
    assert membrane.record(first).last is membrane.record(first).compiles[-1]
    with pytest.raises(KeyError):
        membrane.record("no-such-run")


def test_a_run_level_membrane_replaces_the_agents() -> None:
    scripted = ScriptedModel()
    agent, membrane = membrane_agent(scripted.model())
    other = MembraneCapability(ContextCompiler(2_500))
    result = agent.run_sync(TURNS[0].question, capabilities=[other])
    assert len(other.record(result).compiles) == 2
    with pytest.raises(KeyError):
        membrane.record(result)
    assert all(c.metadata["tokens_budget"] == 2_500 for c in other.record(result).compiles)
