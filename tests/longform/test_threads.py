from __future__ import annotations

import math
import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from membrane.errors import InvalidInputError
from membrane.longform import (
    DEADLINE_FALLBACK_SPAN,
    DEFAULT_THREAD_LABELS,
    MAX_THREAD_OPS_PER_CHAPTER,
    MUST_RESOLVE_OVERDUE,
    UNRESOLVED_THREAD_STATUSES,
    KnownThread,
    RawThreadItem,
    ThreadLabels,
    ThreadOp,
    compare_thread_urgency,
    is_unresolved,
    plan_owed_payoff,
    plan_thread_ops,
    render_known_threads,
    resolve_thread_deadline,
    select_known_threads,
)


def test_unresolved_has_one_definition() -> None:
    assert UNRESOLVED_THREAD_STATUSES == ("open", "progressing")
    assert is_unresolved("open") and is_unresolved("progressing")
    assert not is_unresolved("resolved")
    assert not is_unresolved("OPEN")


# ---------------------------------------------------------------- deadlines


@pytest.mark.parametrize(
    ("raw", "chapter", "total", "expected"),
    [
        (0, 12, 40, 40),  # 0 means the ending
        ("0", 12, 40, 40),
        ("the ending", 12, 40, 40),
        ("Final chapter", 12, 40, 40),
        (18, 12, 40, 18),
        ("18", 12, 40, 18),
        ("ch. 18", 12, 40, 18),
        ("Chapter 18", 12, 40, 18),
        (18.9, 12, 40, 18),
        (55, 12, 40, 40),  # never past the end
        (None, 12, 40, 22),  # missing: a fixed span ahead
        ("soon", 12, 40, 22),
        (-3, 12, 40, 22),
        (5, 12, 40, 22),  # already past: unusable
        (12, 12, 40, 22),  # the chapter that opens it cannot also be its deadline
        (True, 12, 40, 22),
        (math.nan, 12, 40, 22),
        (math.inf, 12, 40, 22),
        ([18], 12, 40, 22),
        (None, 35, 40, 40),  # the span is capped by the end too
        (0, 40, 40, 40),  # in the final chapter, everything is due now
        (0, 12, 0, 22),  # length unknown: the ending cannot be located
        (55, 12, 0, 55),
        (0, 45, 40, 55),  # already past the planned length: treated as unknown
    ],
)
def test_resolve_thread_deadline(raw: Any, chapter: int, total: int, expected: int) -> None:
    assert resolve_thread_deadline(raw, chapter, total) == expected


def test_fallback_span() -> None:
    assert DEADLINE_FALLBACK_SPAN == 10


@given(
    st.one_of(
        st.none(),
        st.integers(-100, 10_000),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=12),
        st.sampled_from(["end", "ending", "0", "ch 7", "Chapter 300"]),
    ),
    st.integers(0, 5000),
    st.integers(0, 5000),
)
def test_deadline_is_never_dead_and_never_past_the_end(raw: Any, chapter: int, total: int) -> None:
    deadline = resolve_thread_deadline(raw, chapter, total)
    assert deadline > 0
    if total > 0 and chapter <= total:
        assert chapter <= deadline <= total
        assert deadline > chapter or chapter == total
    else:
        assert deadline > chapter


@pytest.mark.parametrize(("chapter", "total"), [(-1, 10), (3, -1), (1.0, 10), (True, 10)])
def test_deadline_rejects_bad_chapter_numbers(chapter: Any, total: Any) -> None:
    with pytest.raises(InvalidInputError):
        resolve_thread_deadline(5, chapter, total)


# ---------------------------------------------------------------- urgency and payoff


def thread(tid: str, status: str = "open", **fields: int) -> KnownThread:
    return KnownThread(tid, status, f"summary of {tid}", **fields)


def test_urgency_order() -> None:
    rows = [
        thread("no-deadline", deadline_chapter=0),
        thread("later", deadline_chapter=30),
        thread("due-now", deadline_chapter=10),
        thread("overdue", deadline_chapter=4),
        thread("later-stale", deadline_chapter=30, last_activated_chapter=1),
        thread("later-fresh", deadline_chapter=30, last_activated_chapter=9),
    ]
    ordered = sorted(rows, key=lambda t: compare_thread_urgency(t, 10))
    assert [t.id for t in ordered] == [
        "overdue",
        "due-now",
        "later",
        "later-stale",
        "later-fresh",
        "no-deadline",
    ]


