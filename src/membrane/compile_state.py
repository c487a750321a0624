"""One compile's view of the state store, and what a compiler keeps of the store between calls.

A :class:`StateView` is made per compile: the first stage that needs the conversation's state
reads it (one store read), the stages queue the fields they change, and :meth:`StateView.save`
writes the merged value after the last stage (one store write, and only when something
changed). No stage touches the store itself. A :class:`StateScope` is what a compiler keeps
between compiles: its key namespace and the model scales it read recently.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from membrane import capabilities as capability_map
from membrane.caches import LRUCache
from membrane.errors import StoreUnavailable
from membrane.report import CompileReport, StoreReport
from membrane.state import InMemoryStateStore, StateStore, StateStoreWarning
from membrane.state.conversation import CONVERSATION_FIELDS, check_conversation_state
from membrane.state.keys import check_namespace, conversation_key, scale_key
from membrane.state.protocol import STATE_FORMAT_VERSION, VERSION_FIELD
from membrane.tokenizers import ScaleCalibration

__all__ = [
    "SCALE_CACHE_SECONDS",
    "StateScope",
    "StateView",
    "StoreNotes",
    "load_calibration",
    "write_state",
]

#: How long a compiler reuses a model's scale read from a store other than the in-process one
#: before reading it again (an observation made by another worker reaches it within this time).
SCALE_CACHE_SECONDS = 30.0
_SCALE_CACHE_MODELS = 64
# The fields of a conversation's state the window reads on every turn, and how many
# conversations' of them a compiler remembers (a few hundred bytes each; see window_fields).
_WINDOW_FIELDS = ("share", "events", "room")
_REMEMBERED_WINDOWS = 4096


@dataclass
class StoreNotes:
    """What went wrong with the state store during one compile (it went on regardless).

    ``discarded`` names each value that was read but failed its checks (``"scale"``,
    ``"conversation"``); ``fallback`` is set once the compile used the store's in-process
    fallback. ``fallback_nodes`` are the nodes that failed (``store.node_of(key)``; a store
    without it is one node): the compile keeps their keys in the fallback from then on, so it
    waits for a failing node once at most, and other nodes' keys in the store.
    """

    discarded: list[str] = field(default_factory=list)
    fallback: bool = False
    fallback_nodes: set[str] = field(default_factory=set)

    def stamp(self, report: CompileReport) -> CompileReport:
        """``report`` with these notes in it (the same object when there is nothing to say)."""
        if not self.discarded and not self.fallback:
            return report
        return replace(report, store=StoreReport(tuple(self.discarded), self.fallback))


def _node_of(store: StateStore, key: str) -> str:
    """The part of ``store`` that serves ``key`` ("" for a store that is all one)."""
    node_of = getattr(store, "node_of", None)
    return str(node_of(key)) if callable(node_of) else ""


def _outage_fallback(store: StateStore) -> StateStore | None:
    """Where ``store`` wants compiles to keep state while it is down (None: raise instead)."""
    fallback = getattr(store, "outage_fallback", None)
    # A None check first: a protocol isinstance walks the protocol's members on every call.
    return fallback if fallback is not None and isinstance(fallback, StateStore) else None


def read_state(
    store: StateStore,
    key: str,
    what: str,
    check: Callable[[object], str | None],
    notes: StoreNotes,
) -> dict[str, Any] | None:
    """The value under ``key`` if it passes ``check``; a bad one is discarded with a warning.

    ``check`` returns None for a good value and the reason otherwise. When the store cannot
    serve ``key`` and offers an in-process fallback, the fallback is read, ``notes.fallback``
    set and the key's node noted in ``notes.fallback_nodes``; without one,
    :class:`~membrane.errors.StoreUnavailable` propagates.
    """
    fallback = _outage_fallback(store)
    node = _node_of(store, key) if fallback is not None else ""
    try:
        if fallback is not None and node in notes.fallback_nodes:
            value: object = fallback.get(key)
        else:
            value = store.get(key)
    except StoreUnavailable:
        if fallback is None:
            raise
        notes.fallback = True
        notes.fallback_nodes.add(node)
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


def _check_calibration(value: object) -> str | None:
    try:
        ScaleCalibration.from_dict(value)
    except ValueError as exc:
        return str(exc)
    return None


@dataclass
class StateView:
    """What one compile read from the store, and what it will write back.

    The conversation's state is one value under one key. It is read at most once, the first
    time a stage asks for it (most turns of a short conversation never do, and a remote
    store's round trip is the costly part); a value that fails its checks, or whose format
    version is not this Membrane's (another deploy wrote it), is treated as absent and flagged;
    the next write puts this version's value over it (after a rollback, a newer deploy's value
    would otherwise stay unreadable and unreplaced for good). Fields this version does not
    write are dropped as the value is read, and the value is written again without them even
    when no stage changed anything, so a field planted in the store is never carried along.
    Stages queue the fields they change; :meth:`save` writes the merged value once. Once the node
    serving the conversation's key failed a call (and the store offers a fallback) its reads
    and writes go to the fallback only, so nothing computed from the in-process copy overwrites
    what the store holds when it comes back. A failure on another node (the model's scale on
    another cluster node) leaves this key with the store.
    """

    store: StateStore
    conversation: str
    notes: StoreNotes = field(default_factory=StoreNotes)
    namespace: str | None = None
    #: The compiler's window fields of each conversation, with the mark of the stored text
    #: they were read from (see :attr:`window_fields`).
    windows: LRUCache[str, tuple[tuple[int, int], dict[str, Any]]] | None = None
    _state: dict[str, Any] | None = None
    _changes: dict[str, Any] = field(default_factory=dict)
    _unknown_fields: bool = False
    _dropped: bool = False

    @property
    def key(self) -> str:
        """The store key of this conversation's state."""
        return conversation_key(self.conversation, self.namespace)

    @property
    def conversation_state(self) -> dict[str, Any]:
        if self._state is None:
            stored = read_state(
                self.store, self.key, "conversation", check_conversation_state, self.notes
            )
            self._state = self._ours(stored)
        return self._state

    @property
    def window_fields(self) -> dict[str, Any]:
        """The state's ``share``, ``events`` and ``room``, and ``tracker`` (True) when one is
        saved: what the window reads on every turn (read them, never change them).

        From the in-process store they are remembered with a mark of the stored text (its
        length and hash), so a turn whose stored value has not changed decodes nothing.
        """
        if self._state is not None:
            return _window_fields_of(self._state)
        windows, mark = self.windows, self._stored_mark()
        if windows is not None and mark is not None:
            known = windows.get(self.key)
            if known is not None and known[0] == mark:
                return known[1]
        fields = _window_fields_of(self.conversation_state)
        clean = not self.notes.discarded and not self._unknown_fields
        if clean and mark is not None and mark == self._stored_mark():  # none written since
            self._remember(mark, fields)
        return fields

    def _stored_mark(self) -> tuple[int, int] | None:
        """The length and hash of the text stored under this view's key, when the store is the
        in-process one and holds a value (the hash of a str is computed once and kept)."""
        if self.windows is None or type(self.store) is not InMemoryStateStore:
            return None
        text = self.store.stored_text(self.key)
        return None if text is None else (len(text), hash(text))

    def _remember(self, mark: tuple[int, int], fields: dict[str, Any]) -> None:
        if self.windows is not None:
            self.windows.put(self.key, (mark, fields))

    def _ours(self, stored: dict[str, Any] | None) -> dict[str, Any]:
        """``stored`` with only this version's fields; {} for none or another version's value."""
        if stored is None:
            return {}
        version = stored[VERSION_FIELD]
        if version != STATE_FORMAT_VERSION:
            _discard(
                self.notes,
                "conversation",
                self.key,
                f"its format version {version} is not this Membrane's ({STATE_FORMAT_VERSION}); "
                "it is replaced on the next write",
            )
            return {}
        known = {k: v for k, v in stored.items() if k in CONVERSATION_FIELDS}
        self._unknown_fields = len(known) != len(stored)
        return known

    def reject_conversation_state(self, reason: str) -> dict[str, Any]:
        """Discard the conversation's stored state (a stage found it impossible); returns {}."""
        _discard(self.notes, "conversation", self.key, reason)
        self._state = {}
        self._unknown_fields = False
        return self._state

    def write_conversation_state(self, fields: dict[str, Any]) -> None:
        """Queue ``fields`` of the conversation's state (merged into it by :meth:`save`)."""
        self._changes.update(fields)

    def drop_conversation_fields(self, names: tuple[str, ...]) -> None:
        """Remove ``names`` from the conversation's state (at once from what this compile
        reads, from the store by :meth:`save`): they were derived from text the caller changed.
        """
        state = self.conversation_state
        if any(name in state for name in names):
            self._state = {k: v for k, v in state.items() if k not in names}
            self._dropped = True

    def save(self) -> int:
        """Write the conversation's state once, if the stages changed it (to the fallback only,
        during an outage). Returns how many writes that was (0 or 1).
        """
        if not self._changes and not self._unknown_fields and not self._dropped:
            return 0
        before = self.conversation_state
        value = {**before, **self._changes, VERSION_FIELD: STATE_FORMAT_VERSION}
        self._changes = {}
        if value == before and not (self._unknown_fields or self._dropped):
            return 0
        self._unknown_fields = self._dropped = False
        write_state(self.store, self.key, value, self.notes)
        self._state = value
        mark = self._stored_mark()
        if mark is not None and not self.notes.fallback:
            self._remember(mark, _window_fields_of(value))  # the next turn decodes nothing
        return 1


