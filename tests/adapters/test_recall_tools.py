"""``membrane_recall`` inside each agent runtime, driven by the runtime's own fake model.

Each test compiles a long conversation under a small budget (its first messages, holding the
Atlas code, are dropped), registers the tool in one line, lets a scripted model call it, and
reads the next model request: the dropped fact must be in the tool result the model receives.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, ClassVar

import pytest

from membrane import ContextCompiler
from membrane.recall_tool import NOTHING_DROPPED, RECALL_TOOL_NAME
from tests.recall_conversation import ATLAS_CODE, ATLAS_FACT, BUDGET, long_history

QUERY = "the code of project atlas"
FOUND_LINE = f"#1 [user] {ATLAS_FACT}"


def _compiler(conversation: str) -> ContextCompiler:
    compiler = ContextCompiler(max_tokens=BUDGET, core_content="You are helpful.")
    compiler.compile(
        conversation_messages=long_history(), user_message="Go on.", conversation_id=conversation
    )
    return compiler


# --------------------------------------------------------------------- LangChain / LangGraph


def _langchain_agent(compiler: ContextCompiler, query: object, **options: Any) -> Any:
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage
    from langgraph.checkpoint.memory import InMemorySaver

    from membrane.adapters.recall_tools import langchain_recall_tool

    class ScriptedChatModel(FakeMessagesListChatModel):
        """Replays its responses and keeps every request's messages and tools."""

        requests: ClassVar[list[Any]] = []
        tools: ClassVar[list[Any]] = []

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            self.tools.append(tools)
            return self

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any):  # type: ignore[no-untyped-def]
            self.requests.append(list(messages))
            return super()._generate(messages, stop, run_manager, **kw)

    call = {"name": RECALL_TOOL_NAME, "args": {"query": query}, "id": "call_1"}
    model = ScriptedChatModel(
        responses=[AIMessage(content="", tool_calls=[call]), AIMessage(content=ATLAS_CODE)]
    )
    ScriptedChatModel.requests, ScriptedChatModel.tools = [], []
    tools = [langchain_recall_tool(compiler, **options)]
    return create_agent(model, tools=tools, checkpointer=InMemorySaver()), model


def _tool_message(model: Any) -> Any:
    assert len(model.requests) == 2
    last = model.requests[1][-1]
    assert type(last).__name__ == "ToolMessage" and last.tool_call_id == "call_1"
    return last


@pytest.mark.parametrize("run", ["sync", "async"])
def test_langchain_agent_gets_the_dropped_fact_by_thread_id(run: str) -> None:
    pytest.importorskip("langchain")
    compiler = _compiler("thread-7")
    agent, model = _langchain_agent(compiler, QUERY)
    state = {"messages": [{"role": "user", "content": "What is the Atlas code?"}]}
    config = {"configurable": {"thread_id": "thread-7"}}
    if run == "sync":
        agent.invoke(state, config)
    else:
        asyncio.run(agent.ainvoke(state, config))
    assert [t.name for t in model.tools[0]] == [RECALL_TOOL_NAME]
    schema = model.tools[0][0].tool_call_schema.model_json_schema()
    assert list(schema["properties"]) == ["query"]  # the runtime is injected, not asked for
    assert FOUND_LINE in _tool_message(model).content.split("\n")


def test_langchain_other_thread_and_explicit_conversation() -> None:
    pytest.importorskip("langchain")
    compiler = _compiler("thread-7")
    state = {"messages": [{"role": "user", "content": "What is the Atlas code?"}]}
    agent, model = _langchain_agent(compiler, QUERY)
    agent.invoke(state, {"configurable": {"thread_id": "thread-8"}})
    assert _tool_message(model).content == NOTHING_DROPPED
    agent, model = _langchain_agent(
        compiler, QUERY, conversation_id=lambda runtime: runtime.config["configurable"]["t"]
    )
    agent.invoke(state, {"configurable": {"thread_id": "thread-8", "t": "thread-7"}})
    assert FOUND_LINE in _tool_message(model).content.split("\n")


def test_langchain_bad_query_reaches_the_model_as_a_tool_error() -> None:
    pytest.importorskip("langchain")
    agent, model = _langchain_agent(_compiler("thread-7"), "   ")
    state = {"messages": [{"role": "user", "content": "What is the Atlas code?"}]}
    agent.invoke(state, {"configurable": {"thread_id": "thread-7"}})
    message = _tool_message(model)
    assert message.status == "error"
    assert message.content.startswith("query is empty")


# --------------------------------------------------------------------- pydantic-ai


