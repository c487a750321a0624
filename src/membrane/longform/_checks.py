"""Argument checks of :class:`~membrane.longform.store.LongformStore`, and the text read back.

A bad argument raises :class:`~membrane.errors.InvalidInputError` naming it before SQLite sees
it, so SQLite's own complaints (a NOT NULL constraint, an int over 64 bits, text that cannot be
encoded) never reach the caller as ``StoreUnavailable``, ``OverflowError`` or
``UnicodeEncodeError``.
"""

from __future__ import annotations

import math
import os
from typing import Final

from membrane.errors import InvalidInputError

__all__ = [
    "MAX_CHAPTER",
    "check_chapter",
    "check_chapter_or_zero",
    "check_finite",
    "check_limit",
    "check_path",
    "check_text",
    "stored_text",
]

#: Highest chapter number a store accepts (SQLite integers are 64-bit; the store uses 2**62 as
#: "no upper bound" in its queries).
MAX_CHAPTER: Final = 2**62 - 1


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_chapter(value: object, field: str) -> int:
    """A chapter number: an int in [1, MAX_CHAPTER]."""
    if not _is_int(value) or not 1 <= value <= MAX_CHAPTER:  # type: ignore[operator]
        raise InvalidInputError(
            f"{field} must be an int from 1 to 2**62 - 1, got {value!r}", field=field
        )
    return value  # type: ignore[return-value]


def check_chapter_or_zero(value: object, field: str) -> int:
    """A chapter number or 0 (unknown): an int in [0, MAX_CHAPTER]."""
    if not _is_int(value) or not 0 <= value <= MAX_CHAPTER:  # type: ignore[operator]
        raise InvalidInputError(
            f"{field} must be an int from 0 (unknown) to 2**62 - 1, got {value!r}", field=field
        )
    return value  # type: ignore[return-value]


def check_limit(value: object, field: str) -> int | None:
    """None (no limit) or a count in [0, MAX_CHAPTER]."""
    if value is None:
        return None
    if not _is_int(value) or not 0 <= value <= MAX_CHAPTER:  # type: ignore[operator]
        raise InvalidInputError(f"{field} must be None or an int >= 0, got {value!r}", field=field)
    return value  # type: ignore[return-value]


def check_finite(value: object, field: str) -> float:
    """A finite int or float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInputError(f"{field} must be a number, got {value!r}", field=field)
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise InvalidInputError(f"{field} must be a finite number, got {value!r}", field=field)
    return number


def check_text(value: object, field: str) -> str:
    """A string SQLite can store: UTF-8 encodable (no lone surrogates)."""
    if not isinstance(value, str):
        raise InvalidInputError(
            f"{field} must be a string, got {type(value).__name__}", field=field
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"{field} holds a lone surrogate at position {exc.start}; it cannot be stored as "
            "UTF-8 (decode the source with errors='replace', or drop the character)",
            field=field,
        ) from None
    return value


def check_path(value: object) -> str:
    """A database path: a string or os.PathLike (``":memory:"`` for a private database)."""
    if not isinstance(value, (str, os.PathLike)):
        raise InvalidInputError(
            f"path must be a string or os.PathLike, got {type(value).__name__}", field="path"
        )
    return os.fspath(value)


def stored_text(value: object) -> str:
    """A text column as read back: another program may have written a BLOB or a number there.

    Bytes are decoded as UTF-8 (invalid sequences become U+FFFD), so a summary never renders as
    ``b'...'``; None becomes ``""``; anything else its ``str``.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", errors="replace")
    return "" if value is None else str(value)
