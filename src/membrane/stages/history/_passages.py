"""Dropped messages as recall passages, and the words each passage states.

A passage is about PASSAGE_WORDS words of whole sentences of one message. What it states (a
content word's stem and a weight) is what recall's inverted index files it under.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import NamedTuple, overload

from membrane.memo import fields_bytes, memoised, pieces_bytes, sentences_map_bytes
from membrane.prompt_text import recalled_line
from membrane.stages.history._shared import Count, is_request
from membrane.text.relevance import content_words, stem
from membrane.text.sentences import depends_on_previous, is_question, split_sentences

__all__ = [
    "PASSAGE_WORDS",
    "QUESTION_WEIGHT",
    "Passage",
    "PassageList",
    "RecalledPassage",
    "passages_of",
    "recalled_line_of",
    "recalled_whole",
    "sentence_stems",
    "stated_memo",
    "stated_words",
]

PASSAGE_WORDS = 60
# A text this short has fewer than PASSAGE_WORDS words (each word but the last takes a
# character and a space).
_SHORT_TEXT_CHARS = 2 * PASSAGE_WORDS - 1
#: What a word weighs in a passage when only a question states it (any other weighs 1).
QUESTION_WEIGHT = 0.5


class Passage(NamedTuple):
    """About sixty words of a dropped message, with what its scoring needs.

    Not counted: a passage is counted (:func:`recalled_whole`) only when it is recalled. A
    named tuple, not a frozen dataclass: a joining worker re-derives thousands at once, and a
    tuple is made several times faster. Its sentences are kept as their lengths in ``text``
    (where single spaces join them), not as strings of their own: a conversation keeps every
    dropped passage, and the text once is enough.
    """

    unit: int
    message: int
    role: str
    text: str
    #: The length of each sentence of ``text``, in order.
    lengths: tuple[int, ...]
    #: The message's own ``name`` (who wrote it), when it has one (see ``_speakers``).
    writer: str | None = None

    @property
    def sentences(self) -> tuple[str, ...]:
        """The passage's sentences, in order."""
        text, start, out = self.text, 0, []
        for n in self.lengths:
            out.append(text[start : start + n])
            start += n + 1
        return tuple(out)


class PassageList(Sequence[Passage]):
    """A conversation's dropped passages, kept in columns: about 40 bytes a passage besides
    its text, where a list of named tuples spent about 220. Reading one builds its
    :class:`Passage`; :meth:`message` reads a passage's message alone (recall's hot path)."""

    __slots__ = (
        "_bytes",
        "_ends",
        "_label_ids",
        "_labels",
        "_lengths",
        "_roles",
        "_texts",
        "_units",
        "_writers",
        "messages",
    )

    def __init__(self) -> None:
        self._units = array("I")
        self.messages = array("I")
        self._roles = array("I")
        self._texts: list[str] = []
        self._lengths = array("I")
        # Where each passage's sentence lengths end in ``_lengths``.
        self._ends = array("I")
        # The distinct speaker labels, and each one's place among them.
        self._labels: list[str] = []
        self._label_ids: dict[str, int] = {}
        self._writers: dict[int, str] = {}
        # The texts' bytes, labels' and writers' included, kept as they are added.
        self._bytes = 400

    def append(self, passage: Passage) -> None:
        role_id = self._label_ids.get(passage.role)
        if role_id is None:
            role_id = self._label_ids[passage.role] = len(self._labels)
            self._labels.append(passage.role)
            self._bytes += 150 + sys.getsizeof(passage.role)
        if passage.writer is not None:
            self._writers[len(self._texts)] = passage.writer
            self._bytes += 200
        self._bytes += sys.getsizeof(passage.text)
        self._units.append(passage.unit)
        self.messages.append(passage.message)
        self._roles.append(role_id)
        self._texts.append(passage.text)
        self._lengths.extend(passage.lengths)
        self._ends.append(len(self._lengths))

    def message(self, pid: int) -> int:
        """The message passage ``pid`` comes from (its index in the history)."""
        return self.messages[pid]

    def role(self, pid: int) -> str:
        """The speaker label of passage ``pid``."""
        return self._labels[self._roles[pid]]

    def text(self, pid: int) -> str:
        """The text of passage ``pid``."""
        return self._texts[pid]

    def __len__(self) -> int:
        return len(self._texts)

    @overload
    def __getitem__(self, pid: int) -> Passage: ...

    @overload
    def __getitem__(self, pid: slice) -> list[Passage]: ...

    def __getitem__(self, pid: int | slice) -> Passage | list[Passage]:
        if isinstance(pid, slice):
            return [self[i] for i in range(*pid.indices(len(self)))]
        if pid < 0:
            pid += len(self)
        start = self._ends[pid - 1] if pid > 0 else 0
        return Passage(
            self._units[pid],
            self.messages[pid],
            self._labels[self._roles[pid]],
            self._texts[pid],
            tuple(self._lengths[start : self._ends[pid]]),
            self._writers.get(pid),
        )

    def bytes(self) -> int:
        """The bytes held: each text, the columns, the labels and writers (counted as own)."""
        columns = (self._units, self.messages, self._roles, self._lengths, self._ends)
        arrays = sum(sys.getsizeof(column) for column in columns)
        return self._bytes + arrays + sys.getsizeof(self._texts)


