"""Recall's inverted index: each dropped passage filed under the words it states, compactly.

A conversation keeps one of these for as long as its tracker lives, and it holds every word of
every dropped passage, so its size is most of what a conversation costs a server. A dict of
lists of tuples spent about 250 bytes per word and 100 per entry; here the words filed at one
cut are sealed into a segment: the words once, sorted (interned, so words common to many
conversations are stored once in the process), the offsets of their runs and the runs
themselves as 4-byte entries (``pid * 2``, plus one when only a question states the word).
Segments merge when a newer one grows to half the size of the one before it, so a look-up
searches a few of them (their number grows with the logarithm of the conversation's length),
in each by bisection. A posting read back is a :class:`Posting`: its length is known without
reading it, and it yields ``(pid, message, weight)`` in pid order, the message read from the
passage itself.
"""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_left
from collections.abc import Iterator, Mapping, Sequence

from membrane.stages.history._passages import (
    QUESTION_WEIGHT,
    Passage,
    PassageList,
    stated_memo,
)

__all__ = ["Entry", "Posting", "PostingIndex"]

Entry = tuple[int, int, float]
_size = sys.getsizeof


class _Segment:
    """The words filed over some cuts: ``words[i]``'s entries are ``entries[starts[i] :
    starts[i + 1]]``, in pid order."""

    __slots__ = ("entries", "starts", "words")

    def __init__(self, words: list[str], starts: array[int], entries: array[int]) -> None:
        self.words = words
        self.starts = starts
        self.entries = entries

    def find(self, word: str) -> tuple[int, int] | None:
        """Where ``word``'s run lies in :attr:`entries`, or None."""
        words = self.words
        i = bisect_left(words, word)
        if i == len(words) or words[i] != word:
            return None
        return self.starts[i], self.starts[i + 1]

    def run(self, word: str) -> array[int]:
        found = self.find(word)
        return self.entries[found[0] : found[1]] if found is not None else array("I")

    def bytes(self) -> int:
        """What the segment holds, its words counted as if no other object shared them."""
        words = self.words
        return (
            (_size(self) + _size(words) + sum(map(_size, words)) + self.starts.buffer_info()[1] * 4)
            + self.entries.buffer_info()[1] * 4
            + 2 * _size(self.starts)
        )


def _sealed(runs: Mapping[str, Sequence[int]]) -> _Segment:
    words = sorted(runs)
    starts = array("I", [0])
    entries = array("I")
    for word in words:
        entries.extend(runs[word])
        starts.append(len(entries))
    return _Segment([sys.intern(w) for w in words], starts, entries)


def _merged(older: _Segment, newer: _Segment) -> _Segment:
    runs: dict[str, array[int]] = {}
    for segment in (older, newer):
        for i, word in enumerate(segment.words):
            run = segment.entries[segment.starts[i] : segment.starts[i + 1]]
            known = runs.get(word)
            if known is None:
                runs[word] = run
            else:
                known.extend(run)
    return _sealed(runs)


class Posting:
    """The passages stating one word: ``len()`` without reading them, and ``(pid, message,
    weight)`` for each in pid order when iterated (``messages[pid]``: its message)."""

    __slots__ = ("_head", "_messages", "_runs")

    def __init__(
        self, messages: Sequence[int], head: Sequence[Entry], runs: list[array[int]]
    ) -> None:
        self._messages = messages
        self._head = head
        self._runs = runs

    def __len__(self) -> int:
        return len(self._head) + sum(map(len, self._runs))

    def __bool__(self) -> bool:
        return bool(self._head) or any(self._runs)

    def __iter__(self) -> Iterator[Entry]:
        yield from self._head
        messages = self._messages
        for run in self._runs:
            for entry in run:
                pid = entry >> 1
                yield pid, messages[pid], QUESTION_WEIGHT if entry & 1 else 1.0

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Posting):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # compared by content, never a key


class PostingIndex:
    """Dropped passages by the words they state (see the module).

    ``passages`` is the tracker's own list: a passage's message is read from it.
    """

    def __init__(self, passages: PassageList) -> None:
        self._passages = passages
        self._segments: list[_Segment] = []
        # Filed since the last seal: word -> entries, sealed before the next look-up.
        self._pending: dict[str, list[int]] = {}
        self._bytes = 0

    def add(self, pid: int, passage: Passage) -> None:
        """File passage ``pid`` under each word it states (a question's words count half)."""
        pending = self._pending
        for word, weight in stated_memo(passage.sentences).items():
            entry = 2 * pid + (weight != 1.0)
            run = pending.get(word)
            if run is None:
                pending[word] = [entry]
            else:
                run.append(entry)

    def runs(self, word: str) -> list[array[int]]:
        """``word``'s entries in each segment holding it, oldest first."""
        self.seal()
        return [run for segment in self._segments if len(run := segment.run(word))]

    def get(self, word: str, default: Posting | None = None) -> Posting | None:
        """The passages stating ``word``, or ``default`` when none does."""
        runs = self.runs(word)
        return Posting(self._passages.messages, (), runs) if runs else default

    def __iter__(self) -> Iterator[str]:
        """Every word filed, once."""
        self.seal()
        seen: set[str] = set()
        for segment in self._segments:
            for word in segment.words:
                if word not in seen:
                    seen.add(word)
                    yield word

    def seal(self) -> None:
        """Make what was filed since the last seal a segment, merging as the module says."""
        if not self._pending:
            return
        segments = self._segments
        segments.append(_sealed(self._pending))
        self._pending = {}
        while len(segments) > 1 and 2 * len(segments[-1].entries) >= len(segments[-2].entries):
            newer = segments.pop()
            segments[-1] = _merged(segments[-1], newer)
        self._bytes = sum(segment.bytes() for segment in segments)

    def bytes(self) -> int:
        """What the index holds, about (what was filed since the last seal counted generously)."""
        pending = self._pending
        return self._bytes + (
            sum(_size(w) + 64 + 8 * len(run) for w, run in pending.items()) if pending else 0
        )
