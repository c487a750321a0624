"""Freshness decay: timestamps, weights and the order it produces, with an injected now."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from membrane.errors import InvalidInputError
from membrane.profile import freshness_weight, memory_timestamp, order_by_freshness
from membrane.records import EpisodicMemory, KernelMemoryObject, MemoryItem

NOW = datetime(2026, 6, 15, 12, 0, tzinfo=timezone.utc)
WEEK = timedelta(days=7)


def episode(ident: str, when: object) -> MemoryItem:
    return MemoryItem(
        id=ident, content=f"event {ident}", memory_type="episodic", metadata={"timestamp": when}
    )


def fact(ident: str) -> MemoryItem:
    return MemoryItem(id=ident, content=f"fact {ident}")


@pytest.mark.parametrize(
    ("memory", "expected"),
    [
        (EpisodicMemory(id="e", summary="s", occurred_at="2026-06-01T10:00:00Z"),
         datetime(2026, 6, 1, 10, tzinfo=timezone.utc)),
        (EpisodicMemory(id="e", summary="s", occurred_at="2026-06-01T12:00:00+02:00"),
         datetime(2026, 6, 1, 10, tzinfo=timezone.utc)),
        (EpisodicMemory(id="e", summary="s", occurred_at="2026-06-01"),
         datetime(2026, 6, 1, tzinfo=timezone.utc)),
        (episode("m", datetime(2026, 6, 1, 10)), datetime(2026, 6, 1, 10, tzinfo=timezone.utc)),
        (episode("m", date(2026, 6, 1)), datetime(2026, 6, 1, tzinfo=timezone.utc)),
        (episode("m", 0), datetime(1970, 1, 1, tzinfo=timezone.utc)),
        (episode("m", 1_780_000_000.5),
         datetime.fromtimestamp(1_780_000_000.5, tz=timezone.utc)),
        (KernelMemoryObject(id="k", memory_kind="episodic", content="c",
                            attributes={"occurred_at": "2026-01-01T00:00:00"}),
         datetime(2026, 1, 1, tzinfo=timezone.utc)),
        (EpisodicMemory(id="e", summary="s", occurred_at="yesterday"), None),
        (episode("m", "not a date"), None),
        (episode("m", True), None),
        (episode("m", 10**20), None),
        (EpisodicMemory(id="e", summary="s"), None),
        (fact("f"), None),
    ],
)  # fmt: skip
def test_memory_timestamp(memory: object, expected: datetime | None) -> None:
    assert memory_timestamp(memory) == expected


def test_unreadable_attribute_falls_back_to_metadata() -> None:
    class Record:
        id = "r"
        memory_kind = "episodic"
        content = "c"
        occurred_at = "last spring"
        metadata = {"timestamp": "2026-03-01T00:00:00Z"}  # noqa: RUF012

    assert memory_timestamp(Record()) == datetime(2026, 3, 1, tzinfo=timezone.utc)


def test_freshness_weight_values() -> None:
    assert freshness_weight(timedelta(0), WEEK) == 1.0
    assert freshness_weight(WEEK, WEEK) == 0.5
    assert freshness_weight(3 * WEEK, WEEK) == 0.125
    assert freshness_weight(timedelta(days=-3), WEEK) == 1.0
    assert freshness_weight(timedelta(days=1), timedelta(days=2)) == pytest.approx(2**-0.5)
    with pytest.raises(InvalidInputError, match="positive timedelta"):
        freshness_weight(WEEK, timedelta(0))


def test_order_by_freshness_values() -> None:
    memories = [
        episode("old", NOW - 2 * WEEK),  # position 1 / 0.25 -> 4
        fact("f1"),  # 2
        episode("new", NOW - timedelta(hours=1)),  # 3 / 0.996 -> 3.01
        fact("f2"),  # 4 (ties with "old": input order decides)
        episode("undated", "sometime"),  # 5
        episode("week", NOW - WEEK),  # 6 / 0.5 -> 12
        episode("future", NOW + WEEK),  # 7
    ]
    ordered = order_by_freshness(memories, now=NOW, half_life=WEEK)
    assert [m.id for m in ordered] == ["f1", "new", "old", "f2", "undated", "future", "week"]


def test_only_episodes_decay() -> None:
    old_fact = MemoryItem(id="f", content="x", metadata={"timestamp": NOW - 50 * WEEK})
    old_procedure = MemoryItem(
        id="p", content="y", memory_type="procedural", metadata={"timestamp": "2000-01-01"}
    )
    memories = [old_fact, old_procedure, fact("z")]
    assert order_by_freshness(memories, now=NOW, half_life=WEEK) == memories


def test_very_old_episodes_go_last_instead_of_failing() -> None:
    ancient = episode("ancient", datetime(1900, 1, 1, tzinfo=timezone.utc))
    memories = [ancient, fact("a"), fact("b")]
    ordered = order_by_freshness(memories, now=NOW, half_life=timedelta(seconds=1))
    assert [m.id for m in ordered] == ["a", "b", "ancient"]


def test_naive_now_is_utc_and_now_must_be_a_datetime() -> None:
    memories = [episode("a", NOW - WEEK), fact("b")]
    naive = NOW.replace(tzinfo=None)
    assert order_by_freshness(memories, now=naive, half_life=WEEK) == order_by_freshness(
        memories, now=NOW, half_life=WEEK
    )
    with pytest.raises(TypeError, match="now must be a datetime"):
        order_by_freshness(memories, now="2026-01-01", half_life=WEEK)  # type: ignore[arg-type]


ages = st.one_of(st.none(), st.integers(0, 60 * 24 * 60).map(lambda m: timedelta(minutes=m)))


@given(plan=st.lists(st.tuples(st.booleans(), ages), max_size=15))
def test_order_invariants(plan: list[tuple[bool, timedelta | None]]) -> None:
    memories = []
    for i, (is_episode, age) in enumerate(plan):
        if is_episode:
            memories.append(episode(f"e{i}", None if age is None else NOW - age))
        else:
            memories.append(fact(f"f{i}"))
    ordered = order_by_freshness(memories, now=NOW, half_life=WEEK)
    assert sorted(ordered, key=memories.index) == memories  # a permutation
    where = {m.id: ordered.index(m) for m in ordered}
    for i, a in enumerate(memories):
        for b in memories[i + 1 :]:
            ta, tb = memory_timestamp(a), memory_timestamp(b)
            if tb is None:
                if ta is None:
                    assert where[a.id] < where[b.id]  # undated ones keep their relative order
            elif ta is None or ta >= tb:
                # Decay only moves memories back, and older ones further.
                assert where[a.id] < where[b.id]
    # With every dated episode brand new, the order is the input order.
    brand_new = [episode(m.id, NOW) if memory_timestamp(m) is not None else m for m in memories]
    assert order_by_freshness(brand_new, now=NOW, half_life=WEEK) == brand_new
