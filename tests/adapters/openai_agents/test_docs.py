"""The page docs/frameworks/openai_agents.md and the example script run as written."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from agents import Agent, SQLiteSession
from agents.testing import ScriptedModel, assistant_message

from benchmarks._agent_scenario import RULES
from benchmarks.runtimes.openai_agents import memory_records
from tests.adapters._examples import run_example
from tests.adapters.openai_agents._sdk import own_loop

PAGE = Path(__file__).resolve().parents[3] / "docs" / "frameworks" / "openai_agents.md"


def test_the_pages_examples_run_in_order() -> None:
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 4
    model = ScriptedModel([[assistant_message("On 4 March 2027; Tomas signs it off [Mem:2].")]])
    namespace: dict[str, Any] = {
        "agent": Agent(name="release assistant", instructions=RULES, model=model),
        "session": SQLiteSession("docs"),
        "retrieve": lambda _data: memory_records(),
    }
    with own_loop():
        for i, block in enumerate(blocks):
            exec(compile(block, f"{PAGE.name} (example {i + 1})", "exec"), namespace)
    model.assert_complete()
    assert namespace["cited"] == ["team-2"]
    assert "budget_exceeded" in namespace["stop_when_over"].__code__.co_names
    line_count = len([line for line in blocks[0].splitlines() if line.strip()])
    assert line_count - 3 <= 5  # the integration, imports aside


def test_the_example_script_runs_and_checks_itself() -> None:
    out = run_example("frameworks/openai_agents_agent.py")
    assert "F-600 arrives on Friday; Ana handles it [Mem:1].  cited ['crm-ana']" in out
    assert "session keeps 24 items" in out
