"""Sentence splitting that keeps the exact text of each sentence."""

from __future__ import annotations

import re

from membrane.memo import memoised, pieces_bytes

__all__ = [
    "DEPENDENT_OPENERS",
    "depends_on_previous",
    "is_question",
    "is_short",
    "opens_with_pronoun",
    "split_sentences",
]

# A sentence ends at . ! ? (optionally followed by closing quotes/brackets) before white space,
# or at a line break. Abbreviation handling is deliberately absent: a wrong split only makes a
# keyframe shorter, never wrong.
# The match includes the end mark. Both kinds open with one character set, which re scans
# for quickly (twice the speed of two branches), and the lookbehind, tried only after a
# line break, tells which kind it is.
_BOUNDARY = re.compile(r"[.!?\n](?:(?<=\n)\n*|[\"')\]]*\s+)")


def split_sentences(text: str, *, memoise: bool = True) -> list[str]:
    """Split ``text`` into stripped, non-empty sentences in order.

    Memoised, as messages and memories are split again on every turn they are in play;
    ``memoise=False`` splits without reading or filling the memo (a text read once, among
    thousands: a long history replayed at once).

    >>> split_sentences("It works. Does it? Yes!\\nNext line")
    ['It works.', 'Does it?', 'Yes!', 'Next line']
    """
    return list(_split(text) if memoise else _split_text(text))


def _split_text(text: str) -> tuple[str, ...]:
    out = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        piece = text[start : match.start() + len(match.group(0).rstrip())].strip()
        if piece:
            out.append(piece)
        start = match.end()
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return tuple(out)


_split = memoised(0.13, pieces_bytes)(_split_text)


# A sentence opening with one of these leans on the sentence before it.
DEPENDENT_OPENERS = frozenset(
    [
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "they",
        "them",
        "their",
        "there",
        "he",
        "she",
        "his",
        "her",
        "hers",
        "such",
        "so",
        "then",
        "which",
        "both",
        "each",
    ]
)
_SHORT_SENTENCE_WORDS = 5


def depends_on_previous(sentence: str) -> bool:
    """True when ``sentence`` leans on the one before: a pronoun opener, or very short."""
    return is_short(sentence) or opens_with_pronoun(sentence)


def is_question(sentence: str) -> bool:
    """Ends with a question mark, closing quotes and brackets aside."""
    return sentence.rstrip(" \"')]”’").endswith("?")


def is_short(sentence: str) -> bool:
    """Five words or fewer."""
    return len(sentence.split(maxsplit=_SHORT_SENTENCE_WORDS)) <= _SHORT_SENTENCE_WORDS


def opens_with_pronoun(sentence: str) -> bool:
    """The first word is one of DEPENDENT_OPENERS (quotes and brackets ignored)."""
    words = sentence.split(maxsplit=1)
    return bool(words) and words[0].strip("\"'(“‘").lower() in DEPENDENT_OPENERS
