"""The middleware and the recall tool share the thread id: the model gets back what was cut."""

from __future__ import annotations

import pytest

pytest.importorskip("langchain.agents", reason="needs the extra: pip install -e '.[langchain]'")

from langchain_core.messages import AIMessage, ToolMessage

from benchmarks._agent_scenario import TURNS, tool_result
from benchmarks.runtimes.langchain import lookup_tool, memory_items
from membrane.adapters.langchain import MembraneMiddleware
from membrane.adapters.recall_tools import langchain_recall_tool
from tests.adapters.langchain._agent import (
    ScriptedChat,
    judge_chat_requests,
    new_compiler,
    scripted_responses,
)


def test_the_recall_tool_finds_a_fact_the_middleware_cut() -> None:
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver

    from benchmarks._agent_scenario import RULES

    compiler = new_compiler()
    recall = {"name": "membrane_recall", "args": {"query": "ATLAS code"}, "id": "recall_1"}
    script = scripted_responses()[:8]  # four turns
    script += [AIMessage("", tool_calls=[recall]), AIMessage("The code is ATLAS-1037.")]
    model = ScriptedChat(responses=script)
    agent = create_agent(
        model,
        [lookup_tool(), langchain_recall_tool(compiler)],
        system_prompt=RULES,
        middleware=[MembraneMiddleware(compiler, memories=memory_items())],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "recall-1"}}
    for turn in TURNS[:4]:
        agent.invoke({"messages": [{"role": "user", "content": turn.question}]}, config)
    assert compiler.results[-1].metadata["history_messages_dropped"] > 0
    # The atlas report itself is no longer sent (only an index line about it).
    assert all(m.content != tool_result(TURNS[0]) for m in model.requests[-1])
    question = {"role": "user", "content": "What was the atlas release code again?"}
    state = agent.invoke({"messages": [question]}, config)
    [result] = [
        m for m in state["messages"] if isinstance(m, ToolMessage) and m.name == "membrane_recall"
    ]
    assert "ATLAS-1037" in str(result.content)
    # The requests before the question stay within the budget; the recall request too.
    assert all(not c.over_budget for c in judge_chat_requests(model.requests[:8]))
    assert len(model.requests) == 10
