"""Session boundaries: the cut moves where the provider cache is cold anyway.

The tracker against :func:`reference_cut` with boundaries, the cut replayed from the messages'
timestamps alone, the ``timestamp`` key never sent, and the cut-move counts in the metadata.
"""

from __future__ import annotations

import datetime
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from membrane.compiler import ContextCompiler
from membrane.errors import InvalidInputError
from membrane.messages import group_units, message_text, message_time
from membrane.providers import anthropic_request, openai_request
from membrane.report import CompileReport
from membrane.stages.history import CutEvent, HistoryTracker, reference_cut
from membrane.state import InMemoryStateStore
from membrane.tokenizers import count_tokens
from tests.strategies import stamped_conversations

OVERHEAD = 3
TTL = 300.0


def _unit_tokens(history: list[dict[str, Any]]) -> list[int]:
    return [
        sum(count_tokens(message_text(m)) + OVERHEAD for m in history[u.start : u.stop])
        for u in group_units(history)
    ]


def _gaps(history: list[dict[str, Any]]) -> set[int]:
    """Units whose first message comes more than the TTL after the message before it."""
    out = set()
    for k, unit in enumerate(group_units(history)):
        if unit.start == 0:
            continue
        then, now = message_time(history[unit.start - 1]), message_time(history[unit.start])
        if then is not None and now is not None and now - then > TTL:
            out.add(k)
    return out


def _upto(history: list[dict[str, Any]], units: int) -> list[dict[str, Any]]:
    return history[: group_units(history)[units - 1].stop] if units else []


