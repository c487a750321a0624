"""Redis from async code against a real redis-server: the pre-flight cache shared by two
compilers, ref maps persisted by compile_prompt_async, and connections only when asked for."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from membrane import (
    CompilerPool,
    ContextCompiler,
    MemoryItem,
    StoreUnavailable,
    as_preflight_analyst,
    compile_prompt_async,
    get_ref_map_for_conversation,
)
from membrane.state.async_redis import check_async_client

NOTES = [
    MemoryItem(id=f"n{i}", content=f"Note {i}: the deploy at step {i} needs approval.")
    for i in range(12)
]


@pytest.fixture(autouse=True)
def roomy_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    # The machine running the tests may be busy; these tests are about caching, not speed.
    monkeypatch.setenv("MEMBRANE_STORE_DEADLINE_SECONDS", "5")


@pytest.fixture
async def aredis(redis_url: str, redis_client: Any) -> AsyncIterator[Any]:
    import redis.asyncio

    client = redis.asyncio.Redis.from_url(redis_url)
    yield client
    await client.aclose()


class Compressor:
    def __init__(self) -> None:
        self.calls: list[tuple[int, str]] = []

    async def __call__(self, raw: str, target: int, question: str) -> str:
        self.calls.append((target, question))
        return f"Summary of {raw.count('[Mem:')} notes."


@pytest.fixture
def small_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_PREFLIGHT_TOKEN_THRESHOLD", "20")
    monkeypatch.setenv("MEMORY_PREFLIGHT_TARGET_TOKENS", "50")


@pytest.mark.usefixtures("small_threshold")
async def test_a_cached_summary_serves_a_second_compiler(aredis: Any, redis_client: Any) -> None:
    compress = Compressor()
    first, second = ContextCompiler(4096), ContextCompiler(4096)
    a = await first.compile_async(
        NOTES, "Which steps?", compress_async=compress, redis_client=aredis, conversation_id="c7"
    )
    b = await second.compile_async(
        NOTES, "Which steps?", compress_async=compress, redis_client=aredis, conversation_id="c7"
    )
    assert compress.calls == [(50, "Which steps?")]
    assert (a.metadata["preflight_cache"], b.metadata["preflight_cache"]) == ("miss", "hit")
    assert a.messages == b.messages
    assert "Summary of 12 notes." in str(b.messages[-1]["content"])
    (key,) = redis_client.keys("*")
    assert key.startswith(b"membrane:preflight:{c7}:")
    assert 0 < redis_client.ttl(key) <= 60
    assert redis_client.get(key) == b"Summary of 12 notes."


@pytest.mark.usefixtures("small_threshold")
async def test_a_new_middle_or_target_is_compressed_again(
    aredis: Any, redis_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMBRANE_PREFLIGHT_CACHE_PREFIX", "pf:")
    monkeypatch.setenv("MEMBRANE_PREFLIGHT_CACHE_TTL_SECONDS", "9")
    compress = Compressor()
    compiler = ContextCompiler(4096)
    analyst = as_preflight_analyst(compress)
    for memories in (NOTES, NOTES[:-1], NOTES):
        await compiler.compile_async(
            memories, "Q", compress_async=analyst, redis_client=aredis, conversation_id="c"
        )
    monkeypatch.setenv("MEMORY_PREFLIGHT_TARGET_TOKENS", "60")
    await compiler.compile_async(
        NOTES, "Q", compress_async=analyst, redis_client=aredis, conversation_id="c"
    )
    assert [target for target, _ in compress.calls] == [50, 50, 60]
    keys = redis_client.keys("*")
    assert len(keys) == 3 and all(k.startswith(b"pf:{c}:") for k in keys)
    assert all(0 < redis_client.ttl(k) <= 9 for k in keys)


async def test_a_blocking_client_is_refused_with_a_type_error(redis_client: Any) -> None:
    with pytest.raises(TypeError, match=r"redis\.asyncio") as info:
        await ContextCompiler(4096).compile_async(
            NOTES, "Q", compress_async=Compressor(), redis_client=redis_client, conversation_id="c"
        )
    assert "block the event loop" in str(info.value)
    with pytest.raises(TypeError, match=r"redis\.asyncio"):
        await compile_prompt_async("Q", [], max_tokens=4096, redis_client=redis_client)
    with pytest.raises(TypeError):
        check_async_client(object())


async def test_the_cache_needs_a_conversation(aredis: Any) -> None:
    with pytest.raises(ValueError, match="conversation_id"):
        await ContextCompiler(4096).compile_async(
            NOTES, "Q", compress_async=Compressor(), redis_client=aredis
        )


@pytest.mark.usefixtures("small_threshold")
async def test_an_unreachable_cache_costs_a_compressor_call_not_the_compile() -> None:
    import redis.asyncio

    down = redis.asyncio.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
    compress = Compressor()
    result = await ContextCompiler(4096).compile_async(
        NOTES, "Q", compress_async=compress, redis_client=down, conversation_id="c"
    )
    assert len(compress.calls) == 1
    assert result.metadata["preflight_cache"] == "unavailable"
    await down.aclose()


async def test_the_ref_map_is_persisted_through_the_callers_client(
    aredis: Any, redis_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMBRANE_REF_MAP_PREFIX", "rm:")
    monkeypatch.setenv("MEMBRANE_REF_MAP_TTL_SECONDS", "42")
    result = await compile_prompt_async(
        "What did we pick?",
        [],
        conversation_id="conv-9",
        max_tokens=4096,
        retrieved_objects=[(MemoryItem(id="d1", content="Team chose Postgres."), 2)],
        persist_ref_map_to_redis=True,
        redis_client=aredis,
        pool=CompilerPool(),
    )
    assert result.ref_map == {1: "d1"}
    assert redis_client.keys("*") == [b"rm:{conv-9}"]
    assert 0 < redis_client.ttl("rm:{conv-9}") <= 42
    assert get_ref_map_for_conversation("conv-9", client=redis_client) == {1: "d1"}


async def test_the_url_is_used_only_when_persisting_is_asked_for(
    redis_url: str, redis_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMBRANE_REDIS_URL", redis_url)
    memories = [(MemoryItem(id="d1", content="Team chose Postgres."), 2)]
    pool = CompilerPool()
    await compile_prompt_async(
        "Q", [], conversation_id="c1", max_tokens=4096, retrieved_objects=memories, pool=pool
    )
    assert redis_client.keys("*") == []
    await compile_prompt_async(
        "Q",
        [],
        conversation_id="c1",
        max_tokens=4096,
        retrieved_objects=memories,
        persist_ref_map_to_redis=True,
        pool=pool,
    )
    assert redis_client.keys("*") == [b"membrane:ref_map:{c1}"]


async def test_persisting_to_an_unreachable_server_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMBRANE_REDIS_URL", "redis://127.0.0.1:1/0")
    with pytest.raises(StoreUnavailable) as info:
        await compile_prompt_async(
            "Q", [], conversation_id="c", max_tokens=4096, persist_ref_map_to_redis=True
        )
    assert info.value.store == "redis"


async def test_a_recent_stress_record_per_conversation(
    aredis: Any, redis_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from membrane.stress import recent_stress

    monkeypatch.setenv("MEMBRANE_STRESS_KEY_PREFIX", "st:")
    monkeypatch.setenv("STRESS_RECENT_TTL_SECONDS", "30")
    assert await recent_stress("c1", aredis) is None
    result = await compile_prompt_async(
        "Which note?",
        [],
        conversation_id="c1",
        max_tokens=600,
        retrieved_objects=[(m, 2) for m in NOTES] * 3,
        record_stress=True,
        redis_client=aredis,
        pool=CompilerPool(),
    )
    record = await recent_stress("c1", aredis)
    assert record is not None
    assert record["tokens_budget"] == 600
    assert record["memories_dropped"] == (
        result.metadata["segments_offered"] - result.metadata["segments_kept"]
    )
    assert record["load"]["available"] is True
    assert redis_client.keys("*") == [b"st:{c1}"]
    assert 0 < redis_client.ttl("st:{c1}") <= 30
    with pytest.raises(ValueError, match="redis_client"):
        await compile_prompt_async(
            "Q", [], conversation_id="c1", max_tokens=600, record_stress=True
        )


class FrozenRedis:
    """An async client whose calls never answer."""

    async def get(self, key: str) -> bytes | None:
        await asyncio.sleep(60)
        return None

    async def set(self, key: str, value: str, ex: int) -> None:
        await asyncio.sleep(60)


async def test_a_call_past_the_store_deadline_ends_there(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMBRANE_STORE_DEADLINE_SECONDS", "0.05")
    monkeypatch.setenv("MEMORY_PREFLIGHT_TOKEN_THRESHOLD", "20")
    compress = Compressor()
    result = await ContextCompiler(4096).compile_async(
        NOTES, "Q", compress_async=compress, redis_client=FrozenRedis(), conversation_id="c"
    )
    assert result.metadata["preflight_cache"] == "unavailable" and len(compress.calls) == 1
    with pytest.raises(StoreUnavailable, match=r"within 0\.05 s while saving the ref map"):
        await compile_prompt_async(
            "Q",
            [],
            conversation_id="c",
            max_tokens=4096,
            persist_ref_map_to_redis=True,
            redis_client=FrozenRedis(),
            pool=CompilerPool(),
        )
