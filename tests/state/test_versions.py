"""Rolling deploys: a value of an unknown format version reads as absent, and no store lets an
older version overwrite a newer one (in process under its lock, in Redis by one EVAL)."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import membrane.compile_state
from membrane import CompileResult, ContextCompiler
from membrane.state import STATE_FORMAT_VERSION, InMemoryStateStore, RedisStateStore, StateStore
from membrane.state.keys import conversation_key

OLD, NEW = STATE_FORMAT_VERSION, STATE_FORMAT_VERSION + 1
TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]


def _stores(redis_client: Any) -> list[StateStore]:
    return [InMemoryStateStore(), RedisStateStore(redis_client, deadline_seconds=5.0)]


@pytest.mark.parametrize("which", [0, 1], ids=["in_process", "redis"])
def test_a_put_never_replaces_a_newer_version(which: int, redis_client: Any) -> None:
    store = _stores(redis_client)[which]
    store.put("k", {"version": NEW, "room": 1})
    store.put("k", {"version": OLD, "room": 2})
    assert store.get("k") == {"version": NEW, "room": 1}
    store.put("k", {"version": NEW, "room": 3})  # the same version replaces
    assert store.get("k") == {"version": NEW, "room": 3}
    store.put("k", {"version": NEW + 1, "room": 4})  # a newer one too
    assert store.get("k") == {"version": NEW + 1, "room": 4}
    store.put("k", {"room": 5})  # no version counts as 0
    assert store.get("k") == {"version": NEW + 1, "room": 4}


def test_redis_replaces_what_is_not_a_versioned_object(redis_client: Any) -> None:
    store = RedisStateStore(redis_client, deadline_seconds=5.0, ttl_seconds=60)
    for junk in (b"not json", b"[3]", b'{"version": "9"}', b'{"version": null}'):
        redis_client.set("membrane:state:k", junk)
        store.put("k", {"version": OLD})
        assert store.get("k") == {"version": OLD}
        assert 0 < redis_client.ttl("membrane:state:k") <= 60


def test_an_expired_newer_entry_does_not_hold_the_key() -> None:
    now = [0.0]
    store = InMemoryStateStore(ttl_seconds=10, clock=lambda: now[0])
    store.put("k", {"version": NEW})
    now[0] = 11.0
    store.put("k", {"version": OLD})
    assert store.get("k") == {"version": OLD}


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
def test_two_deploys_alternating(
    which: int, redis_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Turns alternate between a worker of the old deploy and one of the new."""
    store = _stores(redis_client)[which]
    old, new = (ContextCompiler(900, state_store=store) for _ in range(2))
    key = conversation_key("c1")
    for turn in range(10, 30):
        deploy, version = (old, OLD) if turn % 2 else (new, NEW)
        monkeypatch.setattr(membrane.compile_state, "STATE_FORMAT_VERSION", version)
        stored_before = store.get(key)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # another deploy's value is no corrupt value
            result = _compile(deploy, turn)
        assert "state_discarded" not in result.metadata
        stored = store.get(key)
        assert stored is not None and stored["version"] == NEW  # from the first new turn on
        if deploy is old:
            assert stored == stored_before  # the old deploy never overwrote the new
            # and it compiled as a worker that found nothing would
            monkeypatch.setattr(membrane.compile_state, "STATE_FORMAT_VERSION", OLD)
            fresh = _compile(ContextCompiler(900, state_store=InMemoryStateStore()), turn)
            assert result.messages == fresh.messages
        assert result.metadata["history_messages_dropped"] > 0
    assert {"room", "tools"} <= set(store.get(key) or {})  # the new deploy kept its state


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 99)), min_size=1, max_size=12))
def test_after_any_puts_the_last_of_the_newest_version_is_kept(
    redis_client: Any, puts: list[tuple[int, int]]
) -> None:
    redis_client.delete("membrane:state:p")  # each example starts from an empty key
    for store in _stores(redis_client):
        for version, room in puts:
            store.put("p", {"version": version, "room": room})
        newest = max(version for version, _ in puts)
        last = [room for version, room in puts if version == newest][-1]
        assert store.get("p") == {"version": newest, "room": last}