def _pydantic_run(compiler: ContextCompiler, query: str, **run: Any) -> list[Any]:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from membrane.adapters.recall_tools import pydantic_ai_recall_tool

    requests: list[Any] = []

    def script(messages: list[Any], info: AgentInfo) -> ModelResponse:
        requests.append((list(messages), info.function_tools))
        if len(requests) == 1:
            call = ToolCallPart(RECALL_TOOL_NAME, {"query": query}, tool_call_id="c1")
            return ModelResponse(parts=[call])
        return ModelResponse(parts=[TextPart(ATLAS_CODE)])

    agent = Agent(FunctionModel(script), tools=[pydantic_ai_recall_tool(compiler)])
    agent.run_sync("What is the Atlas code?", **run)
    return requests


def test_pydantic_ai_agent_gets_the_dropped_fact_by_conversation_id() -> None:
    pytest.importorskip("pydantic_ai")
    requests = _pydantic_run(_compiler("conv-9"), QUERY, conversation_id="conv-9")
    tools = requests[0][1]
    assert [t.name for t in tools] == [RECALL_TOOL_NAME]
    assert tools[0].parameters_json_schema["required"] == ["query"]
    (part,) = requests[1][0][-1].parts
    assert type(part).__name__ == "ToolReturnPart" and part.tool_call_id == "c1"
    assert FOUND_LINE in part.content.split("\n")


def test_pydantic_ai_bad_query_asks_the_model_to_retry() -> None:
    pytest.importorskip("pydantic_ai")
    requests = _pydantic_run(_compiler("conv-9"), "", conversation_id="conv-9")
    (part,) = requests[1][0][-1].parts
    assert (part.tool_call_id, part.outcome) == ("c1", "retried")  # ModelRetry's answer
    assert part.content.startswith("query is empty")


# --------------------------------------------------------------------- OpenAI Agents SDK


