"""Token counters: the protocol, the tiktoken adapter, an estimate, and a memo."""

from __future__ import annotations

import math
import re
import string
import sys
import threading
from collections.abc import Callable, Hashable, Sequence
from typing import Generic, Protocol, TypeVar, runtime_checkable

from membrane.memo import writes_skipped
from membrane.tokenizers._bundled import BUNDLED_ENCODINGS, load_encoding

__all__ = [
    "DEFAULT_COUNT_MEMO_BYTES",
    "CharacterEstimateCounter",
    "MemoizedCounter",
    "TiktokenAdapter",
    "TokenCounter",
    "count_each",
    "count_tokens",
]


@runtime_checkable
class TokenCounter(Protocol):
    """Anything that can count the tokens of a text."""

    @property
    def name(self) -> str:
        """A stable name for the tokenizer (used in metadata and memo keys)."""
        ...

    def count(self, text: str) -> int:
        """Return the number of tokens in ``text``."""
        ...


class TiktokenAdapter:
    """Counts with one of the bundled tiktoken encodings, loaded on first use.

    >>> TiktokenAdapter("cl100k_base").count("hello world")
    2
    """

    def __init__(self, encoding_name: str = "cl100k_base") -> None:
        # Checked here rather than on first count, so a typo fails where it was written.
        if encoding_name not in BUNDLED_ENCODINGS:
            known = ", ".join(BUNDLED_ENCODINGS)
            raise ValueError(f"unknown encoding {encoding_name!r}; bundled encodings are: {known}")
        self._encoding_name = encoding_name

    @property
    def name(self) -> str:
        return self._encoding_name

    #: tiktoken splits text into pieces with a regex before BPE, and no piece of the bundled
    #: encodings runs across a line break followed by a character other than white space or
    #: "/", nor across an ASCII letter or digit followed by a line break; so a text's count is
    #: the sum of the counts of its parts cut at such places. A line ending in ASCII
    #: punctuation after a letter, digit or space ends in one piece: that punctuation (with
    #: the space) and the line breaks after it. No piece runs across a non-space character
    #: followed by a space. A space before ASCII letters joins their piece and changes no
    #: other, when the letters are followed by an ASCII character other than an apostrophe.
    #: MemoizedCounter uses all this to count a prompt from its (mostly memoised) parts.
    splits_at_line_starts = True

    def count(self, text: str) -> int:
        # Special-token strings in user text are counted as ordinary text, like tiktoken's
        # encode_ordinary: a prompt containing "<|endoftext|>" must not raise.
        return len(load_encoding(self._encoding_name).encode_ordinary(text))

    def count_each(self, texts: Sequence[str]) -> list[int]:
        """:meth:`count` of each of ``texts`` (the encoding looked up once)."""
        encode = load_encoding(self._encoding_name).encode_ordinary
        return [len(encode(text)) for text in texts]

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (ordinary text, no special tokens)."""
        return load_encoding(self._encoding_name).encode_ordinary(text)

    def decode(self, tokens: list[int]) -> str:
        """Text of ``tokens``."""
        return load_encoding(self._encoding_name).decode(tokens)

    def __repr__(self) -> str:
        return f"TiktokenAdapter({self._encoding_name!r})"


class CharacterEstimateCounter:
    """A tokenizer-free estimate: one token per ``chars_per_token`` characters, rounded up."""

    def __init__(self, chars_per_token: float = 4.0) -> None:
        if chars_per_token <= 0:
            raise ValueError("chars_per_token must be positive")
        self._chars_per_token = chars_per_token

    @property
    def name(self) -> str:
        return f"chars/{self._chars_per_token:g}"

    def count(self, text: str) -> int:
        return math.ceil(len(text) / self._chars_per_token)

    def __repr__(self) -> str:
        return f"CharacterEstimateCounter({self._chars_per_token!r})"


# Runs of line breaks, and a space after a sentence's end mark (where a cut goes before the
# space). The pattern opens with one character set, which re scans for quickly (twice the
# speed of a branch per kind); the lookbehind, tried only after a line break, tells the kinds
# apart.
_CUTS = re.compile(r"[.!?\n](?:(?<=\n)\n*|[\"')\]]* )")
_ASCII_RUN = re.compile(r"[A-Za-z]+")
_ASCII_ALNUM = frozenset(string.ascii_letters + string.digits)
_ASCII_PUNCTUATION = frozenset(string.punctuation)
_SPLIT_MIN_CHARS = 128

K = TypeVar("K", bound=Hashable)


class _Generations(Generic[K]):
    """Counts by key, at most ``max_entries`` of them holding at most ``max_bytes``, forgotten
    oldest half first.

    Two generations: new counts go to the young one; when it holds half of either bound, the
    old one is dropped and the young one takes its place. A count found in the old generation
    moves to the young one, so what is still in use survives the next drop, and a full memo
    never forgets everything at once (a long-lived process would recount a whole prompt).
    An entry's bytes are its key's (its strings, counted even when the caller holds them too)
    and :data:`_SLOT_BYTES`; a key too large for half the bytes is not kept. Reads take no
    lock (each is one lookup per generation); writes take one, so the bounds hold under
    threads.
    """

    __slots__ = (
        "_half",
        "_half_bytes",
        "_keep_old",
        "_key_bytes",
        "_lock",
        "old",
        "old_bytes",
        "young",
        "young_bytes",
    )

    def __init__(
        self, max_entries: int, max_bytes: int, key_bytes: Callable[[K], int] = sys.getsizeof
    ) -> None:
        self._half = max(max_entries // 2, 1)
        self._half_bytes = max_bytes // 2
        self._keep_old = 2 * self._half <= max_entries  # not for a bound of one
        self._key_bytes = key_bytes
        self._lock = threading.Lock()
        self.young: dict[K, int] = {}
        self.old: dict[K, int] = {}
        # The bytes of each generation's entries.
        self.young_bytes = self.old_bytes = 0

    def get(self, key: K) -> int | None:
        n = self.young.get(key)
        if n is None:
            n = self.old.get(key)
            if n is not None:
                self.put(key, n)
        return n

    def put(self, key: K, n: int) -> None:
        if writes_skipped():
            return
        cost = self._key_bytes(key) + _SLOT_BYTES
        if cost > self._half_bytes:
            return
        with self._lock:
            if len(self.young) >= self._half or self.young_bytes + cost > self._half_bytes:
                keep = self._keep_old
                self.old, self.young = (self.young if keep else {}), {}
                self.old_bytes, self.young_bytes = (self.young_bytes if keep else 0), 0
            self.young[key] = n
            self.young_bytes += cost

    def __len__(self) -> int:
        return len(self.young) + len(self.old)

    def shrink(self, max_bytes: int) -> None:
        """Hold at most ``max_bytes`` from now on (what is held now is forgotten)."""
        with self._lock:
            self._half_bytes = min(self._half_bytes, max_bytes // 2)
            self.young, self.old = {}, {}
            self.young_bytes = self.old_bytes = 0


# A memo entry besides its key: the dictionary's slot (its share of the table) and the count.
_SLOT_BYTES = 60
#: What one counter's memo may hold (its texts and lines) unless told otherwise.
DEFAULT_COUNT_MEMO_BYTES = 32 * 2**20


def _pair_bytes(pair: tuple[str, str]) -> int:
    return sys.getsizeof(pair) + sys.getsizeof(pair[0]) + sys.getsizeof(pair[1])


class MemoizedCounter:
    """Wraps a counter so each distinct text is counted once.

    For a counter that declares ``splits_at_line_starts`` (the bundled tiktoken encodings), a
    long text is counted line by line and sentence by sentence, so a prompt that reuses most
    of last turn's lines costs only its new lines. The memo holds at most ``max_entries``
    texts (and as many lines with their breaks) in at most ``max_bytes`` (half for the texts,
    half for the lines): when full it forgets the half used least recently (see
    :class:`_Generations`), which keeps memory flat in a long-lived process.
    Threads may share one: a count is a function of the text alone, the memo is read without
    a lock and written under one.
    """

    def __init__(
        self,
        inner: TokenCounter,
        max_entries: int = 50_000,
        max_bytes: int = DEFAULT_COUNT_MEMO_BYTES,
    ) -> None:
        self.inner = inner
        self._texts: _Generations[str] = _Generations(max_entries, max_bytes // 2)
        # (line, breaks after it) -> tokens
        self._lines: _Generations[tuple[str, str]] = _Generations(
            max_entries, max_bytes // 2, _pair_bytes
        )
        self._by_lines = bool(getattr(inner, "splits_at_line_starts", False))

    def __len__(self) -> int:
        """How many texts the memo holds now."""
        return len(self._texts)

    def shrink(self, max_bytes: int) -> None:
        """Hold at most ``max_bytes`` from now on, forgetting every count held now."""
        self._texts.shrink(max_bytes // 2)
        self._lines.shrink(max_bytes // 2)

    @property
    def held_bytes(self) -> int:
        """The bytes the memo's entries hold, by its own count (see :class:`_Generations`)."""
        texts, lines = self._texts, self._lines
        return texts.young_bytes + texts.old_bytes + lines.young_bytes + lines.old_bytes

    @property
    def name(self) -> str:
        return self.inner.name

    def count(self, text: str) -> int:
        n = self._texts.young.get(text)  # the usual hit, without a call
        if n is None:
            n = self._texts.get(text)
            if n is None:
                n = self._count_new(text)
                self._texts.put(text, n)
        return n

    def count_each(self, texts: Sequence[str]) -> list[int]:
        """:meth:`count` of each of ``texts``, keeping none of them in the memo.

        For a history replayed at once (see ``stages.history._cut``): its texts are seen
        once, and memoising each would cost about as much as counting it and push out what
        the memo holds for the turns to come. A text the memo holds is read from it; the
        others are counted whole by the wrapped counter, which gives the count :meth:`count`
        gives (the memo's cuts only let it reuse parts).
        """
        young, old = self._texts.young.get, self._texts.old.get
        counts: list[int] = []
        missing: list[int] = []
        for text in texts:
            n = young(text)
            if n is None:
                n = old(text)
            if n is None:
                missing.append(len(counts))
                n = 0
            counts.append(n)
        fresh = count_each(self.inner.count, [texts[i] for i in missing])
        for i, n in zip(missing, fresh, strict=True):
            counts[i] = n
        return counts

    def _count_new(self, text: str) -> int:
        if not self._by_lines:
            return self.inner.count(text)
        if len(text) >= _SPLIT_MIN_CHARS:
            pieces = _split_at_piece_starts(text)
            if len(pieces) > 1:
                # Most pieces are known: look them up without a call. One lookup each, as
                # another thread may drop a generation between a membership test and a read.
                known = self._texts.young.get
                return sum([self._count_piece(p) if (n := known(p)) is None else n for p in pieces])
        return self._count_uncut(text)

    def count_lines(self, lines: Sequence[tuple[str, str]]) -> int:
        """Tokens of the text made of each ``(line, breaks)`` pair in turn.

        ``breaks`` is the run of line breaks after the line ("" for the last). When every
        line after a break opens with a character other than white space or "/", tiktoken
        starts a new piece there (see TiktokenAdapter), so the text's count is the sum of
        each line's count with its breaks: the line's (memoised) count plus what the breaks
        add, found from its final punctuation alone, and memoised per pair. Otherwise the
        joined text is counted.
        """
        memo = self._lines
        total = 0
        last = len(lines) - 1
        for i, pair in enumerate(lines):
            line, breaks = pair
            first = line[:1]
            cut_before = i == 0 or (first and not first.isspace() and first != "/")
            if not self._by_lines or not cut_before or (i < last and not breaks):
                break
            n = memo.get(pair)
            if n is None:
                if breaks.strip("\n"):  # not a run of line breaks: no cut to rely on
                    break
                n = self.count(line) + self._breaks_after(line, breaks)
                memo.put(pair, n)
            total += n
        else:
            return total
        return self.count("".join(line + breaks for line, breaks in lines))

    def _breaks_after(self, line: str, breaks: str) -> int:
        """How many tokens ``breaks`` adds after ``line``."""
        if not breaks:
            return 0
        if line[-1:] in _ASCII_ALNUM:
            return self.count(breaks)
        last = _final_punctuation(line)
        if last is not None:
            return self.count(last + breaks) - self.count(last)
        return self.count(line + breaks) - self.count(line)

    def _count_piece(self, piece: str) -> int:
        """Like :meth:`count` for a piece that has no cut left in it."""
        n = self._texts.get(piece)
        if n is None:
            n = self._count_uncut(piece)
            self._texts.put(piece, n)
        return n

    def _count_uncut(self, text: str) -> int:
        """The count of ``text`` from memoised parts where the rules above allow.

        A sentence after the one before it (" Next one.") and the same sentence alone (an
        index line, a passage) are counted from each other, whichever was counted first.
        """
        # "line.\n" from the count of "line." (usually memoised): only the last piece differs.
        line = text.rstrip("\n")
        if line != text and line[-1:] in _ASCII_ALNUM:  # "line\n" as "line" and "\n"
            return self.count(line) + self.count(text[len(line) :])
        last = _final_punctuation(line) if line != text else None
        if last is not None:
            return self.count(line) - self.count(last) + self.count(last + text[len(line) :])
        # "[Mem:3] text" as its label plus " text", which comes back under other labels.
        space = text.find(" ")
        if space > 0 and text[space - 1] == "]":
            return self.count(text[:space]) + self.count(text[space:])
        # " text" from a memoised "text", or back: only the first word's piece takes the space.
        if text.startswith(" "):
            word = _leading_word(text[1:])
            if word is not None and (known := self._texts.get(text[1:])) is not None:
                return known - self.count(word) + self.count(" " + word)
        elif (word := _leading_word(text)) is not None and (
            known := self._texts.get(" " + text)
        ) is not None:
            return known - self.count(" " + word) + self.count(word)
        return self.inner.count(text)

    def __repr__(self) -> str:
        return f"MemoizedCounter({self.inner!r})"


