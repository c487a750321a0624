"""The Redis store on a real three-node Redis Cluster (``redis.cluster.RedisCluster``).

The fixture starts three ``redis-server --cluster-enabled yes`` nodes on loopback ports (each
with its bus port, +10000, free) and joins them with ``redis-cli --cluster create``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from redis.crc import key_slot

from membrane import CompileResult, ContextCompiler, MemoryItem
from membrane.errors import InvalidInputError, StoreUnavailable
from membrane.state import STATE_FORMAT_VERSION, InMemoryStateStore, RedisStateStore, StateStore
from membrane.state.keys import conversation_key
from membrane.state.redis import bounded_client
from tests.redis_process import RedisClusterProcess
from tests.state.counting import count_commands

MODEL = "openai/gpt-4o"
TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
IDS = ["c9", "tenant{7}/chat}1{", "%7B"]  # braces may not move the hash tag


@pytest.fixture
def cluster(cluster_url: str) -> Iterator[Any]:
    client = bounded_client(cluster_url, deadline_seconds=5.0, cluster=True)
    client.flushall(target_nodes=client.ALL_NODES)
    yield client
    client.close()


def _store(client: Any) -> RedisStateStore:
    return RedisStateStore(client, deadline_seconds=5.0, outage_policy="raise")


def _compiler(store: StateStore) -> ContextCompiler:
    return ContextCompiler(900, model_id=MODEL, core_content="Office assistant.", state_store=store)


def _turn(compiler: ContextCompiler, turn: int, conversation: str) -> CompileResult:
    history = [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"message {i}: locker L-{i * 7} belongs to team T{i}. " + "words " * 25,
        }
        for i in range(turn * 2)
    ]
    memories = [
        MemoryItem(id=f"m{turn}-{i}", content=f"Team T{turn} sits on floor {i}.") for i in range(3)
    ]
    return compiler.compile(
        memories,
        f"Which locker has team T{max(turn - 9, 0)}?",
        conversation_messages=history,
        conversation_id=conversation,
        tools=TOOLS,
    )


def test_a_cluster_client_is_accepted_only_when_bounded(cluster_url: str, cluster: Any) -> None:
    import redis.cluster

    assert _store(cluster) is not None
    retrying = redis.cluster.RedisCluster.from_url(
        cluster_url, socket_timeout=1.0, socket_connect_timeout=1.0
    )
    with pytest.raises(InvalidInputError, match="retries"):
        RedisStateStore(retrying, deadline_seconds=5.0)
    retrying.close()


def test_compiles_through_the_cluster_match_the_in_process_store(cluster: Any) -> None:
    alone, through = _compiler(InMemoryStateStore()), _compiler(_store(cluster))
    for conversation in IDS:
        for turn in range(1, 31):
            expected = _turn(alone, turn, conversation)
            got = _turn(through, turn, conversation)
            assert got.messages == expected.messages
            assert got.metadata == expected.metadata
        assert expected.metadata["history_messages_dropped"] > 0


def test_turns_alternating_between_two_workers(cluster_url: str, cluster: Any) -> None:
    clients = [bounded_client(cluster_url, deadline_seconds=5.0, cluster=True) for _ in range(2)]
    workers = [_compiler(_store(client)) for client in clients]
    alone = _compiler(InMemoryStateStore())
    for turn in range(1, 31):
        expected = _turn(alone, turn, "c9")
        got = _turn(workers[turn % 2], turn, "c9")
        assert got.messages == expected.messages
    stored = _store(cluster).get(conversation_key("c9"))
    assert stored is not None and stored["version"] == STATE_FORMAT_VERSION
    for client in clients:
        client.close()


def test_every_key_of_a_conversation_hashes_to_its_slot(cluster: Any) -> None:
    compiler = _compiler(_store(cluster))
    for conversation in IDS:
        for turn in (12, 24):
            result = _turn(compiler, turn, conversation)
    compiler.observe(result, result.metadata["token_count"] + 50)  # writes the model's scale
    keys = [k.decode() for k in cluster.keys(target_nodes=cluster.ALL_NODES)]
    for conversation in IDS:
        tag = conversation.replace("%", "%25").replace("{", "%7B").replace("}", "%7D")
        mine = [k for k in keys if f"{{{tag}}}" in k]
        assert mine == ["membrane:state:" + conversation_key(conversation)]
        assert {key_slot(k.encode()) for k in mine} == {key_slot(tag.encode())}
    assert len(keys) == len(IDS) + 1  # and the model's scale


def test_round_trips_per_compile_on_the_cluster(cluster: Any) -> None:
    compiler = _compiler(_store(cluster))
    compiler.token_scale_for()  # read the scale once (it is cached for 30 s from here)
    seen = count_commands(cluster)
    key = "membrane:state:" + conversation_key("c9")
    for turn in range(1, 31):
        seen.clear()
        _turn(compiler, turn, "c9")
        assert set(seen) <= {("GET", key), ("EVAL", key)}
        assert seen["GET", key] == 1 and seen["EVAL", key] <= 1  # tools: read every turn


def test_a_put_on_the_cluster_replaces_any_version(cluster: Any) -> None:
    store = _store(cluster)
    key = conversation_key("tenant{7}")
    store.put(key, {"version": STATE_FORMAT_VERSION + 1, "room": 1})
    store.put(key, {"version": STATE_FORMAT_VERSION, "room": 2})
    assert store.get(key) == {"version": STATE_FORMAT_VERSION, "room": 2}


async def test_the_async_ref_map_path_takes_an_async_cluster_client(cluster_url: str) -> None:
    import redis.asyncio.cluster

    from membrane.state.async_redis import check_async_client, redis_get, save_ref_map

    client = check_async_client(redis.asyncio.cluster.RedisCluster.from_url(cluster_url))
    await save_ref_map("c{9}", {1: "doc-1"}, client, ttl_seconds=60)
    from membrane import config

    raw = await redis_get(client, config.ref_map_prefix() + "{c%7B9%7D}", "reading")
    assert raw == '{"1": "doc-1"}'
    await client.aclose()


def test_a_frozen_node_fails_its_own_slots_only(redis_cluster: RedisClusterProcess) -> None:
    client = bounded_client(redis_cluster.url, deadline_seconds=0.5, cluster=True)
    store = RedisStateStore(
        client, deadline_seconds=0.5, outage_policy="raise", retry_after_seconds=0
    )
    keys = [conversation_key(f"frozen-{i}") for i in range(20)]
    for key in keys:
        store.put(key, {"version": STATE_FORMAT_VERSION})
    victim = redis_cluster.nodes[1]
    on_victim = {
        k for k in keys if client.get_node_from_key(f"membrane:state:{k}").port == victim.port
    }
    assert on_victim and set(keys) - on_victim
    victim.freeze()
    try:
        for key in keys:
            if key in on_victim:
                # Not pytest.raises: the socket timeout and the deadline are equal here, so
                # the message names whichever ended the call first (the output-hash recorder
                # logs every expected message).
                try:
                    store.get(key)
                except StoreUnavailable:
                    pass
                else:
                    raise AssertionError(f"{key} is on the frozen node")
            else:
                assert store.get(key) == {"version": STATE_FORMAT_VERSION}
    finally:
        victim.thaw()
    assert store.get(next(iter(on_victim))) == {"version": STATE_FORMAT_VERSION}
    client.close()
