"""examples/frameworks/langchain_agent.py runs in a fresh interpreter and checks itself."""

from __future__ import annotations

import pytest

pytest.importorskip("langchain.agents", reason="needs the extra: pip install -e '.[langchain]'")

from tests.adapters._examples import run_example


def test_the_langchain_agent_example_runs() -> None:
    out = run_example("frameworks/langchain_agent.py")
    assert "cited: ['pref-umbrella']" in out
    assert "stored messages: 16 | model calls: 8" in out
