"""What the kept window already holds of a query, and whether recall has anything to add.

Every turn is checked: a question against the best kept message sharing two telling words with
it, a turn that asks nothing against what each kept message states.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from membrane.memo import memoised, text_map_bytes
from membrane.stages.history._passages import PassageList, RecalledPassage, stated_memo
from membrane.stages.history._postings import PostingIndex
from membrane.stages.history._score import MAX_POSTINGS_SCANNED, telling_words
from membrane.stages.history._speakers import NO_WRITERS, Writers
from membrane.text.relevance import (
    TermStats,
)
from membrane.text.sentences import split_sentences

__all__ = [
    "MIN_HELD_WORDS",
    "RecallSource",
    "WindowCover",
    "cover_writers",
    "needed_passages",
    "recall_reason",
    "window_cover",
]

# A kept message holds what a dropped one states only when they share this many telling words.
MIN_HELD_WORDS = 2


class RecallSource(Protocol):
    """What recall reads of the history tracker (:class:`._cut.HistoryTracker`)."""

    passages: PassageList
    postings: PostingIndex
    stats: TermStats

    def score_passages(self, query: str, writers: Writers = ...) -> dict[int, float]: ...

    def recalled(self, pid: int) -> RecalledPassage: ...

    def recalled_tokens(self, pid: int) -> int: ...


@dataclass(frozen=True, slots=True)
class WindowCover:
    """What the kept window already holds of a query, by the votes recall scores with.

    ``telling`` maps the query's telling words to their weights; ``held`` lists, for each
    kept message stating some of them, those words with their sentence weights (as a
    passage's postings weigh them). A kept message *holds* a dropped one's words only when
    they share at least ``MIN_HELD_WORDS`` telling words. ``writers`` (the caller's
    speakers) weigh the ranking of dropped passages only.

    For a turn that asks nothing (``asks`` false), a dropped message adds to the window what
    it states of the telling words beyond the kept message holding the most of them. For a
    question, the window answers it as well as the best kept message stating at least
    ``MIN_HELD_WORDS`` telling words does, and a dropped message adds something only when it
    scores higher than that message.
    """

    telling: Mapping[str, float]
    held: tuple[frozenset[tuple[str, float]], ...]
    asks: bool = False
    #: Who writes each role, by the caller's ``speakers`` map (see ``_speakers``).
    writers: Writers = NO_WRITERS


def window_cover(
    texts: Iterable[str],
    query: str,
    stats: TermStats,
    *,
    asks: bool = False,
    writers: Writers = NO_WRITERS,
) -> WindowCover:
    """The query's telling words, and which of them each of ``texts`` (kept messages) states.

    ``asks``: the query asks a question (see :class:`WindowCover`); ``writers`` weigh the
    dropped passages recall ranks (the window is judged by what its messages state).
    """
    telling = telling_words(query, stats)
    held: dict[frozenset[tuple[str, float]], None] = {}
    words = telling.keys()
    for text in texts:
        stated = _stated_text(text)
        shared = words & stated.keys()  # most kept messages state none of them
        if shared:
            held[frozenset((w, stated[w]) for w in shared)] = None
    return WindowCover(telling, tuple(held), asks, writers)


@memoised(0.1, text_map_bytes)
def _stated_text(text: str) -> Mapping[str, float]:
    """:func:`stated_memo` of ``text``'s sentences (a kept message's, read on every turn)."""
    return stated_memo(tuple(split_sentences(text)))


def _gain(stated: Mapping[str, float], cover: WindowCover) -> float:
    """What ``stated`` (telling word -> sentence weight) adds beyond the best kept message.

    Sums here are ``math.fsum``'s, exact whatever order the words come in.
    """
    weights = cover.telling
    shared = {w: weights[w] * h for w, h in stated.items()}
    best = 0.0
    for held in cover.held:
        # One shared word does not show that a kept message says the same thing.
        if sum(1 for w, _ in held if w in shared) >= MIN_HELD_WORDS:
            overlap = math.fsum(min(shared.get(w, 0.0), weights[w] * h) for w, h in held)
            best = max(best, overlap)
    return math.fsum(shared.values()) - best


def _answered(cover: WindowCover) -> float:
    """The score of the best kept message sharing at least ``MIN_HELD_WORDS`` telling words
    with the query (minus infinity when none does): how well the window answers it."""
    weights = cover.telling
    focus = next(iter(weights), None)
    return max(
        (
            math.fsum(weights[w] * h for w, h in held)
            for held in cover.held
            if len(held) >= MIN_HELD_WORDS and any(w == focus for w, _ in held)
        ),
        default=-math.inf,
    )


# The last verdict of needed_passages: one compile asks for it up to four times with the same
# tracker, query and cover (the tracker's counts in the key, as in its score_passages).
_last_needed: tuple[object, object, tuple[str, int, int, float], dict[int, float]] | None = None


def needed_passages(
    tracker: RecallSource, query: str, cover: WindowCover | None, min_score: float
) -> dict[int, float]:
    """The scores of the dropped passages that match ``query`` and add what the window lacks.

    A passage is judged with its whole message, as its score counts the message's context:
    the part of a tool result that holds a value comes back with the part that names it.
    """
    global _last_needed
    key = (query, len(tracker.passages), tracker.stats.documents, min_score)
    last = _last_needed  # one read: another thread may replace it
    if last is not None and last[0] is tracker and last[1] is cover and last[2] == key:
        return last[3]
    needed = _needed_now(tracker, query, cover, min_score)
    _last_needed = (tracker, cover, key, needed)
    return needed


def _needed_now(
    tracker: RecallSource, query: str, cover: WindowCover | None, min_score: float
) -> dict[int, float]:
    scores = tracker.score_passages(query, cover_writers(cover))
    if not scores or max(scores.values()) < min_score:
        return {}
    if cover is None:
        return scores
    messages, telling = tracker.passages.messages, cover.telling
    by_message = _stated_by_message(tracker, scores, telling)
    if cover.asks:
        answered = _answered(cover)
        gains = {
            m: math.fsum(telling[w] * h for w, h in stated.items()) - answered
            for m, stated in by_message.items()
        }
        return {pid: s for pid, s in scores.items() if gains[messages[pid]] > 0.0}
    gains = {message: _gain(stated, cover) for message, stated in by_message.items()}
    return {pid: s for pid, s in scores.items() if gains[messages[pid]] >= min_score}


def _stated_by_message(
    tracker: RecallSource, scores: Mapping[int, float], telling: Mapping[str, float]
) -> dict[int, dict[str, float]]:
    """For each message of a scored passage, the telling words its scored passages state, each
    at its largest sentence weight.

    A word's postings list exactly the passages stating it, with that weight, and every
    passage of a posting recall scans is scored; the few words too common to scan are looked
    up in their postings, for the scored passages alone.
    """
    by_message: dict[int, dict[str, float]] = {}
    unscanned = []
    for w in telling:
        posting = tracker.postings.get(w)
        if not posting:
            continue
        if len(posting) > MAX_POSTINGS_SCANNED:
            unscanned.append(w)
            continue
        for _pid, message, weight in posting:
            stated = by_message.get(message)
            if stated is None:
                by_message[message] = {w: weight}
            elif stated.get(w, 0.0) < weight:
                stated[w] = weight
    messages = tracker.passages.messages
    for w in unscanned:
        for pid, held in tracker.postings.weights_in(w, scores).items():
            stated = by_message[messages[pid]]
            if stated.get(w, 0.0) < held:
                stated[w] = held
    return by_message


def recall_reason(
    tracker: RecallSource, query: str, cover: WindowCover | None, min_score: float
) -> str:
    """Why recall has passages to offer ``query``: ``"needed"``, or why not.

    ``"no_match"``: no dropped passage shares enough telling words with the query;
    ``"window_holds"``: those that do add nothing the kept window lacks (a turn that asks
    nothing); ``"window_answers"``: none of them matches a question better than a kept
    message does.
    """
    if needed_passages(tracker, query, cover, min_score):
        return "needed"
    scores = tracker.score_passages(query, cover_writers(cover))
    if not scores or max(scores.values()) < min_score:
        return "no_match"
    return "window_answers" if cover is not None and cover.asks else "window_holds"


def cover_writers(cover: WindowCover | None) -> Writers:
    return cover.writers if cover is not None else NO_WRITERS
