"""Validate a conversation's history, skipping only a prefix that is proved unchanged.

A compile validates every message it is given. What a conversation's last compile validated
is remembered as a :class:`CheckedPrefix`; the next compile skips those messages only on
proof that they are the same:

- a **digest** of the prefix's bytes: the messages are pickled (a serialisation that round
  trips, so equal bytes mean equal messages, types included: ``{"x": 1}`` is not ``"{'x':
  1}"``) in chunks of ``_CHUNK`` and hashed with SHA-256 (twice the speed of BLAKE2b on CPUs
  with SHA instructions; hashing, not pickling, is most of the cost). Messages that cannot be
  pickled give no proof and are validated in full every time. A proof keeps the hash state of
  the whole chunks and, when small, the pickled bytes of the last partial chunk, so the next
  turn compares those bytes instead of hashing them twice (once to prove, once to extend).
  It also keeps each whole chunk's *mark*, Python's keyed hash of its bytes (SipHash under
  this process's random key, twice the speed of SHA-256): a later turn proves the whole
  chunks by their marks and takes the SHA-256 state on from the proof. Without hash
  randomization (``PYTHONHASHSEED`` set) the key is known, and every turn hashes with SHA-256;
- or the caller's **history version** (``history_version=``, a counter or etag the caller owns):
  the same version, or a larger int counter, vouches that the list only grew since it was
  validated. The digest is then not computed. A wrong version is the caller's bug: the prefix
  it vouches for is sent as given.
"""

from __future__ import annotations

import hashlib
import itertools
import pickle
import sys
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from membrane.errors import InvalidInputError
from membrane.messages._history import HistoryRead, read_history
from membrane.messages._pairing import tool_call_ids, validate_messages

__all__ = ["CheckedPrefix", "HistoryVersion", "check_history", "prefix_digest"]

HistoryVersion = int | str
_CHUNK = 128
# The largest pickled partial chunk a proof keeps to compare bytes with (see _Content).
_KEEP_TAIL = 64 << 10
# What a proof holds besides its tail (see CheckedPrefix.held_bytes): the proof and its set,
# a call id (a short string and its slot), the content's objects with a SHA-256 state.
_PREFIX_BYTES = 400
_CALL_ID_BYTES = 140
_CONTENT_BYTES = 600
# Numbers each validation, so a consumer can tell which one it last read (see ``proves``).
_SERIALS = itertools.count(1)
# Whole chunks are proved by their marks (see the module) only when str and bytes hashes are
# keyed with a random secret; what a mark holds (an int and its slot in a tuple).
_MARKS = bool(sys.flags.hash_randomization)
_MARK_BYTES = 40
# pickle's FRAME opcode (protocol 4 and later), followed by the frame's length in 8 bytes.
_FRAME = 0x95


@dataclass(frozen=True, slots=True)
class _Content:
    """The proof of a prefix's content, kept so the next turn hashes each byte at most once.

    ``head`` is the SHA-256 state after the whole chunks ``[0:base]`` (never updated: only
    copied and read). ``tail`` is the pickle of the partial chunk ``[base:length]`` (``b""``
    when there is none), kept while it is at most ``_KEEP_TAIL`` bytes: the next turn compares
    the partial chunk's bytes instead of hashing them. A longer tail is dropped and ``whole``
    holds the digest of the prefix instead.
    """

    head: Any
    base: int
    tail: bytes
    whole: bytes | None
    #: The mark of each whole chunk (None: they are proved by SHA-256 alone).
    marks: tuple[int, ...] | None = None
    #: The length of the partial chunk's pickle, kept or not.
    tail_len: int = 0

    def digest(self) -> bytes:
        """The digest of the prefix, as :func:`prefix_digest` gives it."""
        if self.whole is not None:
            return self.whole
        hasher = self.head.copy()
        if self.tail:
            _update(hasher, self.tail)
        return bytes(hasher.digest())


