"""One compile's view of the state store, and the bounded caches a compiler keeps between calls.

A :class:`Session` is made per compile: :meth:`Session.load` reads the state store before any
stage runs, the stages read the loaded values and queue what must be written, and
:meth:`Session.save` writes it after the last stage. No stage touches the store itself.
"""

from __future__ import annotations

import asyncio
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from membrane.capabilities import get_token_scale
from membrane.errors import StoreUnavailable
from membrane.report import CompileReport
from membrane.state import InMemoryStateStore, StateStore, StateStoreWarning
from membrane.tokenizers import ScaleCalibration

__all__ = [
    "KeyedLocks",
    "LRUCache",
    "Session",
    "StoreNotes",
    "conversation_key",
    "load_calibration",
    "run_off_loop",
    "scale_key",
    "write_state",
]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
R = TypeVar("R")


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

    def __len__(self) -> int:
        return len(self._locks)


def scale_key(model_id: str | None) -> str:
    return f"membrane:scale:{(model_id or '').lower()}"


def conversation_key(conversation: str) -> str:
    return f"membrane:conversation:{conversation}"


@dataclass
class StoreNotes:
    """What went wrong with the state store during one compile (it went on regardless).

    ``discarded`` names each value that was read but failed its checks (``"scale"``,
    ``"conversation"``); ``fallback`` is set once the store was unreachable and the compile
    used the store's in-process fallback instead.
    """

    discarded: list[str] = field(default_factory=list)
    fallback: bool = False

    def stamp(self, report: CompileReport) -> CompileReport:
        """``report`` with these notes in it (the same object when there is nothing to say)."""
        if not self.discarded and not self.fallback:
            return report
        return replace(
            report, state_discarded=tuple(self.discarded), state_store_fallback=self.fallback
        )


def _outage_fallback(store: StateStore) -> StateStore | None:
    """Where ``store`` wants compiles to keep state while it is down (None: raise instead)."""
    fallback = getattr(store, "outage_fallback", None)
    return fallback if isinstance(fallback, StateStore) else None


def read_state(
    store: StateStore,
    key: str,
    what: str,
    check: Callable[[object], str | None],
    notes: StoreNotes,
) -> dict[str, Any] | None:
    """The value under ``key`` if it passes ``check``; a bad one is discarded with a warning.

    ``check`` returns None for a good value and the reason otherwise. When the store is down
    and offers an in-process fallback, the fallback is read and ``notes.fallback`` set;
    without one, :class:`~membrane.errors.StoreUnavailable` propagates.
    """
    fallback = _outage_fallback(store)
    try:
        if notes.fallback and fallback is not None:
            value: object = fallback.get(key)
        else:
            value = store.get(key)
    except StoreUnavailable:
        if fallback is None:
            raise
        notes.fallback = True
        return read_state(fallback, key, what, check, notes)
    except (ValueError, TypeError, RecursionError) as exc:
        problem: str | None = f"it cannot be decoded ({type(exc).__name__})"
    else:
        problem = None if value is None else check(value)
    if problem is None:
        return value  # type: ignore[return-value]
    _discard(notes, what, key, problem)
    return None


def _discard(notes: StoreNotes, what: str, key: str, reason: str) -> None:
    notes.discarded.append(what)
    warnings.warn(
        f"discarded the {what} state stored under {key!r}: {reason}; "
        "this compile rebuilt it from its inputs",
        StateStoreWarning,
        stacklevel=4,
    )


def _nonnegative_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**53


def check_conversation_state(value: object) -> str | None:
    """Why ``value`` is not a conversation's state (``share``, ``events``, ``room``), or None.

    Its ``tracker`` (the saved history tracker) is checked where it is read, when a worker
    restores it (``stages.history._snapshot``).
    """
    if not isinstance(value, dict):
        return f"expected a JSON object, got {type(value).__name__}"
    if "tracker" in value and not isinstance(value["tracker"], dict):
        return "tracker must be a JSON object"
    for name in ("format", "share", "events", "room"):
        if name in value and not _nonnegative_int(value[name]):
            return f"{name} must be a non-negative int, got {str(value[name])[:40]}"
    if value and "room" not in value and "format" not in value:  # a value before formats
        return "room is missing"
    return None


