"""``erase``: one call removes a conversation, or all of a user's, from every key Membrane keeps.

Against a real ``redis-server`` (the state store and the async client of ``compile_prompt_async``)
and the in-process store: afterwards no key of the erased conversations is left, and the other
user's keys are untouched.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from membrane import CompilerPool, ContextCompiler, InMemoryStateStore, RedisStateStore
from membrane.backend import compile_prompt_async
from membrane.erase import erase
from membrane.errors import InvalidInputError
from membrane.records import MemoryItem
from membrane.state.keys import conversation_key, scoped_conversation

LONG = [
    {"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i} " + "word " * 60}
    for i in range(40)
]
MEMORY = [(MemoryItem(id="card-1", content="Card ending 4242."), 1)]


@pytest.fixture(autouse=True)
def roomy_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMBRANE_STORE_DEADLINE_SECONDS", "5")


@pytest.fixture
async def aredis(redis_url: str, redis_client: Any) -> AsyncIterator[Any]:
    import redis.asyncio

    client = redis.asyncio.Redis.from_url(redis_url)
    await client.flushdb()
    yield client
    await client.aclose()


async def _turn(user: str, conversation: str, store: Any, client: Any, pool: Any) -> None:
    redis = {"persist_ref_map_to_redis": True, "record_stress": True, "redis_client": client}
    await compile_prompt_async(
        "What card do I use?",
        LONG,
        max_tokens=600,
        user_id=user,
        conversation_id=conversation,
        retrieved_objects=MEMORY,
        state_store=store,
        pool=pool,
        **(redis if client is not None else {}),
    )


async def _keys(client: Any) -> set[str]:
    return {k.decode() async for k in client.scan_iter(match="*")}


async def test_a_user_is_erased_from_every_redis_key(redis_client: Any, aredis: Any) -> None:
    store, pool = RedisStateStore(redis_client), CompilerPool()
    for user, conversation in [("alice", "a1"), ("alice", "a2"), ("bob", "b1")]:
        await _turn(user, conversation, store, aredis, pool)
    before = await _keys(aredis)
    assert sum("alice" in k for k in before) >= 6  # state, ref map, stress, for a1 and a2

    erased = await erase(user_id="alice", store=store, redis_client=aredis)

    after = await _keys(aredis)
    assert not [k for k in after if "alice" in k]
    assert {k for k in before if "bob" in k} <= after
    assert sorted(erased.conversations) == sorted(
        scoped_conversation("alice", c) for c in ("a1", "a2")
    )
    assert erased.redis_keys == 4  # two ref maps, two stress records


async def test_one_conversation_and_the_compilers_copy_go() -> None:
    store = InMemoryStateStore()
    compiler = ContextCompiler(600, state_store=store, state_namespace="tenant")
    first = compiler.compile([], "What card?", conversation_messages=LONG, conversation_id="c1")
    compiler.compile([], "What card?", conversation_messages=LONG, conversation_id="c2")
    assert first.metadata["history_messages_dropped"] > 0
    key = conversation_key("c1", "tenant")
    assert store.get(key) is not None

    erased = await erase(conversation_id="c1", compiler=compiler)

    assert erased.conversations == ("c1",)
    assert store.get(key) is None
    assert store.get(conversation_key("c2", "tenant")) is not None
    again = compiler.compile([], "What card?", conversation_messages=LONG, conversation_id="c1")
    assert again.metadata["history_resume"].startswith("replayed")  # nothing kept in memory


async def test_a_user_in_the_in_process_store() -> None:
    store, pool = InMemoryStateStore(), CompilerPool()
    for user in ("al*ce", "al*cex"):  # a glob character in the id stays literal
        await _turn(user, "c", store, None, pool)
    erased = await erase(user_id="al*ce", store=store)
    assert erased.conversations == (scoped_conversation("al*ce", "c"),)
    assert store.scan("*") == [conversation_key(scoped_conversation("al*cex", "c"))]


async def test_erase_needs_an_id_and_a_store_that_scans() -> None:
    with pytest.raises(InvalidInputError):
        await erase()

    class Plain:
        def get(self, key: str) -> None:
            return None

        def put(self, key: str, value: dict[str, Any]) -> None:
            pass

    with pytest.raises(TypeError, match="scan"):
        await erase(user_id="u", store=Plain())  # type: ignore[arg-type]
