"""Lexical relevance: which words are rare, how much two texts share, and rank fusion."""

from __future__ import annotations

import math
import re
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from itertools import repeat
from types import MappingProxyType
from typing import Protocol

from membrane.memo import memoised, pieces_bytes, text_map_bytes
from membrane.text._ascii import MARKS, ascii_spaced, ascii_words, has_edge_marks

__all__ = [
    "STATEMENT_WEIGHT",
    "STOPWORDS",
    "CombinedStats",
    "Rarity",
    "TermStats",
    "asked_text",
    "content_words",
    "distinct_content_words",
    "lexical_scores",
    "marked_words",
    "query_weights",
    "rank_fusion",
    "stem",
    "stem_letters",
]

# "I", "I'm", "I've": a capital that marks the speaker, not a name.
_FIRST_PERSON = re.compile(r"i(?:['’]\w+)?$")
# A run of letters and digits, joined through ' ’ - _ to the next run: the same words as
# [^\W_](?:[\w'’-]*[^\W_])?, with less backtracking.
_WORD = re.compile(r"[^\W_]+(?:[_'’-]+[^\W_]+)*", re.UNICODE)

STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "also",
        "please",
        "tell",
        "remind",
        "recall",
        "know",
        "let",
        "us",
        "said",
        "say",
        "says",
        "okay",
        "ok",
        "yes",
        "thanks",
        "thank",
        "again",
        "still",
        "ever",
    ]
)
# What is never a content word: the stopwords, and what stripping a word's marks can leave.
_NOT_CONTENT = STOPWORDS | {""}


@memoised(0.12, pieces_bytes)
def content_words(text: str) -> tuple[str, ...]:
    """Lower-cased words of ``text`` without stopwords, in order (duplicates kept).

    Memoised: the same sentences and messages are read again on every turn.
    """
    words = ascii_words(text) if text.isascii() else [w.lower() for w in _WORD.findall(text)]
    return tuple([w for w in words if w and w not in STOPWORDS])


@memoised(0.08, pieces_bytes)
def content_word_set(text: str) -> frozenset[str]:
    """``frozenset(content_words(text))``, computed from the distinct words only.

    For a message entering the statistics: its words in order are not needed. Memoised: a
    stateless caller compiles the same history again with a fresh compiler.
    """
    return distinct_content_words(text)


def distinct_content_words(text: str) -> frozenset[str]:
    """:func:`content_word_set` without its memo: for a text read once among thousands (a
    long history replayed at once), where memoising each costs about what reading it does."""
    if not text.isascii():
        return frozenset([w.lower() for w in _WORD.findall(text)]).difference(_NOT_CONTENT)
    spaced = ascii_spaced(text)
    words = frozenset(spaced.split())
    if has_edge_marks(spaced):
        words = frozenset([w.strip(MARKS) for w in words])
    return words.difference(_NOT_CONTENT)


@memoised(0.05, pieces_bytes)
def marked_words(text: str) -> tuple[str, ...]:
    """Lower-cased content words written with a capital or a digit, after the first word.

    Those marks are how writers set apart names, codes and numbers; the first word is skipped
    because it is capitalised anyway. Memoised like :func:`content_words`.
    """
    lowered = [w.lower() for w in _WORD.findall(text)[1:] if not w.islower()]
    return tuple([w for w in lowered if w not in STOPWORDS and not _FIRST_PERSON.match(w)])


_VOWELS = frozenset("aeiouy")
# A doubled final consonant left by -ing or -ed is undoubled ("running" -> "run"), except these,
# which English doubles in the bare word too ("falling" -> "fall").
_KEPT_DOUBLES = frozenset("lsz")


@memoised(0.04, lambda word, stemmed: sys.getsizeof(word) + sys.getsizeof(stemmed))
def stem(word: str) -> str:
    """``word`` (a lower-cased content word) with its common English endings taken off.

    A light suffix stripper, not a dictionary: it only has to map the forms of one word to
    the same key, so "listen", "listens", "listening" and "listened" all give "listen", and
    "cities" and "city" both give "citi". A possessive 's goes; words with a digit or a mark
    are left as they are (codes must match exactly), and so are words of three letters or
    fewer, but for a final y ("try" gives "tri", as "tried" does).
    """
    if word.endswith(("'s", "’s")):
        word = word[:-2]
    if not word.isalpha():
        return word
    if len(word) <= 3:
        return word[:-1] + "i" if len(word) == 3 and word[-1] == "y" else word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "i"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ing", "ed"):
        base = word[: -len(suffix)]
        if word.endswith(suffix) and len(base) >= 3 and not _VOWELS.isdisjoint(base):
            word = base
            if len(word) > 3 and word[-1] == word[-2] and word[-1] not in _KEPT_DOUBLES:
                word = word[:-1]
            break
    if len(word) > 3 and word[-1] == "e":
        word = word[:-1]
    if len(word) >= 3 and word[-1] == "y":
        word = word[:-1] + "i"
    return word


def stem_letters(key: str) -> str:
    """Letters that every word :func:`stem` maps to ``key`` holds: the key itself, but for a
    final i, which may stand for a y ("citi" for "city")."""
    return key[:-1] if key.endswith("i") else key


