"""LangChain v1: a tool-calling agent whose every model call Membrane fits under 1,500 tokens.

Run: python examples/frameworks/langchain_agent.py   (needs membrane-aol[langchain])
The chat model is LangChain's own GenericFakeChatModel with scripted tool calls, so nothing
leaves the machine. The agent's thread keeps every message; only what the model is sent is
compiled.
"""

from __future__ import annotations

import re
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from membrane import ContextCompiler, MemoryItem, count_tokens
from membrane.adapters.langchain import MembraneMiddleware

BUDGET = 1_500
CITIES = ["Lisbon", "Oslo", "Quito", "Hanoi"]


@tool
def weather_report(city: str) -> str:
    """The full weather report of a city (long: about 450 tokens)."""
    return f"Weather report for {city}. " + f"Hour by hour, {city} stays dry and mild. " * 45


class ScriptedModel(GenericFakeChatModel):
    """GenericFakeChatModel that accepts tools and records what each call was sent."""

    sent: list[list[BaseMessage]] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.sent.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def script() -> list[AIMessage]:
    replies = []
    for i, city in enumerate(CITIES):
        call = {"name": "weather_report", "args": {"city": city}, "id": f"call_{i}"}
        replies += [AIMessage("", tool_calls=[call]), AIMessage(f"{city} stays dry [Mem:1].")]
    return replies


memories = [MemoryItem(id="pref-umbrella", content="The user never carries an umbrella.")]

# The integration: one compiler for the agent, one middleware.
compiler = ContextCompiler(BUDGET)
middleware = MembraneMiddleware(compiler, memories=memories)
model = ScriptedModel(messages=iter(script()))
agent = create_agent(
    model,
    [weather_report],
    system_prompt="You are a travel assistant. Cite memories as [Mem:N].",
    middleware=[middleware],
    checkpointer=InMemorySaver(),
)

config = {"configurable": {"thread_id": "trip-1"}}
for city in CITIES:
    state = agent.invoke({"messages": [{"role": "user", "content": f"Rain in {city}?"}]}, config)

answer = state["messages"][-1]
info = answer.response_metadata["membrane"]
cited = [info["ref_map"][n] for n in re.findall(r"\[Mem:(\d+)\]", answer.text)]
largest = max(sum(count_tokens(m.text) + 3 for m in sent) for sent in model.sent)
print(answer.text)
print("cited:", cited)
print("stored messages:", len(state["messages"]), "| model calls:", len(model.sent))
print("largest request (text tokens):", largest, "of", BUDGET)
print("older messages left out of the last call:", info["metadata"]["history_messages_dropped"])

assert cited == ["pref-umbrella"]
assert len(state["messages"]) == 4 * len(CITIES)  # the thread keeps everything
assert largest <= BUDGET
assert info["budget_exceeded"] is False
assert info["metadata"]["history_messages_dropped"] > 0
