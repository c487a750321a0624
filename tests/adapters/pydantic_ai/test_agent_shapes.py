"""MembraneCapability with the other things an agent does: structured output, retries, no prompt."""

from __future__ import annotations

import pytest

pytest.importorskip(
    "pydantic_ai", reason="pydantic-ai is not installed: pip install -e '.[pydantic-ai]'"
)

from pydantic import BaseModel
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    RetryFeedbackPart,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from membrane import ContextCompiler, MemoryItem
from membrane.adapters.pydantic_ai import MembraneCapability
from membrane.errors import InvalidInputError

MEMORY = MemoryItem(id="fmt-1", content="Dates are written as day month year.")
QUESTION = "When does atlas ship?"


class ShipDate(BaseModel):
    date: str


def _question_part(messages: list[ModelMessage]) -> UserPromptPart:
    parts = [p for m in messages for p in m.parts if isinstance(p, UserPromptPart)]
    assert len(parts) == 1
    return parts[0]


def test_output_tools_are_counted_and_a_retried_call_stays_a_step() -> None:
    seen: list[list[ModelMessage]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(messages)
        date = "soon" if len(seen) == 1 else "4 March 2027"
        name = info.output_tools[0].name
        return ModelResponse(
            parts=[ToolCallPart(name, {"date": date}, tool_call_id=f"o{len(seen)}")]
        )

    membrane = MembraneCapability(ContextCompiler(3_000), memories=[MEMORY])
    agent = Agent(FunctionModel(model), output_type=ShipDate, capabilities=[membrane])

    @agent.output_validator
    def real_date(out: ShipDate) -> ShipDate:
        if out.date == "soon":
            raise ModelRetry("Give the date.")
        return out

    result = agent.run_sync(QUESTION)
    assert result.output == ShipDate(date="4 March 2027")
    record = membrane.record(result)
    assert [t["function"]["name"] for t in record.last.tools] == ["final_result"]
    assert record.last.report.agent.tools_tokens > 0
    roles = [m["role"] for m in record.last.messages]
    assert roles == ["system", "user", "assistant", "tool"]
    question = _question_part(seen[1])
    assert question.content.endswith(QUESTION) and MEMORY.content in question.content


def test_retry_feedback_is_never_taken_for_the_question() -> None:
    seen: list[list[ModelMessage]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(messages)
        return ModelResponse(parts=[TextPart("soon" if len(seen) == 1 else "4 March 2027")])

    membrane = MembraneCapability(ContextCompiler(3_000), memories=[MEMORY])
    agent = Agent(FunctionModel(model), instructions="Answer with a date.", capabilities=[membrane])

    @agent.output_validator
    def real_date(out: str) -> str:
        if out == "soon":
            raise ModelRetry("Give the date.")
        return out

    result = agent.run_sync(QUESTION)
    assert result.output == "4 March 2027"
    stored = result.all_messages()
    assert any(isinstance(p, RetryFeedbackPart) for p in stored[2].parts)
    compiled = membrane.record(result).last.messages
    assert [m["role"] for m in compiled] == ["system", "user", "assistant", "system"]
    assert compiled[1]["content"].endswith(QUESTION) and MEMORY.content in compiled[1]["content"]
    assert "Give the date." in compiled[3]["content"]
    # The model still receives the feedback as PydanticAI renders it, after the question.
    last = seen[1][-1].parts[-1]
    assert isinstance(last, UserPromptPart) and "Give the date." in str(last.content)


def test_a_history_with_no_question_is_a_typed_error() -> None:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart("Hello.")])

    membrane = MembraneCapability(ContextCompiler(3_000))
    agent = Agent(FunctionModel(model), instructions="Greet.", capabilities=[membrane])
    history: list[ModelMessage] = [ModelResponse(parts=[TextPart("Welcome back.")])]
    with pytest.raises(InvalidInputError) as caught:
        agent.run_sync(None, message_history=history)
    assert caught.value.field == "continue_turn"


def test_the_recall_tool_finds_what_membrane_cut() -> None:
    """``pydantic_ai_recall_tool`` and the capability name the conversation the same way."""
    from benchmarks._agent_scenario import BUDGET, RULES, TURNS, check_request, tool_result
    from benchmarks.runtimes.pydantic_ai import ScriptedModel, lookup_tool, memory_items
    from membrane.adapters.recall_tools import pydantic_ai_recall_tool

    scripted = ScriptedModel()
    recalled: list[str] = []
    follow_up = "Remind me: what was the release code of atlas?"

    async def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1].parts[-1]
        if getattr(last, "tool_name", None) == "membrane_recall":
            recalled.append(str(last.content))
            return ModelResponse(parts=[TextPart("It was ATLAS-1037.")])
        if isinstance(last, UserPromptPart) and follow_up in str(last.content):
            call = ToolCallPart(
                "membrane_recall", {"query": "atlas release code"}, tool_call_id="r1"
            )
            return ModelResponse(parts=[call])
        return await scripted.respond(messages, info)

    compiler = ContextCompiler(BUDGET)
    membrane = MembraneCapability(compiler, memories=memory_items())
    agent = Agent(
        FunctionModel(model),
        instructions=RULES,
        tools=[lookup_tool(), pydantic_ai_recall_tool(compiler)],
        capabilities=[membrane],
    )
    history: list[ModelMessage] = []
    for turn in TURNS[:6]:
        history = agent.run_sync(turn.question, message_history=history).all_messages()
    result = agent.run_sync(follow_up, message_history=history)
    assert result.output == "It was ATLAS-1037."
    assert recalled and "ATLAS-1037" in recalled[0]
    sent = membrane.record(result).compiles
    assert tool_result(TURNS[0]) not in str(sent[0].messages)  # atlas' report was cut
    assert not any(c.report.budget_exceeded for c in sent)
    assert all(check_request(r.messages, r.tools, r.turn).ok for r in scripted.seen)
