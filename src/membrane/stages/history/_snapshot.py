"""What a tracker needs to continue a conversation exactly, as a small JSON value and back.

A worker that has never seen a conversation restores its :class:`HistoryTracker` from this
snapshot, saved in the conversation's state value, and replays only the messages after it.
Nothing in it grows with the number of messages:

- the cut: where it is, the bounds and token counts of the kept units, the kept and total
  tokens, how many cut events there were and the last ones (those made on reaching the same
  message, which a session boundary there reclassifies);
- the session state: the last boundary, the tokens since, the moves on and between boundaries;
- the index lines some room could still show (:meth:`HistoryTracker.forget_lines`), each as
  its unit, its message and the sentences it shows, never as text;
- the rarity statistics, a fixed-size sketch (:class:`membrane.text.sketch.TermSketch`);
- the proof of what it describes: the digest of the messages it has seen
  (:func:`membrane.messages.prefix_digest`) and the caller's ``history_version``, if any.

Recall's passages are not in it: they are cut again from the caller's messages, which
arrive with every call. A snapshot that fails its checks raises ``ValueError`` (the caller
discards it, as any bad store value). The store is not trusted with counts or text: a
restored tracker counts its kept units again and makes its index lines again from the
caller's messages (:mod:`._rederive`), and a snapshot they disagree with is discarded too.
The state value's format ``version`` (:data:`membrane.state.STATE_FORMAT_VERSION`) covers
the snapshot too.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from membrane.errors import InvalidInputError
from membrane.messages import HistoryVersion, group_units, prefix_digest
from membrane.stages.history._cut import HistoryTracker
from membrane.stages.history._index import IndexLine
from membrane.stages.history._postings import LazyPostings
from membrane.stages.history._rederive import (
    ImageTokens,
    LineRecipe,
    UnitCost,
    derive_lines,
    session_tokens,
    unit_cost,
)
from membrane.stages.history._shared import Count
from membrane.stages.history._units import CutEvent, UnitBounds, unit_key
from membrane.text.sketch import TermSketch

__all__ = [
    "TrackerSnapshot",
    "read_snapshot",
    "restore_tracker",
    "snapshot_tracker",
]

_SETTINGS = ("share", "chunk", "overhead", "keyframe_tokens", "line_room")
_COUNTS = ("seen", "units", "cut", "kept_tokens", "total_tokens", "events", "documents")
_SESSION = ("session_tokens", "session_moves", "mid_session_moves")


@dataclass(frozen=True, slots=True)
class TrackerSnapshot:
    """A decoded snapshot (see the module); ``kept`` holds ``(start, stop, tokens)``."""

    settings: tuple[int, ...]
    counter: str
    seen: int
    units: int
    cut: int
    kept_tokens: int
    total_tokens: int
    events: int
    last_events: tuple[CutEvent, ...]
    boundary: int
    session: tuple[int, int, int]
    kept: tuple[tuple[int, int, int], ...]
    lines: tuple[LineRecipe, ...]
    stats: TermSketch
    digest: str | None
    version: HistoryVersion | None


def snapshot_tracker(
    tracker: HistoryTracker,
    *,
    counter: str,
    line_room: int,
    messages: Sequence[Mapping[str, Any]],
    digest: bytes | None,
    version: HistoryVersion | None,
) -> dict[str, Any]:
    """The JSON value of ``tracker``, which has seen all of ``messages``.

    ``digest`` is the digest of ``messages`` when the compile has it already; without it
    (a caller passing ``history_version=``) it is computed here.
    """
    if digest is None:
        digest = prefix_digest(messages, len(messages))
    cut = tracker.cut
    stats = tracker.stats
    if not isinstance(stats, TermSketch):
        raise TypeError("only a tracker with a TermSketch can be saved")
    return {
        "share": tracker.share,
        "chunk": tracker.chunk,
        "overhead": tracker.overhead,
        "keyframe_tokens": tracker.keyframe_tokens,
        "line_room": line_room,
        "counter": counter,
        "seen": tracker.seen_messages,
        "units": len(tracker.bounds),
        "cut": cut,
        "kept_tokens": tracker.kept_tokens,
        "total_tokens": tracker.total_tokens,
        "events": tracker.event_count,
        "last_events": [[e.seen, e.cut] for e in _last_events(tracker.events)],
        "boundary": tracker.boundary,
        "session_tokens": tracker.session_tokens,
        "session_moves": tracker.session_moves,
        "mid_session_moves": tracker.mid_session_moves,
        "kept": [
            [start, stop, tokens]
            for (start, stop), tokens in zip(
                tracker.bounds[cut:], tracker.unit_tokens[cut:], strict=True
            )
        ],
        "lines": [
            [line.unit, line.message, list(line.picks), line.words] for line in tracker.lines
        ],
        "documents": stats.documents,
        "df": stats.to_text(),
        "digest": None if digest is None else digest.hex(),
        "version": version,
    }


def _last_events(events: Sequence[CutEvent]) -> list[CutEvent]:
    """The trailing events made on reaching the same message as the last one."""
    tail = len(events)
    while tail > 0 and events[tail - 1].seen == events[-1].seen:
        tail -= 1
    return list(events[tail:])


def _count(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**53:
        raise ValueError(f"{name} must be a non-negative int")
    return value


def _rows(value: object, name: str, size: int) -> list[list[object]]:
    if not isinstance(value, list) or not all(
        isinstance(row, list) and len(row) == size for row in value
    ):
        raise ValueError(f"{name} must be a list of {size}-item lists")
    return value


def read_snapshot(value: object) -> TrackerSnapshot:
    """The snapshot in ``value``, checked; ``ValueError`` says what is wrong with it."""
    if not isinstance(value, dict):
        raise ValueError("the history snapshot is not a JSON object")
    settings = tuple(_count(value.get(name), name) for name in _SETTINGS)
    seen, units, cut, kept_tokens, total_tokens, events, documents = (
        _count(value.get(name), name) for name in _COUNTS
    )
    session_tokens, session_moves, mid_session_moves = (
        _count(value.get(name), name) for name in _SESSION
    )
    boundary = value.get("boundary")
    if boundary != -1:
        boundary = _count(boundary, "boundary")
    last = _cut_events(value.get("last_events"))
    counter, digest, version = _identity(value)
    kept = tuple(
        (_count(a, "kept"), _count(b, "kept"), _count(t, "kept"))
        for a, b, t in _rows(value.get("kept"), "kept", 3)
    )
    lines = _index_lines(value.get("lines"))
    sketch = value.get("df")
    if not isinstance(sketch, str):
        raise ValueError("df must be a str")
    bounds_ok = all(a < b for a, b, _ in kept) and all(x[1] == y[0] for x, y in pairwise(kept))
    if not (
        cut <= units <= seen
        and len(kept) == units - cut
        and bounds_ok
        and (not kept or kept[-1][1] == seen)
        and sum(t for _, _, t in kept) == kept_tokens <= total_tokens
        and all(line[0] < cut for line in lines)
        and boundary <= units
        and len(last) <= events
        and all(e.seen <= units and e.cut <= cut for e in last)
    ):
        raise ValueError("its cut, units and kept tokens do not agree")
    return TrackerSnapshot(
        settings=settings,
        counter=counter,
        seen=seen,
        units=units,
        cut=cut,
        kept_tokens=kept_tokens,
        total_tokens=total_tokens,
        events=events,
        last_events=last,
        boundary=boundary,
        session=(session_tokens, session_moves, mid_session_moves),
        kept=kept,
        lines=tuple(lines),
        stats=TermSketch.from_text(sketch, documents),
        digest=digest,
        version=version,
    )


def _cut_events(value: object) -> tuple[CutEvent, ...]:
    if not isinstance(value, list) or not all(
        isinstance(row, list) and len(row) == 2 for row in value
    ):
        raise ValueError("last_events must be a list of two-item lists")
    return tuple(CutEvent(_count(a, "last_events"), _count(b, "last_events")) for a, b in value)


def _identity(value: dict[str, Any]) -> tuple[str, str | None, HistoryVersion | None]:
    """The counter's name, the history's digest and the caller's version, checked."""
    counter, digest, version = value.get("counter"), value.get("digest"), value.get("version")
    if not isinstance(counter, str):
        raise ValueError("counter must be a str")
    if digest is not None and not (isinstance(digest, str) and len(digest) == 64):
        raise ValueError("digest must be 64 hex digits or null")
    if version is not None and not isinstance(version, str):
        version = _count(version, "version")
    return counter, digest, version


