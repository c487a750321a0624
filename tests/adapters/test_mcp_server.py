"""The MCP server, spawned over stdio and driven by the official MCP client."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
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
from membrane.errors import ToolPairingError
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


# ------------------------------------------------ issue 35, point 17: errors reach the client


async def _call_compile(arguments: dict[str, Any]) -> Any:
    with open(os.devnull, "w") as errlog:
        async with (
            stdio_client(_server(), errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return await session.call_tool("compile", arguments)


def test_a_membrane_error_reaches_the_client_with_its_field() -> None:
    history = [
        {"role": "user", "content": "Look up my order."},
        {"role": "tool", "tool_call_id": "call_9", "content": "A-55"},
    ]
    result = anyio.run(
        _call_compile, {"user_message": "hi", "max_tokens": 400, "conversation_messages": history}
    )
    assert (result.isError if hasattr(result, "isError") else result.is_error) is True
    text = " ".join(c.text for c in result.content if getattr(c, "type", "") == "text")
    local = ContextCompiler(400)
    try:
        local.compile([], "hi", conversation_messages=history)
    except ToolPairingError as exc:
        expected = exc
    assert f"ToolPairingError (field {expected.field}): {expected}" in text
    assert "call_9" in text and expected.field == "conversation_messages[1]"


def _raw_server() -> subprocess.Popen[bytes]:
    params = _server()
    return subprocess.Popen(
        [params.command, *params.args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **(params.env or {})},
    )


def _exchange(proc: subprocess.Popen[bytes], line: bytes, timeout: float = 20.0) -> Any:
    """Send one line; the next JSON-RPC message the server writes (None after ``timeout``)."""
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(line + b"\n")
    proc.stdin.flush()
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            return None
    return json.loads(proc.stdout.readline())


_VERSION = "2025-11-25"


def test_a_malformed_request_gets_a_json_rpc_error() -> None:
    proc = _raw_server()
    try:
        hello = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": _VERSION,
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        }
        assert _exchange(proc, json.dumps(hello).encode())["id"] == 1
        assert proc.stdin is not None
        proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        no_method = _exchange(proc, b'{"jsonrpc": "2.0", "id": 5}')
        assert no_method["id"] == 5 and no_method["error"]["code"] == -32600
        listed = b'{"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": [1, 2]}'
        wrong_params = _exchange(proc, listed)
        assert wrong_params["id"] == 6 and wrong_params["error"]["code"] == -32600
        assert "'params'" in wrong_params["error"]["message"]
        surrogate = (
            b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "compile", '
            b'"arguments": {"user_message": "\\ud800", "max_tokens": 50}}}'
        )
        lone = _exchange(proc, surrogate)
        assert lone["id"] == 7 and lone["error"]["code"] == -32600
        assert "surrogate" in lone["error"]["message"]
        garbage = _exchange(proc, b"this is not json")
        assert garbage.get("id") is None and garbage["error"]["code"] == -32700
        # The server still serves: a well-formed call after the bad lines is answered.
        ping = _exchange(proc, b'{"jsonrpc": "2.0", "id": 8, "method": "ping"}')
        assert ping == {"jsonrpc": "2.0", "id": 8, "result": {}}
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
