"""A digest of a message list's prefix: the proof that lets validation skip what it checked.

The digest reads each message's ``repr`` (for the plain dicts, lists, strings and numbers that
validation accepts, a faithful rendering of every key and value) joined by line breaks, so a
digest can be extended message by message and equals the digest of the same messages taken at
once. Two lists with the same digest hold the same messages; a list edited anywhere in the
prefix, or another conversation of the same length, gives another digest and is validated again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["PrefixDigest", "prefix_digest"]


def _hasher() -> Any:
    return hashlib.blake2b(digest_size=20)


def _feed(hasher: Any, messages: Sequence[object], start: int, stop: int) -> None:
    if start < stop:
        text = "\n".join(map(repr, messages[start:stop])) + "\n"
        hasher.update(text.encode("utf-8", "surrogatepass"))


@dataclass(frozen=True)
class PrefixDigest:
    """The digest of a list's first ``length`` messages, ready to be extended."""

    length: int
    _state: Any

    @property
    def value(self) -> bytes:
        return bytes(self._state.digest())

    def extended(self, messages: Sequence[object]) -> PrefixDigest:
        """The digest of ``messages`` (whose first ``length`` are the ones digested here)."""
        state = self._state.copy()
        _feed(state, messages, self.length, len(messages))
        return PrefixDigest(len(messages), state)


def prefix_digest(messages: Sequence[object], length: int) -> PrefixDigest:
    """The digest of ``messages[:length]``."""
    state = _hasher()
    _feed(state, messages, 0, length)
    return PrefixDigest(length, state)
