"""anthropic_request and anthropic_system_blocks."""

from __future__ import annotations

import copy
import itertools
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from membrane.errors import InvalidInputError, ToolPairingError
from membrane.providers import anthropic_request, anthropic_system_blocks
from tests.providers.samples import FakeResult, anthropic_blocks, no_cache_model, parallel_tools
from tests.strategies import conversations, text


def _markers(request: dict[str, Any]) -> list[dict[str, Any]]:
    blocks = list(request.get("system", []))
    for msg in request["messages"]:
        blocks.extend(msg["content"])
    return [b for b in blocks if "cache_control" in b]


def _result(
    history: list[dict[str, Any]],
    *,
    model_id: str = "anthropic/claude-opus-5-5",
    breakpoints: list[dict[str, Any]] | None = None,
    system: str = "Rules.",
    scale: float = 1.0,
) -> FakeResult:
    messages = [{"role": "system", "content": system}, *history, {"role": "user", "content": "Q?"}]
    return FakeResult(
        messages,
        {
            "memory_placement": "end",
            "model_id": model_id,
            "token_scale": scale,
            "cache_breakpoints": breakpoints or [],
        },
    )


def test_system_blocks_mark_the_prefix_only() -> None:
    assert anthropic_system_blocks("Rules.", "Today.") == [
        {"type": "text", "text": "Rules.", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "Today."},
    ]
    assert anthropic_system_blocks("Rules.", "", ttl="1h") == [
        {"type": "text", "text": "Rules.", "cache_control": {"type": "ephemeral", "ttl": "1h"}}
    ]
    assert anthropic_system_blocks("", "Today.") == [{"type": "text", "text": "Today."}]
    assert anthropic_system_blocks("", "") == []


def test_system_is_split_where_the_core_ends() -> None:
    result = parallel_tools()
    request = anthropic_request(result)
    core_chars = result.metadata["cache_breakpoints"][0]["chars"]
    system_text = result.messages[0]["content"]
    assert [b["text"] for b in request["system"]] == [
        system_text[:core_chars],
        system_text[core_chars:],
    ]
    assert all(b["cache_control"] == {"type": "ephemeral"} for b in request["system"])


def test_markers_skip_prefixes_below_the_model_minimum() -> None:
    # Sonnet 4.6 caches from 1024 tokens; the core alone (718 * 1.11) is too short.
    request = anthropic_request(anthropic_blocks())
    assert "cache_control" not in request["system"][0]
    assert _markers(request) == [request["messages"][-2]["content"][-1]]


def test_token_scale_decides_whether_a_prefix_qualifies() -> None:
    bp = [{"message_index": 0, "tokens": 400, "reason": "core"}]
    # Opus 5.5 caches from 512 tokens: 400 counted tokens qualify only at scale >= 1.28.
    assert _markers(anthropic_request(_result([], breakpoints=bp, scale=1.0))) == []
    assert len(_markers(anthropic_request(_result([], breakpoints=bp, scale=1.51)))) == 1


def test_models_without_caching_info_get_no_markers() -> None:
    assert _markers(anthropic_request(no_cache_model())) == []
    bp = [{"message_index": 0, "tokens": 10**6, "reason": "core"}]
    assert _markers(anthropic_request(_result([], model_id="my-own-model", breakpoints=bp))) == []


def test_one_hour_ttl() -> None:
    request = anthropic_request(parallel_tools(), ttl="1h")
    assert {json.dumps(m["cache_control"]) for m in _markers(request)} == {
        json.dumps({"type": "ephemeral", "ttl": "1h"})
    }


@pytest.mark.parametrize("ttl", ["10m", "", "5M", None])
def test_invalid_ttl(ttl: Any) -> None:
    with pytest.raises(InvalidInputError) as err:
        anthropic_request(parallel_tools(), ttl=ttl)
    assert err.value.field == "ttl"


@pytest.mark.parametrize("placement", ["system", None])
def test_needs_end_placement(placement: str | None) -> None:
    result = parallel_tools()
    result.metadata["memory_placement"] = placement
    with pytest.raises(InvalidInputError, match="memory_placement='end'"):
        anthropic_request(result)


def test_at_most_four_markers_keeping_the_longest_prefixes() -> None:
    history = []
    for i in range(6):
        history += [
            {"role": "user", "content": f"question {i}"},
            {"role": "assistant", "content": f"answer {i}"},
        ]
    bps = [{"message_index": 0, "tokens": 600, "reason": "core"}] + [
        {"message_index": 2 * i + 2, "tokens": 700 + 100 * i, "reason": "history"} for i in range(6)
    ]
    request = anthropic_request(_result(history, breakpoints=bps))
    marked = [
        m["content"][-1]["text"] for m in request["messages"] if "cache_control" in m["content"][-1]
    ]
    assert marked == ["answer 2", "answer 3", "answer 4", "answer 5"]
    assert "cache_control" not in request["system"][0]
    fewer = anthropic_request(_result(history, breakpoints=bps), max_breakpoints=1)
    assert [b["text"] for b in _markers(fewer)] == ["answer 5"]