def _leading_word(text: str) -> str | None:
    """The ASCII letters opening ``text`` when an ASCII character other than a letter or an
    apostrophe follows them; None otherwise."""
    letters = _ASCII_RUN.match(text)
    end = letters.end() if letters is not None else 0
    if end == 0 or end == len(text) or text[end] == "'" or not text[end].isascii():
        return None
    return text[:end]


def _split_at_piece_starts(text: str) -> list[str]:
    """``text`` cut where tiktoken always starts a new piece (see TiktokenAdapter).

    That is after a line break that opens a line (not white space or "/"), before a line
    break that ends a line on an ASCII letter or digit, so "line\\n" reuses the count of
    "line", and before a space after a sentence's end mark (and any closing quotes or
    brackets after it), so the sentences of a message are counted (and memoised) one by one.
    """
    pieces = []
    start = 0
    for match in _CUTS.finditer(text):
        first, after = match.span()
        if text[first] != "\n":
            pieces.append(text[start : after - 1])
            start = after - 1
            continue
        if first > start and text[first - 1] in _ASCII_ALNUM:
            pieces.append(text[start:first])
            start = first
        if after < len(text) and not text[after].isspace() and text[after] != "/":
            pieces.append(text[start:after])
            start = after
    pieces.append(text[start:])
    return pieces


