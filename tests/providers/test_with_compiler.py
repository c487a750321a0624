"""The builders on real compile results: markers land where the compiler says, turn after turn."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from membrane.compiler import ContextCompiler
from membrane.errors import ToolPairingError
from membrane.providers import (
    anthropic_request,
    bedrock_converse_request,
    gemini_request,
    openai_request,
)
from membrane.records import MemoryItem
from tests.strategies import conversations

CORE = "You are the support assistant for Amber & Cobalt outfitters. " * 60


def _strip(request: dict[str, Any]) -> list[dict[str, Any]]:
    """System and message blocks in order, without markers (they do not change the bytes cached)."""
    blocks = [dict(b) for b in request.get("system", [])]
    for msg in request["messages"]:
        blocks.extend({"role": msg["role"], **b} for b in msg["content"])
    for b in blocks:
        b.pop("cache_control", None)
    return blocks


def _marked(request: dict[str, Any]) -> list[dict[str, Any]]:
    blocks = list(request.get("system", []))
    for msg in request["messages"]:
        blocks.extend(msg["content"])
    return [b for b in blocks if "cache_control" in b]


def _history(turns: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(turns):
        out.append({"role": "user", "content": f"Question {i}: where is order A-{1000 + i}?"})
        out.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{i}",
                        "type": "function",
                        "function": {"name": "order_status", "arguments": f'{{"n": {i}}}'},
                    }
                ],
            }
        )
        out.append(
            {"role": "tool", "tool_call_id": f"call_{i}", "content": f"A-{1000 + i} shipped"}
        )
        out.append({"role": "assistant", "content": f"Order A-{1000 + i} has shipped."})
    return out


def test_markers_follow_the_compiler_breakpoints() -> None:
    compiler = ContextCompiler(
        max_tokens=2500, model_id="anthropic/claude-opus-5-5", core_content=CORE
    )
    result = compiler.compile(
        memories=[MemoryItem(id="m1", content="Customer prefers email.")],
        user_message="Any update?",
        conversation_messages=_history(40),
    )
    md = result.metadata
    request = anthropic_request(result)
    reasons = [bp["reason"] for bp in md["cache_breakpoints"]]
    assert "history" in reasons
    if "index" in reasons:
        # The core and the eviction index are separate, separately cached system blocks.
        core_chars = md["cache_breakpoints"][0]["chars"]
        assert request["system"][0]["text"] == result.messages[0]["content"][:core_chars]
        assert len(request["system"]) == 2
    expected = [bp for bp in md["cache_breakpoints"] if bp["tokens"] * md["token_scale"] >= 512]
    assert len(_marked(request)) == len(expected)
    # The last marker closes the history: the last block before the final user turn.
    assert "cache_control" in request["messages"][-2]["content"][-1]
    bedrock = bedrock_converse_request(result)
    points = sum("cachePoint" in b for m in bedrock["messages"] for b in m["content"])
    points += sum("cachePoint" in b for b in bedrock.get("system", []))
    assert points == len(expected)
    gemini_request(result)


@given(history=conversations(max_turns=10), extra=st.lists(st.sampled_from(["a", "b"]), max_size=3))
def test_next_turn_extends_the_previous_request(
    history: list[dict[str, Any]], extra: list[str]
) -> None:
    """With a roomy budget nothing is cut, so turn N's request is a prefix of turn N+1's."""
    compiler = ContextCompiler(
        max_tokens=200_000, model_id="anthropic/claude-opus-5-5", core_content=CORE
    )
    first = compiler.compile(user_message="First question?", conversation_messages=history)
    grown = [
        *history,
        {"role": "user", "content": "First question?"},
        {"role": "assistant", "content": "First answer. " + " ".join(extra)},
    ]
    second = compiler.compile(user_message="Second question?", conversation_messages=grown)
    a, b = _strip(anthropic_request(first)), _strip(anthropic_request(second))
    stable = a[:-1]  # everything but the final user turn
    assert b[: len(stable)] == stable


def _builders() -> dict[str, Any]:
    return {
        "openai": lambda r: openai_request(r, model="gpt-4o")["messages"],
        "anthropic": lambda r: anthropic_request(r)["messages"],
        "bedrock": lambda r: bedrock_converse_request(r)["messages"],
        "gemini": lambda r: gemini_request(r)["contents"],
    }


@pytest.mark.parametrize("builder", sorted(_builders()))
def test_an_edit_to_result_messages_is_what_the_builders_send(builder: str) -> None:
    build = _builders()[builder]
    compiler = ContextCompiler(max_tokens=2500, model_id="anthropic/claude-opus-5-5")
    result = compiler.compile([], user_message="Any update?", conversation_messages=_history(3))
    before = build(result)
    # The caller rewrites the question and a tool result.
    assert result.messages[-1]["content"].endswith("Any update?")
    result.messages[-1]["content"] = "Where is A-1002 now?"
    (tool,) = [m for m in result.messages if m.get("tool_call_id") == "call_0"]
    tool["content"] = "A-1000 is lost in transit"
    after = build(result)
    text = repr(after)
    assert "Where is A-1002 now?" in text and "Any update?" not in text
    assert "A-1000 is lost in transit" in text and "A-1000 shipped" not in text
    assert "A-1000 shipped" in repr(before)
    # A broken edit is refused: the builders read the list they are given, every time.
    result.messages.append({"role": "tool", "tool_call_id": "call_9", "content": "late"})
    with pytest.raises(ToolPairingError, match="call_9"):
        build(result)
