"""Keyframes: the one sentence of a text that carries the most rare words, under a token cap."""

from __future__ import annotations

import math
from collections.abc import Callable

from membrane.text.relevance import Rarity, content_words
from membrane.text.sentences import DEPENDENT_OPENERS, depends_on_previous, split_sentences

__all__ = ["DEPENDENT_OPENERS", "depends_on_previous", "keyframe", "sentence_density"]


def sentence_density(sentence: str, stats: Rarity) -> float:
    """Rarity per word: summed IDF of distinct content words over the square root of length."""
    words = content_words(sentence)
    if not words:
        return 0.0
    # fsum is exactly rounded, so the order a set yields its words in (which changes with
    # PYTHONHASHSEED, i.e. from one worker process to the next) cannot change a score.
    return math.fsum(stats.idf(w) for w in set(words)) / math.sqrt(len(words))


def keyframe(text: str, stats: Rarity, count: Callable[[str], int], max_tokens: int) -> str | None:
    """The densest sentence of ``text`` that fits ``max_tokens``, or None if none fits.

    A neighbouring sentence joins when one leans on the other (it opens with a pronoun or is
    very short) and the pair still fits the cap.
    """
    sentences = split_sentences(text)
    best_index, best_score = -1, -1.0
    for i, sentence in enumerate(sentences):
        if count(sentence) > max_tokens:
            continue
        # A lone sentence needs no density: none is below 0 (rarities have a positive floor).
        score = sentence_density(sentence, stats) if len(sentences) > 1 else 0.0
        if score > best_score:
            best_index, best_score = i, score
    if best_index < 0:
        return None
    chosen = sentences[best_index]
    used = count(chosen)
    if best_index > 0 and depends_on_previous(chosen):
        prev = sentences[best_index - 1]
        extra = count(prev) + 1
        if used + extra <= max_tokens:
            chosen, used = f"{prev} {chosen}", used + extra
    if best_index + 1 < len(sentences) and depends_on_previous(sentences[best_index + 1]):
        nxt = sentences[best_index + 1]
        extra = count(nxt) + 1
        if used + extra <= max_tokens:
            chosen = f"{chosen} {nxt}"
    return chosen