def _index_lines(value: object) -> list[LineRecipe]:
    lines = []
    for unit, message, picks, words in _rows(value, "lines", 4):
        if not isinstance(picks, list) or len(picks) > 10_000:
            raise ValueError("an index line's picks must be a list of sentence indices")
        chosen = tuple(_count(p, "lines") for p in picks)
        lines.append(
            (_count(unit, "lines"), _count(message, "lines"), chosen, _count(words, "lines"))
        )
    return lines


def _vouched(stored: HistoryVersion | None, version: HistoryVersion | None) -> bool:
    """The caller's ``history_version`` says the history only grew since the snapshot's."""
    if stored is None or version is None or type(stored) is not type(version):
        return False
    return version == stored or (isinstance(version, int) and version > stored)  # type: ignore[operator]


def restore_tracker(
    snapshot: TrackerSnapshot,
    messages: Sequence[Mapping[str, Any]],
    count: Count,
    version: HistoryVersion | None,
    field_name: str,
    image_tokens: ImageTokens = None,
    counts: Sequence[int | None] | None = None,
) -> HistoryTracker | str:
    """The tracker ``snapshot`` describes, for ``messages``; or why it does not describe them.

    The reasons: ``"prefix"`` (the messages do not start with what it saw, by digest or
    ``history_version``), ``"units"`` (they do, but group into other units), ``"counts"``
    (its kept or session tokens are not what counting these messages gives) and ``"lines"``
    (an index line it names is no line of these messages). The last two mean the snapshot
    is wrong, not merely old. ``image_tokens`` and ``counts`` are as for
    :meth:`HistoryTracker.update`.
    """
    checked = _checked(snapshot, messages, count, version, field_name, image_tokens, counts)
    if isinstance(checked, str):
        return checked
    bounds, kept, lines = checked
    share, chunk, overhead, keyframe_tokens, line_room = snapshot.settings
    cut = snapshot.cut
    tracker = HistoryTracker(share, chunk, count, overhead, keyframe_tokens, line_room=line_room)
    tracker.bounds = UnitBounds(bounds)
    tracker.unit_tokens = array("q", [0] * cut + kept)
    tracker.unit_keys = [
        unit_key(messages[a:b]) if u == 0 or u >= cut else b"" for u, (a, b) in enumerate(bounds)
    ]
    tracker.cut = cut
    tracker.kept_tokens = sum(kept)
    tracker.total_tokens = snapshot.total_tokens
    tracker.events = list(snapshot.last_events)
    tracker.resumed_events = snapshot.events - len(snapshot.last_events)
    tracker.boundary = snapshot.boundary
    tracker.session_tokens, tracker.session_moves, tracker.mid_session_moves = snapshot.session
    tracker.lines = lines
    tracker.stats = snapshot.stats
    for unit in range(cut):
        tracker.add_passages(unit, messages, post=False)
    tracker.postings = LazyPostings(tracker.passages, len(tracker.passages))
    return tracker


