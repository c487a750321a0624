"""MembraneMiddleware's options: memories and ids from the request, markers, the budget flag."""

from __future__ import annotations

import logging
from typing import Any

import pytest

pytest.importorskip("langchain.agents", reason="needs the extra: pip install -e '.[langchain]'")

from langchain.agents import create_agent
from langchain.agents.middleware import ModelRequest
from langchain_core.messages import AIMessage

from benchmarks._agent_scenario import RULES, TURNS
from benchmarks.runtimes._claude import ScriptedClaude, cache_form
from benchmarks.runtimes.langchain import lookup_tool, memory_items
from membrane import ContextCompiler
from membrane.adapters.langchain import MembraneMiddleware
from tests.adapters.langchain._agent import (
    ScriptedChat,
    agent_with,
    arun_turns,
    new_compiler,
    run_turns,
    scripted_responses,
)


def _last_answer(stored: list[Any]) -> AIMessage:
    answer = stored[-1]
    assert isinstance(answer, AIMessage)
    return answer


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(TypeError, match="ContextCompiler"):
        MembraneMiddleware("not a compiler")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cache_markers"):
        MembraneMiddleware(new_compiler(), cache_markers="always")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="conversation_id"):
        MembraneMiddleware(new_compiler(), conversation_id="tenant-1")  # type: ignore[arg-type]


def test_memories_and_the_conversation_id_come_from_the_request() -> None:
    seen: list[ModelRequest[Any]] = []

    def memories(request: ModelRequest[Any]) -> list[Any]:
        seen.append(request)
        return memory_items()

    def conversation(request: ModelRequest[Any]) -> str:
        return f"tenant-a:{request.runtime.execution_info.thread_id}"

    middleware = MembraneMiddleware(new_compiler(), memories=memories, conversation_id=conversation)
    model = ScriptedChat(responses=scripted_responses())
    stored = run_turns(agent_with(model, [middleware]), "invoke", thread="t-7", turns=1)
    assert len(seen) == 2 and all(isinstance(r, ModelRequest) for r in seen)
    info = _last_answer(stored).response_metadata["membrane"]
    assert info["conversation_id"] == "tenant-a:t-7"
    assert info["ref_map"] == {"1": "pref-7", "2": "team-2"}


async def test_an_async_retriever_is_awaited() -> None:
    async def memories(request: ModelRequest[Any]) -> list[Any]:
        return memory_items()

    middleware = MembraneMiddleware(new_compiler(), memories=memories)
    model = ScriptedChat(responses=scripted_responses())
    stored = await arun_turns(agent_with(model, [middleware]), "ainvoke", turns=1)
    assert _last_answer(stored).response_metadata["membrane"]["ref_map"]["2"] == "team-2"


def test_the_thread_id_without_a_checkpointer_comes_from_the_config() -> None:
    model = ScriptedChat(responses=scripted_responses())
    middleware = MembraneMiddleware(new_compiler(), memories=memory_items())
    agent = create_agent(model, [lookup_tool()], system_prompt=RULES, middleware=[middleware])
    message = {"messages": [{"role": "user", "content": TURNS[0].question}]}
    state = agent.invoke(message, {"configurable": {"thread_id": "no-saver"}})
    assert (
        _last_answer(state["messages"]).response_metadata["membrane"]["conversation_id"]
        == "no-saver"
    )
    state = agent.invoke(message)
    assert _last_answer(state["messages"]).response_metadata["membrane"]["conversation_id"] is None


def test_markers_off_leaves_claudes_requests_unmarked() -> None:
    model = ScriptedClaude()
    middleware = MembraneMiddleware(new_compiler(), memories=memory_items(), cache_markers="off")
    run_turns(agent_with(model, [middleware]), "invoke", turns=3)
    assert all("cache_control" not in str(cache_form(p)) for p in model.payloads)


def test_an_over_budget_request_is_sent_flagged_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    model = ScriptedChat(responses=scripted_responses())
    middleware = MembraneMiddleware(ContextCompiler(200), memories=memory_items())
    with caplog.at_level(logging.WARNING, logger="membrane.adapters.langchain"):
        stored = run_turns(agent_with(model, [middleware]), "invoke", turns=1)
    assert len(model.requests) == 2
    assert _last_answer(stored).response_metadata["membrane"]["budget_exceeded"] is True
    assert "200-token budget" in caplog.text


def test_a_callable_giving_the_wrong_thing_says_so() -> None:
    async def later(request: ModelRequest[Any]) -> list[Any]:
        return memory_items()

    cases = [
        (MembraneMiddleware(new_compiler(), memories=later), "awaitable in a sync run"),
        (MembraneMiddleware(new_compiler(), memories=lambda r: "pref-7"), "list of records"),
        (MembraneMiddleware(new_compiler(), conversation_id=lambda r: 7), "expected str"),
    ]
    for middleware, message in cases:
        model = ScriptedChat(responses=scripted_responses())
        with pytest.raises(TypeError, match=message):
            run_turns(agent_with(model, [middleware]), "invoke", turns=1)
        assert model.requests == []
