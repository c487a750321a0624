"""Open narrative threads: set-ups a document has made and still owes a payoff.

In a novel they are foreshadowing; in a manual, "more on this in a later chapter". The model
proposes changes after each chapter (open a thread, advance or resolve a known one); this
module checks those proposals against the record, decides deadlines, and says what the next
chapter owes. It is pure: the caller stores the threads and applies the operations.

"Still owed" has exactly one definition, :data:`UNRESOLVED_THREAD_STATUSES`. A thread that has
been advanced (``progressing``) is as unresolved as an untouched one; a list that forgets that
hides advanced threads from the model, which then can never cite them to resolve them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Final, Literal, Protocol, TypeVar

from membrane.errors import InvalidInputError

__all__ = [
    "DEADLINE_FALLBACK_SPAN",
    "DEFAULT_THREAD_LABELS",
    "MAX_THREAD_OPS_PER_CHAPTER",
    "MUST_RESOLVE_OVERDUE",
    "THREAD_STATUSES",
    "UNRESOLVED_THREAD_STATUSES",
    "KnownThread",
    "OwedThread",
    "PayoffPlan",
    "RawThreadItem",
    "RejectReason",
    "RejectedThreadItem",
    "ThreadLabels",
    "ThreadOp",
    "ThreadPlan",
    "ThreadRow",
    "compare_thread_urgency",
    "is_unresolved",
    "plan_owed_payoff",
    "plan_thread_ops",
    "render_known_threads",
    "resolve_thread_deadline",
    "select_known_threads",
]

#: The statuses of a thread that still owes a payoff. Test membership with
#: :func:`is_unresolved`; never compare a status with ``"open"`` alone.
UNRESOLVED_THREAD_STATUSES: Final[tuple[str, ...]] = ("open", "progressing")

#: Every status a thread can have.
THREAD_STATUSES: Final[tuple[str, ...]] = ("open", "progressing", "resolved")

#: Most operations applied from one chapter's proposals; the rest are rejected as over the cap.
MAX_THREAD_OPS_PER_CHAPTER: Final = 10

#: Chapters past its deadline after which a thread must be resolved rather than merely advanced.
#: One chapter late is within the model's own error in placing events, and forcing a payoff
#: that early produces contrived resolutions.
MUST_RESOLVE_OVERDUE: Final = 3

#: How far ahead a deadline lands when the model gave none, or one that cannot be used.
DEADLINE_FALLBACK_SPAN: Final = 10

_ENDING_WORDS: Final = frozenset(
    {"end", "ending", "the end", "the ending", "final", "finale", "final chapter", "last chapter"}
)
_CHAPTER_PREFIX = re.compile(r"^(?:chapter|ch\.?)\s*", re.IGNORECASE)
_REF = re.compile(r"^\[?\s*t?\s*(\d+)\s*\]?$", re.IGNORECASE)


def is_unresolved(status: str) -> bool:
    """Whether a thread with this status still owes a payoff."""
    return status in UNRESOLVED_THREAD_STATUSES


def _check_chapter(value: object, field: str, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{field} must be an int, got {value!r}", field=field)
    if value < minimum:
        raise InvalidInputError(f"{field} must be >= {minimum}, got {value}", field=field)
    return value


def _parse_deadline(raw: object) -> int | Literal["ending"] | None:
    """A deadline chapter, the ending, or None when ``raw`` is missing or unusable."""
    if raw is None or isinstance(raw, bool):
        return None
    if isinstance(raw, str):
        text = raw.strip().lower()
        if text in _ENDING_WORDS:
            return "ending"
        text = _CHAPTER_PREFIX.sub("", text)
        try:
            raw = float(text)
        except ValueError:
            return None
    if isinstance(raw, int):
        value = raw
    elif isinstance(raw, float) and math.isfinite(raw):
        value = int(raw)
    else:
        return None
    if value == 0:
        return "ending"
    return value if value > 0 else None


def resolve_thread_deadline(raw: object, chapter_number: int, total_chapters: int) -> int:
    """The chapter by which a thread opened in ``chapter_number`` should pay off.

    ``raw`` is whatever the model answered. ``0`` or a word such as ``"the ending"`` means the
    final chapter; a later chapter is kept; anything else (missing, unparsable, negative, not
    after the current chapter) becomes :data:`DEADLINE_FALLBACK_SPAN` chapters ahead. When the
    document's length is known (``total_chapters >= chapter_number``) the result never passes
    the final chapter; ``total_chapters=0`` means unknown. The result is never 0: a zero
    deadline would never come due.

    >>> resolve_thread_deadline(0, 12, 40)
    40
    >>> resolve_thread_deadline("ch. 18", 12, 40)
    18
    >>> resolve_thread_deadline(None, 12, 0)
    22
    """
    _check_chapter(chapter_number, "chapter_number", minimum=0)
    _check_chapter(total_chapters, "total_chapters", minimum=0)
    known_end = total_chapters if total_chapters > 0 and chapter_number <= total_chapters else None
    parsed = _parse_deadline(raw)
    if parsed == "ending":
        return known_end if known_end is not None else chapter_number + DEADLINE_FALLBACK_SPAN
    if parsed is None or parsed <= chapter_number:
        parsed = chapter_number + DEADLINE_FALLBACK_SPAN
    return min(parsed, known_end) if known_end is not None else parsed


class ThreadRow(Protocol):
    """What the planning and rendering functions read from a stored thread."""

    @property
    def summary(self) -> str: ...

    @property
    def status(self) -> str: ...

    @property
    def deadline_chapter(self) -> int: ...

    @property
    def opened_at_chapter(self) -> int: ...

    @property
    def last_activated_chapter(self) -> int: ...


@dataclass(frozen=True, slots=True)
class KnownThread:
    """A thread on record.

    ``deadline_chapter`` 0 means none; ``last_activated_chapter`` is the last chapter that
    opened or advanced it.
    """

    id: str
    status: str = "open"
    summary: str = ""
    opened_at_chapter: int = 0
    deadline_chapter: int = 0
    last_activated_chapter: int = 0
    thread_type: str | None = None


def compare_thread_urgency(thread: Any, chapter_number: int) -> tuple[int, int, int, int, int, str]:
    """Sort key putting the threads that most need attention first.

    Use it as ``sorted(threads, key=lambda t: compare_thread_urgency(t, n))``. Order: due or
    overdue before not yet due, a deadline before none, the earlier deadline, the longest
    untouched, the earliest opened, then the id. The last keys make the order total: stores do
    not promise a row order, and the ``[Tn]`` numbering the model sees must be reproducible.
    """
    deadline = int(thread.deadline_chapter or 0)
    has_deadline = deadline > 0
    due = has_deadline and deadline <= chapter_number
    return (
        0 if due else 1,
        0 if has_deadline else 1,
        deadline if has_deadline else 0,
        int(thread.last_activated_chapter or 0),
        int(thread.opened_at_chapter or 0),
        str(getattr(thread, "id", "")),
    )


RowT = TypeVar("RowT", bound=ThreadRow)


def select_known_threads(
    rows: Sequence[RowT], chapter_number: int, *, limit: int | None = None
) -> list[RowT]:
    """The unresolved threads in urgency order: the list to render and to validate against.

    Render this list with :func:`render_known_threads` and pass the same list as ``known`` to
    :func:`plan_thread_ops`, so ``[T3]`` means the same thread in both.
    """
    unresolved = [row for row in rows if is_unresolved(row.status)]
    unresolved.sort(key=lambda row: compare_thread_urgency(row, chapter_number))
    return unresolved if limit is None else unresolved[:limit]


@dataclass(frozen=True, slots=True)
class OwedThread:
    """A thread the next chapter owes: the caller's row, how late it is, whether it must close."""

    thread: Any
    overdue_by: int
    must_resolve: bool


