"""Recall: dropped passages (:mod:`._passages`) scored against the turn, and brought back.

An inverted index (word -> passages) lets a query score only the passages that share one of
its most telling words; :func:`select_passages` then fills the recall room with the best of
them, cutting a passage to its best sentence when the whole one does not fit.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from membrane.prompt_text import recalled_line
from membrane.stages.history._passages import Passage, Postings, stated_memo
from membrane.stages.history._shared import Count
from membrane.stages.history._speakers import NO_WRITERS, Writers
from membrane.text.relevance import (
    TermStats,
    content_words,
    query_weights,
    rank_fusion,
    stem,
)
from membrane.text.sentences import split_sentences

if TYPE_CHECKING:
    from membrane.stages.history._cut import HistoryTracker

__all__ = [
    "MAX_POSTINGS_SCANNED",
    "RecalledPassage",
    "WindowCover",
    "recall_candidates",
    "recall_reason",
    "recalled_whole",
    "score_passages",
    "select_passages",
    "telling_words",
    "window_cover",
]

# Query words found in more passages than this are too common to tell passages apart.
MAX_POSTINGS_SCANNED = 128
_MESSAGE_CONTEXT_WEIGHT = 0.5
# Recall looks at the best-scoring passages only, and stops when what is left of its room
# could not hold a useful one.
_MAX_RECALL_CANDIDATES = 48
# A passage is a candidate when it scores this share of the best passage's score.
MIN_RELATIVE_SCORE = 0.3
_MAX_QUERY_WORDS = 16
_MIN_USEFUL_PASSAGE_TOKENS = 12
# A kept message holds what a dropped one states only when they share this many telling words.
_MIN_HELD_WORDS = 2


@dataclass(frozen=True, slots=True)
class WindowCover:
    """What the kept window already holds of a query, by the votes recall scores with.

    ``telling`` maps the query's telling words to their weights; ``held`` lists, for each
    kept message stating some of them, those words with their sentence weights (as a
    passage's postings weigh them). A kept message *holds* a dropped one's words only when
    they share at least ``_MIN_HELD_WORDS`` telling words. ``writers`` (the caller's
    speakers) weigh the ranking of dropped passages only.

    For a turn that asks nothing (``asks`` false), a dropped message adds to the window what
    it states of the telling words beyond the kept message holding the most of them. For a
    question, the window answers it as well as the best kept message stating at least
    ``_MIN_HELD_WORDS`` telling words does, and a dropped message adds something only when it
    scores higher than that message.
    """

    telling: Mapping[str, float]
    held: tuple[frozenset[tuple[str, float]], ...]
    asks: bool = False
    #: Who writes each role, by the caller's ``speakers`` map (see ``_speakers``).
    writers: Writers = NO_WRITERS


@dataclass(frozen=True, slots=True)
class RecalledPassage:
    """A dropped passage chosen to come back, possibly cut to its best sentence."""

    pid: int
    role: str
    text: str
    tokens: int


def recalled_whole(pid: int, passage: Passage, count: Count) -> RecalledPassage:
    """Passage ``pid`` recalled whole (its tokens count the line break after it)."""
    line = recalled_line(passage.role, passage.text)
    return RecalledPassage(pid, passage.role, line, count(line) + 1)


def _gains(
    posting: list[tuple[int, int, float]],
    weight: float,
    own: dict[int, float],
    context: dict[int, float],
) -> None:
    """Add one query word's gain to each passage holding it and to its message's best."""
    # A message's passages have consecutive pids, so its entries are adjacent here:
    # its best gain for this word is complete when the next message starts.
    current, best = posting[0][1], 0.0
    for pid, message, sentence_weight in posting:
        gain = weight * sentence_weight
        own[pid] = own.get(pid, 0.0) + gain
        if message != current:
            context[current] = context.get(current, 0.0) + best
            current, best = message, gain
        elif gain > best:
            best = gain
    context[current] = context.get(current, 0.0) + best


# The last answer of telling_words: one compile asks for it up to four times with the same
# query and statistics (their document count in the key: rarities move with every message).
_last_telling: tuple[TermStats, int, str, dict[str, float]] | None = None


def telling_words(query: str, stats: TermStats) -> dict[str, float]:
    """The query's most telling words (stems), most telling first, each with weight times rarity.

    A word's rarity is that of the form the query writes; forms that share a stem keep the
    largest weight. The mapping may be shared with other callers: read it, never change it.
    """
    global _last_telling
    last = _last_telling  # one read: another thread may replace it
    if last is not None and last[0] is stats and last[1] == stats.documents and last[2] == query:
        return last[3]
    telling = _telling_now(query, stats)
    _last_telling = (stats, stats.documents, query, telling)
    return telling


def _telling_now(query: str, stats: TermStats) -> dict[str, float]:
    weights = query_weights(query)
    rarity = stats.idfs(weights)
    stems: dict[str, float] = {}
    for (w, q), r in zip(weights.items(), rarity, strict=True):
        key = stem(w)
        stems[key] = max(stems.get(key, 0.0), q * r)
    # Most telling first: by weight, then by word (negated, so plain tuple order does it).
    ranked = sorted([(-weight, w) for w, weight in stems.items()])
    return {w: -negated for negated, w in ranked[:_MAX_QUERY_WORDS]}


def score_passages(
    passages: Sequence[Passage],
    postings: Postings,
    stats: TermStats,
    query: str,
    writers: Writers | None = None,
) -> dict[int, float]:
    """Relevance of each dropped passage to ``query`` (only passages sharing a word).

    A passage's own shared rare words count fully; the words its message shares count
    at half weight on top, so the part of a record that holds the answer ranks with the
    part that names the record. Only the query's most telling words are looked up, which
    bounds the work however long the conversation grows.

    With ``writers``, a passage gains what its writer's name weighs when the query names them
    (:meth:`._speakers.Writers.gain`).
    """
    own: dict[int, float] = {}
    context: dict[int, float] = {}
    telling = telling_words(query, stats)
    for w, weight in telling.items():
        posting = postings.get(w)
        if posting and len(posting) <= MAX_POSTINGS_SCANNED:
            _gains(posting, weight, own, context)
    scores = {
        pid: score + _MESSAGE_CONTEXT_WEIGHT * context[passages[pid].message]
        for pid, score in own.items()
    }
    if writers is not None:
        for pid in scores:
            scores[pid] += writers.gain(passages[pid], telling)
    return scores


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
    for text in texts:
        stated = _stated_text(text)
        found = frozenset((w, stated[w]) for w in telling if w in stated)
        if found:
            held[found] = None
    return WindowCover(telling, tuple(held), asks, writers)


@functools.lru_cache(maxsize=16_384)
def _stated_text(text: str) -> Mapping[str, float]:
    """:func:`stated_memo` of ``text``'s sentences (a kept message's, read on every turn)."""
    return stated_memo(tuple(split_sentences(text)))


def _gain(stated: Mapping[str, float], cover: WindowCover) -> float:
    """What ``stated`` (telling word -> sentence weight) adds beyond the best kept message."""
    weights = cover.telling
    shared = {w: weights[w] * h for w, h in sorted(stated.items())}
    best = 0.0
    for held in cover.held:
        # One shared word does not show that a kept message says the same thing.
        if sum(1 for w, _ in held if w in shared) >= _MIN_HELD_WORDS:
            overlap = math.fsum(min(shared.get(w, 0.0), weights[w] * h) for w, h in held)
            best = max(best, overlap)
    return math.fsum(shared.values()) - best


def _answered(cover: WindowCover) -> float:
    """The score of the best kept message sharing at least ``_MIN_HELD_WORDS`` telling words
    with the query (minus infinity when none does): how well the window answers it."""
    weights = cover.telling
    focus = next(iter(weights), None)
    return max(
        (
            math.fsum(weights[w] * h for w, h in sorted(held))
            for held in cover.held
            if len(held) >= _MIN_HELD_WORDS and any(w == focus for w, _ in held)
        ),
        default=-math.inf,
    )


# The last verdict of _needed: one compile asks for it up to four times with the same tracker,
# query and cover (the tracker's counts in the key, as in HistoryTracker.score_passages).
_last_needed: tuple[object, object, tuple[str, int, int, float], dict[int, float]] | None = None


def _needed(
    tracker: HistoryTracker, query: str, cover: WindowCover | None, min_score: float
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
    tracker: HistoryTracker, query: str, cover: WindowCover | None, min_score: float
) -> dict[int, float]:
    scores = tracker.score_passages(query, _writers(cover))
    if not scores or max(scores.values()) < min_score:
        return {}
    if cover is None:
        return scores
    passages, telling = tracker.passages, cover.telling
    by_message = _stated_by_message(tracker, scores, telling)
    if cover.asks:
        answered = _answered(cover)
        gains = {
            m: math.fsum(telling[w] * h for w, h in sorted(stated.items())) - answered
            for m, stated in by_message.items()
        }
        return {pid: s for pid, s in scores.items() if gains[passages[pid].message] > 0.0}
    gains = {message: _gain(stated, cover) for message, stated in by_message.items()}
    return {pid: s for pid, s in scores.items() if gains[passages[pid].message] >= min_score}


def _stated_by_message(
    tracker: HistoryTracker, scores: Mapping[int, float], telling: Mapping[str, float]
) -> dict[int, dict[str, float]]:
    """For each message of a scored passage, the telling words its scored passages state, each
    at its largest sentence weight.

    A word's postings list exactly the passages stating it, with that weight, and every
    passage of a posting recall scans is scored; the few words too common to scan are read
    from the scored passages themselves.
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
    if unscanned:
        passages = tracker.passages
        for pid in scores:
            own = stated_memo(passages[pid].sentences)
            stated = by_message[passages[pid].message]
            for w in unscanned:
                held = own.get(w)
                if held is not None and stated.get(w, 0.0) < held:
                    stated[w] = held
    return by_message


