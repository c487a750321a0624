"""The in-process state store: JSON round trips, isolation, and sharing between compilers."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from membrane import CompileResult, ContextCompiler, MemoryItem
from membrane.state import InMemoryStateStore, StateStore

_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.text(max_size=20)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


def test_missing_key_is_none_and_protocol_holds() -> None:
    store = InMemoryStateStore()
    assert store.get("nope") is None
    assert isinstance(store, StateStore)
    assert len(store) == 0


@given(st.dictionaries(st.text(max_size=10), _json, max_size=6))
def test_round_trip(value: dict[str, Any]) -> None:
    store = InMemoryStateStore()
    store.put("k", value)
    assert store.get("k") == value
    assert len(store) == 1


def test_returned_dicts_are_independent_copies() -> None:
    store = InMemoryStateStore()
    original = {"room": 120, "lines": [1, 2], "nested": {"a": 1}}
    store.put("conv", original)
    original["room"] = 0
    original["lines"].append(3)
    first = store.get("conv")
    assert first == {"room": 120, "lines": [1, 2], "nested": {"a": 1}}
    assert first is not None
    first["nested"]["a"] = 99
    first["lines"].clear()
    assert store.get("conv") == {"room": 120, "lines": [1, 2], "nested": {"a": 1}}
    assert store.get("conv") is not store.get("conv")


def test_values_take_their_json_form() -> None:
    store = InMemoryStateStore()
    store.put("k", {"pair": (1, 2), "n": 3})
    assert store.get("k") == {"pair": [1, 2], "n": 3}


def test_unserialisable_values_are_refused_and_change_nothing() -> None:
    store = InMemoryStateStore()
    store.put("k", {"v": 1})
    with pytest.raises(TypeError):
        store.put("k", {"v": object()})
    assert store.get("k") == {"v": 1}


def test_put_replaces() -> None:
    store = InMemoryStateStore()
    store.put("k", {"v": 1, "old": True})
    store.put("k", {"v": 2})
    assert store.get("k") == {"v": 2}
    assert len(store) == 1


def test_concurrent_writers() -> None:
    store = InMemoryStateStore()

    def write(worker: int) -> None:
        for i in range(200):
            store.put(f"w{worker}:{i}", {"worker": worker, "i": i})

    threads = [threading.Thread(target=write, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(store) == 1600
    assert store.get("w7:199") == {"worker": 7, "i": 199}


def test_compilers_sharing_a_store_share_calibration() -> None:
    store = InMemoryStateStore()
    first = ContextCompiler(8000, model_id="openai/gpt-4o", state_store=store)
    second = ContextCompiler(8000, model_id="openai/gpt-4o", state_store=store)
    alone = ContextCompiler(8000, model_id="openai/gpt-4o")
    result = CompileResult(
        [], {}, {}, {"model_id": "openai/gpt-4o", "token_count": 97, "message_framing_tokens": 3}
    )
    assert first.observe(result, 130) == 1.3
    assert second.token_scale_for() == 1.3
    assert second.compile([MemoryItem(id="a", content="x")], "Hi").metadata["token_scale"] == 1.3
    assert alone.token_scale_for() == 1.0
    assert len(store) >= 1
