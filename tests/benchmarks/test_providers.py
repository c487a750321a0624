"""The simulated provider caches against slow, obviously-correct references."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from benchmarks._providers import (
    ANTHROPIC_MIN_TOKENS,
    OPENAI_BLOCK,
    OPENAI_MIN_TOKENS,
    AnthropicMarkedCache,
    OpenAIPrefixCache,
    _message_ids,
    openai_to_anthropic,
)
from benchmarks._tokens import count_messages

WORDS = ["alpha", "beta", "gamma", "delta", "kestrel", "harbor", "quartz", "7Q-42", "\n", "."]


def _text(draw: Any, lo: int, hi: int) -> str:
    return " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=lo, max_size=hi)))


@st.composite
def conversations(draw: Any) -> list[list[dict[str, Any]]]:
    """Requests of a growing chat whose system prompt sometimes changes (memories in it)."""
    system = _text(draw, 300, 900)
    history: list[dict[str, Any]] = []
    requests = []
    for _ in range(draw(st.integers(1, 6))):
        sys_text = system + (_text(draw, 1, 40) if draw(st.booleans()) else "")
        user = {"role": "user", "content": _text(draw, 1, 200)}
        requests.append([{"role": "system", "content": sys_text}, *history, user])
        history += [user, {"role": "assistant", "content": _text(draw, 1, 300)}]
        if draw(st.booleans()) and history:
            history.pop(0)
    return requests


def _reference_cached(earlier: list[list[int]], ids: list[int]) -> int:
    best = 0
    for other in earlier:
        n = 0
        for a, b in zip(other, ids, strict=False):
            if a != b:
                break
            n += 1
        best = max(best, n)
    cached = (best // OPENAI_BLOCK) * OPENAI_BLOCK
    return cached if cached >= OPENAI_MIN_TOKENS else 0


@given(conversations())
def test_openai_cache_matches_brute_force_prefix_reference(requests: list[Any]) -> None:
    cache = OpenAIPrefixCache()
    earlier: list[list[int]] = []
    for messages in requests:
        ids = [i for m in messages for i in _message_ids(m)]
        bill = cache.bill(messages)
        assert bill.input_tokens == count_messages(messages)
        assert bill.cached_tokens == _reference_cached(earlier, ids)
        assert bill.cached_tokens % OPENAI_BLOCK == 0
        assert bill.cached_tokens == 0 or bill.cached_tokens >= OPENAI_MIN_TOKENS
        earlier.append(ids)


def test_openai_repeat_is_cached_in_whole_blocks_and_first_request_is_not() -> None:
    messages = [{"role": "system", "content": "word " * 3000}, {"role": "user", "content": "hi"}]
    cache = OpenAIPrefixCache()
    first = cache.bill(messages)
    second = cache.bill(messages)
    assert first.cached_tokens == 0
    assert second.cached_tokens == (second.input_tokens // OPENAI_BLOCK) * OPENAI_BLOCK
    short = [{"role": "user", "content": "word " * 500}]
    small = OpenAIPrefixCache()
    small.bill(short)
    assert small.bill(short).cached_tokens == 0  # under the 1,024-token minimum


def _marked(system: str, history: list[dict[str, Any]], user: str) -> dict[str, Any]:
    blocks = [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]
    msgs = [
        {"role": m["role"], "content": [{"type": "text", "text": m["content"]}]} for m in history
    ]
    if msgs:
        msgs[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    msgs.append({"role": "user", "content": [{"type": "text", "text": user}]})
    return {"system": blocks, "messages": msgs}


def test_anthropic_without_markers_never_caches() -> None:
    cache = AnthropicMarkedCache()
    request = openai_to_anthropic(
        [{"role": "system", "content": "rules " * 3000}, {"role": "user", "content": "q"}],
        mark_system=False,
        mark_history=False,
    )
    for _ in range(3):
        bill = cache.bill(request)
        assert (bill.read_tokens, bill.write_tokens) == (0, 0)
        assert bill.uncached_tokens == bill.input_tokens
        assert bill.cost() == bill.input_tokens


def test_anthropic_rolling_markers_write_once_then_read() -> None:
    system = "rules " * 2000
    cache = AnthropicMarkedCache()
    history: list[dict[str, Any]] = []
    bills = []
    for turn in range(4):
        bills.append(cache.bill(_marked(system, history, f"question {turn}")))
        history += [
            {"role": "user", "content": f"question {turn} " * 50},
            {"role": "assistant", "content": f"answer {turn} " * 80},
        ]
    assert bills[0].read_tokens == 0 and bills[0].write_tokens >= ANTHROPIC_MIN_TOKENS
    for previous, bill in itertools.pairwise(bills):
        # Each turn reads at least the prefix the previous turn marked, and writes only the rest.
        assert bill.read_tokens >= previous.read_tokens + previous.write_tokens - 1
        assert bill.read_tokens + bill.write_tokens + bill.uncached_tokens == bill.input_tokens
        assert bill.cost() < bill.input_tokens


def test_anthropic_marker_below_minimum_is_ignored_and_lookback_is_bounded() -> None:
    cache = AnthropicMarkedCache()
    tiny = _marked("short rules", [], "q")
    assert cache.bill(tiny).write_tokens == 0
    assert cache.bill(tiny).read_tokens == 0
    # 25 small blocks between the written prefix and the only marker: beyond the 20-block look-back.
    cache = AnthropicMarkedCache()
    base = {
        "system": [
            {"type": "text", "text": "rules " * 2000, "cache_control": {"type": "ephemeral"}}
        ],
        "messages": [],
    }
    cache.bill({**base, "messages": [{"role": "user", "content": "q"}]})
    far = [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": [{"type": "text", "text": f"m{i}"}],
        }
        for i in range(25)
    ]
    far[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    unmarked_system = {"system": [{"type": "text", "text": "rules " * 2000}], "messages": far}
    assert cache.bill(unmarked_system).read_tokens == 0


def test_openai_to_anthropic_pairs_tools_and_merges_roles() -> None:
    messages = [
        {"role": "system", "content": "rules"},
        {"role": "user", "content": "look it up"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "f", "arguments": '{"a": 1}'},
                },
                {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "one"},
        {"role": "tool", "tool_call_id": "c2", "content": "two"},
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "next"},
    ]
    out = openai_to_anthropic(messages, mark_system=True, mark_history=True)
    assert out["system"] == [
        {"type": "text", "text": "rules", "cache_control": {"type": "ephemeral"}}
    ]
    roles = [m["role"] for m in out["messages"]]
    assert roles == ["user", "assistant", "user", "assistant", "user"]
    assert [b["type"] for b in out["messages"][1]["content"]] == ["tool_use", "tool_use"]
    assert out["messages"][1]["content"][0]["input"] == {"a": 1}
    assert [b["tool_use_id"] for b in out["messages"][2]["content"]] == ["c1", "c2"]
    assert out["messages"][3]["content"][-1]["cache_control"] == {"type": "ephemeral"}
