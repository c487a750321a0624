"""Open narrative threads: set-ups a document has made and still owes a payoff.

In a novel they are foreshadowing; in a manual, "more on this in a later chapter". The model
proposes changes after each chapter (open a thread, advance or resolve a known one); this
module checks those proposals against the record, decides deadlines, and says what the next
chapter owes. It is pure: the caller stores the threads and applies the operations. Values
and decisions are those of the published ``longform-memory`` 0.1.1 package.

"Still owed" has exactly one definition, :data:`UNRESOLVED_THREAD_STATUSES`. A thread that has
been advanced (``progressing``) is as unresolved as an untouched one; a list that forgets that
hides advanced threads from the model, which then can never cite them to resolve them.
"""

from __future__ import annotations

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
    "SkipReason",
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

#: Most proposals read from one chapter; the rest are ignored.
MAX_THREAD_OPS_PER_CHAPTER: Final = 10

#: Chapters past its deadline from which a thread must be resolved rather than merely
#: advanced. One chapter late is within the model's own error in placing events, and forcing a
#: payoff that early produces contrived resolutions.
MUST_RESOLVE_OVERDUE: Final = 3

#: How far ahead a deadline lands when the document's length is unknown.
DEADLINE_FALLBACK_SPAN: Final = 10

_REF: Final = re.compile(r"^t(\d+)$")


def is_unresolved(status: str) -> bool:
    """Whether a thread with this status still owes a payoff."""
    return status in UNRESOLVED_THREAD_STATUSES


