"""The in-process state store (the default)."""

from __future__ import annotations

import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from membrane.errors import InvalidInputError
from membrane.state.keys import glob_regex
from membrane.state.protocol import decode_state, encode_state, state_version

__all__ = ["DEFAULT_MAX_ENTRIES", "InMemoryStateStore"]

#: Entries an :class:`InMemoryStateStore` keeps unless told otherwise (a conversation's entry is
#: 6-12 KB once its history has been cut, so the default bound is about 100 MB at most).
DEFAULT_MAX_ENTRIES = 10_000


class InMemoryStateStore:
    """A thread-safe, bounded dict of JSON strings.

    Values go through JSON on the way in and out, so what works here also works with a remote
    store, and callers of :meth:`get` can never mutate stored state by accident
    (:meth:`read_only` shares one decoding instead, for readers that never change it).

    At most ``max_entries`` keys are kept; past that, the key used least recently leaves first
    (a conversation that comes back later pays one cache miss, as after a Redis TTL).
    ``ttl_seconds`` makes an entry expire that long after it was last written, like the Redis
    store's ``ttl_seconds``; None keeps entries until the bound pushes them out.

    A ``put`` replaces what the key holds, whatever its format version, as the Redis store's
    does.
    """

    def __init__(
        self,
        *,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        ttl_seconds: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 1:
            raise InvalidInputError(
                f"max_entries must be a positive int, got {max_entries!r}", field="max_entries"
            )
        if ttl_seconds is not None and not (
            isinstance(ttl_seconds, (int, float))
            and not isinstance(ttl_seconds, bool)
            and 0 < ttl_seconds < float("inf")
        ):
            raise InvalidInputError(
                f"ttl_seconds must be a positive number of seconds or None, got {ttl_seconds!r}",
                field="ttl_seconds",
            )
        self.max_entries = max_entries
        self.ttl_seconds = ttl_seconds
        self._clock = clock
        # key -> (encoded value, expiry time or None, format version)
        self._data: OrderedDict[str, tuple[str, float | None, int]] = OrderedDict()
        # key -> (encoded value, its decoding), for read_only
        self._decoded: dict[str, tuple[str, dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            raw = self._raw(key)
        return None if raw is None else decode_state(raw)

    def read_only(self, key: str) -> Mapping[str, Any] | None:
        """:meth:`get`, without a copy for the caller: the value is decoded once per write and
        shared by every ``read_only`` caller, who must not change it (a compile reads its
        conversation's state this way on every turn)."""
        with self._lock:
            raw = self._raw(key)
            known = self._decoded.get(key)
        if raw is None:
            return None
        if known is not None and known[0] is raw:
            return known[1]
        value = decode_state(raw)
        with self._lock:
            entry = self._data.get(key)
            if entry is not None and entry[0] is raw:
                self._decoded[key] = (raw, value)
        return value

    def _raw(self, key: str) -> str | None:
        """The encoded value under ``key`` (None: none, or expired), marked as used."""
        entry = self._data.get(key)
        if entry is None:
            return None
        raw, expires, _ = entry
        if expires is not None and self._clock() >= expires:
            self._drop(key)
            return None
        self._data.move_to_end(key)
        return raw

    def put(self, key: str, value: dict[str, Any]) -> None:
        raw, version = encode_state(value), state_version(value)
        now = self._clock()
        expires = None if self.ttl_seconds is None else now + self.ttl_seconds
        with self._lock:
            self._decoded.pop(key, None)
            self._data[key] = (raw, expires, version)
            self._data.move_to_end(key)
            while len(self._data) > self.max_entries:
                self._drop(next(iter(self._data)))

    def delete(self, key: str) -> None:
        """Remove ``key`` and its value (nothing happens when it is absent)."""
        with self._lock:
            self._drop(key)

    def _drop(self, key: str) -> None:
        self._data.pop(key, None)
        self._decoded.pop(key, None)

    def scan(self, match: str) -> list[str]:
        """The keys held that match ``match``, a Redis ``SCAN MATCH`` glob (``*``, ``?``,
        ``[...]``, ``\\`` escapes)."""
        pattern = re.compile(glob_regex(match))
        with self._lock:
            return [key for key in self._data if pattern.fullmatch(key)]

    def __len__(self) -> int:
        """Entries held, expired ones not yet dropped included (at most ``max_entries``)."""
        with self._lock:
            return len(self._data)
