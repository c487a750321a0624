"""The PydanticAI example runs as a reader runs it, and the docs page's integration works."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "pydantic_ai", reason="pydantic-ai is not installed: pip install -e '.[pydantic-ai]'"
)

from pydantic_ai import Agent, RunContext

from benchmarks._agent_scenario import RULES, TURNS, check_request, scripted_answer
from benchmarks.runtimes.pydantic_ai import ScriptedModel, lookup_tool, memory_items
from tests.adapters._examples import ROOT, run_example

PAGE = ROOT / "docs" / "frameworks" / "pydantic_ai.md"


def test_the_example_runs_and_checks_itself() -> None:
    out = run_example(str(Path("frameworks") / "pydantic_ai_agent.py"))
    assert out.count("Ana signs off [Mem:2].  -> ['team-2']") == 5
    assert "stored messages: 20" in out


def test_the_pages_integration_is_what_it_says() -> None:
    block = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)[0]
    lines = [line for line in block.splitlines() if line.strip()]
    assert len(lines) <= 5  # imports, the capability, the agent

    def retrieve(ctx: RunContext[None]) -> list[Any]:
        return memory_items()

    scripted = ScriptedModel()
    given: dict[str, Any] = {
        "Agent": Agent,
        "model": scripted.model(),
        "RULES": RULES,
        "lookup": lookup_tool(),
        "retrieve": retrieve,
    }
    exec(block, given)
    agent, membrane = given["agent"], given["membrane"]
    history: list[Any] = []
    for turn in TURNS[:4]:
        result = agent.run_sync(turn.question, message_history=history)
        assert result.output == scripted_answer(turn)
        assert membrane.record(result).ref_map[2] == "team-2"
        history = result.all_messages()
    assert len(history) == 16
    assert all(check_request(r.messages, r.tools, r.turn).ok for r in scripted.seen)
