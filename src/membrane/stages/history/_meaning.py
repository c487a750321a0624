"""Recall by meaning: with an embedder, the dropped passages closest to what a turn asks.

The embedder is one vote beside the word scores (:mod:`._score`): it reorders the few best word
matches (:func:`passage_order`), and it finds passages that share no word with a question
(:func:`nearest_passages`). Both are asked for lazily, on the first use that can change what
comes back.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from itertools import islice
from typing import TYPE_CHECKING, Any

from membrane.messages import history_text
from membrane.stages.history._cover import WindowCover
from membrane.stages.history._cut import HistoryTracker
from membrane.stages.history._passages import passages_of
from membrane.stages.history._recall import recall_candidates
from membrane.stages.history._speakers import Writers
from membrane.text.relevance import content_words, stem

if TYPE_CHECKING:
    from membrane.text.semantic import SemanticCall

__all__ = [
    "EMBEDDED_PASSAGES",
    "MEANING_PASSAGES",
    "MEANING_SCAN",
    "nearest_passages",
    "passage_order",
    "prefetch_arrivals",
]


#: With an embedder, the passages it ranks per given: the best by word match. Each costs the
#: model about 60 words (roughly 25 ms of one core for all-MiniLM-L6-v2), once per compiler.
EMBEDDED_PASSAGES = 8


#: With an embedder, the dropped passages closest in meaning to a question that may come back
#: after every passage sharing its rare words (what fits of them: recall's room still binds).
#: On the conversation benchmark's development split (``recall_probe --embedder --speakers``)
#: 16, 32 and 64 found more answers each, for more recalled tokens; see docs/lod.md.
MEANING_PASSAGES = 32


#: How many of the newest dropped passages are compared by meaning. Each is embedded once per
#: compiler, so this bounds what a worker that joins a long conversation embeds on its first
#: question: with all-MiniLM-L6-v2 here about 7 ms of one core for a short chat message and
#: 20 ms for a full passage, so up to 4 to 10 s once (docs/lod.md).
MEANING_SCAN = 512


def nearest_passages(
    tracker: HistoryTracker, question: str, semantic: SemanticCall, writers: Writers
) -> Callable[[], list[int] | None]:
    """The dropped passages closest in meaning to what ``question`` asks, asked for on first use.

    The best :data:`MEANING_PASSAGES` of the newest :data:`MEANING_SCAN`, closest first. When
    the question names who wrote some passages (the caller's speakers, or a message's
    ``name``), only theirs are compared: "What dishes has Omar cooked?" is answered by Omar's
    "tried making pad thai tonight", which shares no word with it. Recall does not ask when
    the best word match states two of the question's telling words: more passages would only
    cost (hard suite: 68 / 44 against 63 / 39 at the same recall). Each passage compared is
    embedded once per compiler. None: no vote (the turn asks nothing, or the embedder failed).
    """

    @functools.cache
    def nearest() -> list[int] | None:
        passages = tracker.passages
        asked = set(map(stem, content_words(question)))
        newest_first = range(len(passages) - 1, -1, -1)
        named = (
            p for p in newest_first if writers.of(passages[p].role, passages[p].writer) & asked
        )
        pids = list(islice(named, MEANING_SCAN)) or list(islice(newest_first, MEANING_SCAN))
        pids.reverse()
        ranked = semantic.order(question, [passages[p].text for p in pids])
        return None if ranked is None else [pids[i] for i in ranked[:MEANING_PASSAGES]]

    return nearest


def passage_order(
    tracker: HistoryTracker,
    question: str,
    semantic: SemanticCall,
    cover: WindowCover | None,
    min_score: float,
) -> Callable[[], list[int] | None]:
    """The embedder's order of the passages recall may bring back, asked for on first use.

    Recall asks only when the order can change what comes back (not every candidate fits).
    Only the best :data:`EMBEDDED_PASSAGES` candidates by word match are embedded: the vote
    reorders those and nothing else, so with fewer than two nothing is embedded, not even
    the question. None: no vote.
    """

    @functools.cache
    def order() -> list[int] | None:
        candidates = recall_candidates(tracker, question, min_score=min_score, cover=cover)
        candidates = candidates[:EMBEDDED_PASSAGES]
        if len(candidates) < 2:
            return None
        ranked = semantic.order(question, [tracker.passages[p].text for p in candidates])
        return None if ranked is None else [candidates[i] for i in ranked]

    return order


def prefetch_arrivals(
    tracker: HistoryTracker, kept: Sequence[Mapping[str, Any]], semantic: SemanticCall
) -> int:
    """Hand a background embedder what recall by meaning may compare later; returns how many.

    That is the passages dropped since the last compile and those of the kept messages that
    arrived since (cut as they will be when dropped, so their vectors are ready by then), the
    newest :data:`MEANING_SCAN` of each at most. Nothing without an executor.
    """
    if not semantic.background:
        return 0
    passages = tracker.passages
    first = max(tracker.prefetched_passages, len(passages) - MEANING_SCAN)
    texts = [p.text for p in passages[first:]]
    arrived = tracker.seen_messages - tracker.prefetched_messages
    for message in kept[len(kept) - min(len(kept), arrived, MEANING_SCAN) :]:
        text = history_text(message)
        if text.strip():
            texts.extend(p.text for p in passages_of(0, 0, "", text))
    tracker.prefetched_passages = len(passages)
    tracker.prefetched_messages = tracker.seen_messages
    return semantic.prefetch(texts)
