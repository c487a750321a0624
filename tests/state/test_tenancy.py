"""Every key a caller's data goes under carries the conversation's full scope (issue 35, point 8).

Against a real redis-server: the ref map, the recent-stress record and the pre-flight cache of
``compile_prompt_async`` are kept per (namespace, user, conversation), as the conversation's
state is; a citation number the reader would refuse is refused on write; and the conversation
of a compile without ``conversation_id`` is none a caller can name.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from membrane import (
    CompilerPool,
    ContextCompiler,
    InMemoryStateStore,
    MemoryItem,
    compile_prompt_async,
    get_ref_map_for_conversation,
    set_ref_map_for_conversation,
)
from membrane.errors import InvalidInputError
from membrane.state.keys import (
    DEFAULT_CONVERSATION,
    conversation_key,
    scoped_conversation,
)
from membrane.stress import recent_stress

NOTES = [
    MemoryItem(id=f"n{i}", content=f"Note {i}: the deploy at step {i} needs approval.")
    for i in range(12)
]


@pytest.fixture(autouse=True)
def roomy_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMBRANE_STORE_DEADLINE_SECONDS", "5")


@pytest.fixture
async def aredis(redis_url: str, redis_client: Any) -> AsyncIterator[Any]:
    import redis.asyncio

    client = redis.asyncio.Redis.from_url(redis_url)
    yield client
    await client.aclose()


def _tag(key: str) -> str:
    start = key.find("{")
    return key[start : key.find("}", start) + 1]


async def _turn(client: Any, user: str | None, conversation: str, note: str, **options: Any) -> Any:
    return await compile_prompt_async(
        "What is on file?",
        [],
        user_id=user,
        conversation_id=conversation,
        max_tokens=4096,
        retrieved_objects=[(MemoryItem(id=note, content=f"Record {note}."), 2)],
        persist_ref_map_to_redis=True,
        record_stress=True,
        redis_client=client,
        pool=CompilerPool(),
        **options,
    )


async def test_two_users_of_one_conversation_id_keep_their_own_ref_maps(
    aredis: Any, redis_client: Any
) -> None:
    """The issue's reproducer: Alice's map read back as Bob's after he used the same id."""
    await _turn(aredis, "alice", "c1", "alice-note")
    await _turn(aredis, "bob", "c1", "bob-medical-record")
    alice = get_ref_map_for_conversation("c1", user_id="alice", client=redis_client)
    bob = get_ref_map_for_conversation("c1", user_id="bob", client=redis_client)
    assert (alice, bob) == ({1: "alice-note"}, {1: "bob-medical-record"})
    assert get_ref_map_for_conversation("c1", client=redis_client) == {}  # no user: no one's
    alice_stress = await recent_stress("c1", aredis, user_id="alice")
    assert alice_stress is not None and alice_stress["tokens_budget"] == 4096
    assert await recent_stress("c1", aredis) is None
    keys = sorted(k.decode() for k in redis_client.keys("*"))
    assert keys == [
        "membrane:ref_map:{3:bob/c1}",
        "membrane:ref_map:{5:alice/c1}",
        "membrane:stress:{3:bob/c1}",
        "membrane:stress:{5:alice/c1}",
    ]


async def test_a_namespace_scopes_every_key_as_it_scopes_the_state(
    aredis: Any, redis_client: Any
) -> None:
    store = InMemoryStateStore()
    for tenant, note in (("acme", "acme-doc"), ("globex", "globex-doc")):
        await _turn(aredis, "u", "c1", note, state_namespace=tenant, state_store=store)
    for tenant, note in (("acme", "acme-doc"), ("globex", "globex-doc")):
        got = get_ref_map_for_conversation(
            "c1", user_id="u", state_namespace=tenant, client=redis_client
        )
        assert got == {1: note}
        assert await recent_stress("c1", aredis, user_id="u", state_namespace=tenant)
    assert get_ref_map_for_conversation("c1", user_id="u", client=redis_client) == {}
    # Each Redis key ends with the namespace and the hash tag of the conversation's state key.
    for key in (k.decode() for k in redis_client.keys("*")):
        tenant = "acme" if ":acme:" in key else "globex"
        state = conversation_key(scoped_conversation("u", "c1"), tenant)
        assert key.endswith(f":{tenant}:{_tag(state)}"), key


