"""Kind ordering and the reranker hook."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from membrane.errors import InvalidInputError
from membrane.profile import apply_reranker, order_by_kind
from membrane.records import MemoryItem, ProceduralMemory, SemanticMemory, memory_kind
from tests.strategies import memory_items


def test_order_by_kind_values() -> None:
    memories = [
        MemoryItem(id="s1", content="a"),
        MemoryItem(id="e1", content="b", memory_type="episodic"),
        MemoryItem(id="p1", content="c", memory_type="procedural"),
        SemanticMemory(id="s2", subject="x", predicate="is", object="y"),
        ProceduralMemory(id="p2", instruction="do"),
    ]
    assert [m.id for m in order_by_kind(memories, ["procedural"])] == [
        "p1",
        "p2",
        "s1",
        "e1",
        "s2",
    ]
    assert [m.id for m in order_by_kind(memories, ["episodic", "procedural"])] == [
        "e1",
        "p1",
        "p2",
        "s1",
        "s2",
    ]
    assert order_by_kind(memories, []) == memories


@given(memories=memory_items(), kinds=st.permutations(["semantic", "episodic", "procedural"]))
def test_order_by_kind_is_a_stable_partition(memories: list[MemoryItem], kinds: list[str]) -> None:
    first = kinds[:2]
    ordered = order_by_kind(memories, first)
    rank = [first.index(memory_kind(m)) if memory_kind(m) in first else 2 for m in ordered]
    assert rank == sorted(rank)
    for group in range(3):
        in_group = [m for m, r in zip(ordered, rank, strict=True) if r == group]
        assert in_group == [m for m in memories if m in in_group]


def test_reranker_reorders_and_filters() -> None:
    memories = [MemoryItem(id=str(i), content=f"text {i}") for i in range(4)]
    seen: list[tuple[str, list[str]]] = []

    def reverse_drop_first(query: str, items: Sequence[Any]) -> list[Any]:
        seen.append((query, [m.id for m in items]))
        return list(reversed(items))[:-1]

    out = apply_reranker(reverse_drop_first, "q?", memories)
    assert [m.id for m in out] == ["3", "2", "1"]
    assert all(any(o is m for m in memories) for o in out)
    assert seen == [("q?", ["0", "1", "2", "3"])]

    def as_generator(_query: str, items: Sequence[Any]) -> Iterable[Any]:
        yield from items[1:]

    assert apply_reranker(as_generator, "", memories) == memories[1:]


def test_reranker_must_return_the_same_objects_once() -> None:
    memories = [MemoryItem(id="a", content="x"), MemoryItem(id="b", content="y")]
    with pytest.raises(InvalidInputError, match="not one of the memories") as info:
        apply_reranker(lambda _q, items: [MemoryItem(id="a", content="x")], "", memories)
    assert info.value.field == "reranker"
    with pytest.raises(InvalidInputError, match="twice"):
        apply_reranker(lambda _q, items: [items[0], items[0]], "", memories)
    with pytest.raises(InvalidInputError, match="must return a list"):
        apply_reranker(lambda _q, items: None, "", memories)  # type: ignore[arg-type,return-value]
    with pytest.raises(InvalidInputError, match="must return a list"):
        apply_reranker(lambda _q, items: "ab", "", memories)
