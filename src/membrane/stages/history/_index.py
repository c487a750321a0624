"""The eviction index: one line per dropped message, naming what it said that is rare.

A line holds the message's keyframes (the densest sentence of each stretch that names a
rare code, number or name) and further sentences that carry exact values nobody could
reconstruct. Density here is rarity per word, discounted for words the message repeats, so
the layout of a pasted log or export does not pass for content.
"""

from __future__ import annotations

import math
import re
import string
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain, pairwise
from operator import truediv

from membrane.memo import cut_bytes, memoised
from membrane.prompt_text import index_block, index_entry
from membrane.stages.history._shared import Count, is_request
from membrane.text.relevance import (
    TermStats,
    content_words,
    distinct_content_words,
    marked_words,
)
from membrane.text.sentences import is_short, opens_with_pronoun, split_sentences

__all__ = [
    "KEYFRAME_SPAN_TOKENS",
    "RARE_DOCUMENT_FREQUENCY",
    "IndexLine",
    "could_earn_line",
    "derive_line_text",
    "index_digest",
    "index_line",
    "render_index",
    "select_index_lines",
]

# A long message keeps one keyframe for each this many tokens of its length.
KEYFRAME_SPAN_TOKENS = 400
# A word in at most this many messages of the conversation marks a sentence worth indexing.
RARE_DOCUMENT_FREQUENCY = 2
_REQUEST_DISCOUNT = 0.3
# A sentence keeping less than this share of its density once repeated words are discounted
# is mostly the layout its message repeats (a log line, an export row): it names nothing.
_LAYOUT_SHARE = 0.5

_size = sys.getsizeof
_DIGIT = re.compile(r"\d")
# Digits read as 0 and letters as a: dates, counters and IDs written to one pattern (the
# timestamps of a log, the key column of an export) count as one word repeated in a message.
_SHAPE = str.maketrans(
    {**dict.fromkeys("0123456789", "0"), **dict.fromkeys(string.ascii_lowercase, "a")}
)
# A JSON object member alone on its line, with a string or scalar value: "key": "value",
_JSON_MEMBER = re.compile(r'"([^"\\]+)": ("[^"\\]*"|[\w.+-]+)(,?)')


@dataclass(frozen=True, slots=True)
class IndexLine:
    """The index line of one dropped message.

    ``message`` (its index in the history), ``picks`` (the indices of the sentences of its
    text that the line shows, in order) and ``words`` (for a line that is the first sentence
    cut short, how many of its words; else 0) are how the line was made: with the caller's
    messages they give the text again (:func:`derive_line_text`), so a saved line is stored
    as these numbers, never as text.
    """

    unit: int
    text: str
    tokens: int
    message: int = -1
    picks: tuple[int, ...] = ()
    words: int = 0


@dataclass(frozen=True, slots=True)
class _Reading:
    """A message's sentences with what choosing its index line needs to know of each."""

    sentences: list[str]
    sizes: list[int]
    # rare codes, numbers and names (none for a sentence that is mostly repeated layout)
    specifics: list[frozenset[str]]
    # discounted density, -1 for a sentence too long to be a keyframe
    density: list[float]


def _shaped_bytes(
    sentence: str, value: tuple[tuple[str, ...], tuple[str, ...], frozenset[str], int]
) -> int:
    # A shape is its word, or a new string of the same length: the words' bytes, twice.
    words, shapes, shape_set, _ = value
    containers = _size(value) + _size(words) + _size(shapes) + _size(shape_set)
    return _size(sentence) + containers + 2 * cut_bytes(sentence, words)


def _has_digit(word: str) -> bool:
    return _DIGIT.search(word) is not None


def _shape(word: str) -> str:
    if word.isalpha() or not _has_digit(word):
        return word
    return word.translate(_SHAPE)


