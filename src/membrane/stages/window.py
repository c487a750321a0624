"""The history window: what of the conversation one turn's prompt shows, and the system text.

The tracked cut (``stages.history``) decides which old messages leave; this stage turns it into
one turn's plan: the kept messages, the eviction index placed after the core in the system
message, its room (decided once per cut and kept in the state store), and a turn-local drop
when the current turn is too large for what history leaves.

It keeps each conversation's tracker between turns, and saves it in the conversation's state
value at every cut (:mod:`membrane.stages.history._snapshot`); a worker without the tracker
restores it from there and reads only the messages after it, or replays the history when the
saved state is missing, unusable or does not describe these messages.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from membrane import config
from membrane.caches import LRUCache
from membrane.compile_state import StateView
from membrane.messages import CheckedPrefix, Message, is_question, message_text
from membrane.prompt_text import INDEX_HEADER
from membrane.report import WindowReport
from membrane.stages.history import (
    HistoryTracker,
    read_snapshot,
    render_index,
    restore_tracker,
    select_index_lines,
    snapshot_tracker,
)
from membrane.stages.values import Budget, HistoryRequest, TurnText
from membrane.text.keyframes import keyframe
from membrane.text.relevance import CombinedStats, TermStats

__all__ = ["HistoryWindow", "WindowInput", "WindowPlanner", "WindowSettings", "tracker_bytes"]

MAX_CONVERSATIONS = 512
#: A worker replays a history this short itself rather than read the state store for it.
SHORT_HISTORY_MESSAGES = 16
_FIELD = "conversation_messages"
# Why a tracker was replayed when the messages it (or the stored snapshot) saw were changed.
_REWRITTEN = frozenset({"edited", "prefix"})
_WINDOW_FIELDS = ("share", "events", "room", "tracker")
# What restore_tracker found wrong with a snapshot that matches the messages' units.
_WRONG = {
    "counts": "token counts are not those of the caller's messages",
    "lines": "index lines are not lines of the caller's dropped messages",
}


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
    # How the tracker came to be: "in_process", "resumed" or "replayed:<why>" (see _restore).
    resume: str | None = None
    #: The caller's index of the last compaction boundary (see HistoryRequest.boundary).
    boundary: int | None = None

    def report(self, core_chars: int | None, counts_supplied: int) -> WindowReport:
        """This stage's part of the compile's report."""
        tracker = self.tracker
        marked = tracker is not None and tracker.boundary >= 0  # the caller marks sessions
        return WindowReport(
            messages_dropped=self.dropped_messages,
            index_lines=self.index_lines,
            index_tokens=self.index_tokens,
            turn_local_drop=self.turn_local_drop,
            cut_moves=(tracker.session_moves, tracker.mid_session_moves)
            if marked and tracker is not None
            else None,
            resume=self.resume,
            core_chars=core_chars,
            counts_supplied=counts_supplied,
            compaction_boundary=self.boundary,
        )


@dataclass(frozen=True, slots=True)
class WindowInput:
    """What the window reads of one compile: the history, the turn's texts, the budget."""

    history: HistoryRequest
    text: TurnText
    budget: Budget
    #: The texts on offer for the middle (the index room keeps a keyframe's room for each).
    offer_texts: Sequence[str]
    #: What a message's images cost beyond their stand-in text (0 for a message without any).
    image_tokens: Callable[[Mapping[str, Any]], int] = lambda _m: 0
    #: What a continued turn's steps after the question take of the budget.
    turn_tokens: int = 0


