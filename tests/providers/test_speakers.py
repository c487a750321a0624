"""How a message's name reaches APIs without a speaker field: a '<name>: ' label."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given

from membrane.errors import InvalidInputError
from membrane.providers import (
    anthropic_request,
    bedrock_converse_request,
    gemini_request,
    openai_request,
    openai_responses_request,
)
from tests.providers.samples import FakeResult
from tests.strategies import conversations

META = {"memory_placement": "end", "model_id": None}


def _result(history: list[dict[str, Any]]) -> FakeResult:
    messages = [
        {"role": "system", "content": "Rules."},
        *history,
        {"role": "user", "content": "Q?"},
    ]
    return FakeResult(messages, dict(META))


def _texts(blocks: list[dict[str, Any]]) -> list[str]:
    return [b["text"] for b in blocks if "text" in b]


def test_a_named_assistant_call_without_text_gets_a_label_block_first() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    history = [
        {"role": "user", "content": "Go."},
        {"role": "assistant", "name": "planner", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "name": "f", "content": "done"},
    ]
    request = anthropic_request(_result(history))
    turn = request["messages"][1]["content"]
    assert turn[0] == {"type": "text", "text": "planner: "}
    assert turn[1]["type"] == "tool_use"
    # A tool message's name is its function's, not a speaker: the result is not labelled.
    result_block = request["messages"][2]["content"][0]
    assert result_block == {"type": "tool_result", "tool_use_id": "c1", "content": "done"}


def test_chat_completions_keeps_the_name_field_and_adds_no_label() -> None:
    history = [{"role": "user", "name": "ada", "content": "Hi."}]
    request = openai_request(_result(history), model="gpt-4.1")
    assert request["messages"][1] == {"role": "user", "name": "ada", "content": "Hi."}


@pytest.mark.parametrize("bad", ["", "   ", 7, ["ada"]])
def test_a_name_that_is_not_a_string_is_refused_naming_the_field(bad: object) -> None:
    result = _result([{"role": "user", "name": bad, "content": "Hi."}])
    for build in (anthropic_request, gemini_request, openai_responses_request):
        with pytest.raises(InvalidInputError, match=r"messages\[1\]\.name"):
            build(result)
    with pytest.raises(InvalidInputError, match=r"messages\[1\]\.name"):
        bedrock_converse_request(result)


def test_the_label_is_the_same_every_turn_so_the_prefix_stays_stable() -> None:
    history = [{"role": "user", "name": "ada", "content": "Hi."}]
    first = gemini_request(_result(history))
    later = gemini_request(_result([*history, {"role": "assistant", "content": "Hello."}]))
    assert first["contents"][0]["parts"][0] == later["contents"][0]["parts"][0]
    assert _texts(later["contents"][0]["parts"]) == ["ada: Hi."]


def test_a_developer_message_keeps_its_role_in_responses_input() -> None:
    messages = [{"role": "developer", "content": "Rules."}, {"role": "user", "content": "Q?"}]
    request = openai_responses_request(FakeResult(messages, dict(META)), model="gpt-5.1")
    assert request["input"][0] == {"role": "developer", "content": "Rules."}


@given(conversations())
def test_naming_speakers_only_adds_their_labels(history: list[dict[str, Any]]) -> None:
    """Named messages (with text) differ from unnamed ones by the label, and nothing else."""
    plain = [
        {k: v for k, v in m.items() if k != "name"} if m["role"] != "tool" else m for m in history
    ]
    named = [
        {**m, "name": "zed"}
        if m["role"] == "user" and isinstance(m.get("content"), str) and m["content"]
        else m
        for m in plain
    ]
    for build in (anthropic_request, gemini_request, openai_responses_request):
        expected = json.dumps(build(_result(plain)), sort_keys=True)
        actual = json.dumps(build(_result(named)), sort_keys=True)
        assert actual.replace("zed: ", "") == expected
        assert actual.count("zed: ") == sum(m is not p for m, p in zip(named, plain, strict=True))
