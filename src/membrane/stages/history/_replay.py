"""Index lines of a long replay, made once it ends, for the dropped messages they can show.

A tracker that replays a long history at once (a worker joining a conversation it has never
seen, a stateless caller) drops most of it, and each dropped message used to get its index
line there and then, with the rarity statistics of that moment, only for the line to be
forgotten a moment later: the index shows the newest lines that fit its room
(:meth:`._cut.HistoryTracker.forget_lines`). Here the replay notes each dropped message with
how many documents the statistics held when it was dropped, and logs which counters each new
document raised. At its end the lines are made newest first, on a copy of the statistics
rolled back document by document to each message's moment, until one does not fit the room:
the same lines, made for a few dozen messages instead of thousands.

The log keeps the last :data:`LOGGED_DOCUMENTS` documents. Should the lines that fit reach
further back (a long stretch of messages that earn no line), :meth:`DeferredLines.lines`
returns None and the tracker replays again the ordinary way.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Iterable

from membrane.stages.history._index import IndexLine, could_earn_line, index_line
from membrane.stages.history._shared import Count
from membrane.text.sketch import TermSketch

__all__ = ["LOGGED_DOCUMENTS", "LONG_REPLAY_MESSAGES", "MAX_REPLAY_WORDS", "DeferredLines"]

#: A fresh tracker given at least this many messages at once defers their index lines.
LONG_REPLAY_MESSAGES = 64
#: How many of the newest documents' raised counters a replay keeps.
LOGGED_DOCUMENTS = 16_384
#: How many words' sketch counters a replay remembers (a few MB at most) before starting over.
MAX_REPLAY_WORDS = 100_000


class DeferredLines:
    """The dropped messages of one long replay, and what rolls the statistics back to each."""

    def __init__(self, stats: TermSketch, documents: int) -> None:
        """``documents``: how many documents the replay will add (only the last
        :data:`LOGGED_DOCUMENTS` of them are logged)."""
        self._stats = stats
        self._first_logged = stats.documents + max(documents - LOGGED_DOCUMENTS, 0)
        # (documents once it was added, the counters it raised), newest last
        self._log: deque[tuple[int, array[int]]] = deque(maxlen=LOGGED_DOCUMENTS)
        # (unit, speaker label, text, message index, documents when dropped), in order
        self._dropped: deque[tuple[int, str, str, int, int]] = deque()
        self._forgotten = False
        # Each word's counters in the sketch, for this replay only (a long history uses more
        # words than the process-wide memo of them keeps, and would push them all out).
        self._buckets: dict[str, tuple[int, int]] = {}

    def add_words(self, words: Iterable[str]) -> None:
        """Add one document to the statistics, noting the counters it raised when it is one
        of the last the log keeps."""
        stats, buckets = self._stats, self._buckets
        if len(buckets) >= MAX_REPLAY_WORDS:
            buckets.clear()
        if stats.documents < self._first_logged:
            stats.add_words(words, buckets)
            return
        self._log.append((stats.documents + 1, stats.add_words_noting(words, buckets)))
        # A message dropped before the oldest logged document can no longer be rolled back to.
        oldest = self._log[0][0] - 1
        dropped = self._dropped
        while dropped and dropped[0][4] < oldest:
            dropped.popleft()
            self._forgotten = True

    def drop(self, unit: int, label: str, text: str, message: int, documents: int) -> None:
        """Note a dropped message whose index line may be made at the end."""
        if documents < self._first_logged:
            self._forgotten = True  # no log reaches back to its moment
            return
        self._dropped.append((unit, label, text, message, documents))

    def lines(self, count: Count, frame_tokens: int, room: int) -> list[IndexLine] | None:
        """The index lines a room of ``room`` tokens keeps (as forget_lines would), oldest
        first; None when they reach past what the log can roll back."""
        copy = self._stats.copy()
        log = self._log
        kept: list[IndexLine] = []
        used = 0
        for unit, label, text, at, documents in reversed(self._dropped):
            while copy.documents > documents:
                if not log or log[-1][0] != copy.documents:
                    return None
                copy.undo(log.pop()[1])
            if not could_earn_line(text, copy):
                continue
            line = index_line(unit, label, text, copy, count, frame_tokens, at)
            if line is None:
                continue
            if used + line.tokens + 1 > room:
                break
            used += line.tokens + 1
            kept.append(line)
        else:
            if self._forgotten:  # older messages could have had lines that fit
                return None
        kept.reverse()
        return kept
