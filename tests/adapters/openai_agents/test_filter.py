"""``membrane_input_filter`` inside the SDK: items in and out, tools, memories, limits."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, FunctionTool, RunConfig, Runner, SQLiteSession, WebSearchTool, handoff
from agents.models.openai_responses import Converter
from agents.run_config import CallModelData, ModelInputData
from agents.testing import ModelStep, ScriptedModel, assistant_message
from openai.types.responses import ResponseCompactionItem, ResponseFunctionWebSearch

from benchmarks._agent_scenario import RULES, TURNS
from benchmarks.runtimes.openai_agents import build_agent, lookup_tool, memory_records
from benchmarks.runtimes.openai_agents import scripted_model as scenario_model
from membrane import CompileResult, ContextCompiler, InvalidInputError, MemoryItem
from membrane.adapters.openai_agents import (
    agent_tool_definitions,
    chain_filters,
    membrane_input_filter,
)
from tests.adapters.openai_agents._sdk import own_loop

ROOT = Path(__file__).resolve().parents[3]


class Recorder:
    """A filter that keeps what it was given and passes it on untouched."""

    def __init__(self) -> None:
        self.seen: list[ModelInputData] = []

    def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        given = data.model_data
        self.seen.append(ModelInputData(input=list(given.input), instructions=given.instructions))
        return given


def _big_filter(**kwargs: Any) -> Any:
    compiler = ContextCompiler(max_tokens=60_000, model_id="openai/gpt-5.1")
    return membrane_input_filter(compiler, **kwargs)


def _run_scenario(turns: int, config: RunConfig, session: SQLiteSession) -> ScriptedModel:
    model = scenario_model(turns)
    agent = build_agent(model)

    async def conversation() -> None:
        for turn in TURNS[:turns]:
            await Runner.run(agent, turn.question, session=session, run_config=config)

    asyncio.run(conversation())
    model.assert_complete()
    return model


def test_items_go_back_as_given_when_nothing_is_cut() -> None:
    recorder = Recorder()
    membrane_filter = _big_filter(memories=memory_records())
    config = RunConfig(call_model_input_filter=chain_filters(recorder, membrane_filter))
    model = _run_scenario(4, config, SQLiteSession("round-trip"))
    for given, call in zip(recorder.seen, model.calls, strict=True):
        items = list(given.input)
        question = max(i for i, item in enumerate(items) if item.get("role") == "user")
        sent = list(call.input)
        assert sent[:question] == items[:question]  # the earlier turns, byte for byte
        assert sent[question + 1 :] == items[question + 1 :]  # this turn's steps
        final = sent[question]
        assert final["role"] == "user" and final["content"].endswith(items[question]["content"])
        assert "[Mem:2] " in final["content"]
        assert call.system_instructions is not None and RULES in call.system_instructions
        # Typed items go back byte for byte; a plain chat message is rebuilt with the same
        # keys and values (its key order may differ, which no request reads).
        typed = [json.dumps(i) for i in items if "type" in i]
        assert [json.dumps(i) for i in sent if "type" in i] == typed


def test_the_agents_tools_are_counted_as_the_sdk_sends_them() -> None:
    specialist = Agent(name="specialist", instructions="Dig deeper.")
    agent = Agent(
        name="a",
        instructions=RULES,
        tools=[lookup_tool(), WebSearchTool()],
        handoffs=[specialist, handoff(Agent(name="other"), is_enabled=False)],
    )
    definitions = agent_tool_definitions(agent)
    sdk = Converter.convert_tools([lookup_tool()], [handoff(specialist)]).tools
    functions = [d for d in definitions if d["description"] != "web_search (hosted)"]
    assert functions == [dict(t) for t in sdk]
    assert [d["name"] for d in definitions] == ["lookup", "web_search", "transfer_to_specialist"]
    compiler = ContextCompiler(max_tokens=3000)
    with_tools = compiler.compile([], "Hi", tools=definitions, conversation_id="tools")
    assert with_tools.metadata["tools_tokens"] > 0


def test_memories_come_from_a_sync_or_async_callable_given_the_call_data() -> None:
    seen: list[CallModelData[Any]] = []

    def sync_memories(data: CallModelData[Any]) -> list[MemoryItem]:
        seen.append(data)
        return memory_records()

    async def async_memories(data: CallModelData[Any]) -> list[MemoryItem]:
        seen.append(data)
        await asyncio.sleep(0)
        return memory_records()[:1]

    for source, cited in (
        (sync_memories, {1: "pref-7", 2: "team-2"}),
        (async_memories, {1: "pref-7"}),
    ):
        seen.clear()
        membrane_filter = _big_filter(memories=source, conversation_id=lambda d: d.agent.name)
        model = _run_scenario(
            1, RunConfig(call_model_input_filter=membrane_filter), SQLiteSession("m")
        )
        assert len(seen) == 2 and all(d.agent.name == "release assistant" for d in seen)
        result = membrane_filter.last_result
        assert isinstance(result, CompileResult) and result.ref_map == cited
        assert "[Mem:1] " in model.calls[-1].input[0]["content"]


def test_on_compile_sees_every_result_and_can_stop_the_run_over_budget() -> None:
    compiler = ContextCompiler(max_tokens=60)  # the rules alone do not fit
    results: list[CompileResult] = []
    membrane_filter = membrane_input_filter(
        compiler, on_compile=lambda result, _data: results.append(result)
    )
    model = _run_scenario(1, RunConfig(call_model_input_filter=membrane_filter), SQLiteSession("o"))
    assert len(results) == 2 and all(r.report.budget_exceeded for r in results)
    assert model.calls[0].input[-1]["content"].endswith(TURNS[0].question)  # sent as compiled

    class OverBudget(Exception):
        pass

    def stop(result: CompileResult, _data: CallModelData[Any]) -> None:
        if result.report.budget_exceeded:
            raise OverBudget(result.metadata["token_count"])

    stopping = membrane_input_filter(compiler, on_compile=stop)
    agent = build_agent(scenario_model(1))
    config = RunConfig(call_model_input_filter=stopping)
    with own_loop(), pytest.raises(OverBudget):
        Runner.run_sync(agent, TURNS[0].question, run_config=config)


def test_chain_filters_runs_sync_and_async_filters_in_order() -> None:
    order: list[str] = []

    def add(tag: str) -> Any:
        def sync_filter(data: CallModelData[Any]) -> ModelInputData:
            order.append(tag)
            given = data.model_data
            return ModelInputData(
                input=[*given.input, {"role": "user", "content": tag}],
                instructions=given.instructions,
            )

        return sync_filter

    async def async_filter(data: CallModelData[Any]) -> ModelInputData:
        order.append("async")
        return ModelInputData(input=data.model_data.input, instructions="changed")

    chained = chain_filters(add("a"), async_filter, add("b"))
    agent = Agent(name="x")
    data = CallModelData(
        model_data=ModelInputData(input=[], instructions="i"), agent=agent, context=None
    )
    out = asyncio.run(chained(data))
    assert order == ["a", "async", "b"]
    assert [i["content"] for i in out.input] == ["a", "b"] and out.instructions == "changed"
    with pytest.raises(TypeError, match="must return ModelInputData"):
        asyncio.run(chain_filters(lambda d: d.model_data.input)(data))  # type: ignore[arg-type, return-value]
    with pytest.raises(ValueError):
        chain_filters()


def test_hosted_and_compaction_items_in_the_session_go_back_verbatim() -> None:
    search = ResponseFunctionWebSearch.model_validate(
        {
            "id": "ws_1",
            "type": "web_search_call",
            "status": "completed",
            "action": {"type": "search", "query": "atlas release"},
        }
    )
    compaction = ResponseCompactionItem(
        id="cmp_1", type="compaction", encrypted_content="gAAAAB" + "q" * 60
    )
    model = ScriptedModel(
        [
            ModelStep(output=[search, assistant_message("Found it.", item_id="msg_a")]),
            ModelStep(output=[assistant_message("Still here.", item_id="msg_b")]),
        ]
    )
    agent = Agent(name="searcher", instructions="Search well.", model=model)
    session = SQLiteSession("hosted")
    config = RunConfig(call_model_input_filter=_big_filter())

    async def conversation() -> None:
        await session.add_items(
            [{"role": "user", "content": "old"}, compaction.model_dump(exclude_unset=True)]
        )
        await Runner.run(agent, "Search for atlas.", session=session, run_config=config)
        await Runner.run(agent, "And now?", session=session, run_config=config)

    asyncio.run(conversation())
    first, last = list(model.calls[0].input), list(model.calls[-1].input)
    # The compaction item just before the run's question stays, first: the history starts there.
    assert first[0] == compaction.model_dump(exclude_unset=True)
    assert first[1]["role"] == "user" and first[1]["content"].endswith("Search for atlas.")
    assert last[0] == compaction.model_dump(exclude_unset=True)
    assert search.model_dump(exclude_unset=True) in last
    assert all(item.get("content") != "old" for item in first + last)


def test_importing_the_adapter_loads_the_sdk_and_membrane_alone_does_not() -> None:
    code = (
        "import sys, membrane, membrane.adapters\n"
        "before = 'agents' in sys.modules\n"
        "import membrane.adapters.openai_agents\n"
        "print(before, 'agents' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert done.stdout.split() == ["False", "True"]


def test_a_wrong_compiler_is_refused() -> None:
    with pytest.raises(TypeError, match="ContextCompiler"):
        membrane_input_filter(object())  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="memory_placement='end'") as caught:
        membrane_input_filter(ContextCompiler(3000, memory_placement="system"))
    assert caught.value.field == "memory_placement"


def _data(items: list[Any], instructions: str | None) -> CallModelData[Any]:
    given = ModelInputData(input=items, instructions=instructions)
    return CallModelData(model_data=given, agent=Agent(name="x"), context=None)


def test_a_history_without_a_question_is_refused_and_empty_instructions_are_none() -> None:
    compiler = ContextCompiler(3000, include_interrupt_instruction=False)
    membrane_filter = membrane_input_filter(compiler)
    summary = [{"role": "assistant", "content": "Transcript so far: ..."}]
    with pytest.raises(InvalidInputError, match="needs a question"):
        asyncio.run(membrane_filter(_data(summary, "Be brief.")))
    out = asyncio.run(membrane_filter(_data([{"role": "user", "content": "Hi"}], None)))
    assert out.instructions is None
    assert out.input == [{"role": "user", "content": "--- Current user message ---\nHi"}]


def test_a_function_tool_switched_off_is_not_counted() -> None:
    off = FunctionTool(
        name="off",
        description="",
        params_json_schema={},
        on_invoke_tool=lambda c, a: None,
        is_enabled=False,  # type: ignore[arg-type, return-value]
    )
    assert agent_tool_definitions(Agent(name="x", tools=[off])) == []