def _agents_run(compiler: ContextCompiler, arguments: str, **options: Any) -> list[Any]:
    from agents import Agent, RunConfig, Runner
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    from membrane.adapters.recall_tools import openai_agents_recall_tool

    class ScriptedModel(Model):
        """Calls membrane_recall once, then answers; keeps every request's input and tools."""

        def __init__(self) -> None:
            self.requests: list[Any] = []

        async def get_response(
            self,
            system_instructions: Any,
            input: Any,
            model_settings: Any,
            tools: Any,
            *args: Any,
            **kwargs: Any,
        ) -> ModelResponse:
            self.requests.append((list(input), tools))
            if len(self.requests) == 1:
                output: list[Any] = [
                    ResponseFunctionToolCall(
                        type="function_call",
                        call_id="c1",
                        name=RECALL_TOOL_NAME,
                        arguments=arguments,
                    )
                ]
            else:
                text = ResponseOutputText(type="output_text", text=ATLAS_CODE, annotations=[])
                output = [
                    ResponseOutputMessage(
                        id="m1",
                        type="message",
                        role="assistant",
                        status="completed",
                        content=[text],
                    )
                ]
            return ModelResponse(output=output, usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    model = ScriptedModel()
    agent = Agent(
        name="helper", model=model, tools=[openai_agents_recall_tool(compiler, **options)]
    )
    run = Runner.run(
        agent,
        "What is the Atlas code?",
        context={"thread": "s1"},
        run_config=RunConfig(tracing_disabled=True),
    )
    asyncio.run(run)
    return model.requests


def _function_output(requests: list[Any]) -> str:
    last = requests[1][0][-1]
    assert last["type"] == "function_call_output" and last["call_id"] == "c1"
    return str(last["output"])


@pytest.mark.parametrize("option", ["s1", lambda ctx: ctx.context["thread"]])
def test_openai_agents_gets_the_dropped_fact(option: Any) -> None:
    pytest.importorskip("agents")
    requests = _agents_run(_compiler("s1"), json.dumps({"query": QUERY}), conversation_id=option)
    (tool,) = requests[0][1]
    assert tool.name == RECALL_TOOL_NAME and tool.strict_json_schema
    assert FOUND_LINE in _function_output(requests).split("\n")


def test_openai_agents_without_conversation_uses_the_default_one() -> None:
    pytest.importorskip("agents")
    requests = _agents_run(_compiler("s1"), json.dumps({"query": QUERY}))
    assert _function_output(requests) == NOTHING_DROPPED


@pytest.mark.parametrize(
    ("arguments", "start"),
    [
        ("not json", "membrane_recall could not run"),
        ('{"q": "atlas"}', 'membrane_recall needs {"query"'),
        ('{"query": ""}', "membrane_recall could not run: query is empty"),
    ],
)
def test_openai_agents_bad_arguments_come_back_as_output(arguments: str, start: str) -> None:
    pytest.importorskip("agents")
    requests = _agents_run(_compiler("s1"), arguments, conversation_id="s1")
    assert _function_output(requests).startswith(start)


# --------------------------------------------------------------------- LlamaIndex


def _llamaindex_run(compiler: ContextCompiler, query: str, session: str, **options: Any) -> Any:
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.base.llms.types import ToolCallBlock
    from llama_index.core.llms import ChatMessage
    from llama_index.core.llms.mock import MockFunctionCallingLLM
    from llama_index.core.memory import Memory

    from membrane.adapters.recall_tools import llamaindex_recall_tool

    requests: list[Any] = []

    def script(messages: Any, **kwargs: Any) -> ChatMessage:
        requests.append((list(messages), kwargs.get("tools")))
        if len(requests) == 1:
            call = ToolCallBlock(
                tool_call_id="c1", tool_name=RECALL_TOOL_NAME, tool_kwargs={"query": query}
            )
            return ChatMessage(role="assistant", blocks=[call])
        return ChatMessage(role="assistant", content=ATLAS_CODE)

    llm = MockFunctionCallingLLM(response_generator=script)
    agent = FunctionAgent(llm=llm, tools=[llamaindex_recall_tool(compiler, **options)])

    async def run() -> None:
        from sqlalchemy.ext.asyncio import create_async_engine

        engine = create_async_engine("sqlite+aiosqlite:///:memory:")
        try:
            memory = Memory.from_defaults(session_id=session, async_engine=engine)
            await agent.run("What is the Atlas code?", memory=memory)
        finally:
            await engine.dispose()  # the memory's store leaves its connection open otherwise

    asyncio.run(run())
    return requests


# llama-index-workflows reads every attribute of the agent (a pydantic model) to find its
# steps, and so touches attributes pydantic has deprecated: the framework's warnings, not ours.
_WORKFLOW_WARNING = pytest.mark.filterwarnings(
    "ignore::pydantic.warnings.PydanticDeprecationWarning"
)


def _tool_result(requests: list[Any]) -> str:
    assert len(requests) == 2
    last = requests[1][0][-1]
    assert last.role.value == "tool"
    return str(last.content)


@_WORKFLOW_WARNING
def test_llamaindex_agent_gets_the_dropped_fact_by_memory_session() -> None:
    pytest.importorskip("llama_index.core")
    requests = _llamaindex_run(_compiler("sess-3"), QUERY, "sess-3")
    assert FOUND_LINE in _tool_result(requests).split("\n")
    other = _llamaindex_run(_compiler("sess-3"), QUERY, "sess-4")
    assert _tool_result(other) == NOTHING_DROPPED
    chosen = _llamaindex_run(_compiler("sess-3"), QUERY, "sess-4", conversation_id="sess-3")
    assert FOUND_LINE in _tool_result(chosen).split("\n")


@_WORKFLOW_WARNING
def test_llamaindex_bad_query_reaches_the_model_as_the_error() -> None:
    pytest.importorskip("llama_index.core")
    requests = _llamaindex_run(_compiler("sess-3"), "", "sess-3")
    assert "query is empty" in _tool_result(requests)


# --------------------------------------------------------------------- every runtime


@pytest.mark.parametrize(
    "factory",
    [
        "langchain_recall_tool",
        "pydantic_ai_recall_tool",
        "openai_agents_recall_tool",
        "llamaindex_recall_tool",
    ],
)
def test_a_bad_option_is_refused_when_the_tool_is_built(factory: str) -> None:
    from membrane import InvalidInputError
    from membrane.adapters import recall_tools

    build = getattr(recall_tools, factory)
    compiler = ContextCompiler(max_tokens=BUDGET)
    with pytest.raises(TypeError, match="conversation_id"):
        build(compiler, conversation_id=42)
    with pytest.raises(InvalidInputError):
        build(compiler, max_tokens=10)


def test_importing_the_module_loads_no_runtime() -> None:
    import subprocess
    import sys
    from pathlib import Path

    runtimes = {"langchain", "langchain_core", "langgraph", "pydantic_ai", "agents", "llama_index"}
    code = (
        "import sys, membrane.adapters.recall_tools\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & {runtimes!r}))"
    )
    src = Path(__file__).resolve().parents[2] / "src"
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(src), "PATH": ""},
    )
    assert done.stdout.strip() == "[]"
