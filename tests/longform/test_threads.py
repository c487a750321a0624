"""membrane.longform.threads: the published decisions, with membrane's typed results and
argument checks. The values are compared with the published package call by call in
test_differential.py; these tests pin the rules in readable cases."""

from __future__ import annotations

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
    OwedThread,
    PayoffPlan,
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
        (18, 12, 40, 18),
        ("18", 12, 40, 18),
        (" 18 ", 12, 40, 18),
        (18.9, 12, 40, 18),
        ("1e1", 5, 40, 10),
        (55, 12, 40, 40),  # never past the end
        (5, 10, 50, 50),  # a past chapter reads as the ending
        (12, 12, 40, 40),  # the chapter that opens it cannot also be its deadline
        (None, 12, 40, 40),
        ("ch. 18", 12, 40, 40),  # not a number: the ending
        ("nan", 12, 40, 40),
        (None, 12, 0, 22),  # length unknown: a fixed span ahead
        (0, 40, 40, 50),  # already at the end of the plan
        (55, 12, 0, 55),  # length unknown: any later chapter is kept
    ],
)
def test_resolve_thread_deadline(raw: Any, chapter: int, total: int, expected: int) -> None:
    assert resolve_thread_deadline(raw, chapter, total) == expected


def test_an_infinite_deadline_is_an_overflow_as_published() -> None:
    with pytest.raises(OverflowError):
        resolve_thread_deadline(float("inf"), 3, 10)


@given(
    st.one_of(st.none(), st.integers(-50, 500), st.text(max_size=5), st.floats(-100, 500)),
    st.integers(0, 300),
    st.integers(0, 300),
)
def test_deadline_is_never_dead_and_never_past_a_known_end(
    raw: Any, chapter: int, total: int
) -> None:
    deadline = resolve_thread_deadline(raw, chapter, total)
    assert deadline > chapter
    if total > chapter:
        assert deadline <= total
    else:
        assert deadline >= chapter + 1
    assert DEADLINE_FALLBACK_SPAN == 10


@pytest.mark.parametrize(("chapter", "total"), [(-1, 10), (3, -1), (1.0, 10), (True, 10)])
def test_deadline_rejects_bad_chapter_numbers(chapter: Any, total: Any) -> None:
    with pytest.raises(InvalidInputError):
        resolve_thread_deadline(5, chapter, total)


# ---------------------------------------------------------------- urgency


def thread(tid: str, status: str = "open", **fields: int) -> KnownThread:
    return KnownThread(tid, status, f"summary of {tid}", **fields)


def test_urgency_order() -> None:
    rows = [
        thread("no-deadline", deadline_chapter=0),
        thread("later", deadline_chapter=30, last_activated_chapter=5),
        thread("due-now", deadline_chapter=10),
        thread("overdue", deadline_chapter=4),
        thread("later-stale", deadline_chapter=30, last_activated_chapter=1),
        thread("sooner", deadline_chapter=20),
    ]
    ordered = sorted(rows, key=lambda t: compare_thread_urgency(t, 10))
    assert [t.id for t in ordered] == [
        "overdue", "due-now", "sooner", "later-stale", "later", "no-deadline",
    ]  # fmt: skip
    assert compare_thread_urgency(thread("x", deadline_chapter=4, opened_at_chapter=2), 10) == (
        0, 0, 4, 0, 2,
    )  # fmt: skip


@given(st.randoms(use_true_random=False))
def test_known_thread_order_does_not_depend_on_row_order(rnd: random.Random) -> None:
    # Equal urgency keys are broken by id, so the [Tn] numbering is reproducible.
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


# ---------------------------------------------------------------- payoff


def test_plan_owed_payoff_escalates_with_lateness() -> None:
    letter = OwedThread(
        "letter", opened_at_chapter=2, deadline_chapter=5, overdue_by=MUST_RESOLVE_OVERDUE
    )
    chest = OwedThread("chest", opened_at_chapter=1, deadline_chapter=7, overdue_by=1)
    assert plan_owed_payoff([chest, letter], 8, 40) == PayoffPlan(letter, (chest,))
    # Less than three chapters late: nothing is forced; the most overdue still leads.
    soft = OwedThread("letter", 2, 6, MUST_RESOLVE_OVERDUE - 1)
    assert plan_owed_payoff([chest, soft], 8, 40) == PayoffPlan(None, (soft, chest))


def test_ties_go_to_the_thread_opened_first() -> None:
    a = OwedThread("a", opened_at_chapter=5, deadline_chapter=6, overdue_by=4)
    b = OwedThread("b", opened_at_chapter=3, deadline_chapter=6, overdue_by=4)
    assert plan_owed_payoff([a, b], 10, 0).must_resolve is b


