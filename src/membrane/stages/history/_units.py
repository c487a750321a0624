"""The pieces a history cut is made of: units told apart by digest, cut events, session gaps,
and :func:`reference_cut`, the slow and obvious replay the tracker (:mod:`._cut`) is held to."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from membrane.messages import message_key, message_role, message_time

__all__ = ["CutEvent", "reference_cut", "session_gap", "unit_key"]


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