def _window_fields_of(state: dict[str, Any]) -> dict[str, Any]:
    fields = {name: state[name] for name in _WINDOW_FIELDS if name in state}
    if "tracker" in state:
        fields["tracker"] = True
    return fields


def write_state(store: StateStore, key: str, value: dict[str, Any], notes: StoreNotes) -> None:
    """Put ``value`` under ``key``; once this compile found the node serving ``key`` failing, in
    the fallback only.

    So a value computed from the key's in-process copy never reaches the store, even when the
    store answers again before the compile ends. Without a fallback, StoreUnavailable
    propagates.
    """
    fallback = _outage_fallback(store)
    node = _node_of(store, key) if fallback is not None else ""
    if fallback is not None and node in notes.fallback_nodes:
        fallback.put(key, value)
        return
    try:
        store.put(key, value)
    except StoreUnavailable:
        if fallback is None:
            raise
        notes.fallback = True
        notes.fallback_nodes.add(node)
        fallback.put(key, value)


def load_calibration(
    store: StateStore,
    model_id: str | None,
    notes: StoreNotes | None = None,
    namespace: str | None = None,
) -> ScaleCalibration:
    """The model's calibration from the store, or its capability-map seed.

    A stored value that fails its checks (a scale outside [0.5, 3.0] included) is discarded
    with a :class:`~membrane.state.StateStoreWarning` and the seed used instead.
    """
    notes = notes if notes is not None else StoreNotes()
    key = scale_key(model_id, namespace)
    stored = read_state(store, key, "scale", _check_calibration, notes)
    if stored is not None:
        return ScaleCalibration.from_dict(stored)
    return ScaleCalibration(scale=capability_map.get_token_scale(model_id) if model_id else 1.0)


