"""The in-process state store (the default)."""

from __future__ import annotations

import threading
from typing import Any

from membrane.state.protocol import decode_state, encode_state

__all__ = ["InMemoryStateStore"]


class InMemoryStateStore:
    """A thread-safe dict of JSON strings.

    Values go through JSON on the way in and out, so what works here also works with a remote
    store, and callers can never mutate stored state by accident.
    """

    def __init__(self) -> None:
        self._data: dict[str, str] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            raw = self._data.get(key)
        return None if raw is None else decode_state(raw)

    def put(self, key: str, value: dict[str, Any]) -> None:
        raw = encode_state(value)
        with self._lock:
            self._data[key] = raw

    def __len__(self) -> int:
        return len(self._data)
