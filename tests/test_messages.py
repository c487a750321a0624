"""Message text, validation and tool units (OpenAI and Anthropic shapes, parallel calls)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from membrane.compiler import ContextCompiler
from membrane.errors import InvalidInputError, ToolPairingError
from membrane.messages import (
    IMAGE_PART_TEXT,
    HistoryUnit,
    group_units,
    message_text,
    normalize_messages,
    tool_call_ids,
    validate_messages,
)
from membrane.providers import anthropic_request, openai_request
from tests.strategies import conversations


def _openai_call(*ids: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": cid,
                "type": "function",
                "function": {"name": "weather", "arguments": json.dumps({"city": cid})},
            }
            for cid in ids
        ],
    }


def _openai_result(cid: str, text: str = "sunny") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": cid, "content": text}


def _anthropic_call(*ids: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": "Checking."}]
        + [{"type": "tool_use", "id": i, "name": "weather", "input": {"city": i}} for i in ids],
    }


def _anthropic_results(*ids: str) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": i, "content": "rain"} for i in ids],
    }


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def _assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


# ---------------------------------------------------------------- message_text


def test_text_of_plain_and_empty_messages() -> None:
    assert message_text(_user("Hello there")) == "Hello there"
    assert message_text({"role": "assistant", "content": None}) == ""
    assert message_text({"role": "assistant"}) == ""


def test_text_of_content_parts() -> None:
    msg = {
        "role": "user",
        "content": [
            {"type": "text", "text": "Look at this"},
            {"type": "image_url", "image_url": {"url": "https://example.invalid/a.png"}},
            {"type": "input_text", "text": "and this"},
            {"type": "mystery"},
            "bare string",
        ],
    }
    assert message_text(msg) == f"Look at this\n{IMAGE_PART_TEXT}\nand this\nbare string"


def test_text_of_openai_tool_calls() -> None:
    msg = _openai_call("c1", "c2")
    assert message_text(msg) == 'weather({"city": "c1"})\nweather({"city": "c2"})'
    with_text = {**msg, "content": "Let me look."}
    assert message_text(with_text).startswith("Let me look.\nweather(")
    assert message_text(_openai_result("c1", "22 degrees")) == "22 degrees"


def test_text_of_anthropic_blocks() -> None:
    call = {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "t1", "name": "find", "input": {"b": 2, "a": "é"}},
        ],
    }
    # Arguments are rendered as JSON with sorted keys, non-ASCII kept.
    assert message_text(call) == 'find({"a": "é", "b": 2})'
    nested = {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "t1",
                "content": [{"type": "text", "text": "found 2"}, {"type": "image"}],
            },
            {"type": "text", "text": "thanks"},
        ],
    }
    assert message_text(nested) == f"found 2\n{IMAGE_PART_TEXT}\nthanks"


# ---------------------------------------------------------------- validate_messages


def test_validate_returns_the_same_dicts_in_a_list() -> None:
    history = (_user("a"), _assistant("b"))
    out = validate_messages(history)
    assert out == list(history)
    assert all(x is y for x, y in zip(out, history, strict=True))
    assert validate_messages(None) == []
    assert validate_messages([]) == []


def test_validate_accepts_every_known_role() -> None:
    history = [
        {"role": "system", "content": "s"},
        {"role": "developer", "content": "d"},
        _user("u"),
        _assistant("a"),
        {"role": "function", "name": "f", "content": "r"},
    ]
    assert validate_messages(history) == history


def test_validate_uses_the_field_name_given() -> None:
    with pytest.raises(ToolPairingError) as exc:
        validate_messages([_openai_result("x")], field="history")
    assert exc.value.field == "history[0]"


# ---------------------------------------------------------------- units


def test_plain_messages_are_one_unit_each() -> None:
    units = group_units([_user("a"), _assistant("b"), _user("c")])
    assert units == [HistoryUnit(0, 1), HistoryUnit(1, 2), HistoryUnit(2, 3)]
    assert [u.size for u in units] == [1, 1, 1]


def test_openai_call_and_its_result_form_one_unit() -> None:
    history = [_user("q"), _openai_call("c1"), _openai_result("c1"), _assistant("done")]
    assert group_units(history) == [HistoryUnit(0, 1), HistoryUnit(1, 3), HistoryUnit(3, 4)]


def test_parallel_openai_calls_answered_in_any_order() -> None:
    history = [
        _openai_call("c1", "c2", "c3"),
        _openai_result("c3"),
        _openai_result("c1"),
        _openai_result("c2"),
        _assistant("all three"),
    ]
    assert group_units(history) == [HistoryUnit(0, 4), HistoryUnit(4, 5)]


def test_anthropic_tool_use_and_result_form_one_unit() -> None:
    history = [_user("q"), _anthropic_call("t1"), _anthropic_results("t1"), _assistant("ok")]
    assert group_units(history) == [HistoryUnit(0, 1), HistoryUnit(1, 3), HistoryUnit(3, 4)]


def test_parallel_anthropic_calls_in_one_result_message() -> None:
    history = [_anthropic_call("t1", "t2"), _anthropic_results("t2", "t1")]
    assert group_units(history) == [HistoryUnit(0, 2)]


def test_parallel_anthropic_results_split_over_messages() -> None:
    history = [_anthropic_call("t1", "t2"), _anthropic_results("t1"), _anthropic_results("t2")]
    assert group_units(history) == [HistoryUnit(0, 3)]


def test_back_to_back_tool_rounds_are_separate_units() -> None:
    history = [
        _openai_call("a"),
        _openai_result("a"),
        _openai_call("b"),
        _openai_result("b"),
        _anthropic_call("t"),
        _anthropic_results("t"),
    ]
    assert group_units(history) == [HistoryUnit(0, 2), HistoryUnit(2, 4), HistoryUnit(4, 6)]


@pytest.mark.parametrize(
    ("history", "field", "call_id"),
    [
        ([_openai_call("c1", "c2"), _openai_result("c1")], "conversation_messages[0]", "c2"),
        ([_anthropic_call("t1", "t2"), _anthropic_results("t2")], "conversation_messages[0]", "t1"),
        ([_user("x"), _anthropic_results("t9")], "conversation_messages[1]", "t9"),
        (
            [_openai_call("c1"), _openai_result("c1"), _openai_result("c1")],
            "conversation_messages[2]",
            "c1",
        ),
    ],
)
def test_broken_pairing(history: list[dict[str, Any]], field: str, call_id: str) -> None:
    with pytest.raises(ToolPairingError) as exc:
        group_units(history)
    assert (exc.value.field, exc.value.tool_call_id) == (field, call_id)


def _call_ids(msg: dict[str, Any]) -> set[str]:
    ids = {c["id"] for c in msg.get("tool_calls") or ()}
    if isinstance(msg.get("content"), list):
        ids |= {b["id"] for b in msg["content"] if b.get("type") == "tool_use"}
    return ids


def _result_ids(msg: dict[str, Any]) -> set[str]:
    if msg["role"] == "tool":
        return {msg["tool_call_id"]}
    if isinstance(msg.get("content"), list):
        return {b["tool_use_id"] for b in msg["content"] if b.get("type") == "tool_result"}
    return set()


@given(conversations(max_turns=8))
def test_units_partition_the_history_and_close_every_call(history: list[dict[str, Any]]) -> None:
    units = group_units(history)
    if not history:
        assert units == []
        return
    assert [u.start for u in units] == [0] + [u.stop for u in units[:-1]]
    assert units[-1].stop == len(history)
    for unit in units:
        first = history[unit.start]
        calls = _call_ids(first)
        answered: set[str] = set()
        for msg in history[unit.start + 1 : unit.stop]:
            answered |= _result_ids(msg)
        assert answered == calls
        assert unit.size >= 2 if calls else unit.size == 1


@given(conversations(max_turns=6), st.integers(0, 200))
def test_cutting_at_a_unit_start_never_orphans_a_result(
    history: list[dict[str, Any]], pick: int
) -> None:
    units = group_units(history)
    if not units:
        return
    start = units[pick % len(units)].start
    assert validate_messages(history[start:]) == history[start:]


# ---------------------------------------------------------------- one pairing check


def _raised(check: Any) -> tuple[type[Exception], str, str | None, str] | None:
    """What ``check()`` raised (class, message, field, call id), or None."""
    try:
        check()
    except InvalidInputError as exc:
        return type(exc), str(exc), exc.field, getattr(exc, "tool_call_id", "")
    return None


def _mutate(history: list[dict[str, Any]], kind: int, a: int, b: int) -> list[dict[str, Any]]:
    """The history with one edit that may break its tool pairing."""
    out = [dict(m) for m in history]
    if not out:
        return out
    a, b = a % len(out), b % len(out)
    if kind == 0:  # a message lost
        del out[a]
    elif kind == 1:  # a message sent twice
        out.insert(b, out[a])
    elif kind == 2:  # two messages swapped
        out[a], out[b] = out[b], out[a]
    else:  # a call or a result renamed to another message's id
        ids = sorted(_call_ids(out[b]) | _result_ids(out[b])) or ["fresh"]
        target = out[a]
        if target.get("role") == "tool":
            target["tool_call_id"] = ids[0]
        elif target.get("tool_calls"):
            target["tool_calls"] = [
                {**target["tool_calls"][0], "id": ids[0]},
                *target["tool_calls"][1:],
            ]
    return out


@given(
    conversations(max_turns=6),
    st.integers(0, 3),
    st.integers(0, 200),
    st.integers(0, 200),
)
def test_compile_and_the_builders_refuse_the_same_pairings_with_the_same_words(
    history: list[dict[str, Any]], kind: int, a: int, b: int
) -> None:
    broken = _mutate(history, kind, a, b)
    field = "conversation_messages"
    compiled = _raised(lambda: validate_messages(broken, field=field))
    built = _raised(lambda: normalize_messages(broken, field=field))
    assert compiled == built


@given(conversations(max_turns=6), st.integers(0, 3), st.integers(0, 200), st.integers(0, 200))
def test_validating_after_a_checked_prefix_refuses_what_a_full_check_refuses(
    history: list[dict[str, Any]], kind: int, a: int, b: int
) -> None:
    units = group_units(history)
    start = units[a % len(units)].start if units else 0
    # The prefix stays as it was; the rest is edited, possibly reusing the prefix's ids.
    broken = history[:start] + _mutate(history, kind, a, b)[start:]
    if _raised(lambda: validate_messages(broken[:start])) is not None:
        return  # the edit reached into the prefix
    full = _raised(lambda: validate_messages(broken))
    assert _raised(lambda: validate_messages(broken, start=start)) == full
    # The same with the prefix's call ids handed over instead of read again.
    ids = tool_call_ids(broken[:start])
    given_ids = _raised(lambda: validate_messages(broken, start=start, earlier_call_ids=ids))
    assert given_ids == full


_DUPLICATES = [
    # the same id on two calls of one message
    [_user("Weather?"), _openai_call("c1", "c1"), _openai_result("c1")],
    # an id used again in a later round
    [
        _user("Weather?"),
        _openai_call("c1"),
        _openai_result("c1"),
        _user("And tomorrow?"),
        _openai_call("c1"),
        _openai_result("c1"),
    ],
    # the same across the two shapes
    [_user("Weather?"), _anthropic_call("t1"), _anthropic_results("t1"), _openai_call("t1")],
]


@pytest.mark.parametrize("history", _DUPLICATES)
def test_compile_refuses_duplicate_call_ids_as_the_anthropic_builder_does(
    history: list[dict[str, Any]],
) -> None:
    with pytest.raises(ToolPairingError, match="used twice") as compiled:
        ContextCompiler(max_tokens=4000).compile([], "Hi", conversation_messages=history)
    prompt = type("Prompt", (), {"messages": history, "metadata": {"memory_placement": "end"}})
    with pytest.raises(ToolPairingError) as built:
        anthropic_request(prompt())
    # One wording: the same sentence, naming the list each was given.
    assert str(compiled.value).replace("conversation_messages", "messages") == str(built.value)
    assert compiled.value.tool_call_id == built.value.tool_call_id


def test_a_warm_compiler_still_refuses_an_id_its_last_turn_used() -> None:
    # The second compile of a conversation checks only the new messages; the ids of the
    # messages it checked before still count.
    compiler = ContextCompiler(max_tokens=4000)
    history = _DUPLICATES[1]
    compiler.compile([], "Hi", conversation_messages=history[:3])
    with pytest.raises(ToolPairingError, match="used twice") as exc:
        compiler.compile([], "Hi", conversation_messages=history)
    assert exc.value.field == "conversation_messages[4]"


def test_tool_call_ids_of_both_shapes_from_a_start() -> None:
    history = [_openai_call("c1", "c2"), _openai_result("c1"), _openai_result("c2")]
    history += [_anthropic_call("t1"), _anthropic_results("t1"), _user("thanks")]
    assert tool_call_ids(history) == {"c1", "c2", "t1"}
    assert tool_call_ids(history, start=3) == {"t1"}
    assert tool_call_ids(history, start=5) == set()


def test_a_call_without_an_id_is_refused_by_compile_and_builders_alike() -> None:
    history = [
        _user("Weather?"),
        {**_openai_call("c1"), "tool_calls": [{**_openai_call("c1")["tool_calls"][0], "id": ""}]},
        {"role": "tool", "tool_call_id": "", "content": "sunny"},
    ]
    expected = "conversation_messages[1]: a tool call needs a non-empty id"
    with pytest.raises(InvalidInputError) as compiled:
        ContextCompiler(max_tokens=4000).compile([], "Hi", conversation_messages=history)
    assert str(compiled.value) == expected
    prompt = type("Prompt", (), {"messages": history, "metadata": {"memory_placement": "end"}})
    with pytest.raises(InvalidInputError) as built:
        openai_request(prompt(), model="gpt-4o")
    assert str(built.value) == expected.replace("conversation_messages", "messages")
