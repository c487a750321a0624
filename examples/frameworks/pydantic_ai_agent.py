"""PydanticAI: an agent whose every model request Membrane compiles under 2,000 tokens.

Run: python examples/frameworks/pydantic_ai_agent.py   (needs membrane-aol[pydantic-ai])
The model is PydanticAI's own FunctionModel, scripted: it looks a project up, then answers
citing a memory. Nothing leaves the machine.
"""

from __future__ import annotations

import re

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from membrane import ContextCompiler, MemoryItem, count_tokens
from membrane.adapters.pydantic_ai import MembraneCapability

BUDGET = 2_000
PROJECTS = ("atlas", "borealis", "cinder", "dynamo", "ember")
sent_sizes: list[int] = []


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Call ``status`` once per question, then answer citing the second memory."""
    text = "\n".join(
        str(getattr(p, "content", "")) for m in messages for p in m.parts if hasattr(p, "content")
    )
    sent_sizes.append(count_tokens((info.instructions or "") + text))
    project = re.findall(r"project (\w+)", text)[-1]
    if isinstance(messages[-1].parts[-1], ToolReturnPart):
        return ModelResponse(parts=[TextPart(f"{project} ships in March; Ana signs off [Mem:2].")])
    return ModelResponse(parts=[ToolCallPart("status", {"project": project})])


def status(project: str) -> str:
    """Read a project's status report."""
    return f"Status of {project}: " + "all builds passed on the staging cluster. " * 120


memories = [
    MemoryItem(id="pref-7", content="The user likes short answers."),
    MemoryItem(id="team-2", content="Ana signs off every backend release."),
]
# The integration: a capability on the agent.
membrane = MembraneCapability(ContextCompiler(BUDGET), memories=memories)
agent = Agent(
    FunctionModel(scripted),
    instructions="You are the release assistant. Cite memories as [Mem:N].",
    tools=[status],
    capabilities=[membrane],
)

history: list[ModelMessage] = []
for name in PROJECTS:
    result = agent.run_sync(f"When does project {name} ship?", message_history=history)
    history = result.all_messages()
    record = membrane.record(result)
    cited = [record.ref_map[int(n)] for n in re.findall(r"\[Mem:(\d+)\]", result.output)]
    print(f"{result.output}  -> {cited}")

print("stored messages:", len(history), "| largest request:", max(sent_sizes), "tokens")
assert cited == ["team-2"]
assert len(history) == 4 * len(PROJECTS)  # the run's history is complete
assert max(sent_sizes) <= BUDGET, max(sent_sizes)
assert not record.last.report.budget_exceeded
