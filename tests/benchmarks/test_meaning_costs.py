"""The meaning-cost benchmark replays what it says: long messages, real chats, the same turns."""

from __future__ import annotations

from benchmarks.meaning_costs import _row, long_message_chat, real_chat


def test_the_long_message_chat_has_80_messages_of_30_to_220_words() -> None:
    replay = long_message_chat()
    history, last = replay.turns[-1]
    messages = [*history, {"role": "user", "content": last}]
    assert len(messages) == 79 and len(replay.turns) == 40  # the last reply is never asked about
    assert all(30 <= len(m["content"].split()) <= 220 for m in messages)
    assert replay.budget == 8000 and replay.speakers is None
    assert long_message_chat().turns == replay.turns  # seeded


def test_a_real_chat_asks_every_turn_of_person_a_with_the_history_so_far() -> None:
    replay = real_chat(1)
    assert replay.budget == 4000 and replay.speakers
    for i, (history, _text) in enumerate(replay.turns[:50]):
        assert all(m["role"] in ("user", "assistant") for m in history)
        if i:
            previous, asked = replay.turns[i - 1]
            assert history[: len(previous)] == previous
            assert {"role": "user", "content": asked} in history


def test_the_row_reports_the_tail() -> None:
    row = _row([float(i) for i in range(1, 101)])
    assert row == {
        "turns": 100,
        "median_ms": 50.5,
        "p95_ms": 95.05,
        "p99_ms": 99.01,
        "max_ms": 100.0,
    }
