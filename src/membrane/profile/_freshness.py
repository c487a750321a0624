"""Freshness decay: older episodic memories are offered later."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime, timedelta, timezone
from typing import TYPE_CHECKING, TypeVar

from membrane.errors import InvalidInputError
from membrane.records import memory_kind

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["freshness_weight", "memory_timestamp", "order_by_freshness"]

M = TypeVar("M")

_TIMESTAMP_KEYS = ("timestamp", "occurred_at")


def _as_utc(value: object) -> datetime | None:
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, date):
        moment = datetime(value.year, value.month, value.day)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(value, tz=timezone.utc)
        except (OverflowError, OSError, ValueError):
            return None
    elif isinstance(value, str):
        text = value.strip()
        # Python 3.10's fromisoformat does not take a trailing "Z".
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            return None
    else:
        return None
    return _to_utc(moment)


def _to_utc(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        return moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)


def memory_timestamp(memory: object) -> datetime | None:
    """When a memory happened, as an aware UTC datetime, or None.

    Looks at an ``occurred_at`` attribute, then ``timestamp`` / ``occurred_at`` in a
    ``metadata`` or ``attributes`` mapping. Accepts datetimes, dates, epoch seconds and
    ISO-8601 strings; naive values are read as UTC. Text that is not a date (``"yesterday"``)
    counts as no timestamp rather than an error: it may be meant for display only.
    """
    candidates: list[object] = [getattr(memory, "occurred_at", None)]
    for holder in ("metadata", "attributes"):
        extra = getattr(memory, holder, None)
        if isinstance(extra, Mapping):
            candidates.extend(extra.get(key) for key in _TIMESTAMP_KEYS)
    for value in candidates:
        if value is not None:
            moment = _as_utc(value)
            if moment is not None:
                return moment
    return None


def freshness_weight(age: timedelta, half_life: timedelta) -> float:
    """``0.5 ** (age / half_life)``: 1.0 when new, 0.5 after one half-life; future ages count as 0.

    >>> freshness_weight(timedelta(days=14), timedelta(days=7))
    0.25
    """
    if half_life <= timedelta(0):
        raise InvalidInputError(
            f"half_life must be a positive timedelta, got {half_life!r}", field="half_life"
        )
    ratio = max(age, timedelta(0)) / half_life
    return float(0.5**ratio)


def order_by_freshness(memories: Sequence[M], *, now: datetime, half_life: timedelta) -> list[M]:
    """Reorder so each dated episodic memory moves back as it ages.

    A memory at position ``p`` (counting from 1) is offered as if it stood at ``p / weight``,
    where ``weight`` is :func:`freshness_weight` of its age: one half-life old, it competes as if
    it ranked twice as far down. Memories of other kinds, and episodes without a readable
    timestamp, keep weight 1. Ties keep the input order. ``now`` is passed in, not read from a
    clock, so the result depends only on the arguments.
    """
    if not isinstance(now, datetime):
        raise TypeError(f"now must be a datetime, got {type(now).__name__}")
    current = _to_utc(now)
    keyed = []
    for index, memory in enumerate(memories):
        weight = 1.0
        if memory_kind(memory) == "episodic":
            moment = memory_timestamp(memory)
            if moment is not None:
                weight = freshness_weight(current - moment, half_life)
        # A weight can underflow to 0.0 for very old memories; they simply go last.
        position = (index + 1) / weight if weight > 0.0 else float("inf")
        keyed.append((position, index, memory))
    keyed.sort(key=lambda item: (item[0], item[1]))
    return [memory for _, _, memory in keyed]
