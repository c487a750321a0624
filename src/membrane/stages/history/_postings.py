"""Recall's inverted index: each dropped passage filed under the words it states, compactly.

A conversation keeps one of these for as long as its tracker lives, and it holds every word of
every dropped passage, so its size is most of what a conversation costs a server. A dict of
lists of tuples spent about 250 bytes per word and 100 per entry; here the words filed at one
cut are sealed into a segment: each word once as its 8-byte key (:func:`word_key`), sorted,
the offsets of their runs and the runs themselves as 4-byte entries (``pid * 2``, plus one
when only a question states the word). Two words of one conversation share a key with a
chance of about one in 10^12 (a few thousand words, 64 bits); the rarity sketch the index is
read with shares counters far more often, by design.
Segments merge when a newer one grows to the size of the one before it, so a look-up
searches a few of them (their number grows with the logarithm of the conversation's length),
in each by bisection. A posting read back is a :class:`Posting`: its length is known without
reading it, and it yields ``(pid, message, weight)`` in pid order, the message read from the
passage itself.
"""

from __future__ import annotations

import hashlib
import sys
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Mapping, Sequence

from membrane.memo import memoised
from membrane.stages.history._passages import (
    QUESTION_WEIGHT,
    Passage,
    PassageList,
    sentence_stems,
    stated_memo,
)
from membrane.text.relevance import stem_letters

__all__ = [
    "MAX_POSTINGS_SCANNED",
    "Entry",
    "LazyPostings",
    "LongPosting",
    "Posting",
    "PostingIndex",
    "posting_of",
    "word_key",
]

Entry = tuple[int, int, float]
_size = sys.getsizeof
# How many postings read since the last seal an index keeps (a compile reads its telling words
# twice), and what one costs besides its entries, and each entry read out.
_MAX_READ = 32
#: Query words found in more passages than this are too common to tell passages apart.
MAX_POSTINGS_SCANNED = 128
_READ_BYTES = 300
_ENTRY_BYTES = 120
# A key above every 64-bit key, for the merge's exhausted side.
_PAST = 1 << 64


def word_key(word: str) -> int:
    """The 64-bit key an index files ``word`` under (BLAKE2b: the same in every process)."""
    return _word_key(word)


@memoised(0.03, lambda word, key: _size(word) + 36)
def _word_key(word: str) -> int:
    return int.from_bytes(hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest(), "little")


class _Segment:
    """The words filed over some cuts: the word of key ``keys[i]`` has the entries
    ``entries[starts[i] : starts[i + 1]]``, in pid order."""

    __slots__ = ("entries", "keys", "starts")

    def __init__(self, keys: array[int], starts: array[int], entries: array[int]) -> None:
        self.keys = keys
        self.starts = starts
        self.entries = entries

    def bytes(self) -> int:
        """What the segment holds."""
        return _size(self) + _size(self.keys) + _size(self.starts) + _size(self.entries)


def _sealed(runs: Mapping[int, Sequence[int]]) -> _Segment:
    keys = array("Q", sorted(runs))
    starts = array("I", [0])
    entries = array("I")
    for key in keys:
        entries.extend(runs[key])
        starts.append(len(entries))
    return _Segment(keys, starts, entries)


def _merged(older: _Segment, newer: _Segment) -> _Segment:
    """One segment holding both, a word's older entries first (their pids are lower)."""
    keys = array("Q")
    starts = array("I", [0])
    entries = array("I")
    a_keys, a_starts, a_entries = older.keys, older.starts, older.entries
    b_keys, b_starts, b_entries = newer.keys, newer.starts, newer.entries
    i = j = 0
    a_count, b_count = len(a_keys), len(b_keys)
    while i < a_count or j < b_count:
        a = a_keys[i] if i < a_count else _PAST
        b = b_keys[j] if j < b_count else _PAST
        if a <= b:
            keys.append(a)
            entries.extend(a_entries[a_starts[i] : a_starts[i + 1]])
            i += 1
            if a == b:
                entries.extend(b_entries[b_starts[j] : b_starts[j + 1]])
                j += 1
        else:
            keys.append(b)
            entries.extend(b_entries[b_starts[j] : b_starts[j + 1]])
            j += 1
        starts.append(len(entries))
    return _Segment(keys, starts, entries)


class LongPosting:
    """A posting with more entries than recall scans: its length, its entries read on demand."""

    __slots__ = ("_head", "_length", "_messages", "_runs")

    def __init__(
        self,
        messages: Sequence[int],
        head: Sequence[Entry],
        runs: list[tuple[array[int], int, int]],
        length: int,
    ) -> None:
        self._messages = messages
        self._head = head
        self._runs = runs
        self._length = length

    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> Iterator[Entry]:
        return iter(_read_out(self._messages, self._head, self._runs))


