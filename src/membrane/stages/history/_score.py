"""Scoring dropped passages against a query by its most telling words.

An inverted index (word -> passages) lets a query score only the passages that share one of
its most telling words, which bounds the work however long the conversation grows.
"""

from __future__ import annotations

from membrane.stages.history._passages import PassageList
from membrane.stages.history._postings import MAX_POSTINGS_SCANNED, Posting, PostingIndex
from membrane.stages.history._speakers import Writers
from membrane.text.relevance import (
    TermStats,
    query_weights,
    stem,
)

__all__ = ["MAX_POSTINGS_SCANNED", "score_passages", "telling_words"]


_MESSAGE_CONTEXT_WEIGHT = 0.5


_MAX_QUERY_WORDS = 16


def _gains(
    posting: Posting,
    weight: float,
    own: dict[int, float],
    context: dict[int, float],
) -> None:
    """Add one query word's gain to each passage holding it and to its message's best."""
    # A message's passages have consecutive pids, so its entries are adjacent here:
    # its best gain for this word is complete when the next message starts.
    current, best = -1, 0.0
    for pid, message, sentence_weight in posting:
        gain = weight * sentence_weight
        own[pid] = own.get(pid, 0.0) + gain
        if message != current:
            if current >= 0:
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
        weight = q * r  # above 0: every rarity is
        if weight > stems.get(key, 0.0):
            stems[key] = weight
    # Most telling first: by weight, then by word (negated, so plain tuple order does it).
    ranked = sorted([(-weight, w) for w, weight in stems.items()])
    return {w: -negated for negated, w in ranked[:_MAX_QUERY_WORDS]}


def score_passages(
    passages: PassageList,
    postings: PostingIndex,
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
    messages = passages.messages
    scores = {
        pid: score + _MESSAGE_CONTEXT_WEIGHT * context[messages[pid]] for pid, score in own.items()
    }
    if writers is not None:
        for pid in scores:
            scores[pid] += writers.gain(passages[pid], telling)
    return scores
