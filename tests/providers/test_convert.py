"""The shared reading of compiled messages: parts, cuts, pairing, marker anchors."""

from __future__ import annotations

from typing import Any

import pytest

from membrane import CompileResult, ContextCompiler
from membrane.errors import InvalidInputError, ToolPairingError
from membrane.messages import Image, Opaque, Text, ToolCall, ToolResult
from membrane.providers._convert import (
    Breakpoint,
    choose_anchors,
    read_breakpoints,
    read_messages,
)
from membrane.report import ResultView


def _call(call_id: str, args: Any = "{}") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "f", "arguments": args}}


def test_string_content_is_cut_at_breakpoint_chars() -> None:
    msgs = read_messages([{"role": "system", "content": "core|index|rest"}], {0: [5, 11, 5, 0]})
    assert msgs[0].parts == (Text("core|"), Text("index|"), Text("rest"))
    assert dict(msgs[0].cuts) == {5: 0, 11: 1}
    whole = read_messages([{"role": "system", "content": "abc"}], {0: [3]})
    assert whole[0].parts == (Text("abc"),)
    assert dict(whole[0].cuts) == {3: 0}


def test_cut_past_the_end_raises() -> None:
    with pytest.raises(InvalidInputError, match="past the end"):
        read_messages([{"role": "system", "content": "abc"}], {0: [4]})


def test_parts_of_each_kind() -> None:
    msgs = read_messages(
        [
            {"role": "developer", "content": "rules"},
            {
                "role": "user",
                "content": [
                    "plain",
                    {"type": "text", "text": ""},
                    {"type": "image_url", "image_url": "https://x.test/a.png"},
                    {"type": "document", "source": {}},
                ],
            },
            {"role": "assistant", "content": "", "tool_calls": [_call("c1", {"k": 1})]},
            {"role": "tool", "tool_call_id": "c1", "content": None},
        ]
    )
    assert msgs[0].role == "system"
    assert msgs[1].parts[:2] == (Text("plain"), Image("https://x.test/a.png"))
    assert isinstance(msgs[1].parts[2], Opaque)
    assert msgs[2].parts == (ToolCall("c1", "f", {"k": 1}),)
    assert msgs[3].role == "user"
    assert msgs[3].parts == (ToolResult("c1", "f", ""),)


@pytest.mark.parametrize(
    ("messages", "error", "match"),
    [
        (
            [{"role": "tool", "tool_call_id": "x", "content": "r"}],
            ToolPairingError,
            "no earlier assistant message",
        ),
        (
            [
                {"role": "assistant", "content": None, "tool_calls": [_call("a")]},
                {"role": "tool", "tool_call_id": "a", "content": "1"},
                {"role": "tool", "tool_call_id": "a", "content": "2"},
            ],
            ToolPairingError,
            "answered already",
        ),
        (
            [{"role": "assistant", "content": None, "tool_calls": [_call("a"), _call("a")]}],
            ToolPairingError,
            "used twice",
        ),
        (
            [{"role": "assistant", "content": None, "tool_calls": [_call("a")]}],
            ToolPairingError,
            "no result",
        ),
        (
            [{"role": "assistant", "content": None, "tool_calls": [_call("a", "[1, 2]")]}],
            InvalidInputError,
            "JSON object",
        ),
        ([{"role": "user", "content": 5}], InvalidInputError, "content must be"),
        ([{"role": "robot", "content": "x"}], InvalidInputError, "role 'robot'"),
        (
            [{"role": "user", "content": "x", "tool_calls": [_call("a")]}],
            InvalidInputError,
            "assistant",
        ),
        (["hello"], InvalidInputError, "must be a dict"),
    ],
)
def test_invalid_messages(messages: list[Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        read_messages(messages)


def test_anthropic_tool_blocks_pair_with_each_other() -> None:
    msgs = read_messages(
        [
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "g", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t",
                        "content": [{"type": "text", "text": "ok"}],
                    }
                ],
            },
        ]
    )
    result = msgs[1].parts[0]
    assert isinstance(result, ToolResult)
    assert (result.name, result.content) == ("g", (Text("ok", raw={"type": "text", "text": "ok"}),))


def _by_hand(metadata: dict[str, Any]) -> CompileResult:
    return CompileResult([], {}, {}, metadata)


def test_read_breakpoints_checks_fields() -> None:
    md = {"cache_breakpoints": [{"message_index": 1, "tokens": 9, "reason": "history"}]}
    assert read_breakpoints(_by_hand(md), 2) == [Breakpoint(1, 9, "history")]
    assert read_breakpoints(_by_hand({}), 0) == []
    with pytest.raises(InvalidInputError):
        read_breakpoints(_by_hand({"cache_breakpoints": [{"message_index": True, "tokens": 1}]}), 2)
    with pytest.raises(InvalidInputError):
        read_breakpoints(_by_hand({"cache_breakpoints": "core"}), 2)


def test_a_compiled_result_is_read_through_its_typed_report() -> None:
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    result = ContextCompiler(4000, model_id="claude-sonnet-4-5").compile(
        [], "Next?", conversation_messages=history
    )
    view = ResultView.of(result)
    assert view.report is result.report
    assert view.cache_breakpoints == result.metadata["cache_breakpoints"]
    assert read_breakpoints(result, len(result.messages)) == read_breakpoints(
        _by_hand(dict(result.metadata)), len(result.messages)
    )


def test_anchors_dedupe_and_keep_the_longest() -> None:
    msgs = read_messages(
        [{"role": "system", "content": "coreindex"}, {"role": "user", "content": "hi"}],
        {0: [4]},
    )
    bps = [
        Breakpoint(0, 100, "core", 4),
        Breakpoint(0, 200, "index"),
        Breakpoint(0, 200, "index"),
        Breakpoint(1, 300, "history"),
    ]
    assert choose_anchors(bps, msgs, token_scale=1.0, min_tokens=0, limit=4) == [
        (0, 0),
        (0, 1),
        (1, 0),
    ]
    assert choose_anchors(bps, msgs, token_scale=1.0, min_tokens=150, limit=4) == [(0, 1), (1, 0)]
    assert choose_anchors(bps, msgs, token_scale=2.0, min_tokens=250, limit=4) == [(0, 1), (1, 0)]
    assert choose_anchors(bps, msgs, token_scale=1.0, min_tokens=0, limit=1) == [(1, 0)]
    assert choose_anchors(bps, msgs, token_scale=1.0, min_tokens=0, limit=0) == []