@pytest.fixture
def small_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_PREFLIGHT_TOKEN_THRESHOLD", "20")
    monkeypatch.setenv("MEMORY_PREFLIGHT_TARGET_TOKENS", "50")


@pytest.mark.usefixtures("small_threshold")
async def test_the_preflight_cache_is_not_shared_across_namespaces(
    aredis: Any, redis_client: Any
) -> None:
    calls: list[str] = []

    async def compress(raw: str, target: int, question: str) -> str:
        calls.append(question)
        return f"Summary {len(calls)}."

    outcomes = []
    for tenant in ("acme", "globex", "acme"):
        compiler = ContextCompiler(4096, state_namespace=tenant)
        result = await compiler.compile_async(
            NOTES, "Which steps?", compress_async=compress, redis_client=aredis, conversation_id="c"
        )
        outcomes.append(result.metadata["preflight_cache"])
    assert outcomes == ["miss", "miss", "hit"]
    keys = sorted(k.decode() for k in redis_client.keys("*"))
    assert [k.rsplit(":", 1)[0] for k in keys] == [
        "membrane:preflight:acme:{c}",
        "membrane:preflight:globex:{c}",
    ]


async def test_an_id_shaped_like_a_scoped_one_is_still_its_own(
    aredis: Any, redis_client: Any
) -> None:
    """Without user_id, an id spelled like the folded (user, id) pair names another key."""
    store = InMemoryStateStore()
    await _turn(aredis, "alice", "c1", "alice-note", state_store=store)
    await _turn(aredis, None, "5:alice/c1", "mallory-note", state_store=store)
    alice = get_ref_map_for_conversation("c1", user_id="alice", client=redis_client)
    assert alice == {1: "alice-note"}
    assert get_ref_map_for_conversation("5:alice/c1", client=redis_client) == {1: "mallory-note"}


_ids = st.text(min_size=1, max_size=8, alphabet=st.sampled_from("a5:/{}%0"))


@given(st.none() | _ids, _ids, st.none() | _ids, _ids)
def test_no_two_user_and_conversation_pairs_share_a_scope(
    user_a: str | None, conv_a: str, user_b: str | None, conv_b: str
) -> None:
    if (user_a, conv_a) != (user_b, conv_b):
        assert scoped_conversation(user_a, conv_a) != scoped_conversation(user_b, conv_b)


def test_a_citation_number_the_reader_would_refuse_is_refused_on_write(
    redis_client: Any,
) -> None:
    """10**9 was written, and the read then discarded the whole map."""
    with pytest.raises(InvalidInputError) as info:
        set_ref_map_for_conversation("c", {1: "a", 10**9: "b"}, client=redis_client)
    assert info.value.field == "ref_map"
    assert redis_client.keys("*") == []
    set_ref_map_for_conversation("c", {1: "a", 10**9 - 1: "b"}, client=redis_client)
    assert get_ref_map_for_conversation("c", client=redis_client) == {1: "a", 10**9 - 1: "b"}


def _chat(turns: int) -> list[dict[str, str]]:
    return [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"Message {i} about the quarterly plan. " + "detail " * 30,
        }
        for i in range(turns)
    ]


def test_no_conversation_id_can_name_the_default_conversation() -> None:
    store = InMemoryStateStore()
    compiler = ContextCompiler(1200, state_store=store)
    compiler.compile([], "Next?", conversation_messages=_chat(40))
    named = compiler.compile(
        [], "Next?", conversation_messages=_chat(42), conversation_id="_default"
    )
    assert named.metadata["history_resume"].startswith("replayed")  # not the default's tracker
    keys = set(store._data)
    assert conversation_key(DEFAULT_CONVERSATION) in keys
    assert conversation_key("_default") in keys
    assert conversation_key(DEFAULT_CONVERSATION) != conversation_key("_default")
    with pytest.raises(InvalidInputError):
        compiler.compile([], "Next?", conversation_id=DEFAULT_CONVERSATION)