@dataclass(frozen=True, slots=True)
class PayoffPlan:
    """What the next chapter owes, most urgent first."""

    owed: tuple[OwedThread, ...]
    final_chapter: bool

    @property
    def must_resolve(self) -> tuple[OwedThread, ...]:
        """Threads this chapter has to resolve."""
        return tuple(item for item in self.owed if item.must_resolve)

    @property
    def may_advance(self) -> tuple[OwedThread, ...]:
        """Threads that are due but may be advanced rather than resolved."""
        return tuple(item for item in self.owed if not item.must_resolve)


def plan_owed_payoff(
    threads: Sequence[ThreadRow],
    chapter_number: int,
    total_chapters: int,
    *,
    max_must_resolve: int = 1,
) -> PayoffPlan:
    """Which unresolved threads chapter ``chapter_number`` owes a payoff.

    A thread is owed once its deadline has come. Those :data:`MUST_RESOLVE_OVERDUE` or more
    chapters late become must-resolve, the most urgent ``max_must_resolve`` of them per
    chapter (closing several long threads in one chapter reads as contrived; the rest follow in
    the next chapters). In the final chapter every unresolved thread is owed and must resolve.
    Rows need ``status``, ``deadline_chapter``, ``opened_at_chapter`` and
    ``last_activated_chapter``.

    >>> rows = [KnownThread("a", deadline_chapter=5), KnownThread("b", deadline_chapter=9)]
    >>> [(o.thread.id, o.overdue_by, o.must_resolve) for o in plan_owed_payoff(rows, 9, 30).owed]
    [('a', 4, True), ('b', 0, False)]
    """
    _check_chapter(chapter_number, "chapter_number", minimum=0)
    _check_chapter(total_chapters, "total_chapters", minimum=0)
    _check_chapter(max_must_resolve, "max_must_resolve", minimum=0)
    final = 0 < total_chapters <= chapter_number
    owed: list[OwedThread] = []
    forced = 0
    for row in select_known_threads(threads, chapter_number):
        deadline = int(row.deadline_chapter or 0)
        due = 0 < deadline <= chapter_number
        if not (due or final):
            continue
        overdue_by = chapter_number - deadline if due else 0
        must = final
        if not final and overdue_by >= MUST_RESOLVE_OVERDUE and forced < max_must_resolve:
            must = True
            forced += 1
        owed.append(OwedThread(thread=row, overdue_by=overdue_by, must_resolve=must))
    return PayoffPlan(owed=tuple(owed), final_chapter=final)


