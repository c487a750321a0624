"""When a message was written: the optional ``timestamp`` key the cut reads for sessions.

A caller may stamp history messages with ``"timestamp"``: seconds since the epoch (an int or
a float), a :class:`~datetime.datetime` or an ISO 8601 string (``"2026-12-01T10:51:23Z"``); a
time without a zone is read as UTC.
Membrane reads it only to find session boundaries (a gap longer than the provider's cache
lifetime, see :mod:`membrane.stages.history._cut`); it is never sent: the compiled messages
carry each stamped message without it (:func:`unstamped`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from membrane.errors import InvalidInputError

__all__ = ["TIMESTAMP_KEY", "message_time", "unstamped"]

TIMESTAMP_KEY = "timestamp"


def message_time(message: Mapping[str, Any], where: str = "message") -> float | None:
    """The message's ``timestamp`` in epoch seconds (None when it has none).

    Raises :class:`InvalidInputError` for a value that is not a finite number, a datetime or
    an ISO 8601 string.
    """
    value = message.get(TIMESTAMP_KEY)
    if value is None:
        return None
    field = f"{where}.{TIMESTAMP_KEY}"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(value):
            raise InvalidInputError(f"{field} must be a finite number of seconds", field=field)
        return float(value)
    import datetime as dt  # here, not at import: most histories carry no dated stamps

    if isinstance(value, str):
        try:
            # Python 3.10's fromisoformat does not take a trailing "Z".
            stamp = dt.datetime.fromisoformat(
                value[:-1] + "+00:00" if value[-1:] in "Zz" else value
            )
        except ValueError:
            raise InvalidInputError(
                f"{field} must be epoch seconds or an ISO 8601 string, got {value[:40]!r}",
                field=field,
            ) from None
    elif isinstance(value, dt.datetime):
        stamp = value
    else:
        raise InvalidInputError(
            f"{field} must be epoch seconds, a datetime or an ISO 8601 string, "
            f"got {type(value).__name__}",
            field=field,
        )
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=dt.timezone.utc)
    return stamp.timestamp()


def unstamped(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` as sent: a copy without its ``timestamp``, or itself when it has none."""
    if TIMESTAMP_KEY not in message:
        return message
    return {k: v for k, v in message.items() if k != TIMESTAMP_KEY}
