"""The Redis state store against a real redis-server."""

from __future__ import annotations

from typing import Any

import pytest

from membrane.compiler import ContextCompiler
from membrane.errors import StoreUnavailable
from membrane.records import MemoryItem
from membrane.state.keys import conversation_key
from membrane.state.redis import (
    RedisStateStore,
    get_ref_map_for_conversation,
    set_ref_map_for_conversation,
)


def test_round_trip_and_prefix(redis_client: Any) -> None:
    store = RedisStateStore(redis_client, prefix="t:", deadline_seconds=5.0)
    assert store.get("k") is None
    store.put("k", {"room": 120, "share": 900, "events": 3})
    assert store.get("k") == {"room": 120, "share": 900, "events": 3}
    assert redis_client.get("t:k") == b'{"events":3,"room":120,"share":900}'


def test_forget_deletes_the_conversation_key(redis_client: Any) -> None:
    store = RedisStateStore(redis_client, prefix="t:", deadline_seconds=5.0)
    history = [{"role": "user", "content": f"KX-{i} " + "word " * 80} for i in range(40)]
    compiler = ContextCompiler(1200, token_scale=1.0, state_store=store)
    compiler.compile([], "q", conversation_messages=history, conversation_id="gone")
    assert redis_client.exists("t:" + conversation_key("gone"))
    compiler.forget("gone")
    assert not redis_client.exists("t:" + conversation_key("gone"))
    assert store.get(conversation_key("gone")) is None


def test_url_and_ttl(redis_url: str, redis_client: Any) -> None:
    store = RedisStateStore(url=redis_url, ttl_seconds=30)
    store.put("x", {"a": 1})
    assert 0 < redis_client.ttl("membrane:state:x") <= 30


def test_unreachable_server_raises_store_unavailable() -> None:
    store = RedisStateStore(url="redis://127.0.0.1:1/0", outage_policy="raise")
    with pytest.raises(StoreUnavailable) as info:
        store.get("k")
    assert info.value.store == "redis"
    with pytest.raises(StoreUnavailable):
        store.put("k", {})


def _conversation(turns: int) -> list[list[dict[str, Any]]]:
    history: list[dict[str, Any]] = []
    prefixes = []
    for i in range(turns):
        prefixes.append(list(history))
        history.append(
            {
                "role": "user",
                "content": f"Turn {i}: the locker for team T{i} is L-{i * 7 + 3}. "
                "We also chatted about the offsite agenda and lunch options at length.",
            }
        )
        history.append({"role": "assistant", "content": f"Noted locker L-{i * 7 + 3} for T{i}."})
    return prefixes


def test_workers_sharing_redis_emit_what_one_worker_would(
    redis_url: str, redis_client: Any
) -> None:
    alone = ContextCompiler(1200, model_id="openai/gpt-4o", core_content="Office assistant.")
    workers = [
        ContextCompiler(
            1200,
            model_id="openai/gpt-4o",
            core_content="Office assistant.",
            state_store=RedisStateStore(url=redis_url, deadline_seconds=5.0),
        )
        for _ in range(3)
    ]
    cuts = 0
    for turn, history in enumerate(_conversation(40)):
        memories = [
            MemoryItem(id=f"m{turn}-{i}", content=f"Team T{turn} sits on floor {i}.")
            for i in range(4)
        ]
        question = f"Which locker does team T{max(turn - 12, 0)} use?"
        expected = alone.compile(
            memories, question, conversation_messages=history, conversation_id="c9"
        )
        got = workers[turn % 3].compile(
            memories, question, conversation_messages=history, conversation_id="c9"
        )
        assert got.messages == expected.messages
        cuts = expected.metadata["history_messages_dropped"]
    assert cuts > 0
    assert redis_client.get("membrane:state:membrane:v2:conversation:{c9}") is not None


def test_ref_map_persistence(redis_client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMBRANE_REF_MAP_PREFIX", "rm:")
    bound = {"client": redis_client, "deadline_seconds": 5.0}
    set_ref_map_for_conversation("conv-1", {1: "doc-381", 3: "doc-112"}, **bound)
    assert get_ref_map_for_conversation("conv-1", **bound) == {1: "doc-381", 3: "doc-112"}
    assert get_ref_map_for_conversation("other", **bound) == {}
    assert 0 < redis_client.ttl("rm:{conv-1}") <= 600
