"""The CrewAI adapter inside a real Crew, with a BaseLLM subclass standing in for the model.

Runs in the CrewAI environment (``.venv-crewai``; see the Makefile).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from crewai import Agent, Crew, Task
from crewai.llms.base_llm import BaseLLM
from crewai.tools import tool
from pydantic import Field

from membrane.adapters.crewai import (
    compile_for_agent,
    detect_memory_collision,
    document_to_memory,
    measure_prompt,
)
from membrane.errors import InvalidInputError, MemoryCollisionError
from membrane.records import MemoryItem
from tests.adapters import _budget


class CitingLLM(BaseLLM):
    """Keeps every request and answers with the memory that names the asked region."""

    sent: list[list[dict[str, Any]]] = Field(default_factory=list)

    def call(
        self,
        messages: Any,
        tools: Any = None,
        callbacks: Any = None,
        available_functions: Any = None,
        from_task: Any = None,
        from_agent: Any = None,
        response_model: Any = None,
    ) -> str:
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        self.sent.append([dict(m) for m in messages])
        text = messages[-1]["content"]
        asked = re.search(r"region (\d+) take", text.split("Relevant memories")[0])
        region = asked.group(1) if asked else "7"
        line = re.search(rf"^\[Mem:(\d+)\] .*region {region} take (\d+) days", text, re.M)
        cite = f"{line.group(2)} days [Mem:{line.group(1)}]" if line else "unknown"
        return f"Thought: found it.\nFinal Answer: {cite}"


def _memories(n: int) -> list[MemoryItem]:
    return [
        MemoryItem(
            id=f"policy-{i}",
            content=f"Policy {i}: refunds in region {i} take {i + 3} days to process. " * 3,
        )
        for i in range(n)
    ]


def _agent(llm: BaseLLM, **kwargs: Any) -> Agent:
    return Agent(
        role="Support agent",
        goal="Answer refund questions with citations",
        backstory="You work for a shop with many regions.",
        llm=llm,
        verbose=False,
        **kwargs,
    )


def _sent_tokens(messages: list[dict[str, Any]]) -> int:
    return _budget.count_chat(str(m.get("content") or "") for m in messages)


@pytest.mark.parametrize("with_tool", [False, True], ids=["plain", "with-tool"])
def test_crew_prompt_fits_and_citations_resolve(with_tool: bool) -> None:
    @tool("order_lookup")
    def order_lookup(order_id: str) -> str:
        """Look up an order by its id and return its refund status."""
        return f"order {order_id}: refund pending"

    llm = CitingLLM(model="citing-test", sent=[])
    agent = _agent(llm, tools=[order_lookup] if with_tool else [])
    task = Task(
        description="How long do refunds in region 7 take to process?",
        expected_output="The number of days, with a [Mem:N] citation.",
        agent=agent,
    )
    prompt = compile_for_agent(agent, task, _memories(40), max_tokens=700)
    assert task.description == "How long do refunds in region 7 take to process?"
    assert prompt.task.description.startswith(task.description)
    assert prompt.context in prompt.task.description
    assert 0 < len(prompt.ref_map) < 40
    for n, ref in prompt.ref_map.items():
        assert ref == f"policy-{n - 1}"
    assert prompt.scaffolding_tokens > 50
    assert prompt.prompt_tokens <= 700
    assert prompt.metadata["crewai_prompt_tokens"] == prompt.prompt_tokens

    out = Crew(agents=[agent], tasks=[prompt.task], verbose=False).kickoff()
    assert llm.sent
    for request in llm.sent:
        assert _sent_tokens(request) <= 700
    # The crew's request is the one compile_for_agent measured.
    assert _sent_tokens(llm.sent[0]) == prompt.prompt_tokens
    match = re.fullmatch(r"(\d+) days \[Mem:(\d+)\]", out.raw)
    assert match is not None, out.raw
    assert match.group(1) == "10"
    assert prompt.ref_map[int(match.group(2))] == "policy-7"


def test_scaffolding_is_measured_from_crewai_itself() -> None:
    llm = CitingLLM(model="citing-test", sent=[])
    agent = _agent(llm)
    short = Task(description="Say hi.", expected_output="A greeting.", agent=agent)
    long = Task(description="Say hi. " * 50, expected_output="A greeting.", agent=agent)
    a, messages = measure_prompt(agent, short)
    b, _ = measure_prompt(agent, long)
    assert a == _sent_tokens(messages)
    assert "Support agent" in messages[0]["content"]
    assert b - a == _budget.count("Say hi. " * 50) - _budget.count("Say hi.")
    assert llm.sent == []  # measuring never calls the agent's own model


def test_memory_switched_on_collides() -> None:
    llm = CitingLLM(model="citing-test", sent=[])
    with_memory = _agent(llm, memory=True)
    task = Task(description="Q?", expected_output="A.", agent=with_memory)
    with pytest.raises(MemoryCollisionError, match="memory=False") as err:
        compile_for_agent(with_memory, task, _memories(2), max_tokens=500)
    assert err.value.framework == "crewai"
    plain = _agent(llm)
    crew = Crew(
        agents=[plain],
        tasks=[Task(description="Q?", expected_output="A.", agent=plain)],
        memory=True,
    )
    with pytest.raises(MemoryCollisionError, match=r"Crew\.memory"):
        detect_memory_collision(crew)
    assert detect_memory_collision(crew, membrane_active=False) == ["Crew.memory=True"]
    quiet = Crew(agents=[plain], tasks=[Task(description="Q?", expected_output="A.", agent=plain)])
    assert detect_memory_collision(quiet) == []


def test_documents_become_memories() -> None:
    m = document_to_memory(
        {"id": "kb-1", "content": "Refunds take 5 days.", "metadata": {"priority": 1}, "score": 0.9}
    )
    assert (m.id, m.content, m.priority) == ("kb-1", "Refunds take 5 days.", 1)
    with pytest.raises(InvalidInputError):
        document_to_memory({"content": "no id"})
    llm = CitingLLM(model="citing-test", sent=[])
    agent = _agent(llm)
    task = Task(
        description="How long do refunds in region 0 take?", expected_output="Days.", agent=agent
    )
    prompt = compile_for_agent(
        agent,
        task,
        [{"id": "kb-1", "content": "Policy 0: refunds in region 0 take 3 days."}],
        max_tokens=2000,
    )
    assert prompt.ref_map == {1: "kb-1"}