def recall_reason(
    tracker: HistoryTracker, query: str, cover: WindowCover | None, min_score: float
) -> str:
    """Why recall has passages to offer ``query``: ``"needed"``, or why not.

    ``"no_match"``: no dropped passage shares enough telling words with the query;
    ``"window_holds"``: those that do add nothing the kept window lacks (a turn that asks
    nothing); ``"window_answers"``: none of them matches a question better than a kept
    message does.
    """
    if _needed(tracker, query, cover, min_score):
        return "needed"
    scores = tracker.score_passages(query, _writers(cover))
    if not scores or max(scores.values()) < min_score:
        return "no_match"
    return "window_answers" if cover is not None and cover.asks else "window_holds"


def _writers(cover: WindowCover | None) -> Writers:
    return cover.writers if cover is not None else NO_WRITERS


def _best_sentence(passage: Passage, telling: Mapping[str, float]) -> str:
    def score(sentence: str) -> float:
        shared = telling.keys() & set(map(stem, content_words(sentence)))
        return math.fsum(telling[w] for w in shared)  # order-free, see keyframes

    return max(passage.sentences, key=score)


def recall_candidates(
    tracker: HistoryTracker,
    query: str,
    *,
    min_score: float = 0.0,
    min_relative_score: float = MIN_RELATIVE_SCORE,
    cover: WindowCover | None = None,
) -> list[int]:
    """The dropped passages recall may bring back for ``query``: pids, best word match first.

    A passage qualifies when it scores at least ``min_relative_score`` of the best score, and
    only when the best reaches ``min_score`` (and, with ``cover``, only passages adding what the
    kept window lacks); ties go to the newest. An embedder's ranking vote only reorders these;
    passages close in meaning come from their own list (``nearest`` in :func:`select_passages`).
    """
    scores = _needed(tracker, query, cover, min_score)
    if not scores:
        return []
    floor = max(scores.values()) * min_relative_score
    # Best score first, then the newest: sorted as (-score, -pid) pairs.
    ranked = sorted([(-s, -pid) for pid, s in scores.items() if s >= floor])
    return [-negated for _, negated in ranked]


