"""examples/frameworks/llamaindex_agent.py runs in a fresh interpreter and checks itself."""

from __future__ import annotations

import pytest

pytest.importorskip(
    "llama_index.core",
    reason="llama-index-core is not installed: pip install -e '.[llamaindex]'",
)

from tests.adapters._examples import run_example


def test_the_agent_example_runs_within_its_budget() -> None:
    out = run_example("frameworks/llamaindex_agent.py")
    lines = out.splitlines()
    assert len([line for line in lines if line.endswith("-> [Mem:1] is team-2")]) == 6
    assert "memory keeps 24 messages" in lines
    largest = next(line for line in lines if line.startswith("largest request:"))
    assert int(largest.split()[2]) <= 3000