class WindowPlanner:
    """Plans each turn's history window; keeps one tracker per conversation between turns.

    Its caches are bounded by entries and by bytes: three quarters of the compiler's
    ``cache_bytes`` together (a tenth of that for the system texts, a twentieth for
    :attr:`proofs`, what each conversation's last validated history proved; the rest for the
    trackers, :func:`tracker_bytes` counting one), the least recently used leaving first.
    """

    def __init__(self, cache_bytes: int = config.DEFAULT_CACHE_BYTES) -> None:
        held = cache_bytes - cache_bytes // 4
        self._trackers: LRUCache[tuple[str, int, int, str], HistoryTracker] = LRUCache(
            MAX_CONVERSATIONS, max_bytes=held - held // 10 - held // 20, size=tracker_bytes
        )
        #: Per conversation: what its last validated history proved (see check_history).
        self.proofs: LRUCache[str, CheckedPrefix] = LRUCache(
            MAX_CONVERSATIONS, max_bytes=held // 20, size=CheckedPrefix.held_bytes
        )
        # Per conversation: the last system text with its index (see _system_text).
        # (The tracker by its serial: a reference would keep a tracker the other cache let go.)
        self._system_texts: LRUCache[str, tuple[int, tuple[str, str, int, int], str, int]] = (
            LRUCache(MAX_CONVERSATIONS, max_bytes=held // 10, size=_system_text_bytes)
        )

    def plan(self, given: WindowInput, state: StateView, settings: WindowSettings) -> HistoryWindow:
        if given.history.pinned:
            return self._plan_pinned(given, state, settings)
        count = given.budget.counter.count
        overhead = settings.message_overhead_tokens
        history = given.history.messages
        if not history:
            return HistoryWindow([], 0, given.text.core)
        if not settings.trim_history:
            extra = given.image_tokens
            supplied = given.history.counts or [None] * len(history)
            kept_tokens = sum(
                (count(message_text(m)) if n is None else n) + extra(m) + overhead
                for m, n in zip(history, supplied, strict=True)
            )
            return HistoryWindow(list(history), kept_tokens, given.text.core)
        after_core = max(given.budget.counted - count(given.text.core) - overhead, 0)
        share = max(int(settings.history_share * after_core), 1)
        line_room = _line_room(share, settings)
        tracker, resume, why = self._tracker(given, share, line_room, settings, state)
        if why in _REWRITTEN:  # the stored window state was derived from the old text
            state.drop_conversation_fields(_WINDOW_FIELDS)
        system_text, index_lines, index_tokens, room = given.text.core, 0, 0, None
        if settings.eviction_index and tracker.lines:
            room = _index_room(given, tracker, after_core, settings, state)
            system_text, index_lines = self._system_text(given, tracker, room)
            if index_lines:
                index_tokens = count(system_text) - count(given.text.core)
        _save_state(given, tracker, state, room, line_room)
        window = _cut_for_turn(given, tracker, system_text, index_lines, index_tokens, overhead)
        return replace(window, resume=resume if why is None else f"{resume}:{why}")

    def _plan_pinned(
        self, given: WindowInput, state: StateView, settings: WindowSettings
    ) -> HistoryWindow:
        """The pinned unit (a compaction boundary) first and never cut; the rest is planned in
        what it leaves of the budget, as a history of its own."""
        history, count = given.history, given.budget.counter.count
        pinned, counts = history.pinned, history.counts
        head = history.messages[:pinned]
        supplied = counts[:pinned] if counts is not None else [None] * pinned
        tokens = sum(
            (count(message_text(m)) if n is None else n)
            + given.image_tokens(m)
            + settings.message_overhead_tokens
            for m, n in zip(head, supplied, strict=True)
        )
        rest = replace(
            history,
            messages=history.messages[pinned:],
            counts=counts[pinned:] if counts is not None else None,
            pinned=0,
            proof=None,  # it proves the caller's list, not this part of it
        )
        budget = replace(given.budget, counted=max(given.budget.counted - tokens, 0))
        window = self.plan(replace(given, history=rest, budget=budget), state, settings)
        return replace(
            window,
            kept=[*head, *window.kept],
            kept_tokens=window.kept_tokens + tokens,
            boundary=history.boundary,
        )

    def tracker_of(self, conversation: str) -> HistoryTracker | None:  # read it under its lock
        return self._trackers.find(lambda k: k[0] == conversation)

    def forget(self, conversation: str) -> None:
        """Drop what this planner keeps of ``conversation`` (its tracker, system text, proof)."""
        self._trackers.discard_where(lambda k: k[0] == conversation)
        self._system_texts.discard_where(lambda k: k == conversation)
        self.proofs.discard_where(lambda k: k == conversation)

    def _tracker(
        self,
        given: WindowInput,
        share: int,
        line_room: int,
        settings: WindowSettings,
        state: StateView,
    ) -> tuple[HistoryTracker, str, str | None]:
        """The conversation's tracker, up to date, and whether it was kept, resumed or replayed."""
        counter, conversation = given.budget.counter, given.history.conversation
        key = (conversation, share, max(share // 2, 1), counter.name)
        tracker = self._trackers.get(key)
        resume, why = "in_process", None
        proof = given.history.proof
        if tracker is None or not tracker.matches(
            given.history.messages, proof.proves if proof is not None else None
        ):
            # A tracker of this share that no longer matches means the messages were edited.
            edited = tracker is not None
            tracker, why = _restore(given, share, line_room, settings, state)
            resume = "resumed" if why is None else "replayed"
            if edited and why is not None:
                why = "edited"
            # One tracker per conversation: a new share or a rewritten history replaces it.
            self._trackers.discard_where(lambda k: k[0] == conversation)
        tracker.proof_serial = proof.serial if proof is not None else None
        tracker.update(
            given.history.messages,
            _FIELD,
            given.image_tokens,
            given.history.counts,
            new_session=given.history.new_session,
        )
        tracker.forget_lines(line_room)
        self._trackers.put(key, tracker)  # again: its size has changed
        return tracker, resume, why

    def _system_text(
        self, given: WindowInput, tracker: HistoryTracker, room: int
    ) -> tuple[str, int]:
        """The core and the newest index lines that fit ``room``, and how many lines that is.

        Reused (the same string, its hash and token count already known) while the core, the
        tracker's lines (which change only when the cut moves) and the room stay as they were.
        """
        key = (given.text.core, given.budget.counter.name, tracker.event_count, room)
        cached = self._system_texts.get(given.history.conversation)
        if cached is not None and cached[0] == tracker.serial and cached[1] == key:
            return cached[2], cached[3]
        count = given.budget.counter.count
        first = select_index_lines(tracker.lines, room, count(INDEX_HEADER) + 2)
        index = render_index(tracker.lines[first:])
        text = f"{given.text.core}\n\n{index}" if index else given.text.core
        lines = len(tracker.lines) - first if index else 0
        self._system_texts.put(given.history.conversation, (tracker.serial, key, text, lines))
        return text, lines


def tracker_bytes(tracker: HistoryTracker) -> int:
    """The bytes ``tracker`` holds, counted generously (see :meth:`HistoryTracker.held_bytes`)."""
    return tracker.held_bytes()


def _system_text_bytes(cached: tuple[int, tuple[str, str, int, int], str, int]) -> int:
    # The text, and the entry's tuples and numbers (the core is held elsewhere).
    return sys.getsizeof(cached[2]) + 300


def _line_room(share: int, settings: WindowSettings) -> int:
    """The largest index room any budget giving ``share`` can choose (see :func:`_index_room`).

    Index lines that would not fit it are forgotten, by every worker alike.
    """
    return int(settings.index_share * (share + 1) / settings.history_share) + 1


def _restore(
    given: WindowInput,
    share: int,
    line_room: int,
    settings: WindowSettings,
    state: StateView,
) -> tuple[HistoryTracker, str | None]:
    """The tracker saved in the state store, or a new one and why the saved one was not used.

    The reasons: ``"short"`` (at most :data:`SHORT_HISTORY_MESSAGES` messages: replaying them
    costs less than a store read), ``"no_state"`` (nothing saved, or of another version),
    ``"invalid"`` (it failed its checks, or its counts or index lines are not what the
    caller's messages give: discarded with a StateStoreWarning), ``"settings"``
    (saved for another share, counter or option), ``"prefix"`` and ``"units"`` (see
    :func:`restore_tracker`).
    """
    counter = given.budget.counter
    overhead, frame = settings.message_overhead_tokens, settings.keyframe_tokens
    fresh = HistoryTracker(
        share, max(share // 2, 1), counter.count, overhead, frame, line_room=line_room
    )
    if len(given.history.messages) <= SHORT_HISTORY_MESSAGES:
        return fresh, "short"
    saved = state.conversation_state.get("tracker")
    if saved is None:
        return fresh, "no_state"
    try:
        snapshot = read_snapshot(saved)
    except ValueError as exc:
        state.reject_conversation_state(f"its history snapshot is unusable: {exc}")
        return fresh, "invalid"
    wanted = (share, max(share // 2, 1), overhead, frame, line_room)
    if snapshot.settings != wanted or snapshot.counter != counter.name:
        return fresh, "settings"
    version = given.history.proof.version if given.history.proof is not None else None
    history = given.history
    restored = restore_tracker(
        snapshot,
        history.messages,
        counter.count,
        version,
        _FIELD,
        given.image_tokens,
        history.counts,
    )
    if isinstance(restored, str):
        if restored in _WRONG:
            state.reject_conversation_state(f"its history snapshot's {_WRONG[restored]}")
            return fresh, "invalid"
        return fresh, restored
    return restored, None


def _index_room(
    given: WindowInput,
    tracker: HistoryTracker,
    after_core: int,
    settings: WindowSettings,
    state: StateView,
) -> int:
    """The index block's room: decided by the first compile that sees a cut, then kept.

    It is what history, the current turn and one keyframe per memory on offer leave of the
    budget, between half of ``index_share`` and all of it.
    """
    stored = state.window_fields
    events = tracker.event_count
    share_room = int(settings.index_share * after_core)
    if stored.get("room", 0) > share_room:  # no compile under this budget could have chosen it
        stored = state.reject_conversation_state(
            f"room {stored['room']} is above this budget's index share of {share_room} tokens"
        )
    if "room" in stored and stored.get("share") == tracker.share and stored.get("events") == events:
        return int(stored["room"])
    count = given.budget.counter.count
    stats = CombinedStats(tracker.stats, TermStats(given.offer_texts))
    keyframe_cost = 0
    for text in given.offer_texts:
        frame = keyframe(text, stats, count, settings.keyframe_tokens)
        keyframe_cost += count(frame if frame is not None else text) + 4
    leftover = after_core - tracker.kept_tokens - count(given.text.end_text) - keyframe_cost
    return max(min(leftover, share_room), share_room // 2)


def _save_state(
    given: WindowInput,
    tracker: HistoryTracker,
    state: StateView,
    room: int | None,
    line_room: int,
) -> None:
    """Save the tracker with the index room when the cut has moved (or the share changed).

    Not when the stored state is further along for this share: another worker got there first.
    """
    events = tracker.event_count
    if not events:
        return  # nothing cut yet: replaying is as cheap as restoring
    stored = state.window_fields
    same_share = stored.get("share") == tracker.share
    stored_events = int(stored.get("events", -1)) if same_share else -1
    if stored_events > events or (stored_events == events and "tracker" in stored):
        return
    proof = given.history.proof
    value: dict[str, Any] = {
        "share": tracker.share,
        "events": events,
        "tracker": snapshot_tracker(
            tracker,
            counter=given.budget.counter.name,
            line_room=line_room,
            messages=given.history.messages,
            digest=proof.digest
            if proof is not None and proof.length == len(given.history.messages)
            else None,
            version=proof.version if proof is not None else None,
        ),
    }
    if room is not None:
        value["room"] = room
    state.write_conversation_state(value)


def _cut_for_turn(
    given: WindowInput,
    tracker: HistoryTracker,
    system_text: str,
    index_lines: int,
    index_tokens: int,
    overhead: int,
) -> HistoryWindow:
    """The tracked cut, pushed further for this turn only when the current turn needs room."""
    count = given.budget.counter.count
    kept_tokens = tracker.kept_tokens
    # The tracked cut stays, so the next ordinary turn hits the cache again.
    unit = tracker.cut
    reserved = count(system_text) + overhead + kept_tokens + count(given.text.end_text) + overhead
    reserved += given.turn_tokens
    while reserved > given.budget.counted and unit < len(tracker.bounds):
        reserved -= tracker.unit_tokens[unit]
        kept_tokens -= tracker.unit_tokens[unit]
        unit += 1
    # What is kept after a cut opens with a question: an answer never outlives its question,
    # and some APIs (Bedrock's Converse) refuse a conversation that opens otherwise.
    messages = given.history.messages
    while 0 < unit < len(tracker.bounds) and not is_question(messages[tracker.bounds[unit][0]]):
        kept_tokens -= tracker.unit_tokens[unit]
        unit += 1
    start = tracker.bounds[unit][0] if unit < len(tracker.bounds) else len(given.history.messages)
    return HistoryWindow(
        kept=given.history.messages[start:],
        kept_tokens=kept_tokens,
        system_text=system_text,
        dropped_messages=start,
        dropped_tokens=tracker.total_tokens - kept_tokens,
        index_lines=index_lines,
        index_tokens=index_tokens,
        tracker=tracker,
        turn_local_drop=unit - tracker.cut,
    )
