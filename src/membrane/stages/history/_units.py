"""The pieces a history cut is made of: units told apart by digest, cut events, session gaps,
and :func:`reference_cut`, the slow and obvious replay the tracker (:mod:`._cut`) is held to."""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, overload

from membrane.messages import message_key, message_role, message_time

__all__ = ["CutEvent", "UnitBounds", "reference_cut", "session_gap", "unit_key"]


@dataclass(frozen=True, slots=True)
class CutEvent:
    """The cut moved to unit ``cut`` when the history had ``seen`` units."""

    seen: int
    cut: int


def reference_cut(
    unit_tokens: Sequence[int], share: int, chunk: int, boundaries: AbstractSet[int] = frozenset()
) -> tuple[int, list[CutEvent]]:
    """The cut position (first kept unit) and its events, replayed from scratch.

    ``boundaries`` holds the session boundaries, each as the number of units before it.
    """
    cut, kept, session, events = 0, 0, 0, []
    for i in range(len(unit_tokens) + 1):
        room = min(session, chunk)
        if i in boundaries and i > 0:
            session = 0
            if kept + room > share and cut < i:
                while cut < i and kept + room > share:
                    kept -= unit_tokens[cut]
                    cut += 1
                events.append(CutEvent(seen=i, cut=cut))
        if i == len(unit_tokens):
            break
        kept += unit_tokens[i]
        session += unit_tokens[i]
        if kept > share:
            dropped = 0
            while cut <= i and (dropped < chunk or kept > share):
                kept -= unit_tokens[cut]
                dropped += unit_tokens[cut]
                cut += 1
            events.append(CutEvent(seen=i + 1, cut=cut))
    return cut, events


def session_gap(before: Mapping[str, Any], after: Mapping[str, Any], ttl: float) -> bool:
    """True when both messages are stamped and ``after`` came more than ``ttl`` seconds later."""
    then, now = message_time(before), message_time(after)
    return then is not None and now is not None and now - then > ttl


def unit_key(messages: Sequence[Mapping[str, Any]], texts: Sequence[str] | None = None) -> bytes:
    """A 16-byte digest of the messages' roles and texts (BLAKE2b, each field length-prefixed).

    A digest, not the texts: a tracker lives as long as its conversation, and keeping the
    texts would keep every message a caller ever passed (a server reads each turn's history
    afresh) alive with it. ``texts``: the messages' :func:`message_text`, when known.
    """
    if texts is None:
        keys = [message_key(message) for message in messages]
    else:
        keys = [(message_role(m), t) for m, t in zip(messages, texts, strict=True)]
    parts: list[bytes] = []
    for key in keys:
        for field_text in key:
            data = field_text.encode("utf-8", "surrogatepass")
            parts += (len(data).to_bytes(8, "little"), data)
    # One update with the joined parts: the digest of what one update per part would give.
    return hashlib.blake2b(b"".join(parts), digest_size=16).digest()


class UnitBounds:
    """Each unit's ``(start, stop)`` message positions, packed in two arrays of ints.

    A list of tuples costs about 120 bytes a unit; this costs 16. Reads as a sequence of
    pairs: ``bounds[i]``, ``bounds[-1][1]``, ``bounds[cut:]`` (a list), iteration, ``len``.
    """

    __slots__ = ("_starts", "_stops")

    def __init__(self, pairs: Iterable[tuple[int, int]] = ()) -> None:
        self._starts = array("q")
        self._stops = array("q")
        for pair in pairs:
            self.append(pair)

    def append(self, pair: tuple[int, int]) -> None:
        start, stop = pair
        self._starts.append(start)
        self._stops.append(stop)

    def __len__(self) -> int:
        return len(self._starts)

    @overload
    def __getitem__(self, at: int) -> tuple[int, int]: ...
    @overload
    def __getitem__(self, at: slice) -> list[tuple[int, int]]: ...
    def __getitem__(self, at: int | slice) -> tuple[int, int] | list[tuple[int, int]]:
        if isinstance(at, slice):
            return list(zip(self._starts[at], self._stops[at], strict=True))
        return self._starts[at], self._stops[at]

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return zip(self._starts, self._stops, strict=True)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, UnitBounds):
            return self._starts == other._starts and self._stops == other._stops
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"UnitBounds({list(self)!r})"