@dataclass(frozen=True, slots=True)
class CheckedPrefix:
    """A validated history: its length, the proof of its content, the tool-call ids it made.

    ``serial`` names this validation (unique in the process). ``proves`` is the serial of the
    previous validation when every message it covered was proved unchanged (by digest or
    version), else None: a consumer that read exactly that validation's messages (the history
    tracker) may then skip comparing them.
    """

    length: int
    version: HistoryVersion | None
    call_ids: frozenset[str]
    #: The history was plain chat, read as given: no Responses item, no compaction boundary
    #: (only then is a prefix skipped, and its scan for those with it).
    plain: bool = True
    serial: int = 0
    proves: int | None = None
    #: The proof of the content (None: not computed, or the messages cannot be pickled).
    content: _Content | None = None

    @property
    def digest(self) -> bytes | None:
        """The digest of the validated messages (:func:`prefix_digest`), or None."""
        return None if self.content is None else self.content.digest()

    def held_bytes(self) -> int:
        """The bytes this proof holds, counted generously: itself, each tool-call id (its
        string and its slot in the set), the hash state and the kept pickled tail."""
        content = self.content
        kept = 0
        if content is not None:
            kept = _CONTENT_BYTES + len(content.tail) + len(content.whole or b"")
            kept += _MARK_BYTES * len(content.marks or ())
        return _PREFIX_BYTES + _CALL_ID_BYTES * len(self.call_ids) + kept


def _pickled(messages: Sequence[object], start: int, stop: int) -> bytes:
    # As a list: a tuple of the same messages must digest the same.
    return pickle.dumps(list(messages[start:stop]), protocol=5)


def _update(hasher: Any, *parts: bytes | memoryview) -> None:
    """Hash the bytes of ``parts`` joined, after their length."""
    hasher.update(sum(map(len, parts)).to_bytes(8, "little"))
    for part in parts:
        hasher.update(part)


def _feed(
    hasher: Any, messages: Sequence[object], start: int, stop: int, marks: list[int] | None = None
) -> bool:
    """Hash ``messages[start:stop]`` a chunk at a time (``start`` on a chunk boundary), adding
    each chunk's mark to ``marks`` when given."""
    for at in range(start, stop, _CHUNK):
        try:
            data = _pickled(messages, at, min(at + _CHUNK, stop))
        except Exception:
            return False
        _update(hasher, data)
        if marks is not None:
            marks.append(hash(data))
    return True


def _same_marks(messages: Sequence[object], marks: tuple[int, ...]) -> bool:
    """Whether the whole chunks of ``messages`` that ``marks`` cover still have those marks."""
    try:
        return all(
            hash(_pickled(messages, i * _CHUNK, (i + 1) * _CHUNK)) == mark
            for i, mark in enumerate(marks)
        )
    except Exception:
        return False


def prefix_digest(messages: Sequence[object], length: int) -> bytes | None:
    """The digest of ``messages[:length]``, or None when they cannot be serialised."""
    content = _content(messages, hashlib.sha256(), 0, length)
    return None if content is None else content.digest()


def _content(
    messages: Sequence[object],
    hasher: Any,
    at: int,
    length: int,
    marks: tuple[int, ...] | None = None,
    tail: bytes | None = None,
) -> _Content | None:
    """The proof of ``messages[:length]``, ``hasher`` holding the whole chunks ``[0:at]`` and
    ``marks`` their marks (None: the proof keeps none); ``tail``: the pickle of the partial
    chunk ``[at:length]`` when the caller made it."""
    base = length - length % _CHUNK
    new_marks = list(marks) if marks is not None else None
    if not _feed(hasher, messages, at, base, new_marks):
        return None
    kept_marks = tuple(new_marks) if new_marks is not None else None
    if tail is None or base != at:
        try:
            tail = _pickled(messages, base, length) if base < length else b""
        except Exception:
            return None
    if len(tail) <= _KEEP_TAIL:
        return _Content(hasher, base, tail, None, kept_marks, len(tail))
    whole = hasher.copy()
    _update(whole, tail)
    return _Content(hasher, base, b"", bytes(whole.digest()), kept_marks, len(tail))


def _opening(grown: bytes, length: int) -> list[bytes | memoryview]:
    """The ``length``-byte pickle of a list whose items open the list ``grown`` pickles, in
    parts read from ``grown`` (not copied); other bytes when ``length`` does not end an item.

    A pickled list (protocol 5) is its frames, each a FRAME opcode with its length, holding
    the list's items in turn and then APPENDS and STOP (``e.``). The pickle of the first
    items is the same bytes up to their end, bar the length of its last frame.
    """
    start, end = 2, length - 2
    while start + 9 < len(grown) and grown[start] == _FRAME:
        step = 9 + int.from_bytes(grown[start + 1 : start + 9], "little")
        if start + step >= end:
            break
        start += step
    size = length - start - 9
    if size < 0:  # no frame can end there: not a pickle of the first items
        return []
    view = memoryview(grown)
    header = bytes([_FRAME]) + size.to_bytes(8, "little")
    return [view[:start], header, view[start + 9 : end], b"e."]