def could_earn_line(text: str, stats: TermStats) -> bool:
    """False when :func:`index_line` surely gives ``text`` no line: an ASCII text none of whose
    words is rare. Its words are read in one pass, without the memos (a long replay looks
    back over thousands of dropped messages, most of which earn no line); the words of an
    ASCII text's sentences are the text's words, as sentences are cut at white space."""
    if not text.isascii():
        return True
    lowest = stats.min_df(distinct_content_words(text))
    return lowest is not None and lowest <= RARE_DOCUMENT_FREQUENCY


def _has_rare_word(sentence: str, stats: TermStats) -> bool:
    lowest = stats.min_df(content_words(sentence))
    return lowest is not None and lowest <= RARE_DOCUMENT_FREQUENCY


def _rare_specifics(sentence: str, stats: TermStats) -> frozenset[str]:
    """The sentence's codes, numbers and names that are rare in the conversation."""
    return frozenset(w for w in marked_words(sentence) if stats.df(w) <= RARE_DOCUMENT_FREQUENCY)


def _leans_back(sentence: str, rare_marked: frozenset[str]) -> bool:
    """True when ``sentence`` needs the one before it to be understood.

    A pronoun opener always does. A short sentence does unless it names someone or something
    rare ("News from Vale Systems today."): that one opens a topic rather than finishing one.
    A short sentence with a code ("Use KJ-2848 instead.") still leans: the code's meaning is
    in the sentence before.
    """
    if _JSON_MEMBER.fullmatch(sentence):
        return False  # a "key": value line of a record stands on its own
    if opens_with_pronoun(sentence):
        return True
    names = [word for word in rare_marked if not _has_digit(word)]
    return is_short(sentence) and not names


def _words_that_fit(text: str, count: Count, max_tokens: int) -> int:
    """How many of ``text``'s first words fit ``max_tokens`` with " …" after them."""
    words = text.split()
    lo, hi = 0, len(words)
    while lo < hi:  # longest word prefix that fits
        mid = (lo + hi + 1) // 2
        if count(" ".join(words[:mid]) + " …") <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _shown(sentences: Sequence[str], picks: Sequence[int], words: int) -> str:
    """The line body: the first ``words`` words and " …", or the picked sentences in order."""
    if words:
        return " ".join(sentences[0].split()[:words]) + " …"
    return _in_order(sentences, set(picks))


def _densities(sentences: Sequence[str], stats: TermStats) -> tuple[list[float], list[float]]:
    """Each sentence's :func:`sentence_density`, and the same with each word's rarity divided
    by how many sentences of the message use it (the two agree when no word repeats)."""
    read = [_shaped_words(sentence) for sentence in sentences]
    spread = Counter(chain.from_iterable(shape_set for _, _, shape_set, _ in read))
    in_sentences = spread.__getitem__
    plain, distinct = [], []
    for words, shapes, _, n in read:
        if not words:
            plain.append(0.0)
            distinct.append(0.0)
            continue
        root = math.sqrt(n)
        rarity = stats.idfs(words)
        plain.append(math.fsum(rarity) / root)
        distinct.append(math.fsum(map(truediv, rarity, map(in_sentences, shapes))) / root)
    return plain, distinct


@memoised(0.08, _shaped_bytes)
def _shaped_words(
    sentence: str,
) -> tuple[tuple[str, ...], tuple[str, ...], frozenset[str], int]:
    """The sentence's distinct content words, the :func:`_shape` of each (also as a set), and
    how many content words it has (repeats included). Memoised: it does not depend on the
    conversation, and a message's sentences are read again whenever a tracker replays it."""
    words = content_words(sentence)
    distinct = tuple(dict.fromkeys(words))
    shapes = tuple(_shape(w) for w in distinct)
    return distinct, shapes, frozenset(shapes), len(words)


