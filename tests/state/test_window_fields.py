"""The window's per-turn fields of a conversation's state: decoded once while the stored text
stays, read afresh when anyone writes, never remembered from a value that failed its checks."""

from __future__ import annotations

from typing import Any

import pytest

from membrane.compile_state import StateScope, StoreNotes
from membrane.state import STATE_FORMAT_VERSION, InMemoryStateStore, StateStoreWarning
from membrane.state.protocol import VERSION_FIELD


def _state(**fields: Any) -> dict[str, Any]:
    return {VERSION_FIELD: STATE_FORMAT_VERSION, **fields}


def _counted(store: InMemoryStateStore) -> list[str]:
    reads: list[str] = []
    real_get = store.get
    store.get = lambda key: reads.append(key) or real_get(key)  # type: ignore[method-assign]
    return reads


def test_the_fields_are_decoded_once_while_the_stored_text_stays() -> None:
    store, scope = InMemoryStateStore(), StateScope()
    key = scope.view(store, "c", StoreNotes()).key
    store.put(key, _state(share=10, events=2, room=30, tracker={"saved": 1}))
    reads = _counted(store)
    fields = scope.view(store, "c", StoreNotes()).window_fields
    assert fields == {"share": 10, "events": 2, "room": 30, "tracker": True}
    assert scope.view(store, "c", StoreNotes()).window_fields == fields
    assert len(reads) == 1

    store.put(key, _state(share=10, events=2, room=40))  # another writer
    assert scope.view(store, "c", StoreNotes()).window_fields == {
        "share": 10,
        "events": 2,
        "room": 40,
    }
    assert len(reads) == 2

    view = scope.view(store, "c", StoreNotes())
    view.write_conversation_state({"events": 3})
    assert view.save() == 1
    after = len(reads)
    assert scope.view(store, "c", StoreNotes()).window_fields["events"] == 3
    assert len(reads) == after  # the saving view left them known
    assert store.get(key) == _state(share=10, events=3, room=40)


def test_a_value_that_fails_its_checks_is_never_remembered() -> None:
    store, scope = InMemoryStateStore(), StateScope()
    key = scope.view(store, "c", StoreNotes()).key
    store.put(key, _state(room=-1))
    for _ in range(2):
        notes = StoreNotes()
        with pytest.warns(StateStoreWarning):
            assert scope.view(store, "c", notes).window_fields == {}
        assert notes.discarded == ["conversation"]


def test_a_view_that_read_the_whole_state_answers_from_it() -> None:
    store, scope = InMemoryStateStore(), StateScope()
    view = scope.view(store, "c", StoreNotes())
    store.put(view.key, _state(share=5, events=1, room=9, tracker={}))
    view.drop_conversation_fields(("room", "tracker"))
    assert view.window_fields == {"share": 5, "events": 1}
