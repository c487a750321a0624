"""The threads half of ``longform_memory``: open loops, deadlines, urgency and planning.

Same names, parameters, result types and values as the published package. The decisions are
the ones :mod:`membrane.longform.threads` follows too; this module carries its own copy so that
the package needs nothing but the standard library.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Optional

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
UNRESOLVED_THREAD_STATUSES: tuple[str, ...] = ("open", "progressing")

#: Most proposals read per chapter.
MAX_THREAD_OPS_PER_CHAPTER = 10

# Chapters past its deadline from which a thread must be resolved rather than advanced.
_MUST_RESOLVE_OVERDUE = 3

# How far ahead a deadline lands when the document's length is unknown.
_DEADLINE_FALLBACK_SPAN = 10

_REF = re.compile(r"^t(\d+)$")


def resolve_thread_deadline(raw: Any, chapter_number: int, total_chapters: int) -> int:
    """The deadline chapter for a thread opened now; never 0."""
    try:
        proposed: Optional[int] = int(float(raw))
    except (TypeError, ValueError):
        proposed = None
    # Only a later chapter is a usable deadline; one past the final chapter is clipped to it.
    if proposed is not None and proposed > chapter_number:
        return min(proposed, total_chapters) if total_chapters > chapter_number else proposed
    # 0, a past chapter or no number at all: read as "the ending".
    if total_chapters > chapter_number:
        return total_chapters
    # Length unknown (or already past the plan): a concrete span ahead, never 0.
    return chapter_number + _DEADLINE_FALLBACK_SPAN


@dataclass
class OwedThread:
    """A thread still owed and how many chapters late it is."""

    summary: str
    opened_at_chapter: int
    deadline_chapter: int
    overdue_by: int


def plan_owed_payoff(
    threads: Sequence[OwedThread], chapter_number: int, total_chapters: int
) -> tuple[Optional[OwedThread], list[OwedThread]]:
    """``(must_resolve, rest)``: the thread this chapter must close (or None) and the others,
    most overdue first."""
    if not threads:
        return None, []
    ranked = sorted(threads, key=lambda t: (-t.overdue_by, t.opened_at_chapter))
    worst = ranked[0]
    # The last quarter of a document of known length: whatever is owed must start paying off.
    endgame = total_chapters > 0 and chapter_number >= -(-total_chapters * 3 // 4)
    if worst.overdue_by >= _MUST_RESOLVE_OVERDUE or endgame:
        return worst, ranked[1:]
    return None, ranked


@dataclass
class ThreadUrgency:
    """The fields :func:`compare_thread_urgency` reads."""

    deadline_chapter: int
    last_activated_chapter: int
    opened_at_chapter: int


def compare_thread_urgency(item: ThreadUrgency, chapter_number: int) -> tuple[Any, ...]:
    """Sort key, most urgent first: due, has a deadline, deadline, last active, opened."""
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


@dataclass
class RawThreadItem:
    """One proposal as the model wrote it, unvalidated."""

    action: Optional[str] = None
    ref: Optional[str] = None
    summary: Optional[str] = None
    thread_type: Optional[str] = None
    deadline_chapter: Any = None
    resolution_note: Optional[str] = None


@dataclass
class KnownThread:
    """A thread on record, in the order the model saw the ``[Tn]`` list."""

    id: str
    status: str


@dataclass
class ThreadOp:
    """One planned change: resolve, progress, open, or skip (with a ``reason``)."""

    kind: str
    id: Optional[str] = None
    summary: str = ""
    resolution_note: str = ""
    thread_type: Optional[str] = None
    deadline_chapter: int = 0
    reason: Optional[str] = None


def _ref_index(raw: Any) -> int:
    """``"T3"``, ``" t3 "`` as the 0-based index 2; -1 when it names no thread."""
    match = _REF.match(str(raw or "").strip().lower())
    if match is None:
        return -1
    number = int(match.group(1))
    return number - 1 if number >= 1 else -1


def plan_thread_ops(
    items: Sequence[RawThreadItem],
    known: Sequence[KnownThread],
    chapter_number: int,
    total_chapters: int,
    max_ops: int = MAX_THREAD_OPS_PER_CHAPTER,
) -> list[ThreadOp]:
    """One op per proposal read (the first ``max_ops``), skips included."""
    ops: list[ThreadOp] = []
    closed: set[int] = set()
    for item in list(items)[:max_ops]:
        summary = (item.summary or "").strip()
        if not summary:
            ops.append(ThreadOp(kind="skip", reason="no-summary"))
            continue
        action = (item.action or "open").strip().lower()
        position = _ref_index(item.ref)
        matched = 0 <= position < len(known)
        if matched and position in closed:
            ops.append(ThreadOp(kind="skip", summary=summary, reason="already-resolved"))
        elif action == "resolve":
            if not matched:
                # Closing the wrong thread loses it for good; a missed close costs a chapter.
                ops.append(ThreadOp(kind="skip", summary=summary, reason="unmatched-ref"))
                continue
            closed.add(position)
            ops.append(
                ThreadOp(
                    kind="resolve",
                    id=known[position].id,
                    summary=summary,
                    resolution_note=(item.resolution_note or "").strip(),
                )
            )
        elif matched:
            # A progress, or an open naming a known thread: the same thread moved again.
            ops.append(ThreadOp(kind="progress", id=known[position].id, summary=summary))
        elif action == "progress":
            # An advance of a thread nobody knows never opens one.
            ops.append(ThreadOp(kind="skip", summary=summary, reason="unmatched-ref"))
        else:
            ops.append(
                ThreadOp(
                    kind="open",
                    summary=summary,
                    thread_type=item.thread_type,
                    deadline_chapter=resolve_thread_deadline(
                        item.deadline_chapter, chapter_number, total_chapters
                    ),
                )
            )
    return ops


def _due_by(chapter: int) -> str:
    # %d, not an f-string: a float deadline prints truncated and a string one raises.
    return " (due by Ch.%d)" % chapter  # noqa: UP031


@dataclass
class ThreadLabels:
    """The words around each line of :func:`render_known_threads`."""

    empty: str = "(none on record yet)"
    in_progress: str = "[in progress] "
    due: Callable[[int], str] = _due_by


DEFAULT_THREAD_LABELS = ThreadLabels()


def render_known_threads(rows: Sequence[Any], labels: ThreadLabels = DEFAULT_THREAD_LABELS) -> str:
    """One ``[Tn]`` line per row, or ``labels.empty`` when there is none."""
    if not rows:
        return labels.empty
    lines = []
    for number, row in enumerate(rows, start=1):
        marker = labels.in_progress if row.status == "progressing" else ""
        due = labels.due(row.deadline_chapter) if row.deadline_chapter else ""
        lines.append(f"[T{number}] {marker}{row.summary}{due}")
    return "\n".join(lines)