def _keyframes(density: list[float], specifics: list[frozenset[str]], total: int) -> set[int]:
    """One sentence per KEYFRAME_SPAN_TOKENS: the densest that fits and names something.

    When no sentence of the message names anything, the densest sentence of each span.
    """
    per_span = math.ceil(len(density) / max(1, math.ceil(total / KEYFRAME_SPAN_TOKENS)))
    named = any(specifics)
    chosen: set[int] = set()
    for start in range(0, len(density), per_span):
        span = range(start, min(start + per_span, len(density)))
        best = max(span, key=lambda i: (density[i] >= 0 and bool(specifics[i]), density[i]))
        if density[best] >= 0 and (specifics[best] or not named):
            chosen.add(best)
    return chosen


def _unquoted(sentence: str) -> str:
    """A JSON member line without its quotes (``city: Oslo,``); other sentences unchanged.

    Tool results are mostly JSON; in an index line the quotes cost tokens and say nothing.
    """
    member = _JSON_MEMBER.fullmatch(sentence)
    if member is None:
        return sentence
    key, value, comma = member.groups()
    return f"{key}: {value.strip(chr(34))}{comma}"


def _in_order(sentences: Sequence[str], chosen: set[int]) -> str:
    """The chosen sentences in their order, with … where sentences were left out between."""
    parts: list[str] = []
    previous = -2
    for i in sorted(chosen):
        if parts and i != previous + 1:
            parts.append("…")
        parts.append(_unquoted(sentences[i]))
        previous = i
    return " ".join(parts)


def _read(text: str, stats: TermStats, count: Count, frame_tokens: int) -> _Reading | None:
    """The message's sentences scored for the index, or None when it earns no line."""
    sentences = split_sentences(text)
    if not sentences:
        return None
    if not any(_has_rare_word(sentence, stats) for sentence in sentences):
        return None  # nothing here that the rest of the conversation does not say too
    specifics = [_rare_specifics(sentence, stats) for sentence in sentences]
    if not any(specifics) and not text.islower():
        # A writer who uses capitals marks names with them: no rare code or name, no fact.
        return None
    sizes = [count(sentence) for sentence in sentences]
    plain, distinct = _densities(sentences, stats)
    for i in range(len(sentences)):
        if specifics[i] and distinct[i] < _LAYOUT_SHARE * plain[i]:
            specifics[i] = frozenset()  # mostly the message's repeated layout
    density = [
        -1.0
        if size > frame_tokens
        else score * (_REQUEST_DISCOUNT if is_request(sentence) else 1.0)
        for sentence, size, score in zip(sentences, sizes, distinct, strict=True)
    ]
    return _Reading(sentences, sizes, specifics, density)


def _add_exact_values(reading: _Reading, chosen: set[int], used: int, cap: int) -> int:
    """Add, densest first, sentences holding a value not yet on the line; the tokens used."""
    specifics, density, sizes = reading.specifics, reading.density, reading.sizes
    covered = set().union(*(specifics[i] for i in chosen))
    for i in sorted(range(len(density)), key=lambda i: -density[i]):
        new = {word for word in specifics[i] - covered if _has_digit(word)}
        if i in chosen or density[i] < 0 or not new or is_request(reading.sentences[i]):
            continue
        if used + sizes[i] <= cap:
            chosen.add(i)
            covered |= new
            used += sizes[i]
    return used


def _add_leaned_on(reading: _Reading, chosen: set[int], used: int, cap: int) -> None:
    """Bring along the sentence before each chosen one that leans on it, while room lasts."""
    sentences, sizes = reading.sentences, reading.sizes
    for i in sorted(chosen):  # a snapshot: sentences added here are not looked at again
        leans = (
            i > 0
            and i - 1 not in chosen
            and _leans_back(sentences[i], reading.specifics[i])
            and not is_request(sentences[i - 1])
        )
        if leans and used + sizes[i - 1] <= cap:
            chosen.add(i - 1)
            used += sizes[i - 1]


def index_digest(text: str, stats: TermStats, count: Count, frame_tokens: int) -> str:
    """The index line body of a dropped message (see :func:`_digest_choice`), or ""."""
    choice = _digest_choice(text, stats, count, frame_tokens)
    return "" if choice is None else _shown(*choice)


