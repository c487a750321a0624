"""Text tools the stages share: words, sentences, rarity, keyframes and rank fusion."""

from __future__ import annotations

from membrane.text.keyframes import keyframe
from membrane.text.relevance import TermStats, content_words, lexical_scores, rank_fusion
from membrane.text.sentences import split_sentences

__all__ = [
    "TermStats",
    "content_words",
    "keyframe",
    "lexical_scores",
    "rank_fusion",
    "split_sentences",
]