#: A word's passages, ``(pid, message, weight)`` in pid order: a list when recall may scan it
#: (at most MAX_POSTINGS_SCANNED entries, one more for a restored tracker), else a
#: :class:`LongPosting` whose length is known without reading it.
Posting = list[Entry] | LongPosting


def posting_of(
    messages: Sequence[int], head: Sequence[Entry], runs: list[tuple[array[int], int, int]]
) -> Posting:
    """The posting made of ``head`` then ``runs`` (each an array, a start and a stop)."""
    length = len(head) + sum(stop - start for _, start, stop in runs)
    # One more than recall scans: a restored tracker's word found past the limit stays long.
    if length > MAX_POSTINGS_SCANNED + 1:
        return LongPosting(messages, head, runs, length)
    return _read_out(messages, head, runs)


def _read_out(
    messages: Sequence[int], head: Sequence[Entry], runs: list[tuple[array[int], int, int]]
) -> list[Entry]:
    entries = list(head)
    for array_, start, stop in runs:
        entries += [
            (entry >> 1, messages[entry >> 1], QUESTION_WEIGHT if entry & 1 else 1.0)
            for entry in array_[start:stop]
        ]
    return entries


class PostingIndex:
    """Dropped passages by the words they state (see the module).

    ``passages`` is the tracker's own list: a passage's message is read from it.
    """

    def __init__(self, passages: PassageList) -> None:
        self._passages = passages
        self._segments: list[_Segment] = []
        # Filed since the last seal: word key -> entries, sealed before the next look-up.
        self._pending: dict[int, list[int]] = {}
        self._bytes = 0
        # The postings read since the last seal (a compile reads its few words several times),
        # and their bytes (see bytes()).
        self._read: dict[str, Posting | None] = {}
        self._read_bytes = 0

    def add(self, pid: int, passage: Passage) -> None:
        """File passage ``pid`` under each word it states (a question's words count half)."""
        pending = self._pending
        for word, weight in stated_memo(passage.sentences).items():
            key = _word_key(word)
            entry = 2 * pid + (weight != 1.0)
            run = pending.get(key)
            if run is None:
                pending[key] = [entry]
            else:
                run.append(entry)

    def runs(self, word: str) -> list[tuple[array[int], int, int]]:
        """Where ``word``'s entries lie in each segment holding it, oldest first."""
        if self._pending:
            self.seal()
        key = _word_key(word)
        out = []
        for segment in self._segments:
            keys = segment.keys
            i = bisect_left(keys, key)
            if i < len(keys) and keys[i] == key:
                out.append((segment.entries, segment.starts[i], segment.starts[i + 1]))
        return out

    def get(self, word: str, default: Posting | None = None) -> Posting | None:
        """The passages stating ``word``, or ``default`` when none does."""
        if self._pending:
            self.seal()
        read = self._read
        if word in read:
            found = read[word]
        else:
            found = self.posting(word)
            if len(read) >= _MAX_READ:
                self._forget_reads()
            read[word] = found
            # Counted as if read out: a tuple of three numbers a passage.
            if found is not None:
                self._read_bytes += _READ_BYTES + (
                    _ENTRY_BYTES * len(found) if isinstance(found, list) else 0
                )
        return default if found is None else found

    def _forget_reads(self) -> None:
        self._read.clear()
        self._read_bytes = 0

    def posting(self, word: str) -> Posting | None:
        """``word``'s posting read afresh (:meth:`get` keeps what it reads), or None."""
        runs = self.runs(word)
        return posting_of(self._passages.messages, (), runs) if runs else None

    def weights_in(self, word: str, pids: Iterable[int]) -> dict[int, float]:
        """The weight ``word`` has in each of ``pids`` that states it (as :meth:`add` filed it).

        Found by bisection in the word's runs, so a word too common to scan costs a few steps
        per passage instead of reading the passage's sentences again.
        """
        found: dict[int, float] = {}
        wanted = sorted(pids)
        for array_, start, stop in self.runs(word):
            for pid in wanted:
                start = bisect_left(array_, 2 * pid, start, stop)
                if start == stop:
                    break
                entry = array_[start]
                if entry >> 1 == pid:
                    found[pid] = QUESTION_WEIGHT if entry & 1 else 1.0
        return found

    def seal(self) -> None:
        """Make what was filed since the last seal a segment, merging as the module says."""
        if not self._pending:
            return
        segments = self._segments
        segments.append(_sealed(self._pending))
        self._pending = {}
        self._forget_reads()
        while len(segments) > 1 and len(segments[-1].entries) >= len(segments[-2].entries):
            newer = segments.pop()
            segments[-1] = _merged(segments[-1], newer)
        self._bytes = sum(segment.bytes() for segment in segments)

    def bytes(self) -> int:
        """What the index holds, about (what was filed since the last seal counted generously)."""
        pending = self._pending
        filed = sum(100 + 8 * len(run) for run in pending.values()) if pending else 0
        return self._bytes + filed + self._read_bytes


