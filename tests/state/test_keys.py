"""Key names: versioned, one Redis Cluster slot per conversation, and no two tenants' ids meet."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from redis.crc import key_slot

from membrane import ContextCompiler
from membrane.errors import InvalidInputError
from membrane.state import InMemoryStateStore
from membrane.state.keys import check_namespace, conversation_key, scale_key

_ids = st.text(min_size=1, max_size=12, alphabet=st.sampled_from("ab{}%:/ \u00e9"))
_namespaces = st.none() | _ids


def _tag(key: str) -> str:
    """What Redis Cluster hashes: between the first "{" and the next "}" (the whole key else)."""
    start = key.find("{")
    end = key.find("}", start + 1)
    return key[start + 1 : end] if start != -1 and end > start + 1 else key


def test_the_names() -> None:
    assert conversation_key("c9") == "membrane:v2:conversation:{c9}"
    assert conversation_key("c9", "tenant-a") == "membrane:v2:tenant-a:conversation:{c9}"
    assert conversation_key("a{b}c") == "membrane:v2:conversation:{a%7Bb%7Dc}"
    assert conversation_key("user:42/chat:7") == "membrane:v2:conversation:{user:42/chat:7}"
    assert scale_key("OpenAI/GPT-4o") == "membrane:v2:scale:openai/gpt-4o"
    assert scale_key("bedrock/x-v1:0", "t{1}") == "membrane:v2:t%7B1%7D:scale:bedrock/x-v1%3A0"


@given(_ids, _namespaces)
def test_a_conversations_key_hashes_on_its_own_id_whatever_it_holds(
    conversation: str, namespace: str | None
) -> None:
    key = conversation_key(conversation, namespace)
    assert _tag(key) == conversation.replace("%", "%25").replace("{", "%7B").replace("}", "%7D")
    assert key_slot(key.encode()) == key_slot(f"x{{{_tag(key)}}}".encode())
    assert "{" not in scale_key(conversation, namespace)  # a scale key belongs to no conversation


@given(_ids, _namespaces, _ids, _namespaces)
def test_two_tenants_ids_never_share_a_key(
    a: str, a_space: str | None, b: str, b_space: str | None
) -> None:
    if (a, a_space) != (b, b_space):
        assert conversation_key(a, a_space) != conversation_key(b, b_space)
    if (a.lower(), a_space) != (b.lower(), b_space):  # model ids are case-blind
        assert scale_key(a, a_space) != scale_key(b, b_space)
    assert conversation_key(a, a_space) != scale_key(b, b_space)


def test_namespaces_keep_two_tenants_apart_in_one_store() -> None:
    store = InMemoryStateStore()
    history = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"note {i} " + "word " * 40}
        for i in range(30)
    ]
    written = {}
    for tenant in ("acme", "globex"):
        compiler = ContextCompiler(700, state_store=store, state_namespace=tenant)
        compiler.compile([], "which note?", conversation_messages=history, conversation_id="1")
        written[tenant] = store.get(conversation_key("1", tenant))
    assert written["acme"] is not None and written["globex"] is not None
    assert store.get(conversation_key("1")) is None  # no namespace: a third keyspace


@pytest.mark.parametrize("bad", ["", 3, b"x", "\ud800"])
def test_a_bad_namespace_is_refused(bad: object) -> None:
    with pytest.raises(InvalidInputError) as info:
        ContextCompiler(700, state_namespace=bad)  # type: ignore[arg-type]
    assert info.value.field == "state_namespace"
    with pytest.raises(InvalidInputError):
        check_namespace(bad)


async def test_compile_prompt_async_takes_the_namespace_as_a_compiler_option() -> None:
    from membrane import CompilerPool, compile_prompt_async

    store, pool = InMemoryStateStore(), CompilerPool()
    history = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"note {i} " + "word " * 40}
        for i in range(30)
    ]
    for tenant in ("acme", "globex"):
        await compile_prompt_async(
            "which note?",
            history,
            max_tokens=700,
            conversation_id="1",
            state_store=store,
            pool=pool,
            state_namespace=tenant,
        )
    assert store.get(conversation_key("1", "acme")) is not None
    assert store.get(conversation_key("1", "globex")) is not None