def _check_chapter(value: object, field: str, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{field} must be an int, got {value!r}", field=field)
    if value < minimum:
        raise InvalidInputError(f"{field} must be >= {minimum}, got {value}", field=field)
    return value


def _deadline(raw: Any, chapter_number: Any, total_chapters: Any) -> Any:
    try:
        proposed = int(float(raw))
    except (TypeError, ValueError):
        proposed = None
    # Only a later chapter is a usable deadline; when the length is known, one past the final
    # chapter would never come due inside the document, so it is clipped to the end.
    if proposed is not None and proposed > chapter_number:
        return min(proposed, total_chapters) if total_chapters > chapter_number else proposed
    # 0, a past chapter or no number at all: read as "the ending".
    if total_chapters > chapter_number:
        return total_chapters
    # Length unknown (or already past the plan): a concrete span ahead, never 0.
    return chapter_number + DEADLINE_FALLBACK_SPAN


def resolve_thread_deadline(raw: object, chapter_number: int, total_chapters: int) -> int:
    """The chapter by which a thread opened in ``chapter_number`` should pay off.

    ``raw`` is whatever the model answered; anything ``int(float(raw))`` reads as a chapter
    after ``chapter_number`` is kept, clipped to ``total_chapters`` when that lies ahead.
    Anything else (0, a past chapter, text, None) means the ending: ``total_chapters`` when it
    lies ahead, otherwise :data:`DEADLINE_FALLBACK_SPAN` chapters on. Never 0: a zero deadline
    would never come due.

    >>> resolve_thread_deadline(0, 12, 40)
    40
    >>> resolve_thread_deadline("18", 12, 40)
    18
    >>> resolve_thread_deadline(5, 10, 50)
    50
    >>> resolve_thread_deadline(None, 12, 0)
    22
    """
    _check_chapter(chapter_number, "chapter_number", minimum=0)
    _check_chapter(total_chapters, "total_chapters", minimum=0)
    result: int = _deadline(raw, chapter_number, total_chapters)
    return result


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


def compare_thread_urgency(item: Any, chapter_number: int) -> tuple[int, int, Any, Any, Any]:
    """Sort key putting the threads that most need attention first.

    Use it as ``sorted(threads, key=lambda t: compare_thread_urgency(t, n))``. Order: due or
    overdue first, then those with a deadline, the earlier deadline, the one untouched the
    longest, the one opened first. ``item`` needs ``deadline_chapter``,
    ``last_activated_chapter`` and ``opened_at_chapter``.
    """
    deadline = item.deadline_chapter
    has_deadline = deadline > 0
    urgent = has_deadline and deadline <= chapter_number
    return (
        0 if urgent else 1,
        0 if has_deadline else 1,
        deadline if has_deadline else 0,
        item.last_activated_chapter,
        item.opened_at_chapter,
    )


RowT = TypeVar("RowT", bound=ThreadRow)


def select_known_threads(
    rows: Sequence[RowT], chapter_number: int, *, limit: int | None = None
) -> list[RowT]:
    """The unresolved threads in urgency order: the list to render and to validate against.

    Ties in :func:`compare_thread_urgency` are broken by id, because stores do not promise a
    row order and ``[T3]`` must mean the same thread when the model's answer comes back.
    Render this list with :func:`render_known_threads` and pass the same list as ``known`` to
    :func:`plan_thread_ops`.
    """
    unresolved = [row for row in rows if is_unresolved(row.status)]
    unresolved.sort(
        key=lambda row: (compare_thread_urgency(row, chapter_number), str(getattr(row, "id", "")))
    )
    return unresolved if limit is None else unresolved[:limit]


@dataclass(frozen=True, slots=True)
class OwedThread:
    """A thread still owed, with how many chapters late it is (0: due this chapter)."""

    summary: str
    opened_at_chapter: int
    deadline_chapter: int
    overdue_by: int


@dataclass(frozen=True, slots=True)
class PayoffPlan:
    """What the next chapter owes: at most one thread it must resolve, and the rest in order."""

    must_resolve: Any
    rest: tuple[Any, ...]


def _owed(
    threads: Sequence[Any], chapter_number: Any, total_chapters: Any
) -> tuple[Any, list[Any]]:
    if not threads:
        return None, []
    ranked = sorted(threads, key=lambda t: (-t.overdue_by, t.opened_at_chapter))
    worst = ranked[0]
    # The last quarter of a document of known length: whatever is owed must start paying off.
    endgame = total_chapters > 0 and chapter_number >= -(-total_chapters * 3 // 4)
    if worst.overdue_by >= MUST_RESOLVE_OVERDUE or endgame:
        return worst, ranked[1:]
    return None, ranked


def plan_owed_payoff(
    threads: Sequence[Any], chapter_number: int, total_chapters: int
) -> PayoffPlan:
    """Which owed thread chapter ``chapter_number`` must close, if any.

    ``threads`` are the owed threads (:class:`OwedThread` or anything with ``overdue_by`` and
    ``opened_at_chapter``). They are ranked most overdue first, the earliest opened first on a
    tie. The first must be resolved when it is :data:`MUST_RESOLVE_OVERDUE` or more chapters
    late, or when the chapter lies in the last quarter of a document of known length; less
    late, the model may merely advance it.

    >>> owed = [OwedThread("letter", 2, 5, 4), OwedThread("chest", 3, 8, 1)]
    >>> plan = plan_owed_payoff(owed, 9, 40)
    >>> plan.must_resolve.summary, [t.summary for t in plan.rest]
    ('letter', ['chest'])
    """
    _check_chapter(chapter_number, "chapter_number", minimum=0)
    _check_chapter(total_chapters, "total_chapters", minimum=0)
    must, rest = _owed(threads, chapter_number, total_chapters)
    return PayoffPlan(must_resolve=must, rest=tuple(rest))


@dataclass(frozen=True, slots=True)
class RawThreadItem:
    """One change to the threads as the model proposed it, not yet validated.

    ``action`` is ``open``, ``progress`` or ``resolve`` (None means open); ``ref`` is the
    ``T3`` id the model saw.
    """

    action: str | None = None
    ref: str | None = None
    summary: str | None = None
    thread_type: str | None = None
    deadline_chapter: Any = None
    resolution_note: str | None = None


_RAW_FIELDS: Final = frozenset(field.name for field in fields(RawThreadItem))

SkipReason = Literal["no-summary", "unmatched-ref", "already-resolved"]


@dataclass(frozen=True, slots=True)
class ThreadOp:
    """One planned change: ``open``, ``progress``, ``resolve``, or ``skip`` with a ``reason``.

    ``id`` is the known thread's id (None when opening or skipping); ``deadline_chapter`` is
    set only when opening; ``index`` is the position of the proposal it came from.
    """

    kind: Literal["open", "progress", "resolve", "skip"]
    id: str | None = None
    summary: str = ""
    resolution_note: str = ""
    thread_type: str | None = None
    deadline_chapter: int = 0
    reason: SkipReason | None = None
    index: int = 0


@dataclass(frozen=True, slots=True)
class ThreadPlan:
    """One step per proposal read, in proposal order."""

    steps: tuple[ThreadOp, ...]

    @property
    def ops(self) -> tuple[ThreadOp, ...]:
        """The changes to apply (every step but the skips)."""
        return tuple(step for step in self.steps if step.kind != "skip")

    @property
    def skipped(self) -> tuple[ThreadOp, ...]:
        """The proposals not applied, each with its ``reason``."""
        return tuple(step for step in self.steps if step.kind == "skip")


def _ref_index(raw: Any) -> int:
    """``"T3"``, ``" t3 "`` as the 0-based index 2; -1 when it names no thread."""
    match = _REF.match(str(raw or "").strip().lower())
    if match is None:
        return -1
    number = int(match.group(1))
    return number - 1 if number >= 1 else -1


def _plan(
    items: Sequence[Any],
    known: Sequence[Any],
    chapter_number: Any,
    total_chapters: Any,
    max_ops: Any,
) -> list[ThreadOp]:
    steps: list[ThreadOp] = []
    closed: set[int] = set()
    for index, item in enumerate(list(items)[:max_ops]):
        summary = (item.summary or "").strip()
        if not summary:
            steps.append(ThreadOp(kind="skip", reason="no-summary", index=index))
            continue
        action = (item.action or "open").strip().lower()
        position = _ref_index(item.ref)
        matched = 0 <= position < len(known)
        if matched and position in closed:
            steps.append(
                ThreadOp(kind="skip", summary=summary, reason="already-resolved", index=index)
            )
        elif action == "resolve":
            if not matched:
                # Closing the wrong thread loses it for good; a missed close costs a chapter.
                steps.append(
                    ThreadOp(kind="skip", summary=summary, reason="unmatched-ref", index=index)
                )
                continue
            closed.add(position)
            steps.append(
                ThreadOp(
                    kind="resolve",
                    id=known[position].id,
                    summary=summary,
                    resolution_note=(item.resolution_note or "").strip(),
                    index=index,
                )
            )
        elif matched:
            # A progress, or an open naming a known thread: the same thread moved again.
            steps.append(
                ThreadOp(kind="progress", id=known[position].id, summary=summary, index=index)
            )
        elif action == "progress":
            # An advance of a thread nobody knows never opens one: every invented id would
            # become a ghost thread.
            steps.append(
                ThreadOp(kind="skip", summary=summary, reason="unmatched-ref", index=index)
            )
        else:
            steps.append(
                ThreadOp(
                    kind="open",
                    summary=summary,
                    thread_type=item.thread_type,
                    deadline_chapter=_deadline(
                        item.deadline_chapter, chapter_number, total_chapters
                    ),
                    index=index,
                )
            )
    return steps


def _as_raw(item: object, index: int) -> RawThreadItem:
    if isinstance(item, RawThreadItem):
        return item
    if isinstance(item, Mapping):
        return RawThreadItem(**{key: item[key] for key in item if key in _RAW_FIELDS})
    raise InvalidInputError(
        f"thread proposal {index} must be a RawThreadItem or a mapping, got {type(item).__name__}",
        field=f"items[{index}]",
    )


def plan_thread_ops(
    items: Sequence[RawThreadItem | Mapping[str, Any]],
    known: Sequence[Any],
    chapter_number: int,
    total_chapters: int,
    max_ops: int = MAX_THREAD_OPS_PER_CHAPTER,
) -> ThreadPlan:
    """Turn the model's proposed thread changes into steps, checked against the record.

    ``known`` must be the list the model saw, in the same order (``[T1]`` is ``known[0]``);
    :func:`select_known_threads` builds it. Only the first ``max_ops`` proposals are read.
    A proposal without a summary is skipped (``no-summary``); one naming a thread already
    resolved earlier in the batch is skipped (``already-resolved``); a resolve, or a progress,
    naming no known thread is skipped (``unmatched-ref``), never turned into a new thread; any
    other action naming a known thread advances it; the rest open new threads with a deadline
    from :func:`resolve_thread_deadline`.

    >>> known = [KnownThread("k1"), KnownThread("k2", status="progressing")]
    >>> plan = plan_thread_ops(
    ...     [{"action": "resolve", "ref": "T2", "summary": "The map is found."},
    ...      {"action": "progress", "ref": "T9", "summary": "?"}],
    ...     known, chapter_number=7, total_chapters=30)
    >>> [(op.kind, op.id) for op in plan.ops], [s.reason for s in plan.skipped]
    ([('resolve', 'k2')], ['unmatched-ref'])
    """
    _check_chapter(chapter_number, "chapter_number", minimum=0)
    _check_chapter(total_chapters, "total_chapters", minimum=0)
    _check_chapter(max_ops, "max_ops", minimum=0)
    raw = [_as_raw(item, index) for index, item in enumerate(items)]
    return ThreadPlan(steps=tuple(_plan(raw, known, chapter_number, total_chapters, max_ops)))


def _due_by(chapter: int) -> str:
    # %d, not an f-string: a float deadline prints truncated and a string one raises, as in
    # the published package.
    return " (due by Ch.%d)" % chapter  # noqa: UP031


@dataclass(frozen=True, slots=True)
class ThreadLabels:
    """The words around each thread in :func:`render_known_threads`.

    Set them in the document's language: a list labelled in English while the model is asked
    to write Japanese pulls its answer toward English. ``due`` is a function of the deadline
    chapter, or a format string with a ``{chapter}`` field.
    """

    empty: str = "(none on record yet)"
    in_progress: str = "[in progress] "
    due: str | Callable[[int], str] = _due_by


DEFAULT_THREAD_LABELS: Final = ThreadLabels()


def _due_text(due: Any, chapter: Any) -> str:
    if isinstance(due, str):
        return due.format(chapter=chapter)
    text: str = due(chapter)
    return text


def render_known_threads(rows: Sequence[Any], labels: Any = DEFAULT_THREAD_LABELS) -> str:
    """The threads as the model sees them: one ``[Tn]`` line each, numbered from 1.

    Rows need ``summary``, ``status`` and ``deadline_chapter`` (a falsy deadline prints no due
    suffix). Advanced threads carry the in-progress marker so the model can judge whether this
    chapter can close them. Pass the same list as ``known`` to :func:`plan_thread_ops`.

    >>> print(render_known_threads([KnownThread("a", "progressing", "Who sent the letter?", 3,
    ...                                         12)]))
    [T1] [in progress] Who sent the letter? (due by Ch.12)
    >>> render_known_threads([])
    '(none on record yet)'
    """
    if not rows:
        empty: str = labels.empty
        return empty
    lines = []
    for number, row in enumerate(rows, start=1):
        marker = labels.in_progress if row.status == "progressing" else ""
        due = _due_text(labels.due, row.deadline_chapter) if row.deadline_chapter else ""
        lines.append(f"[T{number}] {marker}{row.summary}{due}")
    return "\n".join(lines)
