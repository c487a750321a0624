"""Deploys sharing a store: a value of a format version a worker cannot read is read as
absent (flagged) and replaced by the worker's own on its next write, in process and in Redis,
so a rollback never leaves a newer deploy's value unreadable and unreplaced for good; and a
field this version does not write is never carried into a write (issue 35, point 4)."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import membrane.compile_state
from membrane import CompileResult, ContextCompiler
from membrane.state import (
    STATE_FORMAT_VERSION,
    InMemoryStateStore,
    RedisStateStore,
    StateStore,
    StateStoreWarning,
)
from membrane.state.keys import conversation_key

OLD, NEW = STATE_FORMAT_VERSION, STATE_FORMAT_VERSION + 1
TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]


def _stores(redis_client: Any) -> list[StateStore]:
    return [InMemoryStateStore(), RedisStateStore(redis_client, deadline_seconds=5.0)]


@pytest.mark.parametrize("which", [0, 1], ids=["in_process", "redis"])
def test_a_put_replaces_any_version(which: int, redis_client: Any) -> None:
    store = _stores(redis_client)[which]
    store.put("k", {"version": NEW, "room": 1})
    store.put("k", {"version": OLD, "room": 2})
    assert store.get("k") == {"version": OLD, "room": 2}
    store.put("k", {"version": NEW + 1, "room": 4})
    assert store.get("k") == {"version": NEW + 1, "room": 4}
    store.put("k", {"room": 5})
    assert store.get("k") == {"room": 5}


def test_redis_replaces_what_is_not_a_versioned_object(redis_client: Any) -> None:
    store = RedisStateStore(redis_client, deadline_seconds=5.0, ttl_seconds=60)
    for junk in (b"not json", b"[3]", b'{"version": "9"}', b'{"version": null}'):
        redis_client.set("membrane:state:k", junk)
        store.put("k", {"version": OLD})
        assert store.get("k") == {"version": OLD}
        assert 0 < redis_client.ttl("membrane:state:k") <= 60


def _history(turns: int) -> list[dict[str, Any]]:
    return [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"message {i}: locker L-{i * 7} belongs to team T{i}. " + "words " * 25,
        }
        for i in range(turns * 2)
    ]


def _compile(compiler: ContextCompiler, turn: int) -> CompileResult:
    return compiler.compile(
        [],
        f"Which locker has team T{turn}?",
        conversation_messages=_history(turn),
        conversation_id="c1",
        tools=TOOLS,
    )


@pytest.mark.parametrize("which", [0, 1], ids=["in_process", "redis"])
def test_after_a_rollback_the_old_deploy_takes_the_store_back(
    which: int, redis_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A newer deploy wrote the value, then was rolled back: the first compile of this version
    flags it, replays, and writes its own; the next fresh worker resumes from that."""
    store = _stores(redis_client)[which]
    key = conversation_key("c1")
    monkeypatch.setattr(membrane.compile_state, "STATE_FORMAT_VERSION", NEW)
    _compile(ContextCompiler(900, state_store=store), 20)
    assert (store.get(key) or {})["version"] == NEW
    monkeypatch.setattr(membrane.compile_state, "STATE_FORMAT_VERSION", OLD)
    with pytest.warns(StateStoreWarning, match="format version"):
        first = _compile(ContextCompiler(900, state_store=store), 21)
    assert first.metadata["state_discarded"] == ["conversation"]
    assert (store.get(key) or {})["version"] == OLD
    with warnings.catch_warnings():
        warnings.simplefilter("error", StateStoreWarning)
        second = _compile(ContextCompiler(900, state_store=store), 22)
    assert second.metadata["history_resume"] == "resumed"
    fresh = _compile(ContextCompiler(900, state_store=InMemoryStateStore()), 22)
    assert second.messages == fresh.messages


@pytest.mark.parametrize("which", [0, 1], ids=["in_process", "redis"])
def test_unknown_fields_are_dropped_at_once_and_never_carried(
    which: int, redis_client: Any
) -> None:
    store = _stores(redis_client)[which]
    key = conversation_key("c1")
    _compile(ContextCompiler(900, state_store=store), 20)
    saved = store.get(key)
    assert saved is not None and saved["version"] == OLD
    store.put(key, {**saved, "planted": "x" * 1_000_000})
    with warnings.catch_warnings():
        warnings.simplefilter("error", StateStoreWarning)
        result = _compile(ContextCompiler(900, state_store=store), 20)  # nothing new to save
    assert result.metadata["history_resume"] == "resumed"
    assert store.get(key) == saved
    store.put(key, {**saved, "planted": 1})
    _compile(ContextCompiler(900, state_store=store), 21)  # a turn that saves the cut
    assert "planted" not in (store.get(key) or {})


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 99)), min_size=1, max_size=12))
def test_after_any_puts_the_last_is_kept(redis_client: Any, puts: list[tuple[int, int]]) -> None:
    redis_client.delete("membrane:state:p")  # each example starts from an empty key
    for store in _stores(redis_client):
        for version, room in puts:
            store.put("p", {"version": version, "room": room})
        assert store.get("p") == {"version": puts[-1][0], "room": puts[-1][1]}