def passages_of(
    unit: int,
    message: int,
    role: str,
    text: str,
    writer: str | None = None,
    *,
    memoise: bool = True,
) -> list[Passage]:
    """``text`` cut into passages of whole sentences, about PASSAGE_WORDS words each
    (``memoise``: whether its sentences are split through the memo)."""
    sentences = split_sentences(text, memoise=memoise)
    if len(text) < _SHORT_TEXT_CHARS or len(text.split()) < PASSAGE_WORDS:
        # Most messages: fewer words than a passage holds, so the loop below would put every
        # sentence in one passage (sentences split at white space, so their words are the
        # text's words).
        if not sentences:
            return []
        body = " ".join(sentences)
        return [Passage(unit, message, role, body, tuple(map(len, sentences)), writer)]
    out: list[Passage] = []
    bucket: list[str] = []
    words = 0

    def flush() -> None:
        if bucket:
            body = " ".join(bucket)
            out.append(Passage(unit, message, role, body, tuple(map(len, bucket)), writer))

    for sentence in sentences:
        n = len(sentence.split())
        if n > PASSAGE_WORDS * 2:  # one very long sentence: split it by words
            flush()
            bucket, words = [], 0
            tokens = sentence.split()
            for i in range(0, len(tokens), PASSAGE_WORDS):
                piece = " ".join(tokens[i : i + PASSAGE_WORDS])
                out.append(Passage(unit, message, role, piece, (len(piece),), writer))
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
                weights.setdefault(w, QUESTION_WEIGHT)
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


@memoised(0.12, lambda text, s: sys.getsizeof(s) + pieces_bytes(text, s.stems))
def _read_sentence(sentence: str) -> _Sentence:
    """Memoised: the sentences of a message are read when it is checked in the window and
    again as a passage once it is dropped."""
    question = is_question(sentence)
    stems = tuple(dict.fromkeys(map(stem, content_words(sentence))))
    # Only a question can be a request or lean back (most sentences are statements).
    if not question:
        return _Sentence(stems, False, False, False)
    return _Sentence(stems, is_request(sentence), True, depends_on_previous(sentence))


def sentence_stems(sentence: str) -> tuple[str, ...]:
    """The distinct stems of the sentence's content words, in order (memoised)."""
    return _read_sentence(sentence).stems


@memoised(0.1, sentences_map_bytes)
def stated_memo(sentences: tuple[str, ...]) -> Mapping[str, float]:
    """:func:`stated_words`, memoised and read-only."""
    # Memoised: a passage's words are read again whenever a query matches it, a
    # kept message's on every turn that checks the window.
    return MappingProxyType(stated_words(sentences))


@dataclass(frozen=True, slots=True)
class RecalledPassage:
    """A dropped passage chosen to come back, possibly cut to its best sentence."""

    pid: int
    role: str
    text: str
    tokens: int


def recalled_whole(pid: int, passage: Passage, count: Count) -> RecalledPassage:
    """Passage ``pid`` recalled whole (its tokens count the line break after it)."""
    line = recalled_line_of(passage.role, passage.text)
    return RecalledPassage(pid, passage.role, line, count(line) + 1)


def recalled_line_of(role: str, text: str) -> str:
    """:func:`membrane.prompt_text.recalled_line`, memoised: the passages recall brings back
    are weighed again on many turns."""
    return _recalled_line((role, text))


@memoised(0.03, lambda key, line: fields_bytes(key) + sys.getsizeof(line))
def _recalled_line(key: tuple[str, str]) -> str:
    return recalled_line(*key)
