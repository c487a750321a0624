"""The MCP server, spawned over stdio and driven by the official MCP client."""

from __future__ import annotations

import json
import os
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp", reason="mcp is not installed: pip install -e '.[mcp]'")

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from membrane.compiler import ContextCompiler
from membrane.records import MemoryItem
from tests.adapters import _budget
from tests.adapters._examples import LOOPBACK_SITE

ROOT = Path(__file__).resolve().parents[2]
MEMORIES = [
    {"id": "doc-381", "content": "The refund window is 30 days."},
    {"id": "doc-112", "content": "Refunds go back to the original card.", "priority": 2},
    *[
        {
            "id": f"ep-{i}",
            "content": f"Ticket {i}: a billing question about invoice {i}, settled by email.",
            "memory_type": "episodic",
        }
        for i in range(30)
    ],
]
HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "Look up my last order."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_7",
                "type": "function",
                "function": {"name": "find_order", "arguments": '{"customer": "c-9"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_7", "content": '{"order": "A-55", "total": 612}'},
    {"role": "assistant", "content": "Your last order is A-55, 612 dollars."},
]


def _server() -> StdioServerParameters:
    env = {
        "PYTHONPATH": os.pathsep.join(
            [str(LOOPBACK_SITE), str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]
        ),
        "OTEL_SDK_DISABLED": "true",
    }
    return StdioServerParameters(
        command=sys.executable, args=["-m", "membrane.adapters.mcp_server"], env=env
    )


def _payload(result: Any) -> dict[str, Any]:
    assert not result.isError if hasattr(result, "isError") else not result.is_error
    texts = [c.text for c in result.content if getattr(c, "type", "") == "text"]
    assert len(texts) == 1
    data: dict[str, Any] = json.loads(texts[0])
    return data


async def _session_calls() -> dict[str, Any]:
    with open(os.devnull, "w") as errlog:
        async with (
            stdio_client(_server(), errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            tools = await session.list_tools()
            compiled = await session.call_tool(
                "compile",
                {
                    "user_message": "How long do I have for a refund?",
                    "max_tokens": 400,
                    "core_content": "You are a support agent.",
                    "memories": MEMORIES,
                    "conversation_messages": HISTORY,
                },
            )
            quoted = await session.call_tool(
                "quote",
                {
                    "user_message": "How long do I have for a refund?",
                    "max_tokens": 400,
                    "price_per_1k_input_tokens": 2.5,
                    "memories": MEMORIES[:2],
                },
            )
            bad = await session.call_tool("compile", {"user_message": "hi", "max_tokens": "many"})
            return {"tools": tools, "compile": compiled, "quote": quoted, "bad": bad}


def test_mcp_round_trip_over_stdio() -> None:
    out = anyio.run(_session_calls)
    expected_major = "1" if os.environ.get("MEMBRANE_ADAPTER_ENV") == "crewai" else "2"
    assert version("mcp").split(".")[0] == expected_major

    tools = {t.name: t for t in out["tools"].tools}
    assert set(tools) == {"compile", "quote"}
    schema = (
        tools["compile"].inputSchema
        if hasattr(tools["compile"], "inputSchema")
        else (tools["compile"].input_schema)
    )
    assert set(schema["required"]) == {"user_message", "max_tokens"}
    assert schema["properties"]["max_tokens"]["type"] == "integer"
    assert "memories" in schema["properties"]

    data = _payload(out["compile"])
    # The same compile in this process gives the same bytes.
    local = ContextCompiler(400, core_content="You are a support agent.").compile(
        [MemoryItem(**m) for m in MEMORIES],
        "How long do I have for a refund?",
        conversation_messages=HISTORY,
    )
    assert data["messages"] == local.messages
    assert data["ref_map"] == {str(n): ref for n, ref in local.ref_map.items()}
    assert data["ref_map"]["1"] == "doc-381"
    for n, ref in data["ref_map"].items():
        assert MEMORIES[int(n) - 1]["id"] == ref
    # The tool call and its result come back over JSON exactly as sent.
    assert data["messages"][1:5] == HISTORY
    sent = _budget.count_chat(
        m["content"] if isinstance(m.get("content"), str) else "" for m in data["messages"]
    ) + _budget.count('find_order({"customer": "c-9"})')
    assert sent <= 400
    assert data["metadata"]["tokens_budget"] == 400
    assert data["metadata"]["segments_kept"] < len(MEMORIES)

    quote = _payload(out["quote"])
    assert quote["ref_map"] == {"1": "doc-381", "2": "doc-112"}
    assert quote["total_tokens"] == (
        quote["metadata"]["token_count"] + quote["metadata"]["message_framing_tokens"]
    )
    assert quote["estimated_cost_usd"] == round(quote["total_tokens"] / 1000 * 2.5, 10)

    bad = out["bad"]
    assert (bad.isError if hasattr(bad, "isError") else bad.is_error) is True
