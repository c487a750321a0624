"""bedrock_converse_request."""

from __future__ import annotations

import base64
import itertools
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from membrane.errors import InvalidInputError, ToolPairingError
from membrane.providers import bedrock_converse_request
from tests.providers.samples import (
    PNG_DATA_URL,
    FakeResult,
    anthropic_blocks,
    no_cache_model,
    parallel_tools,
)
from tests.strategies import conversations, text


def _points(request: dict[str, Any]) -> list[dict[str, Any]]:
    blocks = list(request.get("system", []))
    for msg in request["messages"]:
        blocks.extend(msg["content"])
    return [b["cachePoint"] for b in blocks if "cachePoint" in b]


def _result(
    history: list[dict[str, Any]],
    breakpoints: list[dict[str, Any]] | None = None,
    model_id: str = "anthropic/claude-opus-5-5",
    system: str = "Rules.",
) -> FakeResult:
    messages = [{"role": "system", "content": system}, *history, {"role": "user", "content": "Q"}]
    metadata = {
        "memory_placement": "end",
        "model_id": model_id,
        "token_scale": 1.0,
        "cache_breakpoints": breakpoints or [],
    }
    return FakeResult(messages, metadata)


def test_cache_points_follow_each_qualifying_prefix() -> None:
    request = bedrock_converse_request(parallel_tools())
    system = request["system"]
    assert [list(b) for b in system] == [["text"], ["cachePoint"], ["text"], ["cachePoint"]]
    assert request["messages"][5]["content"][-1] == {"cachePoint": {"type": "default"}}
    assert len(_points(request)) == 3


def test_model_id_overrides_the_lookup_and_is_sent() -> None:
    # Opus 4.7 needs 4096 tokens: nothing in this sample qualifies.
    request = bedrock_converse_request(parallel_tools(), model_id="us.anthropic.claude-opus-4-7")
    assert request["modelId"] == "us.anthropic.claude-opus-4-7"
    assert _points(request) == []
    assert "modelId" not in bedrock_converse_request(parallel_tools())


def test_one_hour_ttl_and_limits() -> None:
    request = bedrock_converse_request(parallel_tools(), ttl="1h", max_cache_points=2)
    assert _points(request) == [{"type": "default", "ttl": "1h"}] * 2
    # The two longest prefixes are kept: the whole system prompt and the history.
    assert "cachePoint" in request["system"][-1]
    assert "cachePoint" not in request["system"][1]
    with pytest.raises(InvalidInputError):
        bedrock_converse_request(parallel_tools(), ttl="2h")
    with pytest.raises(InvalidInputError):
        bedrock_converse_request(parallel_tools(), max_cache_points=5)


def test_no_cache_points_without_caching_info() -> None:
    assert _points(bedrock_converse_request(no_cache_model())) == []


def test_tool_blocks_and_error_status() -> None:
    request = bedrock_converse_request(parallel_tools())
    assert request["messages"][1]["content"][1] == {
        "toolUse": {"toolUseId": "call_a1001", "name": "order_status", "input": {"order": "A-1001"}}
    }
    blocks = anthropic_blocks()
    blocks.messages[5]["content"][1] = {
        "type": "image_url",
        "image_url": {"url": "s3://bucket/photos/b77.jpg"},
    }
    request = bedrock_converse_request(blocks)
    assert request["messages"][2]["content"][0] == {
        "toolResult": {
            "toolUseId": "toolu_01",
            "content": [{"text": "order system timeout"}],
            "status": "error",
        }
    }
    assert request["messages"][4]["content"][1] == {
        "image": {"format": "jpeg", "source": {"s3Location": {"uri": "s3://bucket/photos/b77.jpg"}}}
    }


def test_images_are_sent_as_bytes() -> None:
    request = bedrock_converse_request(parallel_tools())
    image = request["messages"][4]["content"][1]["image"]
    assert image["format"] == "png"
    assert image["source"]["bytes"] == base64.b64decode(PNG_DATA_URL.split(",", 1)[1])


@pytest.mark.parametrize(
    ("url", "match"),
    [
        ("https://example.com/a.png", "cannot fetch"),
        ("data:image/bmp;base64,Qk0=", "png, jpeg, gif or webp"),
        ("data:image/png;base64,@@@", "not valid base64"),
        ("data:image/png,raw", "data URLs must look like"),
    ],
)
def test_bad_images(url: str, match: str) -> None:
    history = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}]
    with pytest.raises(InvalidInputError, match=match):
        bedrock_converse_request(_result(history))


def test_tool_ids_and_names_must_suit_bedrock() -> None:
    history = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call 1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "call 1", "content": "x"},
    ]
    with pytest.raises(InvalidInputError, match="tool ids"):
        bedrock_converse_request(_result(history))


def test_pairing_is_checked() -> None:
    with pytest.raises(ToolPairingError):
        bedrock_converse_request(_result([{"role": "tool", "tool_call_id": "x", "content": "y"}]))


@given(history=conversations(max_turns=12), core=text, extra=st.integers(0, 2000))
def test_any_valid_history_converts(history: list[dict[str, Any]], core: str, extra: int) -> None:
    bps = [{"message_index": 0, "tokens": 400 + extra, "reason": "core"}]
    if history:
        bps.append({"message_index": len(history), "tokens": 500 + extra, "reason": "history"})
    request = bedrock_converse_request(_result(history, bps, system=core))
    messages = request["messages"]
    assert all(a["role"] != b["role"] for a, b in itertools.pairwise(messages))
    qualified = [bp for bp in bps if bp["tokens"] >= 512]
    assert len(_points(request)) == len(qualified) <= 4
    for i, msg in enumerate(messages):
        uses = [b["toolUse"]["toolUseId"] for b in msg["content"] if "toolUse" in b]
        if uses:
            nxt = messages[i + 1]["content"]
            assert sorted(b["toolResult"]["toolUseId"] for b in nxt if "toolResult" in b) == sorted(
                uses
            )
    # A cache point never starts a message: it always follows the block it closes.
    assert all("cachePoint" not in m["content"][0] for m in messages)