def _check_calibration(value: object) -> str | None:
    try:
        ScaleCalibration.from_dict(value)
    except ValueError as exc:
        return str(exc)
    return None


@dataclass
class Session:
    """What one compile read from the store, and what it will write back.

    The conversation's state is read once, the first time a stage asks for it (most turns of
    a short conversation never do, and a remote store's round trip is the costly part). A
    value that fails its checks is treated as absent. While the store is down (and offers a
    fallback) reads and writes go to the fallback only, so nothing computed during an outage
    overwrites what the store holds when it comes back.
    """

    store: StateStore
    conversation: str
    notes: StoreNotes = field(default_factory=StoreNotes)
    _state: dict[str, Any] | None = None
    _writes: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    @property
    def conversation_state(self) -> dict[str, Any]:
        if self._state is None:
            key = conversation_key(self.conversation)
            stored = read_state(
                self.store, key, "conversation", check_conversation_state, self.notes
            )
            self._state = stored or {}
        return self._state

    def reject_conversation_state(self, reason: str) -> dict[str, Any]:
        """Discard the conversation's stored state (a stage found it impossible); returns {}."""
        _discard(self.notes, "conversation", conversation_key(self.conversation), reason)
        self._state = {}
        return self._state

    def write_conversation_state(self, value: dict[str, Any]) -> None:
        self._writes.append((conversation_key(self.conversation), value))

    def queue_write(self, key: str, value: dict[str, Any]) -> None:
        """Queue a write of another key of this conversation (written by :meth:`save`)."""
        self._writes.append((key, value))

    def save(self) -> int:
        """Write what the stages queued, in order (to the fallback only, during an outage).

        Returns how many writes that was.
        """
        writes = len(self._writes)
        for key, value in self._writes:
            write_state(self.store, key, value, self.notes)
        self._writes.clear()
        return writes


def write_state(store: StateStore, key: str, value: dict[str, Any], notes: StoreNotes) -> None:
    """Put ``value`` under ``key``; once this compile has seen the store down, the fallback only.

    So a value computed from in-process state never reaches the store, even when the store
    answers again before the compile ends. Without a fallback, StoreUnavailable propagates.
    """
    fallback = _outage_fallback(store)
    if notes.fallback and fallback is not None:
        fallback.put(key, value)
        return
    try:
        store.put(key, value)
    except StoreUnavailable:
        if fallback is None:
            raise
        notes.fallback = True
        fallback.put(key, value)


def load_calibration(
    store: StateStore, model_id: str | None, notes: StoreNotes | None = None
) -> ScaleCalibration:
    """The model's calibration from the store, or its capability-map seed.

    A stored value that fails its checks (a scale outside [0.5, 3.0] included) is discarded
    with a :class:`~membrane.state.StateStoreWarning` and the seed used instead.
    """
    notes = notes if notes is not None else StoreNotes()
    stored = read_state(store, scale_key(model_id), "scale", _check_calibration, notes)
    if stored is not None:
        return ScaleCalibration.from_dict(stored)
    return ScaleCalibration(scale=get_token_scale(model_id) if model_id else 1.0)


async def run_off_loop(store: StateStore, call: Callable[[], R]) -> R:
    """``call()``, a compile that reads and writes ``store``, without blocking the event loop.

    With the in-process store there is no I/O to wait for, so ``call`` runs right here. Any
    other store (Redis, a caller's own) may wait on the network for up to its deadline, so
    ``call`` runs in a worker thread (:func:`asyncio.to_thread`) and the loop keeps serving
    other tasks meanwhile.
    """
    if type(store) is InMemoryStateStore:
        return call()
    return await asyncio.to_thread(call)
