"""Whether a prompt holds the turns a question needs (frozen with the conversations).

A question counts as answerable when every one of its evidence turns is in the prompt, either
verbatim or as at least 80% of the turn's content words, in the turn's order, inside one
message of the prompt. The verbatim-only count is kept beside it. Before judging, the system
prompt the conversation came with is cut out of the system message and the question is cut out
of the final user message: neither may count as evidence.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks._tokens import message_text

__all__ = [
    "MIN_SHARE",
    "STOPWORDS",
    "Coverage",
    "content_words",
    "covers",
    "judge",
    "lcs_length",
    "scored_texts",
]

MIN_SHARE = (4, 5)  # at least 4/5 of the evidence turn's content words

_STOPWORD_TEXT = """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its
    itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    im i'm it's that's don't dont i've ive i'll ill you're youre yeah yes oh ok okay lol haha
    really like get got go going well too also
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def content_words(text: str) -> list[str]:
    """Lower-cased words of ``text`` in order, stopwords left out."""
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


def lcs_length(short: Sequence[str], long: Sequence[str]) -> int:
    """Length of the longest common subsequence of two word lists (bit-parallel, Hyyrö 2004)."""
    if not short or not long:
        return 0
    masks: dict[str, int] = {}
    for i, word in enumerate(short):
        masks[word] = masks.get(word, 0) | (1 << i)
    full = (1 << len(short)) - 1
    v = full
    for word in long:
        u = v & masks.get(word, 0)
        v = ((v + u) | (v - u)) & full
    return len(short) - bin(v).count("1")


def covers(evidence: str, texts: Sequence[str]) -> tuple[bool, bool]:
    """(found verbatim or as >= 80% of its content words in order in one text, found verbatim)."""
    if any(evidence in t for t in texts):
        return True, True
    words = content_words(evidence)
    if not words:
        return False, False
    need = -(-len(words) * MIN_SHARE[0] // MIN_SHARE[1])
    for text in texts:
        other = content_words(text)
        # Cheap bound first: words of the turn that the text lacks can never be matched.
        vocabulary = set(other)
        present = sum(1 for w in words if w in vocabulary)
        if present < need:
            continue
        if lcs_length(words, other) >= need:
            return True, False
    return False, False


def scored_texts(
    messages: Sequence[dict[str, Any]], system_prompt: str, question: str
) -> list[str]:
    """Each message's text as judged: the system prompt and the final question cut out."""
    texts = ["\n".join(message_text(m)) for m in messages]
    for i, m in enumerate(messages):
        if m.get("role") in ("system", "developer") and system_prompt in texts[i]:
            texts[i] = texts[i].replace(system_prompt, "", 1)
            break
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "user":
            head, sep, tail = texts[i].rpartition(question)
            if sep:
                texts[i] = head + tail
            break
    return texts


@dataclass(frozen=True, slots=True)
class Coverage:
    """How a prompt fares on one question."""

    hit: bool  # every evidence turn, verbatim or >= 80% of its content words in order
    verbatim: bool  # every evidence turn verbatim
    turns_found: int  # evidence turns found (either way)


def judge(texts: Sequence[str], evidence: Sequence[str]) -> Coverage:
    """Judge the scored texts of one prompt against a question's evidence turns."""
    found = 0
    verbatim = 0
    for turn in evidence:
        hit, exact = covers(turn, texts)
        found += hit
        verbatim += exact
    return Coverage(found == len(evidence), verbatim == len(evidence), found)