@given(st.randoms(use_true_random=False))
def test_urgency_order_does_not_depend_on_row_order(rnd: random.Random) -> None:
    rows = [
        thread(f"t{i}", deadline_chapter=d, last_activated_chapter=a, opened_at_chapter=o)
        for i, (d, a, o) in enumerate([(5, 1, 1), (5, 1, 1), (0, 2, 1), (9, 1, 3), (5, 0, 0)])
    ]
    shuffled = rows[:]
    rnd.shuffle(shuffled)
    assert select_known_threads(shuffled, 7) == select_known_threads(rows, 7)


def test_progressing_threads_stay_visible() -> None:
    # The ratchet: a list that only shows "open" hides advanced threads, which then can never
    # be cited again and so never resolved.
    rows = [thread("a", "open"), thread("b", "progressing"), thread("c", "resolved")]
    known = select_known_threads(rows, 5)
    assert [t.id for t in known] == ["a", "b"]
    assert "summary of b" in render_known_threads(known)
    plan = plan_thread_ops(
        [{"action": "resolve", "ref": "T2", "summary": "b closes"}], known, 5, 20
    )
    assert [(op.kind, op.id) for op in plan.ops] == [("resolve", "b")]


def test_select_known_threads_limit() -> None:
    rows = [thread(f"t{i}", deadline_chapter=i + 1) for i in range(5)]
    assert [t.id for t in select_known_threads(rows, 1, limit=2)] == ["t0", "t1"]


def test_plan_owed_payoff_escalates_with_lateness() -> None:
    rows = [
        thread("late-a", deadline_chapter=5, opened_at_chapter=1),
        thread("late-b", "progressing", deadline_chapter=6, opened_at_chapter=2),
        thread("slightly-late", deadline_chapter=9),
        thread("due-now", deadline_chapter=10),
        thread("not-yet", deadline_chapter=15),
        thread("no-deadline"),
        thread("closed", "resolved", deadline_chapter=2),
    ]
    plan = plan_owed_payoff(rows, 10, 40)
    assert not plan.final_chapter
    assert [(o.thread.id, o.overdue_by, o.must_resolve) for o in plan.owed] == [
        ("late-a", 5, True),
        ("late-b", 4, False),  # also long overdue, but one forced payoff per chapter
        ("slightly-late", 1, False),
        ("due-now", 0, False),
    ]
    assert [o.thread.id for o in plan.must_resolve] == ["late-a"]
    assert [o.thread.id for o in plan.may_advance] == ["late-b", "slightly-late", "due-now"]
    both = plan_owed_payoff(rows, 10, 40, max_must_resolve=2)
    assert [o.thread.id for o in both.must_resolve] == ["late-a", "late-b"]
    assert not plan_owed_payoff(rows, 10, 40, max_must_resolve=0).must_resolve


def test_threshold_for_must_resolve() -> None:
    assert MUST_RESOLVE_OVERDUE == 3
    rows = [thread("x", deadline_chapter=10)]
    assert not plan_owed_payoff(rows, 12, 40).owed[0].must_resolve
    assert plan_owed_payoff(rows, 13, 40).owed[0].must_resolve


def test_final_chapter_owes_everything_unresolved() -> None:
    rows = [
        thread("not-yet", deadline_chapter=40),
        thread("no-deadline"),
        thread("progressing", "progressing", deadline_chapter=38),
        thread("closed", "resolved"),
    ]
    plan = plan_owed_payoff(rows, 40, 40)
    assert plan.final_chapter
    assert {o.thread.id for o in plan.owed} == {"not-yet", "no-deadline", "progressing"}
    assert all(o.must_resolve for o in plan.owed)
    assert plan.owed[0].thread.id == "progressing"  # the overdue one leads


def test_nothing_owed() -> None:
    assert plan_owed_payoff([], 3, 10).owed == ()
    assert plan_owed_payoff([thread("a", deadline_chapter=9)], 3, 10).owed == ()


# ---------------------------------------------------------------- plan_thread_ops

