"""``message_token_counts=``: the caller's counts of history messages, taken on trust."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from membrane import ContextCompiler, InvalidInputError, MemoryItem, count_tokens
from membrane.messages import message_text
from membrane.tokenizers import TiktokenAdapter

CORE = "You are a support agent for a bicycle shop."


def _history(turns: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(turns):
        out.append({"role": "user", "content": f"Question {i}: is frame KJ-{i}48 in stock?"})
        out.append(
            {
                "role": "assistant",
                "content": f"Frame KJ-{i}48 arrives on day {i}. It fits riders of size {i}. "
                "We can hold one for a week if you pay a deposit at the counter.",
            }
        )
    return out


def _counts(history: list[dict[str, Any]]) -> list[int | None]:
    return [count_tokens(message_text(m)) for m in history]


def _compile(history: list[dict[str, Any]], **kwargs: Any) -> Any:
    compiler = ContextCompiler(max_tokens=700, core_content=CORE, token_scale=1.0)
    memories = [MemoryItem(id="m1", content="The customer rides a size 54 frame.")]
    return compiler.compile(
        memories, "Which frame did we hold?", conversation_messages=history, **kwargs
    )


@settings(max_examples=25, deadline=None)
@given(turns=st.integers(1, 30), data=st.data())
def test_exact_counts_give_the_same_prompt(turns: int, data: st.DataObject) -> None:
    history = _history(turns)
    exact = _counts(history)
    # Any messages may come with a count; the rest are counted by Membrane.
    given_at = data.draw(st.sets(st.integers(0, len(history) - 1)))
    supplied = [n if i in given_at else None for i, n in enumerate(exact)]
    plain = _compile(history)
    trusted = _compile(history, message_token_counts=supplied)
    assert trusted.messages == plain.messages
    md = dict(trusted.metadata)
    assert md.pop("message_counts_supplied", 0) == len(given_at)
    assert "message_counts_supplied" not in plain.metadata
    for key in ("token_count", "history_messages_dropped", "history_index_lines"):
        assert md[key] == plain.metadata[key]


class _Spy(TiktokenAdapter):
    def __init__(self) -> None:
        super().__init__("cl100k_base")
        self.texts: list[str] = []

    def count(self, text: str) -> int:
        self.texts.append(text)
        return super().count(text)


def test_supplied_counts_are_not_counted_again() -> None:
    history = _history(3)  # small enough that nothing is dropped
    spy = _Spy()
    compiler = ContextCompiler(max_tokens=4000, core_content=CORE, token_counter=spy)
    result = compiler.compile(
        [], "Hello", conversation_messages=history, message_token_counts=_counts(history)
    )
    assert result.metadata["history_messages_dropped"] == 0
    assert result.metadata["message_counts_supplied"] == len(history)
    sent = " ".join(spy.texts)
    for message in history:
        assert message["content"] not in sent


def test_counts_are_the_callers_assertion() -> None:
    history = _history(12)
    exact = _counts(history)
    plain = _compile(history)
    # Counts ten times too high: the cut drops more, and the total counts what was asserted.
    inflated = _compile(history, message_token_counts=[10 * n for n in exact])  # type: ignore[operator]
    assert (
        inflated.metadata["history_messages_dropped"] > plain.metadata["history_messages_dropped"]
    )
    # Without trimming, the history's tokens are the supplied ones.
    compiler = ContextCompiler(max_tokens=100_000, core_content=CORE, trim_history=False)
    low = compiler.compile([], "Hi", conversation_messages=history, message_token_counts=[1] * 24)
    high = ContextCompiler(max_tokens=100_000, core_content=CORE, trim_history=False).compile(
        [], "Hi", conversation_messages=history, message_token_counts=[2] * 24
    )
    assert high.metadata["token_count"] - low.metadata["token_count"] == len(history)


@pytest.mark.parametrize(
    ("counts", "field", "words"),
    [
        ([1, 2], "message_token_counts", "2 entries for 4"),
        ({0: 1}, "message_token_counts", "must be a list"),
        ("1234", "message_token_counts", "must be a list"),
        ([1, -1, 2, 3], "message_token_counts[1]", ">= 0"),
        ([1, 2, True, 3], "message_token_counts[2]", "got True"),
        ([1, 2, 3, 4.0], "message_token_counts[3]", "got 4.0"),
        (["1", 2, 3, 4], "message_token_counts[0]", "got '1'"),
    ],
)
def test_bad_counts_are_refused_with_the_fix(counts: object, field: str, words: str) -> None:
    compiler = ContextCompiler(max_tokens=4000, core_content=CORE)
    with pytest.raises(InvalidInputError) as err:
        compiler.compile(
            [],
            "Hi",
            conversation_messages=_history(2),
            message_token_counts=counts,  # type: ignore[arg-type]
        )
    assert err.value.field == field
    assert words in str(err.value)