@dataclass(frozen=True, slots=True)
class RawThreadItem:
    """One change to the threads as the model proposed it, not yet validated.

    ``action`` is ``open``, ``progress`` or ``resolve`` (None means open, or progress when
    ``ref`` names a known thread); ``ref`` is the ``T3`` id the model saw.
    """

    action: str | None = None
    ref: str | None = None
    summary: str | None = None
    thread_type: str | None = None
    deadline_chapter: Any = None
    resolution_note: str | None = None


_RAW_FIELDS: Final = frozenset(field.name for field in fields(RawThreadItem))

_ACTIONS: Final[Mapping[str, Literal["open", "progress", "resolve"]]] = {
    "open": "open",
    "new": "open",
    "plant": "open",
    "progress": "progress",
    "progressing": "progress",
    "advance": "progress",
    "advanced": "progress",
    "resolve": "resolve",
    "resolved": "resolve",
    "close": "resolve",
    "closed": "resolve",
}

RejectReason = Literal[
    "missing-summary",
    "unknown-action",
    "unknown-reference",
    "already-resolved",
    "duplicate",
    "over-cap",
]


@dataclass(frozen=True, slots=True)
class ThreadOp:
    """One validated change to apply.

    ``id`` is the known thread's id (None when opening a new thread); ``index`` is the position
    of the proposal it came from. ``deadline_chapter`` is set only when opening.
    """

    kind: Literal["open", "progress", "resolve"]
    summary: str
    index: int
    id: str | None = None
    thread_type: str | None = None
    deadline_chapter: int = 0
    resolution_note: str = ""


@dataclass(frozen=True, slots=True)
class RejectedThreadItem:
    """A proposal that was not applied, and why."""

    index: int
    reason: RejectReason
    item: RawThreadItem
    detail: str


@dataclass(frozen=True, slots=True)
class ThreadPlan:
    """The operations to apply, in proposal order, and the proposals rejected."""

    ops: tuple[ThreadOp, ...]
    rejected: tuple[RejectedThreadItem, ...]


def _as_raw(item: object, index: int) -> RawThreadItem:
    if isinstance(item, RawThreadItem):
        return item
    if isinstance(item, Mapping):
        return RawThreadItem(**{key: item[key] for key in item if key in _RAW_FIELDS})
    raise InvalidInputError(
        f"thread proposal {index} must be a RawThreadItem or a mapping, got {type(item).__name__}",
        field=f"items[{index}]",
    )


def _ref_index(ref: object) -> int | None:
    """``"T3"``, ``"[T3]"``, ``"t3"`` or ``3`` as the 0-based index 2; None if unparsable."""
    if ref is None or isinstance(ref, bool):
        return None
    match = _REF.match(str(ref).strip())
    if match is None:
        return None
    number = int(match.group(1))
    return number - 1 if number >= 1 else None


