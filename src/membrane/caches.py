"""The bounded caches a compiler keeps between calls, and its per-key locks."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

__all__ = ["KeyedLocks", "LRUCache"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LRUCache(Generic[K, V]):
    """A dict bounded to ``max_entries``; the least recently used entry leaves first.

    With ``max_bytes``, also bounded by bytes: ``size`` estimates an entry when it is put
    (put an entry again after it grows), and entries leave until the total fits, though the
    newest entry always stays. Safe to share between threads: each operation holds the
    cache's own lock briefly.
    """

    def __init__(
        self,
        max_entries: int,
        *,
        max_bytes: int | None = None,
        size: Callable[[V], int] | None = None,
    ) -> None:
        self._max = max_entries
        self._max_bytes = max_bytes
        self._size = size
        self._data: OrderedDict[K, V] = OrderedDict()
        self._bytes: dict[K, int] = {}
        self._total = 0
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            if self._size is not None:
                size = self._size(value)
                self._total += size - self._bytes.get(key, 0)
                self._bytes[key] = size
            limit = self._max_bytes
            while len(self._data) > self._max or (
                limit is not None and self._total > limit and len(self._data) > 1
            ):
                self._pop(next(iter(self._data)))

    def _pop(self, key: K) -> None:
        del self._data[key]
        self._total -= self._bytes.pop(key, 0)

    def find(self, predicate: Callable[[K], bool]) -> V | None:
        """The value of the most recently used key that passes ``predicate`` (None: none does)."""
        with self._lock:
            return next((v for k, v in reversed(self._data.items()) if predicate(k)), None)

    def discard_where(self, predicate: Callable[[K], bool]) -> None:
        with self._lock:
            for key in [k for k in self._data if predicate(k)]:
                self._pop(key)

    @property
    def total_bytes(self) -> int:
        """The estimated bytes of the entries held (0 without ``size``)."""
        return self._total

    def __len__(self) -> int:
        return len(self._data)


class KeyedLocks:
    """One re-entrant lock per key (a conversation, a model's scale) while anyone holds it.

    Compiles of one conversation take turns; compiles of different conversations never wait
    for each other. A key's lock is dropped when its last holder leaves, so the registry holds
    only the keys in use. The locks are thread locks and are never held across an ``await``.
    """

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[Hashable, tuple[threading.RLock, list[int]]] = {}

    @contextmanager
    def hold(self, key: Hashable) -> Iterator[None]:
        with self._guard:
            entry = self._locks.get(key)
            if entry is None:
                entry = self._locks[key] = (threading.RLock(), [0])
            entry[1][0] += 1
        try:
            with entry[0]:
                yield
        finally:
            with self._guard:
                entry[1][0] -= 1
                if not entry[1][0]:
                    del self._locks[key]

    def busy(self, key: Hashable) -> bool:
        """True while some caller holds (or waits for) ``key``'s lock."""
        return key in self._locks

    def __len__(self) -> int:
        return len(self._locks)
