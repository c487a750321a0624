"""A long replay makes only the index lines its room keeps, and the same ones as turn by turn."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from membrane.messages import group_units
from membrane.stages.history import HistoryTracker
from membrane.stages.history import _replay as replay
from membrane.stages.history._passages import stated_words
from membrane.stages.history._postings import MAX_POSTINGS_SCANNED, LazyPostings, PostingIndex
from membrane.tokenizers import count_tokens
from tests.strategies import conversations

OVERHEAD = 3
# Histories long enough for a fresh tracker to defer their index lines.
LONG = conversations(max_turns=60).filter(lambda h: len(h) >= replay.LONG_REPLAY_MESSAGES)


def _tracker(share: int, room: int | None) -> HistoryTracker:
    return HistoryTracker(share, share // 2, count_tokens, OVERHEAD, 40, line_room=room)


def _turn_by_turn(history: list[dict[str, Any]], share: int, room: int) -> HistoryTracker:
    """Fed a few messages at a time (never a long replay), forgetting lines as the window does."""
    tracker = _tracker(share, room)
    for unit in group_units(history)[::2]:  # whole units, a turn or so at a time
        tracker.update(history[: unit.stop], "h")
        tracker.forget_lines(room)
    tracker.update(history, "h")
    tracker.forget_lines(room)
    return tracker


def _postings_of(tracker: HistoryTracker, words: list[str]) -> dict[str, object]:
    """What recall reads of each word: its entries, or that it is too common to scan."""
    out: dict[str, object] = {}
    for word in words:
        posting = tracker.postings.get(word) or []
        out[word] = "common" if len(posting) > MAX_POSTINGS_SCANNED else list(posting)
    return out


def _same(long: HistoryTracker, short: HistoryTracker) -> None:
    assert long.lines == short.lines
    assert (long.cut, long.events, long.bounds) == (short.cut, short.events, short.bounds)
    assert list(long.passages) == list(short.passages)
    assert long.stats.to_text() == short.stats.to_text()  # type: ignore[attr-defined]
    # Every word any dropped passage states, and one none does.
    stated = {w for p in short.passages for w in stated_words(p.sentences)}
    words = sorted(stated | {"no-such-word"})
    assert _postings_of(long, words) == _postings_of(short, words)


@settings(max_examples=25, deadline=None)
@given(
    history=LONG,
    share=st.integers(60, 600),
    room=st.integers(1, 400),
)
def test_a_long_replay_keeps_the_lines_a_turn_by_turn_tracker_keeps(
    history: list[dict[str, Any]], share: int, room: int
) -> None:
    long = _tracker(share, room)
    long.update(history, "h")
    assert isinstance(long.postings, LazyPostings) or not long.passages
    long.forget_lines(room)
    _same(long, _turn_by_turn(history, share, room))


@settings(max_examples=10, deadline=None)
@given(history=LONG, room=st.integers(1, 400))
def test_a_replay_that_cannot_roll_back_far_enough_replays_line_by_line(
    history: list[dict[str, Any]], room: int
) -> None:
    """With a log of a few documents, the lines that fit reach past it: the tracker replays
    again, making every line as its message drops, and ends where the other one does."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(replay, "LOGGED_DOCUMENTS", 3)
        long = _tracker(120, room)
        long.update(history, "h")
    long.forget_lines(room)
    _same(long, _turn_by_turn(history, 120, room))


def test_a_tracker_without_a_line_room_files_everything_as_it_drops() -> None:
    history = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"Order KX-{i} left Oslo."}
        for i in range(200)
    ]
    tracker = _tracker(100, None)
    tracker.update(history, "h")
    assert type(tracker.postings) is PostingIndex
    assert len(tracker.lines) == len({line.message for line in tracker.lines}) > 50


@settings(max_examples=15, deadline=None)
@given(history=LONG, share=st.integers(60, 600))
def test_after_its_first_compile_a_replayed_tracker_files_every_passage(
    history: list[dict[str, Any]], share: int
) -> None:
    """Words are found by reading the early passages only in the replay's own compile; the
    next update files them all (reading them again each turn would cost every later turn),
    and the postings equal those of a tracker that filed each passage as it dropped."""
    long = _tracker(share, 400)
    long.update(history, "h")
    lazy = long.postings
    assert isinstance(lazy, LazyPostings) or not long.passages
    long.update(history, "h")  # the next compile, nothing new
    assert type(long.postings) is PostingIndex
    long.forget_lines(400)
    _same(long, _turn_by_turn(history, share, 400))
