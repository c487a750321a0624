"""MCP: start Membrane's stdio server and call its compile tool with the official client.

Run: python examples/mcp_client.py   (needs membrane-aol[mcp])
"""

from __future__ import annotations

import json
import sys

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

SERVER = StdioServerParameters(command=sys.executable, args=["-m", "membrane.adapters.mcp_server"])


async def main() -> dict[str, object]:
    async with stdio_client(SERVER) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        names = [t.name for t in (await session.list_tools()).tools]
        print("tools:", names)
        result = await session.call_tool(
            "compile",
            {
                "user_message": "How long is the refund window?",
                "max_tokens": 300,
                "memories": [
                    {"id": "doc-381", "content": "The refund window is 30 days."},
                    {"id": "doc-112", "content": "Refunds go back to the original card."},
                ],
            },
        )
        text = next(c.text for c in result.content if c.type == "text")
        data: dict[str, object] = json.loads(text)
        return data


data = anyio.run(main)
print("ref_map:", data["ref_map"])
print("tokens:", data["metadata"]["token_count"])  # type: ignore[index]
assert data["ref_map"] == {"1": "doc-381", "2": "doc-112"}