KNOWN = [
    KnownThread("k1", "open"),
    KnownThread("k2", "progressing"),
    KnownThread("k3", "resolved"),
]


def kinds(plan: Any) -> list[tuple[str, str | None]]:
    return [(op.kind, op.id) for op in plan.ops]


def reasons(plan: Any) -> list[tuple[int, str]]:
    return [(r.index, r.reason) for r in plan.rejected]


def test_plan_accepts_open_progress_resolve() -> None:
    plan = plan_thread_ops(
        [
            RawThreadItem(action="open", summary="A stranger knows Lin's name", deadline_chapter=0),
            RawThreadItem(action="progress", ref="T1", summary="The key fits the chest"),
            RawThreadItem(action="resolve", ref="[T2]", summary="The map", resolution_note="Burnt"),
        ],
        KNOWN,
        chapter_number=8,
        total_chapters=30,
    )
    assert plan.rejected == ()
    assert plan.ops == (
        ThreadOp(
            kind="open",
            summary="A stranger knows Lin's name",
            index=0,
            deadline_chapter=30,
        ),
        ThreadOp(kind="progress", summary="The key fits the chest", index=1, id="k1"),
        ThreadOp(kind="resolve", summary="The map", index=2, id="k2", resolution_note="Burnt"),
    )


def test_plan_rejects_with_reasons() -> None:
    plan = plan_thread_ops(
        [
            {"action": "open", "summary": "  "},
            {"action": "explode", "summary": "x"},
            {"action": "progress", "ref": "T9", "summary": "invented id"},
            {"action": "resolve", "ref": "nonsense", "summary": "no id"},
            {"action": "progress", "ref": "T3", "summary": "already closed on record"},
            {"action": "resolve", "ref": "t1", "summary": "closes k1"},
            {"action": "progress", "ref": "T1", "summary": "k1 again after closing"},
            {"summary": "A new debt"},
            {"action": "open", "summary": "a NEW debt"},
        ],
        KNOWN,
        chapter_number=8,
        total_chapters=30,
    )
    assert reasons(plan) == [
        (0, "missing-summary"),
        (1, "unknown-action"),
        (2, "unknown-reference"),
        (3, "unknown-reference"),
        (4, "already-resolved"),
        (6, "already-resolved"),
        (8, "duplicate"),
    ]
    assert kinds(plan) == [("resolve", "k1"), ("open", None)]
    assert plan.ops[1].deadline_chapter == 18
    assert all(r.detail for r in plan.rejected)


def test_an_open_that_names_a_known_thread_advances_it() -> None:
    plan = plan_thread_ops(
        [{"action": "open", "ref": "T2", "summary": "moved again"}], KNOWN, 8, 30
    )
    assert kinds(plan) == [("progress", "k2")]
    implicit = plan_thread_ops([{"ref": "T1", "summary": "no action given"}], KNOWN, 8, 30)
    assert kinds(implicit) == [("progress", "k1")]


def test_an_open_with_an_unknown_reference_opens() -> None:
    plan = plan_thread_ops([{"action": "new", "ref": "T99", "summary": "fresh"}], KNOWN, 8, 30)
    assert kinds(plan) == [("open", None)]


@pytest.mark.parametrize("ref", ["T1", "t1", " T1 ", "[T1]", "[t 1]", 1, "1"])
def test_reference_forms(ref: Any) -> None:
    plan = plan_thread_ops([{"action": "advance", "ref": ref, "summary": "s"}], KNOWN, 8, 30)
    assert kinds(plan) == [("progress", "k1")]


@pytest.mark.parametrize("ref", ["T0", "T-1", "X1", "", None, True, "T1.5"])
def test_unusable_references(ref: Any) -> None:
    plan = plan_thread_ops([{"action": "resolve", "ref": ref, "summary": "s"}], KNOWN, 8, 30)
    assert reasons(plan) == [(0, "unknown-reference")]


def test_cap_counts_accepted_operations_only() -> None:
    items = [{"summary": ""}] * 3 + [{"summary": f"thread {i}"} for i in range(12)]
    plan = plan_thread_ops(items, [], 1, 50)
    assert len(plan.ops) == MAX_THREAD_OPS_PER_CHAPTER == 10
    assert [r.reason for r in plan.rejected] == ["missing-summary"] * 3 + ["over-cap"] * 2
    assert len(plan_thread_ops(items, [], 1, 50, max_ops=2).ops) == 2


