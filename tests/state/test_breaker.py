"""Trouble with one key, one node or the client's pool stays there (issue 35, point 10).

Against a real redis-server and a real three-node Redis Cluster on loopback: a full connection
pool is back-pressure (the call waits within its deadline, falls back alone, and the breaker
stays closed); a key holding another Redis type is that key's bad value (discarded and flagged,
then repaired by the next write), not an outage; and a frozen primary sends only its own slots'
conversations to the fallback.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from membrane import CompileResult, ContextCompiler, StoreUnavailable
from membrane.state import STATE_FORMAT_VERSION, RedisStateStore, StateStoreWarning
from membrane.state.keys import conversation_key, scale_key
from membrane.state.redis import bounded_client
from tests.redis_process import RedisClusterProcess


def _chat(turns: int, topic: str) -> list[dict[str, str]]:
    return [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"{topic} message {i}: the plan for step {i} is settled. " + "more " * 20,
        }
        for i in range(turns)
    ]


def _compile(store: Any, conversation: str, turns: int = 24) -> CompileResult:
    compiler = ContextCompiler(1200, model_id="openai/gpt-4o", state_store=store)
    return compiler.compile(
        [], "Next?", conversation_messages=_chat(turns, conversation), conversation_id=conversation
    )


def _small_pool_client(url: str, connections: int, deadline: float) -> Any:
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    return redis.Redis.from_url(
        url,
        max_connections=connections,
        socket_timeout=deadline,
        socket_connect_timeout=deadline,
        retry=Retry(NoBackoff(), 0),
    )


# -- a full pool is back-pressure, not an outage ----------------------------------------------


def test_eight_threads_on_a_two_connection_pool_all_reach_redis(redis_url: str) -> None:
    """The issue measured 160 of 160 compiles on fallback while Redis answered."""
    store = RedisStateStore(_small_pool_client(redis_url, 2, 1.0), deadline_seconds=1.0)
    flagged: list[bool] = []
    guard = threading.Lock()

    def worker(index: int) -> None:
        for turn in range(20):
            result = _compile(store, f"pool-{index}", turns=18 + turn)
            with guard:
                flagged.append(bool(result.metadata.get("state_store_fallback")))

    with warnings.catch_warnings():
        warnings.simplefilter("error", StateStoreWarning)  # no outage is ever declared
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
    assert len(flagged) == 160
    assert sum(flagged) == 0
    assert not store.failed_calls


def test_a_call_that_finds_the_pool_full_falls_back_alone(redis_url: str) -> None:
    client = _small_pool_client(redis_url, 1, 0.25)
    store = RedisStateStore(
        client, deadline_seconds=0.25, outage_policy="raise", retry_after_seconds=60
    )
    store.put("k", {"version": STATE_FORMAT_VERSION, "room": 1})
    held = client.connection_pool.get_connection()  # someone else has the only connection
    try:
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match="busy"):
            store.get("k")
        waited = time.monotonic() - started
    finally:
        client.connection_pool.release(held)
    assert 0.2 <= waited <= 0.25 + 1  # it waited for a connection, up to the deadline
    assert store.get("k") == {"version": STATE_FORMAT_VERSION, "room": 1}  # breaker closed
    assert [call.operation for call in store.failed_calls] == ["get"]
    assert "busy" in store.failed_calls[0].error


# -- a key of the wrong type is that key's problem ---------------------------------------------


def test_a_key_of_another_type_is_discarded_not_an_outage(redis_url: str) -> None:
    client = bounded_client(redis_url, deadline_seconds=5.0)
    client.flushdb()
    store = RedisStateStore(client, deadline_seconds=5.0, outage_policy="raise")
    bad = "membrane:state:" + conversation_key("bad")
    client.rpush(bad, "not a state value")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = _compile(store, "bad")
    assert result.metadata["state_discarded"] == ["conversation"]
    assert "state_store_fallback" not in result.metadata
    assert [w.category for w in caught] == [StateStoreWarning]  # discarded, not "unreachable"
    assert "discarded the conversation state" in str(caught[0].message)
    (call,) = store.failed_calls
    assert call.kind == "key" and "WRONGTYPE" in call.error
    assert client.type(bad) == b"string"  # the compile's write replaced it
    for name in ("good-1", "good-2"):  # healthy conversations never see an outage
        healthy = _compile(store, name)
        assert "state_store_fallback" not in healthy.metadata
        assert "state_discarded" not in healthy.metadata
    assert store.get(conversation_key("bad"))["version"] == STATE_FORMAT_VERSION


# -- a cluster's breaker is per node ------------------------------------------------------------


@pytest.fixture
def cluster() -> Iterator[RedisClusterProcess]:
    with RedisClusterProcess() as nodes:
        yield nodes


def test_a_frozen_primary_sends_only_its_own_conversations_to_fallback(
    cluster: RedisClusterProcess,
) -> None:
    client = bounded_client(cluster.url, deadline_seconds=0.25, cluster=True)
    store = RedisStateStore(client, deadline_seconds=0.25)  # retry_after_seconds=1: the default
    names = [f"conv-{i}" for i in range(12)]
    for name in names:
        _compile(store, name)  # every conversation has state on its node; the scale is cached
    victim = cluster.nodes[1]

    def node_port(name: str) -> int:
        node = client.get_node_from_key("membrane:state:" + conversation_key(name))
        return int(node.port)

    on_victim = {name for name in names if node_port(name) == victim.port}
    assert on_victim and set(names) - on_victim
    compiler = ContextCompiler(1200, model_id="openai/gpt-4o", state_store=store)
    for name in names:  # the compiler's scale cache is warm before the freeze
        compiler.compile([], "Next?", conversation_messages=_chat(24, name), conversation_id=name)
    victim.freeze()
    try:
        flagged = {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", StateStoreWarning)
            for name in names:
                started = time.monotonic()
                result = compiler.compile(
                    [], "Next?", conversation_messages=_chat(40, name), conversation_id=name
                )
                assert time.monotonic() - started <= 0.25 + 1
                flagged[name] = bool(result.metadata.get("state_store_fallback"))
    finally:
        victim.thaw()
    assert {name for name, fell in flagged.items() if fell} == on_victim


def test_a_frozen_node_holding_the_scale_leaves_other_nodes_conversations_in_redis(
    cluster: RedisClusterProcess,
) -> None:
    """The model's scale lives on one node; a compile that cannot read it still reads and
    writes its conversation's state on a healthy node (only the scale comes from the copy)."""
    client = bounded_client(cluster.url, deadline_seconds=0.25, cluster=True)
    store = RedisStateStore(client, deadline_seconds=0.25)
    scale_node = client.get_node_from_key("membrane:state:" + scale_key("openai/gpt-4o"))
    names = [f"conv-{i}" for i in range(12)]
    elsewhere = [
        name
        for name in names
        if client.get_node_from_key("membrane:state:" + conversation_key(name)).port
        != scale_node.port
    ]
    for name in elsewhere:
        _compile(store, name)
    before = {name: client.get("membrane:state:" + conversation_key(name)) for name in elsewhere}
    assert all(before.values())
    victim = next(node for node in cluster.nodes if node.port == scale_node.port)
    victim.freeze()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", StateStoreWarning)
            for name in elsewhere:  # a new worker: no scale cached, so each compile asks
                _compile(store, name, turns=40)
        after = {name: client.get("membrane:state:" + conversation_key(name)) for name in elsewhere}
    finally:
        victim.thaw()
    assert all(after[name] != before[name] for name in elsewhere)  # each cut reached Redis
    assert {call.node for call in store.failed_calls} == {scale_node.name}
