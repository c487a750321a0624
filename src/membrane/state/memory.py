"""The in-process state store (the default)."""

from __future__ import annotations

import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
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
    store, and callers can never mutate stored state by accident.

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
        self._lock = threading.Lock()

    def get(self, key: str) -> dict[str, Any] | None:
        raw = self.stored_text(key)
        return None if raw is None else decode_state(raw)

    def stored_text(self, key: str) -> str | None:
        """The JSON text kept under ``key``, not decoded (None: none, or expired); reading it
        marks the key as used, as :meth:`get` does."""
        with self._lock:
            entry = self._data.get(key)
            if entry is None:
                return None
            raw, expires, _ = entry
            if expires is not None and self._clock() >= expires:
                del self._data[key]
                return None
            self._data.move_to_end(key)
        return raw

    def put(self, key: str, value: dict[str, Any]) -> None:
        raw, version = encode_state(value), state_version(value)
        now = self._clock()
        expires = None if self.ttl_seconds is None else now + self.ttl_seconds
        with self._lock:
            self._data[key] = (raw, expires, version)
            self._data.move_to_end(key)
            while len(self._data) > self.max_entries:
                self._data.popitem(last=False)

    def delete(self, key: str) -> None:
        """Remove ``key`` and its value (nothing happens when it is absent)."""
        with self._lock:
            self._data.pop(key, None)

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
