"""Process-wide memos of functions of text, bounded by the bytes they hold.

The text stages read the same sentences and messages again on every turn (the kept window is
checked each turn, a dropped message is read when it leaves), so the word lists, sentence
splits and stated words they derive are memoised. Those memos are shared by every compiler in
the process, which makes their size a server's concern: each one is bounded by the bytes its
entries hold, together at most :func:`memo_bytes` (:data:`DEFAULT_MEMO_BYTES`, or the
``MEMBRANE_MEMO_BYTES`` environment variable read when this module is first imported).

A memo keeps two generations of entries: new ones go to the young generation, and when its
entries reach half the memo's bytes the old generation is dropped and the young one takes its
place; an entry found in the old generation moves back to the young one. What is still in use
survives, a full memo never forgets everything at once, and the bytes held stay under the
bound. An entry's bytes are counted generously (every object it holds, shared ones included,
plus the dictionary's own slot), so the real memory stays under the count. A value too large
for half of its memo is computed and returned without being kept.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from collections.abc import Callable, Collection, Hashable, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import Any, TypeVar

__all__ = [
    "BULK_ITEMS",
    "DEFAULT_MEMO_BYTES",
    "clear_memos",
    "cut_bytes",
    "fields_bytes",
    "key_bytes",
    "memo_bytes",
    "memoised",
    "memos_held_bytes",
    "pieces_bytes",
    "register_memo",
    "sentences_map_bytes",
    "skip_memo_writes",
    "strings_bytes",
    "text_map_bytes",
    "words_map_bytes",
    "writes_skipped",
]

#: What all process-wide memos may hold together unless ``MEMBRANE_MEMO_BYTES`` says otherwise.
DEFAULT_MEMO_BYTES = 16 * 2**20
# A dictionary slot in either generation (its entry, its share of the index and the table's
# spare room), counted on top of the key and the value.
_SLOT_BYTES = 100

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_size = sys.getsizeof
# An empty ASCII string's bytes; each ASCII character adds one.
_ASCII_STR_BYTES = _size("")


def _read_total() -> int:
    raw = os.environ.get("MEMBRANE_MEMO_BYTES", "").strip()
    if not raw:
        return DEFAULT_MEMO_BYTES
    try:
        total = int(raw)
    except ValueError:
        raise ValueError(f"MEMBRANE_MEMO_BYTES must be an integer, got {raw!r}") from None
    if total < 0:
        raise ValueError(f"MEMBRANE_MEMO_BYTES must not be negative, got {total}")
    return total


_TOTAL = _read_total()
#: A call reading more distinct texts than this at once (a history replayed whole, an offer
#: of tens of thousands of memories) keeps none of them in the memos (:func:`skip_memo_writes`).
BULK_ITEMS = 10_000
# Per thread: whether its memo misses are kept (see skip_memo_writes); and how many threads
# skip now, so that the usual case (none) costs a global read, not a thread-local one.
_SKIPPING = threading.local()
_skipping_threads = 0
_skipping_lock = threading.Lock()
# Each memo's count of the bytes it holds, and how to empty it.
_HOLDERS: list[tuple[Callable[[], int], Callable[[], None]]] = []


def memo_bytes() -> int:
    """What the process-wide memos may hold together, in bytes."""
    return _TOTAL


def memos_held_bytes() -> int:
    """What the process-wide memos hold now, by their own count."""
    return sum(held() for held, _ in _HOLDERS)


def clear_memos() -> None:
    """Empty every process-wide memo (a test or a benchmark starting from cold)."""
    for _, clear in _HOLDERS:
        clear()


def skip_memo_writes(active: bool = True) -> AbstractContextManager[None]:
    """While active, this thread's memoised functions (and token counters' memos) compute what
    their memo lacks without keeping it; what a memo holds is still read.

    For a call that reads tens of thousands of distinct texts once: keeping each would cost
    about what computing it does, and would push out everything the memos hold for the turns
    of other conversations. Other threads keep filling their memos as usual.
    """
    return _Skipping() if active else nullcontext()


class _Skipping:
    """The context :func:`skip_memo_writes` returns when active (a nested one changes nothing)."""

    __slots__ = ("_outer",)

    def __enter__(self) -> None:
        global _skipping_threads
        self._outer = getattr(_SKIPPING, "on", False)
        if not self._outer:
            with _skipping_lock:
                _skipping_threads += 1
            _SKIPPING.on = True

    def __exit__(self, *exc_info: object) -> None:
        global _skipping_threads
        if not self._outer:
            _SKIPPING.on = False
            with _skipping_lock:
                _skipping_threads -= 1


def writes_skipped() -> bool:
    """Whether this thread is inside an active :func:`skip_memo_writes`."""
    return _skipping_threads > 0 and bool(getattr(_SKIPPING, "on", False))


def register_memo(held: Callable[[], int], clear: Callable[[], None]) -> None:
    """Count a memo kept by hand (a plain dict on a hot path) with the others."""
    _HOLDERS.append((held, clear))


def strings_bytes(strings: Collection[object]) -> int:
    """The bytes of the objects in ``strings`` (each counted, shared or not).

    ASCII strings are counted from their joined length (one pass in C, a tenth of the time
    sizing each one takes): CPython lays out an ASCII string in ``_ASCII_STR_BYTES`` plus a
    byte a character. Anything else is sized object by object. (A str subclass would count
    as a plain string: the text stages key their memos by the strings they make themselves.)
    """
    try:
        joined = "".join(strings)  # type: ignore[arg-type]  # a TypeError for non-strings
    except TypeError:
        return sum(map(_size, strings))
    if joined.isascii():
        return _ASCII_STR_BYTES * len(strings) + len(joined)
    return sum(map(_size, strings))


def key_bytes(key: tuple[object, ...] | frozenset[object]) -> int:
    """The bytes of a tuple or frozenset of strings and of the strings in it."""
    return _size(key) + strings_bytes(key)


def fields_bytes(key: tuple[object, ...]) -> int:
    """The bytes of a tuple and of the objects in it, strings or not (sized one by one)."""
    return _size(key) + sum(map(_size, key))


def cut_bytes(text: str, parts: Collection[str]) -> int:
    """The bytes of strings cut from ``text`` (each a piece of it, possibly lower-cased or
    shortened: sentences, words, stems), counted without reading them when ``text`` is ASCII:
    together they hold at most its characters, plus a string's own bytes each."""
    if text.isascii():
        return _ASCII_STR_BYTES * len(parts) + len(text)
    return strings_bytes(parts)