def _tracker(share: int) -> HistoryTracker:
    return HistoryTracker(share, share // 2, count_tokens, OVERHEAD, 40)


def test_reference_moves_early_at_a_boundary_and_not_between() -> None:
    # Without sessions: past 50 tokens a chunk (>= 25) goes, so the cut moves every 3 units.
    assert reference_cut([10] * 12, share=50, chunk=25)[1] == [
        CutEvent(6, 3),
        CutEvent(9, 6),
        CutEvent(12, 9),
    ]
    # Sessions of 3 units (30 tokens, room capped at the 25-token chunk): at each boundary
    # the oldest units go until 25 tokens are free, and no session overflows on its own.
    cut, events = reference_cut([10] * 12, share=50, chunk=25, boundaries={3, 6, 9, 12})
    assert events == [CutEvent(3, 1), CutEvent(6, 4), CutEvent(9, 7), CutEvent(12, 10)]
    assert cut == 10
    # A boundary where the room is already free moves nothing.
    assert reference_cut([10] * 4, share=50, chunk=25, boundaries={2})[1] == []


@given(
    history=stamped_conversations(max_turns=40),
    share=st.integers(50, 3000),
    steps=st.lists(st.tuples(st.integers(0, 6), st.booleans()), min_size=1, max_size=20),
)
def test_tracker_with_sessions_matches_the_reference(
    history: list[dict[str, Any]], share: int, steps: list[tuple[int, bool]]
) -> None:
    tracker = _tracker(share)
    units = group_units(history)
    boundaries = _gaps(history)
    seen = 0
    for step, new_session in steps:  # uneven growth; some compiles start a session
        seen = min(seen + step, len(units))
        tracker.update(_upto(history, seen), "h", new_session=new_session)
        if new_session:
            boundaries.add(seen)
    tracker.update(history, "h")
    cut, events = reference_cut(_unit_tokens(history), share, share // 2, boundaries)
    assert tracker.cut == cut
    assert tracker.events == events
    assert tracker.kept_tokens == sum(tracker.unit_tokens[cut:])
    assert tracker.kept_tokens <= share or cut == len(units)
    at_boundaries = sum(1 for e in events if e.seen in boundaries)
    assert (tracker.session_moves, tracker.mid_session_moves) == (
        at_boundaries,
        len(events) - at_boundaries,
    )


@given(
    history=stamped_conversations(max_turns=40),
    share=st.integers(50, 3000),
    steps=st.lists(st.integers(1, 4), min_size=1, max_size=20),
)
def test_a_fresh_worker_replays_the_flagged_cut_from_the_timestamps(
    history: list[dict[str, Any]], share: int, steps: list[int]
) -> None:
    # The live worker is told new_session=True exactly where the next message's stamp shows
    # a gap; a worker that joins later sees only the stamped messages.
    live = _tracker(share)
    units, gaps = group_units(history), _gaps(history)
    seen = 0
    for step in steps:
        seen = min(seen + step, len(units))
        live.update(_upto(history, seen), "h", new_session=seen in gaps)
    live.update(history, "h")
    fresh = _tracker(share)
    fresh.update(history, "h")
    assert (fresh.cut, fresh.events, fresh.kept_tokens) == (live.cut, live.events, live.kept_tokens)
    assert (fresh.session_moves, fresh.mid_session_moves) == (
        live.session_moves,
        live.mid_session_moves,
    )
    assert [line.text for line in fresh.lines] == [line.text for line in live.lines]


@pytest.mark.parametrize(
    ("stamp", "seconds"),
    [
        (1_700_000_000, 1_700_000_000.0),
        (12.5, 12.5),
        ("2023-11-14T22:13:20Z", 1_700_000_000.0),
        ("2023-11-14T22:13:20", 1_700_000_000.0),  # no zone: UTC
        ("2023-11-15T00:13:20+02:00", 1_700_000_000.0),
        (datetime.datetime(2023, 11, 14, 22, 13, 20), 1_700_000_000.0),
    ],
)
def test_timestamps_are_epoch_seconds_or_iso_8601(stamp: object, seconds: float) -> None:
    assert message_time({"role": "user", "content": "hi", "timestamp": stamp}) == seconds


@pytest.mark.parametrize("stamp", ["yesterday", True, float("nan"), [1]])
def test_a_malformed_timestamp_is_refused_with_its_field(stamp: object) -> None:
    history = [{"role": "user", "content": "hi", "timestamp": stamp}]
    with pytest.raises(InvalidInputError) as error:
        ContextCompiler(max_tokens=500).compile(user_message="q", conversation_messages=history)
    assert error.value.field == "conversation_messages[0].timestamp"


def _sessions(
    turns_per_session: int, sessions: int, stamped: bool = True
) -> list[list[list[dict[str, Any]]]]:
    """Exchanges grouped by session: 20 seconds apart inside one, a day between two."""
    out, clock = [], 1_700_000_000.0
    for s in range(sessions):
        clock += 86_400.0
        session = []
        for t in range(turns_per_session):
            clock += 20.0
            text = f"Session {s} turn {t}: the parcel for locker {s * 100 + t} arrives on pier {t}."
            pair = [
                {"role": "user", "content": text, "timestamp": clock},
                {"role": "assistant", "content": f"Noted, {s * 100 + t}.", "timestamp": clock + 5},
            ]
            session.append(pair if stamped else [{**m, "timestamp": None} for m in pair])
        out.append(session)
    return out


def _play(
    compiler: ContextCompiler, mark_sessions: bool, sessions: list[list[list[dict[str, Any]]]]
) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Every turn compiled; (metadata, messages) per turn."""
    history: list[dict[str, Any]] = []
    out = []
    for session in sessions:
        for t, (user, reply) in enumerate(session):
            result = compiler.compile(
                user_message=user["content"],
                conversation_messages=history,
                conversation_id="c",
                new_session=mark_sessions and t == 0,
            )
            out.append((result.metadata, result.messages))
            history += [user, reply]
    return out


def test_marked_sessions_move_the_cut_at_boundaries_and_keep_the_prefix_between() -> None:
    sessions = _sessions(turns_per_session=6, sessions=8)
    plain = _play(ContextCompiler(max_tokens=700), False, _sessions(6, 8, stamped=False))
    marked = _play(ContextCompiler(max_tokens=700), True, sessions)
    assert "history_cut_moves" not in plain[-1][0]
    window = CompileReport.from_metadata(marked[-1][0]).window
    assert window is not None
    moves = window.cut_moves
    assert moves is not None and moves[0] > 0
    # Inside a session the system message and the history are the previous turn's bytes
    # unless the cut moved (invariant 2); count the turns where it did.
    mid_plain = mid_marked = 0
    for played, mid in ((plain, "plain"), (marked, "marked")):
        for turn in range(1, len(played)):
            if turn % 6 == 0:
                continue  # a session's first turn: the cache is cold anyway
            (md0, msgs0), (md1, msgs1) = played[turn - 1], played[turn]
            if md0["history_messages_dropped"] == md1["history_messages_dropped"]:
                assert msgs1[: len(msgs0) - 1] == msgs0[:-1]
            elif mid == "plain":
                mid_plain += 1
            else:
                mid_marked += 1
    assert mid_plain > 0
    assert mid_marked < mid_plain
    assert moves[1] == mid_marked


def test_the_timestamp_is_never_sent() -> None:
    sessions = _sessions(turns_per_session=3, sessions=3)
    history = [m for session in sessions for pair in session for m in pair]
    result = ContextCompiler(max_tokens=4000, model_id="claude-sonnet-4-5").compile(
        user_message="Which locker?", conversation_messages=history, new_session=True
    )
    assert len(result.messages) == len(history) + 2
    assert all("timestamp" not in m for m in result.messages)
    for request in (openai_request(result), anthropic_request(result)):
        assert "timestamp" not in json.dumps(request)
    assert all("timestamp" in m for m in history)  # the caller's messages are left alone


def test_a_worker_that_joins_later_sends_the_same_bytes() -> None:
    sessions = _sessions(turns_per_session=5, sessions=6)
    store = InMemoryStateStore()
    played = _play(ContextCompiler(max_tokens=700, state_store=store), True, sessions)
    history = [m for session in sessions for pair in session for m in pair]
    last_user = history[-2]
    joined = ContextCompiler(max_tokens=700, state_store=store).compile(
        user_message=last_user["content"], conversation_messages=history[:-2], conversation_id="c"
    )
    assert joined.messages == played[-1][1]
    # It restores the tracker saved at the last cut, session counts included.
    assert joined.metadata["history_resume"] == "resumed"
    assert {**joined.metadata, "history_resume": "in_process"} == played[-1][0]
