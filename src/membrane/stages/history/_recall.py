"""Recall: the dropped passages a turn calls back, chosen to fill the recall room.

:func:`select_passages` fills the room with the best-scoring passages (:mod:`._score`) that
add what the kept window lacks (:mod:`._cover`), cutting a passage to its best sentence when
the whole one does not fit.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from membrane.prompt_text import recalled_line
from membrane.stages.history._cover import (
    MIN_HELD_WORDS,
    RecallSource,
    WindowCover,
    needed_passages,
)
from membrane.stages.history._passages import Passage, RecalledPassage, stated_memo
from membrane.stages.history._score import telling_words
from membrane.stages.history._shared import Count
from membrane.text.relevance import (
    content_words,
    rank_fusion,
    stem,
)

__all__ = ["MIN_RELATIVE_SCORE", "recall_candidates", "select_passages"]

# Recall looks at the best-scoring passages only, and stops when what is left of its room
# could not hold a useful one.
_MAX_RECALL_CANDIDATES = 48


# A passage is a candidate when it scores this share of the best passage's score.
MIN_RELATIVE_SCORE = 0.3


_MIN_USEFUL_PASSAGE_TOKENS = 12


def _best_sentence(passage: Passage, telling: Mapping[str, float]) -> str:
    def score(sentence: str) -> float:
        shared = telling.keys() & set(map(stem, content_words(sentence)))
        return math.fsum(telling[w] for w in shared)  # order-free, see keyframes

    return max(passage.sentences, key=score)


def recall_candidates(
    tracker: RecallSource,
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
    scores = needed_passages(tracker, query, cover, min_score)
    if not scores:
        return []
    floor = max(scores.values()) * min_relative_score
    # Best score first, then the newest: sorted as (-score, -pid) pairs.
    ranked = sorted([(-s, -pid) for pid, s in scores.items() if s >= floor])
    return [-negated for _, negated in ranked]


def _all_fit(
    tracker: RecallSource, ranked: Sequence[int], budget: int, max_passages: int | None
) -> bool:
    """Whether every candidate is taken whole in any order (so no order needs asking for)."""
    if len(ranked) > _MAX_RECALL_CANDIDATES or (
        max_passages is not None and len(ranked) > max_passages
    ):
        return False
    # With this much room, the loop in select_passages never stops early nor cuts a passage.
    total = sum(tracker.recalled_tokens(pid) for pid in ranked)
    return total + _MIN_USEFUL_PASSAGE_TOKENS <= budget


def _matched_well(tracker: RecallSource, words: list[int], telling: dict[str, float]) -> bool:
    stated = stated_memo(tracker.passages[words[0]].sentences) if words else {}
    return len(stated.keys() & telling.keys()) >= MIN_HELD_WORDS


def select_passages(
    tracker: RecallSource,
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
        if used + tracker.recalled_tokens(pid) <= budget:
            recalled = tracker.recalled(pid)
        else:
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