def test_tool_calls_and_results_become_blocks() -> None:
    request = anthropic_request(parallel_tools())
    assistant = request["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"][1:] == [
        {
            "type": "tool_use",
            "id": "call_a1001",
            "name": "order_status",
            "input": {"order": "A-1001"},
        },
        {
            "type": "tool_use",
            "id": "call_a1002",
            "name": "order_status",
            "input": {"order": "A-1002"},
        },
    ]
    results = request["messages"][2]
    assert results["role"] == "user"
    assert [b["tool_use_id"] for b in results["content"]] == ["call_a1001", "call_a1002"]
    assert all(b["type"] == "tool_result" for b in results["content"])


def test_images_become_image_blocks() -> None:
    request = anthropic_request(parallel_tools())
    image = request["messages"][4]["content"][1]
    assert image["type"] == "image"
    assert image["source"]["type"] == "base64"
    assert image["source"]["media_type"] == "image/png"
    url_history = [
        {
            "role": "user",
            "content": [{"type": "image_url", "image_url": {"url": "https://x.test/a.png"}}],
        }
    ]
    request = anthropic_request(_result(url_history))
    assert request["messages"][0]["content"][0] == {
        "type": "image",
        "source": {"type": "url", "url": "https://x.test/a.png"},
    }


def test_anthropic_blocks_pass_through_without_their_own_markers() -> None:
    result = anthropic_blocks()
    before = copy.deepcopy(result.messages)
    request = anthropic_request(result)
    tool_use = request["messages"][1]["content"][1]
    assert tool_use == {
        "type": "tool_use",
        "id": "toolu_01",
        "name": "refund_check",
        "input": {"order": "B-77"},
    }
    assert request["messages"][2]["content"][0]["is_error"] is True
    assert result.messages == before  # the compile result is never modified


def test_tool_result_and_following_user_text_merge_into_one_turn() -> None:
    history = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "done"},
    ]
    request = anthropic_request(_result(history))
    roles = [m["role"] for m in request["messages"]]
    assert roles == ["user", "assistant", "user"]
    assert [b["type"] for b in request["messages"][-1]["content"]] == ["tool_result", "text"]


def test_orphan_tool_result_raises() -> None:
    history = [{"role": "tool", "tool_call_id": "nope", "content": "x"}]
    with pytest.raises(ToolPairingError) as err:
        anthropic_request(_result(history))
    assert err.value.tool_call_id == "nope"


def test_unanswered_call_raises() -> None:
    history = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c9", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        }
    ]
    with pytest.raises(ToolPairingError, match="c9"):
        anthropic_request(_result(history))


def test_bad_arguments_json_raises() -> None:
    history = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{oops"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "x"},
    ]
    with pytest.raises(InvalidInputError, match="not valid JSON"):
        anthropic_request(_result(history))


def test_system_message_inside_history_raises() -> None:
    with pytest.raises(InvalidInputError, match="system message after"):
        anthropic_request(
            _result([{"role": "user", "content": "a"}, {"role": "system", "content": "b"}])
        )


@pytest.mark.parametrize(
    "bad",
    [
        [{"message_index": 99, "tokens": 1}],
        [{"message_index": 0, "tokens": -1}],
        [{"message_index": 0, "tokens": 5, "chars": 10**6}],
        ["core"],
    ],
)
def test_malformed_breakpoints_raise(bad: list[Any]) -> None:
    with pytest.raises(InvalidInputError):
        anthropic_request(_result([], breakpoints=bad))


def _texts(value: Any) -> list[str]:
    if isinstance(value, dict):
        out = [value["text"]] if isinstance(value.get("text"), str) else []
        if isinstance(value.get("content"), str):
            out.append(value["content"])
        for key, item in value.items():
            if key not in ("text",) and isinstance(item, (dict, list)):
                out.extend(_texts(item))
        return out
    if isinstance(value, list):
        return [t for item in value for t in _texts(item)]
    return []


@given(history=conversations(max_turns=12), core=text, extra=st.integers(0, 3000))
def test_any_valid_history_converts_to_a_valid_request(
    history: list[dict[str, Any]], core: str, extra: int
) -> None:
    bps = [{"message_index": 0, "tokens": 300 + extra, "reason": "core"}]
    if history:
        bps.append({"message_index": len(history), "tokens": 900 + extra, "reason": "history"})
    result = _result(history, system=core, breakpoints=bps, scale=1.51)
    request = anthropic_request(result)

    messages = request["messages"]
    assert messages[0]["role"] == "user" or history[0]["role"] == "assistant"
    assert all(a["role"] != b["role"] for a, b in itertools.pairwise(messages))
    assert all(m["content"] for m in messages)
    # Every tool_use is answered in the very next (user) turn, and only there.
    for i, msg in enumerate(messages):
        uses = [b["id"] for b in msg["content"] if b["type"] == "tool_use"]
        if uses:
            answered = [
                b["tool_use_id"] for b in messages[i + 1]["content"] if b["type"] == "tool_result"
            ]
            assert sorted(answered) == sorted(uses)
        results = [b for b in msg["content"] if b["type"] == "tool_result"]
        if results:
            # Anthropic wants the results first in their turn.
            assert msg["content"][: len(results)] == results
    markers = _markers(request)
    qualified = [bp for bp in bps if bp["tokens"] * 1.51 >= 512]
    assert len(markers) == len(qualified) <= 4
    # No text is lost or reordered.
    assert "".join(_texts(request)) == "".join(_texts(result.messages))
