"""Document frequencies in a fixed number of bytes, however many words a conversation uses.

A conversation's statistics are saved with its state (``stages.history._snapshot``), so they
must not grow with its vocabulary. :class:`TermSketch` is a count-min sketch: each word adds
one to a counter in each of two rows of :data:`SKETCH_WIDTH` counters, chosen by a hash that is
the same in every process, and a word's document frequency is the smaller of its two
counters. Updates are conservative (only the counters at that minimum move), so a count is
never below the true one and is exact unless both of the word's counters are shared with
other words; with a few thousand distinct words that happens to a handful. Counters stop at
65,535 documents.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import math
import sys
import threading
import zlib
from array import array
from collections.abc import Iterable

from membrane.memo import memo_bytes, register_memo
from membrane.text.relevance import TermStats, content_words

__all__ = ["SKETCH_WIDTH", "TermSketch"]

#: Counters per row. Two rows of 8,192 16-bit counters: 32 KiB in memory, a few KiB stored.
SKETCH_WIDTH = 8192
_ROWS = 2
_MAX_COUNT = 0xFFFF
_BYTE_MAX = 0xFF
_RAW_BYTES = 2 * _ROWS * SKETCH_WIDTH


# Each word's counters, remembered in a plain dict: a sketch reads them for every word of
# every new message and dropped sentence, and a dict lookup costs a fraction of a call.
# Cleared when its bytes reach its share of the process-wide memos (rehashing a word is about
# a microsecond).
_REMEMBERED: dict[str, tuple[int, int]] = {}
_MAX_REMEMBERED_BYTES = int(0.06 * memo_bytes())
# An entry besides its word: the pair, its two ints, the dictionary's slot.
_ENTRY_BYTES = 56 + 2 * 32 + 100
_remembered_bytes = 0
_lock = threading.Lock()


def _held() -> int:
    return _remembered_bytes


def _forget() -> None:
    global _remembered_bytes
    with _lock:
        _REMEMBERED.clear()
        _remembered_bytes = 0


register_memo(_held, _forget)


def _buckets(word: str) -> tuple[int, int]:
    """The word's counter in each row (BLAKE2b: Python's own str hash differs per process)."""
    global _remembered_bytes
    found = _REMEMBERED.get(word)
    if found is None:
        found = _hashed_buckets(word)
        cost = sys.getsizeof(word) + _ENTRY_BYTES
        with _lock:
            if _remembered_bytes + cost > _MAX_REMEMBERED_BYTES:
                _REMEMBERED.clear()
                _remembered_bytes = 0
            _REMEMBERED[word] = found
            _remembered_bytes += cost
    return found


def _hashed_buckets(word: str) -> tuple[int, int]:
    h = int.from_bytes(hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest(), "little")
    return (h & 0xFFFFFFFF) % SKETCH_WIDTH, SKETCH_WIDTH + (h >> 32) % SKETCH_WIDTH


class TermSketch(TermStats):
    """:class:`TermStats` in a fixed-size count-min sketch (see the module)."""

    __slots__ = ("_counts", "_rarities")

    def __init__(self, documents: Iterable[str] = ()) -> None:
        # One byte a counter until one would pass 255 (few conversations get there), then two:
        # a conversation keeps its sketch as long as it lives.
        self._counts = array("B", bytes(_RAW_BYTES // 2))
        # The rarity of each document frequency met so far, for one number of documents.
        # Replaced whole, never changed for another count, so threads reading it stay right.
        self._rarities: tuple[int, dict[int, float]] = (-1, {})
        super().__init__(documents)

    def add(self, document: str) -> None:
        self.add_words(content_words(document))

    def add_words(
        self, words: Iterable[str], buckets: dict[str, tuple[int, int]] | None = None
    ) -> None:
        """Add one document, given by its words.

        ``buckets``: the caller's own memo of each word's counters, for a caller adding
        thousands of documents at once (a long replay, whose words would push each other
        out of the process-wide one); it is filled as words are met.
        """
        self._add(words, buckets, None)

    def add_words_noting(
        self, words: Iterable[str], buckets: dict[str, tuple[int, int]] | None = None
    ) -> array[int]:
        """:meth:`add_words`, returning the counters it raised (so :meth:`undo` can take the
        document back out)."""
        raised = array("H")
        self._add(words, buckets, raised)
        return raised

    def _add(
        self,
        words: Iterable[str],
        buckets: dict[str, tuple[int, int]] | None,
        raised: array[int] | None,
    ) -> None:
        counts = self._counts
        known = (_REMEMBERED if buckets is None else buckets).get
        # In sorted order: where two of a document's words share a counter, the conservative
        # update depends on their order, and a set's order differs between processes.
        for word in sorted(words if isinstance(words, (set, frozenset)) else set(words)):
            pair = known(word)
            if pair is None:
                if buckets is None:
                    pair = _buckets(word)
                else:
                    pair = buckets[word] = _hashed_buckets(word)
            a, b = pair
            x, y = counts[a], counts[b]
            low = x if x < y else y
            if low == _BYTE_MAX and counts.typecode == "B":
                counts = self._counts = array("H", counts)
            if low < _MAX_COUNT:
                if x == low:
                    counts[a] = low + 1
                    if raised is not None:
                        raised.append(a)
                if y == low:
                    counts[b] = low + 1
                    if raised is not None:
                        raised.append(b)
        self.documents += 1

    def undo(self, raised: array[int]) -> None:
        """Take back the last document added, whose raised counters :meth:`add_words_noting`
        returned."""
        counts = self._counts
        for bucket in raised:
            counts[bucket] -= 1
        self.documents -= 1

    def copy(self) -> TermSketch:
        """An independent sketch with the same counts."""
        twin = TermSketch()
        twin._counts = array(self._counts.typecode, self._counts)
        twin.documents = self.documents
        return twin

    def df(self, word: str) -> int:
        a, b = _buckets(word)
        return min(self._counts[a], self._counts[b])

    def min_df(self, words: Iterable[str]) -> int | None:
        return min(self._dfs(words), default=None)

    def idf(self, word: str) -> float:
        return math.log((self.documents + 1) / (self.df(word) + 0.5)) + 0.1

    def idfs(self, words: Iterable[str]) -> list[float]:
        # :meth:`idf` of each word. Most words share a few small frequencies, so each
        # frequency's rarity is computed once per number of documents (the same float).
        n = self.documents + 1
        rarities = self._rarities
        if rarities[0] != n:
            rarities = self._rarities = (n, {})
        known, log = rarities[1], math.log
        out = []
        for df in self._dfs(words):
            rarity = known.get(df)
            if rarity is None:
                rarity = known[df] = log(n / (df + 0.5)) + 0.1
            out.append(rarity)
        return out

    def _dfs(self, words: Iterable[str]) -> list[int]:
        """:meth:`df` of each of ``words`` (inlined: recall and the index ask for many)."""
        counts, remembered = self._counts, _REMEMBERED.get
        out = []
        for word in words:
            a, b = remembered(word) or _buckets(word)
            x, y = counts[a], counts[b]
            out.append(x if x < y else y)
        return out

    def held_bytes(self) -> int:
        """The bytes the sketch holds: its counters, and the rarities met so far."""
        known = self._rarities[1]
        return sys.getsizeof(self._counts) + 200 + sys.getsizeof(known) + 60 * len(known)

    def to_text(self) -> str:
        """The counters, little-endian, deflated and in base64 (a few KiB)."""
        if self._counts.typecode == "B":
            # One-byte counters widened to two little-endian bytes: the count, then a zero.
            wide = bytearray(2 * len(self._counts))
            wide[0::2] = self._counts.tobytes()
            raw = bytes(wide)
        else:
            counts = array("H", self._counts)
            if sys.byteorder == "big":
                counts.byteswap()
            raw = counts.tobytes()
        # Run-length deflate: several times faster than the default strategy (a snapshot is
        # made on every cut move), and smaller while most counters are still zero.
        deflate = zlib.compressobj(9, zlib.DEFLATED, 15, 9, zlib.Z_RLE)
        packed = deflate.compress(raw) + deflate.flush()
        return base64.b64encode(packed).decode("ascii")

    @classmethod
    def from_text(cls, text: str, documents: int) -> TermSketch:
        """The sketch :meth:`to_text` wrote; ``ValueError`` for anything else."""
        try:
            raw = zlib.decompressobj().decompress(
                base64.b64decode(text, validate=True), _RAW_BYTES + 1
            )
        except (binascii.Error, zlib.error) as exc:
            raise ValueError(f"the term sketch cannot be decoded ({exc})") from exc
        if len(raw) != _RAW_BYTES:
            raise ValueError(f"the term sketch holds {len(raw)} bytes, expected {_RAW_BYTES}")
        sketch = cls()
        counts = array("H", raw)
        if sys.byteorder == "big":
            counts.byteswap()
        highest = max(counts)
        if highest > documents:
            raise ValueError("a term sketch counter is above its number of documents")
        sketch._counts = array("B", counts) if highest <= _BYTE_MAX else counts
        sketch.documents = documents
        return sketch