def _same_tail(proof: _Content, hasher: Any, parts: list[bytes | memoryview]) -> bool:
    """Whether ``parts``, joined, are the partial chunk's pickle ``proof`` was made from."""
    length = sum(map(len, parts))
    if length != proof.tail_len:
        return False
    if proof.whole is None:
        at, tail = 0, proof.tail
        for part in parts:
            if not tail.startswith(part, at):
                return False
            at += len(part)
        return True
    whole = hasher.copy()
    _update(whole, *parts)
    return bool(whole.digest() == proof.whole)


def _fresh_proof(messages: Sequence[object]) -> _Content | None:
    """The proof of all ``messages``, made from nothing (with marks when they can be kept)."""
    return _content(messages, hashlib.sha256(), 0, len(messages), () if _MARKS else None)


def _prove(
    messages: Sequence[object], proof: _Content | None, proved: int
) -> tuple[bool, _Content | None]:
    """Whether ``messages[:proved]`` is what ``proof`` was made from, and the proof of all
    ``messages``; every message is pickled and hashed at most once, bar a dropped tail."""
    if proof is None:
        return False, _fresh_proof(messages)
    if proof.marks is not None:
        if not _same_marks(messages, proof.marks):
            return False, _fresh_proof(messages)
        hasher, same = proof.head.copy(), True  # the chunks hashed into it are unchanged
    else:
        hasher = hashlib.sha256()
        if not _feed(hasher, messages, 0, proof.base):
            return False, None
        same = hasher.digest() == proof.head.digest()
    grown = None
    if same and proof.base < proved:
        try:
            if len(messages) - proof.base < _CHUNK:  # one pickle proves and extends the tail
                grown = _pickled(messages, proof.base, len(messages))
                same = _same_tail(proof, hasher, _opening(grown, proof.tail_len))
            if grown is None or not same:  # or its frames fell otherwise: pickled apart
                same = _same_tail(proof, hasher, [_pickled(messages, proof.base, proved)])
        except Exception:
            return False, None
    return same, _content(messages, hasher, proof.base, len(messages), proof.marks, grown)


def _check_version(version: object) -> None:
    ok = isinstance(version, str) or (
        isinstance(version, int) and not isinstance(version, bool) and version >= 0
    )
    if not ok:
        raise InvalidInputError(
            "history_version must be a non-negative int (an append-only counter) or a str "
            f"(an etag), got {version!r}",
            field="history_version",
        )


def _vouched(previous: CheckedPrefix, version: HistoryVersion | None) -> bool:
    """True when ``version`` vouches that the history only grew since ``previous``."""
    known = previous.version
    if version is None or known is None or type(version) is not type(known):
        return False
    return version == known or (isinstance(version, int) and version > known)  # type: ignore[operator]


def check_history(
    messages: object,
    previous: CheckedPrefix | None,
    version: HistoryVersion | None = None,
    *,
    field: str = "conversation_messages",
) -> tuple[list[dict[str, Any]], CheckedPrefix | None, HistoryRead]:
    """Validate ``messages``; returns them as the stages read them, what this validation
    proved, and how they were read (:func:`~membrane.messages.read_history`).

    ``previous`` is what the conversation's last validation proved; the messages it covers
    are skipped only when the digest or ``version`` proves them unchanged (see the module). A
    history holding Responses items or a compaction boundary is read into chat form and
    validated whole every time.
    """
    if version is not None:
        _check_version(version)
    start, earlier, content, digested = 0, frozenset[str](), None, False
    if (
        previous is not None
        and previous.plain
        and isinstance(messages, Sequence)
        and not isinstance(messages, (str, bytes))
        and 0 < previous.length <= len(messages)
    ):
        if _vouched(previous, version):
            start = previous.length
        else:
            same, content = _prove(messages, previous.content, previous.length)
            digested = True
            start = previous.length if same else 0
        earlier = previous.call_ids if start else earlier
    read = read_history(messages, start)
    if read.spans is not None:
        converted = validate_messages(read.messages, field=field)
        made = frozenset(tool_call_ids(converted))
        checked = CheckedPrefix(len(converted), None, made, plain=False, serial=next(_SERIALS))
        return converted, checked, read
    history = validate_messages(messages, field=field, start=start, earlier_call_ids=earlier)
    if not history:
        return history, None, read
    if not digested and version is None:  # a caller with versions never needs the digest
        content = _fresh_proof(history)
    new_ids = tool_call_ids(history, start)
    ids: AbstractSet[str] = earlier | new_ids if new_ids else earlier
    proves = previous.serial if previous is not None and start else None
    checked = CheckedPrefix(
        len(history), version, frozenset(ids), serial=next(_SERIALS), proves=proves, content=content
    )
    return history, checked, read
