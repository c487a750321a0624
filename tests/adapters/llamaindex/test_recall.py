"""``membrane_recall`` beside MembraneFunctionAgent: one line, and the dropped fact comes back."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

pytest.importorskip(
    "llama_index.core",
    reason="llama-index-core is not installed: pip install -e '.[llamaindex]'",
)

from llama_index.core.base.llms.types import ToolCallBlock
from llama_index.core.llms import ChatMessage, MessageRole, MockFunctionCallingLLM
from llama_index.core.memory import Memory

from benchmarks._agent_scenario import BUDGET, RULES, TURNS, count_request
from benchmarks.runtimes.llamaindex import Recorder, in_memory_engine, lookup_tool, scripted_llm
from membrane import ContextCompiler
from membrane.adapters.llamaindex import MembraneFunctionAgent
from membrane.adapters.recall_tools import llamaindex_recall_tool
from membrane.recall_tool import RECALL_TOOL_NAME
from membrane.tokenizers import load_encoding

pytestmark = pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecationWarning")

LATE_QUESTION = "Which code did the atlas report give?"


def _ask_recall_then_answer(sent: list[list[ChatMessage]]) -> Any:
    def respond(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        sent.append(list(messages))
        if messages[-1].role == MessageRole.TOOL:
            return ChatMessage(role="assistant", content="ATLAS-1037.")
        call = ToolCallBlock(
            tool_call_id="recall-1", tool_name=RECALL_TOOL_NAME, tool_kwargs={"query": "atlas code"}
        )
        return ChatMessage(role="assistant", blocks=[call])

    return respond


async def test_the_agent_recalls_a_dropped_tool_result_through_the_tool() -> None:
    compiler = ContextCompiler(BUDGET)
    recorder = Recorder()
    agent = MembraneFunctionAgent(
        compiler=compiler,
        llm=scripted_llm(recorder),
        tools=[lookup_tool(), llamaindex_recall_tool(compiler)],  # the one line
        system_prompt=RULES,
        streaming=False,
    )
    engine = in_memory_engine()
    memory = Memory.from_defaults(
        session_id="recall", tokenizer_fn=load_encoding("cl100k_base").encode, async_engine=engine
    )
    sent: list[list[ChatMessage]] = []
    try:
        for turn in TURNS[:6]:
            recorder.turn = turn
            await agent.run(turn.question, memory=memory)
        agent.llm = MockFunctionCallingLLM(response_generator=_ask_recall_then_answer(sent))
        await agent.run(LATE_QUESTION, memory=memory)
    finally:
        await engine.dispose()
    _, second = sent
    result = second[-1]  # answered from the conversation the agent compiled: the memory's session
    assert result.role == MessageRole.TOOL and "ATLAS-1037" in (result.content or "")
    tools = [lookup_tool().metadata.to_openai_tool()["function"]]
    tools.append(llamaindex_recall_tool(compiler).metadata.to_openai_tool()["function"])
    chat = [{"role": m.role.value, "content": m.content or ""} for m in second]
    assert count_request(chat, tools) <= BUDGET
