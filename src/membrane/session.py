"""One compile's view of the state store, and the bounded caches a compiler keeps between calls.

A :class:`Session` is made per compile: :meth:`Session.load` reads the state store before any
stage runs, the stages read the loaded values and queue what must be written, and
:meth:`Session.save` writes it after the last stage. No stage touches the store itself.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from membrane.capabilities import get_token_scale
from membrane.state import StateStore
from membrane.tokenizers import ScaleCalibration

__all__ = ["LRUCache", "Session", "conversation_key", "load_calibration", "scale_key"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LRUCache(Generic[K, V]):
    """A dict bounded to ``max_entries``; the least recently used entry leaves first."""

    def __init__(self, max_entries: int) -> None:
        self._max = max_entries
        self._data: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        while len(self._data) > self._max:
            self._data.popitem(last=False)

    def discard_where(self, predicate: Callable[[K], bool]) -> None:
        for key in [k for k in self._data if predicate(k)]:
            del self._data[key]

    def __len__(self) -> int:
        return len(self._data)


def scale_key(model_id: str | None) -> str:
    return f"membrane:scale:{(model_id or '').lower()}"


def conversation_key(conversation: str) -> str:
    return f"membrane:conversation:{conversation}"


@dataclass
class Session:
    """What one compile read from the store, and what it will write back.

    The conversation's state is read once, the first time a stage asks for it (most turns of
    a short conversation never do, and a remote store's round trip is the costly part).
    """

    store: StateStore
    conversation: str
    _state: dict[str, Any] | None = None
    _writes: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    @property
    def conversation_state(self) -> dict[str, Any]:
        if self._state is None:
            self._state = self.store.get(conversation_key(self.conversation)) or {}
        return self._state

    def write_conversation_state(self, value: dict[str, Any]) -> None:
        self._writes.append((conversation_key(self.conversation), value))

    def save(self) -> int:
        """Write what the stages queued, in order; return how many writes that was."""
        writes = len(self._writes)
        for key, value in self._writes:
            self.store.put(key, value)
        self._writes.clear()
        return writes


def load_calibration(store: StateStore, model_id: str | None) -> ScaleCalibration:
    """The model's calibration from the store, or its capability-map seed."""
    stored = store.get(scale_key(model_id))
    if stored is not None:
        return ScaleCalibration.from_dict(stored)
    return ScaleCalibration(scale=get_token_scale(model_id) if model_id else 1.0)
