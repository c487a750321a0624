"""Dropped messages as recall passages, and the words each passage states.

A passage is about PASSAGE_WORDS words of whole sentences of one message. What it states (a
content word's stem and a weight) is what recall's inverted index files it under.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import NamedTuple

from membrane.memo import key_bytes, mapping_bytes, memoised
from membrane.prompt_text import recalled_line
from membrane.stages.history._shared import Count, is_request
from membrane.text.relevance import content_words, stem
from membrane.text.sentences import depends_on_previous, is_question, split_sentences

__all__ = [
    "PASSAGE_WORDS",
    "Passage",
    "Postings",
    "RecalledPassage",
    "add_postings",
    "passages_of",
    "recalled_whole",
    "sentence_stems",
    "stated_memo",
    "stated_words",
]

PASSAGE_WORDS = 60
_QUESTION_WEIGHT = 0.5

# word -> (pid, message, sentence weight) of each passage holding it, in pid order
Postings = dict[str, list[tuple[int, int, float]]]


class Passage(NamedTuple):
    """About sixty words of a dropped message, with what its scoring needs.

    Not counted: a passage is counted (:func:`recalled_whole`) only when it is recalled. A
    named tuple, not a frozen dataclass: a joining worker re-derives thousands at once, and a
    tuple is made several times faster.
    """

    unit: int
    message: int
    role: str
    text: str
    sentences: tuple[str, ...]
    #: The message's own ``name`` (who wrote it), when it has one (see ``_speakers``).
    writer: str | None = None


def passages_of(
    unit: int, message: int, role: str, text: str, writer: str | None = None
) -> list[Passage]:
    """``text`` cut into passages of whole sentences, about PASSAGE_WORDS words each."""
    out: list[Passage] = []
    bucket: list[str] = []
    words = 0

    def flush() -> None:
        if bucket:
            body = " ".join(bucket)
            out.append(Passage(unit, message, role, body, tuple(bucket), writer))

    for sentence in split_sentences(text):
        n = len(sentence.split())
        if n > PASSAGE_WORDS * 2:  # one very long sentence: split it by words
            flush()
            bucket, words = [], 0
            tokens = sentence.split()
            for i in range(0, len(tokens), PASSAGE_WORDS):
                piece = " ".join(tokens[i : i + PASSAGE_WORDS])
                out.append(Passage(unit, message, role, piece, (piece,), writer))
            continue
        if words and words + n > PASSAGE_WORDS * 1.5:
            flush()
            bucket, words = [], 0
        bucket.append(sentence)
        words += n
        if words >= PASSAGE_WORDS:
            flush()
            bucket, words = [], 0
    flush()
    return out


def stated_words(sentences: Sequence[str]) -> dict[str, float]:
    """Each content word ``sentences`` state (by its :func:`stem`), weighing 1, or half when
    only a question has it.

    A longer question (a request) states nothing: it asks for the answer, it does not hold it.
    A sentence that a short question after it leans on ("The tool listed the code for Kelp
    Labs. Which value was it?") is part of that question and weighs as it does.
    """
    weights: dict[str, float] = {}
    read = [_read_sentence(sentence) for sentence in sentences]
    for i, sentence in enumerate(read):
        if sentence.request:
            continue
        after = read[i + 1] if i + 1 < len(read) else None
        leaned_on = not sentence.question and after is not None and after.leans_back
        if leaned_on and after is not None and after.request:
            continue  # what a request leans on is part of the request
        if sentence.question or leaned_on:
            for w in sentence.stems:
                weights.setdefault(w, _QUESTION_WEIGHT)
        else:
            weights.update(dict.fromkeys(sentence.stems, 1.0))
    return weights


class _Sentence(NamedTuple):
    """What :func:`stated_words` reads of one sentence."""

    stems: tuple[str, ...]  # distinct, in order
    request: bool
    question: bool
    #: a question leaning on the sentence before it (as :func:`asked_text` reads it)
    leans_back: bool


@memoised(0.12, lambda s: key_bytes(s) + key_bytes(s.stems))
def _read_sentence(sentence: str) -> _Sentence:
    """Memoised: the sentences of a message are read when it is checked in the window and
    again as a passage once it is dropped."""
    question = is_question(sentence)
    stems = tuple(dict.fromkeys(map(stem, content_words(sentence))))
    return _Sentence(
        stems, is_request(sentence), question, question and depends_on_previous(sentence)
    )


def sentence_stems(sentence: str) -> tuple[str, ...]:
    """The distinct stems of the sentence's content words, in order (memoised)."""
    return _read_sentence(sentence).stems


@memoised(0.1, mapping_bytes)
def stated_memo(sentences: tuple[str, ...]) -> Mapping[str, float]:
    """:func:`stated_words`, memoised and read-only."""
    # Memoised: a passage's words are read again whenever a query matches it, a
    # kept message's on every turn that checks the window.
    return MappingProxyType(stated_words(sentences))


def add_postings(postings: Postings, pid: int, passage: Passage) -> None:
    """File passage ``pid`` under each word it states (a question's words count half)."""
    message = passage.message
    known = postings.get
    for w, weight in stated_memo(passage.sentences).items():
        posting = known(w)
        if posting is None:
            postings[w] = [(pid, message, weight)]
        else:
            posting.append((pid, message, weight))


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