def test_plan_rejects_malformed_input() -> None:
    with pytest.raises(InvalidInputError) as info:
        plan_thread_ops(["open a thread"], [], 1, 10)  # type: ignore[list-item]
    assert info.value.field == "items[0]"
    with pytest.raises(InvalidInputError):
        plan_thread_ops([], [], 1, 10, max_ops=-1)


def test_mapping_items_ignore_unknown_keys() -> None:
    plan = plan_thread_ops([{"summary": "s", "confidence": 0.9, "type": "mystery"}], [], 1, 10)
    assert kinds(plan) == [("open", None)]


raw_items = st.builds(
    RawThreadItem,
    action=st.sampled_from([None, "open", "progress", "resolve", "advance", "close", "zap"]),
    ref=st.one_of(st.none(), st.integers(0, 6).map(lambda n: f"T{n}")),
    summary=st.sampled_from([None, "", "a", "b", "c", "d"]),
    deadline_chapter=st.one_of(st.none(), st.integers(-2, 60)),
)
known_rows = st.lists(
    st.builds(
        KnownThread,
        id=st.uuids().map(str),
        status=st.sampled_from(["open", "progressing", "resolved"]),
    ),
    max_size=5,
)


@given(st.lists(raw_items, max_size=20), known_rows, st.integers(0, 40), st.integers(0, 60))
def test_plan_invariants(
    items: list[RawThreadItem], known: list[KnownThread], chapter: int, total: int
) -> None:
    plan = plan_thread_ops(items, known, chapter, total, max_ops=6)
    assert len(plan.ops) <= 6
    # Every proposal is accounted for exactly once, in order.
    indices = sorted([op.index for op in plan.ops] + [r.index for r in plan.rejected])
    assert indices == list(range(len(items)))
    assert [op.index for op in plan.ops] == sorted(op.index for op in plan.ops)
    by_id = {t.id: t for t in known}
    resolved: set[str] = set()
    for op in plan.ops:
        assert op.summary
        if op.kind == "open":
            assert op.id is None
            assert op.deadline_chapter > 0
        else:
            assert op.id in by_id
            assert is_unresolved(by_id[op.id].status)
            assert op.id not in resolved  # nothing happens to a thread after it is resolved
            if op.kind == "resolve":
                resolved.add(op.id)


# ---------------------------------------------------------------- rendering


def test_render_known_threads() -> None:
    rows = [
        KnownThread("a", "open", "Who sent the letter?", deadline_chapter=12),
        KnownThread("b", "progressing", "The missing brother"),
    ]
    assert render_known_threads(rows) == (
        "[T1] Who sent the letter? (due by Ch.12)\n[T2] [in progress] The missing brother"
    )
    assert render_known_threads([]) == DEFAULT_THREAD_LABELS.empty == "(no open threads yet)"


def test_render_with_labels_in_the_documents_language() -> None:
    labels = ThreadLabels(
        empty="（なし）", in_progress="【進行中】", due=lambda n: f"（第{n}章まで）"
    )
    rows = [KnownThread("a", "progressing", "手紙の差出人", deadline_chapter=7)]
    assert render_known_threads(rows, labels) == "[T1] 【進行中】手紙の差出人（第7章まで）"
    assert render_known_threads([], labels) == "（なし）"
    formatted = ThreadLabels(due=" [by {chapter}]")
    assert render_known_threads(rows, formatted) == "[T1] [in progress] 手紙の差出人 [by 7]"


def test_rendered_numbers_are_the_references_plan_thread_ops_reads() -> None:
    rows = [KnownThread(f"id{i}", "open", f"thread {i}", deadline_chapter=20 - i) for i in range(4)]
    known = select_known_threads(rows, 10)
    rendered = render_known_threads(known).splitlines()
    for line_number, line in enumerate(rendered, start=1):
        ref = line.split("]")[0].lstrip("[")
        plan = plan_thread_ops([{"action": "progress", "ref": ref, "summary": "x"}], known, 10, 30)
        assert plan.ops[0].id == known[line_number - 1].id
        assert known[line_number - 1].summary in line
