"""The history window: what of the conversation one turn's prompt shows, and the system text.

The tracked cut (``stages.history``) decides which old messages leave; this stage turns it into
one turn's plan: the kept messages, the eviction index placed after the core in the system
message, its room (decided once per cut and kept in the state store), and a turn-local drop
when the current turn is too large for what history leaves.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from membrane.messages import Message, message_text
from membrane.prompt_text import INDEX_HEADER
from membrane.session import LRUCache, Session
from membrane.stages.history import HistoryTracker, render_index, select_index_lines
from membrane.text.keyframes import keyframe
from membrane.text.relevance import CombinedStats, TermStats
from membrane.tokenizers import MemoizedCounter

__all__ = ["HistoryWindow", "WindowInput", "WindowPlanner", "WindowSettings"]

MAX_CONVERSATIONS = 512


@dataclass(frozen=True, slots=True)
class WindowSettings:
    """The compiler options the history window depends on."""

    trim_history: bool
    history_share: float
    eviction_index: bool
    index_share: float
    keyframe_tokens: int
    message_overhead_tokens: int


@dataclass(frozen=True, slots=True)
class HistoryWindow:
    """One turn's history: the kept suffix, the system text with its index, what was dropped."""

    kept: list[Message]
    kept_tokens: int
    system_text: str
    dropped_messages: int = 0
    dropped_tokens: int = 0
    index_lines: int = 0
    index_tokens: int = 0
    tracker: HistoryTracker | None = None
    turn_local_drop: int = 0


@dataclass(frozen=True, slots=True)
class WindowInput:
    """What the window needs from the turn."""

    history: list[Message]
    conversation: str
    core: str
    end_text: str
    counter: MemoizedCounter
    budget_counted: int
    offer_texts: Sequence[str]
    # The caller's token count of each message's text, None where Membrane counts it.
    message_counts: Sequence[int | None] | None = None
    # What a message's images cost beyond their stand-in text (0 for a message without any).
    image_tokens: Callable[[Mapping[str, Any]], int] = lambda _m: 0
    # The caller says this turn starts a session (its provider cache has expired).
    new_session: bool = False


