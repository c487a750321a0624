"""Every example script runs and its own assertions hold (CrewAI's runs in its own env)."""

from __future__ import annotations

from pathlib import Path

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


def test_spawned_interpreters_refuse_connections_off_loopback(tmp_path: Path) -> None:
    script = tmp_path / "probe.py"
    script.write_text(
        "import socket\n"
        "s = socket.socket()\n"
        "try:\n"
        "    s.connect(('203.0.113.9', 9))\n"
        "except ConnectionRefusedError as e:\n"
        "    print('refused:', e)\n"
        "lo = socket.socket(); lo.bind(('127.0.0.1', 0)); lo.listen(1)\n"
        "c = socket.socket(); c.connect(lo.getsockname()); print('loopback ok')\n"
    )
    out = run_example(str(script))
    assert "refused: adapter tests may not connect to ('203.0.113.9', 9)" in out
    assert "loopback ok" in out
