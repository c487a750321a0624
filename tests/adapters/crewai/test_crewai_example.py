"""The CrewAI example runs in the CrewAI environment and its own assertions hold."""

from __future__ import annotations

from tests.adapters._examples import run_example


def test_crewai_example_runs_and_checks_itself() -> None:
    out = run_example("crewai_agent.py")
    assert "-> policy-4" in out
    assert "CrewAI scaffolding:" in out