class WindowPlanner:
    """Plans each turn's history window; keeps one tracker per conversation between turns."""

    def __init__(self) -> None:
        self._trackers: LRUCache[tuple[str, int, int, str], HistoryTracker] = LRUCache(
            MAX_CONVERSATIONS
        )
        # Per conversation: the last system text with its index (see _system_text).
        self._system_texts: LRUCache[
            str, tuple[HistoryTracker, tuple[str, str, int, int], str, int]
        ] = LRUCache(MAX_CONVERSATIONS)

    def plan(self, turn: WindowInput, session: Session, settings: WindowSettings) -> HistoryWindow:
        count = turn.counter.count
        overhead = settings.message_overhead_tokens
        history = turn.history
        if not history:
            return HistoryWindow([], 0, turn.core)
        if not settings.trim_history:
            extra, given = turn.image_tokens, turn.message_counts or [None] * len(history)
            kept_tokens = sum(
                (count(message_text(m)) if n is None else n) + extra(m) + overhead
                for m, n in zip(history, given, strict=True)
            )
            return HistoryWindow(list(history), kept_tokens, turn.core)
        after_core = max(turn.budget_counted - count(turn.core) - overhead, 0)
        share = max(int(settings.history_share * after_core), 1)
        tracker = self._tracker(turn, share, max(share // 2, 1), settings)
        system_text, index_lines, index_tokens = turn.core, 0, 0
        if settings.eviction_index and tracker.lines:
            room = _index_room(turn, tracker, after_core, settings, session)
            system_text, index_lines = self._system_text(turn, tracker, room)
            if index_lines:
                index_tokens = count(system_text) - count(turn.core)
        return _cut_for_turn(turn, tracker, system_text, index_lines, index_tokens, overhead)

    def _tracker(
        self, turn: WindowInput, share: int, chunk: int, settings: WindowSettings
    ) -> HistoryTracker:
        counter, conversation = turn.counter, turn.conversation
        key = (conversation, share, chunk, counter.name)
        tracker = self._trackers.get(key)
        if tracker is None or not tracker.matches(turn.history):
            tracker = HistoryTracker(
                share,
                chunk,
                counter.count,
                settings.message_overhead_tokens,
                settings.keyframe_tokens,
            )
            # One tracker per conversation: a new share or a rewritten history replaces it.
            self._trackers.discard_where(lambda k: k[0] == conversation)
            self._trackers.put(key, tracker)
        tracker.update(
            turn.history,
            "conversation_messages",
            turn.image_tokens,
            turn.message_counts,
            new_session=turn.new_session,
        )
        return tracker

    def _system_text(
        self, turn: WindowInput, tracker: HistoryTracker, room: int
    ) -> tuple[str, int]:
        """The core and the newest index lines that fit ``room``, and how many lines that is.

        Reused (the same string, its hash and token count already known) while the core, the
        tracker's lines and the room stay as they were.
        """
        key = (turn.core, turn.counter.name, len(tracker.lines), room)
        cached = self._system_texts.get(turn.conversation)
        if cached is not None and cached[0] is tracker and cached[1] == key:
            return cached[2], cached[3]
        count = turn.counter.count
        first = select_index_lines(tracker.lines, room, count(INDEX_HEADER) + 2)
        index = render_index(tracker.lines[first:])
        text = f"{turn.core}\n\n{index}" if index else turn.core
        lines = len(tracker.lines) - first if index else 0
        self._system_texts.put(turn.conversation, (tracker, key, text, lines))
        return text, lines


def _index_room(
    turn: WindowInput,
    tracker: HistoryTracker,
    after_core: int,
    settings: WindowSettings,
    session: Session,
) -> int:
    """The index block's room: decided by the first compile that sees a cut, then kept.

    It is what history, the current turn and one keyframe per memory on offer leave of the
    budget, between half of ``index_share`` and all of it.
    """
    stored = session.conversation_state
    events = len(tracker.events)
    share_room = int(settings.index_share * after_core)
    if stored.get("room", 0) > share_room:  # no compile under this budget could have chosen it
        stored = session.reject_conversation_state(
            f"room {stored['room']} is above this budget's index share of {share_room} tokens"
        )
    if stored.get("share") == tracker.share and stored.get("events") == events:
        return int(stored["room"])
    count = turn.counter.count
    stats = CombinedStats(tracker.stats, TermStats(turn.offer_texts))
    keyframe_cost = 0
    for text in turn.offer_texts:
        frame = keyframe(text, stats, count, settings.keyframe_tokens)
        keyframe_cost += count(frame if frame is not None else text) + 4
    leftover = after_core - tracker.kept_tokens - count(turn.end_text) - keyframe_cost
    room = max(min(leftover, share_room), share_room // 2)
    if stored.get("share") != tracker.share or int(stored.get("events", -1)) < events:
        session.write_conversation_state({"share": tracker.share, "events": events, "room": room})
    return room


def _cut_for_turn(
    turn: WindowInput,
    tracker: HistoryTracker,
    system_text: str,
    index_lines: int,
    index_tokens: int,
    overhead: int,
) -> HistoryWindow:
    """The tracked cut, pushed further for this turn only when the current turn needs room."""
    count = turn.counter.count
    kept_tokens = tracker.kept_tokens
    # The tracked cut stays, so the next ordinary turn hits the cache again.
    unit = tracker.cut
    reserved = count(system_text) + overhead + kept_tokens + count(turn.end_text) + overhead
    while reserved > turn.budget_counted and unit < len(tracker.bounds):
        reserved -= tracker.unit_tokens[unit]
        kept_tokens -= tracker.unit_tokens[unit]
        unit += 1
    start = tracker.bounds[unit][0] if unit < len(tracker.bounds) else len(turn.history)
    return HistoryWindow(
        kept=turn.history[start:],
        kept_tokens=kept_tokens,
        system_text=system_text,
        dropped_messages=start,
        dropped_tokens=tracker.total_tokens - kept_tokens,
        index_lines=index_lines,
        index_tokens=index_tokens,
        tracker=tracker,
        turn_local_drop=unit - tracker.cut,
    )
