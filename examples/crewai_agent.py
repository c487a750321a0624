"""CrewAI: fit memories into a task so the prompt CrewAI sends stays within a budget.

Run: python examples/crewai_agent.py   (needs membrane-aol[crewai])
The model is a BaseLLM subclass (CrewAI's extension point) that answers without any network.
"""

from __future__ import annotations

import os
import re
from typing import Any

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from crewai import Agent, Crew, Task
from crewai.llms.base_llm import BaseLLM
from pydantic import Field

from membrane import MemoryItem, count_tokens
from membrane.adapters.crewai import compile_for_agent

BUDGET = 600


class OfflineLLM(BaseLLM):
    """Answers by citing the memory about region 4; records each request's size."""

    sizes: list[int] = Field(default_factory=list)

    def call(self, messages: Any, *args: Any, **kwargs: Any) -> str:
        self.sizes.append(sum(count_tokens(str(m["content"])) + 3 for m in messages))
        line = re.search(r"^\[Mem:(\d+)\] .*region 4 take", messages[-1]["content"], re.M)
        return f"Final Answer: 7 days [Mem:{line.group(1) if line else '?'}]"


llm = OfflineLLM(model="offline")
agent = Agent(
    role="Refund desk", goal="Answer refund questions", backstory="Retail support.", llm=llm
)
task = Task(
    description="How long do refunds in region 4 take?",
    expected_output="Days, with a [Mem:N] citation.",
    agent=agent,
)
memories = [
    MemoryItem(id=f"policy-{i}", content=f"Refunds in region {i} take {i + 3} days. " * 3)
    for i in range(30)
]

prompt = compile_for_agent(agent, task, memories, max_tokens=BUDGET)
answer = Crew(agents=[agent], tasks=[prompt.task]).kickoff().raw
n = int(re.findall(r"\[Mem:(\d+)\]", answer)[0])

print(answer, "->", prompt.ref_map[n])
print(
    "CrewAI scaffolding:",
    prompt.scaffolding_tokens,
    "tokens; requests:",
    llm.sizes,
    "budget",
    BUDGET,
)
assert prompt.ref_map[n] == "policy-4"
assert llm.sizes and max(llm.sizes) <= BUDGET