def _checked(
    snapshot: TrackerSnapshot,
    messages: Sequence[Mapping[str, Any]],
    count: Count,
    version: HistoryVersion | None,
    field_name: str,
    image_tokens: ImageTokens,
    counts: Sequence[int | None] | None,
) -> tuple[list[tuple[int, int]], list[int], list[IndexLine]] | str:
    """The units' bounds, the kept units' tokens and the index lines, from ``messages``, when
    ``snapshot`` describes them; else why not (see :func:`restore_tracker`)."""
    seen = snapshot.seen
    if seen > len(messages):
        return "prefix"
    if not _vouched(snapshot.version, version):
        digest = prefix_digest(messages, seen)
        if digest is None or snapshot.digest is None or digest.hex() != snapshot.digest:
            return "prefix"
    try:
        bounds = [(u.start, u.stop) for u in group_units(messages[:seen], field=field_name)]
    except InvalidInputError:  # the snapshot ends inside a tool call's results
        return "units"
    cut = snapshot.cut
    if len(bounds) != snapshot.units or bounds[cut:] != [(a, b) for a, b, _ in snapshot.kept]:
        return "units"
    cost = unit_cost(messages, count, snapshot.settings[2], image_tokens, counts)
    kept = [cost(a, b) for a, b in bounds[cut:]]
    if kept != [t for _, _, t in snapshot.kept] or not _session_agrees(
        snapshot, bounds, kept, cost
    ):
        return "counts"
    lines = derive_lines(snapshot.lines, messages, bounds, count)
    return "lines" if lines is None else (bounds, kept, lines)


def _session_agrees(
    snapshot: TrackerSnapshot,
    bounds: Sequence[tuple[int, int]],
    kept: Sequence[int],
    cost: UnitCost,
) -> bool:
    """The snapshot's session tokens are what counting the messages gives, as far as the cut
    ever reads them (a chunk: any two counts of a chunk or more act alike)."""
    chunk, stored = snapshot.settings[1], snapshot.session[0]
    counted = session_tokens(bounds, kept, snapshot.cut, snapshot.boundary, chunk, cost)
    if stored < chunk or counted < chunk:
        return stored == counted
    return stored <= snapshot.total_tokens
