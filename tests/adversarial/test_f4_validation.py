"""Validation skips only what a digest (or the caller's version) proves unchanged (issue 11,
point 5; reproducer f4_validation.py)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from membrane import ContextCompiler
from membrane.errors import InvalidInputError
from membrane.messages import prefix_digest
from tests.strategies import conversations

GOOD: list[dict[str, Any]] = [
    {"role": "user", "content": "hello"},
    {"role": "assistant", "content": "OK."},
]


def _good_then(bad: list[dict[str, Any]], **kwargs: Any) -> None:
    compiler = ContextCompiler(2000)
    compiler.compile([], "q", conversation_messages=[dict(m) for m in GOOD], **kwargs)
    with pytest.raises(InvalidInputError) as raised:
        compiler.compile([], "q", conversation_messages=bad, **kwargs)
    assert raised.value.field is not None
    assert raised.value.field.startswith("conversation_messages[0]")


def test_a_bad_role_after_a_good_compile_raises() -> None:
    _good_then([{"role": "bot", "content": "hello"}, {"role": "assistant", "content": "OK."}])


def test_dict_content_after_a_good_compile_raises() -> None:
    _good_then([{"role": "user", "content": {"x": 1}}, {"role": "assistant", "content": "OK."}])


def test_the_reproducer_case_raises() -> None:
    _good_then([{"role": "bot", "content": {"x": 1}}, {"role": "assistant", "content": "OK."}])


def test_an_edited_list_is_validated_again() -> None:
    compiler = ContextCompiler(2000)
    history = [dict(m) for m in GOOD]
    compiler.compile([], "q", conversation_messages=history)
    history[0]["role"] = "robot"  # the same list, edited in place
    with pytest.raises(InvalidInputError, match="robot"):
        compiler.compile([], "q", conversation_messages=history)


def test_another_conversation_of_the_same_length_without_an_id_is_validated() -> None:
    compiler = ContextCompiler(2000)
    compiler.compile([], "q", conversation_messages=[dict(m) for m in GOOD])
    other = [{"role": "user", "content": "a different chat"}, {"role": "assistant", "content": 7}]
    with pytest.raises(InvalidInputError) as raised:
        compiler.compile([], "q", conversation_messages=other)
    assert raised.value.field == "conversation_messages[1]"


def test_a_grown_history_compiles_as_a_copy_of_it_does() -> None:
    compiler, twin = ContextCompiler(300), ContextCompiler(300)
    history: list[dict[str, Any]] = []
    for i in range(30):
        history += [
            {"role": "user", "content": f"turn {i} about order {i}"},
            {"role": "assistant", "content": f"noted order {i}"},
        ]
        grown = compiler.compile([], f"q{i}", conversation_messages=history)
        copied = twin.compile([], f"q{i}", conversation_messages=[dict(m) for m in history])
        assert grown.messages == copied.messages
        assert grown.metadata == copied.metadata


def test_history_version_skips_the_digest_and_a_lie_is_the_callers_bug() -> None:
    compiler = ContextCompiler(2000)
    history = [dict(m) for m in GOOD]
    compiler.compile([], "q", conversation_messages=history, history_version=1)
    history[0]["content"] = "edited but the version says only appended"
    history.append({"role": "user", "content": "next"})
    history.append({"role": "assistant", "content": "sure"})
    result = compiler.compile([], "q", conversation_messages=history, history_version=2)
    # The prefix was trusted, as documented: the edit is sent as given.
    assert result.messages[1]["content"] == "edited but the version says only appended"
    # New messages after the vouched prefix are still checked.
    history.append({"role": "bot", "content": "x"})
    with pytest.raises(InvalidInputError) as raised:
        compiler.compile([], "q", conversation_messages=history, history_version=3)
    assert raised.value.field == "conversation_messages[4]"


def test_an_older_counter_or_another_etag_falls_back_to_the_digest() -> None:
    for first, second in ((5, 4), ("etag-a", "etag-b"), (3, "3")):
        compiler = ContextCompiler(2000)
        compiler.compile(
            [], "q", conversation_messages=[dict(m) for m in GOOD], history_version=first
        )
        bad = [{"role": "bot", "content": "hello"}, {"role": "assistant", "content": "OK."}]
        with pytest.raises(InvalidInputError):
            compiler.compile([], "q", conversation_messages=bad, history_version=second)


@pytest.mark.parametrize("version", [-1, 1.5, True, b"x", [1]])
def test_a_bad_history_version_names_the_field(version: object) -> None:
    with pytest.raises(InvalidInputError) as raised:
        ContextCompiler(2000).compile([], "q", conversation_messages=GOOD, history_version=version)  # type: ignore[arg-type]
    assert raised.value.field == "history_version"


_BREAKS: list[tuple[str, Any]] = [
    ("role", "bot"),
    ("role", "USER"),
    ("content", {"x": 1}),
    ("content", 7),
    ("content", "lone \ud800 half"),
    ("tool_calls", "notalist"),
]


@given(
    history=conversations(max_turns=6),
    where=st.integers(min_value=0),
    grown=st.booleans(),
    breaking=st.sampled_from(_BREAKS),
    same_list=st.booleans(),
)
def test_any_edit_to_a_validated_prefix_is_validated_again(
    history: list[dict[str, Any]],
    where: int,
    grown: bool,
    breaking: tuple[str, Any],
    same_list: bool,
) -> None:
    """A good compile, then one earlier message broken (in place or in a copy, the list grown
    or not): the next compile raises InvalidInputError naming that message."""
    plain = [
        i
        for i, m in enumerate(history)
        if m["role"] == "user" and isinstance(m.get("content"), str)
    ]
    assume(plain)
    at = plain[where % len(plain)]
    compiler = ContextCompiler(4000)
    compiler.compile([], "q", conversation_messages=history)
    edited = history if same_list else [dict(m) for m in history]
    edited[at] = {**edited[at], breaking[0]: breaking[1]}
    if grown:
        edited += [{"role": "user", "content": "and then?"}, {"role": "assistant", "content": "ok"}]
    with pytest.raises(InvalidInputError) as raised:
        compiler.compile([], "q", conversation_messages=edited)
    assert raised.value.field is not None
    assert raised.value.field.startswith(f"conversation_messages[{at}]")


def test_the_digest_proves_a_tuple_and_a_list_of_the_same_messages_alike() -> None:
    history = [dict(m) for m in GOOD] * 200
    assert prefix_digest(history, 300) == prefix_digest(tuple(history), 300)
    assert prefix_digest(history, 300) != prefix_digest(history, 299)
    edited = [dict(m) for m in history]
    edited[5]["content"] = "OK!"
    assert prefix_digest(history, 300) != prefix_digest(edited, 300)
    assert prefix_digest([{"role": "user", "content": {"x": 1}}], 1) != prefix_digest(
        [{"role": "user", "content": "{'x': 1}"}], 1
    )
    assert prefix_digest([{"content": lambda: 0}], 1) is None  # no proof: validated in full