def _all_fit(
    tracker: HistoryTracker, ranked: Sequence[int], budget: int, max_passages: int | None
) -> bool:
    """Whether every candidate is taken whole in any order (so no order needs asking for)."""
    if len(ranked) > _MAX_RECALL_CANDIDATES or (
        max_passages is not None and len(ranked) > max_passages
    ):
        return False
    # With this much room, the loop in select_passages never stops early nor cuts a passage.
    total = sum(tracker.recalled(pid).tokens for pid in ranked)
    return total + _MIN_USEFUL_PASSAGE_TOKENS <= budget


def _matched_well(tracker: HistoryTracker, words: list[int], telling: dict[str, float]) -> bool:
    stated = stated_memo(tracker.passages[words[0]].sentences) if words else {}
    return len(stated.keys() & telling.keys()) >= _MIN_HELD_WORDS


def select_passages(
    tracker: HistoryTracker,
    query: str,
    room: int,
    *,
    limit: int,
    count: Count,
    extra_ranking: Callable[[], Sequence[int] | None] | None = None,
    min_relative_score: float = MIN_RELATIVE_SCORE,
    max_passages: int | None = None,
    min_score: float = 0.0,
    cover: WindowCover | None = None,
    nearest: Callable[[], Sequence[int] | None] | None = None,
) -> list[RecalledPassage]:
    """The best-matching dropped passages that fit ``min(room, limit)`` tokens.

    Passages rank by shared rare words with ``query``, then recency. ``extra_ranking`` gives
    a second vote (pids, best first, e.g. from an embedder) that is fused in; it is called only
    when the order can matter, not when every candidate fits whole. With ``cover`` (what the
    kept window states), only passages whose message states at least ``min_score`` of telling
    words beyond the kept message that shares most of them come back. ``nearest``: passages
    close in meaning, tried after the word matches unless the best states two telling words.
    """
    budget = min(room, limit)
    if budget <= 0:
        return []
    ranked = words = recall_candidates(
        tracker, query, min_score=min_score, min_relative_score=min_relative_score, cover=cover
    )
    if extra_ranking is not None and not _all_fit(tracker, ranked, budget, max_passages):
        order = extra_ranking()
        if order is not None:
            allowed = set(ranked)
            ranked = rank_fusion([ranked, [p for p in order if p in allowed]])
    telling = telling_words(query, tracker.stats)
    if nearest is not None and not _matched_well(tracker, words, telling) and (near := nearest()):
        ranked = list(dict.fromkeys([*ranked, *near]))
    chosen: list[RecalledPassage] = []
    used = 0
    for pid in ranked[:_MAX_RECALL_CANDIDATES]:
        if budget - used < _MIN_USEFUL_PASSAGE_TOKENS or len(chosen) == max_passages:
            break
        recalled = tracker.recalled(pid)
        if used + recalled.tokens > budget:
            passage = tracker.passages[pid]
            sentence = _best_sentence(passage, telling)
            line = recalled_line(passage.role, f"… {sentence} …")
            recalled = RecalledPassage(pid, passage.role, line, count(line) + 1)
            if used + recalled.tokens > budget:
                continue
        chosen.append(recalled)
        used += recalled.tokens
    # Oldest first reads like the conversation did.
    chosen.sort(key=lambda r: r.pid)
    return chosen
