"""The in-process state store is bounded and expires entries (issue 11, point 9).

Before, an :class:`InMemoryStateStore` kept one entry per conversation id forever (8,000 ids
reached a 169 MB plateau in the adversarial pass). Now it holds at most ``max_entries`` keys,
the least recently used leaving first, and ``ttl_seconds`` expires an entry that long after its
last write, as Redis's ``SET ... EX`` does.
"""

from __future__ import annotations

import tracemalloc
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from membrane import ContextCompiler
from membrane.errors import InvalidInputError
from membrane.state import InMemoryStateStore
from membrane.state.keys import conversation_key
from membrane.state.memory import DEFAULT_MAX_ENTRIES


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _state(i: int) -> dict[str, Any]:
    return {"share": 900 + i % 7, "events": i % 5, "room": 120 + i % 11}


def _fill(store: InMemoryStateStore, first: int, last: int) -> None:
    for i in range(first, last):
        store.put(f"membrane:conversation:id-{i:08d}", _state(i))


def test_memory_plateaus_for_many_conversation_ids() -> None:
    store = InMemoryStateStore()
    tracemalloc.start()
    try:
        _fill(store, 0, 2 * DEFAULT_MAX_ENTRIES)
        at_twice_the_bound, _ = tracemalloc.get_traced_memory()
        _fill(store, 2 * DEFAULT_MAX_ENTRIES, 6 * DEFAULT_MAX_ENTRIES)
        at_six_times, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(store) == DEFAULT_MAX_ENTRIES
    # Three times the ids, the same memory: the same number of entries of the same size.
    assert at_six_times <= at_twice_the_bound * 1.05 + 64 * 1024
    assert at_six_times < 10 * 1024 * 1024
    assert store.get("membrane:conversation:id-00000000") is None
    last = 6 * DEFAULT_MAX_ENTRIES - 1
    assert store.get(f"membrane:conversation:id-{last:08d}") == _state(last)


@given(
    st.integers(1, 20),
    st.lists(st.tuples(st.booleans(), st.integers(0, 40)), max_size=120),
)
def test_the_bound_evicts_the_least_recently_used(
    bound: int, operations: list[tuple[bool, int]]
) -> None:
    """Against a model: a list of keys in use order, trimmed from the front to the bound."""
    store = InMemoryStateStore(max_entries=bound)
    model: dict[int, dict[str, Any]] = {}
    order: list[int] = []
    for is_put, key in operations:
        if is_put:
            model[key] = _state(key)
            order = [k for k in order if k != key] + [key]
            while len(order) > bound:
                del model[order.pop(0)]
            store.put(str(key), _state(key))
        else:
            assert store.get(str(key)) == model.get(key)
            if key in model:
                order = [k for k in order if k != key] + [key]
        assert len(store) == len(model) <= bound


def test_entries_expire_ttl_seconds_after_their_last_write() -> None:
    clock = FakeClock()
    store = InMemoryStateStore(ttl_seconds=60, clock=clock)
    store.put("a", {"room": 1})
    clock.now += 59
    assert store.get("a") == {"room": 1}  # a read does not extend the entry's life
    clock.now += 1
    assert store.get("a") is None
    assert len(store) == 0
    store.put("b", {"room": 2})
    clock.now += 50
    store.put("b", {"room": 3})  # a write does
    clock.now += 50
    assert store.get("b") == {"room": 3}


def test_a_compiler_keeps_at_most_the_bound_of_conversations() -> None:
    store = InMemoryStateStore(max_entries=32)
    compiler = ContextCompiler(600, state_store=store)
    history = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"note {i} " + "word " * 40}
        for i in range(24)
    ]
    for n in range(200):
        result = compiler.compile(
            [], "which note?", conversation_messages=history, conversation_id=f"conv-{n}"
        )
        assert result.metadata["history_messages_dropped"] > 0  # each one stored a cut
    assert len(store) == 32
    assert store.get(conversation_key("conv-199")) is not None
    assert store.get(conversation_key("conv-0")) is None
    # A conversation whose state left the store compiles again and stores it again.
    compiler.compile([], "which note?", conversation_messages=history, conversation_id="conv-0")
    assert store.get(conversation_key("conv-0")) is not None


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"max_entries": 0}, "max_entries"),
        ({"max_entries": True}, "max_entries"),
        ({"max_entries": 1.5}, "max_entries"),
        ({"ttl_seconds": 0}, "ttl_seconds"),
        ({"ttl_seconds": -1}, "ttl_seconds"),
        ({"ttl_seconds": float("inf")}, "ttl_seconds"),
        ({"ttl_seconds": float("nan")}, "ttl_seconds"),
    ],
)
def test_bad_bounds_are_refused(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        InMemoryStateStore(**kwargs)
    assert info.value.field == field
