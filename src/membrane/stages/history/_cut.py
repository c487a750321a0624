"""The cut: which oldest units of the history are dropped, replayed one unit at a time.

Replay the conversation one unit at a time and, whenever the kept part outgrows the share,
drop the oldest units until at least a chunk is gone and the rest fits. Because it is a
replay, any worker that sees the same history puts the cut in the same place, and the cut
only moves when a chunk goes, which keeps the cached prefix byte-stable in between.

Sessions: a move breaks the provider's cached prefix, unless the cache has expired anyway.
That is so at a session boundary: before a unit whose first message is stamped more than
:data:`membrane.config.PROMPT_CACHE_TTL_SECONDS` after the message before it (see
:mod:`membrane.messages._time`), or at the end of the history on a compile the caller marks
``new_session=True``. There the cut moves early when the kept part has no room for another
session as long as the one that just ended (counting at most a chunk): it drops the oldest
units until that room is free, so the next session's turns rarely force a move while their
cache is warm.

:class:`HistoryTracker` is the incremental form of that replay (work per turn is the new
messages); :func:`reference_cut` is the slow, obvious form the tests compare it with. Each
unit the cut drops is handed to the index (:mod:`._index`) and to recall (:mod:`._recall`).
"""

from __future__ import annotations

import itertools
import sys
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from membrane import config
from membrane.messages import (
    group_units,
    history_text,
    is_call_stub,
    message_text,
    speaker_label,
    tool_call_labels,
    writer_name,
)
from membrane.stages.history._index import IndexLine, index_line
from membrane.stages.history._passages import (
    PassageList,
    RecalledPassage,
    passages_of,
    recalled_line_of,
)
from membrane.stages.history._postings import LazyPostings, PostingIndex
from membrane.stages.history._replay import LONG_REPLAY_MESSAGES, DeferredLines
from membrane.stages.history._score import score_passages
from membrane.stages.history._shared import Count
from membrane.stages.history._speakers import NO_WRITERS, Writers
from membrane.stages.history._units import (
    CutEvent,
    UnitBounds,
    reference_cut,
    session_gap,
    unit_key,
)
from membrane.text.relevance import (
    TermStats,
    content_words,
    distinct_content_words,
)
from membrane.text.sentences import split_sentences
from membrane.text.sketch import TermSketch
from membrane.tokenizers import count_each

__all__ = [
    "MAX_RECALLED_COUNTS",
    "CutEvent",
    "HistoryTracker",
    "reference_cut",
    "session_gap",
    "unit_key",
]

# What :meth:`HistoryTracker.held_bytes` counts for each kind of thing a tracker keeps, besides
# its text, measured (sys.getsizeof) and rounded up: the tracker itself; a unit (its bounds and
# token count, packed in arrays, its 16-byte digest and list slot); a cut event; an
# index line's object, picks and numbers; a recalled passage's object, number and dict slot;
# a score kept for the next look-up. Passages and postings count their own bytes.
_TRACKER_BYTES = 4_000
_SERIALS = itertools.count()
#: How many recalled passages' counts a tracker keeps.
MAX_RECALLED_COUNTS = 4096
# A kept count: the dict slot and the int.
_COUNT_BYTES = 130
_UNIT_BYTES = 180
_EVENT_BYTES = 130
_LINE_BYTES = 260
_SCORE_BYTES = 110


def _sentence_words(text: str) -> set[str]:
    """The content words of ``text``'s sentences (those of the whole text)."""
    return set(itertools.chain.from_iterable(map(content_words, split_sentences(text))))


