"""Input size limits: past them a compile raises InvalidInputError naming the field; at them it
compiles (issue 35, point 21). The limits are patched small so the inputs stay cheap."""

from __future__ import annotations

from typing import Any

import pytest

from membrane import ContextCompiler, config
from membrane.errors import InvalidInputError
from membrane.records import MemoryItem


def _compile(**kwargs: Any) -> None:
    ContextCompiler(2000).compile(**{"memories": [], "user_message": "Where is it?", **kwargs})


def _history(n: int) -> list[dict[str, str]]:
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"Message {i} of the talk."}
        for i in range(n)
    ]


def test_the_limits_are_public_settings_with_room_above_the_benchmarked_sizes() -> None:
    # benchmarks/slow_inputs.py compiles 100,000 messages, 50,000 memories and 5 MB of text.
    assert config.MAX_HISTORY_MESSAGES >= 10 * 100_000
    assert config.MAX_MEMORIES >= 10 * 50_000
    assert config.MAX_TEXT_CHARS >= 10 * 5_000_000


def test_a_history_longer_than_the_limit_is_refused_by_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(config, "MAX_HISTORY_MESSAGES", 6)
    _compile(conversation_messages=_history(6))
    with pytest.raises(InvalidInputError) as raised:
        _compile(conversation_messages=_history(7))
    assert raised.value.field == "conversation_messages"
    assert "7 messages" in str(raised.value) and "MAX_HISTORY_MESSAGES" in str(raised.value)


def test_more_memories_than_the_limit_are_refused_by_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(config, "MAX_MEMORIES", 3)
    memories = [MemoryItem(id=f"m{i}", content=f"Crate {i} is in room {i}.") for i in range(4)]
    _compile(memories=memories[:3])
    with pytest.raises(InvalidInputError) as raised:
        _compile(memories=memories)
    assert raised.value.field == "memories"
    assert "MAX_MEMORIES" in str(raised.value)


@pytest.mark.parametrize(
    ("where", "field"),
    [
        ("user_message", "user_message"),
        ("agent_persona_prompt", "agent_persona_prompt"),
        ("history", "conversation_messages[1].content"),
        ("block", "conversation_messages[1].content[0].text"),
    ],
)
def test_a_text_longer_than_the_limit_is_refused_by_name(
    monkeypatch: pytest.MonkeyPatch, where: str, field: str
) -> None:
    monkeypatch.setattr(config, "MAX_TEXT_CHARS", 40)

    def compile_with(text: str) -> None:
        if where in ("user_message", "agent_persona_prompt"):
            _compile(**{where: text})
            return
        content: Any = text if where == "history" else [{"type": "text", "text": text}]
        history = [{"role": "user", "content": "Hi."}, {"role": "assistant", "content": content}]
        _compile(conversation_messages=history)

    compile_with("x" * 40)  # at the limit: accepted
    with pytest.raises(InvalidInputError) as raised:
        compile_with("x" * 41)
    assert raised.value.field == field
    assert "41 characters" in str(raised.value)


def test_a_memory_longer_than_the_limit_is_refused_when_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(config, "MAX_TEXT_CHARS", 40)
    MemoryItem(id="m1", content="y" * 40)
    with pytest.raises(InvalidInputError) as raised:
        MemoryItem(id="m1", content="y" * 41)
    assert raised.value.field == "content"