def _digest_choice(
    text: str, stats: TermStats, count: Count, frame_tokens: int
) -> tuple[list[str], tuple[int, ...], int] | None:
    """The message's sentences with the line's picks and words (see :class:`IndexLine`).

    The line body of a dropped message: its keyframes and its other rare facts.

    A message none of whose words is rare in the conversation gets no line (it repeats what
    is said elsewhere), and neither does one that names no rare code, number or name, unless
    its writer uses no capitals at all. Otherwise every KEYFRAME_SPAN_TOKENS of it give one
    keyframe: the densest sentence of that span under ``frame_tokens`` that names something
    (a question ranks low, as it asks rather than tells; a span that names nothing gives
    none). Density counts a word less the more sentences of the message use it, so in a
    pasted log or export the lines someone wrote stand out from the repeated records, and a
    sentence that is mostly such layout does not count as naming anything.

    Further sentences join, densest first, when they hold an exact value (a rare word with
    a digit: a code, number or date) not yet on the line, while the line stays under
    ``frame_tokens`` times the square root of the message's length in 50-token steps. Names
    alone do not earn a further sentence: the keyframe says what the message is about, and
    the room goes to values nobody could reconstruct. A sentence that leans on the one
    before it brings that one along. Sentences keep their order; JSON members lose their
    quotes.
    """
    reading = _read(text, stats, count, frame_tokens)
    if reading is None:
        return None
    total = sum(reading.sizes)
    chosen = _keyframes(reading.density, reading.specifics, total)
    if not chosen:
        words = _words_that_fit(reading.sentences[0], count, frame_tokens)
        return (reading.sentences, (), words) if words else None
    cap = frame_tokens * math.ceil(math.sqrt(total / 50))
    used = _add_exact_values(reading, chosen, sum(reading.sizes[i] for i in chosen), cap)
    _add_leaned_on(reading, chosen, used, cap)
    return reading.sentences, tuple(sorted(chosen)), 0


def index_line(
    unit: int,
    label: str,
    text: str,
    stats: TermStats,
    count: Count,
    frame_tokens: int,
    message: int = -1,
) -> IndexLine | None:
    """The index line of dropped message ``message`` spoken by ``label``, or None when it
    earns none."""
    choice = _digest_choice(text, stats, count, frame_tokens)
    if choice is None:
        return None
    sentences, picks, words = choice
    line = index_entry(label, _shown(sentences, picks, words))
    return IndexLine(unit, line, count(line), message, picks, words)


def derive_line_text(label: str, text: str, picks: Sequence[int], words: int) -> str | None:
    """The index line that ``picks`` and ``words`` (see :class:`IndexLine`) make of a message
    spoken by ``label`` with ``text``; None when they cannot come from that text.

    Picks must be strictly increasing sentence indices of the text; ``words`` counts words of
    its first sentence and goes without picks.
    """
    sentences = split_sentences(text)
    if words:
        if picks or not sentences or words > len(sentences[0].split()):
            return None
    elif (
        not picks
        or picks[0] < 0
        or picks[-1] >= len(sentences)
        or any(a >= b for a, b in pairwise(picks))
    ):
        return None
    return index_entry(label, _shown(sentences, picks, words))


def select_index_lines(lines: Sequence[IndexLine], room: int, header_tokens: int) -> int:
    """Index of the oldest line kept so that the header and newer lines fit ``room``."""
    used = header_tokens
    first = len(lines)
    for i in range(len(lines) - 1, -1, -1):
        if used + lines[i].tokens + 1 > room:
            break
        used += lines[i].tokens + 1
        first = i
    return first


def render_index(lines: Sequence[IndexLine]) -> str:
    """The eviction-index block, or "" when there are no lines."""
    if not lines:
        return ""
    return index_block([line.text for line in lines])