def _text(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""


def plan_thread_ops(
    items: Sequence[RawThreadItem | Mapping[str, Any]],
    known: Sequence[Any],
    chapter_number: int,
    total_chapters: int,
    max_ops: int = MAX_THREAD_OPS_PER_CHAPTER,
) -> ThreadPlan:
    """Check the model's proposed thread changes against the threads on record.

    ``known`` must be the list the model saw, in the same order (``[T1]`` is ``known[0]``);
    :func:`select_known_threads` builds it. A proposal is rejected when it has no summary, an
    unknown action, a reference to no known thread for an advance or a resolve (it never opens
    a new thread instead: that would turn every invented id into a ghost thread), a reference to
    a thread already resolved (on record or earlier in the same batch), repeats an ``open`` of
    the same summary, or comes after ``max_ops`` accepted operations. An ``open`` whose
    reference names a known unresolved thread advances that thread instead of duplicating it.

    >>> known = [KnownThread("k1"), KnownThread("k2", status="progressing")]
    >>> plan = plan_thread_ops(
    ...     [{"action": "resolve", "ref": "T2", "summary": "The map is found."},
    ...      {"action": "progress", "ref": "T9", "summary": "?"}],
    ...     known, chapter_number=7, total_chapters=30)
    >>> [(op.kind, op.id) for op in plan.ops], [r.reason for r in plan.rejected]
    ([('resolve', 'k2')], ['unknown-reference'])
    """
    _check_chapter(chapter_number, "chapter_number", minimum=0)
    _check_chapter(total_chapters, "total_chapters", minimum=0)
    _check_chapter(max_ops, "max_ops", minimum=0)
    ops: list[ThreadOp] = []
    rejected: list[RejectedThreadItem] = []
    closed: set[int] = set()
    opened: set[str] = set()

    def reject(index: int, item: RawThreadItem, reason: RejectReason, detail: str) -> None:
        rejected.append(RejectedThreadItem(index=index, reason=reason, item=item, detail=detail))

    for index, proposal in enumerate(items):
        item = _as_raw(proposal, index)
        summary = _text(item.summary)
        if not summary:
            reject(index, item, "missing-summary", "the proposal has no summary")
            continue
        action_text = _text(item.action).lower()
        action = _ACTIONS.get(action_text) if action_text else None
        if action_text and action is None:
            reject(index, item, "unknown-action", f"unknown action {item.action!r}")
            continue
        position = _ref_index(item.ref)
        matched = position is not None and position < len(known)

        if not matched and action in ("progress", "resolve"):
            reject(index, item, "unknown-reference", f"{item.ref!r} names no known thread")
            continue
        if matched:
            assert position is not None
            thread = known[position]
            if position in closed or not is_unresolved(thread.status):
                reject(index, item, "already-resolved", f"{item.ref!r} is already resolved")
                continue
        elif summary.casefold() in opened:
            reject(index, item, "duplicate", "the same thread is opened twice")
            continue
        if len(ops) >= max_ops:
            reject(index, item, "over-cap", f"more than {max_ops} operations in one chapter")
            continue

        if matched:
            assert position is not None
            thread_id = str(known[position].id)
            if action == "resolve":
                closed.add(position)
                op = ThreadOp(
                    kind="resolve",
                    summary=summary,
                    index=index,
                    id=thread_id,
                    resolution_note=_text(item.resolution_note),
                )
            else:
                op = ThreadOp(kind="progress", summary=summary, index=index, id=thread_id)
        else:
            opened.add(summary.casefold())
            op = ThreadOp(
                kind="open",
                summary=summary,
                index=index,
                thread_type=_text(item.thread_type) or None,
                deadline_chapter=resolve_thread_deadline(
                    item.deadline_chapter, chapter_number, total_chapters
                ),
            )
        ops.append(op)
    return ThreadPlan(ops=tuple(ops), rejected=tuple(rejected))


@dataclass(frozen=True, slots=True)
class ThreadLabels:
    """The words around each thread in :func:`render_known_threads`.

    Set them in the document's language: a list labelled in English while the model is asked
    to write Japanese pulls its answer toward English. ``due`` is a format string with a
    ``{chapter}`` field, or a function of the chapter number.
    """

    empty: str = "(no open threads yet)"
    in_progress: str = "[in progress] "
    due: str | Callable[[int], str] = " (due by Ch.{chapter})"

    def due_text(self, chapter: int) -> str:
        """The due-chapter suffix for one thread."""
        if callable(self.due):
            return self.due(chapter)
        return self.due.format(chapter=chapter)


DEFAULT_THREAD_LABELS: Final = ThreadLabels()


def render_known_threads(rows: Sequence[Any], labels: ThreadLabels = DEFAULT_THREAD_LABELS) -> str:
    """The threads as the model sees them: one ``[Tn]`` line each, numbered from 1.

    Rows need ``summary``, ``status`` and ``deadline_chapter``. Advanced threads carry the
    in-progress marker so the model can judge whether this chapter can close them. Pass the
    same list as ``known`` to :func:`plan_thread_ops`.

    >>> print(render_known_threads([KnownThread("a", "progressing", "Who sent the letter?", 3,
    ...                                         12)]))
    [T1] [in progress] Who sent the letter? (due by Ch.12)
    >>> render_known_threads([])
    '(no open threads yet)'
    """
    if not rows:
        return labels.empty
    lines = []
    for number, row in enumerate(rows, start=1):
        marker = labels.in_progress if row.status == "progressing" else ""
        deadline = int(row.deadline_chapter or 0)
        due = labels.due_text(deadline) if deadline > 0 else ""
        lines.append(f"[T{number}] {marker}{row.summary}{due}")
    return "\n".join(lines)