def _final_punctuation(line: str) -> str | None:
    """The ASCII punctuation ending ``line`` after a letter or digit, or after a space (then
    with the space); None when there is none or it would be the whole line."""
    start = len(line)
    while start > 0 and line[start - 1] in _ASCII_PUNCTUATION:
        start -= 1
    if start == len(line) or start == 0:
        return None
    before = line[start - 1]
    if before in _ASCII_ALNUM:
        return line[start:]
    if before == " " and start > 1:
        return line[start - 1 :]
    return None


def count_each(count: Callable[[str], int], texts: Sequence[str]) -> list[int]:
    """``count(text)`` for each of ``texts``; when ``count`` is the ``count`` method of a
    counter that has a ``count_each`` method too (:class:`MemoizedCounter`,
    :class:`TiktokenAdapter`), that one is used: the same numbers, counted in one go."""
    each = getattr(getattr(count, "__self__", None), "count_each", None)
    if each is not None and getattr(count, "__name__", "") == "count":
        counted: list[int] = each(texts)
        return counted
    return [count(text) for text in texts]


def count_tokens(text: str, encoding_name: str = "cl100k_base") -> int:
    """Count the tokens of ``text`` with a bundled encoding (exactly tiktoken's count).

    >>> count_tokens("hello world")
    2
    """
    return len(load_encoding(encoding_name).encode_ordinary(text))
