"""Compile results the SDK round trips send: real compiles, and one with five cache breakpoints."""

from __future__ import annotations

from typing import Any

from membrane import CompileResult, ContextCompiler, MemoryItem
from membrane.tokenizers import count_tokens
from tests.providers.samples import OVERHEAD, PNG_DATA_URL, FakeResult
from tests.providers.samples import message_text as sample_text

__all__ = ["HISTORY", "PNG_B64", "TOOLS", "compiled", "five_breakpoints"]

PNG_B64 = PNG_DATA_URL.split(",", 1)[1]

RULES = "\n".join(
    f"{i}. Answer as the support desk of Amber & Cobalt; rule {i} of the house style applies."
    for i in range(1, 161)
)

# Two named speakers, a tool call with its result, and an image part.
HISTORY: list[dict[str, Any]] = [
    {"role": "user", "name": "ada", "content": "Where is order A-1001?"},
    {"role": "user", "name": "bo", "content": "And can you check A-1002 as well?"},
    {
        "role": "assistant",
        "content": "Checking both.",
        "tool_calls": [
            {
                "id": "call_1001",
                "type": "function",
                "function": {"name": "order_status", "arguments": '{"order": "A-1001"}'},
            },
            {
                "id": "call_1002",
                "type": "function",
                "function": {"name": "order_status", "arguments": '{"order": "A-1002"}'},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "call_1001", "content": '{"status": "shipped"}'},
    {"role": "tool", "tool_call_id": "call_1002", "content": "delayed: weather"},
    {"role": "assistant", "content": "A-1001 shipped; A-1002 is delayed by weather."},
    {
        "role": "user",
        "name": "ada",
        "content": [
            {"type": "text", "text": "Here is the label on the box."},
            {"type": "image_url", "image_url": {"url": PNG_DATA_URL}},
        ],
    },
    {"role": "assistant", "content": "Thanks, the label matches A-1001."},
]


TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "order_status",
            "description": "Look up where an order is.",
            "parameters": {
                "type": "object",
                "properties": {"order": {"type": "string"}},
                "required": ["order"],
            },
        },
    }
]


def compiled(model_id: str) -> CompileResult:
    """A real compile: rules long enough for every model's cache minimum, history, memories."""
    compiler = ContextCompiler(max_tokens=60_000, model_id=model_id, core_content=RULES)
    return compiler.compile(
        memories=[
            MemoryItem(id="m1", content="Ada prefers replies in English."),
            MemoryItem(id="m2", content="Order A-1002 ships from the Lagos warehouse."),
        ],
        conversation_messages=HISTORY,
        user_message="When will A-1002 arrive?",
        tools=TOOLS,
    )


def five_breakpoints(model_id: str) -> FakeResult:
    """A result whose metadata lists five cached prefixes, each past every model's minimum."""
    system = {"role": "system", "content": RULES}
    turns: list[dict[str, Any]] = []
    for i in range(8):
        role = "user" if i % 2 == 0 else "assistant"
        turns.append({"role": role, "content": f"Turn {i}: " + "details of the order. " * 40})
    messages = [system, *turns, {"role": "user", "content": "Summarise, please."}]
    breakpoints = []
    total = 0
    for index, message in enumerate(messages[:-1]):
        total += count_tokens(sample_text(message)) + OVERHEAD
        if index in (0, 2, 4, 6, 8):
            breakpoints.append({"message_index": index, "tokens": total, "reason": "test"})
    metadata = {
        "memory_placement": "end",
        "model_id": model_id,
        "token_scale": 1.0,
        "cache_breakpoints": breakpoints,
    }
    return FakeResult(messages, metadata)
