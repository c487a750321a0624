"""Every example script runs and its own assertions hold (CrewAI's runs in its own env)."""

from __future__ import annotations

import pytest

from tests.adapters._examples import run_example


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("langchain_chain.py", "cited: ['kb-refunds']"),
        ("llamaindex_query_engine.py", "ref map: {1: 'handbook-0'"),
        ("haystack_pipeline.py", "See [Mem:1]. -> faq-returns"),
        ("mcp_client.py", "ref_map: {'1': 'doc-381', '2': 'doc-112'}"),
    ],
)
def test_example_runs_and_checks_itself(script: str, expected: str) -> None:
    assert expected in run_example(script)