class Rarity(Protocol):
    """Anything that weighs a word by how rare it is."""

    def idf(self, word: str) -> float: ...


class TermStats:
    """Document frequencies over a collection, giving each word a rarity (IDF) weight."""

    __slots__ = ("_df", "documents")

    def __init__(self, documents: Iterable[str] = ()) -> None:
        self._df: Counter[str] = Counter()
        self.documents = 0
        for doc in documents:
            self.add(doc)

    def add(self, document: str) -> None:
        """Count one more document."""
        self._df.update(set(content_words(document)))
        self.documents += 1

    def add_words(self, words: Iterable[str]) -> None:
        """Count one more document given as its content words."""
        self._df.update(words if isinstance(words, (set, frozenset)) else set(words))
        self.documents += 1

    def df(self, word: str) -> int:
        return self._df.get(word, 0)

    def min_df(self, words: Iterable[str]) -> int | None:
        """The smallest :meth:`df` among ``words`` (None when there are none), at C speed."""
        return min(map(self._df.get, words, repeat(0)), default=None)

    def idf(self, word: str) -> float:
        """Rarity of ``word``: high for words in few documents, never below a small floor."""
        return math.log((self.documents + 1) / (self._df.get(word, 0) + 0.5)) + 0.1

    def idfs(self, words: Iterable[str]) -> list[float]:
        """:meth:`idf` of each of ``words``."""
        n, df, log = self.documents + 1, self._df, math.log
        return [log(n / (df.get(w, 0) + 0.5)) + 0.1 for w in words]


class CombinedStats:
    """Rarity over two collections at once (e.g. a conversation and the memories on offer)."""

    __slots__ = ("_a", "_b", "documents")

    def __init__(self, a: TermStats | None, b: TermStats) -> None:
        self._a, self._b = a, b
        self.documents = (a.documents if a else 0) + b.documents

    def idf(self, word: str) -> float:
        df = (self._a.df(word) if self._a else 0) + self._b.df(word)
        return math.log((self.documents + 1) / (df + 0.5)) + 0.1


# Words of a turn's statements still count when the turn also asks something, but little:
# they are news, not what the user is looking for.
STATEMENT_WEIGHT = 0.2


def query_weights(query: str) -> Mapping[str, float]:
    """How much each content word of ``query`` says about what it asks for.

    When the text asks a question, words of its question sentences weigh 1 and the others
    ``STATEMENT_WEIGHT``; a text without a question weighs all its words 1. The mapping is
    shared (memoised) and read-only.
    """
    return _query_weights(query)


@memoised(0.01, text_map_bytes)
def _query_weights(query: str) -> Mapping[str, float]:
    sentences, asks = _asked_sentences(query)
    weights: dict[str, float] = {}
    asks_any = any(asks)
    for sentence, asked in zip(sentences, asks, strict=True):
        weight = 1.0 if asked or not asks_any else STATEMENT_WEIGHT
        for w in content_words(sentence):
            if weights.get(w, 0.0) < weight:
                weights[w] = weight
    return MappingProxyType(weights)


def asked_text(query: str) -> str | None:
    """What ``query`` asks: its question sentences and any they lean on (None: no question).

    These are the sentences whose words :func:`query_weights` weighs fully. An embedder
    compares passages and memories with this text, not with the small talk around it, and
    pays for a dozen words instead of the whole turn.
    """
    sentences, asks = _asked_sentences(query)
    if not any(asks):
        return None
    return " ".join(s for s, asked in zip(sentences, asks, strict=True) if asked)


def _asked_sentences(query: str) -> tuple[list[str], list[bool]]:
    from membrane.text.sentences import depends_on_previous, is_question, split_sentences

    sentences = split_sentences(query)
    asks = [is_question(s) for s in sentences]
    # "Which value was it?" asks about the sentence before it: that one is part of the question.
    for i in range(len(sentences) - 1, 0, -1):
        if asks[i] and depends_on_previous(sentences[i]):
            asks[i - 1] = True
    return sentences, asks


def lexical_scores(query: str, texts: Sequence[str], stats: Rarity) -> list[float]:
    """For each text, the summed rarity of the query's content words it contains.

    Words are weighted by :func:`query_weights`, so a turn's question counts most.
    """
    weights = {w: q * stats.idf(w) for w, q in query_weights(query).items()}
    if not weights:
        return [0.0] * len(texts)
    # fsum: the same score whatever order the set intersection comes out in.
    return [math.fsum(weights[w] for w in weights.keys() & set(content_words(t))) for t in texts]


def rank_fusion(rankings: Sequence[Sequence[int]], k: int = 60) -> list[int]:
    """Reciprocal rank fusion of several rankings of the same item indices, best first.

    Ties keep the order of the first ranking.

    >>> rank_fusion([[0, 1, 2], [2, 1, 0]])
    [0, 2, 1]
    """
    if not rankings:
        return []
    score: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking):
            score[item] = score.get(item, 0.0) + 1.0 / (k + rank + 1)
    first = {item: pos for pos, item in enumerate(rankings[0])}
    return sorted(score, key=lambda item: (-score[item], first.get(item, len(first))))
