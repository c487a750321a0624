"""The threads half of ``longform_memory``: open loops, deadlines, urgency and planning.

Same names, parameters, result types and values as the published package; the decisions are
:mod:`membrane.longform.threads`'s, which follows them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from membrane.longform import threads as _core

__all__ = [
    "DEFAULT_THREAD_LABELS",
    "MAX_THREAD_OPS_PER_CHAPTER",
    "UNRESOLVED_THREAD_STATUSES",
    "KnownThread",
    "OwedThread",
    "RawThreadItem",
    "ThreadLabels",
    "ThreadOp",
    "ThreadUrgency",
    "compare_thread_urgency",
    "plan_owed_payoff",
    "plan_thread_ops",
    "render_known_threads",
    "resolve_thread_deadline",
]

#: The statuses that still owe a payoff; the only definition of "unresolved".
UNRESOLVED_THREAD_STATUSES: tuple[str, ...] = _core.UNRESOLVED_THREAD_STATUSES

#: Most proposals read per chapter.
MAX_THREAD_OPS_PER_CHAPTER = _core.MAX_THREAD_OPS_PER_CHAPTER


def resolve_thread_deadline(raw: Any, chapter_number: int, total_chapters: int) -> int:
    """The deadline chapter for a thread opened now; never 0."""
    result: int = _core._deadline(raw, chapter_number, total_chapters)
    return result


@dataclass
class OwedThread:
    """A thread still owed and how many chapters late it is."""

    summary: str
    opened_at_chapter: int
    deadline_chapter: int
    overdue_by: int


def plan_owed_payoff(
    threads: Sequence[OwedThread], chapter_number: int, total_chapters: int
) -> tuple[OwedThread | None, list[OwedThread]]:
    """``(must_resolve, rest)``: the thread this chapter must close (or None) and the others,
    most overdue first."""
    return _core._owed(threads, chapter_number, total_chapters)


@dataclass
class ThreadUrgency:
    """The fields :func:`compare_thread_urgency` reads."""

    deadline_chapter: int
    last_activated_chapter: int
    opened_at_chapter: int


def compare_thread_urgency(item: ThreadUrgency, chapter_number: int) -> tuple[Any, ...]:
    """Sort key, most urgent first: due, has a deadline, deadline, last active, opened."""
    return _core.compare_thread_urgency(item, chapter_number)


@dataclass
class RawThreadItem:
    """One proposal as the model wrote it, unvalidated."""

    action: str | None = None
    ref: str | None = None
    summary: str | None = None
    thread_type: str | None = None
    deadline_chapter: Any = None
    resolution_note: str | None = None


@dataclass
class KnownThread:
    """A thread on record, in the order the model saw the ``[Tn]`` list."""

    id: str
    status: str


@dataclass
class ThreadOp:
    """One planned change: resolve, progress, open, or skip (with a ``reason``)."""

    kind: str
    id: str | None = None
    summary: str = ""
    resolution_note: str = ""
    thread_type: str | None = None
    deadline_chapter: int = 0
    reason: str | None = None


def plan_thread_ops(
    items: Sequence[RawThreadItem],
    known: Sequence[KnownThread],
    chapter_number: int,
    total_chapters: int,
    max_ops: int = MAX_THREAD_OPS_PER_CHAPTER,
) -> list[ThreadOp]:
    """One op per proposal read (the first ``max_ops``), skips included."""
    return [
        ThreadOp(
            kind=step.kind,
            id=step.id,
            summary=step.summary,
            resolution_note=step.resolution_note,
            thread_type=step.thread_type,
            deadline_chapter=step.deadline_chapter,
            reason=step.reason,
        )
        for step in _core._plan(items, known, chapter_number, total_chapters, max_ops)
    ]


def _due_by(chapter: int) -> str:
    return _core._due_by(chapter)


@dataclass
class ThreadLabels:
    """The words around each line of :func:`render_known_threads`."""

    empty: str = "(none on record yet)"
    in_progress: str = "[in progress] "
    due: Callable[[int], str] = _due_by


DEFAULT_THREAD_LABELS = ThreadLabels()


def render_known_threads(rows: Sequence[Any], labels: ThreadLabels = DEFAULT_THREAD_LABELS) -> str:
    """One ``[Tn]`` line per row, or ``labels.empty`` when there is none."""
    return _core.render_known_threads(rows, labels)