class StateScope:
    """A compiler's place in its state store: the key namespace and the recent model scales.

    ``namespace`` (a tenant, say) goes into every key, so two namespaces' conversation ids
    never meet. A model's scale read from a store other than the in-process one is reused for
    ``scale_seconds`` (:data:`SCALE_CACHE_SECONDS`) before the store is asked again, so most
    compiles make no scale read; :meth:`observe` updates the cached value at once. The
    in-process store (and any subclass of it) is read every time: the read costs no round
    trip, and compilers sharing one see each other's observations at once.
    """

    def __init__(
        self,
        namespace: str | None = None,
        *,
        scale_seconds: float = SCALE_CACHE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.namespace = check_namespace(namespace)
        self._windows: LRUCache[str, tuple[tuple[int, int], dict[str, Any]]] = LRUCache(
            _REMEMBERED_WINDOWS
        )
        self._seconds = scale_seconds
        self._clock = clock
        self._scales: LRUCache[str, tuple[StateStore, ScaleCalibration, float]] = LRUCache(
            _SCALE_CACHE_MODELS
        )

    def view(self, store: StateStore, conversation: str, notes: StoreNotes) -> StateView:
        """A compile's view of ``conversation``'s state in ``store``."""
        return StateView(store, conversation, notes, self.namespace, self._windows)

    def calibration(
        self, store: StateStore, model_id: str | None, notes: StoreNotes | None = None
    ) -> ScaleCalibration:
        """The model's calibration: from this scope's cache while fresh, else from ``store``."""
        if isinstance(store, InMemoryStateStore):
            return load_calibration(store, model_id, notes, self.namespace)
        cached = self._scales.get(scale_key(model_id))
        if cached is not None and cached[0] is store and self._clock() < cached[2]:
            return cached[1]
        notes = notes if notes is not None else StoreNotes()
        calibration = load_calibration(store, model_id, notes, self.namespace)
        if not notes.fallback:  # an outage's stand-in is not worth keeping
            self._remember(store, model_id, calibration)
        return calibration

    def observe(
        self, store: StateStore, model_id: str | None, counted: int, actual: int
    ) -> ScaleCalibration:
        """Fold one billed prompt into the model's stored calibration; returns the new one.

        The stored value is read afresh (another worker may have observed since), updated and
        written back, and kept in the cache.
        """
        notes, key = StoreNotes(), scale_key(model_id, self.namespace)
        calibration = load_calibration(store, model_id, notes, self.namespace)
        calibration = calibration.observe(counted, actual)
        write_state(store, key, calibration.to_dict(), notes)
        self._remember(store, model_id, calibration)
        return calibration

    def _remember(
        self, store: StateStore, model_id: str | None, calibration: ScaleCalibration
    ) -> None:
        expires = self._clock() + self._seconds
        self._scales.put(scale_key(model_id), (store, calibration, expires))
