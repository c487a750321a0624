"""OpenAI Responses API items as history: read as chat, cut as units, written back verbatim."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from membrane import (
    ContextCompiler,
    anthropic_request,
    openai_request,
    openai_responses_request,
)
from membrane.errors import InvalidInputError
from membrane.messages import ITEMS_KEY, message_text, read_history
from membrane.tokenizers import count_tokens
from tests.strategies import responses_histories, text

REASONING = {
    "type": "reasoning",
    "id": "rs_1",
    "summary": [{"type": "summary_text", "text": "Look the weather up."}],
    "encrypted_content": "gAAAAABp" + "Q2xlYXIgc2tpZXM" * 30,
}
ITEMS: list[dict[str, Any]] = [
    {"role": "user", "content": "What is the weather in Paris and Lagos?"},
    REASONING,
    {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_paris",
        "name": "weather",
        "arguments": '{"city": "Paris"}',
        "status": "completed",
    },
    {
        "type": "function_call",
        "id": "fc_2",
        "call_id": "call_lagos",
        "name": "weather",
        "arguments": '{"city": "Lagos"}',
        "status": "completed",
    },
    {"type": "function_call_output", "call_id": "call_paris", "output": "18C, sunny"},
    {
        "type": "function_call_output",
        "call_id": "call_lagos",
        "output": [{"type": "input_text", "text": "31C, humid"}],
    },
    {
        "type": "web_search_call",
        "id": "ws_1",
        "status": "completed",
        "action": {"type": "search", "query": "Lagos forecast"},
    },
    {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Paris 18C, Lagos 31C.", "annotations": []}],
    },
    {
        "type": "custom_tool_call",
        "id": "ctc_1",
        "call_id": "call_sh",
        "name": "shell",
        "input": "ls -la",
    },
    {"type": "custom_tool_call_output", "call_id": "call_sh", "output": "total 0"},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Thanks!"}]},
]


def _history_items(request: dict[str, Any]) -> list[Any]:
    """The request's input between Membrane's system message and its final user message."""
    return request["input"][1:-1]


def test_items_go_back_unchanged_when_nothing_is_cut() -> None:
    given = copy.deepcopy(ITEMS)
    compiler = ContextCompiler(8000, model_id="openai/gpt-5.1", core_content="Be brief.")
    result = compiler.compile([], "And tomorrow?", conversation_messages=given)
    assert result.metadata["history_messages_dropped"] == 0
    request = openai_responses_request(result)
    sent = _history_items(request)
    assert sent == ITEMS
    assert json.dumps(sent) == json.dumps(ITEMS)  # byte for byte, key order included
    assert given == ITEMS  # the caller's items are not touched
    assert request["input"][-1]["content"].endswith("And tomorrow?")


def test_the_chat_form_groups_reasoning_with_its_call_and_parallel_calls_together() -> None:
    read = read_history(ITEMS)
    messages = read.messages
    assert isinstance(messages, list)
    roles = [m["role"] for m in messages]
    assert roles == ["user", "assistant", "tool", "tool", "assistant", "assistant", "tool", "user"]
    calls = messages[1]
    assert [c["id"] for c in calls["tool_calls"]] == ["call_paris", "call_lagos"]
    assert calls[ITEMS_KEY] == ITEMS[1:4]  # the reasoning rides with the calls it led to
    assert messages[4][ITEMS_KEY] == ITEMS[6:8]  # the hosted search with the answer
    assert messages[3]["content"] == [{"type": "text", "text": "31C, humid"}]
    assert read.spans == ((0, 1), (1, 4), (4, 5), (5, 6), (6, 8), (8, 9), (9, 10), (10, 11))
    assert read.fold_counts([1] * 11) == [1, 3, 1, 1, 2, 1, 1, 1]
    assert read.fold_counts([1, None, *[1] * 9])[1] is None


def test_opaque_items_count_as_their_json_text() -> None:
    message = read_history(ITEMS).messages[1]  # type: ignore[index]
    reasoning_json = json.dumps(REASONING, ensure_ascii=False, sort_keys=True)
    assert reasoning_json in message_text(message)
    compiler = ContextCompiler(8000, model_id="openai/gpt-5.1")
    with_it = compiler.compile([], "Q", conversation_messages=ITEMS, conversation_id="a")
    without = [i for i in ITEMS if i is not REASONING]
    plain = compiler.compile([], "Q", conversation_messages=without, conversation_id="b")
    added = with_it.metadata["token_count"] - plain.metadata["token_count"]
    # Its JSON, and at most one more token where the newline joins it to the calls' text.
    assert count_tokens(reasoning_json) <= added <= count_tokens(reasoning_json) + 1
    # The eviction index and recall read only words someone said: no ciphertext there.
    assert "Q2xlYXIgc2tpZXM" not in json.dumps(with_it.messages[0])


def test_a_reasoning_item_is_never_cut_from_its_call() -> None:
    history = []
    for turn in range(30):
        items = copy.deepcopy(ITEMS[1:6])
        for item in items:
            for key in ("call_id", "id"):
                if key in item:
                    item[key] = f"{item[key]}_{turn}"
        history += [{"role": "user", "content": f"Turn {turn}: weather please?"}, *items]
    compiler = ContextCompiler(1500, model_id="openai/gpt-5.1")
    result = compiler.compile([], "Summarise.", conversation_messages=history)
    assert result.metadata["history_messages_dropped"] > 0
    sent = _history_items(openai_responses_request(result))
    assert sent == history[len(history) - len(sent) :]  # a suffix, items unchanged
    assert sent[0]["role"] == "user"  # cut before a user turn, never inside a call's unit


@given(history=responses_histories(), budget=st.integers(300, 5000), question=text)
def test_cuts_keep_a_suffix_of_whole_units_within_the_budget(
    history: list[dict[str, Any]], budget: int, question: str
) -> None:
    compiler = ContextCompiler(budget, model_id="openai/gpt-5.1", core_content="Be brief.")
    result = compiler.compile([], question, conversation_messages=history)
    md = result.metadata
    sent = _history_items(openai_responses_request(result))
    if not history:
        sent = []
    assert sent == history[len(history) - len(sent) :]
    kinds = [item.get("type") for item in sent]
    calls = {i["call_id"] for i in sent if i.get("type") == "function_call"}
    outputs = {i["call_id"] for i in sent if i.get("type") == "function_call_output"}
    assert calls == outputs  # no call without its output, no output without its call
    for k, kind in enumerate(kinds):
        if kind == "reasoning":  # what a reasoning item leads to is kept with it
            assert k + 1 < len(sent)
    counted = sum(count_tokens(message_text(m)) + 3 for m in result.messages)
    assert counted == md["token_count"] + md["message_framing_tokens"]
    if not md["budget_exceeded"]:
        assert counted <= budget


def test_other_builders_send_the_chat_form_or_refuse_what_it_cannot_carry() -> None:
    hosted = {"web_search_call", "custom_tool_call", "custom_tool_call_output"}
    portable = [i for i in ITEMS if i.get("type") not in hosted]
    compiler = ContextCompiler(8000, model_id="anthropic/claude-opus-5-5")
    result = compiler.compile([], "And tomorrow?", conversation_messages=portable)
    body = anthropic_request(result, max_tokens=64)
    blocks = [b for m in body["messages"] for b in m["content"]]
    assert [b["id"] for b in blocks if b["type"] == "tool_use"] == ["call_paris", "call_lagos"]
    assert "encrypted_content" not in json.dumps(body)  # OpenAI's reasoning stays out
    chat = openai_request(result, model="gpt-4.1")
    assert all(ITEMS_KEY not in m for m in chat["messages"])
    with_hosted = compiler.compile([], "Q", conversation_messages=ITEMS, conversation_id="h")
    with pytest.raises(InvalidInputError, match="openai_responses_request") as caught:
        anthropic_request(with_hosted, max_tokens=64)
    assert caught.value.field is not None and caught.value.field.startswith("messages[")
    # A file has no chat form either; a chat message carried behind a reasoning item does.
    file_part = {"type": "input_file", "file_id": "file-1"}
    mixed = [
        {"type": "message", "role": "user", "content": [file_part]},
        REASONING,
        {"role": "assistant", "content": [{"type": "text", "text": "Read it."}]},
    ]
    with_file = compiler.compile([], "Q", conversation_messages=mixed, conversation_id="f")
    with pytest.raises(InvalidInputError, match="'input_file'"):
        anthropic_request(with_file, max_tokens=64)
    body = anthropic_request(compiler.compile([], "Q", conversation_messages=mixed[1:]))
    (block,) = body["messages"][0]["content"]  # the chat message, its reasoning left out
    assert block["type"] == "text" and block["text"] == "Read it."


@pytest.mark.parametrize("name", ["previous_response_id", "conversation"])
def test_server_held_state_is_refused(name: str) -> None:
    result = ContextCompiler(4000).compile([], "Hi", conversation_messages=ITEMS)
    with pytest.raises(InvalidInputError, match="statelessly") as caught:
        openai_responses_request(result, model="gpt-5.1", **{name: "resp_123"})
    assert caught.value.field == name
    assert openai_responses_request(result, model="gpt-5.1", store=False)["store"] is False


@given(history=responses_histories(max_turns=10), budget=st.integers(800, 4000))
def test_the_sent_prefix_is_stable_while_the_cut_stays(
    history: list[dict[str, Any]], budget: int
) -> None:
    compiler = ContextCompiler(budget, model_id="openai/gpt-5.1", core_content="Be brief.")
    starts = [i for i, item in enumerate(history) if item.get("role") == "user"]
    before: tuple[int, list[Any]] | None = None
    for stop in [*starts[1:], len(history)]:
        result = compiler.compile([], "Next?", conversation_messages=history[:stop])
        sent = openai_responses_request(result)["input"][:-1]  # all but this turn's question
        dropped = result.metadata["history_messages_dropped"]
        if before is not None and before[0] == dropped:
            assert sent[: len(before[1])] == before[1]  # appended to, never rewritten
        before = (dropped, sent)
