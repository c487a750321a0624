"""``compile_messages`` in a LangGraph graph of one's own: the state keeps every message."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langgraph", reason="needs the langchain extra: pip install -e '.[langchain]'")

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from benchmarks._agent_scenario import RULES, TOOL, TURNS, check_request
from benchmarks.runtimes.langchain import lookup_tool, memory_items
from membrane.adapters.langchain import (
    acompile_messages,
    compile_messages,
    compile_view,
    from_langchain_messages,
)
from tests.adapters.langchain._agent import (
    ScriptedChat,
    assert_history_complete,
    judge_chat_requests,
    new_compiler,
    scripted_responses,
)


def _graph(node: Any) -> Any:
    graph = StateGraph(MessagesState)
    graph.add_node("agent", node)
    graph.add_node("tools", ToolNode([lookup_tool()]))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=InMemorySaver())


def test_a_langgraph_node_sends_the_compiled_view_and_stores_everything() -> None:
    compiler, model = new_compiler(), ScriptedChat(responses=scripted_responses())
    tools = [lookup_tool()]

    def agent(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
        view = compile_messages(
            compiler,
            [SystemMessage(RULES), *state["messages"]],
            tools=tools,
            conversation_id=config["configurable"]["thread_id"],
            memories=memory_items(),
        )
        return {"messages": [model.invoke(view)]}

    app = _graph(agent)
    config: RunnableConfig = {"configurable": {"thread_id": "graph-1"}}
    for turn in TURNS:
        app.invoke({"messages": [HumanMessage(turn.question)]}, config)
    checks = judge_chat_requests(model.requests)
    assert len(checks) == 24
    assert [(c.tokens, c.problems) for c in checks if not c.ok] == []
    assert_history_complete(app.get_state(config).values["messages"])
    assert compiler.results[-1].report.budget_exceeded is False


async def test_the_async_twin_gives_the_same_view() -> None:
    history = [
        HumanMessage(TURNS[0].question),
        AIMessage("", tool_calls=[{"name": "lookup", "args": {"project": "atlas"}, "id": "c1"}]),
        ToolMessage("Status report for atlas: green.", tool_call_id="c1"),
    ]
    messages = [SystemMessage(RULES), *history]
    sync = compile_messages(new_compiler(), messages, tools=[TOOL], memories=memory_items())
    other = await acompile_messages(new_compiler(), messages, tools=[TOOL], memories=memory_items())
    assert [m.content for m in other] == [m.content for m in sync]
    # The steps after the question are the caller's own objects, not copies.
    assert sync[-2] is history[1] and sync[-1] is history[2]
    assert isinstance(sync[0], SystemMessage) and RULES in sync[0].text
    check = check_request(
        [{"role": "system", "content": sync[0].text}, *from_langchain_messages(sync[1:])],
        [TOOL],
        TURNS[0],
    )
    assert check.ok, check


def test_compile_view_carries_the_ref_map_and_leaves_the_input_alone() -> None:
    history = [HumanMessage(TURNS[0].question)]
    before = [m.model_copy(deep=True) for m in history]
    view = compile_view(new_compiler(), history, memories=memory_items(), conversation_id="c-9")
    assert view.summary["ref_map"] == {"1": "pref-7", "2": "team-2"}
    assert view.summary["conversation_id"] == "c-9"
    assert view.result.ref_map == {1: "pref-7", 2: "team-2"}
    assert history == before
    assert isinstance(view.messages[-1], HumanMessage)
    assert TURNS[0].question in view.messages[-1].text


def test_the_compilers_own_rules_win_over_the_agents_prompt() -> None:
    compiler = new_compiler(core_content="Answer in French.")
    view = compile_view(compiler, [SystemMessage(RULES), HumanMessage(TURNS[0].question)])
    assert view.system is not None
    assert "Answer in French." in view.system.text
    assert RULES not in view.system.text
