"""anthropic_request through the official anthropic client, against its own request types."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest

from membrane import ContextCompiler, MemoryItem, anthropic_request
from tests.providers.sdk.cases import PNG_B64, compiled, five_breakpoints
from tests.providers.sdk.routes import REPLY_TEXT, USAGE, anthropic_route
from tests.providers.sdk.sdk_calls import send_anthropic
from tests.providers.sdk.stub import Stub, running_stub


@pytest.fixture(scope="module")
def stub() -> Iterator[Stub]:
    with running_stub([anthropic_route()]) as server:
        yield server


@pytest.fixture
def client(stub: Stub) -> Iterator[anthropic.Anthropic]:
    stub.received.clear()
    with anthropic.Anthropic(base_url=stub.base_url, api_key="test", max_retries=0) as c:
        yield c
    assert stub.errors() == []


def _blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    out = list(body.get("system", []))
    for message in body["messages"]:
        out.extend(message["content"])
    return out


def _markers(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [b["cache_control"] for b in _blocks(body) if "cache_control" in b]


@pytest.mark.parametrize("ttl", ["5m", "1h"])
def test_tools_images_names_and_both_ttls(
    stub: Stub, client: anthropic.Anthropic, ttl: str
) -> None:
    result = compiled("anthropic/claude-opus-5-5")
    reply = send_anthropic(client, result, "claude-opus-5-5", ttl)
    assert reply.content[0].type == "text" and reply.content[0].text == REPLY_TEXT
    assert reply.usage.cache_read_input_tokens == USAGE["cached"]
    (body,) = stub.bodies("/v1/messages")
    assert body == {"model": "claude-opus-5-5", **anthropic_request(result, ttl, max_tokens=64)}
    expected = {"type": "ephemeral"} if ttl == "5m" else {"type": "ephemeral", "ttl": "1h"}
    assert _markers(body) and all(m == expected for m in _markers(body))
    blocks = _blocks(body)
    uses = [b for b in blocks if b["type"] == "tool_use"]
    results = [b for b in blocks if b["type"] == "tool_result"]
    assert [(u["id"], u["input"]) for u in uses] == [
        ("call_1001", {"order": "A-1001"}),
        ("call_1002", {"order": "A-1002"}),
    ]
    assert [r["tool_use_id"] for r in results] == ["call_1001", "call_1002"]
    images = [b for b in blocks if b["type"] == "image"]
    assert images == [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}}
    ]
    texts = [b["text"] for b in blocks if b["type"] == "text"]
    # No name field in the Messages API: each named message opens with its speaker.
    assert "ada: Where is order A-1001?" in texts
    assert "bo: And can you check A-1002 as well?" in texts
    assert "ada: Here is the label on the box." in texts
    # Roles alternate (two named user messages merged into one turn, kept apart by label).
    roles = [m["role"] for m in body["messages"]]
    assert all(a != b for a, b in itertools.pairwise(roles))


def test_the_result_model_is_emitted_and_equals_the_seed_form(
    stub: Stub, client: anthropic.Anthropic
) -> None:
    result = compiled("anthropic/claude-opus-5-5")
    request = anthropic_request(result)
    assert request["model"] == "claude-opus-5-5"
    # The seed's {"model": ..., **anthropic_request(result)} keeps working: same name.
    assert {"model": "claude-opus-5-5", **request}["model"] == "claude-opus-5-5"
    # A Claude id matched only by family names no model; a caller's model always wins.
    assert "model" not in anthropic_request(compiled("anthropic/claude-opus-7"))
    assert anthropic_request(result, model="claude-opus-5-5-20260922")["model"] == (
        "claude-opus-5-5-20260922"
    )


def test_a_request_at_four_breakpoints(stub: Stub, client: anthropic.Anthropic) -> None:
    result = five_breakpoints("anthropic/claude-sonnet-5-5")
    assert len(result.metadata["cache_breakpoints"]) == 5
    send_anthropic(client, result, "claude-sonnet-5-5", "1h")
    (body,) = stub.bodies("/v1/messages")
    assert len(_markers(body)) == 4  # the most Anthropic accepts; the longest prefixes win
    marked = [i for i, b in enumerate(_blocks(body)) if "cache_control" in b]
    assert marked == sorted(marked) and marked[0] > 0  # the shortest prefix is the one left out


def test_the_seed_example_sends_max_tokens_1024(stub: Stub, client: anthropic.Anthropic) -> None:
    # The seed's Anthropic example, as written there.
    compiler = ContextCompiler(
        max_tokens=8192,
        model_id="anthropic/claude-opus-5-5",
        core_content="You are a helpful assistant.",
    )
    result = compiler.compile(
        memories=[MemoryItem(id="1", content="User is in Lagos.")],
        user_message="What time zone am I in?",
    )
    request = {
        "model": "claude-opus-5-5",
        "max_tokens": 1024,
        **anthropic_request(result),
    }
    reply = client.messages.create(**request)
    assert reply.content[0].type == "text" and reply.content[0].text == REPLY_TEXT
    (body,) = stub.bodies("/v1/messages")
    assert body["max_tokens"] == 1024
    # The compile kept its default reserve for the budget; the request does not carry it.
    assert result.metadata["reserve_output_tokens"] == 16_384
    assert result.metadata["reserve_output_default"] is True


def test_a_bare_spread_without_max_tokens_is_refused_by_the_sdk(
    stub: Stub, client: anthropic.Anthropic
) -> None:
    result = compiled("anthropic/claude-opus-5-5")
    request = {"model": "claude-opus-5-5", **anthropic_request(result)}
    assert "max_tokens" not in request
    with pytest.raises(TypeError, match="max_tokens"):
        client.messages.create(**request)
    assert stub.bodies("/v1/messages") == []  # refused before anything was sent