@dataclass
class HistoryTracker:
    """The incremental replay of one conversation's history for one share and chunk.

    Feed it the whole history each turn with :meth:`update`; it checks that what it saw before
    is still the start of the history (otherwise it starts over) and processes only the rest.
    ``boundary``, ``session_tokens``, ``session_moves`` and ``mid_session_moves`` are the
    session state (see the module): the units before the last session boundary (-1: none
    yet), the tokens added since, and how many cut moves fell on a boundary or between two.

    A tracker restored from the state store (:mod:`._snapshot`) knows the units before its cut
    by their bounds only: their ``unit_tokens`` are 0 and their ``unit_keys`` empty (unit 0's
    aside), and ``events`` lists only the cut events since, after ``resumed_events`` others.
    """

    share: int
    chunk: int
    count: Count
    overhead: int
    keyframe_tokens: int
    bounds: UnitBounds = field(default_factory=UnitBounds)
    unit_tokens: array[int] = field(default_factory=lambda: array("q"))
    unit_keys: list[bytes] = field(default_factory=list)
    cut: int = 0
    kept_tokens: int = 0
    total_tokens: int = 0
    events: list[CutEvent] = field(default_factory=list)
    boundary: int = -1
    session_tokens: int = 0
    session_moves: int = 0
    mid_session_moves: int = 0
    lines: list[IndexLine] = field(default_factory=list)
    passages: PassageList = field(default_factory=PassageList)
    postings: PostingIndex = field(init=False)
    #: Some dropped message names its writer (its ``name`` field; see ``_speakers``).
    has_writers: bool = False
    stats: TermStats = field(default_factory=TermSketch)
    resumed_events: int = 0
    #: The serial of the history validation whose messages it last read (see :meth:`matches`).
    proof_serial: int | None = None
    #: A number no other tracker of this process has (a cache of its output names it by this).
    serial: int = field(default_factory=lambda: next(_SERIALS))
    #: The index room its lines are kept for (see :meth:`forget_lines`); with it, a fresh
    #: tracker given a long history makes only the index lines that room keeps (``_replay``).
    line_room: int | None = None
    #: How many messages and passages were handed to a background embedder (see ``_meaning``).
    prefetched_messages: int = 0
    prefetched_passages: int = 0
    # pid -> its recalled line's tokens, for up to MAX_RECALLED_COUNTS passages
    _recalled_tokens: dict[int, int] = field(default_factory=dict)
    # A long replay's dropped messages, while it runs (see _replay).
    _deferred: DeferredLines | None = None
    _last_scores: tuple[tuple[str, int, int, Writers], dict[int, float]] | None = None

    def __post_init__(self) -> None:
        self.postings = PostingIndex(self.passages)

    @property
    def seen_messages(self) -> int:
        return self.bounds[-1][1] if self.bounds else 0

    @property
    def event_count(self) -> int:
        """How many times the cut has moved since the conversation began."""
        return self.resumed_events + len(self.events)

    def matches(self, messages: Sequence[Mapping[str, Any]], proved: int | None = None) -> bool:
        """True when the history this tracker saw is still the start of ``messages``.

        Every unit is compared, kept or dropped: an edit anywhere (a redaction of an old
        message, a rewrite of a kept one) must reach the cut, the index and recall. The
        comparison is skipped when ``proved`` is the serial of the validation whose messages
        the tracker last read (:attr:`proof_serial`) and this turn's validation proved them
        unchanged (:class:`membrane.messages.CheckedPrefix`). A unit whose key the tracker does
        not know (a restored tracker's dropped units) cannot be compared: no match.

        A tracker that has seen nothing matches nothing: it is replaced, never shared.
        """
        if not self.bounds:
            return False
        if len(messages) < self.seen_messages:
            return False
        if proved is not None and proved == self.proof_serial:
            return True
        for (start, stop), known in zip(self.bounds, self.unit_keys, strict=True):
            if not known or unit_key(messages[start:stop]) != known:
                return False
        return True

    def update(
        self,
        messages: Sequence[Mapping[str, Any]],
        field_name: str,
        image_tokens: Callable[[Mapping[str, Any]], int] | None = None,
        counts: Sequence[int | None] | None = None,
        *,
        new_session: bool = False,
    ) -> None:
        """Process the messages after the ones already seen (validated by the caller).

        ``image_tokens`` prices a message's images; each message is priced when first seen.
        ``new_session`` marks a session boundary after the last message (this turn's cache is
        cold).
        ``counts`` (parallel to ``messages``) are the caller's counts of their texts, used in
        place of counting where not None.
        """
        self._file_early_passages()
        offset = self.seen_messages
        new = messages[offset:]
        deferred = self._deferred = self._deferral(len(new))
        texts = [message_text(m) for m in new]
        given = counts[offset:] if counts is not None else None
        text_tokens = self._text_tokens(texts, given, bulk=deferred is not None)
        ttl = config.PROMPT_CACHE_TTL_SECONDS
        for unit in group_units(new, field=field_name, offset=offset):
            start, stop = unit.start + offset, unit.stop + offset
            if start and session_gap(messages[start - 1], messages[start], ttl):
                self._session_boundary(len(self.bounds), messages)
            span = messages[start:stop]
            span_texts = texts[unit.start : unit.stop]
            tokens = sum(text_tokens[unit.start : unit.stop]) + self.overhead * len(span)
            if image_tokens is not None:
                tokens += sum(image_tokens(m) for m in span)
            self.bounds.append((start, stop))
            self.unit_tokens.append(tokens)
            self.unit_keys.append(unit_key(span, span_texts))
            for text in span_texts:
                self._add_words(text, deferred)
            self.kept_tokens += tokens
            self.total_tokens += tokens
            self.session_tokens += tokens
            if self.kept_tokens > self.share:
                self._cut(len(self.bounds) - 1, messages)
        if new_session:
            self._session_boundary(len(self.bounds), messages)
        if deferred is not None:
            self._deferred = None
            lines = deferred.lines(self.count, self.keyframe_tokens, self.line_room or 0)
            if lines is None:  # they reach past the log: replay making every line
                self._replay_again(messages, field_name, image_tokens, counts, new_session)
                return
            self.lines, self.postings = lines, LazyPostings(self.passages, len(self.passages))
            self.postings.used = True  # by this compile
        self.postings.seal()

    def _text_tokens(
        self, texts: Sequence[str], given: Sequence[int | None] | None, *, bulk: bool
    ) -> list[int]:
        """Each text's tokens: the caller's count where it gave one, else counted. A long
        replay counts its texts in one go, leaving the counter's memo as it was (they are
        read once; see :func:`membrane.tokenizers.count_each`)."""
        if given is None:
            wanted: Sequence[str] = texts
        else:
            wanted = [text for text, n in zip(texts, given, strict=True) if n is None]
        fresh = iter(count_each(self.count, wanted) if bulk else [self.count(t) for t in wanted])
        if given is None:
            return list(fresh)
        return [next(fresh) if n is None else n for n in given]

    def _add_words(self, text: str, deferred: DeferredLines | None) -> None:
        """Add a new message's content words to the statistics (a long replay notes them)."""
        if deferred is not None:  # read once: no memo
            deferred.add_words(distinct_content_words(text))
        else:
            # Read by sentence (as a set, the whole text's words): the window's check reads
            # the same sentences' words this turn, and last turn's question has them already.
            self.stats.add_words(_sentence_words(text))

    def _file_early_passages(self) -> None:
        """File the passages a lazy index finds per word, from its second compile on: reading
        every early passage to find a word suits one compile (a joining worker's first), not
        every turn after it."""
        postings = self.postings
        if isinstance(postings, LazyPostings):
            if postings.used:
                self.postings = postings.filed()
            postings.used = True

    def _deferral(self, new: int) -> DeferredLines | None:
        """Whether this update is a long replay whose index lines are made at its end."""
        stats = self.stats
        if not isinstance(stats, TermSketch) or self.bounds or self.line_room is None:
            return None
        return DeferredLines(stats, new) if new >= LONG_REPLAY_MESSAGES else None

    def _replay_again(
        self,
        messages: Sequence[Mapping[str, Any]],
        field_name: str,
        image_tokens: Callable[[Mapping[str, Any]], int] | None,
        counts: Sequence[int | None] | None,
        new_session: bool,
    ) -> None:
        """Replay from the start making every index line as its message is dropped (when the
        lines a long replay keeps reach past what it logged)."""
        again = HistoryTracker(
            self.share, self.chunk, self.count, self.overhead, self.keyframe_tokens
        )
        again.update(messages, field_name, image_tokens, counts, new_session=new_session)
        again.proof_serial, again.line_room = self.proof_serial, self.line_room
        self.__dict__.update(again.__dict__)

    def _cut(self, newest: int, messages: Sequence[Mapping[str, Any]]) -> None:
        dropped = 0
        while self.cut <= newest and (dropped < self.chunk or self.kept_tokens > self.share):
            self.kept_tokens -= self.unit_tokens[self.cut]
            dropped += self.unit_tokens[self.cut]
            self._evict(self.cut, messages)
            self.cut += 1
        self.events.append(CutEvent(seen=newest + 1, cut=self.cut))
        self.mid_session_moves += 1

    def _session_boundary(self, seen: int, messages: Sequence[Mapping[str, Any]]) -> None:
        """A session starts after unit ``seen - 1``: count the moves made there, move early."""
        if seen == 0 or seen == self.boundary:  # a boundary is applied once
            return
        self.boundary = seen
        # Moves already made on reaching this boundary broke no warm cache after all.
        for event in reversed(self.events):
            if event.seen != seen:
                break
            self.mid_session_moves -= 1
            self.session_moves += 1
        room = min(self.session_tokens, self.chunk)
        self.session_tokens = 0
        if self.kept_tokens + room <= self.share or self.cut >= seen:
            return
        while self.cut < seen and self.kept_tokens + room > self.share:
            self.kept_tokens -= self.unit_tokens[self.cut]
            self._evict(self.cut, messages)
            self.cut += 1
        self.events.append(CutEvent(seen=seen, cut=self.cut))
        self.session_moves += 1

    def _evict(self, unit: int, messages: Sequence[Mapping[str, Any]]) -> None:
        """Hand each message of a dropped unit to recall and, unless it only calls, the index."""
        deferred = self._deferred
        for at, label, text in self.add_passages(unit, messages, post=deferred is None):
            if is_call_stub(messages[at]):
                continue
            if deferred is not None:
                deferred.drop(unit, label, text, at, self.stats.documents)
                continue
            frame = self.keyframe_tokens
            line = index_line(unit, label, text, self.stats, self.count, frame, at)
            if line is not None:
                self.lines.append(line)

    def add_passages(
        self, unit: int, messages: Sequence[Mapping[str, Any]], *, post: bool = True
    ) -> list[tuple[int, str, str]]:
        """Cut a dropped unit's messages into recall passages; returns each message with text
        (its index in ``messages``), its speaker label and its text (a restored tracker
        re-derives passages with this, and ``post=False`` leaves their postings to be filled
        in per word, see ``_snapshot``)."""
        start, stop = self.bounds[unit]
        span = messages[start:stop]
        calls = tool_call_labels(span)
        spoken = []
        for offset, message in enumerate(span):
            text = history_text(message)
            if not text.strip():
                continue
            label = speaker_label(message, calls)
            writer = writer_name(message)
            self.has_writers = self.has_writers or writer is not None
            # Passages re-derived in bulk (post=False) split their texts once, memo aside.
            found = passages_of(unit, start + offset, label, text, writer, memoise=post)
            for passage in found:
                if post:
                    self.postings.add(len(self.passages), passage)
                self.passages.append(passage)
            spoken.append((start + offset, label, text))
        return spoken

    def forget_lines(self, room: int) -> None:
        """Drop the index lines no room of at most ``room`` tokens could show again.

        The index shows the newest lines that fit (:func:`._index.select_index_lines`), so a
        line is kept while it and every newer one fit ``room``, each with its line break.
        """
        used, first = 0, len(self.lines)
        while first > 0 and used + self.lines[first - 1].tokens + 1 <= room:
            first -= 1
            used += self.lines[first].tokens + 1
        if first:
            del self.lines[:first]

    def recalled(self, pid: int) -> RecalledPassage:
        """Passage ``pid`` recalled whole (its tokens count the line break after it)."""
        passages = self.passages
        role = passages.role(pid)
        line = recalled_line_of(role, passages.text(pid))
        return RecalledPassage(pid, role, line, self.recalled_tokens(pid, line))

    def recalled_tokens(self, pid: int, line: str | None = None) -> int:
        """The tokens of passage ``pid`` recalled whole (``line``: its line, when known)."""
        tokens = self._recalled_tokens.get(pid)
        if tokens is None:
            # Recall weighs a few dozen candidates a turn, often the same ones turn after turn:
            # their counts are kept here (a number each), their lines in a process-wide memo.
            if line is None:
                line = recalled_line_of(self.passages.role(pid), self.passages.text(pid))
            tokens = self.count(line) + 1
            if len(self._recalled_tokens) >= MAX_RECALLED_COUNTS:
                self._recalled_tokens.clear()
            self._recalled_tokens[pid] = tokens
        return tokens

    def held_bytes(self) -> int:
        """The bytes this tracker holds, counted generously (objects shared with others, such
        as interned words and the labels of roles, counted as its own).

        Per unit its bounds, count and digest; per cut event, index line, passage and
        recalled passage their objects and text; the postings; the statistics' counters.
        """
        stats = self.stats
        stats_bytes = stats.held_bytes() if isinstance(stats, TermSketch) else 0
        lines = sum(
            _LINE_BYTES + sys.getsizeof(line.text) + 8 * len(line.picks) for line in self.lines
        )
        scores = len(self._last_scores[1]) if self._last_scores is not None else 0
        return (
            _TRACKER_BYTES
            + stats_bytes
            + _UNIT_BYTES * len(self.bounds)
            + _EVENT_BYTES * len(self.events)
            + lines
            + self.passages.bytes()
            + _COUNT_BYTES * len(self._recalled_tokens)
            + self.postings.bytes()
            + _SCORE_BYTES * scores
        )

    def score_passages(self, query: str, writers: Writers = NO_WRITERS) -> dict[int, float]:
        """Relevance of each dropped passage to ``query``; see :func:`._score.score_passages`."""
        # Rarities move with every message seen, so the memo holds within one compile only.
        key = (query, len(self.passages), self.stats.documents, writers)
        if self._last_scores is not None and self._last_scores[0] == key:
            return self._last_scores[1]
        named = writers if writers.by_role or self.has_writers else None
        scores = score_passages(self.passages, self.postings, self.stats, query, named)
        self._last_scores = (key, scores)
        return scores