def test_the_last_quarter_forces_a_payoff() -> None:
    fresh = OwedThread("fresh", opened_at_chapter=28, deadline_chapter=30, overdue_by=0)
    assert plan_owed_payoff([fresh], 29, 40).must_resolve is None  # ceil(40 * 3 / 4) = 30
    assert plan_owed_payoff([fresh], 30, 40).must_resolve is fresh
    assert plan_owed_payoff([fresh], 30, 0).must_resolve is None  # length unknown


def test_nothing_owed() -> None:
    assert plan_owed_payoff([], 10, 40) == PayoffPlan(None, ())


# ---------------------------------------------------------------- planning


KNOWN = [KnownThread("k1"), KnownThread("k2", status="progressing"), KnownThread("k3")]


def test_plan_applies_open_progress_resolve() -> None:
    plan = plan_thread_ops(
        [
            RawThreadItem(action="open", summary="A stranger knows her name", deadline_chapter=0),
            RawThreadItem(action="progress", ref="T1", summary="The letter's seal is traced"),
            RawThreadItem(action="resolve", ref="t2", summary="Brother found",
                          resolution_note=" in the mill "),
            {"action": "open", "ref": "T3", "summary": "The chest again"},  # names a known one
        ],
        KNOWN,
        chapter_number=7,
        total_chapters=30,
    )  # fmt: skip
    assert plan.skipped == ()
    assert [(op.kind, op.id, op.index) for op in plan.ops] == [
        ("open", None, 0), ("progress", "k1", 1), ("resolve", "k2", 2), ("progress", "k3", 3),
    ]  # fmt: skip
    assert plan.ops[0].deadline_chapter == 30
    assert plan.ops[2].resolution_note == "in the mill"


def test_plan_skips_with_reasons() -> None:
    plan = plan_thread_ops(
        [
            RawThreadItem(action="open", summary="   "),
            RawThreadItem(action="resolve", ref="T9", summary="an invented id"),
            RawThreadItem(action="progress", ref="T0", summary="no such thread"),
            RawThreadItem(action="resolve", ref="T1", summary="closed"),
            RawThreadItem(action="progress", ref="T1", summary="already closed in this batch"),
        ],
        KNOWN,
        chapter_number=7,
        total_chapters=30,
    )
    assert [(s.kind, s.reason) for s in plan.steps] == [
        ("skip", "no-summary"), ("skip", "unmatched-ref"), ("skip", "unmatched-ref"),
        ("resolve", None), ("skip", "already-resolved"),
    ]  # fmt: skip
    assert [s.index for s in plan.skipped] == [0, 1, 2, 4]


def test_only_the_first_max_ops_proposals_are_read() -> None:
    items = [RawThreadItem(summary=f"thread {i}") for i in range(MAX_THREAD_OPS_PER_CHAPTER + 3)]
    assert len(plan_thread_ops(items, [], 1, 50).steps) == MAX_THREAD_OPS_PER_CHAPTER
    assert len(plan_thread_ops(items, [], 1, 50, max_ops=2).steps) == 2


def test_unknown_actions_open_or_advance_as_published() -> None:
    # Only "resolve" and "progress" are special; any other action opens, or advances a thread
    # it names.
    plan = plan_thread_ops(
        [
            {"action": "advance", "summary": "new"},
            {"action": "advance", "ref": "T1", "summary": "x"},
        ],
        KNOWN,
        1,
        50,
    )
    assert [(op.kind, op.id) for op in plan.ops] == [("open", None), ("progress", "k1")]


def test_plan_rejects_malformed_input() -> None:
    with pytest.raises(InvalidInputError):
        plan_thread_ops(["not a proposal"], KNOWN, 1, 10)  # type: ignore[list-item]
    with pytest.raises(InvalidInputError):
        plan_thread_ops([], KNOWN, 1, 10, max_ops=-1)


def test_mapping_items_ignore_unknown_keys() -> None:
    plan = plan_thread_ops([{"summary": "x", "confidence": 0.9}], [], 1, 10)
    assert plan.ops == (ThreadOp(kind="open", summary="x", deadline_chapter=10, index=0),)


# ---------------------------------------------------------------- rendering


def test_render_known_threads() -> None:
    rows = [
        KnownThread("a", "open", "Who sent the letter?", deadline_chapter=12),
        KnownThread("b", "progressing", "The missing brother"),
    ]
    assert render_known_threads(rows) == (
        "[T1] Who sent the letter? (due by Ch.12)\n[T2] [in progress] The missing brother"
    )
    assert render_known_threads([]) == DEFAULT_THREAD_LABELS.empty == "(none on record yet)"


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