def pieces_bytes(text: str, parts: tuple[str, ...] | frozenset[str]) -> int:
    """A memo entry's bytes: ``text`` as its key, the collection of pieces cut from it as
    its value (:func:`cut_bytes`)."""
    return _size(text) + _size(parts) + cut_bytes(text, parts)


def words_map_bytes(text: str, mapping: Mapping[str, object]) -> int:
    """The bytes of a mapping of words cut from ``text`` to numbers (a read-only view counted
    with its dict: its slots, and the word strings)."""
    return 2 * _size(mapping) + 32 * len(mapping) + cut_bytes(text, mapping)


def text_map_bytes(text: str, mapping: Mapping[str, object]) -> int:
    """A memo entry's bytes: ``text`` as its key, a mapping of words cut from it as its value
    (:func:`words_map_bytes`)."""
    return _size(text) + words_map_bytes(text, mapping)


def sentences_map_bytes(sentences: tuple[str, ...], mapping: Mapping[str, object]) -> int:
    """A memo entry's bytes: a tuple of sentences as its key (each counted), a mapping of
    words cut from them as its value (:func:`words_map_bytes`)."""
    return key_bytes(sentences) + words_map_bytes("".join(sentences), mapping)


class _Generations:
    """The two generations of one memo, and the bytes they hold (see the module)."""

    __slots__ = ("half", "lock", "old", "old_bytes", "young", "young_bytes")

    def __init__(self, max_bytes: int) -> None:
        self.half = max_bytes // 2
        # The young dict stays the same object (the memo reads it without a lock).
        self.young: dict[Any, Any] = {}
        self.old: dict[Any, Any] = {}
        self.young_bytes = 0
        self.old_bytes = 0
        self.lock = threading.Lock()

    def held(self) -> int:
        return self.young_bytes + self.old_bytes

    def rotate(self) -> None:
        """The young generation becomes the old one (the caller holds the lock)."""
        self.old = dict(self.young)
        self.old_bytes = self.young_bytes
        self.young.clear()
        self.young_bytes = 0

    def clear(self) -> None:
        with self.lock:
            self.young.clear()
            self.old = {}
            self.young_bytes = self.old_bytes = 0


def memoised(
    share: float, entry_bytes: Callable[[Any, Any], int]
) -> Callable[[Callable[[K], V]], Callable[[K], V]]:
    """Memoise a function of one hashable argument whose result is never None, in ``share``
    of :func:`memo_bytes`; ``entry_bytes(argument, result)`` counts an entry's bytes,
    generously and cheaply (it runs on every miss: :func:`pieces_bytes` for pieces of a text,
    :func:`fields_bytes` for a tuple of anything)."""

    def decorate(fn: Callable[[K], V]) -> Callable[[K], V]:
        memo = _Generations(int(share * _TOTAL))
        register_memo(memo.held, memo.clear)
        young, lock, half = memo.young, memo.lock, memo.half
        young_get = young.get

        @functools.wraps(fn)
        def lookup(key: K) -> V:
            value: V | None = young_get(key)
            if value is not None:
                return value
            value = memo.old.get(key)
            if value is None:
                value = fn(key)
            if _skipping_threads and getattr(_SKIPPING, "on", False):
                return value
            cost = entry_bytes(key, value) + _SLOT_BYTES
            if cost <= half:
                with lock:
                    if key not in young:
                        if memo.young_bytes + cost > half:
                            memo.rotate()
                        young[key] = value
                        memo.young_bytes += cost
            return value

        return lookup

    return decorate