class LazyPostings(PostingIndex):
    """Postings whose first ``filed_later`` passages are not filed but found per word.

    A worker that restores a conversation, or replays a long one it has never seen, holds
    thousands of dropped passages at once; recall looks up a turn's few most telling words, so
    filing every word of every one of them (most of such a first compile) is put off. The first
    look-up of a word reads the passages whose lower-cased text holds the stem's letters
    (:func:`stem_letters`: "cit" for "citi", the stem of "city"; a passage with non-ASCII text
    always, as its words are lower-cased one by one), found in one lower-cased copy of their
    texts, and puts their entries before those of the passages filed since. The entries are
    those :meth:`PostingIndex.add` would have made, except that a word stated by more of these
    passages than recall ever scans keeps only the first of them past that limit (recall skips
    it either way).
    """

    def __init__(self, passages: PassageList, filed_later: int) -> None:
        super().__init__(passages)
        self._count = filed_later
        #: Set once a compile has used this index (see :meth:`HistoryTracker.update`).
        self.used = False
        # The early passages' entries of each word looked up so far.
        self._early: dict[str, list[Entry]] = {}
        # Their ASCII texts lower-cased, each followed by a NUL; where each one starts in it;
        # the passages whose text is not ASCII (always read).
        self._lowered: str | None = None
        self._starts = array("I")
        self._unicode: list[int] = []

    def posting(self, word: str) -> Posting | None:
        early = self._early.get(word)
        if early is None:
            early = self._early[word] = self._find(word)
        runs = self.runs(word)
        if not early and not runs:
            return None
        return posting_of(self._passages.messages, early, runs)

    def weights_in(self, word: str, pids: Iterable[int]) -> dict[int, float]:
        # An early passage is not filed, and a common word's early entries stop at the limit.
        pids = list(pids)
        found = super().weights_in(word, [pid for pid in pids if pid >= self._count])
        for pid in pids:
            if pid < self._count:
                weight = stated_memo(self._passages[pid].sentences).get(word)
                if weight is not None:
                    found[pid] = weight
        return found

    def filed(self) -> PostingIndex:
        """An index of the same passages with every one filed, in order (what the tracker
        would hold had it filed each passage as it was dropped)."""
        index = PostingIndex(self._passages)
        for pid, passage in enumerate(self._passages):
            index.add(pid, passage)
        index.seal()
        return index

    def bytes(self) -> int:
        early = sum(200 + _ENTRY_BYTES * len(entries) for entries in self._early.values())
        lowered = _size(self._lowered) if self._lowered is not None else 0
        return super().bytes() + early + lowered + _size(self._starts) + 8 * len(self._unicode)

    def _lowered_text(self) -> str:
        if self._lowered is None:
            parts = []
            at = 0
            for pid in range(self._count):
                text = self._passages.text(pid)
                self._starts.append(at)
                if text.isascii():
                    parts.append(text.lower())
                    at += len(text) + 1
                else:
                    self._unicode.append(pid)
                    parts.append("")
                    at += 1
            self._lowered = "\0".join(parts)
        return self._lowered

    def _candidates(self, prefix: str) -> list[int]:
        """The early passages whose lower-cased text holds ``prefix``, and those not ASCII."""
        lowered, starts = self._lowered_text(), self._starts
        found = set(self._unicode)
        at = lowered.find(prefix)
        while at >= 0:
            pid = bisect_right(starts, at) - 1
            found.add(pid)
            # Past the end of this passage's text: the next match is in another passage.
            end = starts[pid + 1] if pid + 1 < len(starts) else len(lowered)
            at = lowered.find(prefix, end)
        return sorted(found)

    def _find(self, word: str) -> list[Entry]:
        found: list[Entry] = []
        if not self._count:
            return found
        passages = self._passages
        prefix = stem_letters(word)
        for pid in self._candidates(prefix):
            sentences = passages[pid].sentences
            if not _has_stem(sentences, word, prefix):
                continue  # most passages the letters match: stated_words is dearer
            weight = stated_memo(sentences).get(word)
            if weight is not None:
                found.append((pid, passages.message(pid), weight))
                if len(found) > MAX_POSTINGS_SCANNED:
                    break
        return found


def _has_stem(sentences: Sequence[str], word: str, prefix: str) -> bool:
    """Whether a sentence holding ``prefix`` (lower-cased; a non-ASCII one always) has a
    content word of stem ``word``: false means the sentences state no such word."""
    return any(
        word in sentence_stems(sentence)
        for sentence in sentences
        if not sentence.isascii() or prefix in sentence.lower()
    )
